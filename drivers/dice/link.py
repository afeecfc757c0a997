"""The host's report sequencer for the dice sensor (sans-IO): every event report, once, in order.

Owns gap detection, RESEND requests with their timeout and retry limit, and heartbeat-silence
detection over the sensor's numbered reports (docs/protocols/dice.md "Delivery"). It never does
I/O and never reads a clock: packets come in through :meth:`ReportSequencer.packet_received`
with ``now`` (seconds, monotonic), timers fire from :meth:`ReportSequencer.poll`, and what the
adapter must do comes out as values. It never emits CONTRACT events: that is the driver's job.

Delivery is go-back-N: a report ahead of the one expected reveals a gap, the host asks the
device to ``RESEND`` from the expected number and ignores everything out of order until the
gap is filled. A STATUS heartbeat carries the device's next number, so a lost *last* report is
found within one heartbeat.

The adapter emits a delivered report's events, makes them durable (the sink's ``commit()``
barrier) and only then acknowledges the report (``ACK``): the device keeps every report no
host made durable, and a reconnecting host resumes at the first of them. A host that knows it
made more durable than it acknowledged (a crash between its commit and its ACK) says so at
:meth:`ReportSequencer.synchronise`, and those reports are acknowledged without being emitted
again: exactly once, as the serial link does it (tabled.drivers.link, "Exactly once across resets").
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

from tabled.drivers.dice.protocol import (
    MAX_RESENDS,
    NUMBER_MODULO,
    T_RESEND,
    T_SILENCE,
    EventReport,
    ReportDamaged,
    ResendReply,
    StatusReport,
    decode_report,
    number_distance,
    number_is_ahead,
)


class SequencerState(enum.Enum):
    SYNCING = "syncing"  # opened, waiting for the device's status to learn where to start
    RUNNING = "running"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class Deliver:
    """The next report in order: emit what it means, make that durable, then ``ACK(ack)``."""

    report: EventReport

    @property
    def ack(self) -> int:
        return (self.report.number + 1) % NUMBER_MODULO


@dataclass(frozen=True, slots=True)
class AlreadyDurable:
    """``count`` reports before ``ack`` are durable on the host already: ``ACK(ack)`` them,
    emit nothing."""

    ack: int
    count: int


@dataclass(frozen=True, slots=True)
class RequestResend:
    """Send ``RESEND(from_number)``; the reply goes to :meth:`ReportSequencer.resend_answered`."""

    from_number: int


@dataclass(frozen=True, slots=True)
class ReportsLost:
    """The device no longer holds ``count`` reports from ``first``: they can never arrive."""

    first: int
    count: int


@dataclass(frozen=True, slots=True)
class LinkDown:
    """The sensor is unreachable: ``silence`` or ``resend_unanswered``."""

    reason: str


Output = Deliver | AlreadyDurable | RequestResend | ReportsLost | LinkDown


class ReportSequencer:
    """Turns the packets of one connection into an in-order, exactly-once report stream.

    Counters: ``reports`` delivered, ``statuses``, damaged packets by reason (``bad_length``,
    ``bad_crc``, ``bad_kind``, ``bad_content``), ``gaps`` found, ``out_of_order`` and
    ``duplicates`` ignored, ``resends_sent``, ``resend_timeouts``, ``reports_lost``,
    ``resent_already_durable``, and ``down_<reason>``.
    """

    def __init__(
        self,
        *,
        now: float,
        t_silence: float = T_SILENCE,
        t_resend: float = T_RESEND,
        max_resends: int = MAX_RESENDS,
    ) -> None:
        self.t_silence = t_silence
        self.t_resend = t_resend
        self.max_resends = max_resends
        self.counters: Counter[str] = Counter()
        self.state = SequencerState.SYNCING
        self.expected = 0
        self.last_status: StatusReport | None = None
        self._last_rx = now
        self._resend_pending = False
        self._resend_sent_at = now
        self._resend_tries = 0

    # -- inputs ----------------------------------------------------------------------------

    def synchronise(self, status: StatusReport, now: float,
                    durable_from: int | None = None) -> list[Output]:
        """Start from the device's status (GET_STATUS at connect): resume at the first report
        no host has acknowledged, and ask again for whatever the device already holds.

        ``durable_from`` is the first report of this boot the host has *not* made durable, if
        it knows (from its journal); reports before it are acknowledged, not delivered again.
        Reports from it up to the device's ``unacked_from`` were never made durable and the
        device no longer holds them (it forgets the oldest past ``RETAINED_REPORTS`` while no
        host acknowledges: a host away that long): they are lost, and said to be
        (:class:`ReportsLost`), as a RESEND reply that starts later than asked says it.
        """
        self.state = SequencerState.RUNNING
        self.expected = status.unacked_from
        outputs: list[Output] = []
        if (durable_from is not None and number_is_ahead(self.expected, durable_from)
                and not number_is_ahead(status.next_number, durable_from)):
            count = number_distance(self.expected, durable_from)
            self.counters["resent_already_durable"] += count
            self.expected = durable_from
            outputs.append(AlreadyDurable(durable_from, count))
        elif durable_from is not None and number_is_ahead(durable_from, self.expected):
            lost = number_distance(durable_from, self.expected)
            self.counters["reports_lost"] += lost
            outputs.append(ReportsLost(durable_from, lost))
        return outputs + self._status(status, now)

    def packet_received(self, data: bytes, now: float) -> list[Output]:
        """One interrupt packet."""
        if self.state is not SequencerState.RUNNING:
            return []
        self._last_rx = now
        try:
            report = decode_report(data)
        except ReportDamaged as exc:
            # A damaged packet is a lost one: the next report or heartbeat reveals the gap.
            self.counters[exc.reason] += 1
            return []
        if isinstance(report, StatusReport):
            return self._status(report, now)
        if report.number == self.expected:
            self.expected = (self.expected + 1) % NUMBER_MODULO
            self._resend_pending = False
            self.counters["reports"] += 1
            return [Deliver(report)]
        if number_is_ahead(self.expected, report.number):
            self.counters["out_of_order"] += 1
            return self._gap(now)
        self.counters["duplicates"] += 1
        return []

    def resend_answered(self, reply: ResendReply) -> list[Output]:
        """The device's answer to our RESEND: anything it could not resend is lost."""
        if self.state is not SequencerState.RUNNING:
            return []
        if reply.count == 0:
            self._resend_pending = False  # nothing is coming: no report waits for its turn
        if not number_is_ahead(self.expected, reply.first):
            return []
        lost = number_distance(self.expected, reply.first)
        self.counters["reports_lost"] += lost
        first, self.expected = self.expected, reply.first
        return [ReportsLost(first, lost)]

    def poll(self, now: float) -> list[Output]:
        """Fire the timers: heartbeat silence, and a RESEND that went unanswered."""
        if self.state is not SequencerState.RUNNING:
            return []
        if now - self._last_rx >= self.t_silence:
            return [self._down("silence")]
        if self._resend_pending and now - self._resend_sent_at >= self.t_resend:
            self.counters["resend_timeouts"] += 1
            if self._resend_tries >= self.max_resends:
                return [self._down("resend_unanswered")]
            return [self._resend(now)]
        return []

    def next_deadline(self) -> float | None:
        """When :meth:`poll` next has something to do."""
        if self.state is not SequencerState.RUNNING:
            return None
        deadline = self._last_rx + self.t_silence
        if self._resend_pending:
            deadline = min(deadline, self._resend_sent_at + self.t_resend)
        return deadline

    # -- internals -------------------------------------------------------------------------

    def _status(self, status: StatusReport, now: float) -> list[Output]:
        self.counters["statuses"] += 1
        self.last_status = status
        if number_is_ahead(self.expected, status.next_number):
            return self._gap(now)  # the device numbered reports we never saw
        return []

    def _gap(self, now: float) -> list[Output]:
        if self._resend_pending:
            return []  # one RESEND per gap; the timer repeats it if it goes unanswered
        self.counters["gaps"] += 1
        self._resend_tries = 0
        return [self._resend(now)]

    def _resend(self, now: float) -> RequestResend:
        self._resend_pending = True
        self._resend_sent_at = now
        self._resend_tries += 1
        self.counters["resends_sent"] += 1
        return RequestResend(self.expected)

    def _down(self, reason: str) -> LinkDown:
        self.state = SequencerState.DOWN
        self.counters[f"down_{reason}"] += 1
        return LinkDown(reason)
