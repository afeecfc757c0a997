"""A simulated USB bus: a pyusb backend in the host process, the device in a simulator process.

Owns both ends of a small request/response protocol over a local Unix socket (one JSON object
per line each way): :class:`SimBackend`, a real :class:`usb.backend.IBackend` that pyusb's
``usb.core.find`` and ``Device`` drive exactly as they drive libusb, and :class:`UsbSimServer`,
which answers it on behalf of a :class:`SimulatedUsbDevice` (the device model: descriptors,
endpoint reads, vendor control requests, plug state). It never decides what a device says:
that is the device model's job (e.g. ``simulators/dice.py``).

Requests carry ``op`` and its arguments; replies carry the result or ``error`` with one of
:data:`ERRORS`, which the backend raises as pyusb does for libusb's codes: ``no_device``
(errno 19, the device was unplugged or the handle belongs to an earlier plug-in), ``timeout``
(:class:`usb.core.USBTimeoutError`), ``stall`` (errno 32, a refused control request), ``busy``
(errno 16, another handle claimed the interface), ``invalid`` (errno 22). A simulator that is
not running, or dies, looks like a device that is not plugged in.
"""

from __future__ import annotations

import abc
import array
import asyncio
import contextlib
import errno
import json
import os
import socket
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Final

import usb.backend
import usb.core

from tabled.simulators.errors import SimulatorError

#: How much longer than a transfer's own timeout the backend waits for the simulator's reply.
SOCKET_MARGIN: Final = 2.0
#: The longest a request without a transfer timeout (enumerate, open, claim) may take.
T_REQUEST: Final = 2.0

#: Reply error names -> (errno, libusb error code), as pyusb's libusb1 backend reports them.
ERRORS: Final = {
    "no_device": (errno.ENODEV, -4),
    "timeout": (errno.ETIMEDOUT, -7),
    "stall": (errno.EPIPE, -9),
    "busy": (errno.EBUSY, -6),
    "invalid": (errno.EINVAL, -2),
}

# Standard requests the bus answers itself (USB 2.0 §9.4): only string descriptors, since
# pyusb reads the other descriptors through the backend's get_*_descriptor calls.
_GET_DESCRIPTOR: Final = 0x06
_STRING_DESCRIPTOR: Final = 0x03
_LANGID_EN_US: Final = 0x0409
_TYPE_MASK: Final = 0x60
_DIRECTION_IN: Final = 0x80


class UsbSimError(SimulatorError):
    """A request the simulated bus refuses; ``code`` is a key of :data:`ERRORS`."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code


def _usb_error(code: str, message: str) -> usb.core.USBError:
    errno_value, libusb_code = ERRORS.get(code, ERRORS["invalid"])
    cls = usb.core.USBTimeoutError if code == "timeout" else usb.core.USBError
    return cls(message, libusb_code, errno_value)


# -- the host side: a pyusb backend --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _SimAlternate:
    """One alternate setting of an interface, with its endpoints."""

    descriptor: SimpleNamespace
    endpoints: tuple[SimpleNamespace, ...]


@dataclass(frozen=True, slots=True)
class _SimConfiguration:
    descriptor: SimpleNamespace
    interfaces: tuple[tuple[_SimAlternate, ...], ...]  # [interface][alternate setting]


@dataclass(frozen=True, slots=True)
class _SimDevice:
    """What enumerate_devices yields: one plug-in of the device, with its descriptors."""

    generation: int
    device: SimpleNamespace
    configurations: tuple[_SimConfiguration, ...]


@dataclass(frozen=True, slots=True)
class _SimHandle:
    generation: int
    handle: int


def _descriptor(fields: dict[str, Any]) -> SimpleNamespace:
    # pyusb copies fields with getattr; lists arrive from JSON where libusb gives tuples.
    out = SimpleNamespace(**fields)
    if getattr(out, "port_numbers", None) is not None:
        out.port_numbers = tuple(out.port_numbers)
    return out


def _parse_device(entry: dict[str, Any]) -> _SimDevice:
    configurations = tuple(
        _SimConfiguration(_descriptor(config["descriptor"]), tuple(
            tuple(_SimAlternate(_descriptor(alt["descriptor"]),
                                tuple(_descriptor(ep) for ep in alt["endpoints"]))
                  for alt in interface)
            for interface in config["interfaces"]))
        for config in entry["configurations"])
    return _SimDevice(entry["generation"], _descriptor(entry["device"]), configurations)


class SimBackend(usb.backend.IBackend):  # type: ignore[misc]
    """The pyusb backend that reaches a simulator process at ``socket_path``.

    A call takes a connection to the simulator that no other call is using (opening one if
    need be) and gives it back after: calls from several threads run side by side, as libusb's
    do (an interrupt read waiting for a report does not hold up a control transfer from another
    thread, as on a real bus). Handles are the simulator's, whichever connection opened them:
    a handle dies with the connection that opened it. :meth:`close` closes them all; a closed
    backend reconnects on its next call.
    """

    def __init__(self, socket_path: str) -> None:
        super().__init__()
        self.socket_path = socket_path
        self._lock = threading.Lock()
        #: connections not in use by a call: (socket, its reader)
        self._idle: list[tuple[socket.socket, Any]] = []
        #: every open connection, in use or not
        self._open: set[socket.socket] = set()

    # -- the socket ------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection to the simulator."""
        with self._lock:
            self._disconnect()

    def _finalize_object(self) -> None:
        self._disconnect()

    def _disconnect(self) -> None:
        for sock, reader in self._idle:
            reader.close()
            sock.close()
        self._idle.clear()
        for sock in self._open:  # one in use: its call fails, as a call after an unplug
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._open.clear()

    def _take(self) -> tuple[socket.socket, Any]:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(T_REQUEST)
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        with self._lock:
            self._open.add(sock)
        return sock, sock.makefile("rb")

    def _give_back(self, connection: tuple[socket.socket, Any], ok: bool) -> None:
        sock, reader = connection
        with self._lock:
            if ok and sock in self._open:
                self._idle.append(connection)
                return
            self._open.discard(sock)
        reader.close()  # a late reply would answer the wrong request
        sock.close()

    def _call(self, request: dict[str, Any], timeout_ms: int | None = None) -> dict[str, Any]:
        """Send one request and return its reply; a dead simulator is an unplugged device."""
        wait = T_REQUEST if timeout_ms is None else timeout_ms / 1000 + SOCKET_MARGIN
        try:
            connection = self._take()
        except OSError as exc:
            raise _usb_error("no_device", f"simulator unreachable: {exc}") from None
        ok = False
        try:
            sock, reader = connection
            sock.settimeout(wait)
            sock.sendall(json.dumps(request).encode() + b"\n")
            line = reader.readline()
            if not line:
                raise ConnectionResetError("the simulator closed the connection")
            ok = True
        except TimeoutError:
            raise _usb_error("timeout", "the simulator did not answer in time") from None
        except OSError as exc:
            raise _usb_error("no_device", f"simulator unreachable: {exc}") from None
        finally:
            self._give_back(connection, ok)
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise _usb_error(reply["error"], reply.get("message", reply["error"]))
        return reply

    # -- enumeration and descriptors -------------------------------------------------------

    def enumerate_devices(self) -> list[_SimDevice]:
        try:
            reply = self._call({"op": "enumerate"})
        except usb.core.USBError:
            return []  # no simulator: nothing is plugged in
        return [_parse_device(entry) for entry in reply["devices"]]

    def get_parent(self, dev: _SimDevice) -> None:
        return None

    def get_device_descriptor(self, dev: _SimDevice) -> SimpleNamespace:
        return dev.device

    def get_configuration_descriptor(self, dev: _SimDevice, config: int) -> SimpleNamespace:
        return dev.configurations[config].descriptor

    def get_interface_descriptor(self, dev: _SimDevice, intf: int, alt: int,
                                 config: int) -> SimpleNamespace:
        # IndexError past the last alternate setting is how pyusb's iteration stops.
        return dev.configurations[config].interfaces[intf][alt].descriptor

    def get_endpoint_descriptor(self, dev: _SimDevice, ep: int, intf: int, alt: int,
                                config: int) -> SimpleNamespace:
        return dev.configurations[config].interfaces[intf][alt].endpoints[ep]

    # -- handles, configuration, interfaces ------------------------------------------------

    def open_device(self, dev: _SimDevice) -> _SimHandle:
        reply = self._call({"op": "open", "generation": dev.generation})
        return _SimHandle(dev.generation, reply["handle"])

    def close_device(self, dev_handle: _SimHandle) -> None:
        with contextlib.suppress(usb.core.USBError):
            self._call({"op": "close", "handle": dev_handle.handle})

    def set_configuration(self, dev_handle: _SimHandle, config_value: int) -> None:
        self._call({"op": "set_configuration", "handle": dev_handle.handle,
                    "value": config_value})

    def get_configuration(self, dev_handle: _SimHandle) -> int:
        value: int = self._call({"op": "get_configuration", "handle": dev_handle.handle})["value"]
        return value

    def claim_interface(self, dev_handle: _SimHandle, intf: int) -> None:
        self._call({"op": "claim", "handle": dev_handle.handle, "interface": intf})

    def release_interface(self, dev_handle: _SimHandle, intf: int) -> None:
        self._call({"op": "release", "handle": dev_handle.handle, "interface": intf})

    def is_kernel_driver_active(self, dev_handle: _SimHandle, intf: int) -> bool:
        return False  # no kernel on the simulated bus

    # -- transfers -------------------------------------------------------------------------

    def intr_read(self, dev_handle: _SimHandle, ep: int, intf: int, buff: array.array[int],
                  timeout: int) -> int:
        reply = self._call({"op": "read", "handle": dev_handle.handle, "endpoint": ep,
                            "length": len(buff), "timeout": timeout}, timeout)
        return _fill(buff, reply["data"])

    def ctrl_transfer(self, dev_handle: _SimHandle, bmRequestType: int, bRequest: int,
                      wValue: int, wIndex: int, data: array.array[int], timeout: int) -> int:
        request: dict[str, Any] = {
            "op": "control", "handle": dev_handle.handle, "request_type": bmRequestType,
            "request": bRequest, "value": wValue, "index": wIndex, "timeout": timeout,
        }
        if bmRequestType & _DIRECTION_IN:
            request["length"] = len(data)
            return _fill(data, self._call(request, timeout)["data"])
        request["data"] = bytes(data).hex()
        written: int = self._call(request, timeout)["written"]
        return written


def _fill(buff: array.array[int], hex_data: str) -> int:
    data = bytes.fromhex(hex_data)[: len(buff)]
    buff[: len(data)] = array.array("B", data)
    return len(data)


# -- the device side: the model a simulator implements -------------------------------------------


class SimulatedUsbDevice(abc.ABC):
    """A device on the simulated bus: descriptors, transfers, and plug state.

    ``generation`` counts plug-ins: a handle opened before an unplug stays dead after the
    replug (the device re-enumerates, as real hardware does at a new address).
    """

    def __init__(self) -> None:
        self.plugged = True
        self.generation = 1
        self.configuration = 0
        self._changed = asyncio.Event()
        self._unplugged: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @abc.abstractmethod
    def descriptors(self) -> dict[str, Any]:
        """The device and configuration descriptors, as :class:`SimBackend` parses them."""

    @abc.abstractmethod
    def strings(self) -> dict[int, str]:
        """String descriptors by index (manufacturer, product, serial number...)."""

    @abc.abstractmethod
    async def read_endpoint(self, endpoint: int, length: int, within: float) -> bytes | None:
        """One IN packet, or None when the device had nothing ``within`` seconds. The bus
        gives up on the read with ``no_device`` when the device is unplugged meanwhile."""

    @abc.abstractmethod
    def control(self, request_type: int, request: int, value: int, index: int,
                data: bytes, length: int) -> bytes:
        """A vendor control request; IN requests return at most ``length`` bytes. Raise
        ``UsbSimError("stall")`` to refuse it."""

    def configuration_set(self, value: int) -> None:
        """SET_CONFIGURATION from a host: real devices reset their endpoints here."""
        self.configuration = value

    def notify(self) -> None:
        """Wake whoever waits on the device (a packet queued, an unplug)."""
        self._changed.set()

    async def changed(self, within: float) -> None:
        """Wait up to ``within`` seconds for :meth:`notify`."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, within)):
                await self._changed.wait()

    def unplugged(self) -> asyncio.Future[None]:
        """Done when the current plug-in ends."""
        return self._unplugged

    def unplug(self) -> None:
        self.plugged = False
        self.configuration = 0
        if not self._unplugged.done():
            self._unplugged.set_result(None)
        self.notify()

    def plug(self) -> None:
        self.generation += 1
        self.plugged = True
        self._unplugged = asyncio.get_running_loop().create_future()
        self.notify()


@dataclass(slots=True)
class _Handle:
    generation: int
    connection: int
    claimed: set[int] = field(default_factory=set)


class UsbSimServer:
    """Serves one :class:`SimulatedUsbDevice` to :class:`SimBackend` clients on a Unix socket."""

    def __init__(self, device: SimulatedUsbDevice, socket_path: str) -> None:
        self.device = device
        self.socket_path = socket_path
        self._server: asyncio.Server | None = None
        self._handles: dict[int, _Handle] = {}
        self._next_handle = 1
        self._connections = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        self._server = await asyncio.start_unix_server(self._serve, path=self.socket_path)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._connections += 1
        connection = self._connections
        try:
            while line := await reader.readline():
                try:
                    reply = await self._handle(json.loads(line), connection)
                except UsbSimError as exc:
                    reply = {"error": exc.code, "message": str(exc)}
                except (ValueError, KeyError, TypeError) as exc:
                    reply = {"error": "invalid", "message": f"bad request: {exc}"}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except ConnectionError:
            pass  # the host went away mid-reply
        except asyncio.CancelledError:
            # stop() closes the connections. Ending quietly instead of cancelled: asyncio's
            # stream server calls exception() on this task, which would raise (and print a
            # traceback) for a cancelled one.
            pass
        finally:
            # A host that goes away closes its handles, releasing their interfaces.
            for number in [n for n, h in self._handles.items() if h.connection == connection]:
                del self._handles[number]
            writer.close()
            self._tasks.discard(task)

    def _live(self, request: dict[str, Any]) -> _Handle:
        handle = self._handles.get(request["handle"])
        if handle is None:
            raise UsbSimError("invalid", "no such handle")
        if not self.device.plugged or handle.generation != self.device.generation:
            raise UsbSimError("no_device", "No such device (it may have been disconnected)")
        return handle

    async def _handle(self, request: dict[str, Any], connection: int) -> dict[str, Any]:
        op = request["op"]
        device = self.device
        if op == "enumerate":
            if not device.plugged:
                return {"devices": []}
            return {"devices": [{"generation": device.generation, **device.descriptors()}]}
        if op == "open":
            if not device.plugged or request["generation"] != device.generation:
                raise UsbSimError("no_device", "No such device (it may have been disconnected)")
            number, self._next_handle = self._next_handle, self._next_handle + 1
            self._handles[number] = _Handle(device.generation, connection)
            return {"handle": number}
        if op == "close":
            self._handles.pop(request["handle"], None)
            return {}
        handle = self._live(request)
        if op == "set_configuration":
            device.configuration_set(request["value"])
            return {}
        if op == "get_configuration":
            return {"value": device.configuration}
        if op == "claim":
            self._claim(handle, request["interface"])
            return {}
        if op == "release":
            handle.claimed.discard(request["interface"])
            return {}
        if op == "read":
            return await self._read(handle, request)
        if op == "control":
            return self._control(request)
        raise UsbSimError("invalid", f"unknown op {op!r}")

    def _claim(self, handle: _Handle, interface: int) -> None:
        for other in self._handles.values():
            if (other is not handle and other.generation == self.device.generation
                    and interface in other.claimed):
                raise UsbSimError("busy", f"interface {interface} is claimed by another host")
        handle.claimed.add(interface)

    async def _read(self, handle: _Handle, request: dict[str, Any]) -> dict[str, Any]:
        if not handle.claimed:
            raise UsbSimError("invalid", "read on an interface that is not claimed")
        device = self.device
        gone = device.unplugged()
        read: asyncio.Future[bytes | None] = asyncio.ensure_future(device.read_endpoint(
            request["endpoint"], request["length"], request["timeout"] / 1000))
        # An unplug ends the read at once, as the host controller reports a vanished device.
        either: set[asyncio.Future[Any]] = {read, gone}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not read.done():
            read.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await read
            raise UsbSimError("no_device", "No such device (it may have been disconnected)")
        data = read.result()
        if data is None:
            raise UsbSimError("timeout", "Operation timed out")
        return {"data": data.hex()}

    def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        request_type, number = request["request_type"], request["request"]
        length = request.get("length", 0)
        data = bytes.fromhex(request.get("data", ""))
        if request_type & _TYPE_MASK == 0 and number == _GET_DESCRIPTOR:
            return {"data": self._string_descriptor(request["value"], length).hex()}
        reply = self.device.control(request_type, number, request["value"], request["index"],
                                    data, length)
        if request_type & _DIRECTION_IN:
            return {"data": reply[:length].hex()}
        return {"written": len(data)}

    def _string_descriptor(self, value: int, length: int) -> bytes:
        kind, index = value >> 8, value & 0xFF
        if kind != _STRING_DESCRIPTOR:
            raise UsbSimError("stall", f"descriptor type {kind} is read through the backend")
        if index == 0:
            body = _LANGID_EN_US.to_bytes(2, "little")
        else:
            text = self.device.strings().get(index)
            if text is None:
                raise UsbSimError("stall", f"no string descriptor {index}")
            body = text.encode("utf-16-le")
        return (bytes((2 + len(body), _STRING_DESCRIPTOR)) + body)[:length]
