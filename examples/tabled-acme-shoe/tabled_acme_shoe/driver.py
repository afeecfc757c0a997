"""The ACME CardEye 2 shoe's driver: its messages in, tabled's normalized events out.

Owns what the shoe's messages mean as the contract's events (:func:`normalize`, pure, which the
simulator uses too, to say what a driver must make of its script) and the thin adapter
(:class:`AcmeShoeDriver`) on top of tabled's serial device: it identifies the shoe from its
HELLO, refuses what a shoe cannot send, asks for its state when the link comes up and emits the
events. Framing, the link, the asyncio transport, reconnection and durability are tabled's: a
vendor writes only this, the message catalogue and the family declaration.
"""

from __future__ import annotations

from typing import Any, Final

from tabled.contract.events import Burn, CardDealt, CutCard, Demo, Event, Fault, ShoeStart, Void
from tabled.contract.faults import SHOE_EMPTY, SHOE_SENSOR_DIRTY, UNREADABLE_CARD
from tabled.drivers.errors import ProtocolError
from tabled.drivers.serial_device import SerialDevice

from tabled_acme_shoe.protocol import (
    MAGIC,
    MODEL_CARDEYE_2,
    Alarm,
    AlarmRaised,
    Card,
    Cut,
    Hello,
    Key,
    KeyPressed,
    Message,
    ShoeIn,
    State,
    StateRequest,
    decode,
    encode,
)

#: The fault code each of the shoe's alarms arrives as (tabled.contract.faults): the same as the
#: built-in shoe's, so the games treat an ACME shoe as any shoe.
FAULT_CODES: Final = {
    Alarm.MISREAD: UNREADABLE_CARD,
    Alarm.OPTICS: SHOE_SENSOR_DIRTY,
    Alarm.EMPTY: SHOE_EMPTY,
}
#: The reason a void from the VOID key carries (what every shoe's dealer button says).
VOID_REASON: Final = "dealer_button"
_TEXT: Final = {
    Alarm.MISREAD: "card not read",
    Alarm.OPTICS: "reader window needs cleaning",
    Alarm.EMPTY: "shoe empty",
}


def normalize(message: Message) -> list[Event]:
    """The events one of the shoe's messages stands for (none for STATE, HELLO, a BURN key:
    the burned card after it is the event)."""
    match message:
        case ShoeIn(decks=decks):
            return [ShoeStart(decks=decks)]
        case Card(burn=True):
            return [Burn(card=message.card, extra={"card_no": message.count})]
        case Card():
            # The reader sees each card's face as it passes, not whether it lands face up.
            return [CardDealt(card=message.card, extra={"card_no": message.count})]
        case Cut(count=count):
            return [CutCard(extra={"card_no": count})]
        case KeyPressed(key=Key.DEMO):
            return [Demo()]
        case KeyPressed(key=Key.VOID):
            return [Void(reason=VOID_REASON)]
        case AlarmRaised():
            return [_alarm_event(message)]
        case _:
            return []


def _alarm_event(alarm: AlarmRaised) -> Event:
    extra: dict[str, Any] = {"device_code": int(alarm.code), "card_no": alarm.count}
    if alarm.burn:
        # An unread burn is still a burn (a fault would void the hand it is no part of).
        return Burn(card=None, extra={**extra, "unreadable": True})
    return Fault(code=FAULT_CODES[alarm.code],
                 detail=f"ACME alarm 0x{int(alarm.code):02x}: {_TEXT[alarm.code]} "
                        f"(after {alarm.count} cards of the shoe)",
                 extra=extra)


class AcmeShoeDriver(SerialDevice):
    """One ACME CardEye 2 on a serial port.

    ``info`` holds ``firmware``, ``serial`` and ``model`` from the shoe's HELLO (carried by the
    link handshake on every link-up: a device whose identity is not a CardEye 2's, or not the
    configured serial number, is refused before any of its frames is acknowledged); ``state``
    is the shoe's last :class:`~tabled_acme_shoe.protocol.State` (asked for on link-up).
    """

    family = "acme_shoe"
    device_name = "ACME CardEye 2 shoe"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: State | None = None

    def identify(self, kind: int, payload: bytes) -> dict[str, str]:
        message = decode(kind, payload)
        if not isinstance(message, Hello):
            raise ProtocolError(f"a {type(message).__name__}, not HELLO")
        if message.model != MODEL_CARDEYE_2:
            raise ProtocolError(f"{MAGIC.decode()} model 0x{message.model:02x}, not a "
                                "CardEye 2")
        return {"firmware": message.firmware_text, "serial": message.serial,
                "model": "CardEye 2"}

    def validate(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, Hello | StateRequest):
            raise ProtocolError(f"{type(message).__name__} is never a message the shoe sends")

    def link_established(self) -> None:
        self.send(*encode(StateRequest()))

    def message_received(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, State):
            self.state = message
        for event in normalize(message):
            self.emit(event)
