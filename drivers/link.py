"""The link state machine of tabled's serial protocols (sans-IO): reliable, ordered delivery.

Owns sequencing, ACK/NAK, retransmission, heartbeats and link resets over
:mod:`tabled.drivers.framing`. It never does I/O and never reads a clock: time comes in as ``now``
(seconds, monotonic), bytes come in through :meth:`Link.receive_data` and go out through
:meth:`Link.data_to_send`, and timers fire from :meth:`Link.poll`. The device side and the host
side run the same class, so the simulators exercise exactly the code a table runs.

The protocol is docs/protocols/framing.md's: Go-back-N with a window of :data:`WINDOW` frames
and cumulative ACKs, NAK on damage or a gap, retransmission after :data:`T_ACK` (doubling up to
:data:`T_ACK_MAX`, down after :data:`MAX_RETRIES`), heartbeats (:data:`T_HEARTBEAT`,
:data:`T_SILENCE`), and the RESET / RESET_ACK handshake that carries the device's boot id, its
first message number and its identity. Two rules shape this class: exactly once across resets
(a host that knows the last message it made durable from a boot, ``resume``, drops re-sent ones
up to it) and nothing acknowledged before it is checked (the identity, ``check_identity``, and
every data frame, ``check_message``; a refusal takes the link down: :class:`PeerRefused`).
"""

from __future__ import annotations

import enum
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from tabled.drivers.errors import DriverError
from tabled.drivers.framing import MAX_PAYLOAD, CorruptFrame, Frame, FrameDecoder, encode_frame

# Link message kinds (family kinds start at FIRST_FAMILY_KIND).
ACK: Final = 0x01
NAK: Final = 0x02
RESET: Final = 0x03
RESET_ACK: Final = 0x04
HEARTBEAT: Final = 0x05
FIRST_FAMILY_KIND: Final = 0x10

# Spec constants (seconds / frames), named as docs/protocols/framing.md names them.
WINDOW: Final = 4
T_ACK: Final = 0.25
MAX_RETRIES: Final = 6
T_RESET: Final = 0.5
T_HEARTBEAT: Final = 2.0
T_SILENCE: Final = 5.0
T_ACK_MAX: Final = 2.0


#: A device's identity as its RESET_ACK carries it: its family's identity message, ``(kind,
#: payload)`` (for the serial families, the same bytes as their INFO reply).
Identity = tuple[int, bytes]
#: The host's verdict on a device's identity (None if the RESET_ACK carried none): None to
#: accept it, or why it is refused.
IdentityCheck = Callable[[Identity | None], str | None]
#: The host's verdict on a data frame before it is acknowledged: None to take it, or why not.
MessageCheck = Callable[[int, bytes], str | None]
#: RESET_ACK: boot id and first message number (4 bytes each), then the identity, if any.
RESET_ACK_HEAD: Final = 8


class LinkState(enum.Enum):
    RESETTING = "resetting"
    CONNECTED = "connected"
    DOWN = "down"


class LinkError(DriverError, RuntimeError):
    """We misused the link: sent on a link that is down, or a kind reserved for the link."""


@dataclass(frozen=True, slots=True)
class MessageReceived:
    """A family message delivered in order, exactly once; ``number`` is the device's message
    number (None if the device did not say, in its RESET_ACK, how it numbers)."""

    kind: int
    payload: bytes
    number: int | None = None


@dataclass(frozen=True, slots=True)
class LinkUp:
    """The reset handshake completed; sequence numbers restart at 0."""


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The link failed: ``no_ack`` (retries exhausted), ``silence`` or ``no_reset_reply``."""

    reason: str


@dataclass(frozen=True, slots=True)
class PeerRefused:
    """The host refused the device, by its identity or by a data frame it could not take: the
    link is down and nothing refused was acknowledged. ``reason`` says why."""

    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    """The message a host's link refused: number ``number`` of boot ``boot_id`` (None when
    the device did not number its messages), and why."""

    boot_id: int | None
    number: int | None
    reason: str


LinkEvent = MessageReceived | LinkUp | LinkDown | PeerRefused


@dataclass(slots=True)
class _Pending:
    kind: int
    payload: bytes
    number: int = 0
    seq: int = -1
    sent_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Resume:
    """What a host made durable from a device: every message up to ``last`` of boot ``boot_id``."""

    boot_id: int
    last: int


def _seq_distance(a: int, b: int) -> int:
    """How far ``b`` is ahead of ``a`` modulo 256."""
    return (b - a) & 0xFF


class Link:
    """One end of a link. ``initiator=True`` is the host side, which opens with RESET."""

    def __init__(
        self,
        *,
        initiator: bool,
        now: float,
        window: int = WINDOW,
        t_ack: float = T_ACK,
        max_retries: int = MAX_RETRIES,
        t_heartbeat: float = T_HEARTBEAT,
        t_silence: float = T_SILENCE,
        boot_id: int = 0,
        first_number: int = 0,
        resume: Resume | None = None,
        identity: Identity | None = None,
        check_identity: IdentityCheck | None = None,
        check_message: MessageCheck | None = None,
        refused: Refused | None = None,
    ) -> None:
        if identity is not None and not (
                FIRST_FAMILY_KIND <= identity[0] <= 0xFF
                and RESET_ACK_HEAD + 1 + len(identity[1]) <= MAX_PAYLOAD):
            raise LinkError(f"identity of kind {identity[0]} and {len(identity[1])} bytes does "
                            "not fit a RESET_ACK")
        self.initiator = initiator
        #: Device side: the identity its RESET_ACK carries.
        self.identity = identity
        #: Host side: the checks of the device's identity and of each frame before its ACK.
        self.check_identity = check_identity
        self.check_message = check_message
        #: Host side: a message the previous link refused (given), then this link's refusal.
        self.refused = refused
        self.refusal: Refused | None = None
        #: Device side: this boot's id and the next message number. Host side: the device's
        #: boot id once the handshake told it.
        self.boot_id = boot_id
        self._next_number = first_number
        self.resume = resume
        self.peer_boot_id: int | None = None
        self._rx_number: int | None = None
        self.window = window
        self.t_ack = t_ack
        self.max_retries = max_retries
        self.t_heartbeat = t_heartbeat
        self.t_silence = t_silence
        self.counters: Counter[str] = Counter()
        self.decoder = FrameDecoder()
        self.state = LinkState.RESETTING
        #: Frames to write, encoded when they are taken (data_to_send): an ACK is queued
        #: before the message it answers is handled, and is written only after that.
        self._out: list[Frame] = []
        self._queue: deque[_Pending] = deque()  # waiting for room in the window
        self._unacked: deque[_Pending] = deque()  # sent, not yet acknowledged
        self._tx_seq = 0
        self._rx_expected = 0
        self._nak_pending = False
        self._last_nak = now
        self._tries = 0
        self._last_rx = now
        self._last_tx = now
        self._reset_sent_at = now
        if initiator:
            self._write(Frame(0, RESET), now)

    # -- the application's side ------------------------------------------------------------

    def send(self, kind: int, payload: bytes, now: float) -> None:
        """Queue a family message for reliable delivery."""
        if not FIRST_FAMILY_KIND <= kind <= 0xFF:
            raise LinkError(f"kind 0x{kind:02x} is not a family message's "
                            f"(0x{FIRST_FAMILY_KIND:02x}-0xff)")
        if len(payload) > MAX_PAYLOAD:
            raise LinkError(f"a payload of {len(payload)} bytes does not fit in a frame "
                            f"(at most {MAX_PAYLOAD})")
        if self.state is LinkState.DOWN:
            raise LinkError("the link is down")
        self._queue.append(_Pending(kind, payload, self._next_number))
        self._next_number = (self._next_number + 1) & 0xFFFFFFFF
        self._fill_window(now)

    def data_to_send(self) -> bytes:
        """The bytes to write to the transport now (and forget)."""
        out = self._out
        if not out:
            return b""
        data = b"".join(map(encode_frame, out))
        out.clear()
        return data

    @property
    def backlog(self) -> int:
        """Messages not yet acknowledged by the peer (queued or in flight)."""
        return len(self._queue) + len(self._unacked)

    def take_backlog(self) -> list[tuple[int, bytes, int]]:
        """Remove and return every message not yet acknowledged, oldest first, as
        ``(kind, payload, number)`` (to carry them over to a new link after this one went down,
        so that none is lost and none is renumbered)."""
        backlog = [(p.kind, p.payload, p.number) for p in (*self._unacked, *self._queue)]
        self._unacked.clear()
        self._queue.clear()
        return backlog

    def carry_over(self, backlog: list[tuple[int, bytes, int]], next_number: int) -> None:
        """Device side: queue a previous link's backlog with its numbers, and continue the
        numbering at ``next_number``."""
        self._queue.extend(_Pending(kind, payload, number) for kind, payload, number in backlog)
        self._next_number = next_number

    @property
    def next_number(self) -> int:
        return self._next_number

    def next_deadline(self) -> float | None:
        """When :meth:`poll` next has something to do, or None when the link is down."""
        if self.state is LinkState.DOWN:
            return None
        deadlines = [self._last_rx + self.t_silence]
        if self.state is LinkState.RESETTING:
            if self.initiator:
                deadlines.append(self._reset_sent_at + T_RESET)
        else:
            deadlines.append(self._last_tx + self.t_heartbeat)
            if self._unacked:
                deadlines.append(self._unacked[0].sent_at + self._ack_timeout())
        return min(deadlines)

    # -- input -----------------------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> list[LinkEvent]:
        """Take bytes from the transport; return what they delivered or changed."""
        events: list[LinkEvent] = []
        if self.state is LinkState.DOWN:
            return events
        for item in self.decoder.feed(data):
            if self._refused_now():
                break  # refused: nothing after it is taken, nor acknowledged
            self._last_rx = now
            if isinstance(item, CorruptFrame):
                self._nak(now)
            else:
                self._frame_received(item, now, events)
        return events

    def poll(self, now: float) -> list[LinkEvent]:
        """Run the timers: retransmission, RESET retries, heartbeats, silence."""
        if self.state is LinkState.DOWN:
            return []
        if now - self._last_rx >= self.t_silence:
            reason = "no_reset_reply" if self.state is LinkState.RESETTING else "silence"
            return [self._down(reason)]
        if self.state is LinkState.RESETTING:
            if self.initiator and now - self._reset_sent_at >= T_RESET:
                self.counters["reset_retries"] += 1
                self._write(Frame(0, RESET), now)
                self._reset_sent_at = now
            return []
        if self._unacked and now - self._unacked[0].sent_at >= self._ack_timeout():
            self._tries += 1
            self.counters["timeouts"] += 1
            if self._tries > self.max_retries:
                return [self._down("no_ack")]
            self._retransmit(now)
        if now - self._last_tx >= self.t_heartbeat:
            self._write(Frame(0, HEARTBEAT), now)
        return []

    # -- internals -------------------------------------------------------------------------

    def _ack_timeout(self) -> float:
        return min(self.t_ack * (1 << min(self._tries, 8)), max(self.t_ack, T_ACK_MAX))

    def _frame_received(self, frame: Frame, now: float, events: list[LinkEvent]) -> None:
        kind = frame.kind
        if kind == RESET and self.initiator:
            # The device restarted its link (a reboot, or another device at the port): the host
            # answers with a RESET of its own, so that every link-up carries the identity of
            # whatever is now at the other end. While resetting, its own timer repeats RESET.
            self.counters["resets"] += 1
            if self.state is LinkState.CONNECTED:
                self.state = LinkState.RESETTING
                self._reset_sent_at = now
                self._write(Frame(0, RESET), now)
        elif kind == RESET:
            self.counters["resets"] += 1
            self._restart(now)
            first = self._queue[0].number if self._queue else self._next_number
            identity = (b"" if self.identity is None
                        else bytes((self.identity[0],)) + self.identity[1])
            self._write(Frame(0, RESET_ACK, self.boot_id.to_bytes(4, "big")
                              + first.to_bytes(4, "big") + identity), now)
            events.append(LinkUp())
            self._fill_window(now)
        elif kind == RESET_ACK:
            if self.state is LinkState.RESETTING and self.initiator:
                payload = frame.payload
                if len(payload) >= RESET_ACK_HEAD:
                    self.peer_boot_id = int.from_bytes(payload[:4], "big")
                    self._rx_number = int.from_bytes(payload[4:8], "big")
                refusal = self._handshake_refusal(payload)
                if refusal is not None:
                    events.append(self._refuse(refusal))
                    return
                self._restart(now)
                events.append(LinkUp())
                self._fill_window(now)
        elif self.state is not LinkState.CONNECTED:
            self.counters["ignored_before_reset"] += 1
        elif kind == ACK:
            if frame.payload:
                self._acknowledged(frame.payload[0])
                self._fill_window(now)
        elif kind == NAK:
            self.counters["naks_received"] += 1
            if frame.payload:
                expected = frame.payload[0]
                self._acknowledged((expected - 1) & 0xFF)
                self._retransmit(now)
        elif kind == HEARTBEAT:
            pass
        elif kind >= FIRST_FAMILY_KIND:
            self._data_received(frame, now, events)
        else:
            self.counters["unknown_link_kind"] += 1

    def _handshake_refusal(self, payload: bytes) -> str | None:
        """Why the device that answered with this RESET_ACK is refused, or None."""
        if self.check_identity is not None:
            identity = ((payload[RESET_ACK_HEAD], payload[RESET_ACK_HEAD + 1:])
                        if len(payload) > RESET_ACK_HEAD else None)
            refusal = self.check_identity(identity)
            if refusal is not None:
                return refusal
        refused = self.refused
        if (refused is not None and refused.number is not None
                and refused.boot_id == self.peer_boot_id and self._rx_number is not None
                and self._resent_first(refused.number)):
            # The device kept the refused message and would send it first again.
            self.refusal = refused
            return refused.reason
        return None

    def _resent_first(self, number: int) -> bool:
        """Whether ``number`` is the first message of the new link this host would take: the
        first the device sends, or the first after those ``resume`` says are durable."""
        first = self._rx_number
        assert first is not None
        if number == first:
            return True
        resume = self.resume
        ahead = (number - first) & 0xFFFFFFFF
        return (resume is not None and resume.boot_id == self.peer_boot_id
                and ahead < 1 << 31 and ((number - 1 - resume.last) & 0xFFFFFFFF) == 0)

    def _refused_now(self) -> bool:
        # (a method, so that the type checker does not hold the state it saw before the loop)
        return self.state is LinkState.DOWN

    def _refuse(self, reason: str) -> PeerRefused:
        self.state = LinkState.DOWN
        self.counters["refused"] += 1
        return PeerRefused(reason)

    def _data_received(self, frame: Frame, now: float, events: list[LinkEvent]) -> None:
        if frame.seq == self._rx_expected:
            if self.check_message is not None:
                refusal = self.check_message(frame.kind, frame.payload)
                if refusal is not None:
                    # Not acknowledged: the device keeps it (for the host it was meant for).
                    self.refusal = Refused(self.peer_boot_id, self._rx_number, refusal)
                    events.append(self._refuse(refusal))
                    return
            self._rx_expected = (self._rx_expected + 1) & 0xFF
            self._nak_pending = False
            self._write(Frame(0, ACK, bytes((frame.seq,))), now)
            number = self._rx_number
            if number is not None:
                self._rx_number = (number + 1) & 0xFFFFFFFF
                resume = self.resume
                if (resume is not None and resume.boot_id == self.peer_boot_id
                        and number <= resume.last):
                    # Sent again after a reset, but we had already made it durable.
                    self.counters["resent_already_durable"] += 1
                    return
            events.append(MessageReceived(frame.kind, frame.payload, number))
        elif 0 < _seq_distance(frame.seq, self._rx_expected) <= self.window:
            # A retransmission of something we have: our ACK was lost; say so again.
            self.counters["duplicates"] += 1
            self._write(Frame(0, ACK, bytes(((self._rx_expected - 1) & 0xFF,))), now)
        else:
            self.counters["out_of_order"] += 1
            self._nak(now)

    def _nak(self, now: float) -> None:
        if self.state is not LinkState.CONNECTED:
            return
        # One NAK per gap, repeated only if the gap outlives an ACK timeout (the NAK was lost).
        if self._nak_pending and now - self._last_nak < self.t_ack:
            return
        self._nak_pending = True
        self._last_nak = now
        self.counters["naks_sent"] += 1
        self._write(Frame(0, NAK, bytes((self._rx_expected,))), now)

    def _acknowledged(self, seq: int) -> None:
        if not self._unacked:
            return
        base = self._unacked[0].seq
        span = _seq_distance(base, seq)
        if span >= len(self._unacked):
            return  # an ACK for something not in flight (stale or from before a reset)
        for _ in range(span + 1):
            self._unacked.popleft()
        self._tries = 0

    def _retransmit(self, now: float) -> None:
        for pending in self._unacked:
            self.counters["retransmits"] += 1
            pending.sent_at = now
            self._write(Frame(pending.seq, pending.kind, pending.payload), now)

    def _fill_window(self, now: float) -> None:
        if self.state is not LinkState.CONNECTED:
            return
        while self._queue and len(self._unacked) < self.window:
            pending = self._queue.popleft()
            pending.seq = self._tx_seq
            pending.sent_at = now
            self._tx_seq = (self._tx_seq + 1) & 0xFF
            self._unacked.append(pending)
            self._write(Frame(pending.seq, pending.kind, pending.payload), now)

    def _restart(self, now: float) -> None:
        """Sequence numbers back to 0; what was in flight goes out again, renumbered."""
        self.state = LinkState.CONNECTED
        self._queue.extendleft(reversed(self._unacked))
        self._unacked.clear()
        self._tx_seq = 0
        self._rx_expected = 0
        self._nak_pending = False
        self._tries = 0

    def _down(self, reason: str) -> LinkDown:
        self.state = LinkState.DOWN
        self.counters[f"down_{reason}"] += 1
        return LinkDown(reason)

    def _write(self, frame: Frame, now: float) -> None:
        self._out.append(frame)
        self._last_tx = now
