"""Typed outcome records of docs/contract.md, shared by the three games.

This module owns the shape of what the rules core produces: per-bet results, whole-round outcomes
and notices (events the core declined without voiding a round). It is pure: no I/O, no clock.
``Outcome.to_record()`` gives exactly the JSON object the daemon publishes and ``tabled replay``
prints; nothing else may build those dicts. ``Outcome.to_json()`` is that object already encoded
(what ``tabled replay`` writes), made without building it: the parts that never change are
encoded once (a :class:`FixedBets` mapping, each :class:`BetResult`), a result part that is a
msgspec ``Struct`` is encoded as it is, and msgspec writes the rest in one call.

It also owns the other direction, for whoever receives a record (the pit, a consumer's tests):
:func:`decode_outcome` reads a published outcome record (envelope included) into its typed form,
an :data:`OutcomeRecord` (:class:`BaccaratOutcome`, :class:`CrapsOutcome`,
:class:`QPokerOutcome`, ``game`` naming the struct), in one msgspec pass, or raises
:class:`OutcomeError` naming the field and why. Those structs are the contract's outcome record,
field for field; ``contract/schemas/outcome.schema.json`` says the same (a test holds them
together), and docs/contract.md's tables are checked against that schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, Final, Literal, Protocol, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from tabled.contract import CONTRACT_VERSION, READ_VERSIONS, ContractError
from tabled.contract.limits import MAX_SEQ

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


# -- the published record, typed: what a receiver decodes ------------------------------------------

#: The largest integer a message carries (``table_seq``, ``round``, a unit): the contract's
#: range (:data:`tabled.contract.limits.MAX_SEQ`, 2^53 - 1).
MAX_INT: Final = MAX_SEQ
_ARTICLE = r"^(baccarat|craps|qpoker)\.art[0-9]+(\.[0-9]+)*$"
_PAYS = r"^[1-9][0-9]*:[1-9][0-9]*$"
_SEAT_KEY = r"^[1-9][0-9]*$"

_Version = Literal[1, 2]  # READ_VERSIONS
_Round = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]
_Seq = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT)]
_Unit = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]
_Text = Annotated[str, msgspec.Meta(min_length=1)]
_Article = Annotated[str, msgspec.Meta(pattern=_ARTICLE)]
_Pays = Annotated[str, msgspec.Meta(pattern=_PAYS)]
_Card = Annotated[str, msgspec.Meta(pattern=r"^[A2-9TJQK][SHCD]$")]
_Total = Annotated[int, msgspec.Meta(ge=0, le=9)]
_Die = Annotated[int, msgspec.Meta(ge=1, le=6)]
_Sum = Annotated[int, msgspec.Meta(ge=2, le=12)]
_SeatKey = Annotated[str, msgspec.Meta(pattern=_SEAT_KEY)]
Point: TypeAlias = Literal[4, 5, 6, 8, 9, 10]
HandClass: TypeAlias = Literal["straight_flush", "three_of_a_kind", "straight", "flush", "pair",
                               "high_card"]
Winner: TypeAlias = Literal["player", "banker", "tie"]

#: The bets every baccarat and every craps record carries (docs/contract.md).
BACCARAT_BETS: Final = ("player", "banker", "tie", "player_pair", "banker_pair")
CRAPS_BETS: Final = (
    "pass", "dont_pass", "pass_odds", "dont_pass_odds", "come", "dont_come",
    *(f"{kind}_{n}" for kind in ("come", "come_odds", "dont_come", "dont_come_odds")
      for n in (4, 5, 6, 8, 9, 10)),
    "field", "big7", "eleven", "any_craps", "hard4", "hard6", "hard8", "hard10",
    "big4", "big5", "big6", "big8", "big9", "big10",
)


class OutcomeError(ContractError):
    """A record that is not an outcome record of the contract: ``field`` names where (a dotted
    path, ``result.player_total``; empty for the record as a whole), ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


class Bet(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One wager's result in a record: ``pays`` on a win only."""

    result: BetOutcome
    pays: _Pays | UnsetType = UNSET
    article: _Article | UnsetType = UNSET
    moves_to: Point | UnsetType = UNSET
    unit: _Unit | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.result == "win" and self.pays is UNSET:
            _refuse("pays", "missing (a win carries its ratio)")
        if self.result != "win" and self.pays is not UNSET:
            _refuse("pays", f"on a {self.result} (only a win pays)")


class _Record(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="game"):
    """The fields every outcome record carries, and the envelope the daemon adds to it."""

    v: _Version
    type: Literal["outcome"]
    round: _Round
    status: Status
    void_reason: _Text | UnsetType = UNSET
    article: _Article | UnsetType = UNSET
    #: The envelope (docs/mqtt.md): absent in ``tabled replay``'s output.
    table_seq: _Seq | UnsetType = UNSET
    ts: str | UnsetType = UNSET

    @property
    def game(self) -> Game:
        return self.__struct_config__.tag  # type: ignore[return-value]

    def __post_init__(self) -> None:
        if self.status == "void":
            if self.void_reason is UNSET:
                _refuse("void_reason", "missing (a void outcome says why)")
            if self.article is UNSET:
                _refuse("article", "missing (a void outcome cites its article)")


class BaccaratResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Both hands in dealt order, their totals, the winner (null on a void hand) and whether
    either hand is a natural."""

    player_cards: Annotated[tuple[_Card, ...], msgspec.Meta(max_length=3)]
    banker_cards: Annotated[tuple[_Card, ...], msgspec.Meta(max_length=3)]
    player_total: _Total | None
    banker_total: _Total | None
    winner: Winner | None
    natural: bool | None


class BaccaratOutcome(_Record, frozen=True, kw_only=True, gc=False, tag="baccarat"):
    result: BaccaratResult
    bets: dict[str, Bet]
    #: A demonstration hand (Art. 2.2): it settles no bet.
    demo: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        _Record.__post_init__(self)
        _require_bets(self.bets, BACCARAT_BETS)
        if self.status == "complete":
            r = self.result
            for name in ("player_cards", "banker_cards"):
                if len(getattr(r, name)) < 2:
                    _refuse(f"result.{name}", "fewer than two cards in a complete hand")
            for name in ("player_total", "banker_total", "winner", "natural"):
                if getattr(r, name) is None:
                    _refuse(f"result.{name}", "null in a complete hand")


class CrapsResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The throw (null dice and total for a no-roll or a void throw), the point before and
    after it, and whether a 4, 6, 8 or 10 came the hard way."""

    dice: tuple[_Die, _Die] | None
    total: _Sum | None
    point_before: Point | None
    point_after: Point | None
    hard: bool | UnsetType = UNSET


class CrapsOutcome(_Record, frozen=True, kw_only=True, gc=False, tag="craps"):
    result: CrapsResult
    bets: dict[str, Bet]
    #: A ``no_roll`` (Art. 1): nothing was thrown.
    no_roll: bool | UnsetType = UNSET
    #: The point is not known (an event lost on the table's side), until a seven.
    point_unknown: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        _Record.__post_init__(self)
        _require_bets(self.bets, CRAPS_BETS)


class QPokerHand(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A position's cards in dealing order, its hand (null until three are known) and the cards
    exposed by mistake (Art. 11.2), when there were any."""

    #: (more than three only in a void round: a position dealt twice, Art. 1)
    cards: tuple[_Card, ...]
    hand: HandClass | None
    exposed: tuple[_Card, ...] | UnsetType = UNSET


class QPokerDealer(QPokerHand, frozen=True, kw_only=True, gc=False):
    #: Art. 9.4: Q-high or better; null while the hand is not known.
    qualifies: bool | None


class QPokerSeat(QPokerHand, frozen=True, kw_only=True, gc=False):
    #: ``void``: dealt without a bet (Art. 11.4).
    status: Literal["active", "void"]


class QPokerResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    dealer: QPokerDealer
    seats: dict[_SeatKey, QPokerSeat]


class QPokerSeatBets(msgspec.Struct, frozen=True, kw_only=True, gc=False,
                     forbid_unknown_fields=True):
    dobo: Bet
    play: Bet


class QPokerOutcome(_Record, frozen=True, kw_only=True, gc=False, tag="qpoker"):
    result: QPokerResult
    bets: dict[_SeatKey, QPokerSeatBets]


#: An outcome record as published, typed: ``game`` chooses the struct.
OutcomeRecord: TypeAlias = BaccaratOutcome | CrapsOutcome | QPokerOutcome
_OUTCOME_TYPES: Final[dict[str, type[msgspec.Struct]]] = {
    "baccarat": BaccaratOutcome, "craps": CrapsOutcome, "qpoker": QPokerOutcome,
}


def _require_bets(bets: Mapping[str, Bet], names: tuple[str, ...]) -> None:
    missing = [name for name in names if name not in bets]
    if missing:
        _refuse("bets", f"lacks {', '.join(missing)} (every record carries them)")


def _refuse(field: str, reason: str) -> None:
    """Refuse a record from a ``__post_init__``: msgspec turns the ValueError into its
    ValidationError (with the path to the struct), :func:`_explain` reads the field back."""
    raise ValueError(f"{_FIELD_MARK}{field}{_FIELD_MARK}{reason}")


_FIELD_MARK: Final = "\x1f"
_json_decoder: Final = msgspec.json.Decoder(OutcomeRecord)
_ERROR_AT = re.compile(r"(?P<what>.*?)(?: - at (?:`key` in )?`\$(?P<path>.*)`)?", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>.*)`")
_STEP = re.compile(r"\.(?P<name>[^.\[]+)|\[(?P<index>[^\]]+)\]")
#: The values of the records' mappings, by game and path: a refused value there is found by
#: trying each (msgspec names no key of a mapping in its error's path).
_MAPPED: Final[Mapping[tuple[str, str], type[msgspec.Struct]]] = {
    ("baccarat", "bets"): Bet, ("craps", "bets"): Bet, ("qpoker", "bets"): QPokerSeatBets,
    ("qpoker", "result.seats"): QPokerSeat,
}


def decode_outcome(data: bytes | str | Mapping[str, Any]) -> OutcomeRecord:
    """The typed outcome record of ``data`` (JSON text, or the object it decodes to), envelope
    fields (``table_seq``, ``ts``) included, version 1 or 2; fields this version does not know
    are ignored. Raises :class:`OutcomeError` naming the field and the reason.

    JSON's own types, strictly: an integer is not ``true`` or ``1.0``, a string is not a
    number, ``null`` only where the contract allows it."""
    try:
        if isinstance(data, Mapping):
            record: OutcomeRecord = msgspec.convert(data, OutcomeRecord, strict=True)
            return record
        return _json_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise _explain(data, exc) from None
    except msgspec.DecodeError as exc:
        raise OutcomeError("", f"not JSON: {exc}") from None


def _explain(data: bytes | str | Mapping[str, Any], exc: msgspec.ValidationError
             ) -> OutcomeError:
    """msgspec's reason, naming the field (a dotted path) and, where it has one, its value."""
    error = _ERROR_AT.fullmatch(str(exc))
    assert error is not None  # (the pattern matches any text)
    what, path = error["what"], error["path"] or ""
    obj: Any = data
    if not isinstance(data, Mapping):
        try:
            obj = msgspec.json.decode(data)
        except msgspec.DecodeError:
            obj = None
    game = obj.get("game") if isinstance(obj, Mapping) else None
    steps: list[str] = []
    here: Any = obj
    for m in _STEP.finditer(path):
        step = m["name"] or m["index"]
        if step == "...":  # a mapping's value: which one is refused
            value_type = _MAPPED.get((str(game), ".".join(steps)))
            step = _refused_key(here, value_type) or step
        steps.append(step)
        here = here.get(step) if isinstance(here, Mapping) else (
            here[int(step)] if isinstance(here, list) and step.isdigit()
            and int(step) < len(here) else None)
    field = ".".join(steps)
    if "`key` in" in str(exc) and isinstance(here, Mapping):
        keys = [k for k in here if not re.fullmatch(_SEAT_KEY, str(k))]
        return OutcomeError(field, f"key {keys[0] if keys else '?'!r} is not a seat number")
    if what.startswith(_FIELD_MARK):
        _, name, reason = what.split(_FIELD_MARK, 2)
        return OutcomeError(f"{field}.{name}" if field and name else field or name, reason)
    missing = _MISSING.fullmatch(what)
    if missing:
        name = f"{field}.{missing['name']}" if field else missing["name"]
        return OutcomeError(name, "missing (one of baccarat, craps, qpoker)"
                            if name == "game" else "missing")
    if field == "game":
        return OutcomeError("game", f"{here!r} is not one of baccarat, craps, qpoker")
    if field == "v":
        return OutcomeError("v", f"unsupported contract version {here!r} (this reads "
                                 f"{' and '.join(map(str, READ_VERSIONS))})")
    reason = (what[0].lower() + what[1:] if what else "not what the contract allows")
    return OutcomeError(field, f"{here!r}: {reason.replace('`', '')}")


def _refused_key(mapping: Any, value_type: type[msgspec.Struct] | None) -> str | None:
    """The first key of ``mapping`` whose value ``value_type`` refuses."""
    if not isinstance(mapping, Mapping) or value_type is None:
        return None
    for key, value in mapping.items():
        try:
            msgspec.convert(value, value_type, strict=True)
        except msgspec.ValidationError:
            return str(key)
    return None


def outcome_type(game: str) -> type[msgspec.Struct] | None:
    """The typed record of ``game``'s outcomes, or None for no game of the contract."""
    return _OUTCOME_TYPES.get(game)
