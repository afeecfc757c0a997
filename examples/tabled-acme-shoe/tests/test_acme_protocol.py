"""The ACME CardEye 2 family's own tests: its message catalogue, what each message means, its
settings check and its script. Everything that needs a device and a driver together (framing,
chunking, damage, unplugs, identity, durability, each alarm as its fault) is the conformance
kit's: ``tabled conformance acme_shoe``."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabled.contract.events import CARD_CODES, Burn, CardDealt, CutCard, Fault, ShoeStart, Void
from tabled.drivers.errors import ProtocolError
from tabled.drivers.registry import family

from tabled_acme_shoe import FAMILY, check
from tabled_acme_shoe.driver import AcmeShoeDriver, normalize
from tabled_acme_shoe.protocol import (
    Alarm,
    AlarmRaised,
    Card,
    Cut,
    Hello,
    Key,
    KeyPressed,
    Message,
    Mode,
    ShoeIn,
    State,
    StateRequest,
    card_byte,
    card_code,
    decode,
    encode,
)
from tabled_acme_shoe.simulator import ShoeAlarm, deal

counts = st.integers(1, 0xFFFF)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Hello, st.integers(0, 255), st.tuples(st.integers(0, 255), st.integers(0, 255)),
              st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1,
                      max_size=16)),
    st.builds(ShoeIn, st.integers(1, 16)),
    st.builds(Card, counts, st.sampled_from(sorted(CARD_CODES)), st.booleans()),
    st.builds(Cut, st.integers(0, 0xFFFF)),
    st.builds(KeyPressed, st.sampled_from(Key)),
    st.builds(AlarmRaised, st.just(Alarm.MISREAD), counts, st.booleans()),
    st.builds(AlarmRaised, st.sampled_from([Alarm.OPTICS, Alarm.EMPTY]), counts),
    st.builds(State, st.sampled_from(Mode), st.integers(0, 16), st.integers(0, 0xFFFF),
              st.booleans()),
    st.just(StateRequest()),
)


@given(messages)
def test_every_message_round_trips(message: Message) -> None:
    assert decode(*encode(message)) == message


@given(st.integers(0x40, 0x60), st.binary(max_size=24))
def test_any_payload_is_a_message_that_re_encodes_to_itself_or_a_protocol_error(
        kind: int, payload: bytes) -> None:
    try:
        message = decode(kind, payload)
    except ProtocolError:
        return
    assert encode(message) == (kind, payload)  # canonical: one message, one encoding


def test_cards_are_one_byte_suit_high_rank_low() -> None:
    assert card_byte("AS") == 0x11 and card_byte("TD") == 0x4A and card_byte("KH") == 0x2D
    assert all(card_code(card_byte(code)) == code for code in CARD_CODES)
    for byte in (0x00, 0x10, 0x1E, 0x51):
        with pytest.raises(ValueError):
            card_code(byte)


def test_hello_is_the_identity_and_tells_a_cardeye_from_anything_else() -> None:
    driver = AcmeShoeDriver.__new__(AcmeShoeDriver)  # (identify reads nothing of the instance)
    assert driver.identify(*encode(Hello(0x02, (2, 3), "CE2-000417"))) == {
        "firmware": "2.3", "serial": "CE2-000417", "model": "CardEye 2"}
    with pytest.raises(ProtocolError, match="model 0x03, not a CardEye 2"):
        driver.identify(*encode(Hello(0x03, (1, 0), "CE3-1")))
    with pytest.raises(ProtocolError, match="unknown message kind 0x16"):
        driver.identify(0x16, b"\x0cshoe-sim 1.0\x0dSHOE-SIM-0001")  # the built-in shoe's
    with pytest.raises(ProtocolError, match="no ACME magic"):
        driver.identify(0x40, b"ACNE\x02\x02\x03\x01X")


@pytest.mark.parametrize(("message", "event"), [
    (ShoeIn(8), ShoeStart(decks=8)),
    (Card(3, "TD"), CardDealt(card="TD", extra={"card_no": 3})),
    (Card(1, "5H", burn=True), Burn(card="5H", extra={"card_no": 1})),
    (Cut(70), CutCard(extra={"card_no": 70})),
    (KeyPressed(Key.VOID), Void(reason="dealer_button")),
    (AlarmRaised(Alarm.MISREAD, 2, burn=True),
     Burn(card=None, extra={"device_code": 1, "card_no": 2, "unreadable": True})),
])
def test_what_each_message_means(message: Message, event: object) -> None:
    assert normalize(message) == [event]


@pytest.mark.parametrize(("alarm", "code"), [
    (Alarm.MISREAD, "unreadable_card"), (Alarm.OPTICS, "shoe_sensor_dirty"),
    (Alarm.EMPTY, "shoe_empty")])
def test_each_alarm_is_the_fault_any_shoe_reports(alarm: Alarm, code: str) -> None:
    (fault,) = normalize(AlarmRaised(alarm, 9))
    assert isinstance(fault, Fault) and fault.code == code
    assert fault.extra == {"device_code": int(alarm), "card_no": 9}


def test_the_burn_key_state_and_hello_mean_no_event() -> None:
    assert normalize(KeyPressed(Key.BURN)) == []
    assert normalize(State(Mode.DEALING, 8, 12)) == []
    assert normalize(Hello(2, (2, 3), "X")) == []


def test_the_family_is_a_serial_shoe_found_through_its_entry_point() -> None:
    assert family("acme_shoe") is FAMILY
    assert (FAMILY.kind, FAMILY.transport, FAMILY.udev_subsystem) == ("shoe", "serial", "tty")


def test_the_settings_check_takes_what_a_cardeye_can_be() -> None:
    assert check("/dev/tabled/acme-1", "CE2-000417") == []
    assert check("socket://127.0.0.1:7000", None) == []
    assert check("usb://1209:0001", None)[0][0] == "url"
    assert check(None, "CE2 000417") == [
        ("serial", "a CardEye's serial number has 1 to 16 characters, without a space")]
    assert check(None, "X" * 17)[0][0] == "serial"


def test_a_session_burns_by_the_first_card_deals_and_cuts() -> None:
    reports = deal(random.Random(4), decks=6, cards=30)
    assert reports[0] == ShoeIn(6)
    cards = [r for r in reports if isinstance(r, Card)]
    burns = [c for c in cards if c.burn]
    value = min("A23456789TJQK".index(burns[0].card[0]) + 1, 10)
    assert len(burns) == 1 + value
    assert [c.count for c in cards] == list(range(1, len(cards) + 1))
    assert len(cards) - len(burns) == 30
    (cut,) = [r for r in reports if isinstance(r, Cut)]
    assert cut.count == len(burns) + 20


def test_an_empty_alarm_loads_the_next_shoe() -> None:
    reports = deal(random.Random(4), decks=6, cards=30, alarms=[ShoeAlarm("empty", 15)])
    second = reports.index(ShoeIn(6), 1)
    alarm = reports[second - 1]
    assert isinstance(alarm, AlarmRaised) and alarm.code is Alarm.EMPTY
    assert sum(isinstance(r, Card) and not r.burn for r in reports) == 30


def test_loading_the_family_loads_no_simulator() -> None:
    """A table's daemon loads the family (its entry point), never test code."""
    probe = ("import sys; from tabled.drivers.registry import family; family('acme_shoe'); "
             "print(sorted(m for m in sys.modules if 'simulator' in m))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"
