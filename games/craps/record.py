"""Craps' part of the contract: its outcome record as published (docs/contract.md "Outcome
records"), typed — what a receiver decodes (``tabled.games.registry.decode_outcome``), its part
of the outcome schema (``outcome.schema.json`` beside this module, composed into the contract's
by the registry). A ``roll`` of two dice, no more, no fewer, is the declaration's ``dice``.

It owns those shapes only: pure, no I/O; the rules core (:mod:`.rules`) makes the records.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from tabled.contract.outcome import Bet, DieFace, GameRecord, Point, require_bets

_Sum = Annotated[int, msgspec.Meta(ge=2, le=12)]
PointOrNone: TypeAlias = Point | None

#: The bets every craps record carries (docs/contract.md).
CRAPS_BETS: Final = (
    "pass", "dont_pass", "pass_odds", "dont_pass_odds", "come", "dont_come",
    *(f"{kind}_{n}" for kind in ("come", "come_odds", "dont_come", "dont_come_odds")
      for n in (4, 5, 6, 8, 9, 10)),
    "field", "big7", "eleven", "any_craps", "hard4", "hard6", "hard8", "hard10",
    "big4", "big5", "big6", "big8", "big9", "big10",
)


class CrapsResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The throw (null dice and total for a no-roll or a void throw), the point before and
    after it, and whether a 4, 6, 8 or 10 came the hard way."""

    dice: tuple[DieFace, DieFace] | None
    total: _Sum | None
    point_before: Point | None
    point_after: Point | None
    hard: bool | UnsetType = UNSET


class CrapsOutcome(GameRecord, frozen=True, kw_only=True, gc=False, tag="craps"):
    MAPPED: ClassVar = {"bets": Bet}

    result: CrapsResult
    bets: dict[str, Bet]
    #: A ``no_roll`` (Art. 1): nothing was thrown.
    no_roll: bool | UnsetType = UNSET
    #: The point is not known (an event lost on the table's side), until a seven.
    point_unknown: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        GameRecord.__post_init__(self)
        require_bets(self.bets, CRAPS_BETS)

