"""The ACME CardEye 2 card-reading shoe as a tabled device family (an example vendor plugin).

Owns the family's declaration, :data:`FAMILY`, which tabled finds through the ``tabled.drivers``
entry point of this package (pyproject.toml), and the way to open a shoe (:func:`open_device`).
The family is of kind ``shoe``: a baccarat table takes it as it takes tabled's own shoe. This
module imports no simulator: a table's daemon loads it, never test code.
"""

from __future__ import annotations

from typing import Any, Final

from tabled.drivers.registry import DeviceFamily
from tabled.drivers.serial_device import check_serial_settings, open_serial
from tabled.drivers.sink import EventSink

from tabled_acme_shoe.driver import AcmeShoeDriver
from tabled_acme_shoe.protocol import SERIAL_CHARS, SERIAL_MAX

__all__ = ["FAMILY", "AcmeShoeDriver", "open_device"]

#: The CardEye's line speed (its manual: 57 600 baud, 8N1, no flow control).
BAUDRATE: Final = 57_600


async def open_device(url: str, *, device_id: str, sink: EventSink, first_seq: int = 0,
                      **options: Any) -> AcmeShoeDriver:
    """Open the shoe at ``url`` (a device path, a /dev/serial/by-id name, a pty, socket://) and
    start its link; events go to ``sink`` numbered from ``first_seq``. ``options``: those every
    family takes (``serial``, ``resume``, ``refused``), ``baudrate``, and the serial device's
    ``link_options`` and ``clock``. Raises DeviceError if the port cannot be opened."""
    baudrate = int(options.pop("baudrate", BAUDRATE))
    driver = await open_serial(
        url, lambda: AcmeShoeDriver(device_id, sink, first_seq=first_seq, **options),
        baudrate=baudrate,
    )
    assert isinstance(driver, AcmeShoeDriver)  # open_serial returns what the factory built
    return driver


def check(url: str | None, serial: str | None) -> list[tuple[str, str]]:
    """What is wrong with a device's settings for this family (``tabled check-config``): a URL
    a serial port can have, and a serial number a CardEye's ``ID`` sentence can carry."""
    problems = check_serial_settings(url, serial)
    if serial is not None and not any(key == "serial" for key, _ in problems) and not (
            len(serial) <= SERIAL_MAX and set(serial) <= SERIAL_CHARS):
        problems.append(("serial", f"a CardEye's serial number has 1 to {SERIAL_MAX} "
                                   "characters of A-Z, 0-9 and -"))
    return problems


FAMILY = DeviceFamily(
    name="acme_shoe", kind="shoe", transport="serial",
    summary="an ACME CardEye 2 card-reading shoe (serial; example vendor family)",
    open=open_device, check=check,
)
