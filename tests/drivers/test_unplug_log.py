"""A routine unplug is not an error in the log (issue 27): a real simulated shoe on a
pseudo-terminal, unplugged again and again while the host writes to it. pyserial-asyncio-fast
reports a write to a vanished port to the event loop as "Fatal write error on serial transport"
(logged by asyncio at error level, with a traceback): the transport says nothing of it now, and
the connection ends with the port's error as its reason, which the supervisor reports once."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from tabled.contract.logs import configure
from tabled.drivers.shoe import open_device
from tabled.drivers.shoe.protocol import InfoRequest, encode
from tabled.simulators.shoe import ShoeDevice
from tests.drivers.test_shoe_driver import script

#: Unplugs in the test, each with a host write after the port went away.
UNPLUGS = 5


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    mqtt_level = logging.getLogger("mqtt").level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("mqtt").setLevel(mqtt_level)


async def test_writes_to_an_unplugged_shoe_log_no_error_and_no_traceback(tmp_path) -> None:
    stream = io.StringIO()
    configure("debug", "json", stream=stream)  # every line, whatever its level
    reader, dealer, _ = script(seed=3, hands=20, shoes=None)
    device = ShoeDevice(reader, link_path=str(tmp_path / "shoe"))
    await device.start()
    reports = iter(dealer.reports())
    reasons = []
    try:
        for _ in range(UNPLUGS):
            driver = await open_device(device.path, device_id="shoe-1", sink=lambda _: None)
            async with asyncio.timeout(10):
                await driver.connected.wait()
                for _, report in zip(range(5), reports, strict=False):
                    device.report(report)  # the host acknowledges each: writes
                await asyncio.sleep(0.05)
                device.unplug()
                # the host writes before it has heard of the unplug (as its ACKs do)
                driver.send(*encode(InfoRequest()))
                await driver.wait_closed()
            reasons.append(driver.close_reason)
            device.plug()
    finally:
        await device.stop()
    await asyncio.sleep(0.1)  # anything the loop still has to report
    lines = [json.loads(line.lstrip("<0123456789>")) for line in stream.getvalue().splitlines()]
    assert [line for line in lines if line.get("level") in ("error", "critical")] == []
    assert not any("exception" in line or "Traceback" in json.dumps(line) for line in lines)
    assert not any("Fatal" in str(line.get("event")) for line in lines)
    # the connection still ends with the port's own words, for the supervisor to report once
    assert len(reasons) == UNPLUGS and all(reasons), reasons
    assert any("Input/output error" in str(r) for r in reasons), reasons
