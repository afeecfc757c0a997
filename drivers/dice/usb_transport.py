"""The USB transport of the dice sensor: one claimed vendor interface, through pyusb.

Owns finding the device from a ``usb://VVVV:PPPP[?serial=...&backend=sim:PATH]`` URL, claiming
its interface, and the blocking transfers, each with a finite timeout; pyusb's errors are
translated here into :class:`~tabled.drivers.errors.DeviceError` with a ``reason``. Every method
blocks: the driver runs them off the event loop (in its own threads). It knows nothing of
reports, sequence numbers or events.
"""

from __future__ import annotations

import contextlib
import errno
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import parse_qs

import usb.core
import usb.util

from tabled.contract.faults import WRONG_DEVICE
from tabled.drivers.errors import DeviceError

#: How long one control transfer may take before the device counts as unresponsive.
T_CONTROL = 1.0

_SCHEME = "usb://"
#: Entry-point group of the pyusb backends a ``backend=NAME:ARG`` URL parameter may name (the
#: simulators register ``sim``); the drivers never import one by name.
USB_BACKENDS = "tabled.usb_backends"


@dataclass(frozen=True, slots=True)
class InterfaceShape:
    """What a family's interface looks like in the descriptors: its class and one endpoint
    (address, transfer type bits of ``bmAttributes``, ``wMaxPacketSize``). A device with the
    right vendor and product ids but another shape is another device (a shared test id)."""

    interface_class: int
    endpoint: int
    transfer_type: int
    max_packet: int


@dataclass(frozen=True, slots=True)
class UsbAddress:
    """Which device a URL names: vendor and product id, optionally its serial number, and
    optionally a backend spec (``sim:/path/to/socket`` selects the simulated backend)."""

    vendor: int
    product: int
    serial: str | None = None
    backend: str | None = None

    @property
    def ids(self) -> str:
        return f"{self.vendor:04x}:{self.product:04x}"


def parse_usb_url(url: str) -> UsbAddress:
    """``usb://1209:0001?serial=DS-0001`` -> :class:`UsbAddress`; ValueError if malformed."""
    if not url.startswith(_SCHEME):
        raise ValueError(f"{url!r} is not a usb:// URL")
    ids, _, query = url[len(_SCHEME):].partition("?")
    vendor_text, sep, product_text = ids.partition(":")
    try:
        if not sep or len(vendor_text) != 4 or len(product_text) != 4:
            raise ValueError
        vendor, product = int(vendor_text, 16), int(product_text, 16)
    except ValueError:
        raise ValueError(f"{url!r}: expected usb://VVVV:PPPP with hexadecimal ids") from None
    params = parse_qs(query, strict_parsing=bool(query))
    unknown = set(params) - {"serial", "backend"}
    if unknown:
        raise ValueError(f"{url!r}: unknown parameters {sorted(unknown)}")
    serial = params.get("serial", [None])[-1]
    backend = params.get("backend", [None])[-1]
    if backend is not None and backend.partition(":")[0] not in _backend_names():
        raise ValueError(f"{url!r}: backend must be NAME:ARGUMENT with NAME one of "
                         f"{sorted(_backend_names())} (e.g. sim:/path/to/socket)")
    return UsbAddress(vendor, product, serial, backend)


def _backend_names() -> set[str]:
    return {ep.name for ep in entry_points(group=USB_BACKENDS)}


def _backend_for(address: UsbAddress) -> Any:
    """The pyusb backend a URL asks for: None (pyusb's own choice, libusb) or one registered
    in the ``tabled.usb_backends`` entry-point group, called with the text after its name.
    Loaded only when a URL asks, so a table's daemon never loads simulator code."""
    if address.backend is None:
        return None
    name, _, argument = address.backend.partition(":")
    (entry,) = entry_points(group=USB_BACKENDS, name=name)
    return entry.load()(argument)


def _device_error(exc: usb.core.USBError, what: str, address: UsbAddress) -> DeviceError:
    if exc.errno == errno.ENODEV:
        reason = "device_gone"
    elif exc.errno == errno.EPIPE:
        reason = "stall"  # the device refused the request: it does not know it
    elif isinstance(exc, usb.core.USBTimeoutError):
        reason = "usb_timeout"
    else:
        reason = "usb_error"
    return DeviceError(f"{what}: {exc}", url=address.ids, reason=reason)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class UsbTransport:
    """One open, configured device with its interface claimed. Blocking. One thread at a time
    per pipe: the driver reads the interrupt endpoint from one thread and makes control
    transfers from another (libusb's synchronous transfers are thread-safe; so is the
    simulated bus)."""

    def __init__(self, device: usb.core.Device, address: UsbAddress, interface: int,
                 owned_backend: Any = None) -> None:
        self.device = device
        self.address = address
        self.interface = interface
        self._owned_backend = owned_backend

    @classmethod
    def open(cls, address: UsbAddress, *, interface: int, backend: Any = None,
             shape: InterfaceShape | None = None) -> UsbTransport:
        """Find the device, select its configuration and claim ``interface``. A ``backend``
        object given here wins over the URL's and stays the caller's to close. With
        ``shape``, a device whose interface does not look like that is refused
        (DeviceError ``wrong_device``) before anything is sent to it."""
        owned = None
        if backend is None:
            backend = owned = _backend_for(address)
        match = {} if address.serial is None else {"serial_number": address.serial}
        try:
            device = usb.core.find(idVendor=address.vendor, idProduct=address.product,
                                   backend=backend, **match)
            if device is None:
                raise DeviceError(f"no USB device {address.ids} {address.serial or ''}",
                                  url=address.ids, reason="not_found")
            transport = cls(device, address, interface, owned)
            if shape is not None:
                mismatch = transport._shape_mismatch(shape)
                if mismatch is not None:
                    transport._dispose()
                    raise DeviceError(f"device {address.ids} is not the expected device: "
                                      f"{mismatch}", url=address.ids, reason=WRONG_DEVICE)
            transport._claim()
        except usb.core.NoBackendError as exc:
            _close_backend(owned)
            raise DeviceError(f"no pyusb backend (is libusb installed?): {exc}",
                              url=address.ids, reason="no_backend") from exc
        except usb.core.USBError as exc:
            _close_backend(owned)
            raise _device_error(exc, "cannot open", address) from exc
        except DeviceError:
            _close_backend(owned)
            raise
        return transport

    def _shape_mismatch(self, shape: InterfaceShape) -> str | None:
        """How the device's interface differs from ``shape`` (from its descriptors), or None."""
        try:
            configuration = next(iter(self.device), None)
            found = None if configuration is None else usb.util.find_descriptor(
                configuration, bInterfaceNumber=self.interface)
        except (ValueError, LookupError) as exc:
            return f"unreadable descriptors ({exc})"
        if found is None:
            return f"no interface {self.interface}"
        if found.bInterfaceClass != shape.interface_class:
            return (f"interface {self.interface} is of class {found.bInterfaceClass:#04x}, "
                    f"not {shape.interface_class:#04x}")
        endpoint = usb.util.find_descriptor(found, bEndpointAddress=shape.endpoint)
        if endpoint is None:
            return f"interface {self.interface} has no endpoint {shape.endpoint:#04x}"
        transfer = endpoint.bmAttributes & 0x03
        if (transfer, endpoint.wMaxPacketSize) != (shape.transfer_type, shape.max_packet):
            return (f"endpoint {shape.endpoint:#04x} is of type {transfer} with packets of "
                    f"{endpoint.wMaxPacketSize} bytes, not type {shape.transfer_type} with "
                    f"{shape.max_packet}")
        return None

    def _claim(self) -> None:
        try:
            if self.device.is_kernel_driver_active(self.interface):
                self.device.detach_kernel_driver(self.interface)
        except NotImplementedError:
            pass  # a backend without kernel drivers (the simulated one, some platforms)
        try:
            self.device.set_configuration()
            usb.util.claim_interface(self.device, self.interface)
        except usb.core.USBError:
            self._dispose()
            raise

    def read(self, endpoint: int, size: int, timeout: float) -> bytes | None:
        """One interrupt packet, or None when none came within ``timeout`` (normal)."""
        try:
            return bytes(self.device.read(endpoint, size, timeout=_ms(timeout)))
        except usb.core.USBTimeoutError:
            return None
        except usb.core.USBError as exc:
            raise _device_error(exc, "interrupt read", self.address) from exc

    def control_in(self, request_type: int, request: int, value: int, index: int, length: int,
                   timeout: float = T_CONTROL) -> bytes:
        """A control transfer that reads up to ``length`` bytes."""
        try:
            data = self.device.ctrl_transfer(request_type, request, value, index, length,
                                             timeout=_ms(timeout))
        except usb.core.USBError as exc:
            raise _device_error(exc, f"control request {request:#04x}", self.address) from exc
        return bytes(data)

    def control_out(self, request_type: int, request: int, value: int, index: int,
                    timeout: float = T_CONTROL) -> None:
        """A control transfer with no data stage."""
        try:
            self.device.ctrl_transfer(request_type, request, value, index, None,
                                      timeout=_ms(timeout))
        except usb.core.USBError as exc:
            raise _device_error(exc, f"control request {request:#04x}", self.address) from exc

    def close(self) -> None:
        """Release the interface and the handle (a lost device makes this a no-op)."""
        self._dispose()
        _close_backend(self._owned_backend)
        self._owned_backend = None

    def _dispose(self) -> None:
        # A device that is gone has nothing left to release.
        with contextlib.suppress(usb.core.USBError):
            usb.util.dispose_resources(self.device)


def _close_backend(backend: Any) -> None:
    if backend is not None:
        backend.close()
