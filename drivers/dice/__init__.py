"""The electronic dice sensor (USB, pyusb): protocol, report sequencer, transport, driver.

The supervisor and ``tabled listen`` open a sensor with :func:`open_device`; the wire protocol
is docs/protocols/dice.md.
"""

from tabled.drivers.dice.driver import DiceDriver, normalize, open_device

__all__ = ["DiceDriver", "normalize", "open_device"]
