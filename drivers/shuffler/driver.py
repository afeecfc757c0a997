"""The shuffler-dealer's driver: its messages in, the normalized events of docs/contract.md out.

Owns what the machine's messages mean as events (:func:`normalize`, pure), the machine's
identity (``info``) and its last known :class:`~tabled.drivers.shuffler.protocol.Status`, on top of
the
shared serial adapter (:class:`~tabled.drivers.serial_device.SerialDevice`). It knows devices, never
rules: whether an exposed card or a jam voids a round is the rules core's decision
(qpoker.art11.2, art11.3, art11.5), so this module must never drop, reorder, merge or invent a
card, and never name a card in a fault's text (a dealer's card must not leak before ``reveal``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any, Final

from tabled.contract import faults
from tabled.contract.events import (
    EXPOSED,
    CardDealt,
    Event,
    Fault,
    HandDealt,
    RoundStart,
    Seat,
    ShoeStart,
)
from tabled.drivers.errors import DeviceError, ProtocolError
from tabled.drivers.serial_device import SerialDevice
from tabled.drivers.shuffler import protocol as p

#: How long :meth:`ShufflerDriver.identified` waits for the link to come up with the machine's
#: identity (its RESET_ACK carries it; T_RESET is 0.5 s).
T_REPLY: Final = 2.0

#: The machine's fault numbers as the daemon's stable fault codes.
FAULT_CODES: Final[Mapping[int, str]] = {
    p.DeviceFault.JAM: faults.SHUFFLER_JAM,
    p.DeviceFault.FAILURE: faults.SHUFFLER_FAILURE,
    p.DeviceFault.DOOR_OPEN: faults.SHUFFLER_DOOR_OPEN,
    p.DeviceFault.DECK_COUNT: faults.DECK_COUNT,
    p.DeviceFault.CARD_EXPOSED: faults.CARD_EXPOSED,
}


def _seat_name(seat: Seat) -> str:
    return "the dealer" if seat == "dealer" else f"seat {seat}"


def fault_event(code: int, context: str = "", **fields: Any) -> Fault:
    """The ``fault`` event for device fault ``code``: detail ``"<number> <name>[: context]"``,
    the number in ``extra["device_code"]`` with any structured ``fields``. A number this
    driver does not know is a ``shuffler_failure``: an alarm it cannot name stops the machine
    all the same (Art. 11.5 treats it as the machine failing)."""
    try:
        name = p.DeviceFault(code).name.lower().replace("_", " ")
    except ValueError:
        name = "unknown device fault"
    detail = f"{code} {name}: {context}" if context else f"{code} {name}"
    return Fault(code=FAULT_CODES.get(code, faults.SHUFFLER_FAILURE), detail=detail,
                 extra={"device_code": code, **fields})


#: A frame's message, decoded once: validate() decodes it before its ACK and message_received()
#: right after takes the same message (decoding is pure and the messages frozen).
_decode = functools.lru_cache(maxsize=1)(p.decode)


def normalize(msg: p.Message) -> list[Event]:
    """The CONTRACT events one machine message stands for (none for bookkeeping messages)."""
    match msg:
        case p.RoundSeats():
            return [RoundStart(seats=msg.seats)]
        case p.Hand():
            exposed = msg.exposed_cards
            if not exposed:
                return [HandDealt(seat=msg.seat, cards=msg.cards, face_up=False)]
            # The exposure is per card (the machine's mask): the hand is face up only if every
            # card of it is; otherwise it stays face down and ``exposed`` names the cards that
            # were seen (qpoker.art11.2 makes those, and only those, public).
            return [
                HandDealt(seat=msg.seat, cards=msg.cards,
                          face_up=len(exposed) == len(msg.cards),
                          extra={EXPOSED: list(exposed)}),
                fault_event(p.DeviceFault.CARD_EXPOSED,
                            f"round {msg.round}, {_seat_name(msg.seat)}",
                            round=msg.round, seat=msg.seat),
            ]
        case p.Card():
            return [CardDealt(card=msg.card, face_up=True)]
        case p.DeckCheck() if msg.found != msg.expected:
            return [fault_event(p.DeviceFault.DECK_COUNT,
                                f"{msg.found} cards ({msg.expected} expected)",
                                found=msg.found, expected=msg.expected)]
        case p.DeckCheck(mode=p.Mode.BACCARAT):
            # A freshly shuffled, fully counted baccarat set is a new shoe: the rules core
            # starts its card counts (baccarat.art1) over.
            return [ShoeStart(decks=msg.decks)]
        case p.Fault():
            where: list[str] = []
            fields: dict[str, Any] = {}
            if msg.round:
                where.append(f"round {msg.round}")
                fields["round"] = msg.round
            if msg.seat is not None:
                where.append(f"dealing {_seat_name(msg.seat)}")
                fields["seat"] = msg.seat
            return [fault_event(msg.code, ", ".join(where), **fields)]
        case _:
            return []


class ShufflerDriver(SerialDevice):
    """One automatic shuffler-dealer on a serial link (docs/protocols/shuffler.md).

    ``info`` holds ``firmware`` and ``serial`` from the machine's identity (its INFO, carried by
    the link handshake: a device whose identity is not a shuffler-dealer's INFO, or not the
    configured serial number, is refused before any of its frames is acknowledged); ``status``
    is the machine's last reported status, kept current by the messages that change it (None
    until its first STATUS).
    """

    family = "shuffler"
    device_name = "shuffler-dealer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.status: p.Status | None = None
        self._info_received = asyncio.Event()

    def identify(self, kind: int, payload: bytes) -> dict[str, str]:
        msg = p.decode(kind, payload)
        if not isinstance(msg, p.Info):
            raise ProtocolError(f"a {type(msg).__name__}, not INFO")
        return {"firmware": msg.firmware, "serial": msg.serial}

    def validate(self, kind: int, payload: bytes) -> None:
        msg = _decode(kind, payload)
        if isinstance(msg, p.HOST_REQUESTS):
            raise ProtocolError(f"{type(msg).__name__} is the host's message, not the machine's")
        if isinstance(msg, p.Info) and msg.serial != self.info.get("serial"):
            raise ProtocolError(f"INFO of serial number {msg.serial!r} from the machine that "
                                f"identified itself as {self.info.get('serial')!r}")

    def link_established(self) -> None:
        # The identity came with the link (checked on every link-up, so a machine replaced
        # behind the same port is noticed); the status is asked for.
        self._info_received.set()
        self.send(*p.encode(p.StatusRequest()))

    def message_received(self, kind: int, payload: bytes) -> None:
        msg = _decode(kind, payload)
        if isinstance(msg, p.Info):
            self.info = {"firmware": msg.firmware, "serial": msg.serial}
        if isinstance(msg, p.Status):
            self.status = msg
        elif self.status is not None:
            self.status = self.status.after(msg)
        for event in normalize(msg):
            self.emit(event)

    async def identified(self) -> dict[str, str]:
        """The machine's firmware and serial number, as its link handshake gave them.
        DeviceError if the connection closed first (``reason`` from its close reason, e.g.
        ``wrong_device``) or has not come up within T_REPLY (``no_reply``)."""
        info = asyncio.ensure_future(self._info_received.wait())
        closed = asyncio.ensure_future(self.wait_closed())
        try:
            await asyncio.wait({info, closed}, timeout=T_REPLY,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            info.cancel()
            closed.cancel()
        if self._info_received.is_set():
            return dict(self.info)
        if self.close_reason is not None:
            raise DeviceError(self.close_reason, device=self.device_id,
                              reason=self.close_reason.partition(":")[0])
        raise DeviceError("the shuffler-dealer did not come up with its identity",
                          device=self.device_id, reason="no_reply")
