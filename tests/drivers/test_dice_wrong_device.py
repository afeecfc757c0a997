"""Issue 16, item 6, for the USB family: the dice driver identifies the device before it reads a
report (its interface in the descriptors, then GET_INFO: protocol and serial number) and refuses
another (DeviceError ``wrong_device``), acknowledging nothing, so the sensor keeps its reports
for its own host. 1209:0001 is pid.codes' shared test id: another prototype may well carry it.

Real pyusb through the simulated bus; the sensor in its own process (``tabled-sim dice``) or,
for devices the simulator does not play, a device model served in this process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tabled.contract.events import Event, Roll
from tabled.drivers.dice import open_device
from tabled.drivers.dice.protocol import REQUEST_TYPE_IN, DeviceInfo, Request, encode_info
from tabled.drivers.errors import DeviceError
from tabled.simulators.dice import DiceSensor, build_script
from tabled.simulators.usb_backend import UsbSimError, UsbSimServer
from tests.drivers.test_dice_driver import simulator

ROLLS = [(3, 4), (6, 6), (1, 1)]


async def test_a_sensor_with_another_serial_number_is_refused_and_keeps_its_reports() -> None:
    with simulator("--rolls", ",".join(f"{a}-{b}" for a, b in ROLLS), "--pace", "0.02",
                   "--serial", "DS-0002", "--forever") as sim:
        url = f"usb://1209:0001?backend=sim:{sim.socket}"  # no serial in the URL: the pin decides
        await asyncio.sleep(0.3)  # the sensor has made its reports; nobody has read them
        for _ in range(2):
            with pytest.raises(DeviceError) as info:
                await open_device(url, device_id="dice-1", sink=print, serial="DS-0001")
            assert info.value.reason == "wrong_device"
            assert "serial number 'DS-0002', not the configured 'DS-0001'" in str(info.value)
        events: list[Event] = []
        driver = await open_device(url, device_id="dice-1", sink=events.append,
                                   serial="DS-0002")
        async with asyncio.timeout(10):
            while len(events) < len(ROLLS):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        driver.close()
        await driver.wait_closed()
    # every report, from the first: the refusing hosts acknowledged none
    assert [e.dice for e in events if isinstance(e, Roll)] == ROLLS
    assert [e.meta.msg for e in events] == [0, 1, 2]


class OtherPrototype(DiceSensor):
    """Something else on 1209:0001: a HID-class interface with its own endpoint."""

    def descriptors(self) -> dict[str, Any]:
        described = super().descriptors()
        interface = described["configurations"][0]["interfaces"][0][0]
        interface["descriptor"]["bInterfaceClass"] = 0x03
        interface["endpoints"][0]["bEndpointAddress"] = 0x82
        return described


class RefusingPrototype(DiceSensor):
    """The sensor's shape, but not its firmware: every vendor request stalls."""

    def control(self, request_type: int, request: int, value: int, index: int,
                data: bytes, length: int) -> bytes:
        raise UsbSimError("stall", "unknown request")


class NewerSensor(DiceSensor):
    """A sensor speaking protocol 2, whose reports this driver cannot read."""

    def control(self, request_type: int, request: int, value: int, index: int,
                data: bytes, length: int) -> bytes:
        if (request_type, request) == (REQUEST_TYPE_IN, Request.GET_INFO):
            return encode_info(DeviceInfo(2, (3, 0, 0), 1, "DS-0001"))
        return super().control(request_type, request, value, index, data, length)


@contextlib.asynccontextmanager
async def served(model: type[DiceSensor]) -> AsyncIterator[tuple[str, DiceSensor]]:
    folder = tempfile.mkdtemp(prefix="dice-", dir="/tmp")
    path = os.path.join(folder, "bus.sock")
    device = model(build_script(ROLLS, [], random.Random(1)), pace=0.01)
    server = UsbSimServer(device, path)
    await server.start()
    player = asyncio.create_task(device.run_script())
    try:
        yield f"usb://1209:0001?backend=sim:{path}", device
    finally:
        player.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await player
        await server.close()
        os.rmdir(folder)


@pytest.mark.parametrize("model, says", [
    (OtherPrototype, "interface 0 is of class 0x03, not 0xff"),
    (RefusingPrototype, "it refuses the sensor's requests"),
    (NewerSensor, "it speaks protocol 2, not 1"),
])
async def test_a_device_that_is_not_this_drivers_sensor_is_refused(model: type[DiceSensor],
                                                                   says: str) -> None:
    async with served(model) as (url, device):
        await asyncio.sleep(0.1)
        with pytest.raises(DeviceError) as info:
            await open_device(url, device_id="dice-1", sink=print)
        assert info.value.reason == "wrong_device" and info.value.device == "dice-1"
        assert says in str(info.value)
        assert len(device.memory) == len(ROLLS)  # no report acknowledged
