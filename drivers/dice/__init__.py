"""The electronic dice sensor (USB, pyusb): protocol, report sequencer, transport, driver.

The supervisor and ``tabled listen`` open a sensor through the family registry
(``tabled.drivers.registry``), which finds :data:`FAMILY` through the ``tabled.drivers`` entry
point; the wire protocol is docs/protocols/dice.md.
"""

from __future__ import annotations

from tabled.drivers.dice.driver import DiceDriver, normalize, open_device
from tabled.drivers.dice.usb_transport import parse_usb_url
from tabled.drivers.registry import DeviceFamily

#: The longest serial number a sensor's USB string descriptor gives (docs/protocols/dice.md).
SERIAL_MAX = 16


def _check(url: str | None, serial: str | None) -> list[tuple[str, str]]:
    """A ``usb://VVVV:PPPP[?serial=...]`` URL, and a serial number (the sensor's own USB serial,
    which the URL may name too: the two must agree)."""
    problems: list[tuple[str, str]] = []
    named = None
    if url is not None:
        try:
            named = parse_usb_url(url).serial
        except ValueError as exc:
            problems.append(("url", str(exc)))
    if serial is not None:
        if not 1 <= len(serial) <= SERIAL_MAX or " " in serial or not serial.isprintable():
            problems.append(("serial", f"a dice sensor's serial number has 1 to {SERIAL_MAX} "
                                       "characters, and no space"))
        elif named is not None and named != serial:
            problems.append(("serial", f"{serial!r} contradicts the serial number the url "
                                       f"names ({named!r})"))
    return problems


FAMILY = DeviceFamily(
    name="dice", kind="dice", transport="usb",
    summary="an electronic dice sensor (USB)",
    open=open_device, check=_check,
)

__all__ = ["FAMILY", "DiceDriver", "normalize", "open_device"]
