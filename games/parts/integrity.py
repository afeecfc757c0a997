"""The protocol of a game's integrity part: what the pit's integrity monitors
(``tabled.pit.integrity``, docs/integrity.md) ask of a game.

This module owns the shape of that part; it never imports the pit. A game declares its part in
its :class:`~tabled.games.registry.GameDeclaration` as
``parts={"integrity": "tabled.games.<game>.integrity:INTEGRITY"}``, the attribute being an
:class:`IntegrityPart`; the pit loads it with ``registry.part(game, "integrity")``. A game that
declares none is not monitored: its tables raise no ``integrity:*`` alert (the pit says so in
its log, once per game), and nothing else changes.

What flows between the monitors and the part is the contract's types and plain data:

- ``frequency``: the part names its **rates** (:class:`RateGroup`, :class:`Rate`): each rate is a
  key of the game's exact odds (``GameDeclaration.odds(options).probabilities``, what ``tabled
  odds`` prints), so the null probability of every statistic is the odds' own, never a copy.
  ``observe(record)`` classifies one outcome record into those rates: one list of observations
  per group, in the groups' order; an observation is the index of the one rate of the group that
  occurred (a group of exclusive classes: a craps total, a poker hand class) or a tuple of
  booleans, one per rate (rates that may occur together: a baccarat winner, natural and pairs).
  ``None``: the record is not counted (a void, a demonstration hand, another game's record).
- ``dice``: how many dice a throw has (0: no dice), and ``throw(record)`` the faces of a counted
  throw (``None`` when the record is not one: a no-roll, a void). Each die's six faces get a
  "this face comes up more often" statistic.
- ``result_mismatch``: ``decided(record)`` is what the rules decided in a complete round, in
  the words a dealer declares on the console (``GameDeclaration.declarations``), and a short
  account of the round: ``("player", "Player 7, Banker 6")``; it is called with a complete
  record of its own game only (a void round is the monitor's: ``"void"``).
- ``shoe``: whether the game's cards leave a shoe whose order the shoe monitors watch
  (``shoe_count``, ``shoe_runs``, ``slug``, ``riffle``: the ``card``, ``burn``,
  ``shoe_start`` events and an unreadable card's ``fault``; the shoe's size is the options'
  ``decks``).
- ``pace``: the default :class:`Pace` (the rate the thresholds are calibrated for, the
  ``pace`` monitor's bounds; a site overrides it in the pit's ``[integrity.<game>]`` table),
  and ``unit``: what the pace counts, as a sentence says it (``"rolls"``, ``"rounds"``).

Pure: no I/O, no clock, no randomness; ``observe`` and ``throw`` never raise on a record they
do not count (they return ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tabled.contract.outcome import OutcomeRecord

#: One observation of a :class:`RateGroup`: the index of the one rate that occurred, or, for
#: each rate, whether it occurred.
Observation: TypeAlias = int | tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class Rate:
    """One rate the ``frequency`` monitor watches.

    ``name``: its key in the game's exact odds (``probabilities``), and the ``statistic`` a
    finding names. ``spoken``: the rate as a sentence says it, plural (``"Banker wins"``,
    ``"totals of 7"``). ``subject``: what a finding's subject calls it (``"total 7"`` in
    ``"total 7 up"``); the name when None.
    """

    name: str
    spoken: str
    subject: str | None = None


@dataclass(frozen=True, slots=True)
class RateGroup:
    """Rates observed together: what one observation is (``"hand"``, ``"roll"``, ``"round"``,
    singular), the rates, and how many observations a round gives at most (the thresholds
    count observations: Q Poker's hands are every position's and the dealer's)."""

    observation: str
    rates: tuple[Rate, ...]
    per_round: float = 1.0

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(rate.name for rate in self.rates)


@dataclass(frozen=True, slots=True)
class Pace:
    """A game's pace, in rounds an hour: the rate the statistical thresholds are calibrated for
    (the higher, the stricter) and the bounds of the ``pace`` monitor."""

    assumed_pace: float
    pace_min: float
    pace_max: float

    def __post_init__(self) -> None:
        if not (self.assumed_pace > 0 and 0 <= self.pace_min < self.pace_max):
            raise ValueError("assumed_pace > 0 and 0 <= pace_min < pace_max")


@dataclass(frozen=True, slots=True)
class IntegrityPart:
    """A game's integrity part (module docstring).

    ``pace``: the default pace. ``rates(options)``: the rate groups of a table with those
    options (the game's options dataclass). ``observe(record)``: one outcome record's
    observations, a sequence per group, or None. ``decided(record)``: a complete round's
    declared word and account. ``dice``, ``throw``: a throw's dice. ``shoe``: the cards leave
    a watched shoe. ``unit``: what the pace counts.
    """

    pace: Pace
    rates: Callable[[Any], tuple[RateGroup, ...]]
    observe: Callable[[OutcomeRecord], Sequence[Sequence[Observation]] | None]
    decided: Callable[[OutcomeRecord], tuple[str, str]]
    dice: int = 0
    throw: Callable[[OutcomeRecord], Sequence[int] | None] | None = None
    shoe: bool = False
    unit: str = "rounds"

    def __post_init__(self) -> None:
        if self.dice < 0 or (self.dice > 0) != (self.throw is not None):
            raise ValueError("dice > 0 needs throw, and throw needs dice > 0")
