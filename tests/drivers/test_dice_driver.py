"""The dice driver against its simulator in a separate process, through pyusb and the
simulated USB bus: a normal session, every family fault and every link fault, unplug and
replug, durability, and no leaked tasks or file descriptors (docs/protocols/dice.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import usb.core
import usb.util

from tabled.contract.events import Event, Fault, NoRoll, Roll, event_to_dict
from tabled.drivers.dice import DiceDriver, open_device
from tabled.drivers.dice.driver import READ_TIMEOUT
from tabled.drivers.dice.protocol import (
    PRODUCT_ID,
    REQUEST_TYPE_IN,
    RETAINED_REPORTS,
    VENDOR_ID,
    DeviceInfo,
    Request,
    ResendReply,
    RollReport,
    SensorFaultCode,
    StatusReport,
    encode_info,
    encode_report,
    encode_resend_reply,
    join_number,
)
from tabled.drivers.dice.usb_transport import UsbAddress
from tabled.drivers.errors import DeviceError
from tabled.drivers.link import Resume
from tabled.simulators.usb_backend import SimBackend

ROLLS = [(3, 4), (6, 6), (1, 1), (2, 5), (5, 5)]
ROLLS_ARG = ",".join(f"{a}-{b}" for a, b in ROLLS)
PACE = 0.05
TABLED_SIM_DICE = [sys.executable, "-m", "tabled.simulators.cli", "dice"]


@dataclass
class Sim:
    proc: subprocess.Popen[str]
    socket: str
    url: str

    @property
    def running(self) -> bool:
        return self.proc.poll() is None


@contextlib.contextmanager
def simulator(*args: str) -> Iterator[Sim]:
    """``tabled-sim dice`` in its own process, on a socket of its own."""
    folder = tempfile.mkdtemp(prefix="dice-", dir="/tmp")  # AF_UNIX paths are short
    path = os.path.join(folder, "bus.sock")
    proc = subprocess.Popen([*TABLED_SIM_DICE, "--socket", path, *args],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == f"socket: {path}\n"
        url = proc.stdout.readline().removeprefix("url: ").strip()
        yield Sim(proc, path, url)
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@contextlib.asynccontextmanager
async def no_leaks() -> AsyncIterator[None]:
    """Fails the test if it leaves a task or a file descriptor behind."""
    tasks_before = asyncio.all_tasks()
    fds_before = open_fds()
    yield
    await asyncio.sleep(0.05)
    assert asyncio.all_tasks() <= tasks_before
    assert open_fds() <= fds_before


async def supervise(sim: Sim, emit: Any, **options: Any) -> list[DiceDriver]:
    """What the daemon's supervisor does: connect, wait for the loss, reconnect — until the
    simulator has delivered its script and exited."""
    drivers: list[DiceDriver] = []
    next_seq = 0
    async with asyncio.timeout(25):
        while True:
            try:
                driver = await open_device(sim.url, device_id="dice-1", sink=emit,
                                           first_seq=next_seq, **options)
            except DeviceError:
                if not sim.running:
                    return drivers
                await asyncio.sleep(0.05)
                continue
            drivers.append(driver)
            await driver.wait_closed()
            next_seq = driver.next_seq


async def until(condition: Any, within: float = 10.0) -> None:
    """Poll ``condition`` (the driver's status has no change notification; heartbeats come
    every T_STATUS), failing after ``within`` seconds."""
    async with asyncio.timeout(within):
        for _ in itertools.count():
            if condition():
                return
            await asyncio.sleep(0.05)


def rolls_of(events: list[Event]) -> list[tuple[int, int]]:
    return [e.dice for e in events if isinstance(e, Roll)]


def assert_stamped(events: list[Event]) -> None:
    assert [e.meta.seq for e in events] == list(range(len(events)))
    assert {e.meta.device for e in events} == {"dice-1"}
    assert all(e.meta.ts and e.meta.ts.endswith("Z") for e in events)


async def test_a_session_arrives_intact_with_info_stamps_and_a_clean_loss() -> None:
    events: list[Event] = []
    async with no_leaks():
        with simulator("--rolls", ROLLS_ARG, "--pace", str(PACE)) as sim:
            drivers = await supervise(sim, events.append)
    assert rolls_of(events) == ROLLS
    assert_stamped(events)
    assert [e.meta.msg for e in events] == list(range(len(ROLLS)))
    assert len({e.meta.boot for e in events}) == 1
    assert all(0.93 <= e.extra["confidence"] <= 1.0 and "cocked" not in e.extra
               for e in events)
    driver = drivers[0]
    assert driver.info == {"firmware": "2.1.0", "serial": "DS-0001", "protocol": "1",
                           "usb": "1209:0001"}
    assert driver.family == "dice"
    assert not driver.connected.is_set()
    assert driver.close_reason is not None and driver.close_reason.startswith("device_gone")
    lost = driver.lost_fault()
    assert (lost.code, lost.extra["family"]) == ("device_lost", "dice")
    counters = driver.link_counters()
    assert counters["reports"] == counters["events"] == len(ROLLS)


TABLE_FAULTS = {
    "off_table@2": [Roll(dice=(3, 4)), NoRoll(reason="off_table"), Roll(dice=(6, 6))],
    "off_table@2:3": [Roll(dice=(3, 4)), NoRoll(reason="off_table"), Roll(dice=(6, 6))],
    "cocked@2": [Roll(dice=(3, 4)), Roll(dice=(6, 6)), Fault(code="cocked_die")],
    "sensor@2:3": [Roll(dice=(3, 4)), Fault(code="sensor_fault"), Roll(dice=(6, 6))],
}


@pytest.mark.parametrize("fault", list(TABLE_FAULTS))
async def test_table_faults_arrive_as_their_events(fault: str, event_validator: Any) -> None:
    """craps Art. 1: a die off the table is no roll; a cocked die is read by its clearest face
    (the roll stands, with an informational cocked_die fault); a sensor fault keeps its code."""
    events: list[Event] = []
    with simulator("--rolls", "3-4,6-6", "--pace", str(PACE), "--fault", fault) as sim:
        await supervise(sim, events.append)
    for event in events:
        event_validator.validate(event_to_dict(event))
    expected = TABLE_FAULTS[fault]
    assert [(type(e), getattr(e, "dice", None), getattr(e, "code", None)) for e in events] == [
        (type(e), getattr(e, "dice", None), getattr(e, "code", None)) for e in expected]
    assert_stamped(events)
    if fault.startswith("off_table"):
        assert events[1].extra["dice_off_table"] == ([1, 2] if fault.endswith(":3") else [2])
    if fault == "cocked@2":
        roll, cocked = events[1], events[2]
        assert roll.extra["cocked"] is True and roll.extra["confidence"] <= 0.8
        assert roll.extra["cocked_dice"] == [2]  # the roll names the die, not only the fault
        assert cocked.extra["cocked_dice"] == [2]
        assert isinstance(cocked, Fault) and "craps.art1" in (cocked.detail or "")
        assert cocked.meta.msg == roll.meta.msg
    if fault == "sensor@2:3":
        assert isinstance(events[1], Fault)
        assert events[1].extra["device_code"] == SensorFaultCode.CALIBRATION_LOST
        assert events[1].detail == "device code 3: calibration lost"


LINK_FAULTS = {
    "drop@2": ("gaps",),
    "drop@5": ("gaps",),  # the last report: found by the next heartbeat
    "corrupt@3": ("bad_crc",),
    "truncate@2": ("bad_length",),
    "garbage@2:28": ("bad_crc", "bad_length"),  # junk packets of 20 and 8 bytes
    "stall@2:0.6": (),
    "unplug@2:0.4": (),
    "disconnect@4:0.3": (),
}


@pytest.mark.parametrize("fault", list(LINK_FAULTS))
async def test_link_faults_lose_and_duplicate_nothing(fault: str) -> None:
    events: list[Event] = []
    async with no_leaks():
        with simulator("--rolls", ROLLS_ARG, "--pace", str(PACE), "--fault", fault) as sim:
            drivers = await supervise(sim, events.append)
    assert rolls_of(events) == ROLLS
    assert [e.meta.msg for e in events] == list(range(len(ROLLS)))
    assert_stamped(events)
    counters: dict[str, int] = {}
    for driver in drivers:
        for name, value in driver.link_counters().items():
            counters[name] = counters.get(name, 0) + value
    for name in LINK_FAULTS[fault]:
        assert counters.get(name, 0) >= 1, (name, counters)
    if fault.startswith(("unplug", "disconnect")):
        assert len(drivers) == 2  # the unplug reached the driver; the replug was reconnected
        assert "No such device" in (drivers[0].close_reason or "")
        assert drivers[0].close_reason.startswith("device_gone")
    else:
        assert len(drivers) == 1


async def test_a_stall_longer_than_the_silence_timeout_reconnects_and_loses_nothing() -> None:
    """Delivery 5: nothing for T_SILENCE -> link down; the next connection resumes."""
    events: list[Event] = []
    with simulator("--rolls", "3-4,6-6,1-1", "--pace", str(PACE), "--fault", "stall@2:2") as sim:
        drivers = await supervise(sim, events.append, t_silence=1.5)
    assert rolls_of(events) == [(3, 4), (6, 6), (1, 1)]
    assert drivers[0].close_reason == "link_down: silence"
    assert_stamped(events)


class Journal:
    """A sink with the daemon's durability barrier: events count once ``commit()`` says so."""

    def __init__(self, refuse: int = 0, keep_refused: bool = False) -> None:
        self.staged: list[Event] = []
        self.durable: list[Event] = []
        self.refuse = refuse
        self.keep_refused = keep_refused

    def emit(self, event: Event) -> None:
        self.staged.append(event)

    def commit(self) -> bool:
        staged, self.staged = self.staged, []
        if self.refuse:
            self.refuse -= 1
            if self.keep_refused:  # the commit reached the disk, the host died before its ACK
                self.durable.extend(staged)
            return False
        self.durable.extend(staged)
        return True


async def test_a_report_that_could_not_be_made_durable_is_not_acknowledged() -> None:
    """Delivery 2: no ACK without a commit; the sensor delivers it again next connection."""
    journal = Journal(refuse=1)
    with simulator("--rolls", "3-4,6-6", "--pace", str(PACE)) as sim:
        drivers = await supervise(sim, journal)
    assert drivers[0].close_reason == "link_down: not_durable"
    assert rolls_of(journal.durable) == [(3, 4), (6, 6)]


async def test_resume_acknowledges_what_the_journal_already_holds_without_emitting_it() -> None:
    """Delivery 1: a host that committed report 0 but never acknowledged it (a crash between
    commit and ACK) is told so at the next connection: exactly once."""
    journal = Journal(refuse=1, keep_refused=True)
    with simulator("--rolls", "3-4,6-6", "--pace", "0.3") as sim:
        first = None
        async with asyncio.timeout(10):
            while first is None:
                with contextlib.suppress(DeviceError):
                    first = await open_device(sim.url, device_id="dice-1", sink=journal)
            await first.wait_closed()
            assert first.close_reason == "link_down: not_durable"
            committed = journal.durable[-1]
            resume = Resume(committed.meta.boot, committed.meta.msg)
            second = await open_device(sim.url, device_id="dice-1", sink=journal,
                                       first_seq=first.next_seq, resume=resume)
            await second.wait_closed()
    assert rolls_of(journal.durable) == [(3, 4), (6, 6)]
    assert second.link_counters()["resent_already_durable"] == 1


async def test_reports_forgotten_while_no_host_was_there_are_named_lost_at_resume() -> None:
    """Delivery 1: the host's journal ends at report k of this boot; away longer than the
    sensor's memory lasts (RETAINED_REPORTS), it finds the sensor holding only the last 64:
    the reports between are named lost (fault ``link_errors``), never skipped in silence
    (the crash campaign, a daemon killed again and again just after each start, found them
    skipped)."""
    journal = Journal()
    count = RETAINED_REPORTS + 40
    with simulator("--count", str(count), "--seed", "3", "--pace", "0.01") as sim:
        async with asyncio.timeout(20):
            first = None
            while first is None:
                with contextlib.suppress(DeviceError):
                    first = await open_device(sim.url, device_id="dice-1", sink=journal)
            await until(lambda: journal.durable)
            first.close()
            await first.wait_closed()
            await asyncio.sleep(count * 0.01 + 0.5)  # the script played out, no host there
            last = journal.durable[-1].meta
            kept_from = count - RETAINED_REPORTS
            assert last.msg is not None and last.msg + 1 < kept_from
            drivers = await supervise(sim, journal, resume=Resume(last.boot, last.msg))
    lost = [e for e in journal.durable if isinstance(e, Fault) and e.code == "link_errors"]
    assert len(lost) == 1
    assert lost[0].detail == f"dice reports {last.msg + 1}-{kept_from - 1} lost"
    assert lost[0].extra["lost_reports"] == kept_from - 1 - last.msg
    numbers = [e.meta.msg for e in journal.durable if isinstance(e, (Roll, NoRoll))]
    assert numbers == [*range(last.msg + 1), *range(kept_from, count)]
    assert drivers[0].link_counters()["reports_lost"] == kept_from - 1 - last.msg


async def test_a_boot_id_that_does_not_match_resumes_from_the_device() -> None:
    journal = Journal()
    with simulator("--rolls", "3-4,6-6", "--pace", str(PACE)) as sim:
        await supervise(sim, journal, resume=Resume(boot_id=1, last=0))
    assert rolls_of(journal.durable) == [(3, 4), (6, 6)]


async def test_reset_clears_the_latched_sensor_fault() -> None:
    """Control request RESET: the fault latched in STATUS clears."""
    events: list[Event] = []
    async with no_leaks():
        with simulator("--rolls", "3-4", "--pace", str(PACE), "--fault", "sensor@1:2",
                       "--forever") as sim:
            driver = await open_device(sim.url, device_id="dice-1", sink=events.append)
            await until(lambda: driver.status is not None and driver.status.fault is not None)
            assert driver.status is not None
            assert driver.status.fault == SensorFaultCode.ILLUMINATION_FAILURE
            await driver.reset_sensor()
            await until(lambda: driver.status is not None and driver.status.fault is None)
            driver.close()
            await driver.wait_closed()
            with pytest.raises(DeviceError):
                await driver.reset_sensor()
    assert driver.close_reason == "closed"


async def test_close_returns_within_one_read_timeout_and_releases_the_interface() -> None:
    events: list[Event] = []
    arrived = asyncio.Event()

    def emit(event: Event) -> None:
        events.append(event)
        arrived.set()

    async with no_leaks():
        with simulator("--rolls", "3-4", "--pace", "0.01", "--forever") as sim:
            driver = await open_device(sim.url, device_id="dice-1", sink=emit)
            started = time.monotonic()
            driver.close("shutdown")
            await driver.wait_closed()
            assert time.monotonic() - started < READ_TIMEOUT + 0.5
            # released: another host can claim the sensor at once
            again = await open_device(sim.url, device_id="dice-1", sink=emit)
            async with asyncio.timeout(5):
                await arrived.wait()
            again.close()
            await again.wait_closed()
    assert driver.close_reason == "shutdown"
    assert rolls_of(events) == [(3, 4)]


async def test_open_errors_are_device_errors_with_a_reason(tmp_path: Any) -> None:
    with pytest.raises(DeviceError) as info:
        await open_device("usb://zz:01", device_id="dice-1", sink=print)
    assert info.value.reason == "bad_url"
    with pytest.raises(DeviceError) as info:
        await open_device(f"usb://1209:0001?backend=sim:{tmp_path}/none.sock",
                          device_id="dice-1", sink=print)
    assert (info.value.reason, info.value.device) == ("not_found", "dice-1")
    with simulator("--rolls", "3-4", "--forever") as sim:
        with pytest.raises(DeviceError) as info:
            await open_device(sim.url.replace("DS-0001", "DS-9999"), device_id="dice-1",
                              sink=print)
        assert info.value.reason == "not_found"


class ForgetfulSensor:
    """A transport stand-in: a sensor that forgot reports 0-2 before the host came."""

    address = UsbAddress(VENDOR_ID, PRODUCT_ID)

    def __init__(self) -> None:
        self.packets = [encode_report(RollReport(n, 2, n, 99)) for n in (3, 4)]
        self.acks: list[int] = []
        self.closed = False

    def control_in(self, request_type: int, request: int, value: int, index: int,
                   length: int) -> bytes:
        replies = {Request.GET_INFO: encode_info(DeviceInfo(1, (2, 1, 0), 7, "DS-0001")),
                   Request.GET_STATUS: encode_report(StatusReport(5, 0)),
                   Request.RESEND: encode_resend_reply(ResendReply(3, 2))}
        return replies[Request(request)]

    def control_out(self, request_type: int, request: int, value: int, index: int) -> None:
        self.acks.append(join_number(value, index))

    def read(self, endpoint: int, size: int, timeout: float) -> bytes | None:
        if self.packets:
            return self.packets.pop(0)
        time.sleep(timeout)
        return None

    def close(self) -> None:
        self.closed = True


async def test_reports_the_sensor_no_longer_holds_arrive_as_a_link_errors_fault() -> None:
    """Delivery 3: a RESEND reply that starts later than asked -> fault link_errors."""
    events: list[Event] = []
    sensor = ForgetfulSensor()
    driver = DiceDriver(sensor, "dice-1", events.append)  # type: ignore[arg-type]
    await driver.start()
    await until(lambda: len(events) == 3)
    driver.close()
    await driver.wait_closed()
    lost = events[0]
    assert isinstance(lost, Fault) and lost.code == "link_errors"
    assert (lost.detail, lost.extra["lost_reports"]) == ("dice reports 0-2 lost", 3)
    assert rolls_of(events) == [(2, 3), (2, 4)]
    # each after the commit of what it acknowledges; reports that arrive together are made
    # durable in one commit and acknowledged by one cumulative ACK
    assert sensor.acks in ([4, 5], [5])
    assert sensor.closed
    assert driver.link_counters()["reports_lost"] == 3


def test_pyusb_sees_the_simulated_sensor_as_real_hardware() -> None:
    """The backend across processes: find by ids and serial, string descriptors, claims and
    stalls as libusb reports them, and errno 19 after an unplug."""
    with simulator("--rolls", "3-4", "--pace", "0.3", "--fault", "unplug@1:5",
                   "--forever") as sim:
        backend = SimBackend(sim.socket)
        other = SimBackend(sim.socket)
        try:
            device = usb.core.find(idVendor=VENDOR_ID, idProduct=PRODUCT_ID,
                                   serial_number="DS-0001", backend=backend)
            assert device is not None
            assert (device.product, device.manufacturer) == ("Electronic dice sensor", "tabled")
            endpoint = device[0][(0, 0)][0]
            assert (endpoint.bEndpointAddress, endpoint.wMaxPacketSize) == (0x81, 20)
            device.set_configuration()
            usb.util.claim_interface(device, 0)
            rival = usb.core.find(idVendor=VENDOR_ID, idProduct=PRODUCT_ID, backend=other)
            with pytest.raises(usb.core.USBError) as busy:
                usb.util.claim_interface(rival, 0)
            assert busy.value.errno == errno.EBUSY
            with pytest.raises(usb.core.USBError) as stall:
                device.ctrl_transfer(REQUEST_TYPE_IN, 0x7F, 0, 0, 8)
            assert stall.value.errno == errno.EPIPE
            with pytest.raises(usb.core.USBError) as gone:
                while True:  # heartbeats until the unplug at the first report
                    with contextlib.suppress(usb.core.USBTimeoutError):
                        device.read(0x81, 20, timeout=200)
            assert gone.value.errno == errno.ENODEV
            assert usb.core.find(idVendor=VENDOR_ID, backend=other) is None
            usb.util.dispose_resources(device)
            usb.util.dispose_resources(rival)
        finally:
            backend.close()
            other.close()


@pytest.mark.parametrize("args", [["--fault", "jam@1"], ["--fault", "sensor@1:9"],
                                  ["--rolls", "7-1"], ["--rolls", "1-1", "--fault", "drop@3"]])
def test_the_simulator_refuses_a_script_it_cannot_play(args: list[str]) -> None:
    result = subprocess.run([*TABLED_SIM_DICE, "--socket", "/tmp/never.sock", *args],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert result.stdout == ""
