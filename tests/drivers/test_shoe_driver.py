"""The shoe driver against its simulator: over a real pseudo-terminal and over simulated wires.

The proof of issue 3 for the shoe: a seeded shoe's events arrive intact (the same cards in the
same order as the simulator's shuffled shoe, every event once, numbered without a gap), every
family fault and every byte fault arrives as it should, a replug loses and duplicates nothing,
and no task or file descriptor is left behind. The expected stream is always the pure dealer's
script for the same arguments, normalized: what the device meant to say.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import random
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tabled.contract.events import Burn, CardDealt, Event, Fault, ShoeStart, Void, event_to_dict
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import DeviceError
from tabled.drivers.link import Link, LinkEvent, LinkUp, MessageReceived, Resume
from tabled.drivers.link_runner import LinkRunner
from tabled.drivers.shoe import ShoeDriver, open_device
from tabled.drivers.shoe.driver import normalize
from tabled.drivers.shoe.protocol import InfoRequest, Report, ShoeState, ShoeStatus, encode
from tabled.drivers.sink import EventSink
from tabled.games.registry import make_table
from tabled.simulators import shoe as shoe_sim
from tabled.simulators.faults import ByteFault
from tabled.simulators.shoe import (
    FIRMWARE,
    SERIAL,
    Dealer,
    ShoeDevice,
    ShoeFault,
    ShoeReader,
    shuffled_shoe,
)
from tests.waiting import until

DEVICE_ID = "shoe-1"


@pytest.fixture(autouse=True)
async def no_task_left_behind() -> AsyncIterator[None]:
    """Every test ends with nothing of its own still running on the loop."""
    yield
    await asyncio.sleep(0.01)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


#: What the driver and the link stamp on every event: not part of what the shoe said.
STAMPS = ("device", "seq", "ts", "device_boot", "device_msg")


def content(event: Event) -> dict[str, object]:
    """An event as JSON without the stamps of the driver and the link."""
    out = event_to_dict(event)
    for stamp in STAMPS:
        out.pop(stamp, None)
    return out


def script(seed: int, **options: Any) -> tuple[ShoeReader, Dealer, list[dict[str, object]]]:
    """A dealer for the device, and the events its script must arrive as (from a twin dealer
    with the same seed and options)."""
    twin = Dealer(ShoeReader(), rng=random.Random(seed), **options)
    expected = [content(e) for e in map(normalize, twin.reports()) if e is not None]
    reader = ShoeReader()
    return reader, Dealer(reader, rng=random.Random(seed), **options), expected


def resume_after(events: list[Event]) -> Resume | None:
    """What the host already has, as the supervisor tells a new link: a message whose ACK was
    lost in an unplug is sent again and dropped (tabled.drivers.link, "exactly once across
    resets")."""
    if not events:
        return None
    return Resume(events[-1].meta.boot, events[-1].meta.msg)


async def receive(device: ShoeDevice, events: list[Event], count: int,
                  sink: EventSink | Callable[[Event], None] | None = None) -> list[ShoeDriver]:
    """Play the supervisor: open the shoe, reopen it whenever it goes away (numbering on from
    the last driver, telling the link what it already has), until ``count`` events arrived and
    the shoe has nothing unacknowledged."""
    drivers: list[ShoeDriver] = []
    async with asyncio.timeout(20):
        while len(events) < count or device.backlog or device.unplugged.is_set():
            gone = not drivers or drivers[-1].close_reason is not None
            # Not while unplugged: the link then names a pty number that another process on
            # this machine may already have been given.
            if gone and not device.unplugged.is_set():
                first_seq = drivers[-1].next_seq if drivers else 0
                with contextlib.suppress(DeviceError):  # plugged in again a moment later
                    drivers.append(await open_device(device.path, device_id=DEVICE_ID,
                                                     sink=events.append if sink is None else sink,
                                                     first_seq=first_seq,
                                                     resume=resume_after(events)))
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # room for anything extra (a duplicate) to show up
    return drivers


async def close_all(drivers: list[ShoeDriver], device: ShoeDevice) -> None:
    for driver in drivers:
        driver.close()
        await driver.wait_closed()
    await device.stop()
    await asyncio.sleep(0.05)


def play(device: ShoeDevice, dealer: Dealer) -> None:
    for report in dealer.reports():
        device.report(report)


def assert_intact(events: list[Event], expected: list[dict[str, object]]) -> None:
    """Every expected event once, in order, numbered 0.. without a gap, from the one device."""
    assert [content(e) for e in events] == expected
    assert [e.meta.seq for e in events] == list(range(len(expected)))
    assert {e.meta.device for e in events} == {DEVICE_ID}
    numbers = [e.meta.msg for e in events]
    assert numbers == sorted(set(numbers))  # each device message once, in order


# -- the normal session --------------------------------------------------------------------------


async def test_a_seeded_shoe_arrives_intact_and_deals_real_baccarat(tmp_path,
                                                                    event_validator) -> None:
    """A whole 8-deck shoe with two demonstration hands (Art. 2, 2.2, 3, 9)."""
    fds_before = open_fds()
    reader, dealer, expected = script(seed=11, demos=2)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    play(device, dealer)
    events: list[Event] = []
    drivers = await receive(device, events, len(expected))
    assert_intact(events, expected)
    assert len(drivers) == 1
    driver = drivers[0]
    # the same cards, in the same order, as the simulator's shuffled shoe
    out_of_shoe = [e.card for e in events if isinstance(e, Burn | CardDealt)]
    assert out_of_shoe == shuffled_shoe(random.Random(11), 8)[:len(out_of_shoe)]
    # the reader cannot see whether a card came out exposed: it claims no face_up (issue 16,
    # the class of item 4: a flag must not say more than the device knows)
    assert all(e.face_up is None for e in events if isinstance(e, CardDealt))
    for event in events:
        assert not list(event_validator.iter_errors(event_to_dict(event)))
    # the rules core settles every hand the dealer dealt: no misdeal, two demonstrations
    table = make_table("baccarat")
    outcomes = [o for e in events for o in table.feed(e) if isinstance(o, Outcome)]
    assert outcomes and all(o.status == "complete" for o in outcomes)
    assert sum(1 for o in outcomes if o.extra.get("demo")) == 2
    assert not table.round_open
    assert driver.info == {"firmware": FIRMWARE, "serial": SERIAL}
    assert isinstance(driver.status, ShoeStatus)
    assert driver.status.state is ShoeState.DEALING
    assert driver.link_counters().get("bad_message", 0) == 0
    assert driver.lost_fault().extra == {"family": "shoe"}
    await close_all(drivers, device)
    assert open_fds() <= fds_before


# -- every family fault --------------------------------------------------------------------------


def _unreadable(events: list[Event]) -> None:
    (fault,) = [e for e in events if isinstance(e, Fault)]
    assert fault.code == "unreadable_card"
    assert fault.extra["device_code"] == 1 and fault.extra["card_no"] == 20
    assert fault.detail == "device fault 1: unreadable card (card 20 of the shoe)"


def _dirty(events: list[Event]) -> None:
    (fault,) = [e for e in events if isinstance(e, Fault)]
    assert fault.code == "shoe_sensor_dirty" and fault.extra["device_code"] == 2


def _empty(events: list[Event]) -> None:
    (fault,) = [e for e in events if isinstance(e, Fault)]
    assert fault.code == "shoe_empty" and fault.extra["device_code"] == 3
    after = events[events.index(fault) + 1]
    assert isinstance(after, ShoeStart)  # the dealer loads the next shoe


def _burn(events: list[Event]) -> None:
    burn = next(e for e in events if isinstance(e, Burn) and e.extra["card_no"] == 20)
    assert burn.card is not None
    assert not any(isinstance(e, CardDealt) and e.extra["card_no"] == 20 for e in events)


def _void(events: list[Event]) -> None:
    (void,) = [e for e in events if isinstance(e, Void)]
    assert void.reason == "dealer_button"
    assert events[events.index(void) + 1].extra["card_no"] == 20


@pytest.mark.parametrize(
    ("kind", "check"),
    [("unreadable", _unreadable), ("dirty", _dirty), ("empty", _empty), ("burn", _burn),
     ("void", _void)],
)
async def test_every_family_fault_arrives_as_its_event(
    kind: str, check: Callable[[list[Event]], None], tmp_path,
) -> None:
    """``KIND@20``: the 20th pull at the shoe (a hand's card: the burns take at most 11)."""
    reader, dealer, expected = script(seed=3, hands=6, shoes=None,
                                      faults=[ShoeFault(kind, 20)])
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    play(device, dealer)
    events: list[Event] = []
    drivers = await receive(device, events, len(expected))
    assert_intact(events, expected)
    check(events)
    await close_all(drivers, device)


async def test_an_unreadable_burn_is_a_burn_of_an_unknown_card(tmp_path) -> None:
    """Pull 1 is the first burn (Art. 2): unread, it is still a burn, never a fault that would
    void a hand it was never part of."""
    reader, dealer, expected = script(seed=3, hands=1, faults=[ShoeFault("unreadable", 1)])
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    play(device, dealer)
    events: list[Event] = []
    drivers = await receive(device, events, len(expected))
    assert_intact(events, expected)
    first = events[1]
    assert isinstance(first, Burn) and first.card is None
    assert content(first) == {"v": 2, "type": "burn", "device_code": 1, "card_no": 1,
                              "unreadable": True}
    assert not any(isinstance(e, Fault) for e in events)
    await close_all(drivers, device)


# -- every byte fault ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [ByteFault("corrupt", 5), ByteFault("truncate", 7), ByteFault("drop", 9, 3),
     ByteFault("garbage", 4, 24), ByteFault("stall", 6, 0.4), ByteFault("disconnect", 12, 0.3)],
    ids=lambda f: f.kind,
)
async def test_every_byte_fault_loses_and_duplicates_nothing(fault: ByteFault, tmp_path) -> None:
    fds_before = open_fds()
    reader, dealer, expected = script(seed=5, hands=4, shoes=None)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"), faults=[fault])
    await device.start()
    play(device, dealer)
    events: list[Event] = []
    drivers = await receive(device, events, len(expected))
    assert_intact(events, expected)
    assert device.plan.applied == [fault]
    counters = drivers[0].link_counters()
    if fault.kind in ("corrupt", "truncate", "drop"):
        damage = ("bad_crc", "bad_length", "truncated", "short", "bad_escape", "out_of_order")
        assert sum(counters.get(k, 0) for k in damage) > 0
    elif fault.kind == "garbage":
        assert counters["garbage"] >= 24
    elif fault.kind == "disconnect":
        assert len(drivers) == 2 and drivers[0].close_reason is not None
        assert drivers[0].lost_fault().code == "device_lost"
    await close_all(drivers, device)
    assert open_fds() <= fds_before


async def test_a_replug_mid_shoe_loses_and_duplicates_nothing(tmp_path) -> None:
    """The shoe unplugged while cards keep coming out: they wait in the shoe for the host."""
    reader, dealer, expected = script(seed=8, hands=10, shoes=None)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    reports = list(dealer.reports())
    half = len(reports) // 2
    events: list[Event] = []
    first = await open_device(device.path, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(10):
        await first.connected.wait()
        for report in reports[:half]:
            device.report(report)
        replug = asyncio.create_task(device.replug(0.3))
        for report in reports[half:]:
            device.report(report)  # while the host is away
        await first.wait_closed()
        await replug
    seq_before = first.next_seq
    drivers = [first, *await receive_from(device, events, len(expected), seq_before)]
    assert_intact(events, expected)
    await close_all(drivers, device)


async def receive_from(device: ShoeDevice, events: list[Event], count: int,
                       first_seq: int) -> list[ShoeDriver]:
    """Reconnect after a replug, numbering on from ``first_seq``, until ``count`` events."""
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=events.append,
                               first_seq=first_seq, resume=resume_after(events))
    async with asyncio.timeout(10):
        await until(lambda: len(events) >= count and not device.backlog)
    return [driver]


class Journal(list[Event]):
    """A sink with a durability barrier, like the daemon's; its third commit "crashes" after
    the events are durable but before the shoe's frames are acknowledged."""

    commits = 0

    def emit(self, event: Event) -> None:
        self.append(event)

    def commit(self) -> bool:
        self.commits += 1
        return self.commits != 3


async def test_what_the_host_already_has_is_not_delivered_twice(tmp_path) -> None:
    """The shoe sends again what was never acknowledged; told what is durable (``resume``,
    through ``open_device``), the new link drops it: exactly once across the reconnect."""
    reader, dealer, expected = script(seed=13, hands=3, shoes=None)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    play(device, dealer)
    journal = Journal()
    drivers = await receive(device, journal, len(expected), sink=journal)
    assert_intact(journal, expected)
    assert drivers[0].close_reason == "link_down: not_durable"
    assert drivers[1].link_counters()["resent_already_durable"] > 0
    await close_all(drivers, device)


# -- transports: whole, a byte at a time, with loss, with delay ----------------------------------


class Wire(asyncio.Transport):
    """One direction of a simulated serial line on the event loop: it hands bytes to ``deliver``
    whole or in pieces, may lose pieces, and may delay them (in order)."""

    def __init__(self, deliver: Callable[[bytes], None], rng: random.Random, *,
                 piece: int | None = None, loss: float = 0.0, delay: float = 0.0) -> None:
        super().__init__()
        self._deliver = deliver
        self._rng, self._piece, self._loss, self._delay = rng, piece, loss, delay
        self._last = 0.0
        self._closing = False
        self.on_close: Callable[[], None] = lambda: None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        data = bytes(data)
        loop = asyncio.get_running_loop()
        for piece in self._pieces(data):
            if self._rng.random() < self._loss:
                continue
            if self._delay:
                self._last = max(loop.time() + self._delay, self._last + 1e-6)
                loop.call_at(self._last, self._arrive, piece)
            else:
                loop.call_soon(self._arrive, piece)

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        if self._piece is None:
            yield data
            return
        while data:
            n = self._rng.randint(1, self._piece)
            yield data[:n]
            data = data[n:]

    def _arrive(self, piece: bytes) -> None:
        if not self._closing:
            self._deliver(piece)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            asyncio.get_running_loop().call_soon(self.on_close)


class WiredShoe:
    """The shoe's device side on a simulated wire: the same Link and the same ShoeReader as
    the pty simulator, without the pty."""

    def __init__(self, reader: ShoeReader, write: Callable[[bytes], None]) -> None:
        self.reader = reader
        loop = asyncio.get_running_loop()
        self.runner = LinkRunner(Link(initiator=False, now=loop.time(), t_silence=60.0,
                                      identity=encode(reader.info)), write,
                                 self._link_event, clock=loop.time)
        self.runner.start()

    def report(self, report: Report) -> None:
        self.runner.send(*encode(report))

    def _link_event(self, item: LinkEvent) -> None:
        if isinstance(item, LinkUp):
            self.report(self.reader.status())
        elif isinstance(item, MessageReceived):
            reply = self.reader.request_received(item.kind, item.payload)
            if reply is not None:
                self.report(reply)


TRANSPORTS = {
    "whole": {},
    "byte_by_byte": {"piece": 1},
    "lossy": {"piece": 16, "loss": 0.03},
    "delayed": {"piece": 16, "delay": 0.02},
}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_any_transport_delivers_the_script_intact(transport: str) -> None:
    reader, dealer, expected = script(seed=21, hands=5, shoes=None,
                                      faults=[ShoeFault("void", 25), ShoeFault("burn", 30)])
    rng = random.Random(transport)
    events: list[Event] = []
    driver = ShoeDriver(DEVICE_ID, events.append)
    to_device = Wire(lambda data: device.runner.data_received(data), rng, **TRANSPORTS[transport])
    device = WiredShoe(reader, Wire(driver.data_received, rng, **TRANSPORTS[transport]).write)
    to_device.on_close = lambda: driver.connection_lost(None)
    driver.connection_made(to_device)
    for report in dealer.reports():
        device.report(report)
    async with asyncio.timeout(20):
        await until(lambda: len(events) >= len(expected) and not device.runner.link.backlog)
    await asyncio.sleep(0.05)
    assert_intact(events, expected)
    assert driver.info == {"firmware": FIRMWARE, "serial": SERIAL}
    if transport == "lossy":
        assert driver.link_counters().get("retransmits", 0) + device.runner.link.counters[
            "retransmits"] > 0
    driver.close()
    await driver.wait_closed()
    device.runner.stop()


# -- the driver's own duties ---------------------------------------------------------------------


async def test_the_shoe_identifies_itself_in_the_link_handshake(tmp_path) -> None:
    """Its DEVICE_INFO rides in the RESET_ACK: the driver knows who it is at link-up, before
    any report, and asks nothing (issue 16 item 6)."""
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=lambda e: None)
    async with asyncio.timeout(5):
        await driver.connected.wait()
    assert driver.info == {"firmware": FIRMWARE, "serial": SERIAL}
    await asyncio.sleep(0.1)
    assert device.ignored == 0
    await close_all([driver], device)


async def test_a_message_the_shoe_must_not_send_is_refused_and_never_acknowledged(
        tmp_path) -> None:
    """A host request coming from the device (or any frame the driver cannot decode as a
    shoe's) is not acknowledged: the driver refuses the device (``wrong_device``) after
    acknowledging what came before it, and the shoe keeps the refused frame. A driver told what
    the last one refused does not even come up while the shoe would send it first again."""
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    events: list[Event] = []
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(5):
        await driver.connected.wait()
        device.report(device.reader.load(8))
        device.send(*encode(InfoRequest()))
        await driver.wait_closed()
        await until(lambda: device.backlog == 1)  # the load was acknowledged, not the request
    assert [e.type for e in events] == ["shoe_start"]
    assert driver.close_reason is not None
    assert driver.close_reason.startswith("wrong_device: it sent a frame that is not a "
                                          "card-reading shoe message (kind 0x20")
    assert driver.link_counters()["refused"] == 1 and "bad_message" not in driver.link_counters()
    assert driver.refused is not None
    again = await open_device(device.path, device_id=DEVICE_ID, sink=events.append,
                              refused=driver.refused)
    async with asyncio.timeout(5):
        await again.wait_closed()
    assert not again.connected.is_set() and again.close_reason == driver.close_reason
    # (the shoe queued its link-up STATUS behind the refused frame: it cannot tell a refusing
    # host from any other)
    assert device.backlog == 2 and [e.type for e in events] == ["shoe_start"]
    await device.stop()


async def test_a_host_request_the_shoe_does_not_know_is_ignored(tmp_path) -> None:
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    driver = await open_device(device.path, device_id=DEVICE_ID, sink=lambda e: None)
    async with asyncio.timeout(5):
        await driver.connected.wait()
        driver.send(0x7E, b"")
        await until(lambda: device.ignored > 0)
    assert device.ignored == 1
    await close_all([driver], device)


async def test_opening_a_missing_shoe_is_a_device_error(tmp_path) -> None:
    with pytest.raises(DeviceError) as info:
        await open_device(str(tmp_path / "none"), device_id=DEVICE_ID, sink=lambda e: None)
    assert info.value.reason == "open_failed"


# -- tabled-sim shoe -----------------------------------------------------------------------------


def cli_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tabled-sim shoe")
    shoe_sim.add_arguments(parser)
    return parser.parse_args(argv)


async def start_serving(args: argparse.Namespace, link: str) -> asyncio.Task[int]:
    """Run ``serve(args)`` and return once it printed the path to open (checked)."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        served = asyncio.create_task(shoe_sim.serve(args))
        async with asyncio.timeout(5):
            await until(lambda: os.path.lexists(link))
    assert stdout.getvalue() == f"path: {link}\n"
    return served


async def test_tabled_sim_shoe_prints_the_path_serves_a_whole_shoe_and_ends(tmp_path) -> None:
    """``tabled-sim shoe --seed 4 --fault unreadable@15 --fault corrupt@3``: the listener gets
    the dealer's whole shoe (more reports than the shoe keeps for an absent host, so the dealer
    waits for it), the fault included; the simulator ends once everything is delivered."""
    link = str(tmp_path / "shoe")
    args = cli_args("--seed", "4", "--fault", "unreadable@15", "--fault", "corrupt@3",
                    "--link", link)
    _, _, expected = script(seed=4, faults=[ShoeFault("unreadable", 15)])
    assert len(expected) > shoe_sim.MAX_BACKLOG
    served = await start_serving(args, link)
    events: list[Event] = []
    driver = await open_device(link, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(10):
        assert await served == 0
    assert_intact(events, expected)
    assert any(isinstance(e, Fault) and e.code == "unreadable_card" for e in events)
    driver.close()
    await driver.wait_closed()
    assert not (tmp_path / "shoe").is_symlink()  # the simulator cleaned up its link


async def test_tabled_sim_shoe_forever_stays_plugged_in_until_cancelled(tmp_path) -> None:
    link = str(tmp_path / "shoe")
    served = await start_serving(cli_args("--cards", "AS,KH", "--forever", "--pace", "0.01",
                                          "--link", link), link)
    events: list[Event] = []
    driver = await open_device(link, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(5):
        await until(lambda: len(events) == 3)
        await asyncio.sleep(0.1)
    assert not served.done()
    assert [e.type for e in events] == ["shoe_start", "card", "card"]
    served.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await served
    async with asyncio.timeout(5):
        await driver.wait_closed()  # the port went away with the simulator
    assert not (tmp_path / "shoe").is_symlink()
