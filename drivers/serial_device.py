"""The thin asyncio adapter for tabled's serial device families.

Owns the meeting point of a transport (pyserial-asyncio-fast, opened from a URL), the host side
of a :class:`~tabled.drivers.link.Link`, and a family's message handling. It does no framing and
knows
no rules: families subclass :class:`SerialDevice` and implement :meth:`identify` (the device's
identity, from the link handshake), :meth:`validate` (may a frame be acknowledged?) and
:meth:`message_received` (decode, then :meth:`emit` normalized events). A device whose identity
is not the family's (or not the configured serial number), or that sends a frame the family
cannot decode, is refused: nothing of it is acknowledged, the connection closes with
``close_reason`` ``wrong_device: ...``. Reconnection is the supervisor's job, not this class's:
when the link or the port fails, the transport is closed and :meth:`wait_closed` returns.
"""

from __future__ import annotations

import asyncio
import errno
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import serial
import serial_asyncio_fast
from msgspec.structs import replace

from tabled.contract.events import Event, Fault, Meta
from tabled.contract.faults import DEVICE_LOST, WRONG_DEVICE
from tabled.contract.timeutil import rfc3339_now
from tabled.drivers.errors import DeviceError, ProtocolError
from tabled.drivers.link import (
    Identity,
    Link,
    LinkError,
    LinkEvent,
    LinkUp,
    MessageReceived,
    PeerRefused,
    Refused,
    Resume,
)
from tabled.drivers.link_runner import LinkRunner
from tabled.drivers.sink import EventSink, as_sink

#: Serial line speed of every tabled serial family (docs/protocols/framing.md).
BAUDRATE = 115_200
#: How long opening a port may take before it counts as failed.
T_OPEN = 5.0

class SerialDevice(asyncio.Protocol):
    """Base of a serial family's driver: one device, one connection, events out.

    ``sink`` (:mod:`tabled.drivers.sink`) receives every normalized event, stamped with the device
    id, this driver's own increasing sequence number (starting at ``first_seq``, so a supervisor can
    continue a device's numbering across reconnects) and a timestamp.
    """

    family: ClassVar[str] = ""
    #: What the family's devices are called in a refusal ("shuffler-dealer").
    device_name: ClassVar[str] = "device"

    def __init__(
        self,
        device_id: str,
        sink: EventSink | Callable[[Event], object],
        *,
        first_seq: int = 0,
        clock: Callable[[], float] = time.monotonic,
        link_options: Mapping[str, Any] | None = None,
        resume: Resume | None = None,
        serial: str | None = None,
        refused: Refused | None = None,
    ) -> None:
        self.device_id = device_id
        #: What the daemon already made durable from this device (see tabled.drivers.link, "Exactly
        #: once across resets"); messages re-sent up to it are dropped by the link.
        self.resume = resume
        #: The serial number the configuration pins, if any: a device with another is refused.
        self.serial = serial
        #: The message a previous connection refused (its link refuses a device that would send
        #: it first again at the handshake, so a refused device never comes up).
        self.refused_before = refused
        #: ``firmware`` and ``serial`` from the device's identity, once the link is up.
        self.info: dict[str, str] = {}
        self._message: tuple[int, int] | None = None  # (boot id, number) being handled
        self._sink = as_sink(sink)
        self.next_seq = first_seq
        self._clock = clock
        self._link_options = dict(link_options or {})
        self.runner: LinkRunner | None = None
        self.counters: Counter[str] = Counter()
        self.transport: asyncio.BaseTransport | None = None
        self.connected = asyncio.Event()
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.close_reason: str | None = None

    # -- for families ------------------------------------------------------------------------

    def identify(self, kind: int, payload: bytes) -> dict[str, str] | None:
        """The device's identity from its RESET_ACK (its family's identity message) as ``info``
        (``firmware``, ``serial``); ProtocolError if it is not this family's. None: this family
        does not identify its devices (the default; then any device is taken)."""
        return None

    def validate(self, kind: int, payload: bytes) -> None:
        """Raise ProtocolError if a frame is not a message this family's device may send: it is
        then never acknowledged and the device is refused. Called before the link acknowledges
        the frame, then :meth:`message_received` handles it."""

    def message_received(self, kind: int, payload: bytes) -> None:
        """Decode one family message (that :meth:`validate` accepted) and :meth:`emit` what it
        means."""
        raise NotImplementedError

    def link_established(self) -> None:
        """The link came up (after the reset handshake): a family may ask for status here."""

    def emit(self, event: Event) -> None:
        """Stamp ``event`` with device id, sequence number and time, and hand it on."""
        boot, number = self._message if self._message is not None else (None, None)
        meta = Meta(device=self.device_id, seq=self.next_seq, ts=rfc3339_now(), boot=boot,
                    msg=number)
        self.next_seq += 1
        self.counters["events"] += 1
        self._sink.emit(replace(event, meta=meta))  # one copy: the event with where it came from

    def send(self, kind: int, payload: bytes = b"") -> None:
        """Send a family message to the device (reliably, in order)."""
        if self.runner is None:
            raise DeviceError("not connected", device=self.device_id, reason="not_connected")
        try:
            self.runner.send(kind, payload)
        except LinkError as exc:
            raise DeviceError(str(exc), device=self.device_id, reason="link_down") from exc

    # -- statistics -------------------------------------------------------------------------

    def link_counters(self) -> dict[str, int]:
        """Every error and traffic counter of this connection: framing, link and content."""
        out: dict[str, int] = dict(self.counters)
        if self.runner is not None:
            out.update(self.runner.link.decoder.counters)
            out.update(self.runner.link.counters)
        return out

    # -- asyncio.Protocol --------------------------------------------------------------------

    @property
    def refused(self) -> Refused | None:
        """The message this connection refused, if it refused one (for the next connection)."""
        return None if self.runner is None else self.runner.link.refusal

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        link = Link(initiator=True, now=self._clock(), resume=self.resume,
                    check_identity=self._identity_refusal, check_message=self._message_refusal,
                    refused=self.refused_before, **self._link_options)
        self.runner = LinkRunner(link, self._write, self._link_event, clock=self._clock,
                                 barrier=self._sink.commit)
        self.runner.start()

    def data_received(self, data: bytes) -> None:
        if self.runner is not None:
            self.runner.data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.runner is not None:
            self.runner.stop()
        self.connected.clear()
        if self.close_reason is None:
            self.close_reason = "port_closed" if exc is None else f"port_error: {exc}"
        if not self._closed.done():
            self._closed.set_result(None)

    # -- lifecycle --------------------------------------------------------------------------

    async def wait_closed(self) -> None:
        """Return when the connection is gone (port lost, link down, or :meth:`close`)."""
        await asyncio.shield(self._closed)

    def close(self, reason: str = "closed") -> None:
        if self.close_reason is None:
            self.close_reason = reason
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
        elif self.transport is None and not self._closed.done():
            self._closed.set_result(None)

    def lost_fault(self) -> Fault:
        """The fault event that says this device is gone (the supervisor emits it)."""
        return Fault(code=DEVICE_LOST, detail=self.close_reason,
                     extra={"family": self.family})

    # -- internals --------------------------------------------------------------------------

    def _identity_refusal(self, identity: Identity | None) -> str | None:
        """The link's identity check: why the device is refused, or None to take it."""
        if identity is None:
            if type(self).identify is SerialDevice.identify:
                return None  # a family that does not identify its devices
            return f"it gave no identity in its link handshake: not a {self.device_name}"
        kind, payload = identity
        try:
            info = self.identify(kind, payload)
        except ProtocolError as exc:
            return f"its identity is not a {self.device_name}'s (kind 0x{kind:02x}: {exc})"
        if info is None:
            return None
        if self.serial is not None and info.get("serial") != self.serial:
            return (f"a {self.device_name} with serial number {info.get('serial')!r}, not the "
                    f"configured {self.serial!r}")
        self.info = info
        return None

    def _message_refusal(self, kind: int, payload: bytes) -> str | None:
        """The link's check of a frame before its ACK: why it is refused, or None."""
        try:
            self.validate(kind, payload)
        except ProtocolError as exc:
            return (f"it sent a frame that is not a {self.device_name} message "
                    f"(kind 0x{kind:02x}: {exc})")
        return None

    def _link_event(self, item: LinkEvent) -> None:
        if isinstance(item, MessageReceived):
            link = self.runner.link if self.runner is not None else None
            if item.number is not None and link is not None and link.peer_boot_id is not None:
                self._message = (link.peer_boot_id, item.number)
            try:
                self.message_received(item.kind, item.payload)
            except ProtocolError:
                self.counters["bad_message"] += 1
            finally:
                self._message = None
        elif isinstance(item, LinkUp):
            self.connected.set()
            self.link_established()
        elif isinstance(item, PeerRefused):
            reason = f"{WRONG_DEVICE}: {item.reason}"
            if self.close_reason is None:
                self.close_reason = reason
            # After the runner has acknowledged what came before the refused frame.
            asyncio.get_running_loop().call_soon(self.close, reason)
        else:
            self.close(f"link_down: {item.reason}")

    def _write(self, data: bytes) -> None:
        transport = self.transport
        if isinstance(transport, asyncio.WriteTransport) and not transport.is_closing():
            transport.write(data)


async def open_serial(
    url: str, protocol_factory: Callable[[], SerialDevice], *, baudrate: int = BAUDRATE,
) -> SerialDevice:
    """Open ``url`` (a device path, a ``/dev/serial/by-id/...`` name, a pty, or pyserial's
    ``socket://``/``loop://``) and connect a family driver to it. Raises DeviceError."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(T_OPEN):
            # exclusive: an advisory lock, so that two openers (the daemon and a stray
            # `tabled listen`) never split one device's messages between them
            protocol = await _connect(loop, protocol_factory, url, baudrate=baudrate,
                                      **({} if "://" in url else {"exclusive": True}))
    except (serial.SerialException, OSError, ValueError, TimeoutError) as exc:
        raise DeviceError(f"cannot open {url}: {exc}", url=url, reason="open_failed") from exc
    assert isinstance(protocol, SerialDevice)
    return protocol


async def _connect(loop: asyncio.AbstractEventLoop,
                   protocol_factory: Callable[[], SerialDevice], url: str,
                   **kwargs: Any) -> asyncio.BaseProtocol:
    """pyserial-asyncio-fast's ``create_serial_connection``, with :class:`_PortTransport` for a
    port with a file descriptor (pyserial's ``socket://`` goes through asyncio's own socket
    transport, as the library does it)."""
    if url.startswith("socket://"):
        _, protocol = await serial_asyncio_fast.create_serial_connection(
            loop, protocol_factory, url, **kwargs)
        return protocol
    port = await loop.run_in_executor(None, lambda: serial.serial_for_url(url, **kwargs))
    protocol = protocol_factory()
    _PortTransport(loop, protocol, port)
    return protocol


#: What a read of a port that is not ready raises: nothing to read yet (pyserial's own list).
_NOT_YET = frozenset({errno.EAGAIN, errno.EALREADY, errno.EWOULDBLOCK, errno.EINPROGRESS,
                      errno.EINTR})


class _PortTransport(serial_asyncio_fast.SerialTransport):
    """pyserial-asyncio-fast's transport, reading a port that has a file descriptor with one
    ``os.read`` when the loop finds it readable. pyserial's ``read()`` wraps that read in two
    ``select`` calls and a timeout object: 58 µs against 21 µs for a frame read 10 ms after the
    last one (the loop had slept), on every device byte's way to the broker. The failures are
    pyserial's, in its words (a pty whose other side went away: "device reports readiness to
    read but returned no data ..."; tests/drivers/test_port_transport.py)."""

    def _read_ready(self) -> None:
        fd = getattr(self._serial, "fd", None)
        if not isinstance(fd, int) or fd < 0:  # loop://, rfc2217://: pyserial reads them
            super()._read_ready()
            return
        try:
            data = os.read(fd, self._max_read_size)
        except OSError as exc:
            if exc.errno in _NOT_YET:
                return
            self._close(exc=serial.SerialException(f"read failed: {exc}"))
            return
        if not data:
            self._close(exc=serial.SerialException(
                "device reports readiness to read but returned no data (device disconnected or "
                "multiple access on port?)"))
            return
        self._protocol.data_received(data)

    def _fatal_error(self, exc: BaseException,
                     message: str = "Fatal error on serial transport") -> None:
        """A port that failed under a read or a write (an unplugged device: EIO, ENXIO) is a
        routine loss, not a bug: the library reports it to the event loop, which logs it at
        error level with a traceback, before the connection ends. Here it only ends the
        connection, with the port's error as its reason (``connection_lost``), which the
        supervisor reports once (``device_lost``). Anything else is still the loop's."""
        if isinstance(exc, (serial.SerialException, OSError)):
            self._abort(exc)
            return
        super()._fatal_error(exc, message)


#: The URL schemes pyserial opens that a table's serial device can sit behind (``loop://`` is
#: for tests, ``rfc2217://`` for a serial server).
SERIAL_SCHEMES = ("socket://", "rfc2217://", "loop://")


#: The longest serial number a serial family's INFO carries (docs/protocols/framing.md).
SERIAL_MAX = 32


def check_serial_settings(url: str | None, serial: str | None) -> list[tuple[str, str]]:
    """What is wrong with a serial device's settings (:attr:`DeviceFamily.check`): its URL is a
    path or a pyserial URL of the schemes above, its serial number what an INFO can carry. Says
    nothing about whether the device is there (that is run time's)."""
    problems = []
    if url is not None and "://" in url and not url.startswith(SERIAL_SCHEMES):
        scheme = url.partition("://")[0]
        problems.append(("url", f"{scheme}:// is not a serial port (a device path such as "
                                f"/dev/ttyUSB0, a /dev/serial/by-id/... name, or "
                                f"{', '.join(SERIAL_SCHEMES)})"))
    elif url is not None and "://" not in url and not url.startswith("/"):
        problems.append(("url", "a serial port is an absolute path such as /dev/ttyUSB0"))
    if serial is not None and not _printable(serial, SERIAL_MAX):
        problems.append(("serial", f"a serial number is 1 to {SERIAL_MAX} printable ASCII "
                                   "characters, without leading or trailing spaces"))
    return problems


def _printable(text: str, longest: int) -> bool:
    return 1 <= len(text) <= longest and text == text.strip() and all(
        " " <= ch <= "~" for ch in text)
