"""Exact odds of the configured rules: ``odds(game, options, decks)`` (``tabled odds``).

This package owns the exact combinatorics of the three games as the rules core plays them:
the probability of each outcome class of a round, and the house edge of every bet of
docs/contract.md under the table's regulated options. Each figure is computed from the rules core's
own code (tables dealt, hands ranked, results settled by :func:`tabled.daemon.rules.money.settle`),
in
exact fractions, never by simulation, so a rule change moves the odds with it.

House edge, for every game: the house's expected gain per unit staked on the wager, over every
way the wager can be decided, a push (a baccarat tie on Player or Banker, a Don't Pass 12)
counting as a decision that returns zero (the "per hand" convention). A positive edge favours
the house.

- baccarat (:mod:`.baccarat`): the first hand of a full shoe of ``decks`` decks, composition
  exact; both drawing methods, both commission modes, Tie, pairs.
- craps (:mod:`.craps`): every bet key, by Markov chain over the table's own throws.
- qpoker (:mod:`.qpoker`): Dobo, and Play under the best fold strategy.

It is pure: no I/O (the CLI prints), no clock, no randomness.
"""

from __future__ import annotations

from typing import Literal, overload

from tabled.contract.outcome import GAMES, Game
from tabled.daemon.rules.odds.baccarat import BaccaratOdds, Deal, baccarat_odds
from tabled.daemon.rules.odds.craps import CrapsOdds, craps_odds
from tabled.daemon.rules.odds.model import BetOdds, Odds, exact
from tabled.daemon.rules.odds.qpoker import PlayStrategy, QPokerOdds, qpoker_odds
from tabled.daemon.rules.options import BaccaratOptions, CrapsOptions, GameOptions, QPokerOptions


@overload
def odds(game: Literal["baccarat"], options: BaccaratOptions | None = None,
         decks: int | None = None) -> BaccaratOdds: ...
@overload
def odds(game: Literal["craps"], options: CrapsOptions | None = None,
         decks: None = None) -> CrapsOdds: ...
@overload
def odds(game: Literal["qpoker"], options: QPokerOptions | None = None,
         decks: None = None) -> QPokerOdds: ...
@overload
def odds(game: Game, options: GameOptions | None = None, decks: int | None = None) -> Odds: ...


def odds(game: Game, options: GameOptions | None = None, decks: int | None = None) -> Odds:
    """The exact odds of ``game`` under ``options`` (the defaults when ``None``).

    ``decks`` is for baccarat only: the shoe size, overriding ``options.decks`` (6 to 12,
    Art. 1); the returned ``options`` carry the size used. :class:`ValueError` for an unknown
    game, options of another game, or ``decks`` for a game without a shoe
    (:class:`~tabled.daemon.rules.options.OptionError`, a ``ValueError``, for decks out of range).
    """
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r} (known: {', '.join(GAMES)})")
    if game != "baccarat" and decks is not None:
        raise ValueError(f"{game} has no shoe: decks is for baccarat only")
    expected = {"baccarat": BaccaratOptions, "craps": CrapsOptions, "qpoker": QPokerOptions}[game]
    if options is None:
        options = expected()
    elif not isinstance(options, expected):
        raise ValueError(f"{type(options).__name__} are not options of {game}")
    if isinstance(options, BaccaratOptions):
        return baccarat_odds(options, decks)
    if isinstance(options, CrapsOptions):
        return craps_odds(options)
    return qpoker_odds(options)


__all__ = [
    "BaccaratOdds",
    "BetOdds",
    "CrapsOdds",
    "Deal",
    "Odds",
    "PlayStrategy",
    "QPokerOdds",
    "exact",
    "odds",
]
