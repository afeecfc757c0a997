"""The link state machine (sans-IO): ordered, exactly-once delivery over a damaging channel.

Two :class:`Link` ends talk through a simulated wire with virtual time, so these tests cover
loss, corruption, chunking and delay without sleeping.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.link import (
    FIRST_FAMILY_KIND,
    MAX_RETRIES,
    T_ACK,
    T_SILENCE,
    Link,
    LinkDown,
    LinkError,
    LinkState,
    LinkUp,
    MessageReceived,
    Resume,
)


class Wire:
    """Carries bytes one way; may drop, corrupt or delay them."""

    def __init__(self, rng: random.Random, loss: float = 0.0, corrupt: float = 0.0,
                 delay: float = 0.0) -> None:
        self.rng, self.loss, self.corrupt, self.delay = rng, loss, corrupt, delay
        self.in_flight: list[tuple[float, bytes]] = []

    def put(self, data: bytes, now: float) -> None:
        if not data:
            return
        # chunk arbitrarily, like a UART read
        while data:
            n = self.rng.randint(1, 16)
            chunk, data = data[:n], data[n:]
            if self.rng.random() < self.loss:
                continue
            if self.rng.random() < self.corrupt:
                i = self.rng.randrange(len(chunk))
                chunk = chunk[:i] + bytes((chunk[i] ^ 0x55,)) + chunk[i + 1:]
            self.in_flight.append((now + self.delay, chunk))

    def take(self, now: float) -> bytes:
        ready = [c for t, c in self.in_flight if t <= now]
        self.in_flight = [(t, c) for t, c in self.in_flight if t > now]
        return b"".join(ready)


def run(messages: list[bytes], *, seed: int, loss: float = 0.0, corrupt: float = 0.0,
        delay: float = 0.0, limit: float = 120.0) -> tuple[list[bytes], Link, Link, list]:
    rng = random.Random(seed)
    now = 0.0
    host = Link(initiator=True, now=now)
    device = Link(initiator=False, now=now)
    to_device, to_host = Wire(rng, loss, corrupt, delay), Wire(rng, loss, corrupt, delay)
    delivered: list[bytes] = []
    host_events: list = []
    pending = list(messages)
    while now < limit:
        if pending and device.state is LinkState.CONNECTED:
            device.send(FIRST_FAMILY_KIND, pending.pop(0), now)
        to_device.put(host.data_to_send(), now)
        to_host.put(device.data_to_send(), now)
        device.receive_data(to_device.take(now), now)
        for ev in host.receive_data(to_host.take(now), now):
            host_events.append(ev)
            if isinstance(ev, MessageReceived):
                delivered.append(ev.payload)
        host_events.extend(host.poll(now))
        device.poll(now)
        if not pending and not device.backlog and len(delivered) >= len(messages):
            break
        if host.state is LinkState.DOWN:
            break
        now += 0.01
    return delivered, host, device, host_events


def test_reset_handshake_then_clean_delivery() -> None:
    msgs = [f"card {i}".encode() for i in range(50)]
    delivered, host, device, events = run(msgs, seed=1)
    assert delivered == msgs
    assert isinstance(events[0], LinkUp)
    assert host.counters["naks_sent"] == 0 and device.counters["retransmits"] == 0


@pytest.mark.parametrize("transport", ["whole", "lossy", "corrupting", "delayed"])
def test_parametrised_transports_deliver_everything_in_order_once(transport: str) -> None:
    params = {"whole": {}, "lossy": {"loss": 0.03}, "corrupting": {"corrupt": 0.03},
              "delayed": {"delay": 0.08}}[transport]
    msgs = [bytes([i % 256]) * (i % 40) for i in range(300)]
    delivered, host, device, _ = run(msgs, seed=7, **params)
    assert delivered == msgs
    if transport in ("lossy", "corrupting"):
        recovered = device.counters["retransmits"] + host.counters["naks_sent"]
        assert recovered > 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0, 0.08), st.floats(0, 0.08),
       st.lists(st.binary(max_size=60), max_size=60))
def test_any_damage_short_of_a_dead_wire_loses_and_duplicates_nothing(
    seed: int, loss: float, corrupt: float, msgs: list[bytes]
) -> None:
    delivered, host, _, _ = run(msgs, seed=seed, loss=loss, corrupt=corrupt, limit=600)
    if host.state is not LinkState.DOWN:
        assert delivered == msgs
    else:  # retries exhausted: then what arrived is still an in-order prefix, never a dup
        assert delivered == msgs[: len(delivered)]


def test_a_peer_that_never_acknowledges_takes_the_link_down_after_the_named_retries() -> None:
    """The device's heartbeats arrive, but nothing we send reaches it: after MAX_RETRIES
    retransmissions with doubling timeouts the link is down (no_ack)."""
    now = 0.0
    host = Link(initiator=True, now=now)
    device = Link(initiator=False, now=now, t_silence=1e9)  # a device that waits for its host
    device.receive_data(host.data_to_send(), now)
    host.receive_data(device.data_to_send(), now)
    assert host.state is LinkState.CONNECTED
    host.send(FIRST_FAMILY_KIND, b"x", now)
    host.data_to_send()  # lost, and so is every retransmission
    events: list = []
    while not events and now < 60:
        now += T_ACK / 5
        device.poll(now)
        events += host.receive_data(device.data_to_send(), now)  # heartbeats get through
        events += host.poll(now)
        host.data_to_send()
    assert events == [LinkDown("no_ack")]
    assert host.counters["timeouts"] == MAX_RETRIES + 1
    # 0.25 + 0.5 + 1 + 2 + 2 + 2 + 2 s: doubling up to T_ACK_MAX
    assert 9.5 <= now <= 10.0
    with pytest.raises(LinkError):
        host.send(FIRST_FAMILY_KIND, b"y", now)


def test_silence_takes_the_link_down() -> None:
    host = Link(initiator=True, now=0.0)
    device = Link(initiator=False, now=0.0)
    device.receive_data(host.data_to_send(), 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    assert host.poll(T_SILENCE - 0.01) == []
    host.data_to_send()
    assert host.poll(T_SILENCE + 0.01) == [LinkDown("silence")]


def test_heartbeats_keep_a_quiet_link_up() -> None:
    now = 0.0
    host = Link(initiator=True, now=now)
    device = Link(initiator=False, now=now)
    downs = []
    while now < 3 * T_SILENCE:
        device.receive_data(host.data_to_send(), now)
        host.receive_data(device.data_to_send(), now)
        downs += host.poll(now) + device.poll(now)
        now += 0.1
    assert downs == [] and host.state is LinkState.CONNECTED


def test_unacknowledged_messages_survive_a_new_link() -> None:
    """A device whose host vanished keeps its backlog and sends it on the next link."""
    device = Link(initiator=False, now=0.0)
    host = Link(initiator=True, now=0.0)
    device.receive_data(host.data_to_send(), 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    for i in range(6):
        device.send(FIRST_FAMILY_KIND, bytes([i]), 0.0)
    device.data_to_send()  # the host never hears these
    backlog = device.take_backlog()
    assert [p for _, p, _ in backlog] == [bytes([i]) for i in range(6)]
    assert [n for _, _, n in backlog] == list(range(6))  # message numbers travel with them
    msgs = [p for _, p, _ in backlog]
    delivered, *_ = run(msgs, seed=3)
    assert delivered == msgs


def test_link_kinds_are_reserved() -> None:
    with pytest.raises(LinkError):
        Link(initiator=True, now=0).send(0x01, b"", 0)


def _handshake(host: Link, device: Link, now: float = 0.0) -> list:
    device.receive_data(host.data_to_send(), now)
    return host.receive_data(device.data_to_send(), now)


def test_a_host_that_resumes_drops_what_it_had_made_durable() -> None:
    """A host that crashed after its journal commit but before its ACK: the device sends the
    messages again after the reset, and the host, told what it made durable, drops them."""
    device = Link(initiator=False, now=0.0, boot_id=0xB007)
    host = Link(initiator=True, now=0.0)
    _handshake(host, device)
    assert host.peer_boot_id == 0xB007
    for i in range(4):  # one window
        device.send(FIRST_FAMILY_KIND, bytes([i]), 0.0)
    got = host.receive_data(device.data_to_send(), 0.0)
    assert [(e.payload, e.number) for e in got] == [(bytes([i]), i) for i in range(4)]
    host.data_to_send()  # the ACKs die with the host
    # the device's link goes down; a new link carries the backlog with its numbers
    backlog, next_number = device.take_backlog(), device.next_number
    device2 = Link(initiator=False, now=1.0, boot_id=0xB007)
    device2.carry_over(backlog, next_number)
    device2.send(FIRST_FAMILY_KIND, b"new", 1.0)
    host2 = Link(initiator=True, now=1.0, resume=Resume(0xB007, 2))  # durable through #2
    got = [e for e in _handshake(host2, device2, 1.0) if isinstance(e, MessageReceived)]
    device2.receive_data(host2.data_to_send(), 1.0)  # the ACKs open the window for "new"
    got += host2.receive_data(device2.data_to_send(), 1.0)
    assert [(e.payload, e.number) for e in got] == [(b"\x03", 3), (b"new", 4)]
    assert host2.counters["resent_already_durable"] == 3


def test_a_rebooted_device_is_not_mistaken_for_a_resend() -> None:
    device = Link(initiator=False, now=0.0, boot_id=2)  # a new boot: numbering restarts
    host = Link(initiator=True, now=0.0, resume=Resume(1, 100))
    _handshake(host, device)
    device.send(FIRST_FAMILY_KIND, b"x", 0.0)
    assert [e.number for e in host.receive_data(device.data_to_send(), 0.0)] == [0]
