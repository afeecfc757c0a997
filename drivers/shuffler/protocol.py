"""The shuffler-dealer's message catalogue (sans-IO): typed messages <-> ``(kind, payload)``.

Owns the content of the frames an automatic shuffler-dealer exchanges with the table PC
(docs/protocols/shuffler.md): one frozen dataclass per message, its payload layout, the card and
seat byte codes, the numbered device faults, and the machine's state as each message changes it.
Framing, sequencing and retransmission are :mod:`tabled.drivers.link`'s; meaning for the games is
the
rules core's. It must never do I/O, import asyncio, or read a clock.

Two errors, as h11 has them: :func:`encode` raises ``ValueError`` when *we* build a message the
wire cannot carry; :func:`decode` raises :class:`~tabled.drivers.errors.ProtocolError` (and nothing
else) when the *machine* sent content that is not a valid message.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, Final, TypeAlias, TypeVar

from tabled.contract.events import CARD_CODES, DEALER, RANKS, SUITS, Seat
from tabled.drivers.errors import ProtocolError

# Message kinds (family kinds start at tabled.drivers.link.FIRST_FAMILY_KIND = 0x10).
# Host -> machine requests.
INFO_REQUEST: Final = 0x10
STATUS_REQUEST: Final = 0x11
# Machine -> host.
INFO: Final = 0x20
STATUS: Final = 0x21
SHUFFLE_STARTED: Final = 0x22
SHUFFLE_COMPLETE: Final = 0x23
DECK_CHECK: Final = 0x24
ROUND_SEATS: Final = 0x25
HAND: Final = 0x26
CARD: Final = 0x27
FAULT: Final = 0x28

CARDS_PER_DECK: Final = 52
#: Art. 7(2): the machine deals a Q Poker position its three cards at once.
CARDS_PER_HAND: Final = 3
#: The seat byte: 0 is the dealer, 1-254 the player positions, 0xFF "no seat" (FAULT only).
DEALER_SEAT_BYTE: Final = 0x00
NO_SEAT_BYTE: Final = 0xFF
#: INFO's strings are printable ASCII of at most this many characters each.
MAX_INFO_TEXT: Final = 32


class Mode(enum.IntEnum):
    """What the machine is set up to deal."""

    QPOKER = 1  # one 52-card deck, a fresh shuffle per round, hands of three
    BACCARAT = 2  # a multi-deck shoe, one card at a time, face up


class MachineState(enum.IntEnum):
    """The machine's state as STATUS reports it (see :meth:`Status.after`)."""

    IDLE = 0
    SHUFFLING = 1
    CHECKING = 2  # shuffled; counting the cards
    READY = 3  # the count was right; waiting to deal
    DEALING = 4
    HALTED = 5  # a fault stopped the machine until the dealer clears it


class DeviceFault(enum.IntEnum):
    """The machine's numbered fault codes (the driver maps each to a ``tabled.contract.faults``
    code)."""

    JAM = 1
    FAILURE = 2
    DOOR_OPEN = 3
    DECK_COUNT = 4  # reported by DECK_CHECK (found != expected)
    CARD_EXPOSED = 5  # reported by HAND (the exposed mask)


# -- byte codes --------------------------------------------------------------------------------


def card_byte(card: str) -> int:
    """A card code's byte: rank 1-13 (A..K) in the high nibble, suit 0-3 (S H C D) in the low."""
    if card not in CARD_CODES:
        raise ValueError(f"{card!r} is not a card code")
    return (RANKS.index(card[0]) + 1) << 4 | SUITS.index(card[1])


def card_from_byte(byte: int) -> str:
    rank, suit = byte >> 4, byte & 0x0F
    if not 1 <= rank <= len(RANKS) or suit >= len(SUITS):
        raise ProtocolError(f"0x{byte:02x} is not a card")
    return RANKS[rank - 1] + SUITS[suit]


def seat_byte(seat: Seat | None) -> int:
    if seat is None:
        return NO_SEAT_BYTE
    if seat == DEALER:
        return DEALER_SEAT_BYTE
    if not 1 <= seat < NO_SEAT_BYTE:
        raise ValueError(f"seat {seat!r} is not 1-254 or the dealer")
    return seat


def seat_from_byte(byte: int) -> Seat:
    if byte == DEALER_SEAT_BYTE:
        return DEALER
    if byte == NO_SEAT_BYTE:
        raise ProtocolError("seat 0xff (no seat) where a seat is required")
    return byte


def _u8(value: int, what: str) -> bytes:
    if not 0 <= value <= 0xFF:
        raise ValueError(f"{what} {value} does not fit a byte")
    return bytes((value,))


def _u16(value: int, what: str) -> bytes:
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f"{what} {value} does not fit two bytes")
    return value.to_bytes(2, "big")


_E = TypeVar("_E", bound=enum.IntEnum)


class _Reader:
    """Reads a payload field by field; running short or leaving bytes over is the peer's error."""

    def __init__(self, payload: bytes, name: str) -> None:
        self._data = payload
        self._pos = 0
        self._name = name

    def u8(self) -> int:
        if self._pos >= len(self._data):
            raise ProtocolError(f"{self._name}: payload of {len(self._data)} bytes is too short")
        self._pos += 1
        return self._data[self._pos - 1]

    def u16(self) -> int:
        return self.u8() << 8 | self.u8()

    def enum(self, cls: type[_E]) -> _E:
        value = self.u8()
        try:
            return cls(value)
        except ValueError:
            raise ProtocolError(f"{self._name}: {value} is not a {cls.__name__}") from None

    def text(self) -> str:
        size = self.u8()
        raw = bytes(self.u8() for _ in range(size))
        if size > MAX_INFO_TEXT or not all(0x20 <= b < 0x7F for b in raw):
            raise ProtocolError(f"{self._name}: {raw!r} is not printable ASCII of at most "
                                f"{MAX_INFO_TEXT} characters")
        return raw.decode("ascii")

    def end(self) -> None:
        if self._pos != len(self._data):
            raise ProtocolError(f"{self._name}: {len(self._data) - self._pos} bytes left over")


# -- the messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InfoRequest:
    """Host -> machine: send your firmware version and serial number (answered by INFO)."""

    KIND: ClassVar[int] = INFO_REQUEST

    def payload(self) -> bytes:
        return b""

    @classmethod
    def parse(cls, r: _Reader) -> InfoRequest:
        return cls()


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """Host -> machine: send your status now (answered by STATUS)."""

    KIND: ClassVar[int] = STATUS_REQUEST

    def payload(self) -> bytes:
        return b""

    @classmethod
    def parse(cls, r: _Reader) -> StatusRequest:
        return cls()


@dataclass(frozen=True, slots=True)
class Info:
    """Machine -> host: who the machine is (the reply to INFO_REQUEST)."""

    KIND: ClassVar[int] = INFO
    firmware: str
    serial: str

    def payload(self) -> bytes:
        out = b""
        for what, text in (("firmware", self.firmware), ("serial", self.serial)):
            if len(text) > MAX_INFO_TEXT or not all(" " <= ch <= "~" for ch in text):
                raise ValueError(f"{what} {text!r} is not printable ASCII of at most "
                                 f"{MAX_INFO_TEXT} characters")
            out += bytes((len(text),)) + text.encode("ascii")
        return out

    @classmethod
    def parse(cls, r: _Reader) -> Info:
        return cls(firmware=r.text(), serial=r.text())


@dataclass(frozen=True, slots=True)
class Status:
    """Machine -> host: the machine's state, mode, active fault (0: none), the round it deals
    (Q Poker) and the card count of its last deck check. Sent on request and when a fault is
    cleared."""

    KIND: ClassVar[int] = STATUS
    state: MachineState
    mode: Mode
    fault: int = 0
    round: int = 0
    deck_count: int = 0

    def payload(self) -> bytes:
        return (_u8(self.state, "state") + _u8(self.mode, "mode") + _u8(self.fault, "fault")
                + _u16(self.round, "round") + _u16(self.deck_count, "deck_count"))

    @classmethod
    def parse(cls, r: _Reader) -> Status:
        return cls(state=r.enum(MachineState), mode=r.enum(Mode),
                   fault=r.u8(), round=r.u16(), deck_count=r.u16())

    def after(self, msg: Message) -> Status:
        """The machine's status once it has sent ``msg``: the machine keeps its status this way
        and a driver mirrors it between STATUS reports."""
        match msg:
            case Status():
                return msg
            case ShuffleStarted():
                return replace(self, state=MachineState.SHUFFLING, mode=msg.mode, fault=0)
            case ShuffleComplete():
                return replace(self, state=MachineState.CHECKING)
            case DeckCheck() if msg.found == msg.expected:
                return replace(self, state=MachineState.READY, deck_count=msg.found)
            case DeckCheck():
                return replace(self, state=MachineState.HALTED, fault=DeviceFault.DECK_COUNT,
                               deck_count=msg.found)
            case RoundSeats():
                return replace(self, state=MachineState.DEALING, round=msg.round)
            case Hand(seat="dealer"):  # Art. 7(2): the dealer's hand is the round's last
                return replace(self, state=MachineState.IDLE)
            case Hand() | Card():
                return replace(self, state=MachineState.DEALING)
            case Fault():
                return replace(self, state=MachineState.HALTED, fault=msg.code)
            case _:
                return self


@dataclass(frozen=True, slots=True)
class ShuffleStarted:
    """Machine -> host: a shuffle of ``decks`` decks for ``mode`` has begun."""

    KIND: ClassVar[int] = SHUFFLE_STARTED
    mode: Mode
    decks: int

    def payload(self) -> bytes:
        if self.decks < 1:
            raise ValueError(f"decks {self.decks} is not positive")
        return _u8(self.mode, "mode") + _u8(self.decks, "decks")

    @classmethod
    def parse(cls, r: _Reader) -> ShuffleStarted:
        mode, decks = r.enum(Mode), r.u8()
        if decks < 1:
            raise ProtocolError("SHUFFLE_STARTED: 0 decks")
        return cls(mode=mode, decks=decks)


@dataclass(frozen=True, slots=True)
class ShuffleComplete:
    """Machine -> host: the shuffle is done; the deck check follows."""

    KIND: ClassVar[int] = SHUFFLE_COMPLETE

    def payload(self) -> bytes:
        return b""

    @classmethod
    def parse(cls, r: _Reader) -> ShuffleComplete:
        return cls()


@dataclass(frozen=True, slots=True)
class DeckCheck:
    """Machine -> host: the machine counted ``found`` cards after shuffling ``decks`` decks.
    Any count but ``decks`` x 52 is device fault 4 (a short or long deck): the machine halts."""

    KIND: ClassVar[int] = DECK_CHECK
    mode: Mode
    decks: int
    found: int

    @property
    def expected(self) -> int:
        return self.decks * CARDS_PER_DECK

    def payload(self) -> bytes:
        if self.decks < 1:
            raise ValueError(f"decks {self.decks} is not positive")
        return (_u8(self.mode, "mode") + _u8(self.decks, "decks")
                + _u16(self.found, "found"))

    @classmethod
    def parse(cls, r: _Reader) -> DeckCheck:
        mode, decks, found = r.enum(Mode), r.u8(), r.u16()
        if decks < 1:
            raise ProtocolError("DECK_CHECK: 0 decks")
        return cls(mode=mode, decks=decks, found=found)


@dataclass(frozen=True, slots=True)
class RoundSeats:
    """Machine -> host, Q Poker: round ``round`` will be dealt to ``seats``, the positions with a
    bet as the table's bet sensors / dealer console told the machine, in ascending order."""

    KIND: ClassVar[int] = ROUND_SEATS
    round: int
    seats: tuple[int, ...]

    def payload(self) -> bytes:
        if list(self.seats) != sorted(set(self.seats)):
            raise ValueError(f"seats {self.seats} are not strictly ascending")
        return (_u16(self.round, "round") + _u8(len(self.seats), "seat count")
                + b"".join(_u8(seat_byte(s), "seat") for s in self.seats))

    @classmethod
    def parse(cls, r: _Reader) -> RoundSeats:
        number, count = r.u16(), r.u8()
        seats = tuple(r.u8() for _ in range(count))
        if any(s in (DEALER_SEAT_BYTE, NO_SEAT_BYTE) for s in seats):
            raise ProtocolError(f"ROUND_SEATS: {list(seats)} lists a seat that is not 1-254")
        if list(seats) != sorted(set(seats)):
            raise ProtocolError(f"ROUND_SEATS: seats {list(seats)} are not strictly ascending")
        return cls(round=number, seats=seats)


@dataclass(frozen=True, slots=True)
class Hand:
    """Machine -> host, Q Poker: one position's three cards, dealt at once (Art. 7(2)), and
    which of them the machine saw turned face up (``exposed``, in the order of ``cards``)."""

    KIND: ClassVar[int] = HAND
    round: int
    seat: Seat
    cards: tuple[str, ...]
    exposed: tuple[bool, ...] = (False,) * CARDS_PER_HAND

    @property
    def exposed_cards(self) -> tuple[str, ...]:
        return tuple(card for card, up in zip(self.cards, self.exposed, strict=True) if up)

    def payload(self) -> bytes:
        if len(self.cards) != CARDS_PER_HAND or len(self.exposed) != CARDS_PER_HAND:
            raise ValueError(f"a hand is {CARDS_PER_HAND} cards with an exposed flag each")
        mask = sum(1 << i for i, up in enumerate(self.exposed) if up)
        return (_u16(self.round, "round") + _u8(seat_byte(self.seat), "seat")
                + bytes(card_byte(c) for c in self.cards) + bytes((mask,)))

    @classmethod
    def parse(cls, r: _Reader) -> Hand:
        number, seat = r.u16(), seat_from_byte(r.u8())
        cards = tuple(card_from_byte(r.u8()) for _ in range(CARDS_PER_HAND))
        mask = r.u8()
        if mask >> CARDS_PER_HAND:
            raise ProtocolError(f"HAND: exposed mask 0x{mask:02x} flags a fourth card")
        exposed = tuple(bool(mask >> i & 1) for i in range(CARDS_PER_HAND))
        return cls(round=number, seat=seat, cards=cards, exposed=exposed)


@dataclass(frozen=True, slots=True)
class Card:
    """Machine -> host, baccarat mode: the ``number``-th card since the shuffle came out, face
    up (Art. 7: with an automatic shuffler-dealer every card comes out face up)."""

    KIND: ClassVar[int] = CARD
    number: int
    card: str

    def payload(self) -> bytes:
        return _u16(self.number, "number") + bytes((card_byte(self.card),))

    @classmethod
    def parse(cls, r: _Reader) -> Card:
        return cls(number=r.u16(), card=card_from_byte(r.u8()))


@dataclass(frozen=True, slots=True)
class Fault:
    """Machine -> host: the machine stopped on fault ``code`` (a :class:`DeviceFault` number;
    unknown numbers are passed on), while dealing ``seat``'s hand of ``round`` (0 and None when
    not dealing a Q Poker hand). It stays halted until the dealer clears it (a STATUS follows)."""

    KIND: ClassVar[int] = FAULT
    code: int
    round: int = 0
    seat: Seat | None = None

    def payload(self) -> bytes:
        if self.code < 1:
            raise ValueError("fault code 0 means no fault")
        return (_u8(self.code, "code") + _u16(self.round, "round")
                + _u8(seat_byte(self.seat), "seat"))

    @classmethod
    def parse(cls, r: _Reader) -> Fault:
        code, number, seat = r.u8(), r.u16(), r.u8()
        if code == 0:
            raise ProtocolError("FAULT: code 0 means no fault")
        return cls(code=code, round=number,
                   seat=None if seat == NO_SEAT_BYTE else seat_from_byte(seat))


Message: TypeAlias = (
    InfoRequest | StatusRequest | Info | Status | ShuffleStarted | ShuffleComplete | DeckCheck
    | RoundSeats | Hand | Card | Fault
)
#: The messages only the host sends; every other message only the machine sends.
HOST_REQUESTS: Final = (InfoRequest, StatusRequest)

#: Every message type by its kind byte.
MESSAGE_TYPES: Final[Mapping[int, type[Message]]] = {
    cls.KIND: cls
    for cls in (InfoRequest, StatusRequest, Info, Status, ShuffleStarted, ShuffleComplete,
                DeckCheck, RoundSeats, Hand, Card, Fault)
}


def encode(msg: Message) -> tuple[int, bytes]:
    """The ``(kind, payload)`` that carries ``msg``; ValueError if the wire cannot carry it."""
    return msg.KIND, msg.payload()


def decode(kind: int, payload: bytes) -> Message:
    """The message in a frame's ``kind`` and ``payload``; ProtocolError if it is not one."""
    cls = MESSAGE_TYPES.get(kind)
    if cls is None:
        raise ProtocolError(f"unknown message kind 0x{kind:02x}")
    reader = _Reader(payload, cls.__name__)
    msg = cls.parse(reader)
    reader.end()
    return msg
