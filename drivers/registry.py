"""Device families as plugins: one declaration per family, found through entry points.

A *family* is the driver of one make of device. Each registers a :class:`DeviceFamily` in the
``tabled.drivers`` entry-point group — the three built-in families exactly as a vendor's would
(pyproject.toml) — and everything that needs to know the families asks here: the config (which
families exist, which URLs each can open), the supervisor (how to open one, what kind of device
it is), discovery (which udev subsystem to watch), ``tabled listen`` and the conformance kit
(``tabled.tools.conformance``). No shared code lists the families or branches on one; adding a
family is installing a package (docs/drivers.md).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, Protocol

from tabled.contract.devices import DEVICE_KINDS, DeviceKind
from tabled.contract.events import Fault
from tabled.contract.plugins import plugins
from tabled.drivers.errors import DriverError
from tabled.drivers.sink import EventSink

#: The entry-point group of device families.
ENTRY_POINTS = "tabled.drivers"


class Device(Protocol):
    """What the supervisor and ``tabled listen`` need of any driver."""

    device_id: str
    family: ClassVar[str]
    next_seq: int
    close_reason: str | None
    info: dict[str, Any]

    @property
    def connected(self) -> Any: ...  # an asyncio.Event

    async def wait_closed(self) -> None: ...

    def close(self, reason: str = "closed") -> None: ...

    def lost_fault(self) -> Fault: ...

    def link_counters(self) -> dict[str, int]: ...


#: A family's way to open a device: ``open(url, *, device_id, sink, first_seq=0, **options)``
#: returns the driver, connected to ``sink`` (:mod:`tabled.drivers.sink`), its events numbered
#: from ``first_seq``; it raises :class:`~tabled.drivers.errors.DeviceError` if it cannot open.
#: The options every family takes (the supervisor and the conformance kit pass them):
#: ``serial``, the serial number the configuration pins (a device with another is refused,
#: ``wrong_device``); ``resume``, a :class:`~tabled.drivers.link.Resume` saying what is already
#: durable from the device (the ``device_boot`` and ``device_msg`` of the last durable event),
#: which the driver must not emit again; ``refused``, what the previous connection refused.
OpenDevice = Callable[..., Awaitable[Device]]

#: The names under which a driver's ``link_counters()`` counts damaged input (a frame or a
#: packet dropped for its content or its place): the conformance kit reads these after it has
#: damaged a device's output, and the daemon's metrics show them. Traffic counters (frames,
#: events, retransmits) have other names.
DAMAGE_COUNTERS: Final = frozenset({
    "bad_crc", "bad_length", "bad_escape", "bad_kind", "bad_content", "truncated", "short",
    "oversize", "garbage", "out_of_order", "gaps",
})


@dataclass(frozen=True, slots=True)
class DeviceFamily:
    """One family's declaration.

    ``kind``: what its devices do at a table (:data:`~tabled.contract.devices.DEVICE_KINDS`;
    the games' policies are written in kinds). ``transport``: ``serial`` (a tty: a device path,
    a ``/dev/serial/by-id`` name, a pty, ``socket://``) or ``usb`` (``usb://VVVV:PPPP``); it
    decides the udev subsystem discovery watches. ``check(url, serial)`` says what is wrong
    with a device's settings for this family — a URL it cannot open (``None``: the device is
    found by udev instead), a serial number its identity could not carry — as ``(setting,
    reason)`` pairs, none when they can work: ``check-config`` refuses what ``run`` would.
    """

    name: str
    kind: DeviceKind
    transport: Literal["serial", "usb"]
    summary: str
    open: OpenDevice
    check: Callable[[str | None, str | None], list[tuple[str, str]]]

    @property
    def udev_subsystem(self) -> Literal["tty", "usb"]:
        """The udev subsystem its devices appear in (docs/udev.md)."""
        return "usb" if self.transport == "usb" else "tty"


class UnknownFamily(DriverError, LookupError):
    """No installed family has that name."""


class BadFamily(DriverError):
    """An installed entry point of ``tabled.drivers`` is not a usable family declaration."""


def family_names() -> list[str]:
    """The installed families' names, without loading them (for a command line's choices)."""
    return sorted({entry.name for entry in plugins(ENTRY_POINTS)})


def families() -> Mapping[str, DeviceFamily]:
    """Every installed family by name, each loaded once from its ``tabled.drivers`` entry
    point."""
    return MappingProxyType({name: family(name) for name in family_names()})


@functools.cache
def family(name: str) -> DeviceFamily:
    """The family called ``name``, loaded alone (a table's daemon loads the drivers of its own
    devices' families, not every installed one); :class:`UnknownFamily` names the installed
    ones, :class:`BadFamily` a plugin that does not load or declares something else."""
    entry = next((e for e in plugins(ENTRY_POINTS) if e.name == name), None)
    if entry is None:
        known = ", ".join(family_names()) or "none"
        raise UnknownFamily(f"unknown device family {name!r} (installed: {known})")
    try:
        declared = entry.load()
    except Exception as exc:  # a broken plugin names itself, and stops nothing else
        raise BadFamily(f"device family {entry.name!r} ({entry.value}) does not load: "
                        f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(declared, DeviceFamily):
        raise BadFamily(f"device family {entry.name!r} ({entry.value}) is a "
                        f"{type(declared).__name__}, not a DeviceFamily")
    if declared.name != entry.name or declared.kind not in DEVICE_KINDS:
        raise BadFamily(f"device family {entry.name!r} ({entry.value}) declares name "
                        f"{declared.name!r} and kind {declared.kind!r}")
    return declared


async def open_device(family_name: str, url: str, *, device_id: str,
                      sink: EventSink | Callable[..., None], first_seq: int = 0,
                      **options: Any) -> Device:
    """Open ``url`` with the family's driver; raises
    :class:`~tabled.drivers.errors.DeviceError` (or :class:`UnknownFamily`)."""
    from tabled.drivers.sink import as_sink

    return await family(family_name).open(url, device_id=device_id, sink=as_sink(sink),
                                           first_seq=first_seq, **options)
