"""The normalized event stream of docs/contract.md, version 2 (version 1 read too): typed
events, decoding and encoding.

This module owns the public event vocabulary that drivers emit and the rules core consumes. It is
pure: no I/O, no clock, no logging. Decoding is strict about what the contract requires (types,
card codes, die faces, required fields) and lenient about what it allows (extra fields are kept in
``extra`` so that a stream survives a round trip unchanged). Strict means JSON's own types: an
integer is not ``true`` or ``1.0``, a boolean is not ``1``, a field is present with a value or
absent, never ``null``, ``NaN`` is not JSON, and a required field is never given a default.

How (issue 14): the contract's wire form of each event type is a msgspec ``Struct`` (``_Wire``
and its subclasses below: the types, ranges, card alphabet, die faces and required fields are
their annotations), and one msgspec decoder reads a line into the tagged union of them, ``type``
naming the struct, in one pass in C: parsing, UTF-8 and lone-surrogate checks and validation
together. The public event (a frozen ``Struct`` too) is then made from the wire struct in one
constructor call, the wire struct standing for its :class:`Meta`. What msgspec cannot say is
checked here, off the common path: a ``null`` (the decoder takes it for an absent optional
field, so a line that spells ``null`` anywhere goes the general way, which refuses it for a
typed field), a seat listed twice, and extra fields (msgspec drops unknown fields: the common
line has none, and the decoder that takes only known fields settles that in the same pass; a
line it refuses is decoded again, into the same wire struct without that restriction and into
plain JSON values for its extras). A line msgspec refuses is explained from the error's path and
the value there, naming the field.

It must never accept an event it cannot represent faithfully: anything malformed raises
:class:`EventError` with a reason a person can act on. It knows no game: what one game requires
beyond the event type (a field, the words its dealer declares, two dice to a roll) is that game's
declaration's, checked where the game is known (``tabled.games.registry.check_event``), by the
:data:`EventChecks` the parsers here take. What a game requires of an event's shape and a decoder
can check as it decodes (how many dice a ``roll`` has) it states as data (:class:`GameChecks`):
a stream of that game is then read by a decoder of its own, with no check left per line.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, TypeAlias, Union, cast

import msgspec

from tabled.contract import CONTRACT_VERSION, READ_VERSIONS, ContractError
from tabled.contract.devices import DEVICE_KINDS
from tabled.contract.limits import ID_PATTERN, ID_RULE

RANKS = "A23456789TJQK"
SUITS = "SHCD"
#: Every valid card code, e.g. ``"TD"`` (ten of diamonds).
CARD_CODES: frozenset[str] = frozenset(r + s for r in RANKS for s in SUITS)

Seat: TypeAlias = int | Literal["dealer"]
DEALER: Literal["dealer"] = "dealer"
#: What a ``fault`` event's optional ``family`` (the driver family of the device, a plugin's
#: name) must look like.
_FAMILY_NAME = r"[a-z][a-z0-9_]{0,31}"
#: What a ``declare`` event's ``result`` (the word a dealer declares) must look like: an id.
#: Which words a table takes is its game's (the declaration's ``declarations``).
_DECLARED_WORD = ID_PATTERN.replace("$", r"\Z")
_DECLARED_MATCH: Final = re.compile(_DECLARED_WORD)
#: How many dice a ``roll`` carries at least: two (craps); a game of three (sic bo) throws
#: three. How many exactly is the game's check.
MIN_DICE: Final = 2


class EventError(ContractError):
    """A malformed event: not JSON, an unknown type, a bad card or die, a missing field."""


# -- the values the contract allows, as msgspec constraints ---------------------------------------

_NonNegative = Annotated[int, msgspec.Meta(ge=0)]
_Positive = Annotated[int, msgspec.Meta(ge=1)]
_U32 = Annotated[int, msgspec.Meta(ge=0, le=0xFFFFFFFF)]
_Text = Annotated[str, msgspec.Meta(min_length=1)]  # a non-empty string
_Die = Annotated[int, msgspec.Meta(ge=1, le=6)]
_AnySeat = _Positive | Literal["dealer"]
_Family = Annotated[str, msgspec.Meta(pattern=rf"^{_FAMILY_NAME}\Z")]
_Declared = Annotated[str, msgspec.Meta(pattern=_DECLARED_WORD)]
_Dice = Annotated[tuple[_Die, ...], msgspec.Meta(min_length=MIN_DICE)]
if TYPE_CHECKING:  # the values below, spelt out at run time from the tables above
    _CardCode: TypeAlias = str
    _Kind: TypeAlias = str
else:
    _CardCode = Literal[tuple(sorted(CARD_CODES))]
    _Kind = Literal[tuple(DEVICE_KINDS)]


class Meta(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where an event came from: the device id, its per-device sequence number, its timestamp,
    and which of the device's messages it stands for (``boot``: the device's boot id, ``msg``:
    its message number from that boot; docs/protocols/framing.md, exactly-once delivery;
    ``device_boot``/``device_msg`` in JSON).

    A decoded event's meta is the wire struct it was decoded into (a subclass, carrying these
    five fields and the event's own): equality, hashing and ``repr`` see the five fields only.
    """

    device: str | None = None
    seq: _NonNegative | None = None
    ts: str | None = None
    boot: _U32 | None = msgspec.field(default=None, name="device_boot")
    msg: _U32 | None = msgspec.field(default=None, name="device_msg")

    def _key(self) -> tuple[object, ...]:
        return (self.device, self.seq, self.ts, self.boot, self.msg)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Meta):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Meta(device={self.device!r}, seq={self.seq!r}, ts={self.ts!r}, "
                f"boot={self.boot!r}, msg={self.msg!r})")


_NO_META: Final = Meta()
#: The ``extra`` of an event without extra fields: one shared, read-only empty mapping.
_NO_EXTRA: Final[Mapping[str, Any]] = types.MappingProxyType({})


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Base of every normalized event. ``extra`` keeps fields this version does not know; it
    takes no part in equality (two events of the same fields are the same event)."""

    TYPE: ClassVar[str] = ""
    meta: Meta = _NO_META
    extra: Mapping[str, Any] = _NO_EXTRA

    @property
    def type(self) -> str:
        return self.TYPE

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__struct_fields__ if name != "extra")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Event)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class ShoeStart(Event, frozen=True):
    """Baccarat: a new shoe of ``decks`` decks; resets the card counts."""

    TYPE: ClassVar[str] = "shoe_start"
    decks: int


class Burn(Event, frozen=True):
    """Baccarat: a burned card, never dealt to a hand (the card may be unknown)."""

    TYPE: ClassVar[str] = "burn"
    card: str | None = None


class CutCard(Event, frozen=True):
    """Baccarat: the cut card came out of the shoe (Art. 3)."""

    TYPE: ClassVar[str] = "cut_card"


class Demo(Event, frozen=True):
    """Baccarat: the next hand is a demonstration hand (Art. 2.2)."""

    TYPE: ClassVar[str] = "demo"


class CardDealt(Event, frozen=True):
    """One card: baccarat, the next card out of the shoe; Q Poker, one card to a seat."""

    TYPE: ClassVar[str] = "card"
    card: str
    face_up: bool | None = None
    seat: Seat | None = None


class RoundStart(Event, frozen=True):
    """A new round; for Q Poker, ``seats`` are the positions with a bet."""

    TYPE: ClassVar[str] = "round_start"
    seats: tuple[int, ...] | None = None


class HandDealt(Event, frozen=True):
    """Q Poker: a shuffler-dealer delivers a seat's cards at once."""

    TYPE: ClassVar[str] = "hand"
    seat: Seat
    cards: tuple[str, ...]
    face_up: bool | None = None


class Decision(Event, frozen=True):
    """Q Poker: a seat plays (``play=True``) or folds (Art. 9.2-9.3); with ``round``, only in
    that round (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "decision"
    seat: int
    play: bool
    round: int | None = None


class Reveal(Event, frozen=True):
    """Q Poker: the dealer turns the dealer's cards; the round is settled. With ``round``, only
    that round (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "reveal"
    round: int | None = None


class Roll(Event, frozen=True):
    """A throw of dice: the face of each die (a cocked die already read as its clearest face),
    two or more (:data:`MIN_DICE`); how many a game throws is the game's check (craps: two)."""

    TYPE: ClassVar[str] = "roll"
    dice: tuple[int, ...]


class NoRoll(Event, frozen=True):
    """Craps: no roll, throw again (Art. 1), e.g. a die left the table."""

    TYPE: ClassVar[str] = "no_roll"
    # docs/contract.md requires ``reason`` on the wire (the decoder never supplies one); the default
    # only spares code that builds the event itself from spelling out the usual reason.
    reason: str = "off_table"


class Fault(Event, frozen=True):
    """A device-reported fault, with a stable ``code``."""

    TYPE: ClassVar[str] = "fault"
    code: str
    detail: str | None = None


class Void(Event, frozen=True):
    """The dealer voids the current round; with ``round``, only that round
    (:data:`FOR_A_ROUND`)."""

    TYPE: ClassVar[str] = "void"
    reason: str | None = None
    round: int | None = None


class Withheld(Event, frozen=True):
    """Q Poker, an addition to contract v1: ``count`` face-down cards went to ``seat`` here, in
    dealing order, and their identity is withheld until the rules reveal it. The real ``card`` or
    ``hand`` events follow later, marked ``"withheld": true``, and fill the placeholder in."""

    TYPE: ClassVar[str] = "withheld"
    seat: Seat
    count: int


class Declare(Event, frozen=True):
    """An addition to contract v1: the result the dealer declares on the console (``result``,
    an id; which words a table takes is its game's declaration's), for round ``round`` or,
    without one, for the round decided last. It decides nothing: the rules core accepts it and
    changes nothing; the pit compares it with the round's outcome (``result_mismatch``)."""

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

#: Each type's own fields (beyond ``meta`` and ``extra``), in the order they are encoded: the
#: order of the class's declaration, the same in every process.
_FIELDS: dict[str, tuple[str, ...]] = {
    etype: tuple(name for name in cls.__struct_fields__ if name not in ("meta", "extra"))
    for etype, cls in EVENT_TYPES.items()
}


# -- the wire form: what the decoder reads, type by type ------------------------------------------


class _Wire(Meta, frozen=True, tag_field="type"):
    """One event as it is on the wire: ``v``, the type (the tag), the source fields (this is a
    :class:`Meta`), and the type's own fields with the values the contract allows. Unknown
    fields are skipped here (they are read separately, for ``extra``); the decoder of the common
    path refuses them instead (:data:`_COMMON`)."""

    v: Literal[1, 2]  # READ_VERSIONS: a stream recorded under version 1 reads as it did

    def event(self, extra: Mapping[str, Any]) -> Event:
        """The public event this line stands for."""
        raise NotImplementedError


class _ShoeStartWire(_Wire, frozen=True, tag="shoe_start"):
    decks: _Positive

    def event(self, extra: Mapping[str, Any]) -> Event:
        return ShoeStart(decks=self.decks, meta=self, extra=extra)


class _BurnWire(_Wire, frozen=True, tag="burn"):
    card: _CardCode | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Burn(card=self.card, meta=self, extra=extra)


class _CutCardWire(_Wire, frozen=True, tag="cut_card"):
    def event(self, extra: Mapping[str, Any]) -> Event:
        return CutCard(meta=self, extra=extra)


class _DemoWire(_Wire, frozen=True, tag="demo"):
    def event(self, extra: Mapping[str, Any]) -> Event:
        return Demo(meta=self, extra=extra)


class _CardWire(_Wire, frozen=True, tag="card"):
    card: _CardCode
    face_up: bool | None = None
    seat: _AnySeat | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return CardDealt(card=self.card, face_up=self.face_up, seat=self.seat, meta=self,
                         extra=extra)


class _RoundStartWire(_Wire, frozen=True, tag="round_start"):
    seats: tuple[_Positive, ...] | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        seats = self.seats
        if seats is not None and len(set(seats)) != len(seats):
            raise EventError(f"seats {list(seats)!r} lists a seat twice")
        return RoundStart(seats=seats, meta=self, extra=extra)


class _HandWire(_Wire, frozen=True, tag="hand"):
    seat: _AnySeat
    cards: tuple[_CardCode, ...]
    face_up: bool | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return HandDealt(seat=self.seat, cards=self.cards, face_up=self.face_up, meta=self,
                         extra=extra)


class _DecisionWire(_Wire, frozen=True, tag="decision"):
    seat: _Positive
    play: bool
    round: _Positive | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Decision(seat=self.seat, play=self.play, round=self.round, meta=self,
                        extra=extra)


class _RevealWire(_Wire, frozen=True, tag="reveal"):
    round: _Positive | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Reveal(round=self.round, meta=self, extra=extra)


class _RollWire(_Wire, frozen=True, tag="roll"):
    dice: _Dice

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Roll(dice=self.dice, meta=self, extra=extra)


class _NoRollWire(_Wire, frozen=True, tag="no_roll"):
    reason: _Text  # required: none is made up here

    def event(self, extra: Mapping[str, Any]) -> Event:
        return NoRoll(reason=self.reason, meta=self, extra=extra)


class _FaultWire(_Wire, frozen=True, tag="fault"):
    code: _Text
    detail: str | None = None
    # Kept in ``extra`` (not fields of Fault), and checked: the rules read the kind of a lost
    # device (qpoker.art11.5), and a misspelt one must not pass for another device's.
    family: _Family | msgspec.UnsetType = msgspec.UNSET
    kind: _Kind | msgspec.UnsetType = msgspec.UNSET

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Fault(code=self.code, detail=self.detail, meta=self, extra=extra)


class _VoidWire(_Wire, frozen=True, tag="void"):
    reason: str | None = None
    round: _Positive | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Void(reason=self.reason, round=self.round, meta=self, extra=extra)


class _WithheldWire(_Wire, frozen=True, tag="withheld"):
    seat: _AnySeat
    count: Annotated[int, msgspec.Meta(ge=1, le=3)]

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Withheld(seat=self.seat, count=self.count, meta=self, extra=extra)


class _DeclareWire(_Wire, frozen=True, tag="declare"):
    result: _Declared
    round: _Positive | None = None

    def event(self, extra: Mapping[str, Any]) -> Event:
        return Declare(result=self.result, round=self.round, meta=self, extra=extra)


_WIRES: tuple[type[_Wire], ...] = (
    _ShoeStartWire, _BurnWire, _CutCardWire, _DemoWire, _CardWire, _RoundStartWire, _HandWire,
    _DecisionWire, _RevealWire, _RollWire, _NoRollWire, _FaultWire, _VoidWire, _WithheldWire,
    _DeclareWire,
)
_META_NAMES: Final = ("device", "seq", "ts", "device_boot", "device_msg")


def _wire_names(wire: type[_Wire]) -> tuple[str, ...]:
    """The keys a wire struct reads, as they are spelt in JSON."""
    return tuple(f.encode_name for f in msgspec.structs.fields(wire))


def _tag(wire: type[_Wire]) -> str:
    """The event type a wire struct reads (its tag)."""
    tag = wire.__struct_config__.tag
    assert isinstance(tag, str), wire
    return tag


def _check_wires() -> dict[str, frozenset[str]]:
    """Each type's wire struct carries exactly its event's fields (and fault's two checked
    extras): the two declarations of a type cannot drift apart. Returns the keys of each type
    that are no extra field (``v`` and ``type`` included)."""
    known: dict[str, frozenset[str]] = {}
    for wire in _WIRES:
        etype = _tag(wire)
        assert etype in EVENT_TYPES, wire
        names = _wire_names(wire)
        own = tuple(n for n in names if n not in (*_META_NAMES, "v", "family", "kind"))
        assert own == _FIELDS[etype], (wire, own, _FIELDS[etype])
        known[etype] = frozenset({"v", "type", *_META_NAMES, *own})
    assert known.keys() == EVENT_TYPES.keys()
    return known


#: Every key an event of each type may carry outside ``extra``.
_ALLOWED: Final = _check_wires()
#: Every key of each type whose value is typed: none may be ``null`` (a missing optional field is
#: left out of the object; ``null`` is no value of any of them: event.schema.json, and a
#: decode-encode round trip that kept what came in, both say so).
_TYPED: Final = {_tag(wire): _wire_names(wire) for wire in _WIRES}


def _common(wire: type[_Wire]) -> type[_Wire]:
    """The same wire struct, refusing unknown fields: what the common line is decoded into."""
    return cast(type[_Wire], types.new_class(f"{wire.__name__}Common", (wire,),
                                             {"tag": _tag(wire), "forbid_unknown_fields": True}))


def _union(members: Iterable[type[_Wire]]) -> Any:
    """The tagged union of ``members``: the value of ``type`` names the struct."""
    return Union[tuple(members)]  # noqa: UP007 (built at run time, from a tuple)


# The common path: a line of only known fields, of a type without checked extras (a ``fault``
# may carry ``family``/``kind``, kept in ``extra`` in the order they came: it goes the general
# way). Whatever this decoder refuses goes the general way too, which decides and explains.
_decode_common: Final = msgspec.json.Decoder(
    _union(_common(w) for w in _WIRES if w is not _FaultWire)).decode
#: Any event object, extra fields skipped: the general way's decision.
_ANY_WIRE: Final = _union(_WIRES)
#: Any JSON text, into plain values: strict JSON (no ``NaN``, no lone surrogate, UTF-8 only).
_decode_json: Final = msgspec.json.Decoder().decode
_encode_json: Final = msgspec.json.Encoder().encode
#: What msgspec raises for input that is no event: not JSON or not valid (ValidationError is a
#: DecodeError), text no UTF-8 can carry given as ``str``, nesting past the interpreter's stack.
_DECODE_ERRORS: Final = (msgspec.DecodeError, UnicodeEncodeError, RecursionError)


# -- decoding -------------------------------------------------------------------------------------


#: A game's check of one event type beyond the contract (a Q Poker ``card`` without its seat, a
#: word its dealer does not declare, a craps roll of three dice): raises :class:`EventError`.
EventCheck: TypeAlias = Callable[[Event], None]
#: A game's checks, by event type: what ``tabled.games.registry.event_checks(game)`` gives and
#: the parsers below take (an event of a type without one is the contract's alone).
EventChecks: TypeAlias = Mapping[str, EventCheck]


def parse_line(line: str | bytes, checks: EventChecks | None = None) -> Event:
    """Parse one JSON Lines record into an event, or raise :class:`EventError`.

    A line is one event object: a blank line is malformed too (docs/contract.md). With
    ``checks`` (a game's, :data:`EventChecks`), what that game requires is required too."""
    try:
        wire = _decode_common(line)
    except _DECODE_ERRORS:
        event = _parse_text(line)
    else:
        mentions_null = ("null" in line) if isinstance(line, str) else (b"null" in line)
        event = _parse_text(line) if mentions_null else wire.event(_NO_EXTRA)
    if checks:
        check = checks.get(event.TYPE)
        if check is not None:
            check(event)
    return event


def read_events(lines: Iterable[str], checks: EventChecks | None = None
                ) -> Iterator[tuple[int, Event]]:
    """Each event of a JSON Lines stream with its line number (from 1), in order.

    Every line is one event object (docs/contract.md): a blank line is malformed like any other
    line that is not one, and so, given a game's ``checks`` (:data:`EventChecks`), is an event
    that game refuses (a Q Poker card without its seat). The first malformed line raises
    :class:`LineError`: what the stream gave before it has been yielded, nothing after it is
    read. ``tabled replay`` and ``tabled roads`` read through here, so both number and refuse
    lines alike.

    Given checks, the common path decodes with the game's own decoder (:class:`GameChecks`):
    its shape (craps: two dice) is checked as a line is decoded, and each checked type's wire
    runs its checks as it makes its event, so an event of a type the game does not check costs
    nothing more than without a game. A line the game's decoder refuses goes the general way,
    where every check runs and explains.
    """
    # parse_line, inlined: this loop is ``tabled replay``'s (a call per line is a tenth of it).
    game = None
    if checks:
        game = checks if isinstance(checks, GameChecks) else GameChecks(checks)
    decode = _decode_common if game is None else game.decoder()
    every: EventChecks = game or {}
    # the general way's checks, by the event's class: a set lookup (12 ns), not its TYPE and a
    # dict lookup (35 ns)
    checked = frozenset(EVENT_TYPES[etype] for etype in every if etype in EVENT_TYPES)
    parse_text, no_extra = _parse_text, _NO_EXTRA
    for lineno, line in enumerate(lines, 1):
        try:
            try:
                wire = decode(line)
            except _DECODE_ERRORS:
                event = parse_text(line)
            else:
                if not (("null" in line) if isinstance(line, str) else (b"null" in line)):
                    yield lineno, wire.event(no_extra)  # checked by the game's wire, if at all
                    continue
                event = parse_text(line)
            if type(event) in checked:
                every[event.TYPE](event)
        except EventError as exc:
            raise LineError(lineno, exc) from None
        yield lineno, event


#: A number of dice as a refusal says it.
_DICE_WORDS: Final = {2: "two", 3: "three", 4: "four", 5: "five"}


def check_dice(count: int) -> EventCheck:
    """The check of a game whose ``roll`` is exactly ``count`` dice (the contract carries
    :data:`MIN_DICE` or more): :class:`EventError` ``dice [3, 4, 5] is not two integers 1-6``."""
    words = _DICE_WORDS.get(count, str(count))

    def check(event: Event) -> None:
        if isinstance(event, Roll) and len(event.dice) != count:
            raise EventError(f"dice {list(event.dice)!r} is not {words} integers 1-6")
    return check


class GameChecks(Mapping[str, EventCheck]):
    """One game's :data:`EventChecks` with the shape it states as data: ``dice``, how many dice
    its ``roll`` has (None: the contract's two or more).

    As a mapping it is every check, the shape's included (what ``parse_line``, ``parse_event``
    and the daemon's runtime run). :meth:`decoder` is the game's own decoder for the common
    path of :func:`read_events`: the shape is a type there (a roll of two dice is a pair), and
    the wire of each checked type runs its checks (:attr:`beyond_shape`) as it makes its
    event."""

    def __init__(self, checks: Mapping[str, EventCheck], *, dice: int | None = None) -> None:
        if dice is not None and dice < MIN_DICE:
            raise ValueError(f"a roll has at least {MIN_DICE} dice, not {dice}")
        self.dice = dice
        self.beyond_shape: Mapping[str, EventCheck] = types.MappingProxyType(dict(checks))
        every = dict(checks)
        if dice is not None:
            shape, other = check_dice(dice), every.get(Roll.TYPE)
            every[Roll.TYPE] = shape if other is None else _both(shape, other)
        self._every = every
        self._decoder: Callable[[str | bytes], _Wire] | None = None

    def __getitem__(self, etype: str) -> EventCheck:
        return self._every[etype]

    def __iter__(self) -> Iterator[str]:
        return iter(self._every)

    def __len__(self) -> int:
        return len(self._every)

    def decoder(self) -> Callable[[str | bytes], _Wire]:
        """The common path's decoder for this game (made at first use, then kept)."""
        if self._decoder is None:
            wires = []
            for wire in _WIRES:
                if wire is _FaultWire:
                    continue  # its checked extras go the general way, as without a game
                if wire is _RollWire and self.dice is not None:
                    wire = _shaped_roll(self.dice)
                wire = _common(wire)
                check = self.beyond_shape.get(_tag(wire))
                wires.append(wire if check is None else _checking(wire, check))
            self._decoder = msgspec.json.Decoder(_union(wires)).decode
        return self._decoder


def _both(first: EventCheck, then: EventCheck) -> EventCheck:
    def check(event: Event) -> None:
        first(event)
        then(event)
    return check


def _shaped_roll(dice: int) -> type[_Wire]:
    """The ``roll`` wire of a game of exactly ``dice`` dice: a tuple of that many faces."""
    exact = tuple.__class_getitem__((_Die,) * dice)
    return cast(type[_Wire], types.new_class(
        f"_Roll{dice}Wire", (_RollWire,), {"tag": _tag(_RollWire)},
        lambda ns: ns.update({"__annotations__": {"dice": exact}})))


def _checking(wire: type[_Wire], check: EventCheck) -> type[_Wire]:
    """The same wire, running a game's ``check`` on each event it makes."""
    make = wire.event

    def event(self: _Wire, extra: Mapping[str, Any]) -> Event:
        made = make(self, extra)
        check(made)
        return made
    return cast(type[_Wire], types.new_class(
        f"{wire.__name__}Checked", (wire,), {"tag": _tag(wire)},
        lambda ns: ns.update({"event": event})))


class LineError(EventError):
    """A malformed line of a JSON Lines event stream; ``str()`` is ``"line N: reason"``."""

    def __init__(self, lineno: int, error: EventError) -> None:
        super().__init__(f"line {lineno}: {error}")
        self.lineno = lineno
        self.reason = str(error)


def parse_event(obj: Any, checks: EventChecks | None = None) -> Event:
    """Build a typed event from a decoded JSON object, or raise :class:`EventError`.

    The same wire structs decide as for a line (msgspec converts the object instead of
    decoding text). With ``checks`` (a game's, :data:`EventChecks`), what that game requires
    is required too."""
    _check_text(obj)
    event = _from_object(obj)
    if checks:
        check = checks.get(event.TYPE)
        if check is not None:
            check(event)
    return event


def require_fields(event: Event, names: Iterable[str], game: str) -> None:
    """Raise :class:`EventError` if ``event`` lacks one of ``names``, fields docs/contract.md
    requires of its type in ``game`` only (a Q Poker ``card`` without ``seat``): the games
    layer's check of a declaration's ``required``."""
    for name in names:
        if getattr(event, name) is None:
            raise EventError(f"{event.TYPE} event is missing required field {name!r} "
                             f"(required in {game})")


def check_declared(event: Declare, words: Iterable[str]) -> None:
    """Raise :class:`EventError` if ``event`` declares a result that is none of ``words`` (the
    words the table's game declares: its declaration's ``declarations``)."""
    parse_declaration(event.result, event.round, words)


def _parse_text(line: str | bytes) -> Event:
    """The general way, for any line: the common path's exceptions (extra fields, a ``null``,
    a fault) and every malformed line, which it explains."""
    try:
        obj = _decode_json(line)
    except _DECODE_ERRORS as exc:
        raise EventError(_not_json(line, exc)) from None
    return _from_object(obj)


def _from_object(obj: Any) -> Event:
    """An event from plain JSON values (no text in them that UTF-8 cannot carry)."""
    if not isinstance(obj, dict):
        raise EventError(f"an event is a JSON object, not {type(obj).__name__}")
    try:
        wire: _Wire = msgspec.convert(obj, _ANY_WIRE)
    except msgspec.ValidationError as exc:
        raise EventError(_explain(obj, exc)) from None
    etype = obj["type"]
    if None in obj.values():
        for key in _TYPED[etype]:
            if key in obj and obj[key] is None:
                raise EventError(f"{key} is null: a field without a value is left out")
    allowed = _ALLOWED[etype]
    extra = (_NO_EXTRA if allowed.issuperset(obj)
             else {k: v for k, v in obj.items() if k not in allowed})
    return wire.event(extra)


# -- what a refused event is told ----------------------------------------------------------------

#: What each field's value must be, as the messages say it (``seat 0 is not ...``).
_WHAT: Final[Mapping[str, str]] = {
    "device": "a string", "seq": "a non-negative integer", "ts": "an RFC 3339 string",
    "device_boot": "a 32-bit unsigned integer", "device_msg": "a 32-bit unsigned integer",
    "decks": "a positive integer", "card": f"a card code (rank {RANKS} + suit {SUITS})",
    "face_up": "a boolean", "play": "a boolean", "seat": 'a positive integer or "dealer"',
    "seats": "a list of seat numbers", "cards": "a list of card codes",
    "round": "a positive integer", "dice": "two integers 1-6 (or more dice)", "reason": "a string",
    "code": "a non-empty string", "detail": "a string", "count": "1, 2 or 3",
    "result": f"a declared word ({ID_RULE})", "family": "a device family's name",
    "kind": f"one of {', '.join(DEVICE_KINDS)}",
}
#: Where one type's field is narrower than the same name elsewhere.
_WHAT_IN: Final[Mapping[tuple[str, str], str]] = {
    ("decision", "seat"): "a positive integer",
    ("no_roll", "reason"): "a non-empty string",
}
#: Lists whose one bad item is named (``cards[2] '1S' is not a card code ...``).
_ITEM: Final[Mapping[str, str]] = {"cards": _WHAT["card"], "seats": "a positive integer"}
_ERROR_AT = re.compile(r"(?P<what>.*?)(?: - at `\$(?P<path>.*)`)?", re.DOTALL)
_PATH_HEAD = re.compile(r"\.(?P<name>[^.\[]+)(?:\[(?P<index>\d+)\])?")
_MISSING = re.compile(r"Object missing required field `(?P<name>.*)`")


def _explain(obj: dict[str, Any], exc: msgspec.ValidationError) -> str:
    """msgspec's reason for refusing ``obj``, in the words of the contract, naming the field
    and the value it had."""
    error = _ERROR_AT.fullmatch(str(exc))
    assert error is not None  # (the pattern matches any text)
    etype, path = obj.get("type"), error["path"] or ""
    missing = _MISSING.fullmatch(error["what"])
    if missing and not path:
        name = missing["name"]
        if name == "v":
            return "event is missing required field 'v' (the contract version)"
        if name == "type":
            return "unknown event type None"
        return f"{etype} event is missing required field {name!r}"
    head = _PATH_HEAD.match(path)
    if head is None:
        return f"not an event: {exc}"
    name = head["name"]
    if name == "type":
        return f"unknown event type {etype!r}"
    value = obj.get(name)
    if name == "v":
        return (f"unsupported contract version v={_json_text(value)} "
                f"(expected the integer {' or '.join(map(str, READ_VERSIONS))})")
    if value is None:
        return f"{name} is null: a field without a value is left out"
    index = head["index"]
    if index is not None and name in _ITEM and isinstance(value, list):
        return f"{name}[{index}] {value[int(index)]!r} is not {_ITEM[name]}"
    what = _WHAT_IN.get((str(etype), name)) or _WHAT.get(name, "what the contract allows")
    return f"{name} {value!r} is not {what}"


def _not_json(line: str | bytes, exc: Exception) -> str:
    """Why a line is no JSON text msgspec takes, as a person would want it said: the standard
    library's account of the syntax (line and column), or the text no UTF-8 can carry."""
    if not line.strip():
        return "a blank line: every line of the stream is one event object"
    try:
        value = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as reason:  # (UnicodeDecodeError is a ValueError)
        return f"not JSON: {reason}"
    bad = _invalid_text(value)
    if bad is not None:
        return f"text {bad!r} is not valid Unicode"
    return f"not JSON: {exc}"  # what the standard library takes and JSON does not (1e400)


def _check_text(obj: Any) -> None:
    """Refuse text no UTF-8 can carry (a lone surrogate, which JSON's ``\\u`` escapes can
    spell) in plain values: such an event could be neither journaled nor published as it came.
    msgspec's encoder finds it in C; only then, or for a value it cannot encode, is the
    object walked for the culprit."""
    try:
        _encode_json(obj)
        return
    except Exception:
        pass
    bad = _invalid_text(obj)
    if bad is not None:
        raise EventError(f"text {bad!r} is not valid Unicode")


def _invalid_text(obj: Any) -> str | None:
    """The first text in ``obj`` that UTF-8 cannot carry, or None."""
    pending: list[Any] = [obj]
    while pending:  # a loop, not recursion: nesting depth is the sender's to choose
        value = pending.pop()
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return value
        elif isinstance(value, dict):
            pending += value.keys()
            pending += value.values()
        elif isinstance(value, list):
            pending += value
    return None


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


def parse_round(value: Any) -> int | None:
    """An optional ``round`` field (absent: None), a positive integer (not ``true``, not
    ``1.0``), or :class:`EventError`; shared with the console's commands."""
    if value is None:
        return None
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        raise EventError(f"round {value!r} is not a positive integer")
    return int(value)


def parse_declaration(result: Any, round_no: Any = None, words: Iterable[str] | None = None
                      ) -> tuple[str, int | None]:
    """A declared ``result`` and its optional ``round``, checked (shared with the console
    command), or :class:`EventError`. With ``words`` (a game's declarations), ``result`` must be
    one of them; without, any word of the id alphabet (:data:`ID_RULE`) passes."""
    if words is not None:
        known = sorted(words)
        if not isinstance(result, str) or result not in known:
            raise EventError(f"result {result!r} is not one of {', '.join(known)}")
    elif not isinstance(result, str) or _DECLARED_MATCH.match(result) is None:
        raise EventError(f"result {result!r} is not {_WHAT['result']}")
    return result, parse_round(round_no)


# -- encoding -------------------------------------------------------------------------------------


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
