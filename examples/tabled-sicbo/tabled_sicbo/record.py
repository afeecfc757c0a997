"""Sic bo's part of the contract: its outcome record as published, typed — what a receiver
decodes (``tabled.games.registry.decode_outcome``) — and its part of the outcome schema
(``outcome.schema.json`` beside this module).

It owns those shapes only: pure, no I/O; the rules core (:mod:`.rules`) makes the records.
The contract's base of a game's record (``GameRecord``) comes with issue 28; on a tabled that
has none this module is not loaded (the declaration names it only where it can, ``__init__``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final

import msgspec
from msgspec import UNSET, UnsetType
from tabled.contract import outcome as _contract

from tabled_sicbo.options import SicBoOptions
from tabled_sicbo.rules import bet_keys

#: The contract's base of a game's typed record, and its check of a record's bets.
_GameRecord: Any = getattr(_contract, "GameRecord", msgspec.Struct)
_require_bets: Any = getattr(_contract, "require_bets", None)

_Die = Annotated[int, msgspec.Meta(ge=1, le=6)]
_Total = Annotated[int, msgspec.Meta(ge=3, le=18)]

#: The bets every sic bo record carries (Odd and Even only where the layout offers them).
SICBO_BETS: Final = tuple(key for key in bet_keys(SicBoOptions()) if key not in ("odd", "even"))


class SicBoResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The throw: the three faces, their total, whether a triple; all null in a void round."""

    dice: tuple[_Die, _Die, _Die] | None
    total: _Total | None
    triple: bool | None


class SicBoOutcome(_GameRecord, frozen=True, kw_only=True, gc=False,  # type: ignore[misc,call-arg]
                   tag="sicbo"):
    MAPPED: ClassVar = {"bets": _contract.Bet}

    result: SicBoResult
    bets: dict[str, _contract.Bet]
    #: The sensor could not read the throw (Art. 2.1): a void round.
    no_roll: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        _GameRecord.__post_init__(self)
        if _require_bets is not None:
            _require_bets(self.bets, SICBO_BETS)


__all__ = ["SICBO_BETS", "SicBoOutcome", "SicBoResult"]
