"""The serial adapter and the simulator base over a real pseudo-terminal, with byte faults.

A minimal family (one message kind carrying a counter) stands in for the real ones, so this
file proves the shared layers alone: every message arrives once, in order, through corruption,
truncation, dropped bytes, garbage, stalls and an unplug/replug; nothing leaks.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from tabled.contract.events import Event, Fault
from tabled.drivers.errors import DeviceError
from tabled.drivers.link import FIRST_FAMILY_KIND
from tabled.drivers.serial_device import SerialDevice, open_serial
from tabled.simulators.faults import ByteFault
from tabled.simulators.pty_device import PtyDevice

COUNT = FIRST_FAMILY_KIND


class CounterDriver(SerialDevice):
    family = "test"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.values: list[int] = []

    def message_received(self, kind: int, payload: bytes) -> None:
        self.values.append(int.from_bytes(payload, "big"))
        self.emit(Fault(code="test", detail=str(self.values[-1])))


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


async def connect(path: str, events: list[Event], first_seq: int = 0) -> CounterDriver:
    return await open_serial(path, lambda: CounterDriver("dev-1", events.append,
                                                         first_seq=first_seq))


@pytest.mark.parametrize(
    "faults",
    [
        [],
        [ByteFault("corrupt", 3), ByteFault("corrupt", 10)],
        [ByteFault("truncate", 5)],
        [ByteFault("drop", 4, 2)],
        [ByteFault("garbage", 2, 20)],
        [ByteFault("stall", 6, 0.4)],
    ],
    ids=["whole", "corrupt", "truncate", "drop", "garbage", "stall"],
)
async def test_every_message_arrives_once_in_order(faults: list[ByteFault], tmp_path) -> None:
    fds_before = open_fds()
    device = PtyDevice(link_path=str(tmp_path / "dev"), faults=faults)
    await device.start()
    events: list[Event] = []
    driver = await connect(device.path, events, first_seq=100)
    async with asyncio.timeout(10):
        await driver.connected.wait()
        for i in range(30):
            device.send(COUNT, i.to_bytes(2, "big"))
        await device.drain()
    assert driver.values == list(range(30))
    assert [e.meta.seq for e in events] == list(range(100, 130))
    assert {e.meta.device for e in events} == {"dev-1"}
    # each event names the device message it came from, for exactly-once across resets
    assert [e.meta.msg for e in events] == list(range(30))
    assert {e.meta.boot for e in events} == {device.boot_id}
    counters = driver.link_counters()
    if faults and faults[0].kind in ("corrupt", "truncate", "drop"):
        assert counters.get("naks_sent", 0) + counters.get("duplicates", 0) > 0
        assert sum(counters.get(k, 0) for k in ("bad_crc", "bad_length", "truncated", "short",
                                                "bad_escape", "out_of_order")) > 0
    if faults and faults[0].kind == "garbage":
        assert counters["garbage"] >= 20
    assert len(device.plan.applied) == len(faults)
    driver.close()
    await driver.wait_closed()
    await device.stop()
    await asyncio.sleep(0.05)
    assert open_fds() <= fds_before


async def test_unplug_reaches_the_driver_and_replug_loses_nothing(tmp_path) -> None:
    device = PtyDevice(link_path=str(tmp_path / "dev"))
    await device.start()
    events: list[Event] = []
    driver = await connect(device.path, events)
    async with asyncio.timeout(10):
        await driver.connected.wait()
        device.send(COUNT, b"\x00\x01")
        await device.drain()
        replug = asyncio.create_task(device.replug(0.3))
        await driver.wait_closed()  # the driver sees its port go away
        assert driver.close_reason is not None
        device.send(COUNT, b"\x00\x02")  # sent while unplugged: kept by the device
        await replug
        driver2 = await connect(device.path, events, first_seq=driver.next_seq)
        await driver2.connected.wait()
        await device.drain()
    assert driver.values + driver2.values == [1, 2]
    assert [e.meta.seq for e in events] == [0, 1]
    assert driver.lost_fault().code == "device_lost"
    driver2.close()
    await driver2.wait_closed()
    await device.stop()


async def test_opening_a_missing_port_is_a_device_error(tmp_path) -> None:
    with pytest.raises(DeviceError) as info:
        await connect(str(tmp_path / "nothing"), [])
    assert info.value.reason == "open_failed"


class DurableSink:
    """A sink with a durability barrier, like the daemon's: commit() may fail."""

    def __init__(self) -> None:
        self.staged: list[Event] = []
        self.durable: list[Event] = []
        self.fail = False

    def emit(self, event: Event) -> None:
        self.staged.append(event)

    def commit(self) -> bool:
        if self.fail:
            self.staged.clear()
            return False
        self.durable += self.staged
        self.staged.clear()
        return True


async def test_frames_are_acknowledged_only_after_the_barrier(tmp_path) -> None:
    """End-to-end durability: what the host could not make durable, the device sends again."""
    device = PtyDevice(link_path=str(tmp_path / "dev"))
    await device.start()
    sink = DurableSink()
    sink.fail = True
    driver = await open_serial(device.path, lambda: CounterDriver("dev-1", sink))
    async with asyncio.timeout(10):
        await driver.connected.wait()
        device.send(COUNT, b"\x00\x07")
        await driver.wait_closed()  # the barrier failed: no ACK, the link is dropped
        assert driver.close_reason == "link_down: not_durable"
        assert sink.durable == [] and device.backlog == 1
        sink.fail = False
        driver2 = await open_serial(device.path, lambda: CounterDriver("dev-1", sink))
        await device.drain()
    assert [e.detail for e in sink.durable] == ["7"]
    driver2.close()
    await driver2.wait_closed()
    await device.stop()


class AskingDriver(CounterDriver):
    """Like the real families: asks the device for its info as soon as the link is up."""

    def link_established(self) -> None:
        self.send(COUNT + 1, b"info?")


async def test_a_request_sent_on_link_up_does_not_carry_unsafe_acks_out(tmp_path) -> None:
    """Regression: the ACKs of the first frames of a connection are queued before the LinkUp
    callback runs; a request sent from that callback used to write them out before the
    barrier had made the frames durable, so a refusing host acknowledged what it dropped."""
    device = PtyDevice(link_path=str(tmp_path / "dev"))
    await device.start()
    for i in range(6):
        device.send(COUNT, i.to_bytes(2, "big"))  # waiting for a host: they go out on RESET_ACK
    sink = DurableSink()
    sink.fail = True
    async with asyncio.timeout(10):
        for _ in range(3):  # three refusing hosts
            driver = await open_serial(device.path, lambda: AskingDriver("dev-1", sink))
            await driver.wait_closed()
        assert device.backlog == 6
        sink.fail = False
        good = await open_serial(device.path, lambda: AskingDriver("dev-1", sink))
        await device.drain()
    assert [int(e.detail) for e in sink.durable] == list(range(6))
    good.close()
    await good.wait_closed()
    await device.stop()


async def test_a_socket_url_reaches_a_device_over_tcp() -> None:
    """pyserial's ``socket://`` (a serial-to-Ethernet converter) opens through the same seam,
    and the same link runs over it."""
    from tabled.drivers.link import Link
    from tabled.drivers.link_runner import LinkRunner

    loop = asyncio.get_running_loop()
    served: list[asyncio.StreamWriter] = []

    async def device(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(writer)
        runner = LinkRunner(Link(initiator=False, now=loop.time()), writer.write,
                            lambda _: None, clock=loop.time)
        runner.start()
        for i in range(5):
            runner.send(COUNT, i.to_bytes(2, "big"))
        while data := await reader.read(1024):
            runner.data_received(data)
        runner.stop()

    server = await asyncio.start_server(device, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    events: list[Event] = []
    fifth = asyncio.Event()

    def emit(event: Event) -> None:
        events.append(event)
        if len(events) == 5:
            fifth.set()

    driver = await open_serial(f"socket://127.0.0.1:{port}", lambda: CounterDriver("d", emit))
    async with asyncio.timeout(10):
        await fifth.wait()
    assert driver.values == [0, 1, 2, 3, 4]
    driver.close()
    await driver.wait_closed()
    for writer in served:
        writer.close()
    server.close()
    await server.wait_closed()
