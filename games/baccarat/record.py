"""Baccarat's outcome record as published (docs/contract.md "Outcome records"), typed: what a
receiver decodes (``tabled.games.registry.decode_outcome``), and its part of the outcome schema
(``outcome.schema.json`` beside this module, composed into the contract's by the registry).

It owns the record's shape only: pure, no I/O; the rules core (:mod:`.rules`) makes the records.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from tabled.contract.outcome import Bet, CardCode, GameRecord, refuse, require_bets

Winner: TypeAlias = Literal["player", "banker", "tie"]
_Total = Annotated[int, msgspec.Meta(ge=0, le=9)]

#: The bets every baccarat record carries (docs/contract.md).
BACCARAT_BETS: Final = ("player", "banker", "tie", "player_pair", "banker_pair")


class BaccaratResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Both hands in dealt order, their totals, the winner (null on a void hand) and whether
    either hand is a natural."""

    player_cards: Annotated[tuple[CardCode, ...], msgspec.Meta(max_length=3)]
    banker_cards: Annotated[tuple[CardCode, ...], msgspec.Meta(max_length=3)]
    player_total: _Total | None
    banker_total: _Total | None
    winner: Winner | None
    natural: bool | None


class BaccaratOutcome(GameRecord, frozen=True, kw_only=True, gc=False, tag="baccarat"):
    MAPPED: ClassVar = {"bets": Bet}

    result: BaccaratResult
    bets: dict[str, Bet]
    #: A demonstration hand (Art. 2.2): it settles no bet.
    demo: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        GameRecord.__post_init__(self)
        require_bets(self.bets, BACCARAT_BETS)
        if self.status == "complete":
            r = self.result
            for name in ("player_cards", "banker_cards"):
                if len(getattr(r, name)) < 2:
                    refuse(f"result.{name}", "fewer than two cards in a complete hand")
            for name in ("player_total", "banker_total", "winner", "natural"):
                if getattr(r, name) is None:
                    refuse(f"result.{name}", "null in a complete hand")
