"""The ACME CardEye 2's sentences (sans-IO): frozen messages <-> ASCII lines.

Owns the vendor's own message protocol (README.md, "Protocol") and nothing else: every message
is one line of printable ASCII, ``$CE<TYPE>,<field>,...*HH`` and CR LF, where ``HH`` is the
CardEye's own checksum (the XOR of every byte between ``$`` and ``*``, two upper-case hex
digits). Each line travels as the payload of one frame of tabled's serial link
(:mod:`tabled.drivers.framing`, :mod:`tabled.drivers.link`, kind :data:`SENTENCE`), which gives
it sequence numbers, ACK/NAK and retransmission; what a sentence means as a tabled event is the
driver's. No I/O, no asyncio.

Encoding is canonical: a line :func:`parse` accepts is exactly what :func:`line` makes of the
message. Building a message with a field out of range raises ``ValueError`` (we misused it); a
line that breaks the grammar or its checksum raises
:class:`~tabled.drivers.errors.ProtocolError` (the device sent garbage), which the driver turns
into a refusal before the frame is acknowledged.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, TypeAlias

from tabled.contract.events import CARD_CODES
from tabled.drivers.errors import ProtocolError

#: The one link frame kind the CardEye uses: a sentence, either way (the identity too).
SENTENCE: Final = 0x50
#: Every sentence starts with this talker id after the ``$``.
TALKER: Final = "CE"
#: The model a CardEye 2 names in its ``ID`` sentence.
MODEL: Final = "CE2"
#: A serial number: 1 to 16 characters of A-Z, 0-9 and ``-`` (printed on the shoe).
SERIAL_MAX: Final = 16
#: Card counts are four digits (a shoe of 16 decks holds 832 cards).
MAX_COUNT: Final = 9999
MAX_DECKS: Final = 16
#: The longest sentence, bytes (the link carries it whole).
MAX_LINE: Final = 80

#: The characters of a serial number.
SERIAL_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


class Key(enum.Enum):
    """The dealer's keys the shoe reports (a burn is a flag of the card drawn, not a key)."""

    DEMO = "DEMO"
    VOID = "VOID"


class Error(enum.Enum):
    """The shoe's error codes, as its ``ERR`` sentence names them."""

    MISREAD = "MISREAD"  # a card was drawn but not read
    WINDOW = "WINDOW"  # the reader's window needs cleaning
    EMPTY = "EMPTY"  # no card left to draw


class Mode(enum.Enum):
    """What the shoe is doing, as its ``STA`` sentence says."""

    IDLE = "IDLE"
    DEAL = "DEAL"
    EMPTY = "EMPTY"


def checksum(body: bytes) -> int:
    """The CardEye's checksum of a sentence's body (between ``$`` and ``*``): every byte XORed."""
    total = 0
    for byte in body:
        total ^= byte
    return total


def _count(text: str) -> int:
    if len(text) != 4 or not text.isdigit():
        raise ValueError(f"{text!r} is not a four-digit count")
    return int(text)


def _check_count(count: int, *, first: int) -> None:
    if not first <= count <= MAX_COUNT:
        raise ValueError(f"count {count} is not {first} to {MAX_COUNT}")


def _flag(text: str) -> bool:
    if text not in ("B", "N"):
        raise ValueError(f"{text!r} is not B (burn) or N")
    return text == "B"


def _arity(fields: Sequence[str], n: int) -> None:
    if len(fields) != n:
        raise ValueError(f"{len(fields)} fields, expected {n}")


# -- the shoe's sentences ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ident:
    """``ID``: who the shoe is (model, firmware, serial number). It rides in the link's
    RESET_ACK (the shoe's identity); the shoe never sends it as a sentence of its own."""

    TYPE: ClassVar[str] = "ID"
    model: str
    firmware: str
    serial: str

    def __post_init__(self) -> None:
        if not self.model.isalnum() or not self.firmware.replace(".", "").isdigit():
            raise ValueError(f"model {self.model!r} / firmware {self.firmware!r}")
        if not (1 <= len(self.serial) <= SERIAL_MAX and set(self.serial) <= SERIAL_CHARS):
            raise ValueError(f"serial {self.serial!r} is not 1 to {SERIAL_MAX} characters of "
                             "A-Z, 0-9 and -")

    def fields(self) -> list[str]:
        return [self.model, self.firmware, self.serial]

    @classmethod
    def of(cls, fields: Sequence[str]) -> Ident:
        _arity(fields, 3)
        return cls(*fields)


@dataclass(frozen=True, slots=True)
class NewShoe:
    """``SHO``: a shoe of ``decks`` decks was loaded; the card count restarts."""

    TYPE: ClassVar[str] = "SHO"
    decks: int

    def __post_init__(self) -> None:
        if not 1 <= self.decks <= MAX_DECKS:
            raise ValueError(f"decks {self.decks} is not 1 to {MAX_DECKS}")

    def fields(self) -> list[str]:
        return [f"{self.decks:02d}"]

    @classmethod
    def of(cls, fields: Sequence[str]) -> NewShoe:
        _arity(fields, 1)
        if len(fields[0]) != 2 or not fields[0].isdigit():
            raise ValueError(f"{fields[0]!r} is not two digits")
        return cls(int(fields[0]))


@dataclass(frozen=True, slots=True)
class Drawn:
    """``DRW``: card ``count`` of this shoe (from 1) was drawn and read as ``card`` (tabled's
    card code); ``burn`` if the dealer drew it as a burn."""

    TYPE: ClassVar[str] = "DRW"
    count: int
    card: str
    burn: bool = False

    def __post_init__(self) -> None:
        _check_count(self.count, first=1)
        if self.card not in CARD_CODES:
            raise ValueError(f"{self.card!r} is not a card code")

    def fields(self) -> list[str]:
        return [f"{self.count:04d}", self.card, "B" if self.burn else "N"]

    @classmethod
    def of(cls, fields: Sequence[str]) -> Drawn:
        _arity(fields, 3)
        return cls(_count(fields[0]), fields[1], _flag(fields[2]))


@dataclass(frozen=True, slots=True)
class CutSeen:
    """``CUT``: the cut card came out after ``count`` cards of this shoe."""

    TYPE: ClassVar[str] = "CUT"
    count: int

    def __post_init__(self) -> None:
        _check_count(self.count, first=0)

    def fields(self) -> list[str]:
        return [f"{self.count:04d}"]

    @classmethod
    def of(cls, fields: Sequence[str]) -> CutSeen:
        _arity(fields, 1)
        return cls(_count(fields[0]))


@dataclass(frozen=True, slots=True)
class KeyPressed:
    """``KEY``: the dealer pressed ``key``."""

    TYPE: ClassVar[str] = "KEY"
    key: Key

    def fields(self) -> list[str]:
        return [self.key.value]

    @classmethod
    def of(cls, fields: Sequence[str]) -> KeyPressed:
        _arity(fields, 1)
        return cls(Key(fields[0]))


@dataclass(frozen=True, slots=True)
class ErrorRaised:
    """``ERR``: error ``code`` after ``count`` cards of this shoe. MISREAD: card ``count`` was
    drawn but not read (``burn`` if it was drawn as a burn). WINDOW and EMPTY: never a burn."""

    TYPE: ClassVar[str] = "ERR"
    code: Error
    count: int
    burn: bool = False

    def __post_init__(self) -> None:
        misread = self.code is Error.MISREAD
        _check_count(self.count, first=1 if misread else 0)
        if self.burn and not misread:
            raise ValueError(f"only a MISREAD card can be a burn, not {self.code.name}")

    def fields(self) -> list[str]:
        return [self.code.value, f"{self.count:04d}", "B" if self.burn else "N"]

    @classmethod
    def of(cls, fields: Sequence[str]) -> ErrorRaised:
        _arity(fields, 3)
        return cls(Error(fields[0]), _count(fields[1]), _flag(fields[2]))


@dataclass(frozen=True, slots=True)
class Status:
    """``STA``: the shoe's state, in answer to ``QRY``: mode, decks loaded (0: none), cards
    drawn, and whether the WINDOW error is standing."""

    TYPE: ClassVar[str] = "STA"
    mode: Mode
    decks: int
    count: int
    window: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.decks <= MAX_DECKS:
            raise ValueError(f"decks {self.decks} is not 0 to {MAX_DECKS}")
        _check_count(self.count, first=0)

    def fields(self) -> list[str]:
        return [self.mode.value, f"{self.decks:02d}", f"{self.count:04d}",
                "W" if self.window else "-"]

    @classmethod
    def of(cls, fields: Sequence[str]) -> Status:
        _arity(fields, 4)
        if len(fields[1]) != 2 or not fields[1].isdigit() or fields[3] not in ("W", "-"):
            raise ValueError(f"decks {fields[1]!r} / window {fields[3]!r}")
        return cls(Mode(fields[0]), int(fields[1]), _count(fields[2]), fields[3] == "W")


# -- the host's sentence -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    """``QRY``: the host asks for a :class:`Status`."""

    TYPE: ClassVar[str] = "QRY"

    def fields(self) -> list[str]:
        return []

    @classmethod
    def of(cls, fields: Sequence[str]) -> Query:
        _arity(fields, 0)
        return cls()


Report: TypeAlias = NewShoe | Drawn | CutSeen | KeyPressed | ErrorRaised | Status
Message: TypeAlias = Ident | Report | Query

REPORTS: Final = (NewShoe, Drawn, CutSeen, KeyPressed, ErrorRaised, Status)
_PARSERS: Final[dict[str, Callable[[Sequence[str]], Message]]] = {
    cls.TYPE: cls.of for cls in (Ident, *REPORTS, Query)
}


def line(message: Message) -> bytes:
    """The sentence that says ``message``, checksum and CR LF included."""
    body = ",".join([TALKER + message.TYPE, *message.fields()]).encode("ascii")
    return b"$" + body + b"*%02X\r\n" % checksum(body)


def parse(data: bytes) -> Message:
    """The message a sentence says; ProtocolError if it breaks the grammar or its checksum."""
    if len(data) > MAX_LINE or not data.startswith(b"$") or not data.endswith(b"\r\n"):
        raise ProtocolError("not a sentence ($ ... CR LF, at most 80 bytes)")
    body, star, sent = data[1:-2].rpartition(b"*")
    if not star or len(sent) != 2 or sent != sent.upper():
        raise ProtocolError("no checksum (*HH) at the sentence's end")
    try:
        text = body.decode("ascii")
        wanted = int(sent, 16)
    except ValueError:
        raise ProtocolError("a sentence is ASCII with a hexadecimal checksum") from None
    if checksum(body) != wanted:
        raise ProtocolError(f"checksum {sent.decode()} does not match the sentence "
                            f"({checksum(body):02X})")
    if not text.isprintable() or "$" in text or "*" in text:
        raise ProtocolError("a sentence's fields are printable ASCII without $ or *")
    head, *fields = text.split(",")
    parser = _PARSERS.get(head[len(TALKER):]) if head.startswith(TALKER) else None
    if parser is None:
        raise ProtocolError(f"unknown sentence {head!r}")
    try:
        message = parser(fields)
    except ValueError as exc:
        raise ProtocolError(f"{head}: {exc}") from None
    if line(message) != data:
        raise ProtocolError(f"{head}: not written as a CardEye writes it")
    return message


def encode(message: Message) -> tuple[int, bytes]:
    """The kind and payload of the link frame that carries ``message``."""
    return SENTENCE, line(message)


def decode(kind: int, payload: bytes) -> Message:
    """The message a link frame carries; ProtocolError if it is not a CardEye sentence."""
    if kind != SENTENCE:
        raise ProtocolError(f"frame kind 0x{kind:02x} is not a CardEye sentence (0x50)")
    return parse(payload)
