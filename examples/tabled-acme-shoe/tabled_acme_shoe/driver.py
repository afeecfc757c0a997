"""The ACME CardEye 2 shoe's driver: its sentences in, tabled's normalized events out.

Owns what the shoe's sentences mean as the contract's events (:func:`normalize`, pure, which the
simulator uses too, to say what a driver must make of its script) and the thin adapter
(:class:`AcmeShoeDriver`) on top of tabled's serial device: it identifies the shoe from its
``ID`` sentence, refuses what a shoe cannot send, asks for its state when the link comes up and
emits the events. The link frames under the sentences, the asyncio transport, reconnection and
durability are tabled's: a vendor writes only this, its sentences and the family declaration.
"""

from __future__ import annotations

from typing import Any, Final

from tabled.contract.events import Burn, CardDealt, CutCard, Demo, Event, Fault, ShoeStart, Void
from tabled.contract.faults import SHOE_EMPTY, SHOE_SENSOR_DIRTY, UNREADABLE_CARD
from tabled.drivers.errors import ProtocolError
from tabled.drivers.serial_device import SerialDevice

from tabled_acme_shoe.protocol import (
    MODEL,
    CutSeen,
    Drawn,
    Error,
    ErrorRaised,
    Ident,
    Key,
    KeyPressed,
    Message,
    NewShoe,
    Query,
    Status,
    decode,
    encode,
)

#: The fault code each of the shoe's errors arrives as (tabled.contract.faults): the same as the
#: built-in shoe's, so the games treat an ACME shoe as any shoe.
FAULT_CODES: Final = {
    Error.MISREAD: UNREADABLE_CARD,
    Error.WINDOW: SHOE_SENSOR_DIRTY,
    Error.EMPTY: SHOE_EMPTY,
}
#: The reason a void from the VOID key carries (what every shoe's dealer button says).
VOID_REASON: Final = "dealer_button"
_TEXT: Final = {
    Error.MISREAD: "card not read",
    Error.WINDOW: "reader window needs cleaning",
    Error.EMPTY: "shoe empty",
}


def normalize(message: Message) -> list[Event]:
    """The events one of the shoe's sentences stands for (none for STA and ID)."""
    match message:
        case NewShoe(decks=decks):
            return [ShoeStart(decks=decks)]
        case Drawn(burn=True):
            return [Burn(card=message.card, extra={"card_no": message.count})]
        case Drawn():
            # The reader sees each card's face as it passes, not whether it lands face up.
            return [CardDealt(card=message.card, extra={"card_no": message.count})]
        case CutSeen(count=count):
            return [CutCard(extra={"card_no": count})]
        case KeyPressed(key=Key.DEMO):
            return [Demo()]
        case KeyPressed(key=Key.VOID):
            return [Void(reason=VOID_REASON)]
        case ErrorRaised():
            return [_error_event(message)]
        case _:
            return []


def _error_event(error: ErrorRaised) -> Event:
    extra: dict[str, Any] = {"device_code": error.code.value, "card_no": error.count}
    if error.burn:
        # An unread burn is still a burn (a fault would void the hand it is no part of).
        return Burn(card=None, extra={**extra, "unreadable": True})
    return Fault(code=FAULT_CODES[error.code],
                 detail=f"ACME error {error.code.value}: {_TEXT[error.code]} "
                        f"(after {error.count} cards of the shoe)",
                 extra=extra)


class AcmeShoeDriver(SerialDevice):
    """One ACME CardEye 2 on a serial port.

    ``info`` holds ``firmware``, ``serial`` and ``model`` from the shoe's ``ID`` sentence
    (carried by the link handshake on every link-up: a device whose identity is not a CardEye
    2's, or not the configured serial number, is refused before any of its frames is
    acknowledged); ``state`` is the shoe's last :class:`~tabled_acme_shoe.protocol.Status`
    (asked for on link-up).
    """

    family = "acme_shoe"
    device_name = "ACME CardEye 2 shoe"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: Status | None = None

    def identify(self, kind: int, payload: bytes) -> dict[str, str]:
        message = decode(kind, payload)
        if not isinstance(message, Ident):
            raise ProtocolError(f"a {message.TYPE} sentence, not ID")
        if message.model != MODEL:
            raise ProtocolError(f"model {message.model!r}, not a CardEye 2 ({MODEL})")
        return {"firmware": message.firmware, "serial": message.serial, "model": "CardEye 2"}

    def validate(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, Ident | Query):
            raise ProtocolError(f"{message.TYPE} is never a sentence the shoe sends")

    def link_established(self) -> None:
        self.send(*encode(Query()))

    def message_received(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, Status):
            self.state = message
        for event in normalize(message):
            self.emit(event)
