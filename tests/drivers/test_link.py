"""The link state machine (sans-IO): ordered, exactly-once delivery over a damaging channel.

Two :class:`Link` ends talk through a simulated wire with virtual time, so these tests cover
loss, corruption, chunking and delay without sleeping.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.framing import Frame, FrameDecoder, encode_frame
from tabled.drivers.link import (
    ACK,
    FIRST_FAMILY_KIND,
    MAX_RETRIES,
    RESET,
    T_ACK,
    T_SILENCE,
    Link,
    LinkDown,
    LinkError,
    LinkState,
    LinkUp,
    MessageReceived,
    PeerRefused,
    Refused,
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


@pytest.mark.parametrize(("kind", "payload", "why"), [
    (0x100, b"", "not a family message's"),
    (FIRST_FAMILY_KIND, bytes(256), "does not fit in a frame"),
])
def test_a_message_no_frame_can_carry_is_refused_and_leaves_the_link_as_it_was(
        kind: int, payload: bytes, why: str) -> None:
    # Frames are encoded when they are written, not when they are queued: a message that
    # cannot be framed is refused by send() itself, before it takes a sequence number.
    host, device = Link(initiator=True, now=0), Link(initiator=False, now=0)
    _handshake(host, device)
    with pytest.raises(LinkError, match=why):
        device.send(kind, payload, 0)
    assert device.backlog == 0
    device.send(FIRST_FAMILY_KIND, bytes(255), 0)  # the largest that fits still goes
    delivered = [ev.payload for ev in host.receive_data(device.data_to_send(), 0)
                 if isinstance(ev, MessageReceived)]
    assert delivered == [bytes(255)]


def test_frames_are_written_in_the_order_the_link_made_them() -> None:
    # An ACK queued while a message is handled and the link's own frames after it leave in one
    # write, in order, each a whole frame.
    host, device = Link(initiator=True, now=0), Link(initiator=False, now=0)
    _handshake(host, device)
    for n in range(3):
        device.send(FIRST_FAMILY_KIND, bytes((n,)), 0)
    host.receive_data(device.data_to_send(), 0)
    written = host.data_to_send()
    frames = FrameDecoder().feed(written)
    assert frames == [Frame(0, ACK, bytes((seq,))) for seq in range(3)]
    assert written == b"".join(encode_frame(f) for f in frames)
    assert host.data_to_send() == b""  # taken once


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


# -- identity before data (issue 16 item 6) ------------------------------------------------------

INFO = (0x20, bytes.fromhex("09 51 53 44 2d 33 2e 32 2e 30 0a 53 44 37 2d 30 30 34 32 31 37"))


def test_the_reset_ack_carries_the_devices_identity_byte_for_byte() -> None:
    """docs/protocols/framing.md: RESET_ACK = boot id, first message number, identity."""
    device = Link(initiator=False, now=0.0, boot_id=0xB007, first_number=5, identity=INFO)
    host_seen: list = []
    host = Link(initiator=True, now=0.0,
                check_identity=lambda identity: host_seen.append(identity))
    device.receive_data(host.data_to_send(), 0.0)
    wire = device.data_to_send()
    assert wire.hex(" ") == ("02 00 04 1e 00 00 b0 07 00 00 00 05 20 09 51 53 44 2d 33 2e 32 2e "
                             "30 0a 53 44 37 2d 30 30 34 32 31 37 0a ab 03")
    assert [type(e) for e in host.receive_data(wire, 0.0)] == [LinkUp]
    assert host_seen == [INFO]


def _device_with_backlog(count: int, kind: int = FIRST_FAMILY_KIND, **options) -> Link:
    device = Link(initiator=False, now=0.0, boot_id=7, identity=INFO, **options)
    for i in range(count):
        device.send(kind, bytes([i]), 0.0)
    return device


def test_a_refused_identity_takes_the_link_down_before_anything_is_acknowledged() -> None:
    device = _device_with_backlog(4)
    host = Link(initiator=True, now=0.0, check_identity=lambda identity: "not ours")
    device.receive_data(host.data_to_send(), 0.0)
    events = host.receive_data(device.data_to_send(), 0.0)  # RESET_ACK and 4 frames, one read
    assert events == [PeerRefused("not ours")]
    assert host.state is LinkState.DOWN and host.data_to_send() == b""
    assert host.counters["refused"] == 1 and host.refusal is None
    assert device.backlog == 4


def test_a_missing_identity_is_the_checks_to_judge() -> None:
    device = Link(initiator=False, now=0.0)
    seen: list = []
    host = Link(initiator=True, now=0.0, check_identity=lambda i: seen.append(i) or "none")
    device.receive_data(host.data_to_send(), 0.0)
    assert host.receive_data(device.data_to_send(), 0.0) == [PeerRefused("none")]
    assert seen == [None]


def test_a_frame_the_host_cannot_take_is_not_acknowledged_and_ends_the_link() -> None:
    """The frames before it are delivered and acknowledged; it and all after it are not."""
    device = Link(initiator=False, now=0.0, boot_id=7, identity=INFO)
    host = Link(initiator=True, now=0.0,
                check_message=lambda kind, payload: "bad" if payload == b"c" else None)
    device.receive_data(host.data_to_send(), 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    for payload in (b"a", b"b", b"c", b"d"):
        device.send(FIRST_FAMILY_KIND, payload, 0.0)
    events = host.receive_data(device.data_to_send(), 0.0)
    assert [getattr(e, "payload", e) for e in events] == [b"a", b"b", PeerRefused("bad")]
    acks = [f for f in FrameDecoder().feed(host.data_to_send()) if f.kind == ACK]
    assert [f.payload for f in acks] == [b"\x00", b"\x01"]  # seq 2 ("c") is never acknowledged
    assert host.refusal == Refused(7, 2, "bad")
    device.receive_data(b"".join(encode_frame(f) for f in acks), 0.0)
    assert device.backlog == 2  # "c" and "d" stay with the device


def test_a_host_told_what_was_refused_refuses_the_device_at_the_handshake() -> None:
    device = Link(initiator=False, now=0.0, boot_id=7, identity=INFO)
    host = Link(initiator=True, now=0.0,
                check_message=lambda kind, payload: "bad" if payload == b"c" else None)
    device.receive_data(host.data_to_send(), 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    for payload in (b"a", b"c"):
        device.send(FIRST_FAMILY_KIND, payload, 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    device.receive_data(host.data_to_send(), 0.0)  # "a" acknowledged
    refused = host.refusal
    assert refused is not None and refused.number == 1
    # the device's next link starts with the refused message: refused before it comes up
    backlog, next_number = device.take_backlog(), device.next_number
    device2 = Link(initiator=False, now=1.0, boot_id=7, identity=INFO)
    device2.carry_over(backlog, next_number)
    host2 = Link(initiator=True, now=1.0, refused=refused,
                 check_message=lambda kind, payload: None)
    device2.receive_data(host2.data_to_send(), 1.0)
    assert host2.receive_data(device2.data_to_send(), 1.0) == [PeerRefused("bad")]
    assert host2.refusal == refused  # (kept for the next connection)
    # the same ACK lost with the refusing host: the journal's resume still places it first
    device3 = Link(initiator=False, now=2.0, boot_id=7, identity=INFO)
    device3.carry_over([(FIRST_FAMILY_KIND, b"a", 0), (FIRST_FAMILY_KIND, b"c", 1)], 2)
    host3 = Link(initiator=True, now=2.0, refused=refused, resume=Resume(7, 0))
    device3.receive_data(host3.data_to_send(), 2.0)
    assert host3.receive_data(device3.data_to_send(), 2.0) == [PeerRefused("bad")]
    # a rebooted device (another boot) is another situation: it comes up
    device4 = Link(initiator=False, now=3.0, boot_id=8, identity=INFO)
    host4 = Link(initiator=True, now=3.0, refused=refused)
    device4.receive_data(host4.data_to_send(), 3.0)
    assert host4.receive_data(device4.data_to_send(), 3.0) == [LinkUp()]


def test_the_host_answers_a_devices_reset_with_its_own_and_checks_it_again() -> None:
    """A device that restarts its link (or another device now at the port) must say again
    who it is: the host does not take a RESET as a link-up."""
    checked: list = []
    device = Link(initiator=False, now=0.0, identity=INFO)
    host = Link(initiator=True, now=0.0, check_identity=lambda i: checked.append(i))
    device.receive_data(host.data_to_send(), 0.0)
    host.receive_data(device.data_to_send(), 0.0)
    assert host.receive_data(encode_frame(Frame(0, RESET)), 1.0) == []
    assert host.state is LinkState.RESETTING
    assert [f.kind for f in FrameDecoder().feed(host.data_to_send())] == [RESET]
    host.receive_data(encode_frame(Frame(0, RESET)), 1.1)  # resetting: its own timer repeats
    assert host.data_to_send() == b""
    other = Link(initiator=False, now=1.2, identity=(0x16, b"\x01x\x01y"))
    other.receive_data(encode_frame(Frame(0, RESET)), 1.2)
    assert host.receive_data(other.data_to_send(), 1.2) == [LinkUp()]
    assert checked == [INFO, (0x16, b"\x01x\x01y")]


def test_an_identity_must_fit_a_reset_ack() -> None:
    with pytest.raises(LinkError):
        Link(initiator=False, now=0.0, identity=(0x20, bytes(247)))
    with pytest.raises(LinkError):
        Link(initiator=False, now=0.0, identity=(0x03, b""))  # a link kind
    Link(initiator=False, now=0.0, identity=(0x20, bytes(246)))
