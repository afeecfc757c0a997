"""The one exception root of the drivers package; library errors are translated at the boundary.

Everything a driver raises is a :class:`DriverError`: a device that cannot be opened or was lost
(:class:`DeviceError`), a peer's well-framed message with invalid content (:class:`ProtocolError`,
counted and never raised out of a driver), a link used wrongly (``tabled.drivers.link.LinkError``),
a family that is unknown or broken (``tabled.drivers.registry``).
"""

from __future__ import annotations


class DriverError(Exception):
    """The root of every error the drivers raise."""


class DeviceError(DriverError):
    """A device could not be opened, was lost, or broke its protocol beyond recovery.

    ``device`` is the configured device id, ``url`` where it was opened, ``reason`` a short
    snake_case cause (``open_failed``, ``link_down``, ``usb_error``, ``wrong_device``, ...).
    """

    def __init__(self, message: str, *, device: str = "", url: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.device = device
        self.url = url
        self.reason = reason


class ProtocolError(DriverError, ValueError):
    """The peer sent a well-framed message whose content is invalid (counted, never raised out)."""
