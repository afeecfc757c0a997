"""Typed outcome records of docs/contract.md, shared by the three games.

This module owns the shape of what the rules core produces: per-bet results, whole-round outcomes
and notices (events the core declined without voiding a round). It is pure: no I/O, no clock.
``Outcome.to_record()`` gives exactly the JSON object the daemon publishes and ``tabled replay``
prints; nothing else may build those dicts. ``Outcome.to_json()`` is that object already encoded
(what ``tabled replay`` writes), made without building it: the parts that never change are
encoded once (a :class:`FixedBets` mapping, each :class:`BetResult`), a result part that is a
msgspec ``Struct`` is encoded as it is, and msgspec writes the rest in one call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, Literal, Protocol, TypeAlias

import msgspec

from tabled.contract import CONTRACT_VERSION

Game: TypeAlias = Literal["baccarat", "craps", "qpoker"]
GAMES: tuple[Game, ...] = ("baccarat", "craps", "qpoker")
BetOutcome: TypeAlias = Literal["win", "lose", "push", "open", "off", "fold", "void"]
Status: TypeAlias = Literal["complete", "void"]


def pays(winnings: int, stake: int) -> Fraction:
    """A payout ratio, winnings to stake (kept in lowest terms by ``Fraction``)."""
    return Fraction(winnings, stake)


def format_pays(ratio: Fraction) -> str:
    """``Fraction(19, 20)`` -> ``"19:20"``: the contract's ``"W:S"`` form, in lowest terms."""
    return f"{ratio.numerator}:{ratio.denominator}"


@dataclass(frozen=True, slots=True)
class BetResult:
    """What happened to one kind of wager in one round, and the article that decided it.

    ``pays`` is set on a win only. ``unit`` (Craps Big bets, Reading R-C2) is the stake unit, in
    whole currency units, to which the per-unit ratio applies. ``moves_to`` is where a Come or
    Don't Come wager travels.
    """

    result: BetOutcome
    article: str | None = None
    pays: Fraction | None = None
    moves_to: int | None = None
    unit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"result": self.result}
        if self.pays is not None:
            out["pays"] = format_pays(self.pays)
        if self.article is not None:
            out["article"] = self.article
        if self.moves_to is not None:
            out["moves_to"] = self.moves_to
        if self.unit is not None:
            out["unit"] = self.unit
        return out


class ResultPart(Protocol):
    """A game's typed ``result`` part of an outcome record.

    A result part that is a msgspec ``Struct`` is encoded as the struct (``Outcome.to_json``):
    its fields, in their order, with ``omit_defaults`` where ``to_dict`` leaves a field out,
    must encode exactly as ``to_dict()`` does (tests/test_outcome_json.py holds every game to
    it)."""

    def to_dict(self) -> dict[str, Any]: ...


_encode: Final = msgspec.json.Encoder().encode
# Each bet result's JSON, made once per object: a BetResult is frozen, and the rules make the few
# they use once (a bound keeps a rules core that made them per round from growing this).
_BET_JSON: dict[int, tuple[BetResult, msgspec.Raw]] = {}
_BET_JSON_BOUND: Final = 4096


def _bet_json(bet: BetResult) -> msgspec.Raw:
    cached = _BET_JSON.get(id(bet))
    if cached is not None:
        return cached[1]
    raw = msgspec.Raw(_encode(bet.to_dict()))
    if len(_BET_JSON) >= _BET_JSON_BOUND:
        _BET_JSON.clear()
    _BET_JSON[id(bet)] = (bet, raw)  # (the object held: its id is not reused meanwhile)
    return raw


class FixedBets(Mapping[str, BetResult]):
    """A bets mapping fixed for good: one of the few a round can settle to, which the rules
    build once (baccarat's table of every complete hand's bets). Read-only, and its JSON is
    made once, so an outcome carrying it encodes its bets without reading them again."""

    __slots__ = ("_bets", "json")

    def __init__(self, bets: Mapping[str, BetResult]) -> None:
        self._bets: dict[str, BetResult] = dict(bets)
        #: The ``bets`` object of the record, encoded.
        self.json: Final = msgspec.Raw(_encode({k: v.to_dict() for k, v in self._bets.items()}))

    def __getitem__(self, name: str) -> BetResult:
        return self._bets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._bets)

    def __len__(self) -> int:
        return len(self._bets)

    def __repr__(self) -> str:
        return f"FixedBets({self._bets!r})"


Bets: TypeAlias = Mapping[str, BetResult] | Mapping[str, Mapping[str, BetResult]]


class Outcome(msgspec.Struct, frozen=True, gc=False):
    """One round's outcome record (docs/contract.md "Outcome records")."""

    game: Game
    round: int
    status: Status
    result: ResultPart | None
    bets: Bets
    void_reason: str | None = None
    article: str | None = None
    #: Extra top-level fields of the record, e.g. ``{"demo": True}`` or ``{"no_roll": True}``.
    extra: Mapping[str, Any] = msgspec.field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "v": CONTRACT_VERSION,
            "type": "outcome",
            "game": self.game,
            "round": self.round,
            "status": self.status,
        }
        if self.status == "void":
            rec["void_reason"] = self.void_reason
            rec["article"] = self.article
        elif self.article is not None:
            rec["article"] = self.article
        rec.update(self.extra)
        rec["result"] = {} if self.result is None else self.result.to_dict()
        rec["bets"] = {
            name: (
                value.to_dict()
                if isinstance(value, BetResult)
                else {k: v.to_dict() for k, v in value.items()}
            )
            for name, value in self.bets.items()
        }
        return rec

    def to_json(self) -> bytes:
        """:meth:`to_record`, encoded: compact UTF-8 JSON, the bytes
        ``json.dumps(self.to_record(), separators=(",", ":"), ensure_ascii=False)`` writes (and
        ``tabled replay`` prints), keys in the same order."""
        status = self.status
        rec: dict[str, Any] = {
            "v": CONTRACT_VERSION,
            "type": "outcome",
            "game": self.game,
            "round": self.round,
            "status": status,
        }
        if status == "void":
            rec["void_reason"] = self.void_reason
            rec["article"] = self.article
        elif self.article is not None:
            rec["article"] = self.article
        if self.extra:
            rec.update(self.extra)
        result = self.result
        rec["result"] = ({} if result is None
                         else result if isinstance(result, msgspec.Struct) else result.to_dict())
        bets = self.bets
        if isinstance(bets, FixedBets):
            rec["bets"] = bets.json
        else:
            rec["bets"] = {
                name: (_bet_json(value) if isinstance(value, BetResult)
                       else {k: _bet_json(v) for k, v in value.items()})
                for name, value in bets.items()
            }
        return _encode(rec)


@dataclass(frozen=True, slots=True)
class Notice:
    """An event the rules core declined without voiding a round, and why.

    A notice is not an outcome: replay writes it to standard error, the daemon logs it and
    publishes it as a fault. ``code`` is stable (snake_case), ``article`` cites the rule.
    """

    code: str
    message: str
    article: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.article is not None:
            out["article"] = self.article
        return out


#: The notice of a dealer's command (``decision``, ``reveal``, ``void``) whose ``round`` names
#: another round than the one the table would act on (``tabled.contract.events.FOR_A_ROUND``):
#: it came late, or early; the rules decline it and change nothing.
FOR_ANOTHER_ROUND = "for_another_round"

Output: TypeAlias = Outcome | Notice
