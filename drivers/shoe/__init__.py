"""The card-reading shoe (baccarat): protocol, driver, and its family declaration.

A serial family over the shared framing and link (docs/protocols/shoe.md). The supervisor and
``tabled listen`` open a shoe through the family registry (``tabled.drivers.registry``), which
finds :data:`FAMILY` through the ``tabled.drivers`` entry point.
"""

from __future__ import annotations

from typing import Any

from tabled.drivers.registry import DeviceFamily
from tabled.drivers.serial_device import BAUDRATE, check_serial_settings, open_serial
from tabled.drivers.shoe.driver import ShoeDriver
from tabled.drivers.sink import EventSink

__all__ = ["FAMILY", "ShoeDriver", "open_device"]


async def open_device(
    url: str, *, device_id: str, sink: EventSink, first_seq: int = 0, **options: Any,
) -> ShoeDriver:
    """Open the shoe at ``url`` (a device path, a by-id name, a pty or a pyserial URL) and start
    its link; events go to ``sink`` numbered from ``first_seq``. ``options``: ``baudrate``, and
    ``clock``/``link_options`` for :class:`ShoeDriver`. Raises DeviceError if it cannot open."""
    baudrate = int(options.pop("baudrate", BAUDRATE))
    driver = await open_serial(
        url, lambda: ShoeDriver(device_id, sink, first_seq=first_seq, **options),
        baudrate=baudrate,
    )
    assert isinstance(driver, ShoeDriver)
    return driver


FAMILY = DeviceFamily(
    name="shoe", kind="shoe", transport="serial",
    summary="a card-reading shoe, multi-deck (serial)",
    open=open_device, check=check_serial_settings,
)
