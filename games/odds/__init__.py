"""Exact odds of the configured rules: ``odds(game, options, decks)`` (``tabled odds``).

Each game's package owns the exact combinatorics of its game as its rules core plays it
(``tabled.games.<game>.odds``): the probability of each outcome class of a round, and the house
edge of every bet of docs/contract.md under the table's regulated options, computed from the
rules core's own code in exact fractions, never by simulation, so a rule change moves the odds
with it. This package holds what they share: the model (:mod:`.model`), the printed forms
(:mod:`.render`); :func:`tabled.games.registry.odds` asks the game's declaration for them.

House edge, for every game: the house's expected gain per unit staked on the wager, over every
way the wager can be decided, a push (a baccarat tie on Player or Banker, a Don't Pass 12)
counting as a decision that returns zero (the "per hand" convention). A positive edge favours
the house.

It is pure: no I/O (the CLI prints), no clock, no randomness.
"""

from __future__ import annotations

from tabled.games.odds.model import BetOdds, Odds, exact

__all__ = ["BetOdds", "Odds", "exact"]
