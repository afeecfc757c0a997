"""The shuffler-dealer's protocol, normalization and scripted sessions, without any I/O.

Round trips and garbage for the message catalogue, the documented byte-level examples, the
events each message stands for (docs/contract.md; Q Poker Art. 7(2), 11.2, 11.3, 11.5; baccarat
Art. 1, 7), the machine's status, and the simulator's sessions, including through a link fed in
any chunking.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import (
    CARD_CODES,
    CardDealt,
    Event,
    Fault,
    HandDealt,
    RoundStart,
    ShoeStart,
    encode_event,
    event_to_dict,
    exposed_cards,
    parse_event,
)
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import ProtocolError
from tabled.drivers.framing import Frame, FrameDecoder, encode_frame
from tabled.drivers.link import Link, LinkState, MessageReceived
from tabled.drivers.shuffler import protocol as p
from tabled.drivers.shuffler.driver import normalize
from tabled.games.registry import make_table
from tabled.simulators.faults import ByteFault, FaultSpecError
from tabled.simulators.shuffler import (
    DECK,
    FIRMWARE,
    MachineFault,
    ScriptError,
    baccarat_script,
    parse_cards,
    parse_fault,
    parse_seats,
    qpoker_script,
    reply,
)

DOC = Path(__file__).parents[2] / "docs" / "protocols" / "shuffler.md"

cards = st.sampled_from(sorted(CARD_CODES))
seats = st.one_of(st.just("dealer"), st.integers(1, 254))
rounds = st.integers(0, 0xFFFF)
modes = st.sampled_from(p.Mode)
ascii_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=32)
messages = st.one_of(
    st.just(p.InfoRequest()),
    st.just(p.StatusRequest()),
    st.builds(p.Info, ascii_text, ascii_text),
    st.builds(p.Status, st.sampled_from(p.MachineState), modes, st.integers(0, 255), rounds,
              st.integers(0, 0xFFFF)),
    st.builds(p.ShuffleStarted, modes, st.integers(1, 255)),
    st.just(p.ShuffleComplete()),
    st.builds(p.DeckCheck, modes, st.integers(1, 255), st.integers(0, 0xFFFF)),
    st.builds(p.RoundSeats, rounds,
              st.sets(st.integers(1, 254), max_size=20).map(lambda s: tuple(sorted(s)))),
    st.builds(p.Hand, rounds, seats, st.tuples(cards, cards, cards),
              st.tuples(st.booleans(), st.booleans(), st.booleans())),
    st.builds(p.Card, st.integers(0, 0xFFFF), cards),
    st.builds(p.Fault, st.integers(1, 255), rounds, st.one_of(st.none(), seats)),
)


# -- the message catalogue ---------------------------------------------------------------------


@settings(max_examples=400)
@given(messages)
def test_every_message_survives_encode_then_decode(msg: p.Message) -> None:
    kind, payload = p.encode(msg)
    assert len(payload) <= 255
    assert p.decode(kind, payload) == msg


@settings(max_examples=800)
@given(st.one_of(st.sampled_from(sorted(p.MESSAGE_TYPES)), st.integers(0, 255)),
       st.one_of(st.binary(max_size=12), st.binary(max_size=255)))
def test_arbitrary_payload_bytes_give_a_message_or_a_protocol_error(kind: int,
                                                                    payload: bytes) -> None:
    try:
        msg = p.decode(kind, payload)
    except ProtocolError:
        return
    assert p.encode(msg) == (kind, payload)  # what decodes is exactly what was sent


def test_card_bytes_are_rank_nibble_and_suit_nibble_for_all_52_cards() -> None:
    assert p.card_byte("AS") == 0x10 and p.card_byte("TD") == 0xA3 and p.card_byte("KD") == 0xD3
    assert {p.card_from_byte(p.card_byte(c)) for c in CARD_CODES} == CARD_CODES
    non_cards = [b for b in range(256) if b not in {p.card_byte(c) for c in CARD_CODES}]
    assert len(non_cards) == 256 - 52
    for byte in non_cards:
        with pytest.raises(ProtocolError):
            p.card_from_byte(byte)


@pytest.mark.parametrize("msg", [
    p.Hand(1, 3, ("AS", "KH")),
    p.Hand(1, 3, ("AS", "KH", "XX")),
    p.Hand(1, 255, ("AS", "KH", "TD")),
    p.RoundSeats(1, (3, 1)),
    p.RoundSeats(1, (0, 1)),
    p.Info("fw", "sérial"),
    p.Info("x" * 33, "sn"),
    p.Card(70_000, "AS"),
    p.Fault(0),
    p.ShuffleStarted(p.Mode.QPOKER, 0),
], ids=repr)
def test_encoding_what_the_wire_cannot_carry_is_our_error(msg: p.Message) -> None:
    with pytest.raises(ValueError) as info:
        p.encode(msg)
    assert not isinstance(info.value, ProtocolError)


@pytest.mark.parametrize("kind, payload, reason", [
    (0x7F, b"", "unknown message kind"),
    (p.HAND, bytes.fromhex("0001 03 10d1a3 08"), "fourth card"),
    (p.HAND, bytes.fromhex("0001 ff 10d1a3 00"), "no seat"),
    (p.ROUND_SEATS, bytes.fromhex("0001 02 0503"), "ascending"),
    (p.ROUND_SEATS, bytes.fromhex("0001 03 0103"), "too short"),
    (p.STATUS, bytes.fromhex("09 01 00 0000 0034"), "MachineState"),
    (p.DECK_CHECK, bytes.fromhex("01 00 0034"), "0 decks"),
    (p.SHUFFLE_COMPLETE, b"\x00", "left over"),
    (p.FAULT, bytes.fromhex("00 0000 ff"), "no fault"),
    (p.INFO, b"\x02\x00\x01\x00", "printable"),
])
def test_invalid_content_is_a_protocol_error_that_says_why(kind: int, payload: bytes,
                                                           reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        p.decode(kind, payload)


def test_documented_byte_level_examples_decode_and_normalize_as_documented() -> None:
    """docs/protocols/shuffler.md: each example's frame, message and events agree."""
    blocks = re.findall(r"```text\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 15
    kinds = set()
    for block in blocks:
        fields = [line.split(":", 1) for line in block.strip().splitlines()]
        assert fields[0][0] == "frame" and fields[1][0] == "message", block
        decoded = FrameDecoder().feed(bytes.fromhex(fields[0][1]))
        assert len(decoded) == 1 and isinstance(decoded[0], Frame), block
        msg = p.decode(decoded[0].kind, decoded[0].payload)
        assert repr(msg) == fields[1][1].strip()
        assert encode_frame(decoded[0]) == bytes.fromhex(fields[0][1])
        events = [value.strip() for key, value in fields[2:] if key == "event"]
        assert [encode_event(e) for e in normalize(msg)] == events
        kinds.add(decoded[0].kind)
    assert kinds == set(p.MESSAGE_TYPES), "every message kind has an example"


# -- the machine's status ----------------------------------------------------------------------


def test_status_follows_a_round_from_shuffle_to_the_dealers_hand() -> None:
    """Art. 7(2): the dealer's hand is the round's last, so the machine is idle after it."""
    status = p.Status(p.MachineState.IDLE, p.Mode.QPOKER)
    states = []
    for msg in [p.ShuffleStarted(p.Mode.QPOKER, 1), p.ShuffleComplete(),
                p.DeckCheck(p.Mode.QPOKER, 1, 52), p.RoundSeats(4, (2,)),
                p.Hand(4, 2, ("AS", "KS", "QS")), p.Hand(4, "dealer", ("2S", "3S", "4S"))]:
        status = status.after(msg)
        states.append(status.state.name)
    assert states == ["SHUFFLING", "CHECKING", "READY", "DEALING", "DEALING", "IDLE"]
    assert (status.round, status.deck_count, status.fault) == (4, 52, 0)


def test_status_halts_on_a_miscount_and_a_fault_until_the_next_shuffle_or_report() -> None:
    status = p.Status(p.MachineState.READY, p.Mode.QPOKER)
    short = status.after(p.DeckCheck(p.Mode.QPOKER, 1, 51))
    assert (short.state, short.fault, short.deck_count) == (p.MachineState.HALTED, 4, 51)
    assert status.after(p.Fault(p.DeviceFault.DOOR_OPEN)).fault == 3
    cleared = p.Status(p.MachineState.IDLE, p.Mode.QPOKER, 0, 7, 52)
    assert short.after(cleared) == cleared
    assert short.after(p.ShuffleStarted(p.Mode.QPOKER, 1)).fault == 0
    assert status.after(p.Info("a", "b")) == status


# -- normalization -----------------------------------------------------------------------------


def bare(events: list[Event]) -> list[dict]:
    return [event_to_dict(e) for e in events]


def test_round_seats_are_a_round_start_with_the_positions_that_have_a_bet() -> None:
    assert normalize(p.RoundSeats(1, (1, 3, 5))) == [RoundStart(seats=(1, 3, 5))]


def test_a_face_down_hand_is_a_hand_event_of_three_cards() -> None:
    """Art. 7(2): three cards at a time, face down."""
    [event] = normalize(p.Hand(2, 6, ("AS", "KH", "TD")))
    assert event == HandDealt(seat=6, cards=("AS", "KH", "TD"), face_up=False)


@pytest.mark.parametrize("seat", [4, "dealer"])
def test_an_exposed_card_is_named_alone_and_the_hand_stays_face_down(seat) -> None:
    """Issue 16 item 4: the machine saw one card of the hand face up; the hand is not face up
    (its other two cards are as face down as any), the event names the one card, and a fault
    that names no card follows (a dealer's card must not leak before reveal). Art. 11.2 / 11.3
    are the rules core's."""
    hand, fault = normalize(p.Hand(2, seat, ("AS", "KH", "TD"), (False, False, True)))
    assert isinstance(hand, HandDealt) and hand.face_up is False
    assert hand.extra == {"exposed": ["TD"]}
    assert exposed_cards(hand) == ("TD",)
    assert isinstance(fault, Fault) and fault.code == "card_exposed"
    assert fault.extra["device_code"] == 5 and fault.extra["seat"] == seat
    assert not any(card in (fault.detail or "") for card in ("AS", "KH", "TD"))


def test_a_hand_seen_wholly_face_up_is_a_face_up_hand() -> None:
    hand, _ = normalize(p.Hand(2, 4, ("AS", "KH", "TD"), (True, True, True)))
    assert isinstance(hand, HandDealt) and hand.face_up is True
    assert exposed_cards(hand) == ("AS", "KH", "TD")


@settings(max_examples=200)
@given(st.builds(p.Hand, rounds, seats, st.lists(cards, min_size=3, max_size=3,
                                                 unique=True).map(tuple),
                 st.tuples(st.booleans(), st.booleans(), st.booleans())))
def test_the_event_exposes_exactly_the_cards_the_machine_saw(hand: p.Hand) -> None:
    """The class of item 4: a flag must not say more than the machine saw, for any mask."""
    event = normalize(hand)[0]
    assert isinstance(event, HandDealt)
    assert exposed_cards(event) == hand.exposed_cards
    assert event.face_up is all(hand.exposed)


@settings(max_examples=200)
@given(st.builds(p.Hand, rounds, seats, st.tuples(cards, cards, cards),
                 st.tuples(st.booleans(), st.booleans(), st.booleans())))
def test_no_fault_text_ever_names_a_card(hand: p.Hand) -> None:
    for event in normalize(hand):
        if isinstance(event, Fault):
            assert not any(card in encode_event(event) for card in hand.cards)
        parse_event(event_to_dict(event))  # and every event is valid contract input


def test_a_baccarat_card_is_a_card_event_face_up() -> None:
    """Baccarat Art. 7: with an automatic shuffler-dealer, cards come out face up."""
    assert normalize(p.Card(12, "9H")) == [CardDealt(card="9H", face_up=True)]


@pytest.mark.parametrize("found", [51, 53])
def test_a_wrong_deck_count_is_a_deck_count_fault(found: int) -> None:
    [fault] = normalize(p.DeckCheck(p.Mode.QPOKER, 1, found))
    assert fault == Fault(code="deck_count", detail=f"4 deck count: {found} cards (52 expected)")
    assert fault.extra == {"device_code": 4, "found": found, "expected": 52}


def test_a_right_count_is_nothing_for_qpoker_and_a_new_shoe_for_baccarat() -> None:
    """Baccarat Art. 1: a freshly counted set restarts the shoe's card counts."""
    assert normalize(p.DeckCheck(p.Mode.QPOKER, 1, 52)) == []
    assert normalize(p.DeckCheck(p.Mode.BACCARAT, 8, 416)) == [ShoeStart(decks=8)]
    assert normalize(p.DeckCheck(p.Mode.BACCARAT, 8, 415))[0].code == "deck_count"


@pytest.mark.parametrize("code, expected", [
    (1, "shuffler_jam"), (2, "shuffler_failure"), (3, "shuffler_door_open"),
    (4, "deck_count"), (5, "card_exposed"), (42, "shuffler_failure"),
])
def test_each_device_fault_number_maps_to_its_stable_code(code: int, expected: str) -> None:
    """Art. 11.5: an alarm the driver cannot name is still the machine failing."""
    [fault] = normalize(p.Fault(code, 3, "dealer"))
    assert fault.code == expected
    assert fault.detail is not None and fault.detail.startswith(f"{code} ")
    assert fault.detail.endswith("round 3, dealing the dealer")
    assert fault.extra == {"device_code": code, "round": 3, "seat": "dealer"}


def test_bookkeeping_messages_are_no_events() -> None:
    for msg in (p.Info("a", "b"), p.Status(p.MachineState.IDLE, p.Mode.QPOKER),
                p.ShuffleStarted(p.Mode.QPOKER, 1), p.ShuffleComplete(), p.InfoRequest()):
        assert normalize(msg) == []


def test_the_machine_answers_info_and_status_requests_only() -> None:
    status = p.Status(p.MachineState.READY, p.Mode.BACCARAT)
    assert reply(p.InfoRequest(), status) == p.Info(FIRMWARE, "SD7-004217")
    assert reply(p.StatusRequest(), status) is status
    assert reply(p.ShuffleComplete(), status) is None


# -- scripted sessions -------------------------------------------------------------------------


def rounds_of(script: list[p.Message]) -> list[list[p.Message]]:
    """Each round's messages, from its ROUND_SEATS to the next shuffle."""
    out: list[list[p.Message]] = []
    dealing = False
    for msg in script:
        if isinstance(msg, p.RoundSeats):
            out.append([])
        dealing = isinstance(msg, p.RoundSeats) or (dealing
                                                   and not isinstance(msg, p.ShuffleStarted))
        if dealing:
            out[-1].append(msg)
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6))
def test_qpoker_rounds_deal_three_cards_per_seat_ascending_dealer_last(seed: int,
                                                                        n: int) -> None:
    """Art. 7(2) and Art. 1 (one deck): every round is a fresh shuffle of 52 checked cards."""
    script = qpoker_script(random.Random(seed), rounds=n)
    assert sum(isinstance(m, p.ShuffleStarted) for m in script) == n
    assert [m.found for m in script if isinstance(m, p.DeckCheck)] == [52] * n
    for number, rnd in enumerate(rounds_of(script), start=1):
        seats_msg, *hands = rnd
        assert isinstance(seats_msg, p.RoundSeats) and seats_msg.round == number
        assert all(1 <= s <= 7 for s in seats_msg.seats)
        assert [h.seat for h in hands] == [*seats_msg.seats, "dealer"]
        assert all(isinstance(h, p.Hand) and len(h.cards) == 3 and not any(h.exposed)
                   for h in hands)
        dealt = [c for h in hands for c in h.cards]
        assert len(set(dealt)) == len(dealt)


def test_the_seed_decides_the_session_and_explicit_seats_and_cards_are_kept() -> None:
    assert qpoker_script(random.Random(5)) == qpoker_script(random.Random(5))
    assert qpoker_script(random.Random(5)) != qpoker_script(random.Random(6))
    order = DECK[:12] * 2
    script = qpoker_script(random.Random(1), rounds=None, seats=(2, 4, 6), cards=order)
    hands = [m for m in script if isinstance(m, p.Hand)]
    assert [h.seat for h in hands] == [2, 4, 6, "dealer"] * 2
    assert [c for h in hands for c in h.cards] == list(order)
    with pytest.raises(ScriptError, match="round 2 needs 12 cards"):
        qpoker_script(random.Random(1), rounds=2, seats=(2, 4, 6), cards=DECK[:13])


@pytest.mark.parametrize("kind, code", [("jam", 1), ("failure", 2), ("door", 3)])
def test_a_halt_while_dealing_ends_the_round_and_its_remaining_hands_never_come(
        kind: str, code: int) -> None:
    """The machine stops mid-deal (Art. 11.5's case); the dealer clears it; the next round is
    a fresh shuffle."""
    script = qpoker_script(random.Random(3), rounds=2, seats=(1, 3, 5),
                           faults=[MachineFault(kind, 3)])
    first, second = rounds_of(script)
    assert [type(m).__name__ for m in first] == ["RoundSeats", "Hand", "Hand", "Fault", "Status"]
    assert first[3] == p.Fault(code, 1, 5)
    assert first[4].state is p.MachineState.IDLE and first[4].fault == 0
    assert [m.seat for m in second if isinstance(m, p.Hand)] == [1, 3, 5, "dealer"]


def test_exposed_faults_expose_one_card_of_the_named_hand() -> None:
    script = qpoker_script(random.Random(3), rounds=2, seats=(1, 3),
                           faults=[MachineFault("exposed", 2),
                                   MachineFault("exposed", 2, dealer=True)])
    hands = [m for m in script if isinstance(m, p.Hand)]
    exposed = [(h.round, h.seat, sum(h.exposed)) for h in hands if any(h.exposed)]
    assert exposed == [(1, 3, 1), (2, "dealer", 1)]


@pytest.mark.parametrize("kind, found", [("short_deck", 51), ("long_deck", 53)])
def test_a_miscounted_deck_is_checked_again_after_the_dealer_replaces_it(kind: str,
                                                                         found: int) -> None:
    script = qpoker_script(random.Random(3), rounds=2, faults=[MachineFault(kind, 2)])
    assert [m.found for m in script if isinstance(m, p.DeckCheck)] == [52, found, 52]
    assert len(rounds_of(script)) == 2


def test_baccarat_hands_end_where_the_rules_core_says_and_the_shoe_is_counted() -> None:
    """Baccarat Art. 9 (the deal) and Art. 1 (an 8-deck shoe of 416 cards)."""
    script = baccarat_script(random.Random(8), hands=200)
    assert script[:3] == [p.ShuffleStarted(p.Mode.BACCARAT, 8), p.ShuffleComplete(),
                          p.DeckCheck(p.Mode.BACCARAT, 8, 416)]
    table = make_table("baccarat")
    outcomes = 0
    numbers = []
    for msg in script:
        for event in normalize(msg):
            outcomes += sum(isinstance(o, Outcome) and o.status == "complete"
                            for o in table.feed(event))
        if isinstance(msg, p.Card):
            numbers.append(msg.number)
    assert outcomes == 200
    assert sum(isinstance(m, p.DeckCheck) for m in script) == 3  # ~80 hands to a shoe
    assert max(numbers) <= 416 and numbers.count(1) == 3


def test_a_baccarat_halt_stops_after_the_hands_first_card_and_the_set_is_reshuffled() -> None:
    script = baccarat_script(random.Random(8), hands=3, faults=[MachineFault("jam", 2)])
    names = [type(m).__name__ for m in script]
    jam = names.index("Fault")
    assert script[jam] == p.Fault(p.DeviceFault.JAM)
    assert names[jam - 1] == "Card" and names[jam + 1: jam + 5] == [
        "Status", "ShuffleStarted", "ShuffleComplete", "DeckCheck"]
    with pytest.raises(ScriptError, match="face up"):
        baccarat_script(random.Random(8), faults=[MachineFault("exposed", 1)])


def test_an_explicit_baccarat_shoe_is_dealt_in_order_to_its_end() -> None:
    order = ["9S", "8H", "2C", "3D", "4S", "5H", "8S", "2H", "TC", "5D"]  # the 2nd: a natural
    script = baccarat_script(random.Random(1), hands=None, cards=order)
    assert [m.card for m in script if isinstance(m, p.Card)] == order
    with pytest.raises(ScriptError, match="middle of hand"):
        baccarat_script(random.Random(1), hands=None, cards=order[:3])


def test_fault_and_argument_forms_of_the_cli() -> None:
    assert parse_fault("jam@4") == MachineFault("jam", 4)
    assert parse_fault("exposed@dealer") == MachineFault("exposed", 1, dealer=True)
    assert parse_fault("exposed@dealer:3") == MachineFault("exposed", 3, dealer=True)
    assert parse_fault("short_deck@2") == MachineFault("short_deck", 2)
    assert parse_fault("drop@9:3") == ByteFault("drop", 9, 3.0)
    for bad in ("jam", "jam@0", "melt@3", "exposed@dealer:x"):
        with pytest.raises(FaultSpecError):
            parse_fault(bad)
    assert parse_cards("as, KH,td") == ["AS", "KH", "TD"]
    assert parse_seats("5,1,3") == (1, 3, 5)
    for bad_seats in ("", "0,2", "a"):
        with pytest.raises(ScriptError):
            parse_seats(bad_seats)
    with pytest.raises(ScriptError):
        parse_cards("AS,1X")


# -- through a link, in any chunking -----------------------------------------------------------


def through_a_link(script: list[p.Message], chunks: list[int]) -> list[Event]:
    """The script sent by a machine-side Link and read by a host-side Link in ``chunks``."""
    host = Link(initiator=True, now=0.0)
    machine = Link(initiator=False, now=0.0)
    machine.receive_data(host.data_to_send(), 0.0)
    host.receive_data(machine.data_to_send(), 0.0)
    assert host.state is LinkState.CONNECTED
    events: list[Event] = []
    sizes = iter(chunks)
    for msg in script:
        machine.send(*p.encode(msg), 0.0)
        data = machine.data_to_send()
        while data:
            size = next(sizes, len(data)) or 1
            for item in host.receive_data(data[:size], 0.0):
                assert isinstance(item, MessageReceived)
                events += normalize(p.decode(item.kind, item.payload))
            data = data[size:]
        machine.receive_data(host.data_to_send(), 0.0)  # the ACKs keep the window open
    return events


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1000), st.lists(st.integers(1, 40), max_size=400))
def test_any_chunking_of_the_byte_stream_yields_the_same_events(seed: int,
                                                                chunks: list[int]) -> None:
    script = qpoker_script(random.Random(seed), rounds=2,
                           faults=[MachineFault("exposed", 1), MachineFault("short_deck", 2)])
    expected = [e for m in script for e in normalize(m)]
    assert through_a_link(script, chunks) == expected
    assert through_a_link(script, [1] * 10_000) == expected
