"""One way to open any device family: ``open_device(family, url, ...)``.

Owns the mapping from a family name to its driver package (``drivers/<family>/``). Each package
exports ``open_device(url, *, device_id, emit, first_seq=0, **options)``; this module only picks
the package, so adding a family is adding a folder, not an ``if`` in shared code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from tabled.contract.events import Event, Fault

FAMILIES = ("shoe", "shuffler", "dice")


class Device(Protocol):
    """What the supervisor and ``tabled listen`` need of any driver."""

    device_id: str
    family: str
    next_seq: int
    close_reason: str | None
    info: dict[str, Any]

    @property
    def connected(self) -> Any: ...  # an asyncio.Event

    async def wait_closed(self) -> None: ...

    def close(self, reason: str = "closed") -> None: ...

    def lost_fault(self) -> Fault: ...

    def link_counters(self) -> dict[str, int]: ...


async def open_device(family: str, url: str, *, device_id: str, emit: Callable[[Event], None],
                      first_seq: int = 0, **options: Any) -> Device:
    """Open ``url`` with the ``family``'s driver; raises ``tabled.drivers.errors.DeviceError``."""
    if family not in FAMILIES:
        raise ValueError(f"unknown device family {family!r} (known: {', '.join(FAMILIES)})")
    module = importlib.import_module(f"tabled.drivers.{family}")
    device: Device = await module.open_device(url, device_id=device_id, emit=emit,
                                              first_seq=first_seq, **options)
    return device
