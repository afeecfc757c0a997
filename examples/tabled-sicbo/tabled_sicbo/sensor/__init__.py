"""The three-dice sensor sic bo is played with, as a tabled device family of its own.

Owns the family's declaration, :data:`FAMILY` (kind ``dice``), which tabled finds through the
``tabled.drivers`` entry point of this package (pyproject.toml), and the way to open a sensor
(:func:`open_device`). A serial device speaking tabled's frames and link; each shake of the
three dice is one ``roll`` of three faces. This module imports no simulator: a table's daemon
loads it, never test code.
"""

from __future__ import annotations

from typing import Any, Final

from tabled.drivers.registry import DeviceFamily
from tabled.drivers.serial_device import check_serial_settings, open_serial
from tabled.drivers.sink import EventSink

from tabled_sicbo.sensor.driver import SicBoDiceDriver
from tabled_sicbo.sensor.protocol import SERIAL_MAX

__all__ = ["FAMILY", "SicBoDiceDriver", "check", "open_device"]

#: The sensor's line speed (115 200 baud, 8N1, no flow control).
BAUDRATE: Final = 115_200


async def open_device(url: str, *, device_id: str, sink: EventSink, first_seq: int = 0,
                      **options: Any) -> SicBoDiceDriver:
    """Open the sensor at ``url`` (a device path, a /dev/serial/by-id name, a pty, socket://)
    and start its link; events go to ``sink`` numbered from ``first_seq``. ``options``: those
    every family takes (``serial``, ``resume``, ``refused``), ``baudrate``, and the serial
    device's ``link_options`` and ``clock``. Raises DeviceError if the port cannot be opened."""
    baudrate = int(options.pop("baudrate", BAUDRATE))
    driver = await open_serial(
        url, lambda: SicBoDiceDriver(device_id, sink, first_seq=first_seq, **options),
        baudrate=baudrate,
    )
    assert isinstance(driver, SicBoDiceDriver)  # open_serial returns what the factory built
    return driver


def check(url: str | None, serial: str | None) -> list[tuple[str, str]]:
    """What is wrong with a device's settings for this family (``tabled check-config``)."""
    problems = check_serial_settings(url, serial)
    if serial is not None and not any(key == "serial" for key, _ in problems) and not (
            len(serial) <= SERIAL_MAX and " " not in serial):
        problems.append(("serial", f"a three-dice sensor's serial number has 1 to {SERIAL_MAX} "
                                   "characters, without a space"))
    return problems


FAMILY = DeviceFamily(
    name="sicbo_dice", kind="dice", transport="serial",
    summary="a three-dice sensor for sic bo (serial; example family)",
    open=open_device, check=check,
)
