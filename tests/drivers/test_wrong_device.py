"""Issue 16, item 6, at the drivers: a serial driver refuses a device that is not its family's
(or not the configured serial number) at the link handshake, before acknowledging any of its
frames, so the device keeps them for the host it was meant for. Real pseudo-terminals, the real
simulators' device side."""

from __future__ import annotations

import asyncio
import random

import pytest

from tabled.contract.events import Event
from tabled.drivers import shoe as shoe_family
from tabled.drivers import shuffler as shuffler_family
from tabled.drivers.shoe.driver import normalize as shoe_normalize
from tabled.drivers.shuffler import protocol as p
from tabled.simulators.shoe import Dealer, ShoeDevice, ShoeReader
from tabled.simulators.shuffler import SERIAL_NUMBER, ShufflerSimulator, qpoker_script
from tests.waiting import until

DEVICE_ID = "dev-1"


async def dealt_shoe(tmp_path, hands: int = 3) -> tuple[ShoeDevice, list[str]]:
    """A shoe on a pty that has dealt ``hands`` hands nobody has read yet, and the event types
    its reports stand for."""
    reader = ShoeReader()
    dealer = Dealer(reader, rng=random.Random(5), hands=hands, shoes=None)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    expected = []
    for report in dealer.reports():
        device.report(report)
        event = shoe_normalize(report)
        if event is not None:
            expected.append(event.type)
    return device, expected


async def refused(open_device, path: str, **options) -> object:
    """Open ``path`` with a family's driver and wait for it to close (it must not come up)."""
    events: list[Event] = []
    driver = await open_device(path, device_id=DEVICE_ID, sink=events.append, **options)
    async with asyncio.timeout(5):
        await driver.wait_closed()
    assert not driver.connected.is_set() and events == []
    return driver


async def test_a_shuffler_driver_refuses_a_shoe_and_the_shoe_keeps_everything(tmp_path) -> None:
    """The bench of the issue: a Q Poker table's shuffler port is (through a stale link) a
    shoe's pty. The shuffler driver must not come up, and must acknowledge nothing: the shoe's
    own host then gets every report."""
    device, expected = await dealt_shoe(tmp_path)
    backlog = device.backlog
    for _ in range(3):  # reconnect attempts refuse it every time
        driver = await refused(shuffler_family.open_device, device.path)
        assert driver.close_reason is not None and driver.close_reason.startswith(
            "wrong_device: its identity is not a shuffler-dealer's (kind 0x16:")
        assert driver.link_counters()["refused"] == 1
        assert "bad_message" not in driver.link_counters()
    assert device.backlog >= backlog  # nothing was acknowledged (plus its link-up statuses)
    events: list[Event] = []
    shoe = await shoe_family.open_device(device.path, device_id=DEVICE_ID, sink=events.append)
    async with asyncio.timeout(10):
        await until(lambda: len(events) >= len(expected) and not device.backlog)
    assert [e.type for e in events] == expected
    shoe.close()
    await shoe.wait_closed()
    await device.stop()


async def test_a_shoe_driver_refuses_a_shuffler_dealer(tmp_path) -> None:
    device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(tmp_path / "shuffler"))
    await device.start()
    for msg in qpoker_script(random.Random(3), rounds=1):
        device.send(*p.encode(msg))
    backlog = device.backlog
    driver = await refused(shoe_family.open_device, device.path)
    assert driver.close_reason is not None and driver.close_reason.startswith(
        "wrong_device: its identity is not a card-reading shoe's (kind 0x20:")
    assert device.backlog == backlog
    await device.stop()


@pytest.mark.parametrize("family", ["shuffler", "shoe"])
async def test_a_device_with_another_serial_number_is_refused(family: str, tmp_path) -> None:
    """The configuration may pin the serial number: the same family's other unit is refused
    the same way (its queued messages belong to another table)."""
    device: ShufflerSimulator | ShoeDevice
    if family == "shuffler":
        device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(tmp_path / "dev"),
                                   serial="SD7-000001")
        await device.start()
        opener, theirs, ours = shuffler_family.open_device, "SD7-000001", SERIAL_NUMBER
        device.send(*p.encode(p.RoundSeats(1, (1, 2))))
    else:
        device = ShoeDevice(ShoeReader(serial="SHOE-0099"), link_path=str(tmp_path / "dev"))
        await device.start()
        opener, theirs, ours = shoe_family.open_device, "SHOE-0099", "SHOE-0001"
        device.report(device.reader.load(8))
    driver = await refused(opener, device.path, serial=ours)
    assert driver.close_reason is not None
    assert f"with serial number {theirs!r}, not the configured {ours!r}" in driver.close_reason
    assert device.backlog >= 1
    events: list[Event] = []
    right = await opener(device.path, device_id=DEVICE_ID, sink=events.append, serial=theirs)
    async with asyncio.timeout(5):
        await right.connected.wait()
        await until(lambda: len(events) == 1)
    assert right.info["serial"] == theirs
    right.close()
    await right.wait_closed()
    await device.stop()
