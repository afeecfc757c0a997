"""The card-reading shoe's message catalogue (sans-IO): frozen messages <-> (kind, payload).

Owns the family's messages as docs/protocols/shoe.md defines them: one frozen dataclass per
message, :func:`encode` and :func:`decode`. Framing, sequencing and retransmission are the
shared link's (:mod:`tabled.drivers.framing`, :mod:`tabled.drivers.link`); what a message *means*
as a
CONTRACT event is the driver's. It never does I/O and never imports asyncio.

Encoding is canonical: a payload :func:`decode` accepts re-encodes to the very same bytes, so
anything the decoder lets through is exactly one message. Building a message with a field out
of range raises ``ValueError`` (we misused it); a payload that breaks the catalogue raises
:class:`~tabled.drivers.errors.ProtocolError` (the device sent garbage).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

from tabled.contract.events import CARD_CODES
from tabled.drivers.errors import ProtocolError
from tabled.drivers.link import FIRST_FAMILY_KIND


class _WireEnum(enum.IntEnum):
    """A numbered wire value whose repr reads as Python (``Button.BURN``), as the docs show it."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class Kind(_WireEnum):
    """The message kinds: device reports from 0x10, host requests from 0x20."""

    SHOE_LOADED = FIRST_FAMILY_KIND
    CARD_OUT = 0x11
    CUT_CARD_OUT = 0x12
    BUTTON_PRESSED = 0x13
    DEVICE_FAULT = 0x14
    STATUS = 0x15
    DEVICE_INFO = 0x16
    INFO_REQUEST = 0x20
    STATUS_REQUEST = 0x21


class Button(_WireEnum):
    """The dealer's buttons on the shoe (NEW SHOE is reported as :class:`ShoeLoaded`)."""

    BURN = 1
    DEMO = 2
    VOID = 3


class FaultCode(_WireEnum):
    """The shoe's numbered fault codes (docs/protocols/shoe.md maps each to
    tabled.contract.faults)."""

    UNREADABLE_CARD = 1
    SENSOR_DIRTY = 2
    SHOE_EMPTY = 3


class ShoeState(_WireEnum):
    """What the shoe is doing, as its status reports it."""

    NO_SHOE = 0
    DEALING = 1
    EMPTY = 2


#: Bit 0 of a card's (or an unreadable card's) flags: the dealer had pressed BURN for it.
FLAG_BURN: Final = 0x01
# Bits of the status flags byte.
STATUS_CUT_CARD_OUT: Final = 0x01
STATUS_BURN_ARMED: Final = 0x02
STATUS_SENSOR_DIRTY: Final = 0x04
#: Card numbers are 16-bit: a shoe of 12 decks holds 624 cards.
MAX_CARD_NO: Final = 0xFFFF
#: Firmware and serial number are printable ASCII of 1 to 32 characters each.
MAX_IDENT: Final = 32


def _check_card_no(card_no: int, *, first: int) -> None:
    if not first <= card_no <= MAX_CARD_NO:
        raise ValueError(f"card number {card_no} is not {first} to {MAX_CARD_NO}")


def _check_byte(name: str, value: int, low: int = 0) -> None:
    if not low <= value <= 0xFF:
        raise ValueError(f"{name} {value} is not {low} to 255")


# The ``from_payload`` parsers raise ValueError on bad content; :func:`decode` turns it into
# ProtocolError naming the message kind, so each parser says only what is wrong.


def _unpack(fmt: str, payload: bytes) -> tuple[int, ...]:
    """The fields of a fixed-size payload."""
    size = struct.calcsize(fmt)
    if len(payload) != size:
        raise ValueError(f"payload of {len(payload)} bytes, expected {size}")
    return struct.unpack(fmt, payload)


def _only_flags(flags: int, allowed: int) -> None:
    if flags & ~allowed:
        raise ValueError(f"reserved flag bits set in 0x{flags:02x}")


# -- device reports ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShoeLoaded:
    """The dealer loaded a new shoe of ``decks`` decks and pressed NEW SHOE; counts restart."""

    KIND: ClassVar[Kind] = Kind.SHOE_LOADED
    decks: int

    def __post_init__(self) -> None:
        _check_byte("decks", self.decks, low=1)

    def to_payload(self) -> bytes:
        return bytes((self.decks,))

    @classmethod
    def from_payload(cls, payload: bytes) -> ShoeLoaded:
        (decks,) = _unpack(">B", payload)
        return cls(decks)


@dataclass(frozen=True, slots=True)
class CardOut:
    """Card number ``card_no`` of this shoe (from 1) left the shoe and was read as ``card``;
    ``burn`` when the dealer had pressed BURN for it."""

    KIND: ClassVar[Kind] = Kind.CARD_OUT
    card_no: int
    card: str
    burn: bool = False

    def __post_init__(self) -> None:
        _check_card_no(self.card_no, first=1)
        if self.card not in CARD_CODES:
            raise ValueError(f"{self.card!r} is not a card code")

    def to_payload(self) -> bytes:
        flags = FLAG_BURN if self.burn else 0
        return struct.pack(">HB", self.card_no, flags) + self.card.encode("ascii")

    @classmethod
    def from_payload(cls, payload: bytes) -> CardOut:
        card_no, flags, rank, suit = _unpack(">HBBB", payload)
        _only_flags(flags, FLAG_BURN)
        return cls(card_no, chr(rank) + chr(suit), bool(flags & FLAG_BURN))


@dataclass(frozen=True, slots=True)
class CutCardOut:
    """The cut card came out after ``card_no`` cards of this shoe."""

    KIND: ClassVar[Kind] = Kind.CUT_CARD_OUT
    card_no: int

    def __post_init__(self) -> None:
        _check_card_no(self.card_no, first=0)

    def to_payload(self) -> bytes:
        return struct.pack(">H", self.card_no)

    @classmethod
    def from_payload(cls, payload: bytes) -> CutCardOut:
        (card_no,) = _unpack(">H", payload)
        return cls(card_no)


@dataclass(frozen=True, slots=True)
class ButtonPressed:
    """The dealer pressed ``button``."""

    KIND: ClassVar[Kind] = Kind.BUTTON_PRESSED
    button: Button

    def to_payload(self) -> bytes:
        return bytes((self.button,))

    @classmethod
    def from_payload(cls, payload: bytes) -> ButtonPressed:
        (button,) = _unpack(">B", payload)
        return cls(Button(button))


@dataclass(frozen=True, slots=True)
class DeviceFault:
    """The shoe reports fault ``code``. For UNREADABLE_CARD, ``card_no`` is the unread card's
    number and ``burn`` says it was a burn; for the others ``card_no`` is the cards out so far
    and ``burn`` is always false."""

    KIND: ClassVar[Kind] = Kind.DEVICE_FAULT
    code: FaultCode
    card_no: int
    burn: bool = False

    def __post_init__(self) -> None:
        unreadable = self.code is FaultCode.UNREADABLE_CARD
        _check_card_no(self.card_no, first=1 if unreadable else 0)
        if self.burn and not unreadable:
            raise ValueError(f"only an unreadable card can be a burn, not {self.code!r}")

    def to_payload(self) -> bytes:
        return struct.pack(">BBH", self.code, FLAG_BURN if self.burn else 0, self.card_no)

    @classmethod
    def from_payload(cls, payload: bytes) -> DeviceFault:
        code, flags, card_no = _unpack(">BBH", payload)
        _only_flags(flags, FLAG_BURN)
        return cls(FaultCode(code), card_no, bool(flags & FLAG_BURN))


@dataclass(frozen=True, slots=True)
class ShoeStatus:
    """The shoe's state: on link-up and on request. ``decks`` is 0 with no shoe loaded."""

    KIND: ClassVar[Kind] = Kind.STATUS
    state: ShoeState
    decks: int
    cards_out: int
    cut_card_out: bool = False
    burn_armed: bool = False
    sensor_dirty: bool = False

    def __post_init__(self) -> None:
        _check_byte("decks", self.decks)
        _check_card_no(self.cards_out, first=0)

    def to_payload(self) -> bytes:
        flags = ((STATUS_CUT_CARD_OUT if self.cut_card_out else 0)
                 | (STATUS_BURN_ARMED if self.burn_armed else 0)
                 | (STATUS_SENSOR_DIRTY if self.sensor_dirty else 0))
        return struct.pack(">BBBH", self.state, flags, self.decks, self.cards_out)

    @classmethod
    def from_payload(cls, payload: bytes) -> ShoeStatus:
        state, flags, decks, cards_out = _unpack(">BBBH", payload)
        _only_flags(flags, STATUS_CUT_CARD_OUT | STATUS_BURN_ARMED | STATUS_SENSOR_DIRTY)
        return cls(ShoeState(state), decks, cards_out, bool(flags & STATUS_CUT_CARD_OUT),
                   bool(flags & STATUS_BURN_ARMED), bool(flags & STATUS_SENSOR_DIRTY))


def _check_ident(name: str, value: str) -> None:
    if not 1 <= len(value) <= MAX_IDENT or not all(" " <= c <= "~" for c in value):
        raise ValueError(f"{name} {value!r} is not 1 to {MAX_IDENT} printable ASCII characters")


def _take_ident(payload: bytes, at: int, name: str) -> tuple[str, int]:
    """One length-prefixed ASCII string from ``payload[at:]`` and the offset after it."""
    if at >= len(payload):
        raise ValueError(f"{name} missing")
    end = at + 1 + payload[at]
    if end > len(payload):
        raise ValueError(f"{name} runs past the payload")
    # latin-1 maps every byte to a character, so _check_ident sees (and rejects) any non-ASCII
    return payload[at + 1:end].decode("latin-1"), end


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """The reply to INFO_REQUEST: firmware version and serial number."""

    KIND: ClassVar[Kind] = Kind.DEVICE_INFO
    firmware: str
    serial: str

    def __post_init__(self) -> None:
        _check_ident("firmware", self.firmware)
        _check_ident("serial", self.serial)

    def to_payload(self) -> bytes:
        firmware, serial = self.firmware.encode("ascii"), self.serial.encode("ascii")
        return bytes((len(firmware),)) + firmware + bytes((len(serial),)) + serial

    @classmethod
    def from_payload(cls, payload: bytes) -> DeviceInfo:
        firmware, at = _take_ident(payload, 0, "firmware")
        serial, at = _take_ident(payload, at, "serial")
        if at != len(payload):
            raise ValueError(f"{len(payload) - at} bytes after the serial")
        return cls(firmware, serial)


# -- host requests ----------------------------------------------------------------------------


def _empty(payload: bytes) -> None:
    if payload:
        raise ValueError(f"takes no payload, got {len(payload)} bytes")


@dataclass(frozen=True, slots=True)
class InfoRequest:
    """The host asks for :class:`DeviceInfo`."""

    KIND: ClassVar[Kind] = Kind.INFO_REQUEST

    def to_payload(self) -> bytes:
        return b""

    @classmethod
    def from_payload(cls, payload: bytes) -> InfoRequest:
        _empty(payload)
        return cls()


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """The host asks for a :class:`ShoeStatus`."""

    KIND: ClassVar[Kind] = Kind.STATUS_REQUEST

    def to_payload(self) -> bytes:
        return b""

    @classmethod
    def from_payload(cls, payload: bytes) -> StatusRequest:
        _empty(payload)
        return cls()


Report: TypeAlias = (
    ShoeLoaded | CardOut | CutCardOut | ButtonPressed | DeviceFault | ShoeStatus | DeviceInfo
)
Request: TypeAlias = InfoRequest | StatusRequest
ShoeMessage: TypeAlias = Report | Request

REPORTS: Final = (ShoeLoaded, CardOut, CutCardOut, ButtonPressed, DeviceFault, ShoeStatus,
                  DeviceInfo)
REQUESTS: Final = (InfoRequest, StatusRequest)
_DECODERS: Final[dict[int, Callable[[bytes], ShoeMessage]]] = {
    cls.KIND: cls.from_payload for cls in (*REPORTS, *REQUESTS)
}


def encode(message: ShoeMessage) -> tuple[int, bytes]:
    """The kind byte and payload that carry ``message`` on the link."""
    return int(message.KIND), message.to_payload()


def decode(kind: int, payload: bytes) -> ShoeMessage:
    """The message a link frame carries; ProtocolError if it is not one of the catalogue's."""
    decoder = _DECODERS.get(kind)
    if decoder is None:
        raise ProtocolError(f"unknown message kind 0x{kind:02x}")
    try:
        return decoder(payload)
    except ValueError as exc:
        raise ProtocolError(f"{Kind(kind).name}: {exc}") from None
