"""The normalized event stream of CONTRACT.md, version 1: typed events, parsing and encoding.

This module owns the public event vocabulary that drivers emit and the rules core consumes. It is
pure: no I/O, no clock, no logging. Parsing is strict about what the contract requires (types,
card codes, die faces, required fields) and lenient about what it allows (extra fields are kept in
``extra`` so that a stream survives a round trip unchanged). Strict means JSON's own types: an
integer is not ``true`` or ``1.0``, a boolean is not ``1``, a field is present with a value or
absent, never ``null``, ``NaN`` is not JSON, and a required field is never given a default.

It must never accept an event it cannot represent faithfully: anything malformed raises
:class:`EventError` with a reason a person can act on. What one game requires beyond the event
type (:data:`GAME_REQUIRED`) is checked where the game is known (:func:`check_for_game`).
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeAlias

from tabled.contract import CONTRACT_VERSION, ContractError
from tabled.contract.devices import DEVICE_KINDS

RANKS = "A23456789TJQK"
SUITS = "SHCD"
#: Every valid card code, e.g. ``"TD"`` (ten of diamonds).
CARD_CODES: frozenset[str] = frozenset(r + s for r in RANKS for s in SUITS)

Seat: TypeAlias = int | Literal["dealer"]
DEALER: Literal["dealer"] = "dealer"
#: What a ``fault`` event's optional ``family`` (the driver family of the device, a plugin's
#: name) must look like.
_FAMILY_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: What a dealer may declare on the console (a ``declare`` event), by game: the result the
#: dealer calls out, which the pit compares with the rules core's outcome. Baccarat: the
#: winner. Craps, the stickman's call of a throw: on a come-out roll ``natural`` (7 or 11),
#: ``craps`` (2, 3, 12) or ``point`` (a point is set); with a point on, ``seven_out``,
#: ``point_made`` or ``no_decision``. Q Poker: whether the dealer qualifies (Art. 9.4).
DECLARATIONS: dict[str, tuple[str, ...]] = {
    "baccarat": ("banker", "player", "tie"),
    "craps": ("natural", "craps", "point", "seven_out", "point_made", "no_decision"),
    "qpoker": ("dealer_qualifies", "dealer_does_not_qualify"),
}
_DECLARED: frozenset[str] = frozenset(word for words in DECLARATIONS.values() for word in words)


class EventError(ContractError):
    """A malformed event: not JSON, an unknown type, a bad card or die, a missing field."""


#: Fields CONTRACT.md requires of an event type in one game only (the event table's "qpoker:"
#: entries): Q Poker deals every card to a seat, and a round's ``round_start`` lists the seats
#: with a bet. The parser knows no game, so these are checked where the game is known, with
#: :func:`check_for_game` (``tabled replay``, the daemon's runtime) or ``parse_line(line,
#: game=...)``; without them the rules would have to guess (a card to no position, bets
#: inferred from the deal).
GAME_REQUIRED: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "qpoker": {"card": ("seat",), "round_start": ("seats",)},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Meta:
    """Where an event came from: the device id, its per-device sequence number, its timestamp,
    and which of the device's messages it stands for (``boot``: the device's boot id, ``msg``:
    its message number from that boot; docs/protocols/framing.md, exactly-once delivery;
    ``device_boot``/``device_msg`` in JSON)."""

    device: str | None = None
    seq: int | None = None
    ts: str | None = None
    boot: int | None = None
    msg: int | None = None


_NO_META = Meta()


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every normalized event. ``extra`` keeps fields this version does not know."""

    TYPE: ClassVar[str] = ""
    meta: Meta = _NO_META
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def type(self) -> str:
        return self.TYPE


@dataclass(frozen=True, slots=True, kw_only=True)
class ShoeStart(Event):
    """Baccarat: a new shoe of ``decks`` decks; resets the card counts."""

    TYPE: ClassVar[str] = "shoe_start"
    decks: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Burn(Event):
    """Baccarat: a burned card, never dealt to a hand (the card may be unknown)."""

    TYPE: ClassVar[str] = "burn"
    card: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CutCard(Event):
    """Baccarat: the cut card came out of the shoe (Art. 3)."""

    TYPE: ClassVar[str] = "cut_card"


@dataclass(frozen=True, slots=True, kw_only=True)
class Demo(Event):
    """Baccarat: the next hand is a demonstration hand (Art. 2.2)."""

    TYPE: ClassVar[str] = "demo"


@dataclass(frozen=True, slots=True, kw_only=True)
class CardDealt(Event):
    """One card: baccarat, the next card out of the shoe; Q Poker, one card to a seat."""

    TYPE: ClassVar[str] = "card"
    card: str
    face_up: bool | None = None
    seat: Seat | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundStart(Event):
    """A new round; for Q Poker, ``seats`` are the positions with a bet."""

    TYPE: ClassVar[str] = "round_start"
    seats: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HandDealt(Event):
    """Q Poker: a shuffler-dealer delivers a seat's cards at once."""

    TYPE: ClassVar[str] = "hand"
    seat: Seat
    cards: tuple[str, ...]
    face_up: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision(Event):
    """Q Poker: a seat plays (``play=True``) or folds (Art. 9.2-9.3); with ``round``, only in
    that round (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "decision"
    seat: int
    play: bool
    round: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reveal(Event):
    """Q Poker: the dealer turns the dealer's cards; the round is settled. With ``round``, only
    that round (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "reveal"
    round: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Roll(Event):
    """Craps: the two faces of a throw (a cocked die already read as its clearest face)."""

    TYPE: ClassVar[str] = "roll"
    dice: tuple[int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class NoRoll(Event):
    """Craps: no roll, throw again (Art. 1), e.g. a die left the table."""

    TYPE: ClassVar[str] = "no_roll"
    # CONTRACT.md requires ``reason`` on the wire (the parser never supplies one); the default
    # only spares code that builds the event itself from spelling out the usual reason.
    reason: str = "off_table"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault(Event):
    """A device-reported fault, with a stable ``code``."""

    TYPE: ClassVar[str] = "fault"
    code: str
    detail: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Void(Event):
    """The dealer voids the current round; with ``round``, only that round
    (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "void"
    reason: str | None = None
    round: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Withheld(Event):
    """Q Poker, an addition to contract v1: ``count`` face-down cards went to ``seat`` here, in
    dealing order, and their identity is withheld until the rules reveal it. The real ``card`` or
    ``hand`` events follow later, marked ``"withheld": true``, and fill the placeholder in."""

    TYPE: ClassVar[str] = "withheld"
    seat: Seat
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Declare(Event):
    """An addition to contract v1: the result the dealer declares on the console (``result``,
    one of :data:`DECLARATIONS`), for round ``round`` or, without one, for the round decided
    last. It decides nothing: the rules core accepts it and changes nothing; the pit compares
    it with the round's outcome (``result_mismatch``)."""

    TYPE: ClassVar[str] = "declare"
    result: str
    round: int | None = None


#: The event types whose optional ``round`` (a positive integer, an addition to contract v1)
#: names the round the dealer's command is for: the number that round's outcome carries. A
#: command reaches the daemon later than the dealer gave it (a slow network, a console that
#: sends again when no reply came), and the table may have begun another round meanwhile: the
#: rules core declines a ``decision``, ``reveal`` or ``void`` naming a round other than the one
#: it would act on (notice ``for_another_round``) and changes nothing. Without ``round`` the
#: event acts on whatever round is open, as before. A ``declare`` names the round it declares
#: (without it, the round decided last), and decides nothing either way.
FOR_A_ROUND: frozenset[str] = frozenset({"decision", "reveal", "void", "declare"})


#: The extra field of a ``hand`` (or ``card``) event that lists which of its cards were seen face
#: up when not all of them were: the event stays face down (``face_up`` false) and only the listed
#: cards are public (Q Poker Art. 11.2). A ``withheld`` placeholder carries it too, so that the
#: exposed card is public at its place in the deal while the others are withheld.
EXPOSED = "exposed"


def exposed_cards(event: Event) -> tuple[str, ...]:
    """The cards of a dealing event (``card``, ``hand``, ``withheld``) that were seen face up,
    in dealing order.

    ``face_up: true`` exposes every card of the event, unless an ``exposed`` list names some of
    them: then exactly those (one card of a hand turned over is that card, not the hand). Only
    cards of the event itself count; a placeholder's, whose cards are not shown, as listed.
    """
    listed = event.extra.get(EXPOSED)
    names = ([c for c in listed if isinstance(c, str) and c in CARD_CODES]
             if isinstance(listed, list | tuple) else [])
    if isinstance(event, Withheld):
        return tuple(dict.fromkeys(names))[: event.count]
    if isinstance(event, CardDealt):
        cards: tuple[str, ...] = (event.card,)
    elif isinstance(event, HandDealt):
        cards = event.cards
    else:
        return ()
    chosen = tuple(card for card in cards if card in names)
    if chosen:
        return chosen
    return cards if event.face_up is True else ()


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        ShoeStart, Burn, CutCard, Demo, CardDealt, RoundStart, HandDealt, Decision, Reveal,
        Roll, NoRoll, Fault, Void, Withheld, Declare,
    )
}

_META_KEYS = frozenset({"v", "type", "device", "seq", "ts", "device_boot", "device_msg"})
# Tuples, not sets: encoding must put the fields in the same order in every process.
_FIELDS: dict[str, tuple[str, ...]] = {
    "shoe_start": ("decks",),
    "burn": ("card",),
    "cut_card": (),
    "demo": (),
    "card": ("card", "face_up", "seat"),
    "round_start": ("seats",),
    "hand": ("seat", "cards", "face_up"),
    "decision": ("seat", "play", "round"),
    "reveal": ("round",),
    "roll": ("dice",),
    "no_roll": ("reason",),
    "fault": ("code", "detail"),
    "void": ("reason", "round"),
    "withheld": ("seat", "count"),
    "declare": ("result", "round"),
}


# -- parsing -----------------------------------------------------------------------------------

# Every key an event of each type may carry outside ``extra``: a superset check of the object's
# keys against it settles, in one C call, that the common event has no extra field at all.
_ALLOWED: dict[str, frozenset[str]] = {
    etype: _META_KEYS | frozenset(known) for etype, known in _FIELDS.items()
}


def _slot_setters(cls: type[Any], *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The slots' own setters for every field of the frozen class ``cls``, in order.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, twice as
    slow as the slot's descriptor, and parsing builds two such objects per event (replay's
    hottest path). The object built through these setters is the same one ``__init__`` would
    build: checked here that ``names`` are all the fields and that nothing validates in a
    ``__post_init__``.
    """
    assert [f.name for f in fields(cls)] == list(names), f"{cls.__name__} fields changed"
    assert not hasattr(cls, "__post_init__"), f"{cls.__name__} validates in __post_init__"
    return tuple(getattr(cls, name).__set__ for name in names)


_new = object.__new__
_set_device, _set_seq, _set_ts, _set_boot, _set_msg = _slot_setters(
    Meta, "device", "seq", "ts", "boot", "msg")
_set_card_meta, _set_card_extra, _set_card, _set_face_up, _set_seat = _slot_setters(
    CardDealt, "meta", "extra", "card", "face_up", "seat")


def _new_meta(device: str | None, seq: int | None, ts: str | None, boot: int | None,
              msg: int | None) -> Meta:
    meta: Meta = _new(Meta)
    _set_device(meta, device)
    _set_seq(meta, seq)
    _set_ts(meta, ts)
    _set_boot(meta, boot)
    _set_msg(meta, msg)
    return meta


def _new_card(meta: Meta, extra: dict[str, Any], card: str, face_up: bool | None,
              seat: Seat | None) -> CardDealt:
    event: CardDealt = _new(CardDealt)
    _set_card_meta(event, meta)
    _set_card_extra(event, extra)
    _set_card(event, card)
    _set_face_up(event, face_up)
    _set_seat(event, seat)
    return event


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _card(value: Any, what: str = "card") -> str:
    if not isinstance(value, str) or value not in CARD_CODES:
        raise EventError(f"{what} {value!r} is not a card code (rank {RANKS} + suit {SUITS})")
    return value


def _seat(value: Any, *, dealer_allowed: bool = True) -> Seat:
    if value == DEALER and dealer_allowed:
        return DEALER
    if _is_int(value) and value >= 1:
        return int(value)
    allowed = 'a positive integer or "dealer"' if dealer_allowed else "a positive integer"
    raise EventError(f"seat {value!r} is not {allowed}")


def _required(obj: Mapping[str, Any], key: str, etype: str) -> Any:
    if key not in obj:
        raise EventError(f"{etype} event is missing required field {key!r}")
    return obj[key]


def _optional_bool(obj: Mapping[str, Any], key: str) -> bool | None:
    value = obj.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise EventError(f"{key} {value!r} is not a boolean")


def _optional_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise EventError(f"{key} {value!r} is not a string")


def _text(obj: Mapping[str, Any], key: str, etype: str) -> str:
    """A required, non-empty string field."""
    value = _required(obj, key, etype)
    if not isinstance(value, str) or not value:
        raise EventError(f"{key} {value!r} is not a non-empty string")
    return value


def _meta(obj: Mapping[str, Any]) -> Meta:
    device, seq, ts = obj.get("device"), obj.get("seq"), obj.get("ts")
    boot, msg = obj.get("device_boot"), obj.get("device_msg")
    if device is None and seq is None and ts is None and boot is None and msg is None:
        return _NO_META
    if device is not None and not isinstance(device, str):
        raise EventError(f"device {device!r} is not a string")
    if seq is not None and not (_is_int(seq) and seq >= 0):
        raise EventError(f"seq {seq!r} is not a non-negative integer")
    if ts is not None and not isinstance(ts, str):
        raise EventError(f"ts {ts!r} is not an RFC 3339 string")
    for key, value in (("device_boot", boot), ("device_msg", msg)):
        if value is not None and not (_is_int(value) and 0 <= value <= 0xFFFFFFFF):
            raise EventError(f"{key} {value!r} is not a 32-bit unsigned integer")
    return _new_meta(device, seq, ts, boot, msg)


# One parser per event type: (object, meta, extra) -> event.
_Parser: TypeAlias = Callable[[dict[str, Any], Meta, dict[str, Any]], Event]



def _parse_card(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    seat = obj.get("seat")
    return _new_card(meta, extra, _card(_required(obj, "card", "card")),
                     _optional_bool(obj, "face_up"), None if seat is None else _seat(seat))


def _parse_roll(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    dice = _required(obj, "dice", "roll")
    if (
        not isinstance(dice, list) or len(dice) != 2
        or not all(_is_int(d) and 1 <= d <= 6 for d in dice)
    ):
        raise EventError(f"dice {dice!r} is not two integers 1-6")
    return Roll(dice=(dice[0], dice[1]), meta=meta, extra=extra)


def _parse_hand(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    cards = _required(obj, "cards", "hand")
    if not isinstance(cards, list):
        raise EventError(f"cards {cards!r} is not a list of card codes")
    return HandDealt(seat=_seat(_required(obj, "seat", "hand")),
                     cards=tuple(_card(c) for c in cards),
                     face_up=_optional_bool(obj, "face_up"), meta=meta, extra=extra)


def parse_round(value: Any) -> int | None:
    """An optional ``round`` field (absent: None), a positive integer (not ``true``, not
    ``1.0``), or :class:`EventError`; shared with the console's commands."""
    if value is None:
        return None
    if not (_is_int(value) and value >= 1):
        raise EventError(f"round {value!r} is not a positive integer")
    return int(value)


def _parse_decision(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    play = _required(obj, "play", "decision")
    if not isinstance(play, bool):
        raise EventError(f"play {play!r} is not a boolean")
    return Decision(seat=int(_seat(_required(obj, "seat", "decision"), dealer_allowed=False)),
                    play=play, round=parse_round(obj.get("round")), meta=meta, extra=extra)


def _parse_reveal(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    return Reveal(round=parse_round(obj.get("round")), meta=meta, extra=extra)


def _parse_round_start(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    seats = obj.get("seats")
    if seats is None:
        return RoundStart(meta=meta, extra=extra)
    if not isinstance(seats, list):
        raise EventError(f"seats {seats!r} is not a list of seat numbers")
    parsed = tuple(int(_seat(s, dealer_allowed=False)) for s in seats)
    if len(set(parsed)) != len(parsed):
        raise EventError(f"seats {seats!r} lists a seat twice")
    return RoundStart(seats=parsed, meta=meta, extra=extra)


def _parse_shoe_start(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    decks = _required(obj, "decks", "shoe_start")
    if not (_is_int(decks) and decks >= 1):
        raise EventError(f"decks {decks!r} is not a positive integer")
    return ShoeStart(decks=decks, meta=meta, extra=extra)


def _parse_burn(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    card = obj.get("card")
    return Burn(card=None if card is None else _card(card), meta=meta, extra=extra)


def _parse_fault(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    code = _text(obj, "code", "fault")
    # The rules read the kind of a lost device (qpoker.art11.5): a misspelt one must not pass
    # for another device's.
    family = obj.get("family", "")
    if "family" in obj and not (isinstance(family, str) and _FAMILY_NAME.fullmatch(family)):
        raise EventError(f"family {family!r} is not a device family's name")
    kind = obj.get("kind", "")
    if "kind" in obj and not (isinstance(kind, str) and kind in DEVICE_KINDS):
        raise EventError(f"kind {kind!r} is not one of {', '.join(DEVICE_KINDS)}")
    return Fault(code=code, detail=_optional_str(obj, "detail"), meta=meta, extra=extra)


def _parse_no_roll(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    # CONTRACT.md: ``reason`` is the no_roll's one field, not optional; none is made up here.
    return NoRoll(reason=_text(obj, "reason", "no_roll"), meta=meta, extra=extra)


def _parse_withheld(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    count = _required(obj, "count", "withheld")
    if not (_is_int(count) and 1 <= count <= 3):
        raise EventError(f"count {count!r} is not 1, 2 or 3")
    return Withheld(seat=_seat(_required(obj, "seat", "withheld")), count=count, meta=meta,
                    extra=extra)


def _parse_void(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    return Void(reason=_optional_str(obj, "reason"), round=parse_round(obj.get("round")),
                meta=meta, extra=extra)


def parse_declaration(result: Any, round_no: Any = None) -> tuple[str, int | None]:
    """A declared ``result`` and its optional ``round``, checked (shared with the console
    command), or :class:`EventError`."""
    if not isinstance(result, str) or result not in _DECLARED:
        raise EventError(f"result {result!r} is not one of {', '.join(sorted(_DECLARED))}")
    return result, parse_round(round_no)


def _parse_declare(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
    result, round_no = parse_declaration(_required(obj, "result", "declare"), obj.get("round"))
    return Declare(result=result, round=round_no, meta=meta, extra=extra)


def _fieldless(cls: type[Event]) -> _Parser:
    def parse(obj: dict[str, Any], meta: Meta, extra: dict[str, Any]) -> Event:
        return cls(meta=meta, extra=extra)
    return parse


_PARSERS: dict[str, _Parser] = {
    "card": _parse_card, "roll": _parse_roll, "hand": _parse_hand, "decision": _parse_decision,
    "round_start": _parse_round_start, "shoe_start": _parse_shoe_start, "burn": _parse_burn,
    "fault": _parse_fault, "no_roll": _parse_no_roll, "withheld": _parse_withheld,
    "void": _parse_void, "cut_card": _fieldless(CutCard), "demo": _fieldless(Demo),
    "reveal": _parse_reveal, "declare": _parse_declare,
}
assert _PARSERS.keys() == EVENT_TYPES.keys()


def _check_unicode(obj: dict[str, Any]) -> None:
    """Refuse text no UTF-8 can carry (a lone surrogate, which JSON's ``\\u`` escapes can
    spell): such an event could be neither journaled nor published as it came."""
    pending: list[Any] = [obj]
    while pending:  # a loop, not recursion: nesting depth is the sender's to choose
        value = pending.pop()
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise EventError(f"text {value!r} is not valid Unicode") from None
        elif isinstance(value, dict):
            pending += value.keys()
            pending += value.values()
        elif isinstance(value, list):
            pending += value


def parse_event(obj: Any, game: str | None = None) -> Event:
    """Build a typed event from a decoded JSON object, or raise :class:`EventError`.

    With ``game``, the fields CONTRACT.md requires in that game only are required too
    (:data:`GAME_REQUIRED`)."""
    event = _parse_event(obj, check_unicode=True)
    if game is not None:
        check_for_game(event, game)
    return event


def check_for_game(event: Event, game: str) -> None:
    """Raise :class:`EventError` if ``event`` lacks a field CONTRACT.md requires in ``game``
    (a Q Poker ``card`` without ``seat``, a Q Poker ``round_start`` without ``seats``).

    The one check ``tabled replay`` and the daemon's runtime both make before an event reaches
    the rules, so that both refuse the same events."""
    required = GAME_REQUIRED.get(game)
    if not required:
        return
    for name in required.get(event.TYPE, ()):
        if getattr(event, name) is None:
            raise EventError(f"{event.TYPE} event is missing required field {name!r} "
                             f"(required in {game})")


#: Every key a type's parser reads, with a value of its own type: none of them may be null.
#: (A missing optional field is left out of the object; ``null`` is no value of any of them:
#: event.schema.json, and a parse-encode round trip that kept what came in, both say so.)
_TYPED: dict[str, tuple[str, ...]] = {
    etype: ("device", "seq", "ts", "device_boot", "device_msg", *known)
    for etype, known in _FIELDS.items()
}


def _parse_event(obj: Any, *, check_unicode: bool) -> Event:
    if not isinstance(obj, dict):
        raise EventError(f"an event is a JSON object, not {type(obj).__name__}")
    if check_unicode:
        _check_unicode(obj)
    version = obj.get("v")
    # The integer 1 itself: not ``true`` and not ``1.0``, which Python holds equal to it.
    if version.__class__ is not int or version != CONTRACT_VERSION:
        if "v" not in obj:
            raise EventError("event is missing required field 'v' (the contract version)")
        raise EventError(f"unsupported contract version v={_json_text(version)} "
                         f"(expected the integer {CONTRACT_VERSION})")
    etype = obj.get("type")
    if not isinstance(etype, str) or (parser := _PARSERS.get(etype)) is None:
        raise EventError(f"unknown event type {etype!r}")
    if None in obj.values():
        for key in _TYPED[etype]:
            if key in obj and obj[key] is None:
                raise EventError(f"{key} is null: a field without a value is left out")
    meta = _meta(obj)
    allowed = _ALLOWED[etype]
    extra = {} if allowed.issuperset(obj) else {k: v for k, v in obj.items() if k not in allowed}
    return parser(obj, meta, extra)


def _json_text(value: Any) -> str:
    """A value as the JSON it came as (``true``, ``1.0``), for messages about JSON input."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _refuse_constant(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python's JSON reader takes them, JSON has no
    such values (RFC 8259), and no journal, MQTT consumer or replay could carry them on."""
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
# (typeshed declares make_scanner as a class taking a scanner; it is a factory of decoders)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    _DECODER)  # type: ignore[arg-type]


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``, faster for one JSON Lines record, and strict: the standard
    library's own scanner is called directly, which skips the two whitespace matches and the
    decoder dispatch around it (half the time of a short line). Anything but a plain record
    (leading whitespace, bytes, trailing content, an error) goes through ``json.loads`` itself,
    so the value and every error are exactly its own. ``NaN`` and the infinities, which
    ``json.loads`` accepts and JSON does not have, are an error either way."""
    if isinstance(text, str):
        try:
            value, end = _scan_json(text, 0)
        except StopIteration:
            pass  # json.loads raises the error with its own message
        else:
            if end == len(text) or text[end:] == "\n":
                return value
    return json.loads(text, parse_constant=_refuse_constant)


def parse_line(line: str | bytes, game: str | None = None) -> Event:
    """Parse one JSON Lines record into an event, or raise :class:`EventError`.

    A line is one event object: a blank line is malformed too (CONTRACT.md). With ``game``,
    the fields required in that game are required too (:func:`check_for_game`)."""
    try:
        obj = load_json(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        if not line.strip():  # (no JSON text is blank: checked only here, off the fast path)
            raise EventError("a blank line: every line of the stream is one event object"
                             ) from None
        # RecursionError: nested deeper than the interpreter's stack, still not an event.
        raise EventError(f"not JSON: {exc}") from None
    # Only a ``\\u`` escape or a character outside ASCII can put a lone surrogate in the
    # decoded text; a plain ASCII line (nearly every real one) needs no walk through it.
    plain = isinstance(line, str) and line.isascii() and "\\u" not in line
    event = _parse_event(obj, check_unicode=not plain)
    if game is not None:
        check_for_game(event, game)
    return event


def read_events(lines: Iterable[str], game: str | None = None) -> Iterator[tuple[int, Event]]:
    """Each event of a JSON Lines stream with its line number (from 1), in order.

    Every line is one event object (CONTRACT.md): a blank line is malformed like any other
    line that is not one, and so, given ``game``, is an event without a field that game
    requires (:func:`check_for_game`). The first malformed line raises :class:`LineError`:
    what the stream gave before it has been yielded, nothing after it is read. ``tabled
    replay`` and ``tabled roads`` read through here, so both number and refuse lines alike.
    """
    for lineno, line in enumerate(lines, 1):
        try:
            event = parse_line(line, game)
        except EventError as exc:
            raise LineError(lineno, exc) from None
        yield lineno, event


class LineError(EventError):
    """A malformed line of a JSON Lines event stream; ``str()`` is ``"line N: reason"``."""

    def __init__(self, lineno: int, error: EventError) -> None:
        super().__init__(f"line {lineno}: {error}")
        self.lineno = lineno
        self.reason = str(error)


# -- encoding ----------------------------------------------------------------------------------


def event_to_dict(ev: Event) -> dict[str, Any]:
    """The contract's JSON object for an event (extra fields included, ``None`` fields omitted)."""
    out: dict[str, Any] = {"v": CONTRACT_VERSION, "type": ev.TYPE}
    meta = ev.meta
    if meta.device is not None:
        out["device"] = meta.device
    if meta.seq is not None:
        out["seq"] = meta.seq
    if meta.ts is not None:
        out["ts"] = meta.ts
    for name in _FIELDS[ev.TYPE]:
        value = getattr(ev, name)
        if value is None:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    if meta.boot is not None:
        out["device_boot"] = meta.boot
    if meta.msg is not None:
        out["device_msg"] = meta.msg
    out.update(ev.extra)
    return out


def encode_event(ev: Event) -> str:
    """One compact JSON line (without the newline) for an event."""
    return json.dumps(event_to_dict(ev), separators=(",", ":"))


def lost_kind(fault: Fault) -> str | None:
    """The kind of device a ``device_lost`` fault says is gone (``kind``; a fault from before
    kinds were named carries only ``family``, which then was the kind), or None."""
    kind = fault.extra.get("kind", fault.extra.get("family"))
    return kind if isinstance(kind, str) and kind in DEVICE_KINDS else None
