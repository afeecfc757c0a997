"""Device discovery and hot-plug: which configured device is plugged in, and where to open it.

Owns three things: matching udev device records against the configured devices
(:class:`DeviceMatch`), tracking which of them are present (:class:`DeviceTracker`, sans-IO), and
the asyncio stream of those changes (:class:`Discovery`) fed by pyudev's netlink monitor or by
records injected where no udev runs (tests, containers, the simulators) — both sources share
every line after the source. It never opens a device nor starts a driver: the supervisor does,
with :meth:`DeviceRecord.url`, and it is the supervisor that connects and disconnects drivers.
"""

from __future__ import annotations

import asyncio
import errno
import re
import socket
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from types import MappingProxyType, TracebackType
from typing import Literal, NamedTuple, Self, get_args
from urllib.parse import urlencode

import pyudev
import structlog

from tabled.drivers.errors import DeviceError

log = structlog.get_logger(__name__)

Action = Literal["add", "remove", "present"]
Subsystem = Literal["tty", "usb"]
SUBSYSTEMS: tuple[Subsystem, ...] = get_args(Subsystem)
#: The udev actions that change presence; others (change, bind, unbind, move) are ignored.
MONITORED_ACTIONS = frozenset({"add", "remove"})
#: Where udev's 60-serial.rules puts the stable names of USB serial ports.
BY_ID_DIR = "/dev/serial/by-id/"
#: udev device type per subsystem: for USB only the device itself (its node is what libusb
#: opens), not each of its interfaces.
DEVICE_TYPES: Mapping[Subsystem, str | None] = MappingProxyType({"tty": None, "usb": "usb_device"})
#: Netlink receive buffer asked of the kernel. The default (~208 KiB) overflows in a plug storm
#: (a hub with many devices); an overflow is recovered by re-enumerating, but rarely is better.
RECEIVE_BUFFER_SIZE = 8 * 1024 * 1024

_HEX_DIGITS = re.compile(r"[0-9a-f]+")


def parse_hex_id(text: str) -> int:
    """A USB vendor or model id from its hex text (``"0403"``, ``"403"``, ``"0x0403"``, any
    case). Raises ValueError if it is not a 16-bit hex number."""
    digits = text.strip().lower().removeprefix("0x")
    # A regex rather than int() alone, which would take "+4_03" and non-ASCII digits.
    if _HEX_DIGITS.fullmatch(digits) is None or int(digits, 16) > 0xFFFF:
        raise ValueError(f"not a 16-bit hex USB id: {text!r}")
    return int(digits, 16)


def _hex_id_or_none(text: str | None) -> int | None:
    """A device's reported id, or None when it reported none or garbage (it then matches no
    configured id)."""
    if text is None:
        return None
    try:
        return parse_hex_id(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class DeviceRecord:
    """One device as udev (or an injector) describes it at one moment.

    ``action`` is ``add``/``remove`` for a hot-plug event and ``present`` for a device found by
    enumeration at start. ``links`` holds the device's symlinks (``/dev/serial/by-id/...``,
    ``/dev/tabled/...``). Ids are udev's text (``ID_VENDOR_ID``, ``ID_MODEL_ID``,
    ``ID_SERIAL_SHORT``), None where unknown.
    """

    action: Action
    subsystem: Subsystem
    device_node: str | None
    links: tuple[str, ...] = ()
    vendor_id: str | None = None
    model_id: str | None = None
    serial: str | None = None
    sys_path: str = ""

    def __post_init__(self) -> None:
        if self.action not in get_args(Action):
            raise ValueError(f"unknown device action {self.action!r}")
        if self.subsystem not in SUBSYSTEMS:
            raise ValueError(f"unsupported subsystem {self.subsystem!r}")
        if not (self.sys_path or self.device_node):
            raise ValueError("a device record needs a sys_path or a device_node")

    @property
    def key(self) -> str:
        """What identifies this device across its add and remove: the sysfs path, or the node
        for an injected record that has none (a pseudo-terminal)."""
        return self.sys_path or str(self.device_node)

    def url(self) -> str:
        """The URL a driver opens: a ``/dev/serial/by-id`` link (stable across replugs and
        ports) if the device has one, else its node; for USB ``usb://VVVV:PPPP[?serial=...]``.
        Raises ValueError if the record has nothing to open."""
        if self.subsystem == "usb":
            vendor, model = _hex_id_or_none(self.vendor_id), _hex_id_or_none(self.model_id)
            if vendor is None or model is None:
                raise ValueError(f"USB device {self.key} has no vendor/model id")
            query = f"?{urlencode({'serial': self.serial})}" if self.serial else ""
            return f"usb://{vendor:04x}:{model:04x}{query}"
        by_id = sorted(link for link in self.links if link.startswith(BY_ID_DIR))
        if by_id:
            return by_id[0]
        if self.device_node is None:
            raise ValueError(f"tty {self.key} has no device node")
        return self.device_node


@dataclass(frozen=True)
class DeviceMatch:
    """How the config recognises one device: every criterion given must hold.

    Ids are hex text compared as numbers (case and leading zeros do not matter); ``serial`` is
    compared exactly; ``by_id`` is a by-id name or glob (``usb-FTDI_*_A1B2-if00-port0``)
    matched against the names in ``/dev/serial/by-id``, or, if it contains a ``/``, against the
    full path of every link. Set ``subsystem`` from the device's family (``tty`` for the serial
    families, ``usb`` for the dice): a USB serial port shows up twice, as its USB device and as
    its tty, and both carry the same ids.
    """

    vendor_id: str | None = None
    model_id: str | None = None
    serial: str | None = None
    by_id: str | None = None
    subsystem: Subsystem | None = None

    def __post_init__(self) -> None:
        # A config error must be loud at load time, not a device that silently never matches.
        for name in ("vendor_id", "model_id"):
            text = getattr(self, name)
            if text is not None:
                parse_hex_id(text)
        if self.subsystem is not None and self.subsystem not in SUBSYSTEMS:
            raise ValueError(f"unsupported subsystem {self.subsystem!r}")
        if (self.vendor_id, self.model_id, self.serial, self.by_id) == (None, None, None, None):
            # A subsystem alone would claim every serial port of the machine.
            raise ValueError("a device match needs a vendor_id, model_id, serial or by_id")

    def matches(self, record: DeviceRecord) -> bool:
        """Whether ``record`` is the device this match describes."""
        return (
            (self.subsystem is None or record.subsystem == self.subsystem)
            and _same_id(self.vendor_id, record.vendor_id)
            and _same_id(self.model_id, record.model_id)
            and (self.serial is None or record.serial == self.serial)
            and (self.by_id is None or any(map(self._by_id_matches, record.links)))
        )

    def _by_id_matches(self, link: str) -> bool:
        pattern = str(self.by_id)
        if "/" in pattern:
            return fnmatchcase(link, pattern)
        return link.startswith(BY_ID_DIR) and fnmatchcase(link.removeprefix(BY_ID_DIR), pattern)


def _same_id(wanted: str | None, reported: str | None) -> bool:
    return wanted is None or _hex_id_or_none(reported) == parse_hex_id(wanted)


def record_from_pyudev(device: pyudev.Device, action: Action) -> DeviceRecord:
    """The record of a ``pyudev.Device`` (from the monitor or from enumeration)."""
    vendor_id, model_id, serial = _usb_identity(device)
    return DeviceRecord(
        action=action,
        subsystem=device.subsystem,
        device_node=device.device_node,
        links=tuple(sorted(device.device_links)),
        vendor_id=vendor_id,
        model_id=model_id,
        serial=serial,
        sys_path=device.sys_path,
    )


def _usb_identity(device: pyudev.Device) -> tuple[str | None, str | None, str | None]:
    """Vendor id, model id and serial: udev's ``ID_*`` properties, or, where udev does not run
    (enumeration then sees bare sysfs), the attributes of the USB device itself or of the USB
    device a tty hangs from."""
    properties = device.properties
    vendor = properties.get("ID_VENDOR_ID")
    model = properties.get("ID_MODEL_ID")
    serial = properties.get("ID_SERIAL_SHORT")
    if vendor is not None and model is not None:
        return vendor, model, serial
    usb = device if device.device_type == "usb_device" else device.find_parent("usb", "usb_device")
    if usb is None:
        return vendor, model, serial
    return (
        vendor or _sysfs_attribute(usb, "idVendor"),
        model or _sysfs_attribute(usb, "idProduct"),
        serial or _sysfs_attribute(usb, "serial"),
    )


def _sysfs_attribute(device: pyudev.Device, name: str) -> str | None:
    try:
        value: str = device.attributes.asstring(name)
    except (KeyError, OSError, UnicodeDecodeError):
        return None  # absent, or the device went away while we looked
    return value


class DeviceChange(NamedTuple):
    """A configured device appeared (``record.action`` add/present) or went (remove)."""

    device_id: str
    record: DeviceRecord


class DeviceTracker:
    """Sans-IO: turns device records into changes of the configured devices' presence.

    ``feed`` answers a :class:`DeviceChange` for a record that matters and None for one that
    does not, counting why: ``unmatched`` (no configured device), ``duplicate_add`` (already
    present: the monitor starts before enumeration, so a device can be seen by both),
    ``unknown_remove`` (a configured device's remove that was never added), ``ambiguous`` (two
    configured devices match one record: the first in configuration order gets it).
    """

    def __init__(self, matches: Mapping[str, DeviceMatch]) -> None:
        self.matches = dict(matches)
        self.counters: Counter[str] = Counter()
        self._present: dict[str, DeviceChange] = {}

    @property
    def present(self) -> Mapping[str, DeviceChange]:
        """The configured devices present now, by record key."""
        return MappingProxyType(self._present)

    def feed(self, record: DeviceRecord) -> DeviceChange | None:
        """Take one record; the change it makes, if any."""
        if record.action == "remove":
            return self._removed(record)
        if record.key in self._present:
            self.counters["duplicate_add"] += 1
            return None
        device_id = self._match(record)
        if device_id is None:
            self.counters["unmatched"] += 1
            return None
        change = DeviceChange(device_id, record)
        self._present[record.key] = change
        return change

    def _removed(self, record: DeviceRecord) -> DeviceChange | None:
        added = self._present.pop(record.key, None)
        if added is not None:
            # The added record, not the remove's: a remove may come without ids or links (the
            # kernel's, or sysfs already gone), and the consumer wants to know what it had.
            return DeviceChange(added.device_id, replace(added.record, action="remove"))
        self.counters["unknown_remove" if self._match(record) else "unmatched"] += 1
        return None

    def _match(self, record: DeviceRecord) -> str | None:
        found = [device_id for device_id, m in self.matches.items() if m.matches(record)]
        if len(found) > 1:
            self.counters["ambiguous"] += 1
            log.warning("device_match_ambiguous", device_ids=found, sys_path=record.sys_path,
                        chosen=found[0])
        return found[0] if found else None


class UdevSource:
    """pyudev as a source of device records: the netlink monitor and sysfs enumeration.

    ``open`` starts the monitor *before* enumerating, so a device plugged in meanwhile is seen
    at least once (the tracker drops the second sighting). ``receive`` never blocks: it drains
    what the monitor has, to be called when its ``fileno`` is readable. When the kernel dropped
    events (netlink receive buffer overflow) it re-enumerates and answers the difference, so a
    device is never left present after its remove was lost, nor missed after its add was.
    """

    def __init__(
        self,
        subsystems: Iterable[Subsystem],
        *,
        receive_buffer_size: int = RECEIVE_BUFFER_SIZE,
        context: pyudev.Context | None = None,
    ) -> None:
        self.subsystems = tuple(sorted(set(subsystems)))
        self.counters: Counter[str] = Counter()
        self._receive_buffer_size = receive_buffer_size
        self._context = context
        self._monitor: pyudev.Monitor | None = None
        # Every tty/usb device this source has reported present, matched or not, by key: the
        # baseline a re-enumeration is compared with.
        self._known: dict[str, DeviceRecord] = {}

    def open(self) -> list[DeviceRecord]:
        """Start the monitor, then enumerate: the devices present now. Raises DeviceError
        (reason ``udev_unavailable``) when there is no libudev or no netlink."""
        try:
            context = self._context if self._context is not None else pyudev.Context()
            monitor = pyudev.Monitor.from_netlink(context)
            for subsystem in self.subsystems:
                monitor.filter_by(subsystem, DEVICE_TYPES[subsystem])
        except (ImportError, OSError) as exc:
            raise DeviceError(f"cannot open the udev monitor: {exc}",
                              reason="udev_unavailable") from exc
        try:
            monitor.set_receive_buffer_size(self._receive_buffer_size)
        except OSError as exc:
            # Unprivileged, the kernel caps it at net.core.rmem_max: still works, overflows
            # sooner, and an overflow is recovered.
            self.counters["receive_buffer_refused"] += 1
            log.warning("udev_receive_buffer_refused", size=self._receive_buffer_size,
                        error=str(exc))
        monitor.start()
        self._context, self._monitor = context, monitor
        return self._resync()

    def fileno(self) -> int:
        """The monitor's netlink socket, to watch for readability."""
        return int(self._opened().fileno())

    def receive(self) -> list[DeviceRecord]:
        """Every record the monitor has now, in order. Raises DeviceError (reason
        ``udev_monitor_failed``) if the monitor broke in a way re-enumeration cannot mend."""
        records: list[DeviceRecord] = []
        while True:
            try:
                device = self._opened().poll(timeout=0)
            except ValueError:
                # pyudev's translation of libudev's EINVAL: one malformed message (anyone with
                # CAP_NET_ADMIN can send to the group), already consumed; the next may be fine.
                self.counters["bad_message"] += 1
                continue
            except OSError as exc:
                self._recover(exc)
                records.extend(self._resync())
                continue
            if device is None:
                return records
            if device.action not in MONITORED_ACTIONS:
                self.counters["ignored_action"] += 1
                continue
            record = record_from_pyudev(device, device.action)
            if record.action == "remove":
                self._known.pop(record.key, None)
            else:
                self._known[record.key] = record
            records.append(record)

    def close(self) -> None:
        """Drop the monitor (libudev closes its socket when the last reference goes)."""
        self._monitor = None

    def _opened(self) -> pyudev.Monitor:
        if self._monitor is None:
            raise RuntimeError("the udev source is not open")
        return self._monitor

    def _recover(self, exc: OSError) -> None:
        # pyudev's poll raises a bare OSError when the socket has a pending error (POLLERR); the
        # error stays until read, so read it (SO_ERROR clears it) to learn what happened.
        try:
            code = exc.errno or self._take_socket_error()
        except OSError:
            code = None  # not even a socket any more
        if code != errno.ENOBUFS:
            # The cause goes without its traceback: its frames hold the monitor, whose socket
            # would then stay open for as long as anyone keeps this error.
            raise DeviceError(f"udev monitor failed: {exc} (socket error {code})",
                              reason="udev_monitor_failed") from exc.with_traceback(None)
        self.counters["monitor_overflow"] += 1
        log.warning("udev_monitor_overflow", action="re-enumerating")

    def _take_socket_error(self) -> int:
        # fromfd duplicates the descriptor; the duplicate is closed on leaving the block.
        with socket.fromfd(self.fileno(), socket.AF_NETLINK, socket.SOCK_RAW) as sock:
            return sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)

    def _resync(self) -> list[DeviceRecord]:
        """Enumerate, and answer what differs from what was reported: removes for devices gone,
        ``present`` for devices new."""
        current = {record.key: record for record in self._enumerate()}
        gone = [replace(record, action="remove")
                for key, record in self._known.items() if key not in current]
        new = [record for key, record in current.items() if key not in self._known]
        self._known = current
        return gone + new

    def _enumerate(self) -> Iterator[DeviceRecord]:
        context = self._context
        assert context is not None, "enumerating before open"
        for subsystem in self.subsystems:
            device_type = DEVICE_TYPES[subsystem]
            devices = context.list_devices(subsystem=subsystem)
            if device_type is not None:
                devices = devices.match_property("DEVTYPE", device_type)
            for device in devices:
                yield record_from_pyudev(device, "present")


class Discovery:
    """The configured devices' arrivals and departures, as an async iterator of
    :class:`DeviceChange` ``(device_id, record)``.

    ``matches`` is keyed by the configured device id. With ``udev=True`` it listens to pyudev's
    monitor (read on the event loop with ``add_reader``; the devices already plugged come first,
    as ``present``); :meth:`inject` feeds records by hand, with or without udev (containers,
    tests, a simulator's pseudo-terminal). Use it as ``async with Discovery(...) as d: async for
    change in d: ...``; the iteration ends after :meth:`close`, and raises DeviceError if the
    udev monitor broke.
    """

    def __init__(
        self,
        matches: Mapping[str, DeviceMatch],
        *,
        udev: bool = False,
        receive_buffer_size: int = RECEIVE_BUFFER_SIZE,
        context: pyudev.Context | None = None,
    ) -> None:
        self.tracker = DeviceTracker(matches)
        self.source: UdevSource | None = None
        if udev:
            self.source = UdevSource(self.subsystems(matches.values()),
                                     receive_buffer_size=receive_buffer_size, context=context)
        self._queue: asyncio.Queue[DeviceChange | None] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader_fd: int | None = None
        self._closed = False
        self._error: DeviceError | None = None

    @staticmethod
    def subsystems(matches: Iterable[DeviceMatch]) -> set[Subsystem]:
        """The subsystems worth listening to for ``matches`` (both if one does not say)."""
        wanted = {m.subsystem for m in matches}
        return set(SUBSYSTEMS) if None in wanted else {s for s in wanted if s is not None}

    @property
    def present(self) -> Mapping[str, DeviceChange]:
        """The configured devices present now, by record key."""
        return self.tracker.present

    def counters(self) -> dict[str, int]:
        """Why records were dropped, and what the udev source went through."""
        out = dict(self.tracker.counters)
        if self.source is not None:
            out.update(self.source.counters)
        return out

    def start(self) -> None:
        """Open the udev source (if any) and queue the devices already present. Must run on
        the event loop. Raises DeviceError if udev was asked for and cannot be opened."""
        if self._loop is not None or self._closed:
            raise RuntimeError("a Discovery starts once")
        self._loop = asyncio.get_running_loop()
        if self.source is None:
            return
        # Enumeration reads sysfs on the loop: a few hundred small files, once at start.
        self._feed(self.source.open())
        self._reader_fd = self.source.fileno()
        self._loop.add_reader(self._reader_fd, self._source_readable)

    def inject(self, record: DeviceRecord) -> None:
        """Feed one record through the same path as udev's."""
        if self._closed:
            raise RuntimeError("the discovery is closed")
        self._feed([record])

    def close(self) -> None:
        """Stop listening; the iteration ends once what was queued is consumed."""
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._reader_fd is not None:
            self._loop.remove_reader(self._reader_fd)
        self._reader_fd = None
        if self.source is not None:
            self.source.close()
        self._queue.put_nowait(None)

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> DeviceChange:
        change = await self._queue.get()
        if change is None:
            self._queue.put_nowait(None)  # so that every later call ends too
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        return change

    def _feed(self, records: Iterable[DeviceRecord]) -> None:
        for record in records:
            change = self.tracker.feed(record)
            if change is not None:
                if record.action == "remove":
                    log.info("device_removed", device_id=change.device_id, key=record.key)
                else:
                    log.info("device_found", device_id=change.device_id, key=record.key,
                             action=record.action)
                self._queue.put_nowait(change)

    def _source_readable(self) -> None:
        assert self.source is not None
        try:
            records = self.source.receive()
        except DeviceError as exc:
            log.error("udev_monitor_failed", error=str(exc))
            self._error = exc
            self.close()
            return
        self._feed(records)

