"""The latency benchmark's timed serial device (bench/devices.py): held, it takes its host's
ACKs just before its next send instead of as they arrive, and loses none of them.

Against the real shoe driver on a real pty: the driver acknowledges each frame once it has
it, the held device leaves that ACK in the pty until it sends again, and on release it takes
what waited, so that nothing stays unacknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bench import devices as dev
from tabled.contract.events import Event
from tabled.drivers.shoe import open_device
from tests.waiting import until

Shoe = tuple[dev.PtyFamilyDevice, list[Event]]


@pytest.fixture
async def shoe() -> AsyncIterator[Shoe]:
    """The latency benchmark's shoe, held at its sends while it plays, read by the real shoe
    driver; the events the driver emitted."""
    device = dev.PtyFamilyDevice("shoe", host_bytes_at_sends=True)
    url = await device.start()
    events: list[Event] = []
    driver = await open_device(url, device_id="shoe-1", sink=events.append)
    try:
        async with asyncio.timeout(5):
            await device.simulator.host_connected.wait()
            await until(lambda: device.simulator.backlog == 0)  # what it said on connecting
        yield device, events
    finally:
        driver.close()
        await driver.wait_closed()
        await device.close()


async def test_a_held_device_takes_its_hosts_acks_at_its_next_send(shoe: Shoe) -> None:
    device, events = shoe
    simulator = device.simulator
    first, second, third = dev.shoe_script(3, seed=1)

    simulator.hold_host_bytes(True)
    simulator.send(first.kind, first.payload)
    async with asyncio.timeout(5):
        await until(lambda: len(events) == 1)
    await asyncio.sleep(0.1)  # the driver's ACK has long been written
    assert simulator.backlog == 1, "a held device took its host's ACK as it arrived"

    simulator.send(second.kind, second.payload)  # takes the first ACK, then sends
    assert simulator.backlog == 1
    async with asyncio.timeout(5):
        await until(lambda: len(events) == 2)
    await asyncio.sleep(0.1)
    assert simulator.backlog == 1

    simulator.hold_host_bytes(False)  # what waited is taken now, the rest as it comes
    assert simulator.backlog == 0
    simulator.send(third.kind, third.payload)
    async with asyncio.timeout(5):
        await until(lambda: len(events) == 3 and simulator.backlog == 0)
    assert [e.meta.seq for e in events] == [0, 1, 2]


async def test_the_latency_benchmark_plays_a_held_script_to_the_end(shoe: Shoe) -> None:
    """``play`` with a pace holds the host's bytes for the script and releases them after
    the last frame's: every frame is delivered once and acknowledged."""
    device, events = shoe
    script = dev.shoe_script(40, seed=2)
    await device.play(script, 0.005)
    async with asyncio.timeout(5):
        await until(lambda: len(events) == len(script) and device.simulator.backlog == 0)
    assert [e.meta.seq for e in events] == list(range(len(script)))
    assert sorted(device.written) == list(range(len(script)))
    assert not device.simulator._held
