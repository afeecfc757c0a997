"""The dice report sequencer (sans-IO) against the sensor's report memory, in virtual time.

The host's :class:`ReportSequencer` and the simulator's :class:`ReportMemory` talk through a
simulated interrupt pipe that may lose, corrupt, duplicate or delay packets (control transfers
are reliable: USB acknowledges them or the host sees an error). Every report must arrive once,
in order, across reconnects — docs/protocols/dice.md "Delivery".
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.dice.link import (
    AlreadyDurable,
    Deliver,
    LinkDown,
    Output,
    ReportSequencer,
    ReportsLost,
    RequestResend,
)
from tabled.drivers.dice.protocol import (
    MAX_RESENDS,
    REPORT_SIZE,
    RETAINED_REPORTS,
    T_RESEND,
    T_SILENCE,
    T_STATUS,
    EventReport,
    ResendReply,
    RollReport,
    StatusReport,
    encode_report,
)
from tabled.simulators.dice import ReportMemory

TICK = 0.01


def roll(number: int = 0) -> RollReport:
    return RollReport(number, 1 + number % 6, 1 + number // 6 % 6, 95)


class Pipe:
    """The interrupt pipe, device to host: may drop, corrupt, duplicate or delay packets."""

    def __init__(self, rng: random.Random, loss: float = 0.0, corrupt: float = 0.0,
                 duplicate: float = 0.0, delay: float = 0.0) -> None:
        self.rng, self.loss, self.corrupt, self.duplicate = rng, loss, corrupt, duplicate
        self.delay = delay
        self.in_flight: deque[tuple[float, bytes]] = deque()

    def put(self, packet: bytes, now: float) -> None:
        if self.rng.random() < self.loss:
            return
        if self.rng.random() < self.corrupt:
            i = self.rng.randrange(len(packet))
            packet = packet[:i] + bytes((packet[i] ^ 0x24,)) + packet[i + 1:]
        copies = 2 if self.rng.random() < self.duplicate else 1
        self.in_flight.extend([(now + self.delay, packet)] * copies)

    def take(self, now: float) -> list[bytes]:
        out = []
        while self.in_flight and self.in_flight[0][0] <= now:
            out.append(self.in_flight.popleft()[1])
        return out


@dataclass
class Session:
    """A sensor (report memory + endpoint queue) and a host that reconnects on link down."""

    pipe: Pipe
    memory: ReportMemory = field(default_factory=ReportMemory)
    endpoint: deque[bytes] = field(default_factory=deque)
    delivered: list[EventReport] = field(default_factory=list)
    lost: list[ReportsLost] = field(default_factory=list)
    downs: list[str] = field(default_factory=list)
    host: ReportSequencer | None = None
    last_tx: float = 0.0

    def status(self) -> StatusReport:
        return StatusReport(self.memory.next_number, self.memory.unacked_from)

    def connect(self, now: float, durable_from: int | None = None) -> None:
        self.endpoint.clear()  # SET_CONFIGURATION empties the endpoint
        self.host = ReportSequencer(now=now)
        self.handle(self.host.synchronise(self.status(), now, durable_from))

    def handle(self, outputs: list[Output]) -> None:
        assert self.host is not None
        for output in outputs:
            if isinstance(output, Deliver):
                self.delivered.append(output.report)
                self.memory.acknowledge(output.ack)
            elif isinstance(output, AlreadyDurable):
                self.memory.acknowledge(output.ack)
            elif isinstance(output, RequestResend):
                reply, reports = self.memory.resend(output.from_number)
                self.endpoint.clear()
                self.endpoint.extend(encode_report(r) for r in reports)
                self.handle(self.host.resend_answered(reply))
            elif isinstance(output, ReportsLost):
                self.lost.append(output)
            else:
                self.downs.append(output.reason)
                self.host = None
                return

    def tick(self, now: float) -> None:
        if self.endpoint:
            self.pipe.put(self.endpoint.popleft(), now)
            self.last_tx = now
        elif now - self.last_tx >= T_STATUS:
            self.pipe.put(encode_report(self.status()), now)
            self.last_tx = now
        if self.host is None:
            self.connect(now)
        assert self.host is not None
        for packet in self.pipe.take(now):
            self.handle(self.host.packet_received(packet, now))
            if self.host is None:
                return
        self.handle(self.host.poll(now))


def play(count: int, pipe: Pipe, *, every: float = 0.05, limit: float = 600.0) -> Session:
    session = Session(pipe)
    now = 0.0
    session.connect(now)
    produced = 0
    while now < limit:
        if produced < count and now >= produced * every:
            session.endpoint.append(encode_report(session.memory.keep(roll(produced))))
            produced += 1
        session.tick(now)
        if produced == count and len(session.delivered) >= count and not len(session.memory):
            break
        now += TICK
    return session


TRANSPORTS = {
    "whole": {},
    "loss": {"loss": 0.2},
    "corruption": {"corrupt": 0.2},
    "duplicates": {"duplicate": 0.3},
    "delay": {"delay": 0.3},
    "everything": {"loss": 0.15, "corrupt": 0.1, "duplicate": 0.1, "delay": 0.1},
}


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_parametrised_transports_deliver_every_report_once_in_order(transport: str) -> None:
    session = play(60, Pipe(random.Random(7), **TRANSPORTS[transport]))
    assert [r.number for r in session.delivered] == list(range(60))
    assert session.delivered == [roll(n) for n in range(60)]
    assert session.lost == []


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.floats(0, 0.4), st.floats(0, 0.3), st.floats(0, 0.3),
       st.sampled_from([0.0, 0.02, 0.2]))
def test_any_damage_short_of_a_dead_pipe_loses_and_duplicates_nothing(
        seed: int, loss: float, corrupt: float, duplicate: float, delay: float) -> None:
    session = play(25, Pipe(random.Random(seed), loss, corrupt, duplicate, delay))
    assert [r.number for r in session.delivered] == list(range(25))
    assert session.lost == []


def running(now: float = 0.0, next_number: int = 0) -> ReportSequencer:
    host = ReportSequencer(now=now)
    assert host.synchronise(StatusReport(next_number, next_number), now) == []
    return host


def test_in_order_reports_are_delivered_and_old_ones_ignored_as_duplicates() -> None:
    host = running()
    assert host.packet_received(encode_report(roll(0)), 0.1) == [Deliver(roll(0))]
    assert Deliver(roll(0)).ack == 1
    assert host.packet_received(encode_report(roll(0)), 0.2) == []
    assert host.counters["duplicates"] == 1
    assert host.counters["reports"] == 1


def test_a_gap_asks_for_one_resend_and_ignores_reports_out_of_order() -> None:
    """Delivery 3: report 0 never came; 1 and 2 reveal the gap; one RESEND(0)."""
    host = running()
    assert host.packet_received(encode_report(roll(1)), 0.1) == [RequestResend(0)]
    assert host.packet_received(encode_report(roll(2)), 0.2) == []
    assert host.resend_answered(ResendReply(0, 3)) == []
    outputs = [host.packet_received(encode_report(roll(n)), 0.3) for n in range(3)]
    assert outputs == [[Deliver(roll(0))], [Deliver(roll(1))], [Deliver(roll(2))]]
    assert host.counters["gaps"] == 1
    assert host.counters["out_of_order"] == 2
    assert host.counters["resends_sent"] == 1


def test_a_lost_last_report_is_found_by_the_next_heartbeat() -> None:
    """Status: the heartbeat's NUMBER is the device's next report number."""
    host = running()
    assert host.packet_received(encode_report(StatusReport(1, 0)), T_STATUS) == [
        RequestResend(0)]


def test_damaged_packets_are_counted_by_reason_and_the_gap_recovered() -> None:
    host = running()
    packet = encode_report(roll(0))
    assert host.packet_received(packet[:REPORT_SIZE // 2], 0.1) == []
    assert host.packet_received(packet[:-1] + bytes((packet[-1] ^ 1,)), 0.2) == []
    assert host.counters["bad_length"] == 1
    assert host.counters["bad_crc"] == 1
    assert host.packet_received(encode_report(roll(1)), 0.3) == [RequestResend(0)]


def test_an_unanswered_resend_is_repeated_then_the_link_goes_down() -> None:
    """Delivery 4: RESEND again after T_RESEND; after MAX_RESENDS the link is down."""
    host = running()
    now = 0.1
    assert host.packet_received(encode_report(roll(1)), now) == [RequestResend(0)]
    for _ in range(MAX_RESENDS - 1):
        now += T_RESEND
        host.packet_received(encode_report(StatusReport(2, 0)), now)  # heartbeats continue
        assert host.poll(now) == [RequestResend(0)]
    now += T_RESEND
    assert host.poll(now) == [LinkDown("resend_unanswered")]
    assert host.counters["resends_sent"] == MAX_RESENDS
    assert host.poll(now + 10) == []


def test_silence_takes_the_link_down_and_heartbeats_keep_it_up() -> None:
    """Delivery 5: nothing at all for T_SILENCE -> link down."""
    host = running()
    now = 0.0
    while now < 3 * T_SILENCE:
        now += T_STATUS
        host.packet_received(encode_report(StatusReport(0, 0)), now)
        assert host.poll(now) == []
    assert host.next_deadline() == pytest.approx(now + T_SILENCE)
    assert host.poll(now + T_SILENCE - TICK) == []
    assert host.poll(now + T_SILENCE) == [LinkDown("silence")]


def test_reports_the_device_no_longer_holds_are_reported_lost() -> None:
    """Delivery 3: a RESEND reply starting later than asked means those reports are gone."""
    memory = ReportMemory(capacity=4)
    for _ in range(10):
        memory.keep(roll())
    host = running()
    reply, reports = memory.resend(0)
    assert (reply, [r.number for r in reports]) == (ResendReply(6, 4), [6, 7, 8, 9])
    assert memory.forgotten == 6
    assert host.resend_answered(reply) == [ReportsLost(0, 6)]
    assert host.packet_received(encode_report(reports[0]), 0.1) == [Deliver(reports[0])]
    assert host.counters["reports_lost"] == 6


def test_a_reconnecting_host_resumes_at_the_first_unacknowledged_report() -> None:
    memory = ReportMemory()
    for _ in range(5):
        memory.keep(roll())
    memory.acknowledge(3)
    host = ReportSequencer(now=0.0)
    status = StatusReport(memory.next_number, memory.unacked_from)
    assert host.synchronise(status, 0.0) == [RequestResend(3)]
    assert host.expected == 3


def test_reports_already_durable_are_acknowledged_not_delivered_again() -> None:
    """Delivery 1: a host that committed reports 3 and 4 but crashed before its ACK."""
    host = ReportSequencer(now=0.0)
    outputs = host.synchronise(StatusReport(6, 3), 0.0, durable_from=5)
    assert outputs == [AlreadyDurable(5, 2), RequestResend(5)]
    assert host.counters["resent_already_durable"] == 2
    assert host.packet_received(encode_report(roll(5)), 0.1) == [Deliver(roll(5))]


@pytest.mark.parametrize("durable_from", [3, 9])
def test_a_resume_point_outside_what_the_device_holds_changes_nothing(durable_from: int) -> None:
    """At ``unacked_from`` there is nothing to skip; beyond the device's next number it
    cannot be this device's boot: resume at ``unacked_from``."""
    host = ReportSequencer(now=0.0)
    assert host.synchronise(StatusReport(6, 3), 0.0, durable_from) == [RequestResend(3)]
    assert host.expected == 3


def test_reports_the_device_forgot_before_the_host_made_them_durable_are_named_lost() -> None:
    """The host's journal ends before report 40 of this boot; the device, left without a host
    for longer than its memory lasts, holds reports from 100 on: 40-99 are lost for good,
    and said to be (the campaign's kill -9 storm found them skipped without a word)."""
    memory = ReportMemory(capacity=RETAINED_REPORTS)
    for _ in range(40):
        memory.keep(roll())
    memory.acknowledge(40)  # what the last host made durable and acknowledged
    for _ in range(60 + RETAINED_REPORTS):
        memory.keep(roll())
    assert memory.unacked_from == 100  # it forgot 40-99 while no host was there
    host = ReportSequencer(now=0.0)
    outputs = host.synchronise(StatusReport(memory.next_number, memory.unacked_from), 0.0,
                               durable_from=40)
    assert outputs == [ReportsLost(40, 60), RequestResend(100)]
    assert host.counters["reports_lost"] == 60 and host.expected == 100
    assert host.packet_received(encode_report(roll(100)), 0.1) == [Deliver(roll(100))]


def test_report_memory_keeps_numbers_across_resends_and_forgets_on_ack() -> None:
    memory = ReportMemory()
    kept = [memory.keep(roll()) for _ in range(4)]
    assert [r.number for r in kept] == [0, 1, 2, 3]
    memory.acknowledge(2)
    assert (memory.unacked_from, len(memory)) == (2, 2)
    reply, again = memory.resend(2)
    assert reply == ResendReply(2, 2)
    assert again == kept[2:]
    assert memory.resend(4) == (ResendReply(4, 0), [])
