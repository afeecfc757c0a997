"""The ACME CardEye 2 shoe's messages (sans-IO): frozen messages <-> (kind, payload).

Owns the vendor's message catalogue (README.md, "Protocol") and nothing else: frames, sequence
numbers, ACK/NAK and retransmission are tabled's shared serial link
(:mod:`tabled.drivers.framing`, :mod:`tabled.drivers.link`), which the CardEye speaks; what a
message means as a tabled event is the driver's. No I/O, no asyncio.

Encoding is canonical: a payload :func:`decode` accepts re-encodes to the same bytes. Building
a message with a field out of range raises ``ValueError`` (we misused it); a payload that
breaks the catalogue raises :class:`~tabled.drivers.errors.ProtocolError` (the device sent
garbage), which the driver turns into a refusal before the frame is acknowledged.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

from tabled.contract.events import RANKS, SUITS
from tabled.drivers.errors import ProtocolError


class Kind(enum.IntEnum):
    """Message kinds: the shoe's from 0x40, the host's from 0x60 (the link's are below 0x10)."""

    HELLO = 0x40
    SHOE_IN = 0x41
    CARD = 0x42
    CUT = 0x43
    KEY = 0x44
    ALARM = 0x45
    STATE = 0x46
    STATE_REQUEST = 0x60


class Key(enum.IntEnum):
    """The dealer's keys on the shoe."""

    BURN = 1  # the next card drawn is a burn
    DEMO = 2
    VOID = 3


class Alarm(enum.IntEnum):
    """The shoe's alarm codes."""

    MISREAD = 0x01  # a card was drawn but not read
    OPTICS = 0x02  # the reader's window needs cleaning
    EMPTY = 0x03  # no card left to draw


class Mode(enum.IntEnum):
    """What the shoe is doing, as STATE reports it."""

    IDLE = 0
    DEALING = 1
    EMPTY = 2


#: ``magic`` of HELLO: every CardEye says it first.
MAGIC: Final = b"ACME"
#: The one model this family drives (CardEye 2); HELLO names it.
MODEL_CARDEYE_2: Final = 0x02
#: Bit 0 of CARD's and ALARM's flags: the dealer had pressed BURN for this card.
FLAG_BURN: Final = 0x01
#: Bit 1 of STATE's alarms: OPTICS is raised.
ALARM_OPTICS_BIT: Final = 0x02
#: A serial number: 1 to 16 printable ASCII characters, no space (printed on the shoe).
SERIAL_MAX: Final = 16
#: Card counts are 16-bit (a shoe of 16 decks holds 832 cards).
MAX_COUNT: Final = 0xFFFF
MAX_DECKS: Final = 16


def card_byte(card: str) -> int:
    """A tabled card code (``"TD"``) as the CardEye's byte: suit (1 S, 2 H, 3 C, 4 D) in the
    high nibble, rank (1 A ... 13 K) in the low one."""
    return (SUITS.index(card[1]) + 1) << 4 | (RANKS.index(card[0]) + 1)


def card_code(byte: int) -> str:
    """The CardEye's card byte as a tabled card code; ValueError if it is not a card."""
    suit, rank = byte >> 4, byte & 0x0F
    if not (1 <= suit <= len(SUITS) and 1 <= rank <= len(RANKS)):
        raise ValueError(f"0x{byte:02x} is not a card")
    return RANKS[rank - 1] + SUITS[suit - 1]


def _check_count(count: int, *, first: int) -> None:
    if not first <= count <= MAX_COUNT:
        raise ValueError(f"count {count} is not {first} to {MAX_COUNT}")


def _unpack(fmt: str, payload: bytes) -> tuple[int, ...]:
    size = struct.calcsize(fmt)
    if len(payload) != size:
        raise ValueError(f"payload of {len(payload)} bytes, expected {size}")
    return struct.unpack(fmt, payload)


def _only(flags: int, allowed: int) -> None:
    if flags & ~allowed:
        raise ValueError(f"reserved flag bits set in 0x{flags:02x}")


# -- the shoe's messages -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    """Who the shoe is: model, firmware version, serial number. It rides in the link's
    RESET_ACK (the shoe's identity); the shoe never sends it as a message of its own."""

    KIND: ClassVar[Kind] = Kind.HELLO
    model: int
    firmware: tuple[int, int]
    serial: str

    def __post_init__(self) -> None:
        if not 0 <= self.model <= 0xFF or not all(0 <= v <= 0xFF for v in self.firmware):
            raise ValueError("model and firmware numbers are bytes")
        if not (1 <= len(self.serial) <= SERIAL_MAX
                and all("!" <= ch <= "~" for ch in self.serial)):
            raise ValueError(f"serial {self.serial!r} is not 1 to {SERIAL_MAX} printable ASCII "
                             "characters without a space")

    @property
    def firmware_text(self) -> str:
        return f"{self.firmware[0]}.{self.firmware[1]}"

    def to_payload(self) -> bytes:
        serial = self.serial.encode("ascii")
        return (MAGIC + bytes((self.model, *self.firmware, len(serial))) + serial)

    @classmethod
    def from_payload(cls, payload: bytes) -> Hello:
        if payload[:4] != MAGIC:
            raise ValueError("no ACME magic")
        if len(payload) < 8 or len(payload) != 8 + payload[7]:
            raise ValueError(f"payload of {len(payload)} bytes does not hold its serial")
        return cls(payload[4], (payload[5], payload[6]), payload[8:].decode("latin-1"))


@dataclass(frozen=True, slots=True)
class ShoeIn:
    """A shoe of ``decks`` decks was loaded: the card count restarts."""

    KIND: ClassVar[Kind] = Kind.SHOE_IN
    decks: int

    def __post_init__(self) -> None:
        if not 1 <= self.decks <= MAX_DECKS:
            raise ValueError(f"decks {self.decks} is not 1 to {MAX_DECKS}")

    def to_payload(self) -> bytes:
        return bytes((self.decks,))

    @classmethod
    def from_payload(cls, payload: bytes) -> ShoeIn:
        (decks,) = _unpack(">B", payload)
        return cls(decks)


@dataclass(frozen=True, slots=True)
class Card:
    """Card ``count`` of this shoe (from 1) was drawn and read as ``card``; ``burn`` if the
    dealer had pressed BURN for it."""

    KIND: ClassVar[Kind] = Kind.CARD
    count: int
    card: str
    burn: bool = False

    def __post_init__(self) -> None:
        _check_count(self.count, first=1)
        if len(self.card) != 2 or self.card[0] not in RANKS or self.card[1] not in SUITS:
            raise ValueError(f"{self.card!r} is not a card code")

    def to_payload(self) -> bytes:
        return struct.pack(">HBB", self.count, card_byte(self.card),
                           FLAG_BURN if self.burn else 0)

    @classmethod
    def from_payload(cls, payload: bytes) -> Card:
        count, byte, flags = _unpack(">HBB", payload)
        _only(flags, FLAG_BURN)
        return cls(count, card_code(byte), bool(flags & FLAG_BURN))


@dataclass(frozen=True, slots=True)
class Cut:
    """The cut card came out after ``count`` cards of this shoe."""

    KIND: ClassVar[Kind] = Kind.CUT
    count: int

    def __post_init__(self) -> None:
        _check_count(self.count, first=0)

    def to_payload(self) -> bytes:
        return struct.pack(">H", self.count)

    @classmethod
    def from_payload(cls, payload: bytes) -> Cut:
        (count,) = _unpack(">H", payload)
        return cls(count)


@dataclass(frozen=True, slots=True)
class KeyPressed:
    """The dealer pressed ``key``."""

    KIND: ClassVar[Kind] = Kind.KEY
    key: Key

    def to_payload(self) -> bytes:
        return bytes((self.key,))

    @classmethod
    def from_payload(cls, payload: bytes) -> KeyPressed:
        (key,) = _unpack(">B", payload)
        return cls(Key(key))


@dataclass(frozen=True, slots=True)
class AlarmRaised:
    """Alarm ``code`` after ``count`` cards of this shoe. MISREAD: card ``count`` was drawn but
    not read (``burn`` if it was a burn). OPTICS and EMPTY: never a burn."""

    KIND: ClassVar[Kind] = Kind.ALARM
    code: Alarm
    count: int
    burn: bool = False

    def __post_init__(self) -> None:
        misread = self.code is Alarm.MISREAD
        _check_count(self.count, first=1 if misread else 0)
        if self.burn and not misread:
            raise ValueError(f"only a MISREAD card can be a burn, not {self.code.name}")

    def to_payload(self) -> bytes:
        return struct.pack(">BBH", self.code, FLAG_BURN if self.burn else 0, self.count)

    @classmethod
    def from_payload(cls, payload: bytes) -> AlarmRaised:
        code, flags, count = _unpack(">BBH", payload)
        _only(flags, FLAG_BURN)
        return cls(Alarm(code), count, bool(flags & FLAG_BURN))


@dataclass(frozen=True, slots=True)
class State:
    """The shoe's state, in answer to STATE_REQUEST: mode, decks loaded (0: none), cards drawn,
    and whether OPTICS is raised."""

    KIND: ClassVar[Kind] = Kind.STATE
    mode: Mode
    decks: int
    count: int
    optics: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.decks <= MAX_DECKS:
            raise ValueError(f"decks {self.decks} is not 0 to {MAX_DECKS}")
        _check_count(self.count, first=0)

    def to_payload(self) -> bytes:
        return struct.pack(">BBHB", self.mode, self.decks, self.count,
                           ALARM_OPTICS_BIT if self.optics else 0)

    @classmethod
    def from_payload(cls, payload: bytes) -> State:
        mode, decks, count, alarms = _unpack(">BBHB", payload)
        _only(alarms, ALARM_OPTICS_BIT)
        return cls(Mode(mode), decks, count, bool(alarms & ALARM_OPTICS_BIT))


# -- the host's message -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateRequest:
    """The host asks for a :class:`State`."""

    KIND: ClassVar[Kind] = Kind.STATE_REQUEST

    def to_payload(self) -> bytes:
        return b""

    @classmethod
    def from_payload(cls, payload: bytes) -> StateRequest:
        if payload:
            raise ValueError(f"takes no payload, got {len(payload)} bytes")
        return cls()


Report: TypeAlias = ShoeIn | Card | Cut | KeyPressed | AlarmRaised | State
Message: TypeAlias = Hello | Report | StateRequest

REPORTS: Final = (ShoeIn, Card, Cut, KeyPressed, AlarmRaised, State)
_DECODERS: Final[dict[int, Callable[[bytes], Message]]] = {
    cls.KIND: cls.from_payload for cls in (Hello, *REPORTS, StateRequest)
}


def encode(message: Message) -> tuple[int, bytes]:
    """The kind and payload of the link frame that carries ``message``."""
    return int(message.KIND), message.to_payload()


def decode(kind: int, payload: bytes) -> Message:
    """The message a link frame carries; ProtocolError if it is none of the catalogue's."""
    decoder = _DECODERS.get(kind)
    if decoder is None:
        raise ProtocolError(f"unknown message kind 0x{kind:02x}")
    try:
        return decoder(payload)
    except ValueError as exc:
        raise ProtocolError(f"{Kind(kind).name}: {exc}") from None
