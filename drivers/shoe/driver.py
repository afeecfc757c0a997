"""The card-reading shoe's driver: shoe reports in, CONTRACT events out.

Owns what the shoe's messages mean as normalized events (:func:`normalize`, pure, shared with
the simulator's dealer so both see the same stream) and the thin adapter
(:class:`ShoeDriver`) that decodes each message, keeps the device's info and status, and emits
the events. It must never apply a game rule (whether a burn or a void is allowed is the rules
core's business) and never reconnect by itself (that is the supervisor's).
"""

from __future__ import annotations

import functools
from typing import Any, Final

from tabled.contract.events import Burn, CardDealt, CutCard, Demo, Event, Fault, ShoeStart, Void
from tabled.contract.faults import SHOE_EMPTY, SHOE_SENSOR_DIRTY, UNREADABLE_CARD
from tabled.drivers.errors import ProtocolError
from tabled.drivers.serial_device import SerialDevice
from tabled.drivers.shoe.protocol import (
    REQUESTS,
    Button,
    ButtonPressed,
    CardOut,
    CutCardOut,
    DeviceFault,
    DeviceInfo,
    FaultCode,
    Report,
    ShoeLoaded,
    ShoeStatus,
    decode,
)

#: The stable fault code of each of the shoe's numbered faults.
FAULT_CODES: Final[dict[FaultCode, str]] = {
    FaultCode.UNREADABLE_CARD: UNREADABLE_CARD,
    FaultCode.SENSOR_DIRTY: SHOE_SENSOR_DIRTY,
    FaultCode.SHOE_EMPTY: SHOE_EMPTY,
}
#: The reason a void from the shoe's VOID button carries.
VOID_REASON: Final = "dealer_button"


#: A frame's message, decoded once: validate() decodes it before its ACK and message_received()
#: right after takes the same message (decoding is pure and the messages frozen).
_decode = functools.lru_cache(maxsize=1)(decode)


def normalize(report: Report) -> Event | None:
    """The CONTRACT event a shoe report stands for, or None: status and info are kept by the
    driver, and the BURN button is not an event by itself (the flagged card after it is)."""
    match report:
        case ShoeLoaded(decks=decks):
            return ShoeStart(decks=decks)
        case CardOut(burn=True):
            return Burn(card=report.card, extra={"card_no": report.card_no})
        case CardOut():
            # The reader sees each card's face as it passes; whether the card came out face up
            # on the table (exposed, baccarat.art4) it cannot tell, so the event does not say.
            return CardDealt(card=report.card, extra={"card_no": report.card_no})
        case CutCardOut(card_no=card_no):
            return CutCard(extra={"card_no": card_no})
        case ButtonPressed(button=Button.DEMO):
            return Demo()
        case ButtonPressed(button=Button.VOID):
            return Void(reason=VOID_REASON)
        case DeviceFault():
            return _fault_event(report)
        case _:
            return None


def _fault_event(report: DeviceFault) -> Event:
    extra: dict[str, Any] = {"device_code": int(report.code), "card_no": report.card_no}
    if report.burn:
        # An unread burn is still a burn, never a dealt card: a fault would make the rules core
        # void the hand in progress for a card that is no part of it. The card stays unknown.
        return Burn(card=None, extra={**extra, "unreadable": True})
    text = report.code.name.lower().replace("_", " ")
    where = (f"card {report.card_no} of the shoe" if report.code is FaultCode.UNREADABLE_CARD
             else f"after {report.card_no} cards of the shoe")
    return Fault(code=FAULT_CODES[report.code],
                 detail=f"device fault {int(report.code)}: {text} ({where})", extra=extra)


class ShoeDriver(SerialDevice):
    """One card-reading shoe on a serial port.

    ``info`` holds ``firmware`` and ``serial`` from the shoe's identity (its DEVICE_INFO,
    carried by the link handshake on every link-up: a device whose identity is not a shoe's, or
    not the configured serial number, is refused before any of its frames is acknowledged);
    ``status`` is the shoe's last :class:`ShoeStatus` (it sends one on link-up).
    """

    family = "shoe"
    device_name = "card-reading shoe"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.status: ShoeStatus | None = None

    def identify(self, kind: int, payload: bytes) -> dict[str, str]:
        message = decode(kind, payload)
        if not isinstance(message, DeviceInfo):
            raise ProtocolError(f"a {type(message).__name__}, not DEVICE_INFO")
        return {"firmware": message.firmware, "serial": message.serial}

    def validate(self, kind: int, payload: bytes) -> None:
        message = _decode(kind, payload)
        if isinstance(message, REQUESTS):
            raise ProtocolError(f"the shoe sent a host request: {message!r}")
        if isinstance(message, DeviceInfo) and message.serial != self.info.get("serial"):
            raise ProtocolError(f"DEVICE_INFO of serial number {message.serial!r} from the "
                                f"shoe that identified itself as {self.info.get('serial')!r}")

    def message_received(self, kind: int, payload: bytes) -> None:
        message = _decode(kind, payload)
        if isinstance(message, DeviceInfo):
            self.info = {"firmware": message.firmware, "serial": message.serial}
        elif isinstance(message, ShoeStatus):
            self.status = message
        elif not isinstance(message, REQUESTS):  # (validate() refused those)
            event = normalize(message)
            if event is not None:
                self.emit(event)
