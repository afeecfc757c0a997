"""The three-dice sensor's driver: its messages in, tabled's normalized events out.

Owns what the sensor's messages mean as the contract's events (:func:`normalize`, pure, which
the simulator uses too, to say what a driver must make of its script) and the thin adapter
(:class:`SicBoDiceDriver`) on tabled's serial device: it identifies the sensor from its HELLO,
refuses what a sensor cannot send, asks for its state when the link comes up and emits the
events. Framing, the link, the transport, reconnection and durability are tabled's.
"""

from __future__ import annotations

from typing import Any, Final, cast

from tabled.contract.events import Event, Fault, NoRoll, Roll, Void
from tabled.contract.faults import SENSOR_FAULT
from tabled.drivers.errors import ProtocolError
from tabled.drivers.serial_device import SerialDevice

from tabled_sicbo.sensor.protocol import (
    MAGIC,
    MODEL,
    AlarmRaised,
    Hello,
    Key,
    KeyPressed,
    Message,
    RollRead,
    State,
    StateRequest,
    Unreadable,
    Why,
    decode,
    dice_in_mask,
    encode,
)

#: The ``reason`` of the ``no_roll`` each unreadable shake arrives as (sic bo Art. 2.1: void).
NO_ROLL_REASONS: Final = {
    Why.NOT_FLAT: "die_not_flat",
    Why.STACKED: "dice_stacked",
    Why.MISSING: "die_missing",
}
#: The reason a void from the VOID key carries (what every device's dealer button says).
VOID_REASON: Final = "dealer_button"


def normalize(message: Message) -> list[Event]:
    """The events one of the sensor's messages stands for (none for STATE, HELLO)."""
    match message:
        case RollRead():
            # three dice: the contract's roll carries two or more (issue 28)
            return [Roll(dice=cast(Any, message.dice),
                         extra={"confidence": message.confidence / 100,
                                "shake": message.shake})]
        case Unreadable():
            return [NoRoll(reason=NO_ROLL_REASONS[message.why],
                           extra={"dice_concerned": list(dice_in_mask(message.dice)),
                                  "shake": message.shake})]
        case AlarmRaised(code=code):
            return [Fault(code=SENSOR_FAULT, detail=f"sensor alarm 0x{int(code):02x}: "
                                                    f"{code.text}",
                          extra={"device_code": int(code)})]
        case KeyPressed(key=Key.VOID):
            return [Void(reason=VOID_REASON)]
        case _:
            return []


class SicBoDiceDriver(SerialDevice):
    """One three-dice sensor on a serial port. ``info`` holds ``firmware``, ``serial`` and
    ``model`` from its HELLO (carried by the link handshake: a device that is not this model,
    or not the configured serial number, is refused before any frame is acknowledged);
    ``state`` is its last :class:`~tabled_sicbo.sensor.protocol.State`."""

    family = "sicbo_dice"
    device_name = "three-dice sensor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: State | None = None

    def identify(self, kind: int, payload: bytes) -> dict[str, str]:
        message = decode(kind, payload)
        if not isinstance(message, Hello):
            raise ProtocolError(f"a {type(message).__name__}, not HELLO")
        if message.model != MODEL:
            raise ProtocolError(f"{MAGIC.decode()} model 0x{message.model:02x}, not a "
                                "three-dice sensor")
        return {"firmware": message.firmware_text, "serial": message.serial,
                "model": "SB3D three-dice sensor"}

    def validate(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, Hello | StateRequest):
            raise ProtocolError(f"{type(message).__name__} is never a message the sensor sends")

    def link_established(self) -> None:
        self.send(*encode(StateRequest()))

    def message_received(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, State):
            self.state = message
        for event in normalize(message):
            self.emit(event)
