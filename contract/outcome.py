"""Typed outcome records of docs/contract.md: what every game's outcome has in common.

This module owns the shape of what a rules core produces: per-bet results, whole-round outcomes
and notices (events the core declined without voiding a round). It is pure: no I/O, no clock, and
it knows no game by name (a game's ``result`` and ``bets`` are the game's). ``Outcome.to_record()``
gives exactly the JSON object the daemon publishes and ``tabled replay`` prints; nothing else may
build those dicts. ``Outcome.to_json()`` is that object already encoded (what ``tabled replay``
writes), made without building it: the parts that never change are encoded once (a
:class:`FixedBets` mapping, each :class:`BetResult`), a result part that is a msgspec ``Struct``
is encoded as it is, and msgspec writes the rest in one call.

It also owns the other direction, for whoever receives a record (the pit, a consumer's tests):
:func:`decode_outcome` reads a published outcome record (envelope included) in one msgspec pass,
or raises :class:`OutcomeError` naming the field and why. The fields every record has are
:class:`OutcomeRecord`'s; each game's package declares its typed record, a :class:`GameRecord`
(``game`` naming the struct), and whoever knows the installed games passes them in
(``tabled.games.registry.decode_outcome``). A record of a game none of them is, ``game`` an id,
decodes to an :class:`UntypedRecord`: its envelope checked, its ``result`` and ``bets`` kept as
plain objects. ``contract/schemas/outcome.schema.json`` says the same of the envelope and each
game's package says it of its part (a test holds them together), and docs/contract.md's tables
are checked against that schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Final, Literal, Protocol, TypeAlias, Union

import msgspec
from msgspec import UNSET, UnsetType

from tabled.contract import CONTRACT_VERSION, READ_VERSIONS, ContractError
from tabled.contract.limits import ID_PATTERN, ID_RULE, MAX_SEQ

#: A game's name: an id (:data:`~tabled.contract.limits.ID_PATTERN`), an installed game's
#: (``tabled.games.registry.game_names()``).
Game: TypeAlias = str
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
    must encode exactly as ``to_dict()`` does (tests/contract/test_outcome_json.py holds every
    game to it)."""

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
#: A game's name in a record: an id.
GAME_PATTERN: Final = ID_PATTERN
#: An article: the game's name, ``.art`` and its number (``baccarat.art10``, ``qpoker.art11.5``).
ARTICLE_PATTERN: Final = ID_PATTERN[:-1] + r"\.art[0-9]+(\.[0-9]+)*$"
_PAYS = r"^[1-9][0-9]*:[1-9][0-9]*$"
#: A seat's key in a record's mapping (``"3"``).
SEAT_KEY_PATTERN: Final = r"^[1-9][0-9]*$"

# The contract's values, as msgspec constraints, for a game's typed record to use.
Version: TypeAlias = Literal[1, 2]  # READ_VERSIONS
RoundNumber = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]
TableSeq = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT)]
StakeUnit = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]
NonEmptyText = Annotated[str, msgspec.Meta(min_length=1)]
GameName = Annotated[str, msgspec.Meta(pattern=GAME_PATTERN.replace("$", r"\Z"))]
ArticleText = Annotated[str, msgspec.Meta(pattern=ARTICLE_PATTERN.replace("$", r"\Z"))]
PaysText = Annotated[str, msgspec.Meta(pattern=_PAYS)]
CardCode = Annotated[str, msgspec.Meta(pattern=r"^[A2-9TJQK][SHCD]$")]
DieFace = Annotated[int, msgspec.Meta(ge=1, le=6)]
SeatKey = Annotated[str, msgspec.Meta(pattern=SEAT_KEY_PATTERN)]
#: Where a Come or Don't Come wager travels (a bet's ``moves_to``).
Point: TypeAlias = Literal[4, 5, 6, 8, 9, 10]


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
    pays: PaysText | UnsetType = UNSET
    article: ArticleText | UnsetType = UNSET
    moves_to: Point | UnsetType = UNSET
    unit: StakeUnit | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.result == "win" and self.pays is UNSET:
            refuse("pays", "missing (a win carries its ratio)")
        if self.result != "win" and self.pays is not UNSET:
            refuse("pays", f"on a {self.result} (only a win pays)")


class OutcomeRecord(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The fields every outcome record carries, and the envelope the daemon adds to it: the
    base of every decoded record (a game's :class:`GameRecord`, or an :class:`UntypedRecord`)."""

    v: Version
    type: Literal["outcome"]
    round: RoundNumber
    status: Status
    void_reason: NonEmptyText | UnsetType = UNSET
    article: ArticleText | UnsetType = UNSET
    #: The envelope (docs/mqtt.md): absent in ``tabled replay``'s output.
    table_seq: TableSeq | UnsetType = UNSET
    ts: str | UnsetType = UNSET

    @property
    def game(self) -> Game:
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag

    def __post_init__(self) -> None:
        if self.status == "void":
            if self.void_reason is UNSET:
                refuse("void_reason", "missing (a void outcome says why)")
            if self.article is UNSET:
                refuse("article", "missing (a void outcome cites its article)")


class GameRecord(OutcomeRecord, frozen=True, kw_only=True, gc=False, tag_field="game"):
    """The base of a game's typed record, declared in its package: a subclass with
    ``tag="<game>"`` and its ``result`` and ``bets`` fields. ``MAPPED`` names the record's
    mappings whose values are structs (``{"bets": Bet}``), by dotted path, so that a refused
    value there is named by its key."""

    MAPPED: ClassVar[Mapping[str, type[msgspec.Struct]]] = {}


class UntypedRecord(OutcomeRecord, frozen=True, kw_only=True, gc=False):
    """The record of a game the decoder was given no typed record of (a game this side has
    not installed): its envelope is checked, ``result`` and ``bets`` are kept as they came."""

    game_name: GameName = msgspec.field(name="game")
    result: dict[str, Any]
    bets: dict[str, Any]

    @property
    def game(self) -> Game:
        return self.game_name


def require_bets(bets: Mapping[str, Any], names: tuple[str, ...]) -> None:
    """Refuse a record whose ``bets`` lack one of ``names`` (from a ``__post_init__``)."""
    missing = [name for name in names if name not in bets]
    if missing:
        refuse("bets", f"lacks {', '.join(missing)} (every record carries them)")


def refuse(field: str, reason: str) -> None:
    """Refuse a record from a ``__post_init__``: msgspec turns the ValueError into its
    ValidationError (with the path to the struct), :func:`_explain` reads the field back."""
    raise ValueError(f"{_FIELD_MARK}{field}{_FIELD_MARK}{reason}")


_FIELD_MARK: Final = "\x1f"
_ERROR_AT = re.compile(r"(?P<what>.*?)(?: - at (?:`key` in )?`\$(?P<path>.*)`)?", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>.*)`")
_STEP = re.compile(r"\.(?P<name>[^.\[]+)|\[(?P<index>[^\]]+)\]")
_UNTYPED_DECODER: Final = msgspec.json.Decoder(UntypedRecord)
#: The records a decoder was made for, and it (one per set of games: normally one).
_DECODERS: dict[tuple[tuple[str, type[GameRecord]], ...], msgspec.json.Decoder[Any]] = {}
#: The mapping asked for last and its decoder: the registry passes the same one every time.
_LAST: list[tuple[Mapping[str, type[GameRecord]], msgspec.json.Decoder[Any] | None]] = []


def _decoder(records: Mapping[str, type[GameRecord]]) -> msgspec.json.Decoder[Any] | None:
    if _LAST and _LAST[0][0] is records:
        return _LAST[0][1]
    decoder = _made(records)
    _LAST[:] = [(records, decoder)]
    return decoder


def _made(records: Mapping[str, type[GameRecord]]) -> msgspec.json.Decoder[Any] | None:
    key = tuple(sorted(records.items()))
    if not key:
        return None
    decoder = _DECODERS.get(key)
    if decoder is None:
        for name, record in key:
            if record.__struct_config__.tag != name:
                raise ValueError(f"{record.__name__} is no record of {name!r}")
        decoder = _DECODERS[key] = msgspec.json.Decoder(_union(record for _, record in key))
    return decoder


def _union(members: Iterator[type[GameRecord]]) -> Any:
    return Union[tuple(members)]  # noqa: UP007 (built at run time, from a tuple)


def decode_outcome(data: bytes | str | Mapping[str, Any],
                   records: Mapping[str, type[GameRecord]]) -> OutcomeRecord:
    """The typed outcome record of ``data`` (JSON text, or the object it decodes to), envelope
    fields (``table_seq``, ``ts``) included, version 1 or 2; fields this version does not know
    are ignored. ``records`` are the typed records of the games known here, by name
    (``tabled.games.registry.records()``; read once per mapping object): a record of one of
    them decodes to its :class:`GameRecord`; of another game (an id), to an
    :class:`UntypedRecord`. Raises :class:`OutcomeError` naming the field and the reason.

    JSON's own types, strictly: an integer is not ``true`` or ``1.0``, a string is not a
    number, ``null`` only where the contract allows it."""
    decoder = _decoder(records)
    try:
        try:
            if decoder is None:
                raise _Untyped
            if isinstance(data, Mapping):
                typed: OutcomeRecord = msgspec.convert(data, decoder.type, strict=True)
                return typed
            decoded: OutcomeRecord = decoder.decode(data)
            return decoded
        except msgspec.ValidationError as exc:
            if not _another_game(exc):
                raise
        except _Untyped:
            pass
        if isinstance(data, Mapping):
            untyped: OutcomeRecord = msgspec.convert(data, UntypedRecord, strict=True)
            return untyped
        decoded = _UNTYPED_DECODER.decode(data)
        return decoded
    except msgspec.ValidationError as exc:
        raise _explain(data, exc, records) from None
    except msgspec.DecodeError as exc:
        raise OutcomeError("", f"not JSON: {exc}") from None


class _Untyped(Exception):
    """No typed record is known: the record is read as an :class:`UntypedRecord`."""


def _another_game(exc: msgspec.ValidationError) -> bool:
    """Whether msgspec refused a record for naming a game none of the typed records is."""
    return str(exc).startswith("Invalid value ") and str(exc).endswith(" - at `$.game`")


def _explain(data: bytes | str | Mapping[str, Any], exc: msgspec.ValidationError,
             records: Mapping[str, type[GameRecord]]) -> OutcomeError:
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
    record = records.get(game) if isinstance(game, str) else None
    mapped = record.MAPPED if record is not None else {}
    steps: list[str] = []
    here: Any = obj
    for m in _STEP.finditer(path):
        step = m["name"] or m["index"]
        if step == "...":  # a mapping's value: which one is refused
            step = _refused_key(here, mapped.get(".".join(steps))) or step
        steps.append(step)
        here = here.get(step) if isinstance(here, Mapping) else (
            here[int(step)] if isinstance(here, list) and step.isdigit()
            and int(step) < len(here) else None)
    field = ".".join(steps)
    if "`key` in" in str(exc) and isinstance(here, Mapping):
        keys = [k for k in here if not re.fullmatch(SEAT_KEY_PATTERN, str(k))]
        return OutcomeError(field, f"key {keys[0] if keys else '?'!r} is not a seat number")
    if what.startswith(_FIELD_MARK):
        _, name, reason = what.split(_FIELD_MARK, 2)
        return OutcomeError(f"{field}.{name}" if field and name else field or name, reason)
    missing = _MISSING.fullmatch(what)
    if missing:
        name = f"{field}.{missing['name']}" if field else missing["name"]
        return OutcomeError(name, f"missing ({_games(records)})" if name == "game" else "missing")
    if field == "game":
        return OutcomeError("game", f"{here!r} is not a game's name ({_games(records)})")
    if field == "v":
        return OutcomeError("v", f"unsupported contract version {here!r} (this reads "
                                 f"{' and '.join(map(str, READ_VERSIONS))})")
    reason = (what[0].lower() + what[1:] if what else "not what the contract allows")
    return OutcomeError(field, f"{here!r}: {reason.replace('`', '')}")


def _games(records: Mapping[str, type[GameRecord]]) -> str:
    """What a record's ``game`` may be, for a message: the games known here, or any id."""
    known = ", ".join(sorted(records))
    return f"one of {known}, or another game's id" if known else f"an id: {ID_RULE}"


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
