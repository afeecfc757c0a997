"""The automatic shuffler-dealer family (Q Poker hands of three, baccarat one card face up).

Owns the family declaration (:data:`FAMILY`, found through the ``tabled.drivers`` entry point)
and the way to open a machine, :func:`open_device`. The wire protocol is in
:mod:`tabled.drivers.shuffler.protocol` (docs/protocols/shuffler.md), the normalization in
:mod:`tabled.drivers.shuffler.driver`.
"""

from __future__ import annotations

from typing import Any

from tabled.drivers.registry import DeviceFamily
from tabled.drivers.serial_device import check_serial_settings, open_serial
from tabled.drivers.shuffler.driver import ShufflerDriver
from tabled.drivers.sink import EventSink


async def open_device(
    url: str,
    *,
    device_id: str,
    sink: EventSink,
    first_seq: int = 0,
    **options: Any,
) -> ShufflerDriver:
    """Open the shuffler-dealer at ``url`` (a device path, a by-id name, a pty, ``socket://``)
    and return its driver; the link comes up on its own (await ``connected``). ``options`` go
    to :class:`ShufflerDriver` (``link_options``, ``clock``). Raises DeviceError."""
    driver = await open_serial(
        url, lambda: ShufflerDriver(device_id, sink, first_seq=first_seq, **options)
    )
    assert isinstance(driver, ShufflerDriver)  # open_serial returns what the factory built
    return driver


FAMILY = DeviceFamily(
    name="shuffler", kind="shuffler", transport="serial",
    summary="an automatic shuffler-dealer: hands of three, or a shoe dealt card by card (serial)",
    open=open_device, check=check_serial_settings,
)

__all__ = ["FAMILY", "ShufflerDriver", "open_device"]
