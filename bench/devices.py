"""The device side of the benchmarks: each family's script, played at a set pace by the project's
own simulators, with the moment every frame reaches the wire noted.

Owns three things:

- the scripts: seeded baccarat dealt from a reading shoe, a shuffler-dealer dealing baccarat
  card by card (its baccarat mode), and dice rolls. Every message in a script stands for exactly
  one normalized event, so the k-th message is the event the driver numbers ``seq`` k and the
  frame a baseline counts as its k-th;
- the timed devices: the family simulators of ``simulators/`` (the production framing and link
  on a real pseudo-terminal; the dice sensor on the simulated USB bus) with a clock on the wire:
  for a pty, when the first transmission of a script frame is written to the master; for the
  sensor, when the report is put on its interrupt endpoint;
- :class:`RawPty`, the baselines' device: the same frames written straight to a pty with no
  link (a baseline reader acknowledges nothing).

It never reads what the host makes of a frame: the receiving side is timed by the collector.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import time
import tty
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from tabled.drivers.dice.protocol import RollReport
from tabled.drivers.framing import Frame, FrameDecoder, encode_frame
from tabled.drivers.link import FIRST_FAMILY_KIND
from tabled.drivers.shoe import driver as shoe_driver
from tabled.drivers.shoe import protocol as shoe_protocol
from tabled.drivers.shuffler import driver as shuffler_driver
from tabled.drivers.shuffler import protocol as shuffler_protocol
from tabled.simulators.dice import DiceSensor, ScriptStep, device_url
from tabled.simulators.faults import Damage, FaultPlan
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.shoe import Dealer, ShoeDevice, ShoeReader
from tabled.simulators.shuffler import ShufflerSimulator, baccarat_script
from tabled.simulators.usb_backend import UsbSimServer

FAMILIES: Final = ("shoe", "shuffler", "dice")
#: The game each family's script plays, and the device id the daemon gives it.
GAME: Final = {"shoe": "baccarat", "shuffler": "baccarat", "dice": "craps"}
DEVICE_ID: Final = {"shoe": "shoe-1", "shuffler": "shuffler-1", "dice": "dice-1"}


@dataclass(frozen=True, slots=True)
class Message:
    """One family message of a serial script: what a frame carries."""

    kind: int
    payload: bytes


# -- scripts -------------------------------------------------------------------------------------


def shoe_script(count: int, seed: int) -> list[Message]:
    """Seeded baccarat from a reading shoe, shoe after shoe (burns, cut card, hands), without
    the BURN button presses: those are not events (the burned card after one is)."""
    dealer = Dealer(ShoeReader(), rng=random.Random(seed), hands=None, shoes=None)
    reports = (r for r in dealer.reports() if shoe_driver.normalize(r) is not None)
    return [Message(*shoe_protocol.encode(r)) for r in itertools.islice(reports, count)]


def shuffler_script(count: int, seed: int) -> list[Message]:
    """A shuffler-dealer in baccarat mode: counted shoes dealt one card at a time, face up,
    each hand as long as the drawing rules make it; only the messages that are events."""
    hands = count // 4 + 16  # a hand takes four to six cards: more than enough
    messages = baccarat_script(random.Random(seed), hands=hands)
    events = (m for m in messages if len(shuffler_driver.normalize(m)) == 1)
    return [Message(*shuffler_protocol.encode(m)) for m in itertools.islice(events, count)]


def dice_script(count: int, seed: int) -> list[ScriptStep]:
    """Seeded rolls, every one read cleanly."""
    rng = random.Random(seed)
    return [ScriptStep(RollReport(0, rng.randint(1, 6), rng.randint(1, 6), 100, 0))
            for _ in range(count)]


def script(family: str, count: int, seed: int) -> list[Any]:
    if family == "shoe":
        return shoe_script(count, seed)
    if family == "shuffler":
        return shuffler_script(count, seed)
    return dice_script(count, seed)


# -- timing on the wire ----------------------------------------------------------------------------


class WireClock(FaultPlan):
    """A device's fault plan with no faults that notes, for every script message, when its
    frame is first written to the pty (retransmissions are not a new frame)."""

    def __init__(self) -> None:
        super().__init__([])
        #: One entry per message the device sent, in order: its script index, or None.
        self.sent: deque[int | None] = deque()
        self.written: dict[int, float] = {}
        self._next_seq = 0

    def apply(self, frame: bytes) -> Damage:
        now = time.monotonic()
        decoded = FrameDecoder().feed(frame)
        head = decoded[0] if decoded else None
        if (isinstance(head, Frame) and head.kind >= FIRST_FAMILY_KIND
                and head.seq == self._next_seq and self.sent):
            self._next_seq = (head.seq + 1) & 0xFF
            index = self.sent.popleft()
            if index is not None:
                self.written[index] = now
        return Damage(frame)


class _Timed(PtyDevice):
    """A family simulator whose sends are tagged with the script index being played, and which
    can hold what its host writes until its next send (:meth:`hold_host_bytes`)."""

    clock: WireClock
    index: int | None = None
    _held = False

    def send(self, kind: int, payload: bytes = b"") -> None:
        if self._held:
            self._readable()  # the host's acknowledgements since the last send
        self.clock.sent.append(self.index)
        super().send(kind, payload)

    def hold_host_bytes(self, held: bool) -> None:
        """``held``: the host's bytes (its ACKs) wait in the pty and are taken just before the
        device's next send, instead of as they arrive; released: what waited is taken now, and
        the rest as it arrives.

        A device's link runs in its own hardware; this one runs in Python, on the two cores
        the daemon, the broker and the collector share, in the collector's process. Taken at
        once, the host's ACK of frame k (written right after frame k's publish) is handled by
        this process exactly while the collector waits to stamp frame k's arrival: a cost of
        the simulation, on tabled's side of the comparison only (the baselines acknowledge
        nothing). Taken at the next send, before that frame's wire stamp, it lies in no
        measured window. The device's timers run as before."""
        if held == self._held:
            return
        self._held = held
        if self._master is None:  # unplugged: plugging in reads as it arrives
            return
        loop = asyncio.get_running_loop()
        if held:
            loop.remove_reader(self._master)
        else:
            self._readable()
            loop.add_reader(self._master, self._readable)


class TimedShoe(_Timed, ShoeDevice):
    pass


class TimedShuffler(_Timed, ShufflerSimulator):
    pass


class TimedSensor(DiceSensor):
    """The dice sensor, producing script steps on demand and noting when each report is on its
    interrupt endpoint (what a host's pending read then returns)."""

    def __init__(self) -> None:
        super().__init__([], pace=0.0)
        self.written: dict[int, float] = {}

    async def produce(self, index: int, step: ScriptStep) -> None:
        self.written[index] = time.monotonic()
        await self._produce(step)


class Device(Protocol):
    """What a benchmark needs of a device: where the host opens it, and its clock."""

    url: str
    written: dict[int, float]

    async def play(self, messages: Sequence[Any], interval: float, *, first: int = 0) -> None:
        """Send ``messages`` ``interval`` seconds apart (all at once when 0); the k-th is
        script index ``first + k``."""

    async def close(self) -> None: ...


class _Schedule:
    """Release times from a fixed start, so a late wake-up does not delay every later send."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.start = time.monotonic()

    async def wait(self, k: int) -> None:
        if self.interval > 0:
            delay = self.start + k * self.interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)


class PtyFamilyDevice:
    """A timed shoe or shuffler-dealer on a pty, with the production link."""

    def __init__(self, family: str, *, host_bytes_at_sends: bool = False) -> None:
        self.simulator: _Timed = (TimedShoe() if family == "shoe"
                                  else TimedShuffler(shuffler_protocol.Mode.BACCARAT))
        self.simulator.clock = self.simulator.plan = WireClock()
        self.url = ""
        #: While playing, take the host's bytes at each send (:meth:`_Timed.hold_host_bytes`:
        #: the latency benchmark). Not for a script played all at once, which has no next send
        #: to wait for.
        self.host_bytes_at_sends = host_bytes_at_sends

    @property
    def written(self) -> dict[int, float]:
        return self.simulator.clock.written

    async def start(self) -> str:
        self.url = await self.simulator.start()
        return self.url

    async def play(self, messages: Sequence[Message], interval: float, *, first: int = 0,
                   max_backlog: int = 512) -> None:
        simulator, schedule = self.simulator, _Schedule(interval)
        held = self.host_bytes_at_sends and interval > 0
        simulator.hold_host_bytes(held)
        try:
            for k, message in enumerate(messages):
                await schedule.wait(k)
                if simulator.backlog >= max_backlog:
                    # the link's window is full: the device waits, reading its host
                    simulator.hold_host_bytes(False)
                    await simulator.drain()
                    simulator.hold_host_bytes(held)
                simulator.index = first + k
                simulator.send(message.kind, message.payload)
                simulator.index = None
            if held:  # the last frame's ACK, too, outside its measured window
                await schedule.wait(len(messages))
        finally:
            simulator.hold_host_bytes(False)

    async def drained(self) -> None:
        await self.simulator.drain()

    async def close(self) -> None:
        await self.simulator.stop()


class UsbFamilyDevice:
    """The timed dice sensor on the simulated USB bus (a Unix socket)."""

    def __init__(self, socket_path: str) -> None:
        self.sensor = TimedSensor()
        self.server = UsbSimServer(self.sensor, socket_path)
        self.socket_path = socket_path
        self.url = device_url(socket_path)

    @property
    def written(self) -> dict[int, float]:
        return self.sensor.written

    async def start(self) -> str:
        await self.server.start()
        return self.url

    async def play(self, steps: Sequence[ScriptStep], interval: float, *,
                   first: int = 0) -> None:
        schedule = _Schedule(interval)
        for k, step in enumerate(steps):
            await schedule.wait(k)
            await self.sensor.produce(first + k, step)

    async def close(self) -> None:
        # Let the server see its host's socket close first: UsbSimServer.close() cancels a
        # connection task still running, and asyncio's streams then log the cancellation as
        # an error.
        await asyncio.sleep(0.3)
        await self.server.close()


class RawPty:
    """The baselines' serial device: frames written straight to a pty master, no link, no
    acknowledgement expected. ``path`` is what a reader opens."""

    def __init__(self) -> None:
        master, slave = os.openpty()
        tty.setraw(master)
        tty.setraw(slave)
        self._master, self._slave = master, slave
        self.url = os.ttyname(slave)
        self.written: dict[int, float] = {}

    async def start(self) -> str:
        return self.url

    async def play(self, messages: Sequence[Message], interval: float, *,
                   first: int = 0) -> None:
        schedule = _Schedule(interval)
        for k, message in enumerate(messages):
            await schedule.wait(k)
            index = first + k
            frame = encode_frame(Frame(index & 0xFF, message.kind, message.payload))
            self.written[index] = time.monotonic()
            os.write(self._master, frame)

    async def close(self) -> None:
        os.close(self._master)
        os.close(self._slave)
