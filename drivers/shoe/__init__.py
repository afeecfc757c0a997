"""The card-reading shoe (baccarat): protocol, driver, and the one way to open it.

A serial family over the shared framing and link (docs/protocols/shoe.md). The supervisor and
``tabled listen`` open a shoe only through :func:`open_device`.
"""

from __future__ import annotations

from typing import Any

from tabled.drivers.serial_device import BAUDRATE, EventSink, open_serial
from tabled.drivers.shoe.driver import ShoeDriver

__all__ = ["ShoeDriver", "open_device"]


async def open_device(
    url: str, *, device_id: str, emit: EventSink, first_seq: int = 0, **options: Any,
) -> ShoeDriver:
    """Open the shoe at ``url`` (a device path, a by-id name, a pty or a pyserial URL) and start
    its link; events go to ``emit`` numbered from ``first_seq``. ``options``: ``baudrate``, and
    ``clock``/``link_options`` for :class:`ShoeDriver`. Raises DeviceError if it cannot open."""
    baudrate = int(options.pop("baudrate", BAUDRATE))
    driver = await open_serial(
        url, lambda: ShoeDriver(device_id, emit, first_seq=first_seq, **options),
        baudrate=baudrate,
    )
    assert isinstance(driver, ShoeDriver)
    return driver
