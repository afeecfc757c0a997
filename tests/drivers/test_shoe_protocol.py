"""The shoe's message catalogue, its normalization and the simulator's dealer, without I/O.

Codec properties (round trips, canonical encoding, arbitrary bytes give a message or
ProtocolError and nothing else, any chunking of the frames gives the same messages), the
documented byte-level examples, and the dealer's baccarat: Art. 2 burns, the Art. 3 cut card and
last hand, Art. 2.2 demonstrations, hands the rules core settles (Art. 9), and the family faults.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import (
    CARD_CODES,
    Burn,
    CardDealt,
    CutCard,
    Demo,
    Event,
    Fault,
    ShoeStart,
    Void,
    encode_event,
    event_to_dict,
)
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import ProtocolError
from tabled.drivers.framing import Frame, FrameDecoder, encode_frame
from tabled.drivers.shoe.driver import normalize
from tabled.drivers.shoe.protocol import (
    REPORTS,
    REQUESTS,
    Button,
    ButtonPressed,
    CardOut,
    CutCardOut,
    DeviceFault,
    DeviceInfo,
    FaultCode,
    InfoRequest,
    Kind,
    Report,
    ShoeLoaded,
    ShoeMessage,
    ShoeState,
    ShoeStatus,
    StatusRequest,
    decode,
    encode,
)
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.registry import make_table
from tabled.simulators import shoe as shoe_sim
from tabled.simulators.faults import ByteFault, FaultSpecError
from tabled.simulators.shoe import (
    BURN_COUNT,
    Dealer,
    ShoeFault,
    ShoeReader,
    parse_cards,
    parse_fault,
    shuffled_shoe,
    takes_a_card,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "shoe.md"

cards = st.sampled_from(sorted(CARD_CODES))
card_nos = st.integers(1, 0xFFFF)
idents = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1,
                 max_size=32)
reports: st.SearchStrategy[Report] = st.one_of(
    st.builds(ShoeLoaded, st.integers(1, 255)),
    st.builds(CardOut, card_nos, cards, st.booleans()),
    st.builds(CutCardOut, st.integers(0, 0xFFFF)),
    st.builds(ButtonPressed, st.sampled_from(Button)),
    st.builds(DeviceFault, st.just(FaultCode.UNREADABLE_CARD), card_nos, st.booleans()),
    st.builds(DeviceFault, st.sampled_from([FaultCode.SENSOR_DIRTY, FaultCode.SHOE_EMPTY]),
              st.integers(0, 0xFFFF)),
    st.builds(ShoeStatus, st.sampled_from(ShoeState), st.integers(0, 255),
              st.integers(0, 0xFFFF), st.booleans(), st.booleans(), st.booleans()),
    st.builds(DeviceInfo, idents, idents),
)
messages: st.SearchStrategy[ShoeMessage] = st.one_of(
    reports, st.just(InfoRequest()), st.just(StatusRequest()))


# -- the codec -----------------------------------------------------------------------------------


@settings(max_examples=400)
@given(messages)
def test_every_message_survives_a_round_trip(message: ShoeMessage) -> None:
    kind, payload = encode(message)
    assert kind == message.KIND
    assert decode(kind, payload) == message


@settings(max_examples=1500)
@given(st.one_of(st.sampled_from(Kind).map(int), st.integers(0, 255)), st.binary(max_size=40))
def test_arbitrary_bytes_give_a_message_or_a_protocol_error_and_decode_canonically(
    kind: int, payload: bytes,
) -> None:
    try:
        message = decode(kind, payload)
    except ProtocolError:
        return
    assert encode(message) == (kind, payload)


@settings(max_examples=200)
@given(st.lists(reports, max_size=12), st.data())
def test_any_chunking_of_the_frames_gives_the_same_messages(batch: list[Report],
                                                             data: st.DataObject) -> None:
    wire = b"".join(encode_frame(Frame(i & 0xFF, *encode(m))) for i, m in enumerate(batch))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=10)))
    decoder = FrameDecoder()
    frames = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        frames += decoder.feed(wire[start:end])
    assert [decode(f.kind, f.payload) for f in frames if isinstance(f, Frame)] == batch


@pytest.mark.parametrize(
    ("kind", "payload", "why"),
    [
        (Kind.CARD_OUT, bytes.fromhex("0001004153"), None),  # AS, the valid baseline
        (Kind.CARD_OUT, bytes.fromhex("0001005a53"), "not a card code"),  # rank Z
        (Kind.CARD_OUT, bytes.fromhex("0000004153"), "card number 0"),
        (Kind.CARD_OUT, bytes.fromhex("0001024153"), "reserved flag bits"),
        (Kind.CARD_OUT, bytes.fromhex("00010041"), "payload of 4 bytes"),
        (Kind.SHOE_LOADED, b"\x00", "decks 0"),
        (Kind.BUTTON_PRESSED, b"\x04", "not a valid Button"),
        (Kind.DEVICE_FAULT, bytes.fromhex("09000001"), "not a valid FaultCode"),
        (Kind.DEVICE_FAULT, bytes.fromhex("02010001"), "only an unreadable card"),
        (Kind.STATUS, bytes.fromhex("0300080000"), "not a valid ShoeState"),
        (Kind.STATUS, bytes.fromhex("0108080000"), "reserved flag bits"),
        (Kind.DEVICE_INFO, b"\x01a\x01b\x00", "bytes after the serial"),
        (Kind.DEVICE_INFO, b"\x05ab", "runs past the payload"),
        (Kind.DEVICE_INFO, b"\x01\xff\x01b", "printable ASCII"),
        (Kind.INFO_REQUEST, b"\x00", "takes no payload"),
        (0x7F, b"", "unknown message kind 0x7f"),
    ],
)
def test_content_the_catalogue_forbids_is_a_protocol_error(kind: int, payload: bytes,
                                                           why: str | None) -> None:
    if why is None:
        assert decode(kind, payload) == CardOut(1, "AS")
        return
    with pytest.raises(ProtocolError, match=why):
        decode(kind, payload)


@pytest.mark.parametrize(
    "build",
    [lambda: CardOut(0, "AS"), lambda: CardOut(1, "1S"), lambda: ShoeLoaded(256),
     lambda: DeviceFault(FaultCode.SHOE_EMPTY, 3, burn=True), lambda: DeviceInfo("", "x"),
     lambda: DeviceInfo("x" * 33, "x"), lambda: ShoeStatus(ShoeState.DEALING, 8, 70000)],
)
def test_building_a_message_out_of_range_is_our_value_error(build) -> None:
    with pytest.raises(ValueError):
        build()


# -- what each report means ----------------------------------------------------------------------


@settings(max_examples=300)
@given(reports)
def test_a_flagged_card_is_always_a_burn_and_never_a_card(report: Report) -> None:
    event = normalize(report)
    if isinstance(report, CardOut):
        assert isinstance(event, Burn if report.burn else CardDealt)
        assert getattr(event, "card", None) == report.card
    if isinstance(report, DeviceFault) and report.burn:
        assert isinstance(event, Burn) and event.card is None
    if isinstance(report, ShoeStatus | DeviceInfo):
        assert event is None


@pytest.mark.parametrize(
    ("report", "event"),
    [
        (ShoeLoaded(6), ShoeStart(decks=6)),
        (CardOut(3, "9H"), CardDealt(card="9H")),
        (CardOut(3, "9H", burn=True), Burn(card="9H")),
        (CutCardOut(400), CutCard()),
        (ButtonPressed(Button.DEMO), Demo()),
        (ButtonPressed(Button.VOID), Void(reason="dealer_button")),
        (ButtonPressed(Button.BURN), None),
        (DeviceFault(FaultCode.UNREADABLE_CARD, 9), Fault(code="unreadable_card")),
        (DeviceFault(FaultCode.SENSOR_DIRTY, 9), Fault(code="shoe_sensor_dirty")),
        (DeviceFault(FaultCode.SHOE_EMPTY, 9), Fault(code="shoe_empty")),
    ],
    ids=repr,
)
def test_each_report_normalizes_to_its_contract_event(report: Report,
                                                      event: Event | None) -> None:
    got = normalize(report)
    if event is None:
        assert got is None
        return
    assert got is not None and got.type == event.type
    if isinstance(event, Fault):
        assert isinstance(got, Fault) and got.code == event.code
        assert got.extra["device_code"] == int(report.code)
    else:
        assert got == event  # extra (card_no) does not take part in equality


def documented_examples() -> list[tuple[str, int, str, str]]:
    """The rows of the doc's byte-level examples: message, seq, frame hex, event JSON or —."""
    section = DOC.read_text().split("## Byte-level examples", 1)[1].split("\n## ", 1)[0]
    row = re.compile(r"^\| `(.+)` \| (\d+) \| `([0-9a-f ]+)` \| (?:`(.+)`|—) \|$")
    return [(m[1], int(m[2]), m[3], m[4] or "—")
            for m in map(row.match, section.splitlines()) if m]


def test_the_documented_examples_decode_and_normalize_as_documented() -> None:
    kinds = set()
    for text, seq, wire, event_json in documented_examples():
        (frame,) = FrameDecoder().feed(bytes.fromhex(wire))
        assert isinstance(frame, Frame) and frame.seq == seq
        message = decode(frame.kind, frame.payload)
        kinds.add(message.KIND)
        assert repr(message) == text
        assert encode_frame(Frame(seq, *encode(message))).hex(" ") == wire
        event = normalize(message) if isinstance(message, REPORTS) else None
        assert (encode_event(event) if event else "—") == event_json
    assert kinds == set(Kind)  # every message has an example


def test_the_documented_fault_codes_are_the_drivers() -> None:
    text = DOC.read_text()
    for code in FaultCode:
        event = normalize(DeviceFault(code, 1))
        assert isinstance(event, Fault)
        assert f"| {int(code)} | {code.name.lower().replace('_', ' ')} | `{event.code}`" in text


# -- the shoe's electronics ----------------------------------------------------------------------


def test_the_reader_numbers_cards_per_shoe_and_one_burn_press_arms_one_card() -> None:
    reader = ShoeReader()
    assert reader.status() == ShoeStatus(ShoeState.NO_SHOE, 0, 0)
    assert reader.load(8) == ShoeLoaded(8)
    reader.press(Button.BURN)
    assert reader.status().burn_armed
    assert reader.card_out("KC") == CardOut(1, "KC", burn=True)
    assert reader.card_out("2D") == CardOut(2, "2D")
    reader.press(Button.BURN)
    assert reader.card_out(None) == DeviceFault(FaultCode.UNREADABLE_CARD, 3, burn=True)
    assert reader.cut_card() == CutCardOut(3)
    assert reader.fault(FaultCode.SENSOR_DIRTY) == DeviceFault(FaultCode.SENSOR_DIRTY, 3)
    assert reader.status() == ShoeStatus(ShoeState.DEALING, 8, 3, cut_card_out=True,
                                         sensor_dirty=True)
    reader.fault(FaultCode.SHOE_EMPTY)
    assert reader.status().state is ShoeState.EMPTY
    reader.load(6)
    assert reader.status() == ShoeStatus(ShoeState.DEALING, 6, 0, sensor_dirty=True)


def test_the_reader_answers_requests_and_ignores_anything_else() -> None:
    reader = ShoeReader(serial="SN-42")
    assert reader.request_received(*encode(InfoRequest())) == DeviceInfo("shoe-sim 1.0", "SN-42")
    assert reader.request_received(*encode(StatusRequest())) == reader.status()
    assert reader.request_received(*encode(ShoeLoaded(8))) is None
    assert reader.request_received(0x7F, b"") is None
    assert all(isinstance(request(), REQUESTS) for request in (InfoRequest, StatusRequest))


# -- the dealer ----------------------------------------------------------------------------------


def events_of(dealer: Dealer) -> list[Event]:
    return [e for e in map(normalize, dealer.reports()) if e is not None]


def settle(events: list[Event], **options: object) -> list[Outcome]:
    table = make_table("baccarat", BaccaratOptions(**options))
    return [o for e in events for o in table.feed(e) if isinstance(o, Outcome)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_seeded_shoe_deals_the_shuffled_cards_in_order(seed: int) -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(seed)))
    out = [e.card for e in events if isinstance(e, Burn | CardDealt)]
    assert out == shuffled_shoe(random.Random(seed), 8)[:len(out)]
    assert events == events_of(Dealer(ShoeReader(), rng=random.Random(seed)))  # replayable
    assert sorted(shuffled_shoe(random.Random(seed), 6)) == sorted(
        r + s for r in "A23456789TJQK" for s in "SHCD" for _ in range(6))


@pytest.mark.parametrize(("method", "last_hand"), [(1, "this"), (2, "this"), (1, "one_more"),
                                                   (2, "one_more")])
def test_every_hand_is_one_the_rules_core_settles_art9(method: int, last_hand: str) -> None:
    """The dealer pulls exactly the cards Art. 9 calls for (Reading R-B1): no misdeal."""
    events = events_of(Dealer(ShoeReader(), rng=random.Random(method), method=method,
                              last_hand=last_hand))
    outcomes = settle(events, method=method, last_hand=last_hand)
    assert len(outcomes) > 60
    assert all(o.status == "complete" for o in outcomes)


@pytest.mark.parametrize(("last_hand", "hands_after_cut"), [("this", 1), ("one_more", 2)])
@pytest.mark.parametrize("seed", range(6))
def test_the_cut_card_s_hand_is_the_last_or_one_more_art3(seed: int, last_hand: str,
                                                           hands_after_cut: int) -> None:
    """Art. 2: the cut card 12-16 cards from the end; Art. 3 / Reading R-B2: the hand it falls
    in (or the next) is the last, or one more follows; then the shoe ends."""
    decks = 6 + seed % 7
    events = events_of(Dealer(ShoeReader(), rng=random.Random(seed), decks=decks,
                              last_hand=last_hand))
    (cut,) = [i for i, e in enumerate(events) if isinstance(e, CutCard)]
    assert 12 <= 52 * decks - events[cut].extra["card_no"] <= 16
    table = make_table("baccarat", BaccaratOptions(last_hand=last_hand, decks=decks))
    settled_at = [i for i, e in enumerate(events) for o in table.feed(e) if isinstance(o, Outcome)]
    assert sum(1 for i in settled_at if i > cut) == hands_after_cut
    assert settled_at[-1] == len(events) - 1  # the shoe ends with its last hand


def test_a_cut_card_set_early_makes_a_short_shoe_of_the_same_cards() -> None:
    """``tabled-sim shoe --cut-card N`` (the pit's browser test of the cut card): the cut card
    N cards from the end, its hand the last, then the next shoe, dealt from the same shuffles."""
    plain = events_of(Dealer(ShoeReader(), rng=random.Random(3), shoes=2))
    short = events_of(Dealer(ShoeReader(), rng=random.Random(3), shoes=2, cut_card=330))
    cuts = [i for i, e in enumerate(short) if isinstance(e, CutCard)]
    assert [52 * 8 - short[i].extra["card_no"] for i in cuts] == [330, 330]
    table = make_table("baccarat", BaccaratOptions())
    settled = [i for i, e in enumerate(short) for o in table.feed(e) if isinstance(o, Outcome)]
    assert sum(1 for i in settled if i > cuts[1]) == 1  # the cut card's hand is the last
    assert settled[-1] == len(short) - 1
    assert len(settled) < 40 < 120 < len(settle(plain))  # two shoes of ~17 hands, not of ~80
    cards = [[e.card for e in shoe if isinstance(e, Burn | CardDealt)]
             for shoe in (plain, short)]
    assert cards[1][:40] == cards[0][:40]  # the first shoe's shuffle is the same


@pytest.mark.parametrize("seed", range(8))
def test_the_start_of_a_shoe_burns_the_first_card_s_value_art2(seed: int) -> None:
    reports = list(Dealer(ShoeReader(), rng=random.Random(seed), hands=1).reports())
    burns = [r for r in reports if isinstance(r, CardOut) and r.burn]
    assert len(burns) == 1 + BURN_COUNT[burns[0].card[0]]
    presses = [r for r in reports if r == ButtonPressed(Button.BURN)]
    assert len(presses) == len(burns)
    assert reports[:3] == [ShoeLoaded(8), ButtonPressed(Button.BURN), burns[0]]


def test_burning_by_the_deck_count_burns_as_many_cards_as_decks_art2() -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(4), decks=7, burn="decks",
                              hands=1))
    assert sum(1 for e in events if isinstance(e, Burn)) == 7


def test_an_unreadable_first_burn_falls_back_to_the_deck_count_art2() -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(4), decks=6, hands=1,
                              faults=[ShoeFault("unreadable", 1)]))
    burns = [e for e in events if isinstance(e, Burn)]
    assert len(burns) == 6 and burns[0].card is None


def test_demonstration_hands_come_first_and_are_marked_art2_2() -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(9), demos=3, hands=5))
    outcomes = settle(events)
    assert [bool(o.extra.get("demo")) for o in outcomes] == [True, True, True, False, False]
    assert all(o.status == "complete" for o in outcomes)


def test_hands_and_shoes_bound_the_script() -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(5), hands=7, shoes=None))
    assert len(settle(events)) == 7
    two_shoes = events_of(Dealer(ShoeReader(), rng=random.Random(5), shoes=2))
    assert sum(1 for e in two_shoes if isinstance(e, ShoeStart)) == 2
    outcomes = settle(two_shoes)
    assert len(outcomes) > 120 and all(o.status == "complete" for o in outcomes)
    assert len(settle(events_of(Dealer(ShoeReader(), rng=random.Random(5), hands=500)))) < 100


def test_an_explicit_sequence_is_each_card_out_in_order() -> None:
    reports = list(Dealer(ShoeReader(), rng=random.Random(0), decks=6,
                          cards=["AS", "KH", "9D"]).reports())
    assert reports == [ShoeLoaded(6), CardOut(1, "AS"), CardOut(2, "KH"), CardOut(3, "9D")]


def test_each_family_fault_acts_at_its_pull() -> None:
    faults = [ShoeFault("dirty", 1), ShoeFault("burn", 2), ShoeFault("void", 3),
              ShoeFault("unreadable", 4), ShoeFault("empty", 6)]
    reports = list(Dealer(ShoeReader(), rng=random.Random(0), cards=["AS", "KH", "9D", "2C",
                                                                     "3C", "4C", "5C"],
                          faults=faults).reports())
    assert reports == [
        ShoeLoaded(8),
        DeviceFault(FaultCode.SENSOR_DIRTY, 0), CardOut(1, "AS"),
        ButtonPressed(Button.BURN), CardOut(2, "KH", burn=True),
        ButtonPressed(Button.VOID), CardOut(3, "9D"),
        DeviceFault(FaultCode.UNREADABLE_CARD, 4),
        CardOut(5, "3C"),
        DeviceFault(FaultCode.SHOE_EMPTY, 5),
    ]
    assert [takes_a_card(r) for r in reports].count(True) == 5


def test_an_empty_shoe_is_followed_by_the_next_shoe_and_its_hand_is_void_art10() -> None:
    events = events_of(Dealer(ShoeReader(), rng=random.Random(2), hands=4, shoes=None,
                              faults=[ShoeFault("empty", 20)]))
    empty = next(i for i, e in enumerate(events) if isinstance(e, Fault))
    assert isinstance(events[empty + 1], ShoeStart)
    outcomes = settle(events)
    assert [o.status for o in outcomes].count("void") == 1
    assert outcomes[[o.status for o in outcomes].index("void")].article == "baccarat.art10"


def test_a_shoe_that_runs_out_reports_it_empty() -> None:
    """Burning every card from the cut card on: the last hand never completes, the shoe runs
    out, and the shoe says so (device fault 3) instead of inventing a card."""
    faults = [ShoeFault("burn", n) for n in range(290, 320)]
    reports = list(Dealer(ShoeReader(), rng=random.Random(1), decks=6, faults=faults).reports())
    assert reports[-1] == DeviceFault(FaultCode.SHOE_EMPTY, 312)


def test_fault_specs_parse_as_family_or_byte_faults() -> None:
    assert parse_fault("unreadable@7") == ShoeFault("unreadable", 7)
    assert parse_fault("void@1") == ShoeFault("void", 1)
    assert parse_fault("drop@9:3") == ByteFault("drop", 9, 3.0)
    for bad in ("unreadable@0", "void", "burn@x", "jam@3", "dirty@2:1"):
        with pytest.raises(FaultSpecError):
            parse_fault(bad)
    assert parse_cards("as, KH,td") == ["AS", "KH", "TD"]
    for bad in ("AS,1H", "", ","):
        with pytest.raises(ValueError):
            parse_cards(bad)


def cli(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tabled-sim shoe", exit_on_error=False)
    shoe_sim.add_arguments(parser)
    return parser.parse_args(argv)


def test_the_command_line_describes_the_dealer() -> None:
    args = cli("--seed", "3", "--hands", "2", "--fault", "void@30", "--fault", "corrupt@2")
    assert args.fault == [ShoeFault("void", 30), ByteFault("corrupt", 2)]
    dealer = shoe_sim.dealer_from_args(args, ShoeReader())
    assert len(settle(events_of(dealer))) == 2
    one_shoe = shoe_sim.dealer_from_args(cli("--seed", "3"), ShoeReader())
    assert sum(1 for e in events_of(one_shoe) if isinstance(e, ShoeStart)) == 1
    explicit = shoe_sim.dealer_from_args(cli("--cards", "AS,9D", "--decks", "6"), ShoeReader())
    assert [event_to_dict(e)["type"] for e in events_of(explicit)] == [
        "shoe_start", "card", "card"]
    for bad in (["--fault", "jam@1"], ["--cards", "ZZ"], ["--decks", "5"], ["--demo", "-1"],
                ["--hands", "0"], ["--shoes", "x"]):
        with pytest.raises((argparse.ArgumentError, SystemExit)):
            cli(*bad)


def test_every_documented_example_event_is_valid_contract_json(event_validator) -> None:
    for _, _, _, event_json in documented_examples():
        if event_json != "—":
            assert not list(event_validator.iter_errors(json.loads(event_json)))
