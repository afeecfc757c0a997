"""Byte-level fault injection for the serial simulators: what a damaged cable or a stalled
device does to the frames on the wire. Family-level faults (a jam, a cocked die) belong to the
family simulators.

A plan is a list of :class:`ByteFault`, each applied to the N-th data frame the device sends
(1-based, counting family messages only, retransmissions included), parsed from the CLI form
``KIND@N[:ARG]``: ``corrupt@5``, ``truncate@7``, ``drop@9:3`` (drop 3 bytes), ``garbage@2:16``
(16 random bytes before the frame), ``stall@10:1.5`` (hold output 1.5 s), ``disconnect@20:1.0``
(unplug for 1 s, then plug in again).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tabled.drivers.framing import STX, FrameDecoder
from tabled.drivers.link import FIRST_FAMILY_KIND
from tabled.simulators.errors import SimulatorError

BYTE_FAULTS: Final = ("corrupt", "truncate", "drop", "garbage", "stall", "disconnect")


class FaultSpecError(SimulatorError, ValueError):
    """A fault specification that does not parse."""


@dataclass(frozen=True, slots=True)
class ByteFault:
    kind: str
    at: int
    arg: float = 0.0

    @classmethod
    def parse(cls, text: str) -> ByteFault:
        return cls(*parse_spec(text, _DEFAULT_ARG))


def parse_spec(text: str, defaults: Mapping[str, float]) -> tuple[str, int, float]:
    """``KIND@N[:ARG]`` -> ``(kind, n, arg)`` for the kinds of ``defaults`` (each kind's
    default ARG); FaultSpecError names what is wrong. Every simulator's faults use this form."""
    kind, sep, rest = text.partition("@")
    if kind not in defaults or not sep:
        raise FaultSpecError(f"{text!r}: expected KIND@N[:ARG] with KIND in {tuple(defaults)}")
    at_text, _, arg_text = rest.partition(":")
    try:
        at = int(at_text)
        arg = float(arg_text) if arg_text else defaults[kind]
    except ValueError:
        raise FaultSpecError(f"{text!r}: N must be an integer and ARG a number") from None
    if at < 1 or arg < 0:
        raise FaultSpecError(f"{text!r}: N counts from 1 and ARG is not negative")
    return kind, at, arg


_DEFAULT_ARG: Final = {"corrupt": 0.0, "truncate": 0.0, "drop": 1.0, "garbage": 8.0,
                       "stall": 1.0, "disconnect": 1.0}


def split_frames(data: bytes) -> list[bytes]:
    """Cut link output at each STX (a bare STX only ever starts a frame)."""
    parts: list[bytes] = []
    start = 0
    for i in range(1, len(data)):
        if data[i] == STX:
            parts.append(data[start:i])
            start = i
    if data:
        parts.append(data[start:])
    return parts


def is_data_frame(raw: bytes) -> bool:
    frames = FrameDecoder().feed(raw)
    return bool(frames) and getattr(frames[0], "kind", 0) >= FIRST_FAMILY_KIND


@dataclass(slots=True)
class Damage:
    """What to do with one outgoing frame: the bytes to write, and a pause or unplug after."""

    data: bytes
    stall: float = 0.0
    disconnect: float = 0.0


class FaultPlan:
    """Applies a list of byte faults to a device's outgoing frames, each once."""

    def __init__(self, faults: list[ByteFault], rng: random.Random | None = None) -> None:
        self.faults = sorted(faults, key=lambda f: f.at)
        self.rng = rng or random.Random(0)
        self.data_frames = 0
        self.applied: list[ByteFault] = []

    def apply(self, frame: bytes) -> Damage:
        if not is_data_frame(frame):
            return Damage(frame)
        self.data_frames += 1
        damage = Damage(frame)
        for fault in self.faults:
            if fault.at != self.data_frames:
                continue
            self.applied.append(fault)
            data = damage.data
            if fault.kind == "corrupt":
                i = self.rng.randrange(2, max(3, len(data) - 1))
                flipped = data[i] ^ (1 << self.rng.randrange(8))
                # never turn a byte into a delimiter: that would be truncation, not corruption
                if flipped in (0x02, 0x03, 0x10):
                    flipped = data[i] ^ 0x40
                damage.data = data[:i] + bytes((flipped,)) + data[i + 1:]
            elif fault.kind == "truncate":
                damage.data = data[: max(1, len(data) // 2)]
            elif fault.kind == "drop":
                n = int(fault.arg)
                i = self.rng.randrange(1, max(2, len(data) - n))
                damage.data = data[:i] + data[i + n:]
            elif fault.kind == "garbage":
                noise = bytes(self.rng.choice(range(0x20, 0x7F)) for _ in range(int(fault.arg)))
                damage.data = noise + data
            elif fault.kind == "stall":
                damage.stall = fault.arg
            elif fault.kind == "disconnect":
                damage.disconnect = fault.arg
        return damage
