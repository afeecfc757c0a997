"""Fuzz targets of the device side: serial framing, the link, each family's decoder, the dice
sequencer.

Owns, for each of them, a corpus made by the real encoders (frames of real shoe, shuffler and
link messages, a real host/device conversation, real dice reports) and the promises a run
holds them to beyond "no exception": any chunking gives the same frames, a decoder's output
re-encodes to its input, a decoded report normalizes to contract-valid events, a link's own
bytes are always intact frames, a sequencer delivers every report once and in order. It must
never change what the drivers do: it only calls their public, sans-IO surface.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from bench.fuzz.contract import InvariantBroken, check_event
from bench.fuzz.engine import Target, error_shape
from bench.fuzz.mutate import chunks, mutate_bytes, mutate_sequence, random_bytes
from tabled.contract.events import CARD_CODES, DEALER, Event
from tabled.drivers.dice import driver as dice_driver
from tabled.drivers.dice import protocol as dice
from tabled.drivers.dice.link import (
    AlreadyDurable,
    Deliver,
    LinkDown,
    ReportSequencer,
    ReportsLost,
    RequestResend,
    SequencerState,
)
from tabled.drivers.errors import ProtocolError
from tabled.drivers.framing import (
    ETX,
    MAX_BODY,
    MAX_PAYLOAD,
    CorruptFrame,
    Frame,
    FrameDecoder,
    crc16,
    encode_frame,
)
from tabled.drivers.link import (
    ACK,
    FIRST_FAMILY_KIND,
    HEARTBEAT,
    NAK,
    RESET,
    RESET_ACK,
    Link,
    LinkState,
    LinkUp,
    MessageReceived,
    Resume,
)
from tabled.drivers.link import LinkDown as SerialLinkDown
from tabled.drivers.shoe import driver as shoe_driver
from tabled.drivers.shoe import protocol as shoe
from tabled.drivers.shuffler import driver as shuffler_driver
from tabled.drivers.shuffler import protocol as shuffler

CARDS = sorted(CARD_CODES)
R = TypeVar("R")
def _check_events(events: Iterable[Event | None]) -> list[str]:
    labels = []
    for event in events:
        if event is not None:
            check_event(event)
            labels.append(f"event:{event.type}")
    return labels


# -- real messages of each family ---------------------------------------------------------------


def _ident(rng: random.Random) -> str:
    return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(1, 32)))


def shoe_messages(rng: random.Random) -> list[shoe.ShoeMessage]:
    """One of each shoe message, its fields drawn at random within the catalogue."""
    card_no = rng.choice((1, rng.randint(1, 624), shoe.MAX_CARD_NO))
    return [
        shoe.ShoeLoaded(rng.randint(1, 12)),
        shoe.CardOut(card_no, rng.choice(CARDS), rng.random() < 0.2),
        shoe.CutCardOut(rng.randint(0, 624)),
        shoe.ButtonPressed(rng.choice(list(shoe.Button))),
        shoe.DeviceFault(shoe.FaultCode.UNREADABLE_CARD, card_no, rng.random() < 0.3),
        shoe.DeviceFault(rng.choice((shoe.FaultCode.SENSOR_DIRTY, shoe.FaultCode.SHOE_EMPTY)),
                         rng.randint(0, 624)),
        shoe.ShoeStatus(rng.choice(list(shoe.ShoeState)), rng.randint(0, 12),
                        rng.randint(0, 624), *(rng.random() < 0.5 for _ in range(3))),
        shoe.DeviceInfo(_ident(rng), _ident(rng)),
        shoe.InfoRequest(),
        shoe.StatusRequest(),
    ]


def shuffler_messages(rng: random.Random) -> list[shuffler.Message]:
    """One of each shuffler-dealer message, its fields drawn at random within the catalogue."""
    seats = tuple(sorted(rng.sample(range(1, 21), rng.randint(0, 7))))
    seat: Any = rng.choice((DEALER, rng.randint(1, 254)))
    decks = rng.randint(1, 8)
    return [
        shuffler.InfoRequest(),
        shuffler.StatusRequest(),
        shuffler.Info(_ident(rng), _ident(rng)),
        shuffler.Status(rng.choice(list(shuffler.MachineState)), rng.choice(list(shuffler.Mode)),
                        rng.randint(0, 5), rng.randint(0, 0xFFFF), rng.randint(0, 624)),
        shuffler.ShuffleStarted(rng.choice(list(shuffler.Mode)), decks),
        shuffler.ShuffleComplete(),
        shuffler.DeckCheck(rng.choice(list(shuffler.Mode)), decks,
                           rng.choice((decks * 52, rng.randint(0, 0xFFFF)))),
        shuffler.RoundSeats(rng.randint(0, 0xFFFF), seats),
        shuffler.Hand(rng.randint(0, 0xFFFF), seat, tuple(rng.sample(CARDS, 3)),
                      tuple(rng.random() < 0.1 for _ in range(3))),
        shuffler.Card(rng.randint(0, 0xFFFF), rng.choice(CARDS)),
        shuffler.Fault(rng.randint(1, 255), rng.randint(0, 0xFFFF),
                       rng.choice((None, DEALER, rng.randint(1, 254)))),
    ]


def _link_frames(rng: random.Random) -> list[tuple[int, bytes]]:
    return [(ACK, bytes((rng.getrandbits(8),))), (NAK, bytes((rng.getrandbits(8),))),
            (RESET, b""), (RESET_ACK, rng.randbytes(8)), (HEARTBEAT, b"")]


def family_frames(rng: random.Random) -> list[tuple[int, bytes]]:
    """``(kind, payload)`` of every message the serial families and the link send."""
    return [*(shoe.encode(m) for m in shoe_messages(rng)),
            *(shuffler.encode(m) for m in shuffler_messages(rng)), *_link_frames(rng)]


def _with_kind(kind: int, payload: bytes) -> bytes:
    return bytes((kind,)) + payload


# -- framing ------------------------------------------------------------------------------------


def _framing_corpus(rng: random.Random) -> list[bytes]:
    corpus = []
    for _ in range(300):
        frames = [Frame(rng.getrandbits(8), kind, payload)
                  for kind, payload in rng.sample(family_frames(rng), rng.randint(1, 5))]
        if rng.random() < 0.1:  # the longest frame, dense with bytes that need stuffing
            payload = bytes(rng.choice((0x02, 0x03, 0x10, rng.getrandbits(8)))
                            for _ in range(MAX_PAYLOAD))
            frames.append(Frame(rng.getrandbits(8), FIRST_FAMILY_KIND, payload))
        corpus.append(b"".join(encode_frame(frame) for frame in frames))
    return corpus


def _run_framing(data: bytes, rng: random.Random) -> list[str]:
    whole = FrameDecoder()
    items = whole.feed(data)
    pieces = FrameDecoder()
    chunked = [item for piece in chunks(rng, data) for item in pieces.feed(piece)]
    if chunked != items or pieces.counters != whole.counters:
        raise InvariantBroken("a different chunking gave different frames or counters")
    items += whole.feed(bytes((ETX,)))  # end whatever is buffered: the buffer is capped
    labels = {"garbage"} if whole.counters["garbage"] else set()
    for item in items:
        if isinstance(item, Frame):
            if FrameDecoder().feed(encode_frame(item)) != [item]:
                raise InvariantBroken(f"{item} does not survive its own encoding")
            labels.add("frame")
        elif isinstance(item, CorruptFrame):
            if len(item.raw) > MAX_BODY + 1:
                raise InvariantBroken(f"{len(item.raw)} bytes buffered past the cap")
            labels.add(f"corrupt:{item.reason}")
        else:
            raise InvariantBroken(f"the decoder returned {item!r}")
    corrupt = sum(isinstance(item, CorruptFrame) for item in items)
    damaged = sum(count for name, count in whole.counters.items()
                  if name not in ("frames", "garbage"))
    if whole.counters["frames"] != len(items) - corrupt or damaged != corrupt:
        raise InvariantBroken(f"counters {dict(whole.counters)} disagree with {len(items)} items")
    return sorted(labels)


FRAMING = Target[bytes](
    name="framing",
    summary="tabled.drivers.framing.FrameDecoder.feed: whole and in random chunks",
    corpus=_framing_corpus, mutate=mutate_bytes, run=_run_framing, fresh=random_bytes,
)


# -- link ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkCase:
    """What one side of a link hears: ``(seconds later, bytes)`` steps, and whether it is the
    host (``initiator``), with what it already made durable (``resume``)."""

    initiator: bool
    steps: tuple[tuple[float, bytes], ...]
    resume: Resume | None = None


def _conversation(rng: random.Random) -> list[LinkCase]:
    """A real exchange between a host and a shoe over two links: what each side received."""
    boot_id, first = rng.getrandbits(32), rng.choice((0, rng.getrandbits(32)))
    host = Link(initiator=True, now=0.0)
    device = Link(initiator=False, now=0.0, boot_id=boot_id, first_number=first)
    to_host: list[tuple[float, bytes]] = []
    to_device: list[tuple[float, bytes]] = []
    now = 0.0
    last_heard = {host: now, device: now}
    for _ in range(rng.randint(4, 40)):
        now += rng.choice((0.01, 0.05, 0.3, 1.2))
        if device.state is LinkState.CONNECTED and rng.random() < 0.6:
            device.send(*shoe.encode(rng.choice(shoe_messages(rng)[:6])), now)
        if host.state is LinkState.CONNECTED and rng.random() < 0.1:
            host.send(*shoe.encode(shoe.StatusRequest()), now)
        for sender, receiver, log in ((device, host, to_host), (host, device, to_device)):
            data = sender.data_to_send()
            if data:
                log.append((now - last_heard[receiver], data))
                last_heard[receiver] = now
                receiver.receive_data(data, now)
        host.poll(now)
        device.poll(now)
    resume = Resume(boot_id, (first + rng.randint(0, 5)) & 0xFFFFFFFF)
    return [LinkCase(True, tuple(to_host), resume if rng.random() < 0.5 else None),
            LinkCase(False, tuple(to_device))]


def _link_corpus(rng: random.Random) -> list[LinkCase]:
    return [case for _ in range(150) for case in _conversation(rng)]


def _respun_frames(rng: random.Random, data: bytes) -> bytes:
    """``data``'s frames with one of them changed *inside* its CRC: another sequence number,
    kind or payload, framed and checksummed again, so the link's logic sees it, not its CRC."""
    frames = [item for item in FrameDecoder().feed(data) if isinstance(item, Frame)]
    if not frames:
        return data
    at = rng.randrange(len(frames))
    frame = frames[at]
    draw = rng.random()
    if draw < 0.4:
        seq = (frame.seq + rng.choice((-2, -1, 1, 2, 4, 5, 128))) & 0xFF
        frames[at] = replace(frame, seq=seq)
    elif draw < 0.7:
        kind = rng.choice((ACK, NAK, RESET, RESET_ACK, HEARTBEAT, 0x00, 0x06, 0x0F,
                           FIRST_FAMILY_KIND, 0xFF))
        frames[at] = replace(frame, kind=kind)
    else:
        frames[at] = replace(frame, payload=mutate_bytes(rng, frame.payload, ())[:MAX_PAYLOAD])
    return b"".join(encode_frame(frame) for frame in frames)


def _mutate_link(rng: random.Random, case: LinkCase, corpus: Sequence[LinkCase]) -> LinkCase:
    steps = list(case.steps)
    draw = rng.random()
    if draw < 0.25 and steps:
        at = rng.randrange(len(steps))
        donors = [data for other in rng.sample(corpus, 3) for _, data in other.steps]
        steps[at] = (steps[at][0], mutate_bytes(rng, steps[at][1], donors))
    elif draw < 0.45 and steps:
        at = rng.randrange(len(steps))
        steps[at] = (steps[at][0], _respun_frames(rng, steps[at][1]))
    elif draw < 0.7:
        steps = mutate_sequence(rng, steps, rng.choice(corpus).steps)
    elif draw < 0.85:  # the same bytes, cut elsewhere
        pieces = chunks(rng, b"".join(data for _, data in steps))
        steps = [(rng.choice((0.0, 0.01, 0.3)), piece) for piece in pieces]
    elif steps:  # a pause: the peer's silence, a retransmission, a lost RESET
        at = rng.randrange(len(steps))
        steps[at] = (rng.choice((0.26, 0.6, 2.5, 6.0)), steps[at][1])
    if rng.random() < 0.05:
        return replace(case, initiator=not case.initiator, steps=tuple(steps))
    return replace(case, steps=tuple(steps))


def _check_own_bytes(data: bytes) -> None:
    decoder = FrameDecoder()
    items = decoder.feed(data)
    if not all(isinstance(item, Frame) for item in items) or decoder.counters["garbage"]:
        raise InvariantBroken(f"the link wrote damaged frames: {data!r}")


def _run_link(case: LinkCase, rng: random.Random) -> list[str]:
    link = Link(initiator=case.initiator, now=0.0, boot_id=0x5EED, resume=case.resume)
    labels: set[str] = set()
    now, last_number = 0.0, None
    down = False
    for pause, data in case.steps:
        now += pause
        # The timers fire as the time passes, before the bytes that come after it.
        events = [*link.poll(now), *link.receive_data(data, now)]
        for event in events:
            if down:
                raise InvariantBroken(f"{event} after the link went down")
            if isinstance(event, LinkUp):
                last_number = None
                labels.add("up")
            elif isinstance(event, SerialLinkDown):
                down = True
                labels.add(f"down:{event.reason}")
            elif isinstance(event, MessageReceived):
                _check_delivery(link, case.resume, event, last_number)
                last_number = event.number
                labels.add("message")
            else:
                raise InvariantBroken(f"the link returned {event!r}")
        _check_own_bytes(link.data_to_send())
        if link.state is LinkState.CONNECTED and rng.random() < 0.3:
            link.send(rng.randint(FIRST_FAMILY_KIND, 0xFF), rng.randbytes(rng.randint(0, 40)),
                      now)
            _check_own_bytes(link.data_to_send())
        if (link.next_deadline() is None) != (link.state is LinkState.DOWN):
            raise InvariantBroken(f"next_deadline {link.next_deadline()} in {link.state}")
    labels.update(f"counter:{name}" for name, count in link.counters.items() if count)
    labels.add(f"{'host' if case.initiator else 'device'}:{link.state.value}")
    return sorted(labels)


def _check_delivery(link: Link, resume: Resume | None, event: MessageReceived,
                    last: int | None) -> None:
    """A message is a family kind, fits a frame, and comes once and in order: numbers advance
    by one between resets (by more only past what ``resume`` says is durable already)."""
    if event.kind < FIRST_FAMILY_KIND or len(event.payload) > MAX_PAYLOAD:
        raise InvariantBroken(f"delivered {event}")
    if event.number is None or last is None:
        return
    step = (event.number - last) & 0xFFFFFFFF
    if step != 1 and (resume is None or not 1 <= step < 1 << 31):
        raise InvariantBroken(f"message {event.number} delivered after {last}")
    if resume is not None and link.peer_boot_id == resume.boot_id and event.number <= resume.last:
        raise InvariantBroken(f"message {event.number} was durable already (resume {resume})")


LINK = Target[LinkCase](
    name="link",
    summary="tabled.drivers.link.Link.receive_data and poll, host and device side",
    corpus=_link_corpus, mutate=_mutate_link, run=_run_link,
)


# -- the families' message decoders ------------------------------------------------------------


def _split(data: bytes) -> tuple[int, bytes]:
    return (data[0], data[1:]) if data else (FIRST_FAMILY_KIND, b"")


def _shoe_corpus(rng: random.Random) -> list[bytes]:
    return [_with_kind(*shoe.encode(m)) for _ in range(60) for m in shoe_messages(rng)]


def _run_shoe(data: bytes, rng: random.Random) -> list[str]:
    kind, payload = _split(data)
    try:
        message = shoe.decode(kind, payload)
    except ProtocolError as exc:
        return [error_shape(exc)]
    if shoe.encode(message) != (kind, payload):  # the module promises a canonical encoding
        raise InvariantBroken(f"{message} re-encodes to {shoe.encode(message)}, not {data!r}")
    labels = [type(message).__name__]
    if isinstance(message, shoe.REPORTS):
        labels += _check_events([shoe_driver.normalize(message)])
    return labels


SHOE = Target[bytes](
    name="shoe",
    summary="tabled.drivers.shoe.protocol.decode (kind byte + payload), then the "
            "driver's normalize",
    corpus=_shoe_corpus, mutate=mutate_bytes, run=_run_shoe, fresh=random_bytes,
)


def _shuffler_corpus(rng: random.Random) -> list[bytes]:
    return [_with_kind(*shuffler.encode(m)) for _ in range(60) for m in shuffler_messages(rng)]


def _run_shuffler(data: bytes, rng: random.Random) -> list[str]:
    kind, payload = _split(data)
    try:
        message = shuffler.decode(kind, payload)
    except ProtocolError as exc:
        return [error_shape(exc)]
    if shuffler.encode(message) != (kind, payload):
        raise InvariantBroken(f"{message} re-encodes to {shuffler.encode(message)}")
    status = shuffler.Status(rng.choice(list(shuffler.MachineState)),
                             rng.choice(list(shuffler.Mode)))
    status.after(message)  # the driver mirrors the machine's state with every message
    return [type(message).__name__, *_check_events(shuffler_driver.normalize(message))]


SHUFFLER = Target[bytes](
    name="shuffler",
    summary="tabled.drivers.shuffler.protocol.decode, Status.after and the driver's normalize",
    corpus=_shuffler_corpus, mutate=mutate_bytes, run=_run_shuffler, fresh=random_bytes,
)


def dice_reports(rng: random.Random, number: int) -> list[dice.Report]:
    """One of each dice report numbered ``number``, fields drawn within the protocol."""
    return [
        dice.RollReport(number, rng.randint(1, 6), rng.randint(1, 6), rng.randint(0, 100),
                        rng.choice((0, 0, 0, 1, 2, 3))),
        dice.NoRollReport(number, rng.randint(1, 3)),
        dice.SensorFaultReport(number, rng.choice(list(dice.SensorFaultCode))),
        dice.StatusReport(number, (number - rng.randint(0, 3)) % dice.NUMBER_MODULO,
                          rng.choice(list(dice.SensorState)),
                          rng.choice((None, *dice.SensorFaultCode)), rng.getrandbits(32)),
    ]


def _dice_corpus(rng: random.Random) -> list[bytes]:
    corpus = []
    for _ in range(100):
        corpus += [dice.encode_report(r) for r in dice_reports(rng, rng.getrandbits(32))]
        corpus.append(dice.encode_info(dice.DeviceInfo(
            dice.PROTOCOL_VERSION, (rng.randint(0, 9), rng.randint(0, 99), rng.randint(0, 255)),
            rng.getrandbits(32), "".join(chr(rng.randint(0x21, 0x7E))
                                         for _ in range(rng.randint(1, dice.SERIAL_SIZE))))))
        corpus.append(dice.encode_resend_reply(dice.ResendReply(
            rng.getrandbits(32), rng.randint(0, dice.RETAINED_REPORTS))))
    return corpus


def _mutate_dice(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    """Spoiled bytes; half the time a report-sized packet gets its CRC made right again, so the
    content checks behind the CRC are fuzzed, not only the CRC."""
    spoiled = mutate_bytes(rng, data, corpus)
    if len(spoiled) == dice.REPORT_SIZE and rng.random() < 0.5:
        return spoiled[:-2] + crc16(spoiled[:-2]).to_bytes(2, "big")
    return spoiled


def _run_dice(data: bytes, rng: random.Random) -> list[str]:
    """The packet as a report, and as the GET_INFO and RESEND replies: each decodes to what
    re-encodes to it, or is refused with ProtocolError."""
    labels = []
    try:
        report = dice.decode_report(data)
    except dice.ReportDamaged as exc:
        labels.append(f"report:{exc.reason}")
    else:
        if dice.encode_report(report) != data:
            raise InvariantBroken(f"{report} re-encodes differently from {data!r}")
        labels.append(type(report).__name__)
        if not isinstance(report, dice.StatusReport):
            labels += _check_events(dice_driver.normalize(report))
    return [*labels, _reply(dice.decode_info, dice.encode_info, data),
            _reply(dice.decode_resend_reply, dice.encode_resend_reply, data)]


def _reply(decode: Callable[[bytes], R], encode: Callable[[R], bytes], data: bytes) -> str:
    """A control request's reply decoded: refused, or re-encoding to the very same bytes."""
    try:
        reply = decode(data)
    except ProtocolError as exc:
        return error_shape(exc)
    if encode(reply) != data:
        raise InvariantBroken(f"{reply} re-encodes differently from {data!r}")
    return type(reply).__name__


DICE = Target[bytes](
    name="dice",
    summary="tabled.drivers.dice.protocol: decode_report, decode_info, "
            "decode_resend_reply, normalize",
    corpus=_dice_corpus, mutate=_mutate_dice, run=_run_dice,
    fresh=lambda rng: rng.choice((rng.randbytes(dice.REPORT_SIZE), random_bytes(rng, 40))),
)


# -- the dice sequencer -------------------------------------------------------------------------

PACKET, RESEND_REPLY, POLL = "packet", "resend_reply", "poll"


@dataclass(frozen=True)
class SequencerCase:
    """A connection as the sequencer sees it: the device's status at connect (``next_number``,
    ``unacked_from``), what the host had made durable, then ``(what, seconds later, bytes)``
    steps: interrupt packets, RESEND replies and timer polls."""

    next_number: int
    unacked_from: int
    durable_from: int | None
    steps: tuple[tuple[str, float, bytes], ...]


def _device_session(rng: random.Random) -> SequencerCase:
    """What a sensor sends from a connect: reports in order, heartbeats, a RESEND answered."""
    base = rng.choice((0, rng.getrandbits(32), dice.NUMBER_MODULO - rng.randint(1, 20)))
    unacked = (base - rng.randint(0, 4)) % dice.NUMBER_MODULO
    number = base
    steps: list[tuple[str, float, bytes]] = []
    for _ in range(rng.randint(3, 40)):
        pause = rng.choice((0.01, 0.1, 0.6, 1.0))
        draw = rng.random()
        if draw < 0.6:
            report = rng.choice(dice_reports(rng, number)[:3])
            steps.append((PACKET, pause, dice.encode_report(report)))
            number = (number + 1) % dice.NUMBER_MODULO
        elif draw < 0.8:
            status = dice.StatusReport(number, unacked)
            steps.append((PACKET, pause, dice.encode_report(status)))
        elif draw < 0.9:
            reply = dice.ResendReply(unacked, rng.randint(0, 8))
            steps.append((RESEND_REPLY, pause, dice.encode_resend_reply(reply)))
        else:
            steps.append((POLL, pause, b""))
    durable = rng.choice((None, (unacked + rng.randint(0, 6)) % dice.NUMBER_MODULO))
    return SequencerCase(base, unacked, durable, tuple(steps))


def _sequencer_corpus(rng: random.Random) -> list[SequencerCase]:
    return [_device_session(rng) for _ in range(300)]


def _mutate_sequencer(rng: random.Random, case: SequencerCase,
                      corpus: Sequence[SequencerCase]) -> SequencerCase:
    steps = list(case.steps)
    draw = rng.random()
    if draw < 0.4 and steps:
        at = rng.randrange(len(steps))
        what, pause, data = steps[at]
        donors = [step[2] for step in rng.choice(corpus).steps]
        steps[at] = (what, pause, mutate_bytes(rng, data, donors))
    elif draw < 0.8:  # lost, repeated, reordered packets: what the sequencer is for
        steps = mutate_sequence(rng, steps, rng.choice(corpus).steps)
    elif draw < 0.9 and steps:
        at = rng.randrange(len(steps))
        steps[at] = (steps[at][0], rng.choice((0.5, 0.6, 3.6, 10.0)), steps[at][2])
    else:
        shift = rng.choice((-1, 1, 64, 1 << 31))
        return replace(case, unacked_from=(case.unacked_from + shift) % dice.NUMBER_MODULO,
                       durable_from=rng.choice((None, rng.getrandbits(32), case.next_number)))
    return replace(case, steps=tuple(steps))


class _Tracker:
    """The sequencer's promise, kept independently: the next number it must deliver."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.down = False

    def take(self, outputs: Sequence[object]) -> list[str]:
        labels = []
        for output in outputs:
            if self.down:
                raise InvariantBroken(f"{output!r} after the link went down")
            if isinstance(output, Deliver):
                if output.report.number != self.expected:
                    raise InvariantBroken(f"delivered {output.report.number}, "
                                          f"expected {self.expected}")
                self.expected = output.ack
            elif isinstance(output, ReportsLost):
                if output.first != self.expected or output.count < 1:
                    raise InvariantBroken(f"{output} while expecting {self.expected}")
                self.expected = (output.first + output.count) % dice.NUMBER_MODULO
            elif isinstance(output, RequestResend):
                if output.from_number != self.expected:
                    raise InvariantBroken(f"{output} while expecting {self.expected}")
            elif isinstance(output, AlreadyDurable):
                self.expected = output.ack
            elif isinstance(output, LinkDown):
                self.down = True
            else:
                raise InvariantBroken(f"the sequencer returned {output!r}")
            labels.append(type(output).__name__)
        return labels


def _run_sequencer(case: SequencerCase, rng: random.Random) -> list[str]:
    sequencer = ReportSequencer(now=0.0)
    # The host owes every report from what its journal made durable: from there when the
    # device holds less (it forgot some, which must be named lost), else from what it holds.
    durable = case.durable_from
    behind = durable is not None and dice.number_is_ahead(durable, case.unacked_from)
    tracker = _Tracker(durable if behind and durable is not None else case.unacked_from)
    status = dice.StatusReport(case.next_number, case.unacked_from)
    labels = set(tracker.take(sequencer.synchronise(status, 0.0, case.durable_from)))
    now = 0.0
    for what, pause, data in case.steps:
        now += pause
        if what == PACKET:
            outputs = sequencer.packet_received(data, now)
        elif what == RESEND_REPLY:
            try:
                reply = dice.decode_resend_reply(data)
            except ProtocolError:
                continue  # the adapter counts it; the sequencer never sees it
            outputs = sequencer.resend_answered(reply)
        else:
            outputs = sequencer.poll(now)
        labels.update(tracker.take(outputs))
        if sequencer.expected != tracker.expected:
            raise InvariantBroken(f"expects {sequencer.expected}, delivered up to "
                                  f"{tracker.expected}")
        if tracker.down != (sequencer.state is SequencerState.DOWN):
            raise InvariantBroken(f"state {sequencer.state} after {outputs}")
    labels.update(f"counter:{name}" for name, count in sequencer.counters.items() if count)
    return sorted(labels)


SEQUENCER = Target[SequencerCase](
    name="dice_sequencer",
    summary="tabled.drivers.dice.link.ReportSequencer: packets, RESEND replies, timers",
    corpus=_sequencer_corpus, mutate=_mutate_sequencer, run=_run_sequencer,
)

TARGETS: tuple[Target[Any], ...] = (FRAMING, LINK, SHOE, SHUFFLER, DICE, SEQUENCER)
