"""The card-reading shoe's driver: shoe reports in, CONTRACT events out.

Owns what the shoe's messages mean as normalized events (:func:`normalize`, pure, shared with
the simulator's dealer so both see the same stream) and the thin adapter
(:class:`ShoeDriver`) that decodes each message, keeps the device's info and status, and emits
the events. It must never apply a game rule (whether a burn or a void is allowed is the rules
core's business) and never reconnect by itself (that is the supervisor's).
"""

from __future__ import annotations

import asyncio
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
    InfoRequest,
    Report,
    ShoeLoaded,
    ShoeStatus,
    decode,
    encode,
)

#: The stable fault code of each of the shoe's numbered faults.
FAULT_CODES: Final[dict[FaultCode, str]] = {
    FaultCode.UNREADABLE_CARD: UNREADABLE_CARD,
    FaultCode.SENSOR_DIRTY: SHOE_SENSOR_DIRTY,
    FaultCode.SHOE_EMPTY: SHOE_EMPTY,
}
#: The reason a void from the shoe's VOID button carries.
VOID_REASON: Final = "dealer_button"
#: How long the shoe may take to answer INFO_REQUEST before the driver asks again.
T_INFO: Final = 2.0
#: How many times the driver asks for the device info before giving up (counted).
INFO_REQUESTS: Final = 3


def normalize(report: Report) -> Event | None:
    """The CONTRACT event a shoe report stands for, or None: status and info are kept by the
    driver, and the BURN button is not an event by itself (the flagged card after it is)."""
    match report:
        case ShoeLoaded(decks=decks):
            return ShoeStart(decks=decks)
        case CardOut(burn=True):
            return Burn(card=report.card, extra={"card_no": report.card_no})
        case CardOut():
            # A reading shoe sees each card's face as it passes.
            return CardDealt(card=report.card, face_up=True, extra={"card_no": report.card_no})
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

    ``info`` gets ``firmware`` and ``serial`` once the shoe answers INFO_REQUEST (asked on every
    link-up, again after :data:`T_INFO`, at most :data:`INFO_REQUESTS` times); ``status`` is the
    shoe's last :class:`ShoeStatus` (it sends one on link-up).
    """

    family = "shoe"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.info: dict[str, str] = {}
        self.status: ShoeStatus | None = None
        self._info_requests = 0
        self._info_timer: asyncio.TimerHandle | None = None

    def link_established(self) -> None:
        # Also after a RESET from a rebooted shoe: ask afresh, with a fresh count.
        self._cancel_info_timer()
        self._info_requests = 0
        self._request_info()

    def message_received(self, kind: int, payload: bytes) -> None:
        message = decode(kind, payload)
        if isinstance(message, REQUESTS):
            raise ProtocolError(f"the shoe sent a host request: {message!r}")
        if isinstance(message, DeviceInfo):
            self.info = {"firmware": message.firmware, "serial": message.serial}
            self._cancel_info_timer()
        elif isinstance(message, ShoeStatus):
            self.status = message
        else:
            event = normalize(message)
            if event is not None:
                self.emit(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_info_timer()
        super().connection_lost(exc)

    # -- the info request and its timer

    def _request_info(self) -> None:
        self._info_requests += 1
        self.send(*encode(InfoRequest()))
        self._info_timer = asyncio.get_running_loop().call_later(T_INFO, self._info_timed_out)

    def _info_timed_out(self) -> None:
        self._info_timer = None
        self.counters["info_timeouts"] += 1
        still_up = self.connected.is_set() and self.close_reason is None
        if still_up and self._info_requests < INFO_REQUESTS:
            self._request_info()

    def _cancel_info_timer(self) -> None:
        if self._info_timer is not None:
            self._info_timer.cancel()
            self._info_timer = None
