"""The typed result of an odds computation: exact probabilities and house edges of one game's
configured rules.

This module owns the shape every game's analysis returns (:class:`Odds`, :class:`BetOdds`) and
its JSON form (``tabled odds --json``). It is pure: it computes nothing and prints nothing.

House edge convention (every game, every wager): the house's expected gain per unit staked on
the wager, over every way the wager can be decided. A push (a baccarat tie on Player or Banker,
a Don't Pass 12, odds handed back) is one of those ways, with a return of zero: it stays in the
denominator (the "per hand" or "per resolved bet" convention). A positive edge favours the house.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from tabled.contract.outcome import Game
from tabled.games.options import GameOptions, declare


def exact(value: Fraction) -> str:
    """``Fraction(7, 495)`` -> ``"7/495"``; always ``p/q``, also for whole numbers (``"0/1"``)."""
    return f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True, slots=True)
class BetOdds:
    """One wager of the layout: its exact house edge per unit staked, the article(s) that price
    it, and, where the figure needs one, a short note on how the wager was taken."""

    house_edge: Fraction
    article: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """``{"house_edge": float, "exact": "p/q"}``: the ``tabled odds --json`` form."""
        return {"house_edge": float(self.house_edge), "exact": exact(self.house_edge)}


@dataclass(frozen=True, slots=True)
class Odds:
    """The exact odds of one game under one set of regulated options.

    ``probabilities`` names the outcome classes a round can be counted by (baccarat ``player``,
    ``banker``, ``tie``, ``natural``, ``player_pair``, ``banker_pair``; craps the totals ``"2"``
    to ``"12"``; Q Poker the six hand classes and ``dealer_qualifies``), each an exact
    probability per round. ``bets`` maps every bet name of docs/contract.md to its :class:`BetOdds`.
    Each game's subclass adds the typed detail behind them. ``decks`` is the shoe size the
    figures are for (baccarat only).
    """

    game: Game
    options: GameOptions
    decks: int | None
    probabilities: Mapping[str, Fraction]
    bets: Mapping[str, BetOdds]

    def preface(self) -> list[str]:
        """Lines ``tabled odds`` prints under the options line (what the figures are for)."""
        return []

    def notes(self) -> list[str]:
        """Lines ``tabled odds`` prints after the tables (a game's own reading of them)."""
        return []

    def extra_json(self) -> dict[str, Any]:
        """Fields a game adds to the JSON object (none by default)."""
        return {}

    def to_json(self) -> dict[str, Any]:
        """The object ``tabled odds --json`` prints: ``game``, ``options``, ``decks`` (baccarat
        only), ``probabilities`` (floats) and ``bets`` (``house_edge`` float, ``exact`` p/q)."""
        out: dict[str, Any] = {"game": self.game, "options": declare(self.options)}
        if self.decks is not None:
            out["decks"] = self.decks
        out["probabilities"] = {name: float(p) for name, p in self.probabilities.items()}
        out["bets"] = {name: bet.to_json() for name, bet in self.bets.items()}
        out.update(self.extra_json())
        return out
