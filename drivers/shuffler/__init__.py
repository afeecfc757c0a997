"""The automatic shuffler-dealer family (Q Poker hands of three, baccarat one card face up).

Owns nothing but the entry point the supervisor and ``tabled listen`` call: :func:`open_device`.
The wire protocol is in :mod:`tabled.drivers.shuffler.protocol` (docs/protocols/shuffler.md), the
normalization in :mod:`tabled.drivers.shuffler.driver`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabled.contract.events import Event
from tabled.drivers.serial_device import open_serial
from tabled.drivers.shuffler.driver import ShufflerDriver


async def open_device(
    url: str,
    *,
    device_id: str,
    emit: Callable[[Event], None],
    first_seq: int = 0,
    **options: Any,
) -> ShufflerDriver:
    """Open the shuffler-dealer at ``url`` (a device path, a by-id name, a pty, ``socket://``)
    and return its driver; the link comes up on its own (await ``connected``). ``options`` go
    to :class:`ShufflerDriver` (``link_options``, ``clock``). Raises DeviceError."""
    driver = await open_serial(
        url, lambda: ShufflerDriver(device_id, emit, first_seq=first_seq, **options)
    )
    assert isinstance(driver, ShufflerDriver)  # open_serial returns what the factory built
    return driver


__all__ = ["ShufflerDriver", "open_device"]
