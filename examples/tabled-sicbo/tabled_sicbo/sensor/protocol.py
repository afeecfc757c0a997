"""The three-dice sensor's messages (sans-IO): frozen messages <-> (kind, payload).

Owns the sensor's message catalogue (README.md, "The three-dice sensor") and nothing else:
frames, sequence numbers, ACK/NAK and retransmission are tabled's shared serial link
(:mod:`tabled.drivers.framing`, :mod:`tabled.drivers.link`), which the sensor speaks; what a
message means as a tabled event is the driver's. No I/O, no asyncio.

Encoding is canonical: a payload :func:`decode` accepts re-encodes to the same bytes. Building
a message with a field out of range raises ``ValueError`` (we misused it); a payload that breaks
the catalogue raises :class:`~tabled.drivers.errors.ProtocolError` (the device sent garbage).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

from tabled.drivers.errors import ProtocolError


class Kind(enum.IntEnum):
    """Message kinds: the sensor's from 0x50, the host's from 0x70 (the link's are below 0x10)."""

    HELLO = 0x50
    ROLL = 0x51
    UNREADABLE = 0x52
    ALARM = 0x53
    KEY = 0x54
    STATE = 0x55
    STATE_REQUEST = 0x70


class Why(enum.IntEnum):
    """Why a shake could not be read (UNREADABLE)."""

    NOT_FLAT = 1  # a die leans on the shaker's wall or on another
    STACKED = 2  # a die rests on top of another
    MISSING = 3  # the camera sees fewer than three dice


class Alarm(enum.IntEnum):
    """The sensor's alarm codes."""

    CAMERA_OBSCURED = 0x01
    LIGHT_FAILURE = 0x02
    SHAKER_JAMMED = 0x03

    @property
    def text(self) -> str:
        return self.name.lower().replace("_", " ")


class Key(enum.IntEnum):
    """The dealer's keys on the sensor's panel."""

    VOID = 1  # the dealer declares the shake invalid


#: ``magic`` of HELLO: every sensor says it first.
MAGIC: Final = b"SB3D"
#: The one model this family drives; HELLO names it.
MODEL: Final = 0x03
SERIAL_MAX: Final = 16
#: Shakes are counted modulo 2**16 from the sensor's power-on.
MAX_SHAKE: Final = 0xFFFF
#: Bits of UNREADABLE's dice mask: die 1, 2, 3 (as the camera numbers them).
DICE_MASK: Final = 0x07


def _unpack(fmt: str, payload: bytes) -> tuple[int, ...]:
    size = struct.calcsize(fmt)
    if len(payload) != size:
        raise ValueError(f"payload of {len(payload)} bytes, expected {size}")
    return struct.unpack(fmt, payload)


def _check_shake(shake: int) -> None:
    if not 0 <= shake <= MAX_SHAKE:
        raise ValueError(f"shake {shake} is not 0 to {MAX_SHAKE}")


def dice_in_mask(mask: int) -> tuple[int, ...]:
    """The die numbers (1-3) set in a dice mask."""
    return tuple(n for n in (1, 2, 3) if mask & (1 << (n - 1)))


@dataclass(frozen=True, slots=True)
class Hello:
    """Who the sensor is: model, firmware, serial number; it rides in the link's RESET_ACK."""

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
        return MAGIC + bytes((self.model, *self.firmware, len(serial))) + serial

    @classmethod
    def from_payload(cls, payload: bytes) -> Hello:
        if payload[:4] != MAGIC:
            raise ValueError("no SB3D magic")
        if len(payload) < 8 or len(payload) != 8 + payload[7]:
            raise ValueError(f"payload of {len(payload)} bytes does not hold its serial")
        return cls(payload[4], (payload[5], payload[6]), payload[8:].decode("latin-1"))


@dataclass(frozen=True, slots=True)
class RollRead:
    """Shake ``shake`` came to rest and the camera read ``dice`` (three faces), with its
    confidence in percent."""

    KIND: ClassVar[Kind] = Kind.ROLL
    shake: int
    dice: tuple[int, int, int]
    confidence: int = 100

    def __post_init__(self) -> None:
        _check_shake(self.shake)
        if len(self.dice) != 3 or not all(1 <= d <= 6 for d in self.dice):
            raise ValueError(f"dice {self.dice!r} are not three faces 1-6")
        if not 0 <= self.confidence <= 100:
            raise ValueError(f"confidence {self.confidence} is not 0 to 100")

    def to_payload(self) -> bytes:
        return struct.pack(">HBBBB", self.shake, *self.dice, self.confidence)

    @classmethod
    def from_payload(cls, payload: bytes) -> RollRead:
        shake, a, b, c, confidence = _unpack(">HBBBB", payload)
        return cls(shake, (a, b, c), confidence)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Shake ``shake`` came to rest and cannot be read (``why``), the dice concerned in
    ``dice`` (a mask: bit 0 die 1 …)."""

    KIND: ClassVar[Kind] = Kind.UNREADABLE
    shake: int
    why: Why
    dice: int

    def __post_init__(self) -> None:
        _check_shake(self.shake)
        if self.dice & ~DICE_MASK or (self.dice == 0 and self.why is not Why.MISSING):
            raise ValueError(f"dice mask 0x{self.dice:02x} is not a set of the three dice")

    def to_payload(self) -> bytes:
        return struct.pack(">HBB", self.shake, self.why, self.dice)

    @classmethod
    def from_payload(cls, payload: bytes) -> Unreadable:
        shake, why, dice = _unpack(">HBB", payload)
        return cls(shake, Why(why), dice)


@dataclass(frozen=True, slots=True)
class AlarmRaised:
    """The sensor raised alarm ``code`` (latched until it clears: STATE says which)."""

    KIND: ClassVar[Kind] = Kind.ALARM
    code: Alarm

    def to_payload(self) -> bytes:
        return bytes((self.code,))

    @classmethod
    def from_payload(cls, payload: bytes) -> AlarmRaised:
        (code,) = _unpack(">B", payload)
        return cls(Alarm(code))


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
class State:
    """The sensor's state, in answer to STATE_REQUEST: shakes since power-on and the alarms
    latched (bit ``code - 1``)."""

    KIND: ClassVar[Kind] = Kind.STATE
    shakes: int
    alarms: int = 0

    def __post_init__(self) -> None:
        _check_shake(self.shakes)
        if self.alarms & ~0x07:
            raise ValueError(f"reserved alarm bits set in 0x{self.alarms:02x}")

    def to_payload(self) -> bytes:
        return struct.pack(">HB", self.shakes, self.alarms)

    @classmethod
    def from_payload(cls, payload: bytes) -> State:
        shakes, alarms = _unpack(">HB", payload)
        return cls(shakes, alarms)


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


Report: TypeAlias = RollRead | Unreadable | AlarmRaised | KeyPressed | State
Message: TypeAlias = Hello | Report | StateRequest

REPORTS: Final = (RollRead, Unreadable, AlarmRaised, KeyPressed, State)
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
