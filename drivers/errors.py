"""The one exception root of the drivers package; library errors are translated at the boundary."""

from __future__ import annotations


class DeviceError(Exception):
    """A device could not be opened, was lost, or broke its protocol beyond recovery.

    ``device`` is the configured device id, ``url`` where it was opened, ``reason`` a short
    snake_case cause (``open_failed``, ``link_down``, ``usb_error``, ...).
    """

    def __init__(self, message: str, *, device: str = "", url: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.device = device
        self.url = url
        self.reason = reason


class ProtocolError(ValueError):
    """The peer sent a well-framed message whose content is invalid (counted, never raised out)."""
