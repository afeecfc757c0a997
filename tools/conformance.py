"""The conformance kit: what every device family's driver and simulator must pass together.

Owns the checks of docs/drivers.md ("The conformance kit") and the runner that reports them. It
drives a family only through the plugin declarations: the family's
:class:`~tabled.drivers.registry.DeviceFamily` (``open``, ``check``, ``transport``; the
``tabled.drivers`` entry points) and its simulator's
:class:`~tabled.simulators.registry.DeviceSide` (``tabled.simulators``). It never names a
family: the built-in ones and a vendor's are checked alike, each by the same code. Every check
plays the family's real simulator against its real driver in this process, over the family's
real transport (a pty, the simulated USB bus), and releases whatever it opened; a check that
leaves a task or a file descriptor behind fails ``no_leaks``.

Two ways in: ``tabled conformance FAMILY ...`` (:func:`main`, which prints each check's result
and exits 1 on any failure) and pytest (``tests/tools/test_conformance.py`` calls :func:`run_check`
for every installed family and every check).

What the checks compare is what the device meant to say: the events its simulator says a
correct driver makes of its script (``SimulatedDevice.expected``), without the driver's stamps
(device id, sequence number, time, the device's boot id and message number), which the kit
checks on their own. An event counts once the driver's sink has committed it (the journal's
durability barrier, :class:`Journal`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from tabled.contract.events import Event, EventError, Fault, encode_event, event_to_dict, parse_line
from tabled.contract.faults import DESCRIPTIONS, DEVICE_LOST, WRONG_DEVICE
from tabled.drivers.errors import DeviceError, DriverError
from tabled.drivers.link import Resume
from tabled.drivers.registry import DAMAGE_COUNTERS, Device, DeviceFamily, families, family
from tabled.simulators.errors import SimulatorError
from tabled.simulators.faults import ByteFault
from tabled.simulators.registry import (
    DeviceScript,
    DeviceSide,
    SimulatedDevice,
    SimulatorPlugin,
    simulators,
)
from tabled.tools.errors import ToolError

#: The device id the kit's drivers are opened with (``device`` in every event).
DEVICE_ID: Final = "kit-1"
#: What a driver stamps on an event (its Meta, as JSON): not part of what the device said.
STAMPS: Final = ("device", "seq", "ts", "device_boot", "device_msg")
#: Seconds: how often the kit looks at a device and its driver; how long it waits after the
#: last expected event for anything extra (a duplicate) to arrive.
POLL: Final = 0.01
SETTLE: Final = 0.15
#: Seconds a driver gets to open, and to close once asked, refused or unplugged.
T_OPEN: Final = 10.0
T_CLOSE: Final = 5.0
#: Seconds the kit keeps a device unplugged (it plays on into its memory meanwhile).
UNPLUGGED_FOR: Final = 0.2
#: The commit the kit's journal refuses in ``durability_barrier`` (after making it durable).
REFUSED_COMMIT: Final = 3
#: Seconds a check's tasks and file descriptors get to go away after it released them.
LEAK_GRACE: Final = 2.0
#: The wire damage of ``corrupt_frames``, at the N-th data message; the first two every
#: simulator must inject, the others where it can.
WIRE_DAMAGE: Final = (ByteFault("corrupt", 3), ByteFault("truncate", 6),
                      ByteFault("garbage", 9, 8.0), ByteFault("drop", 12, 2.0))
REQUIRED_WIRE_FAULTS: Final = frozenset({"corrupt", "truncate"})
#: Wire faults that leave a damaged frame (or packet) the driver must count.
_COUNTED_DAMAGE: Final = frozenset({"corrupt", "truncate", "garbage"})

#: Every check, in the order they run, with what it proves.
CHECKS: Final[Mapping[str, str]] = {
    "framing_round_trip": "the device's whole script through the real simulator and driver: "
                          "exactly the expected events, in order, none lost or duplicated, "
                          "sequence numbers contiguous, each a valid contract event",
    "any_chunking": "the same with the device's bytes split at random points",
    "corrupt_frames": "corrupt and truncated frames (and garbage, dropped bytes): counted, "
                      "resynchronised, nothing delivered twice or wrong, the link recovers",
    "disconnect_reconnect": "unplugged mid-stream: the driver closes with a device_lost fault; "
                            "replugged, a new driver resuming from what is durable gets the "
                            "rest exactly once",
    "durability_barrier": "a commit the sink refuses: the driver acknowledges nothing of it "
                          "and drops the link; the next one, told what is durable, delivers "
                          "each message once",
    "identity_check": "a device of another family, or with another serial number than the "
                      "pinned one, is refused as wrong_device with nothing acknowledged",
    "fault_events": "each family fault the simulator declares arrives as a fault event with "
                    "its declared code",
}
#: The result line that sums up the leaks of every check.
NO_LEAKS: Final = "no_leaks"

Outcome = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, slots=True)
class KitOptions:
    """How the kit plays: the scripts' seed and length (about that many events), the pace of
    the checks that need a stream to last (seconds between two device messages), and how long
    any one wait may take before the check fails."""

    seed: int = 1
    length: int = 24
    pace: float = 0.004
    timeout: float = 20.0


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one family: ``detail`` is why it failed or was skipped, or a note of what
    it saw; ``leaks`` what it left behind (tasks, file descriptors)."""

    family: str
    check: str
    outcome: Outcome
    detail: str = ""
    seconds: float = 0.0
    leaks: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.outcome == "fail" or bool(self.leaks)


class KitError(ToolError):
    """The kit's errors; raised as itself when the kit cannot run as asked (an unknown family
    or check, a family that does not load)."""


class CheckFailed(KitError):
    """A check found the family wanting; the message says what and where."""


class CheckSkipped(KitError):
    """A check that does not apply to the family; the message says why (printed)."""


@dataclass(frozen=True, slots=True)
class Subject:
    """The family under test: its declaration and its simulator."""

    family: DeviceFamily
    simulator: SimulatorPlugin | None

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def side(self) -> DeviceSide:
        """What its simulator gives the kit; CheckFailed if it gives nothing."""
        if self.simulator is None:
            raise CheckFailed(f"no simulator for family {self.name!r} in the tabled.simulators "
                              "entry points: the kit plays a family's driver against its "
                              "simulator (docs/drivers.md)")
        if self.simulator.conformance is None:
            raise CheckFailed(f"the simulator of {self.name!r} declares no conformance side "
                              "(SimulatorPlugin.conformance, a DeviceSide)")
        return self.simulator.conformance


def subject(name: str) -> Subject:
    """The installed family ``name`` and its simulator; KitError names the installed ones."""
    try:
        declared = family(name)
        simulator = simulators().get(name)
    except (DriverError, SimulatorError) as exc:
        raise KitError(str(exc)) from exc
    return Subject(declared, simulator)


def installed() -> list[Subject]:
    """Every installed family, with its simulator if it has one."""
    try:
        return [Subject(declared, simulators().get(name))
                for name, declared in families().items()]
    except (DriverError, SimulatorError) as exc:
        raise KitError(str(exc)) from exc


# -- the sink: a journal in memory -----------------------------------------------------------------


class Journal:
    """The kit's event sink, with the daemon's durability barrier: an event emitted is
    ``pending``; :meth:`commit` makes what is pending ``durable``. With ``refuse_commit``,
    that commit makes its events durable and then returns False, as a host whose journal
    failed to confirm them (the driver must then acknowledge nothing of them). Only commits
    with events count: a batch of frames that meant none (a status) has nothing to make
    durable, and refusing it would test nothing (a driver that ignored its resume then passed
    whenever the refused batch was a status: once in a fresh-clone CI run)."""

    def __init__(self, refuse_commit: int | None = None) -> None:
        self.durable: list[Event] = []
        self.pending: list[Event] = []
        self.commits = 0
        self._refuse = refuse_commit

    def emit(self, event: Event) -> None:
        self.pending.append(event)

    def commit(self) -> bool:
        if not self.pending:
            return True  # nothing to make durable, as the daemon's runtime answers it
        self.commits += 1
        self.durable += self.pending
        self.pending.clear()
        return self.commits != self._refuse

    def resume(self) -> Resume | None:
        """What is durable from the device, as the supervisor tells a new driver: the boot id
        and message number of the last durable event that carries them."""
        for event in reversed(self.durable):
            if event.meta.boot is not None and event.meta.msg is not None:
                return Resume(event.meta.boot, event.meta.msg)
        return None


# -- comparing streams -----------------------------------------------------------------------------


def content(event: Event) -> dict[str, Any]:
    """An event as the contract's JSON object, without the driver's stamps."""
    out = event_to_dict(event)
    for stamp in STAMPS:
        out.pop(stamp, None)
    return out


def _show(obj: object, limit: int = 160) -> str:
    text = json.dumps(obj, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def difference(got: Sequence[dict[str, Any]], want: Sequence[dict[str, Any]]) -> str | None:
    """Where ``got`` first differs from ``want``, in words; None if they are equal."""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g == w:
            continue
        if g in want[:i]:
            hint = f" (a duplicate of expected event {want.index(g)})"
        elif i + 1 < len(want) and g == want[i + 1]:
            hint = f" (expected event {i} is missing)"
        elif w in got[i + 1:]:
            hint = " (something was inserted before it)"
        else:
            hint = ""
        return f"event {i} is {_show(g)}, expected {_show(w)}{hint}"
    if len(got) < len(want):
        return (f"{len(want) - len(got)} of {len(want)} expected events never arrived; the "
                f"first missing is event {len(got)}: {_show(want[len(got)])}")
    if len(got) > len(want):
        return (f"{len(got) - len(want)} events more than the {len(want)} expected; the first "
                f"extra is event {len(want)}: {_show(got[len(want)])}")
    return None


def check_stream(events: Sequence[Event], expected: Sequence[Event]) -> None:
    """CheckFailed unless ``events`` are exactly ``expected`` (stamps aside), each stamped with
    the kit's device id and a sequence number one more than the last (from 0), device messages
    in order, and each event survives the contract's own parser unchanged."""
    problem = difference([content(e) for e in events], [content(e) for e in expected])
    if problem is not None:
        raise CheckFailed(problem)
    for i, event in enumerate(events):
        if event.meta.seq != i:
            raise CheckFailed(f"event {i} ({event.TYPE}) has sequence number {event.meta.seq}, "
                              f"expected {i}: numbers run on without a gap across reconnects "
                              "(first_seq)")
        if event.meta.device != DEVICE_ID:
            raise CheckFailed(f"event {i} ({event.TYPE}) names device {event.meta.device!r}, "
                              f"not the device_id it was opened with ({DEVICE_ID!r})")
        try:
            parsed = event_to_dict(parse_line(encode_event(event)))
        except EventError as exc:
            raise CheckFailed(f"event {i} ({event.TYPE}) is not a valid contract event: "
                              f"{exc}") from None
        if parsed != event_to_dict(event):
            raise CheckFailed(f"event {i} ({event.TYPE}) changes through the contract's parser: "
                              f"{_show(event_to_dict(event))} reads back as {_show(parsed)}")
    last: tuple[int, int] | None = None
    for i, event in enumerate(events):
        boot, number = event.meta.boot, event.meta.msg
        if boot is None or number is None:
            continue
        if last is not None and last[0] == boot and number < last[1]:
            raise CheckFailed(f"event {i} ({event.TYPE}) comes from device message {number}, "
                              f"after one from message {last[1]}: messages out of order")
        last = (boot, number)


# -- one check's devices and drivers ---------------------------------------------------------------


class Session:
    """One check's folder, devices and drivers: everything it opens is released at the end."""

    def __init__(self, subject: Subject, options: KitOptions) -> None:
        self.subject = subject
        self.options = options
        # AF_UNIX socket paths are short: not pytest's deep temporary folders.
        self.folder = Path(tempfile.mkdtemp(prefix="tabled-kit-", dir="/tmp"))
        self._devices: list[SimulatedDevice] = []
        self._drivers: list[Device] = []

    async def device(self, side: DeviceSide | None = None, *, seed: int = 0,
                     length: int | None = None, **script: Any) -> SimulatedDevice:
        """Start a simulated device of the family (or of ``side``) with a script."""
        side = self.subject.side if side is None else side
        folder = Path(tempfile.mkdtemp(dir=self.folder))
        device = await side.start(DeviceScript(
            seed=self.options.seed + seed,
            length=self.options.length if length is None else length, **script), folder)
        self._devices.append(device)
        if not device.expected:
            raise CheckFailed("the simulator's script stands for no events at all")
        return device

    async def open(self, device: SimulatedDevice, journal: Journal, *, first_seq: int = 0,
                   serial: str | None = None, by: DeviceFamily | None = None) -> Device:
        """Open ``device`` with the family's driver (or ``by``'s), as the supervisor does:
        numbering from ``first_seq``, told what the journal holds (``resume``) and the pinned
        serial."""
        options: dict[str, Any] = {}
        resume = journal.resume()
        if resume is not None:
            options["resume"] = resume
        if serial is not None:
            options["serial"] = serial
        try:
            async with asyncio.timeout(T_OPEN):
                driver = await (by or self.subject.family).open(
                    device.url, device_id=DEVICE_ID, sink=journal, first_seq=first_seq,
                    **options)
        except TimeoutError:
            raise CheckFailed(f"open({device.url!r}) did not return within {T_OPEN:g} s "
                              "(every await on a device has a timeout)") from None
        self._drivers.append(driver)
        return driver

    async def receive(self, device: SimulatedDevice, journal: Journal, *,
                      reconnect: bool = False, first_seq: int = 0,
                      serial: str | None = None, by: DeviceFamily | None = None) -> list[Device]:
        """Play the supervisor until the device has played its script and a host
        acknowledged every message (a driver acknowledges only what its sink committed: the
        journal then holds all it will); then wait a moment for anything extra. With
        ``reconnect``, open the device again whenever its driver closes (numbering on, told
        what is durable); without, a driver that closes fails. ``by``: another family's driver
        (the device's own, when it is not the family's)."""
        drivers: list[Device] = []
        try:
            async with asyncio.timeout(self.options.timeout):
                while not device.done:
                    driver = drivers[-1] if drivers else None
                    if driver is not None and driver.close_reason is not None:
                        await driver.wait_closed()
                        if not reconnect:
                            raise CheckFailed(
                                f"the driver closed by itself ({driver.close_reason}) after "
                                f"{len(journal.durable)} of {len(device.expected)} events")
                        driver = None
                    if driver is None:
                        start = drivers[-1].next_seq if drivers else first_seq
                        try:
                            drivers.append(await self.open(device, journal, first_seq=start,
                                                           serial=serial, by=by))
                        except DeviceError as exc:
                            if not reconnect:
                                raise CheckFailed(f"cannot open the device at {device.url}: "
                                                  f"{exc} ({exc.reason})") from None
                    await asyncio.sleep(POLL)
                await asyncio.sleep(SETTLE)
        except TimeoutError:
            raise CheckFailed(self._stalled(device, journal, drivers)) from None
        return drivers

    def _stalled(self, device: SimulatedDevice, journal: Journal,
                 drivers: Sequence[Device]) -> str:
        text = (f"timed out after {self.options.timeout:g} s: {len(journal.durable)} of "
                f"{len(device.expected)} expected events made durable")
        if journal.pending:
            text += f" ({len(journal.pending)} more emitted but never committed)"
        text += f"; the device holds {device.pending} unacknowledged messages"
        if not drivers:
            return text + "; no driver could open it"
        last = drivers[-1]
        state = ("its driver is connected" if last.connected.is_set()
                 else f"its driver closed ({last.close_reason})" if last.close_reason
                 else "its driver is not connected")
        return f"{text}; {state} (connections: {len(drivers)})"

    async def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        """Poll ``condition`` (CheckFailed naming ``what`` after the kit's timeout)."""
        try:
            async with asyncio.timeout(self.options.timeout):
                while not condition():  # noqa: ASYNC110 (states without an event of their own)
                    await asyncio.sleep(POLL)
        except TimeoutError:
            raise CheckFailed(f"timed out after {self.options.timeout:g} s waiting for "
                              f"{what}") from None

    async def refused(self, device: SimulatedDevice, why: str, *,
                      serial: str | None = None) -> str:
        """Open ``device`` (``why`` it is the wrong one) and require a refusal: DeviceError
        ``wrong_device`` from open, or a driver that closes with ``wrong_device`` by itself;
        no event, and none of the device's messages acknowledged. Returns the refusal."""
        journal = Journal()
        before = device.pending
        try:
            driver = await self.open(device, journal, serial=serial)
        except DeviceError as exc:
            if exc.reason != WRONG_DEVICE:
                raise CheckFailed(f"{why}: open() raised DeviceError {exc.reason!r} ({exc}), "
                                  f"not {WRONG_DEVICE!r}") from None
            refusal = str(exc)
        else:
            await self.wait_for(
                lambda: driver.close_reason is not None or driver.connected.is_set(),
                f"the driver to refuse {why}")
            if driver.connected.is_set():
                raise CheckFailed(f"{why}: the driver took it (its link came up; a device is "
                                  "identified before its link is up)")
            try:
                async with asyncio.timeout(T_CLOSE):
                    await driver.wait_closed()
            except TimeoutError:
                raise CheckFailed(f"{why}: the driver did not finish closing within "
                                  f"{T_CLOSE:g} s") from None
            refusal = driver.close_reason or ""
            if not refusal.startswith(WRONG_DEVICE):
                raise CheckFailed(f"{why}: the driver closed with {refusal!r}, not as "
                                  f"{WRONG_DEVICE!r}")
        events = journal.durable + journal.pending
        if events:
            raise CheckFailed(f"{why}: the driver emitted {len(events)} events from it (the "
                              f"first: {_show(content(events[0]))}) before refusing it")
        after = device.pending
        if after < before:
            raise CheckFailed(f"{why}: the driver acknowledged {before - after} of its "
                              "messages before refusing it (it must acknowledge none: the "
                              "device keeps them for the host they are meant for)")
        return refusal

    async def release(self) -> list[str]:
        """Close every driver and stop every device opened so far; what would not go."""
        problems: list[str] = []
        drivers, self._drivers = self._drivers, []
        for driver in drivers:
            try:
                driver.close("conformance kit done")
                async with asyncio.timeout(T_CLOSE):
                    await driver.wait_closed()
            except TimeoutError:
                problems.append(f"a driver did not close within {T_CLOSE:g} s of close()")
            except Exception as exc:  # whatever the family does, the rest is released
                problems.append(f"closing a driver raised {_unexpected(exc)}")
        devices, self._devices = self._devices, []
        for device in devices:
            try:
                async with asyncio.timeout(T_CLOSE):
                    await device.stop()
            except TimeoutError:
                problems.append(f"a simulated device did not stop within {T_CLOSE:g} s")
            except Exception as exc:
                problems.append(f"stopping a simulated device raised {_unexpected(exc)}")
        return problems

    async def close(self) -> list[str]:
        problems = await self.release()
        shutil.rmtree(self.folder, ignore_errors=True)
        return problems


def _check_info(driver: Device, device: SimulatedDevice) -> None:
    serial = driver.info.get("serial")
    if serial != device.serial:
        raise CheckFailed(f"the driver's info gives serial number {serial!r}, the device's "
                          f"identity {device.serial!r} (info carries the device's identity: "
                          "firmware, serial)")


def _unlike(serial: str) -> str:
    """A serial number of the same shape as ``serial`` that is not it."""
    last = serial[-1] if serial else "0"
    if last.isdigit():
        other = str((int(last) + 1) % 10)
    elif last.isalpha():
        other = "B" if last.upper() == "A" else "A"
    else:
        other = "0"
    return serial[:-1] + other


# -- the checks ------------------------------------------------------------------------------------


async def framing_round_trip(s: Session) -> str:
    device = await s.device()
    journal = Journal()
    (driver,) = await s.receive(device, journal)
    check_stream(journal.durable, device.expected)
    _check_info(driver, device)
    if not driver.connected.is_set():
        raise CheckFailed("the driver says it is not connected while its link is up")
    return f"{len(journal.durable)} events in {journal.commits} commits"


async def any_chunking(s: Session) -> str:
    reason = s.subject.side.no_chunking
    if reason is not None:
        raise CheckSkipped(reason)
    device = await s.device(seed=1, chunked=True)
    journal = Journal()
    await s.receive(device, journal)
    check_stream(journal.durable, device.expected)
    return f"{len(journal.durable)} events from bytes split at random points"


async def corrupt_frames(s: Session) -> str:
    side = s.subject.side
    missing = REQUIRED_WIRE_FAULTS - side.wire_faults
    if missing:
        raise CheckFailed(f"the simulator cannot inject {' and '.join(sorted(missing))} "
                          "frames (DeviceSide.wire_faults): every family's simulator must")
    faults = tuple(f for f in WIRE_DAMAGE if f.kind in side.wire_faults)
    device = await s.device(seed=2, wire_faults=faults)
    journal = Journal()
    (driver,) = await s.receive(device, journal)  # the link recovers without a reconnect
    check_stream(journal.durable, device.expected)
    asked = [f"{f.kind}@{f.at}" for f in faults]
    injected = list(device.injected)
    if sorted(injected) != sorted(asked):
        raise CheckFailed(f"the simulator injected {injected or 'nothing'} of {asked} (is its "
                          "script long enough?)")
    counters = driver.link_counters()
    damage = {name: count for name, count in sorted(counters.items())
              if name in DAMAGE_COUNTERS and count}
    need = sum(f.kind in _COUNTED_DAMAGE for f in faults)
    if sum(damage.values()) < need:
        raise CheckFailed(f"{need} damaged frames, but link_counters() counts "
                          f"{damage or 'no damage'} (damage is counted under the names of "
                          "tabled.drivers.registry.DAMAGE_COUNTERS)")
    return f"{', '.join(asked)}: counted {damage}"


async def disconnect_reconnect(s: Session) -> str:
    device = await s.device(seed=3, pace=s.options.pace)
    journal = Journal()
    first = await s.open(device, journal)
    third = max(1, len(device.expected) // 3)
    await s.wait_for(lambda: len(journal.durable) >= third, f"{third} events before the unplug")
    if device.done:
        raise CheckFailed("the device had delivered its whole script before the kit could "
                          "unplug it (does it keep DeviceScript.pace?)")
    await device.unplug()
    try:
        async with asyncio.timeout(T_CLOSE):
            await first.wait_closed()
    except TimeoutError:
        raise CheckFailed(f"the driver did not close within {T_CLOSE:g} s of its device's "
                          "unplug (wait_closed() must return: the supervisor reconnects)") from None
    if first.connected.is_set():
        raise CheckFailed("the driver still says connected after its device was unplugged")
    lost = first.lost_fault()
    if not (isinstance(lost, Fault) and lost.code == DEVICE_LOST
            and lost.extra.get("family") == s.subject.name):
        raise CheckFailed(f"lost_fault() is {_show(event_to_dict(lost))}: a fault with code "
                          f"{DEVICE_LOST!r} and family {s.subject.name!r}")
    at_unplug = len(journal.durable)
    await asyncio.sleep(UNPLUGGED_FOR)
    await device.plug()
    drivers = await s.receive(device, journal, reconnect=True, first_seq=first.next_seq)
    check_stream(journal.durable, device.expected)
    return (f"unplugged after {at_unplug} of {len(device.expected)} events "
            f"({first.close_reason}); the rest in {len(drivers)} connection(s)")


async def durability_barrier(s: Session) -> str:
    device = await s.device(seed=4, pace=s.options.pace)
    journal = Journal(refuse_commit=REFUSED_COMMIT)
    drivers = await s.receive(device, journal, reconnect=True)
    if journal.commits < REFUSED_COMMIT:
        raise CheckFailed(f"the whole script took {journal.commits} commits: the kit could not "
                          f"refuse commit {REFUSED_COMMIT} (a longer script?)")
    if len(drivers) < 2:
        raise CheckFailed("the driver kept its link after its sink's commit() returned False "
                          "(it must acknowledge nothing of that batch and drop the link)")
    check_stream(journal.durable, device.expected)
    return (f"commit {REFUSED_COMMIT} refused: the link dropped ({drivers[0].close_reason}); "
            f"resumed without a duplicate")


async def identity_check(s: Session) -> str:
    transport = s.subject.family.transport
    peers = [peer for peer in installed()
             if peer.name != s.subject.name and peer.family.transport == transport
             and peer.simulator is not None and peer.simulator.conformance is not None]
    notes: list[str] = []
    for peer in peers:
        other = await s.device(peer.side, seed=5, length=12)
        await s.refused(other, f"a {peer.name} device")
        # Its own family's driver gets all of it, from its first message: the refusing
        # driver acknowledged nothing.
        journal = Journal()
        await s.receive(other, journal, by=peer.family)
        try:
            check_stream(journal.durable, other.expected)
        except CheckFailed as exc:
            raise CheckFailed(f"a {peer.name} device, refused, then read by its own driver: "
                              f"{exc}") from None
        notes.append(peer.name)
        await s.release()
    device = await s.device(seed=6)
    wrong = _unlike(device.serial)
    problems = s.subject.family.check(None, wrong)
    if problems:
        raise CheckFailed(f"the family's check() refuses serial number {wrong!r} (like the "
                          f"device's {device.serial!r}): {problems}")
    await s.refused(device, f"a device with serial number {device.serial!r} where {wrong!r} "
                            "is pinned", serial=wrong)
    journal = Journal()
    (driver,) = await s.receive(device, journal, serial=device.serial)
    # All of it, from the first message: the refusing driver acknowledged nothing.
    check_stream(journal.durable, device.expected)
    _check_info(driver, device)
    refused = f"refused {', '.join(f'a {n} device' for n in notes)} and " if notes else "refused "
    text = f"{refused}serial {wrong!r}; took {device.serial!r} pinned"
    if not peers:
        text += (f" (no other installed {transport} family stands in for a wrong device: "
                 "only the pinned serial number was checked)")
    return text


async def fault_events(s: Session) -> str:
    declared = s.subject.side.faults
    if not declared:
        return "the simulator declares no family faults"
    unknown = sorted({code for code in declared.values() if code not in DESCRIPTIONS})
    if unknown:
        raise CheckFailed(f"declared fault codes {unknown} are not codes of "
                          "tabled.contract.faults")
    for name, code in declared.items():
        device = await s.device(seed=7, faults=(name,))
        journal = Journal()
        await s.receive(device, journal)
        try:
            check_stream(journal.durable, device.expected)
        except CheckFailed as exc:
            raise CheckFailed(f"with family fault {name!r}: {exc}") from None
        codes = [e.code for e in journal.durable if isinstance(e, Fault)]
        if code not in codes:
            raise CheckFailed(f"family fault {name!r} brought no fault event with code "
                              f"{code!r} (fault codes seen: {codes or 'none'})")
        problems = await s.release()
        if problems:
            raise CheckFailed("; ".join(problems))
    return ", ".join(f"{name} -> {code}" for name, code in declared.items())


_CHECK_FUNCTIONS: Final[Mapping[str, Callable[[Session], Awaitable[str]]]] = {
    "framing_round_trip": framing_round_trip,
    "any_chunking": any_chunking,
    "corrupt_frames": corrupt_frames,
    "disconnect_reconnect": disconnect_reconnect,
    "durability_barrier": durability_barrier,
    "identity_check": identity_check,
    "fault_events": fault_events,
}
assert tuple(_CHECK_FUNCTIONS) == tuple(CHECKS)


# -- running them ----------------------------------------------------------------------------------


def _open_fds() -> dict[int, str]:
    found: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return found


async def _leaks(tasks_before: set[asyncio.Task[Any]], fds_before: Mapping[int, str]) -> list[str]:
    """What a check left behind: tasks, and file descriptors (given time to go)."""
    current = asyncio.current_task()
    deadline = time.monotonic() + LEAK_GRACE
    while True:
        tasks = [t for t in asyncio.all_tasks() - tasks_before if t is not current]
        fds = {fd: target for fd, target in _open_fds().items()
               if fds_before.get(fd) != target}
        if (not tasks and not fds) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    return ([f"task {t.get_name()} ({t.get_coro()!r})" for t in tasks]
            + [f"fd {fd} ({target})" for fd, target in sorted(fds.items())])


def _unexpected(exc: BaseException) -> str:
    """An exception a check did not expect, with where it came from."""
    where = traceback.extract_tb(exc.__traceback__)[-3:]
    frames = "; ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in where)
    return f"{type(exc).__name__}: {exc} (at {frames})"


async def run_check(target: str | Subject, check: str,
                    options: KitOptions | None = None) -> CheckResult:
    """Run one check against one family (by name or as a :class:`Subject`). KitError for an
    unknown family or check."""
    if check not in _CHECK_FUNCTIONS:
        raise KitError(f"unknown check {check!r} (checks: {', '.join(CHECKS)})")
    subj = subject(target) if isinstance(target, str) else target
    options = options or KitOptions()
    tasks_before = asyncio.all_tasks()
    fds_before = _open_fds()
    started = time.monotonic()
    outcome: Outcome = "pass"
    session = Session(subj, options)
    try:
        detail = await _CHECK_FUNCTIONS[check](session)
    except CheckSkipped as exc:
        outcome, detail = "skip", str(exc)
    except CheckFailed as exc:
        outcome, detail = "fail", str(exc)
    except Exception as exc:  # a family's bug is a failed check, not a crashed kit
        outcome, detail = "fail", _unexpected(exc)
    finally:
        problems = await session.close()
    if problems:
        text = "; ".join(problems)
        detail = f"{detail}; then {text}" if outcome == "fail" else text
        outcome = "fail"
    leaks = await _leaks(tasks_before, fds_before)
    return CheckResult(subj.name, check, outcome, detail, time.monotonic() - started,
                       tuple(leaks))


def leak_summary(results: Sequence[CheckResult]) -> CheckResult:
    """The ``no_leaks`` line: what each check left behind, if anything."""
    leaky = [f"after {r.check}: {', '.join(r.leaks)}" for r in results if r.leaks]
    name = results[0].family if results else ""
    if leaky:
        return CheckResult(name, NO_LEAKS, "fail", "; ".join(leaky))
    return CheckResult(name, NO_LEAKS, "pass", "no task or file descriptor left behind by "
                       f"any of {len(results)} checks")


async def run_family(target: str | Subject, checks: Sequence[str] = tuple(CHECKS),
                     options: KitOptions | None = None,
                     report: Callable[[CheckResult], object] | None = None) -> list[CheckResult]:
    """Run ``checks`` against one family, then sum up their leaks (``no_leaks``); ``report``
    gets each result as it comes."""
    subj = subject(target) if isinstance(target, str) else target
    results: list[CheckResult] = []
    for check in checks:
        result = await run_check(subj, check, options)
        results.append(result)
        if report is not None:
            report(result)
    summary = leak_summary(results)
    if report is not None:
        report(summary)
    return [*results, summary]


# -- tabled conformance ----------------------------------------------------------------------------

EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


def _line(result: CheckResult) -> str:
    mark = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[result.outcome]
    took = f"{result.seconds:5.2f} s" if result.seconds else " " * 7
    detail = result.detail
    if result.leaks:
        mark = "FAIL"
        detail = f"{detail}; left behind: {', '.join(result.leaks)}".lstrip("; ")
    return f"  {mark}  {result.check:<21} {took}  {detail}".rstrip()


def main(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tabled conformance``: 0 when every check of every family passed (or was skipped with
    its reason), 1 when one failed, 2 for a family or check that does not exist. With
    ``--game``, the games conformance kit's (:mod:`tabled.tools.game_conformance`)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if getattr(args, "game", None):
        # the games conformance kit (docs/games.md): games, not device families
        if args.families or args.all:
            print("tabled conformance: name device families or --game, not both", file=err)
            return EXIT_USAGE
        from tabled.tools.game_conformance import main as games_main

        return games_main(args, out, err)
    if args.list:
        for name, proves in CHECKS.items():
            print(f"{name}: {proves}", file=out)
        print(f"{NO_LEAKS}: no check leaves an asyncio task or a file descriptor behind",
              file=out)
        return 0
    try:
        subjects = installed() if args.all else [subject(name) for name in args.families]
    except KitError as exc:
        print(f"tabled conformance: {exc}", file=err)
        return EXIT_USAGE
    if not subjects:
        names = ", ".join(s.name for s in installed()) or "none"
        print(f"tabled conformance: name the families to check, or --all (installed: {names})",
              file=err)
        return EXIT_USAGE
    given = {name: getattr(args, name) for name in ("seed", "length", "pace", "timeout")
             if getattr(args, name, None) is not None}
    options = replace(KitOptions(), **given)
    checks = tuple(dict.fromkeys(args.check or CHECKS))
    unknown = [check for check in checks if check not in CHECKS]
    if unknown:
        print(f"tabled conformance: unknown check {unknown[0]!r} (checks: "
              f"{', '.join(CHECKS)})", file=err)
        return EXIT_USAGE
    failed = False
    for subj in subjects:
        declared = subj.family
        print(f"{declared.name}: {declared.summary} (kind {declared.kind}, "
              f"{declared.transport})", file=out, flush=True)
        results = asyncio.run(run_family(
            subj, checks, options, lambda r: print(_line(r), file=out, flush=True)))
        counts = {o: sum(r.outcome == o and not r.leaks for r in results)
                  for o in ("pass", "skip")}
        bad = sum(r.failed for r in results)
        failed = failed or bad > 0
        print(f"  {declared.name}: {counts['pass']} passed, {bad} failed, {counts['skip']} "
              "skipped", file=out, flush=True)
    return EXIT_FAILED if failed else 0


__all__ = [
    "CHECKS", "NO_LEAKS", "CheckFailed", "CheckResult", "CheckSkipped", "Journal", "KitError",
    "KitOptions", "Subject", "check_stream", "installed", "main", "run_check", "run_family",
    "subject",
]
