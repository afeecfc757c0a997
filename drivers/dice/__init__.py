"""The electronic dice sensor (USB, pyusb): protocol, report sequencer, transport, driver.

The supervisor and ``tabled listen`` open a sensor through the family registry
(``tabled.drivers.registry``), which finds :data:`FAMILY` through the ``tabled.drivers`` entry
point; the wire protocol is docs/protocols/dice.md.
"""

from __future__ import annotations

from tabled.drivers.dice.driver import DiceDriver, normalize, open_device
from tabled.drivers.dice.usb_transport import parse_usb_url
from tabled.drivers.registry import DeviceFamily


def _check_url(url: str) -> str | None:
    try:
        parse_usb_url(url)
    except ValueError as exc:
        return str(exc)
    return None


FAMILY = DeviceFamily(
    name="dice", kind="dice", transport="usb",
    summary="an electronic dice sensor (USB)",
    open=open_device, check_url=_check_url,
)

__all__ = ["FAMILY", "DiceDriver", "normalize", "open_device"]
