"""The shuffler-dealer driver against its simulator: over a real pseudo-terminal with every
machine fault and byte fault and a replug, over simulated transports (whole, one byte at a time,
lossy, delayed), and through ``tabled-sim shuffler`` run as a process. Every session must arrive
intact: each event once, in order, numbered without a gap; nothing leaks.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import sys
from collections.abc import Callable

import pytest

from tabled.contract.events import Event, Fault, HandDealt, RoundStart, ShoeStart, event_to_dict
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import DeviceError
from tabled.drivers.link import Link, LinkEvent, MessageReceived, Resume
from tabled.drivers.link_runner import LinkRunner
from tabled.drivers.shuffler import ShufflerDriver, open_device
from tabled.drivers.shuffler import protocol as p
from tabled.drivers.shuffler.driver import normalize
from tabled.games.registry import make_table
from tabled.simulators.faults import ByteFault
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.shuffler import (
    FIRMWARE,
    SERIAL_NUMBER,
    MachineFault,
    ShufflerSimulator,
    add_arguments,
    baccarat_script,
    parse_fault,
    qpoker_script,
    reply,
)
from tests.waiting import until

DEVICE_ID = "shuffler-1"
SESSION_TIMEOUT = 15.0


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def other_tasks() -> set[asyncio.Task]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


#: What the driver and the link stamp on every event: not part of what the machine said.
STAMPS = ("device", "seq", "ts", "device_boot", "device_msg")


def bare(events: list[Event]) -> list[dict]:
    """The events as the contract's JSON objects, without the stamps."""
    out = []
    for event in events:
        obj = event_to_dict(event)
        for key in STAMPS:
            obj.pop(key, None)
        out.append(obj)
    return out


def expected_events(script: list[p.Message]) -> list[dict]:
    return bare([e for m in script for e in normalize(m)])


async def reopen(device: ShufflerSimulator, events: list[Event],
                 first_seq: int) -> ShufflerDriver:
    """Open the port like the supervisor does, once the machine is plugged in again, and tell
    the link what the host already has (a message whose ACK was lost in the unplug is sent
    again, and dropped: tabled.drivers.link, "exactly once across resets").

    Waiting for the replug matters on a shared machine: while unplugged, the link path names a
    /dev/pts number that another process's pty may already have taken."""
    resume = (Resume(events[-1].meta.boot, events[-1].meta.msg)
              if events else None)
    while True:
        await until(lambda: not device.unplugged.is_set())
        try:
            return await open_device(device.path, device_id=DEVICE_ID, sink=events.append,
                                     first_seq=first_seq, resume=resume)
        except DeviceError:
            await asyncio.sleep(0.05)


async def pty_session(script: list[p.Message], tmp_path, *, mode: p.Mode = p.Mode.QPOKER,
                      byte_faults: list[ByteFault] | None = None
                      ) -> tuple[list[Event], list[ShufflerDriver], ShufflerSimulator]:
    """Play ``script`` on a simulated machine behind a pty, with a host that reconnects each
    time the port goes away, until the machine has played it all and the host has it all."""
    fds_before = open_fds()
    device = ShufflerSimulator(mode, link_path=str(tmp_path / "shuffler"),
                               faults=byte_faults or [])
    await device.start()
    events: list[Event] = []
    drivers = [await reopen(device, events, 0)]
    try:
        async with asyncio.timeout(SESSION_TIMEOUT):
            await drivers[0].connected.wait()

            async def played_and_delivered() -> None:
                await device.play(script)
                await device.drain()

            done = asyncio.create_task(played_and_delivered())
            while not done.done():
                closed = asyncio.create_task(drivers[-1].wait_closed())
                await asyncio.wait({done, closed}, return_when=asyncio.FIRST_COMPLETED)
                closed.cancel()
                if not done.done():  # the port went away: reconnect, continuing the numbering
                    drivers.append(await reopen(device, events, drivers[-1].next_seq))
            await done
    finally:
        drivers[-1].close()
        await drivers[-1].wait_closed()
        await device.stop()
    await asyncio.sleep(0.05)
    assert open_fds() <= fds_before
    assert not other_tasks()
    return events, drivers, device


def assert_intact(events: list[Event], script: list[p.Message]) -> None:
    """Every event of the script once, in order, stamped with this device and a gapless seq."""
    assert bare(events) == expected_events(script)
    assert [e.meta.seq for e in events] == list(range(len(events)))
    assert {e.meta.device for e in events} == {DEVICE_ID}
    assert all(e.meta.ts and e.meta.ts.endswith("Z") for e in events)
    # the machine's message numbers: increasing (INFO and STATUS replies take numbers too,
    # and a message may stand for two events)
    numbers = [e.meta.msg for e in events]
    assert all(a <= b for a, b in itertools.pairwise(numbers))
    assert len({e.meta.boot for e in events}) <= 1


def assert_qpoker_rounds_dealt_in_order(events: list[Event]) -> None:
    """Art. 7(2): after each round_start, hands of three to the seats with a bet in ascending
    order, dealer last (unless a fault stopped the machine)."""
    seats: tuple[int, ...] = ()
    hands: list[HandDealt] = []
    for event in [*events, RoundStart(seats=())]:
        if isinstance(event, RoundStart):
            dealt = [h.seat for h in hands]
            assert dealt == [*seats, "dealer"][: len(dealt)]
            seats, hands = event.seats or (), []
        elif isinstance(event, HandDealt):
            assert len(event.cards) == 3
            hands.append(event)


# -- over a real pseudo-terminal ---------------------------------------------------------------


async def test_a_dealt_qpoker_session_arrives_intact_with_info_and_status(tmp_path) -> None:
    script = qpoker_script(random.Random(11), rounds=3)
    events, drivers, _ = await pty_session(script, tmp_path)
    assert_intact(events, script)
    assert_qpoker_rounds_dealt_in_order(events)
    assert sum(isinstance(e, RoundStart) for e in events) == 3
    assert sum(isinstance(e, HandDealt) and e.seat == "dealer" for e in events) == 3
    [driver] = drivers
    assert driver.info == {"firmware": FIRMWARE, "serial": SERIAL_NUMBER}
    assert driver.status is not None
    assert driver.status.state is p.MachineState.IDLE and driver.status.round == 3
    assert driver.link_counters()["events"] == len(events)
    assert driver.family == "shuffler"


@pytest.mark.parametrize("spec, code", [
    ("jam@5", "shuffler_jam"),
    ("failure@2", "shuffler_failure"),
    ("door@9", "shuffler_door_open"),
    ("exposed@3", "card_exposed"),
    ("exposed@dealer:2", "card_exposed"),
    ("short_deck@2", "deck_count"),
    ("long_deck@1", "deck_count"),
])
async def test_every_machine_fault_arrives_as_its_fault_event(spec: str, code: str,
                                                              tmp_path) -> None:
    fault = parse_fault(spec)
    assert isinstance(fault, MachineFault)
    script = qpoker_script(random.Random(4), rounds=3, seats=(1, 3, 5), faults=[fault])
    events, drivers, _ = await pty_session(script, tmp_path)
    assert_intact(events, script)
    assert_qpoker_rounds_dealt_in_order(events)
    [fault_event] = [e for e in events if isinstance(e, Fault)]
    assert fault_event.code == code
    assert fault_event.extra["device_code"] == p.DeviceFault[
        {"shuffler_jam": "JAM", "shuffler_failure": "FAILURE",
         "shuffler_door_open": "DOOR_OPEN", "deck_count": "DECK_COUNT",
         "card_exposed": "CARD_EXPOSED"}[code]]
    if fault.kind in ("jam", "failure", "door"):  # the machine halted, then was cleared
        assert drivers[-1].status is not None and drivers[-1].status.fault == 0
    if fault.kind == "exposed":
        hand = events[events.index(fault_event) - 1]
        assert isinstance(hand, HandDealt) and hand.face_up is False  # one card, not the hand
        assert len(hand.extra["exposed"]) == 1 and hand.extra["exposed"][0] in hand.cards
        assert hand.seat == ("dealer" if fault.dealer else 5)


async def test_a_baccarat_session_arrives_as_shoe_starts_and_face_up_cards(tmp_path) -> None:
    """Baccarat Art. 7 (face up) and Art. 9: the rules core settles every hand it is sent."""
    script = baccarat_script(random.Random(2), hands=12, faults=[MachineFault("door", 7)])
    events, drivers, _ = await pty_session(script, tmp_path, mode=p.Mode.BACCARAT)
    assert_intact(events, script)
    assert [e.decks for e in events if isinstance(e, ShoeStart)] == [8, 8]
    table = make_table("baccarat")
    outcomes = [o for e in events for o in table.feed(e) if isinstance(o, Outcome)]
    # 12 hands: 11 complete, the one the door stopped voided by the reshuffle (Art. 10)
    assert [o.status for o in outcomes].count("complete") == 11
    assert [o.article for o in outcomes if o.status == "void"] == ["baccarat.art10"]
    assert drivers[-1].status is not None and drivers[-1].status.mode is p.Mode.BACCARAT


@pytest.mark.parametrize("fault", [
    ByteFault("corrupt", 3), ByteFault("truncate", 6), ByteFault("drop", 8, 2),
    ByteFault("garbage", 4, 24), ByteFault("stall", 5, 0.3), ByteFault("disconnect", 7, 0.3),
], ids=lambda f: f.kind)
async def test_every_byte_fault_loses_and_duplicates_nothing(fault: ByteFault,
                                                             tmp_path) -> None:
    script = qpoker_script(random.Random(6), rounds=2, seats=(2, 4))
    events, drivers, device = await pty_session(script, tmp_path, byte_faults=[fault])
    assert device.plan.applied == [fault]
    assert_intact(events, script)
    counters = drivers[0].link_counters()
    if fault.kind in ("corrupt", "truncate", "drop"):
        damaged = ("bad_crc", "bad_length", "truncated", "short", "bad_escape", "out_of_order")
        assert sum(counters.get(k, 0) for k in damaged) > 0
    if fault.kind == "garbage":
        assert counters["garbage"] >= 24
    if fault.kind == "disconnect":  # the host saw its port go and came back as seq went on
        assert len(drivers) == 2 and drivers[0].close_reason is not None
        assert drivers[0].lost_fault().extra == {"family": "shuffler"}
        assert drivers[0].lost_fault().code == "device_lost"
        assert drivers[1].next_seq == len(events)


async def test_the_machine_identifies_itself_in_the_link_handshake(tmp_path) -> None:
    """Its INFO rides in the RESET_ACK (issue 16 item 6): ``identified()`` has it at link-up;
    a device that gives none is refused at once (DeviceError ``wrong_device``)."""
    device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(tmp_path / "shuffler"))
    await device.start()
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=lambda e: None)
    async with asyncio.timeout(SESSION_TIMEOUT):
        assert await driver.identified() == {"firmware": FIRMWARE, "serial": SERIAL_NUMBER}
    driver.close()
    await driver.wait_closed()
    await device.stop()
    anonymous = PtyDevice(link_path=str(tmp_path / "anonymous"))
    await anonymous.start()
    mute = await open_device(anonymous.path, device_id=DEVICE_ID, sink=lambda e: None)
    async with asyncio.timeout(SESSION_TIMEOUT):
        with pytest.raises(DeviceError) as info:
            await mute.identified()
    assert info.value.reason == "wrong_device"
    assert "no identity" in str(info.value)
    await mute.wait_closed()
    await anonymous.stop()


async def test_a_host_request_from_the_machine_is_refused_and_never_acknowledged(
        tmp_path) -> None:
    device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(tmp_path / "shuffler"))
    await device.start()
    events: list[Event] = []
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(SESSION_TIMEOUT):
        await driver.connected.wait()
        await until(lambda: driver.status is not None and not device.backlog)
        await device.play([p.RoundSeats(1, (2,))])
        device.send(*p.encode(p.StatusRequest()))
        await driver.wait_closed()
        await until(lambda: device.backlog == 1)
    assert bare(events) == [{"v": 2, "type": "round_start", "seats": [2]}]
    assert driver.close_reason is not None and driver.close_reason.startswith(
        "wrong_device: it sent a frame that is not a shuffler-dealer message (kind 0x11: "
        "StatusRequest is the host's message")
    await device.stop()


async def test_a_hand_the_driver_cannot_decode_is_never_acknowledged(tmp_path) -> None:
    """A HAND that flags a fourth exposed card: skipping it would lose a seat's hand, taking it
    is impossible; it is refused and stays with the machine."""
    device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(tmp_path / "shuffler"))
    await device.start()
    events: list[Event] = []
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(SESSION_TIMEOUT):
        await driver.connected.wait()
        await until(lambda: driver.status is not None and not device.backlog)
        device.send(p.HAND, b"\x00\x01\x01\x10\xd1\xa3\x08")
        await driver.wait_closed()
    assert events == [] and device.backlog == 1
    assert driver.close_reason is not None and "fourth card" in driver.close_reason
    await device.stop()


async def test_opening_a_missing_port_is_a_device_error(tmp_path) -> None:
    with pytest.raises(DeviceError) as info:
        await open_device(str(tmp_path / "nothing"), device_id=DEVICE_ID, sink=lambda e: None)
    assert info.value.reason == "open_failed"


# -- over simulated transports -----------------------------------------------------------------


class WireTransport(asyncio.Transport):
    """The host's serial port, wired to a machine-side Link through a simulated line that
    chunks, loses or delays bytes in both directions."""

    def __init__(self, driver: ShufflerDriver, style: str, rng: random.Random) -> None:
        super().__init__()
        self.driver, self.style, self.rng = driver, style, rng
        self.status = p.Status(p.MachineState.IDLE, p.Mode.QPOKER)
        loop = asyncio.get_running_loop()
        self.machine = LinkRunner(Link(initiator=False, now=loop.time(),
                                       identity=p.encode(p.Info(FIRMWARE, SERIAL_NUMBER))),
                                  lambda data: self._carry(data, driver.data_received),
                                  self._machine_event, clock=loop.time)
        self.machine.start()
        self._closing = False
        self._timers: list[asyncio.TimerHandle] = []

    def _machine_event(self, item: LinkEvent) -> None:
        if isinstance(item, MessageReceived):
            answer = reply(p.decode(item.kind, item.payload), self.status)
            if answer is not None:
                self.machine.send(*p.encode(answer))

    def play(self, script: list[p.Message]) -> None:
        for msg in script:
            self.status = self.status.after(msg)
            self.machine.send(*p.encode(msg))

    def _carry(self, data: bytes, sink: Callable[[bytes], None]) -> None:
        loop = asyncio.get_running_loop()
        size = {"whole": len(data), "bytewise": 1}.get(self.style, 7)
        for i in range(0, len(data), size):
            chunk = data[i:i + size]
            if self.style == "lossy" and self.rng.random() < 0.05:
                continue
            delay = 0.02 if self.style == "delayed" else 0.0
            self._timers.append(loop.call_later(delay, self._deliver, sink, chunk))

    def _deliver(self, sink: Callable[[bytes], None], chunk: bytes) -> None:
        if not self._closing:
            sink(chunk)

    def write(self, data: bytes) -> None:
        self._carry(data, self.machine.data_received)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True
        self.machine.stop()
        for timer in self._timers:
            timer.cancel()
        asyncio.get_running_loop().call_soon(self.driver.connection_lost, None)


@pytest.mark.parametrize("style", ["whole", "bytewise", "lossy", "delayed"])
async def test_the_same_events_arrive_over_any_transport(style: str) -> None:
    script = qpoker_script(random.Random(9), rounds=2,
                           faults=[MachineFault("exposed", 2), MachineFault("jam", 7)])
    events: list[Event] = []
    driver = ShufflerDriver(DEVICE_ID, events.append)
    wire = WireTransport(driver, style, random.Random(1))
    driver.connection_made(wire)
    async with asyncio.timeout(SESSION_TIMEOUT):
        await driver.connected.wait()
        wire.play(script)
        await until(lambda: not wire.machine.link.backlog
                    and len(events) >= len(expected_events(script)))
    assert_intact(events, script)
    assert driver.info["serial"] == SERIAL_NUMBER
    if style == "lossy":
        counters = driver.link_counters()
        assert counters.get("naks_sent", 0) + wire.machine.link.counters["retransmits"] > 0
    driver.close()
    await driver.wait_closed()
    assert not other_tasks()


# -- tabled-sim shuffler as a process ----------------------------------------------------------


def test_the_cli_accepts_the_documented_options() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--game", "qpoker", "--rounds", "2", "--seats", "3,1",
                              "--fault", "jam@2", "--fault", "corrupt@3", "--pace", "0",
                              "--seed", "7", "--link", "/tmp/x", "--forever"])
    assert args.seats == (1, 3) and args.rounds == 2 and args.forever
    assert args.fault == [MachineFault("jam", 2), ByteFault("corrupt", 3)]


async def test_tabled_sim_shuffler_prints_its_path_and_serves_a_seeded_session(tmp_path) -> None:
    """The simulator as ``tabled-sim shuffler`` runs it (``serve``), with ``tabled listen``'s
    part played by the driver: the seeded rounds and the injected faults arrive."""
    code = ("import argparse, asyncio, sys\n"
            "from tabled.simulators.shuffler import add_arguments, serve\n"
            "parser = argparse.ArgumentParser(); add_arguments(parser)\n"
            "sys.exit(asyncio.run(serve(parser.parse_args(sys.argv[1:]))))\n")
    argv = ["--rounds", "2", "--seats", "1,2", "--seed", "3", "--pace", "0.01",
            "--fault", "exposed@dealer", "--fault", "short_deck@2", "--fault", "corrupt@4",
            "--link", str(tmp_path / "shuffler")]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    events: list[Event] = []
    try:
        async with asyncio.timeout(SESSION_TIMEOUT):
            assert proc.stdout is not None
            line = (await proc.stdout.readline()).decode()
            assert line == f"path: {tmp_path / 'shuffler'}\n"
            driver = await open_device(line.split(": ", 1)[1].strip(), device_id=DEVICE_ID,
                                       sink=events.append)
            assert await proc.wait() == 0  # it exits once the host has every message
            await driver.wait_closed()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert_qpoker_rounds_dealt_in_order(events)
    assert [e.seats for e in events if isinstance(e, RoundStart)] == [(1, 2), (1, 2)]
    assert [e.code for e in events if isinstance(e, Fault)] == ["card_exposed", "deck_count"]
    expected = qpoker_script(random.Random(3), rounds=2, seats=(1, 2), faults=[
        MachineFault("exposed", 1, dealer=True), MachineFault("short_deck", 2)])
    assert_intact(events, expected)
