"""The serial frame format shared by tabled's serial device families (sans-IO).

Owns bytes <-> frames and nothing else: no I/O, no asyncio, no clock. Every serial family
(shoe, shuffler-dealer) puts its messages in these frames; docs/protocols/framing.md documents
the format with byte-level examples.

Wire format (one frame)::

    STX | stuffed( SEQ | KIND | LEN | PAYLOAD[LEN] | CRC16_HI | CRC16_LO ) | ETX

- ``STX`` 0x02 and ``ETX`` 0x03 delimit a frame. Inside it, STX, ETX and ``DLE`` 0x10 are sent
  as DLE followed by the byte XOR 0x20, so a bare STX always starts a frame: after any damage
  the decoder resynchronises at the next STX.
- ``SEQ`` is the link's sequence number (0-255, wrapping), ``KIND`` the message kind (link
  kinds below 0x10, the family's from 0x10), ``LEN`` the payload length (0-MAX_PAYLOAD).
- ``CRC16`` is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) over SEQ..PAYLOAD, big-endian.

The decoder never raises on bad input: a damaged frame comes out as a :class:`CorruptFrame`
with a reason, and every problem is counted in :attr:`FrameDecoder.counters`.
"""

from __future__ import annotations

from binascii import crc_hqx
from collections import Counter
from dataclasses import dataclass
from typing import Final

STX: Final = 0x02
ETX: Final = 0x03
DLE: Final = 0x10
ESCAPE_XOR: Final = 0x20
MAX_PAYLOAD: Final = 255
#: The longest unstuffed frame body: SEQ, KIND, LEN, payload, CRC.
MAX_BODY: Final = 3 + MAX_PAYLOAD + 2
_SPECIAL: Final = frozenset({STX, ETX, DLE})


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE of ``data`` (``crc16(b"123456789") == 0x29B1``)."""
    return crc_hqx(data, 0xFFFF)


@dataclass(frozen=True, slots=True)
class Frame:
    """One intact frame: the link's sequence number, the message kind and its payload."""

    seq: int
    kind: int
    payload: bytes = b""


@dataclass(frozen=True, slots=True)
class CorruptFrame:
    """A frame that arrived damaged; ``reason`` is one of the counter names of the decoder."""

    reason: str
    raw: bytes


def _stuff(body: bytes) -> bytes:
    if not any(b in _SPECIAL for b in body):
        return body
    out = bytearray()
    for b in body:
        if b in _SPECIAL:
            out += bytes((DLE, b ^ ESCAPE_XOR))
        else:
            out.append(b)
    return bytes(out)


def encode_frame(frame: Frame) -> bytes:
    """The bytes on the wire for ``frame``."""
    if not 0 <= frame.seq <= 255 or not 0 <= frame.kind <= 255:
        raise ValueError(f"seq {frame.seq} and kind {frame.kind} must be bytes")
    if len(frame.payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(frame.payload)} bytes exceeds {MAX_PAYLOAD}")
    body = bytes((frame.seq, frame.kind, len(frame.payload))) + frame.payload
    crc = crc16(body)
    return bytes((STX,)) + _stuff(body + bytes((crc >> 8, crc & 0xFF))) + bytes((ETX,))


class FrameDecoder:
    """Bytes in, frames out, in any chunking; resynchronises at the next STX after damage.

    Counters (all start at 0): ``frames`` intact, ``garbage`` bytes outside any frame, and
    damaged frames by reason: ``bad_crc``, ``bad_length``, ``truncated`` (a new STX before the
    ETX), ``oversize``, ``bad_escape``, ``short``.
    """

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self._body = bytearray()
        self._in_frame = False
        self._escaped = False

    def feed(self, data: bytes) -> list[Frame | CorruptFrame]:
        """Take the next bytes of the stream; return the frames they complete."""
        out: list[Frame | CorruptFrame] = []
        body = self._body
        for b in data:
            if b == STX:
                if self._in_frame:
                    out.append(self._damaged("truncated"))
                self._in_frame = True
                self._escaped = False
                body.clear()
            elif not self._in_frame:
                self.counters["garbage"] += 1
            elif b == ETX:
                out.append(self._complete())
            elif self._escaped:
                self._escaped = False
                unescaped = b ^ ESCAPE_XOR
                if unescaped not in _SPECIAL:
                    out.append(self._damaged("bad_escape"))
                    continue
                body.append(unescaped)
            elif b == DLE:
                self._escaped = True
            else:
                body.append(b)
            # After either append: a run of escaped bytes must not grow the buffer past the cap.
            if len(body) > MAX_BODY:
                out.append(self._damaged("oversize"))
        return out

    def _damaged(self, reason: str) -> CorruptFrame:
        self.counters[reason] += 1
        raw = bytes(self._body)
        self._body.clear()
        self._in_frame = False
        self._escaped = False
        return CorruptFrame(reason, raw)

    def _complete(self) -> Frame | CorruptFrame:
        body = self._body
        if self._escaped:
            return self._damaged("bad_escape")
        if len(body) < 5:
            return self._damaged("short")
        if body[2] != len(body) - 5:
            return self._damaged("bad_length")
        if crc16(bytes(body[:-2])) != (body[-2] << 8 | body[-1]):
            return self._damaged("bad_crc")
        frame = Frame(body[0], body[1], bytes(body[3:-2]))
        body.clear()
        self._in_frame = False
        self.counters["frames"] += 1
        return frame
