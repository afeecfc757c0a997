"""The ACME CardEye 2 family's own tests: its sentences (grammar, checksum, strictness), what
each sentence means, its settings check and its script. Everything that needs a device and a
driver together (link frames, chunking, damage, unplugs, identity, durability, each error as
its fault) is the conformance kit's: ``tabled conformance acme_shoe``."""

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
    SENTENCE,
    CutSeen,
    Drawn,
    Error,
    ErrorRaised,
    Ident,
    Key,
    KeyPressed,
    Message,
    Mode,
    NewShoe,
    Query,
    Status,
    checksum,
    decode,
    encode,
    line,
    parse,
)
from tabled_acme_shoe.simulator import ShoeError, deal

counts = st.integers(1, 9999)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Ident, st.just("CE2"), st.sampled_from(["2.3", "10.0", "1"]),
              st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"), min_size=1,
                      max_size=16)),
    st.builds(NewShoe, st.integers(1, 16)),
    st.builds(Drawn, counts, st.sampled_from(sorted(CARD_CODES)), st.booleans()),
    st.builds(CutSeen, st.integers(0, 9999)),
    st.builds(KeyPressed, st.sampled_from(Key)),
    st.builds(ErrorRaised, st.just(Error.MISREAD), counts, st.booleans()),
    st.builds(ErrorRaised, st.sampled_from([Error.WINDOW, Error.EMPTY]), counts),
    st.builds(Status, st.sampled_from(Mode), st.integers(0, 16), st.integers(0, 9999),
              st.booleans()),
    st.just(Query()),
)


@given(messages)
def test_every_message_round_trips(message: Message) -> None:
    assert decode(*encode(message)) == message


@given(st.binary(max_size=48))
def test_any_payload_is_a_sentence_that_re_encodes_to_itself_or_a_protocol_error(
        payload: bytes) -> None:
    try:
        message = decode(SENTENCE, payload)
    except ProtocolError:
        return
    assert encode(message) == (SENTENCE, payload)  # canonical: one message, one sentence


@given(messages, st.data())
def test_a_changed_byte_is_never_taken_as_another_sentence(message: Message,
                                                           data: st.DataObject) -> None:
    sent = bytearray(line(message))
    at = data.draw(st.integers(1, len(sent) - 3))  # inside $ ... *HH
    sent[at] ^= data.draw(st.integers(1, 0x7F))
    with pytest.raises(ProtocolError):
        parse(bytes(sent))


def test_a_sentence_is_ascii_with_its_own_checksum() -> None:
    assert line(Drawn(7, "TD")) == b"$CEDRW,0007,TD,N*%02X\r\n" % checksum(b"CEDRW,0007,TD,N")
    assert checksum(b"CEQRY") == 0x43 ^ 0x45 ^ 0x51 ^ 0x52 ^ 0x59
    with pytest.raises(ProtocolError, match="checksum"):
        parse(b"$CEQRY*00\r\n")
    with pytest.raises(ProtocolError, match="not a sentence"):
        parse(b"$CEQRY*%02X" % checksum(b"CEQRY"))  # no CR LF
    with pytest.raises(ProtocolError, match="unknown sentence"):
        parse(b"$CEXYZ*%02X\r\n" % checksum(b"CEXYZ"))
    with pytest.raises(ProtocolError, match="no checksum"):
        parse(b"$CEQRY*5c\r\n")  # lower-case hex (its checksum is 5C)
    with pytest.raises(ProtocolError, match="SHO: '8' is not two digits"):
        parse(b"$CESHO,8*%02X\r\n" % checksum(b"CESHO,8"))
    with pytest.raises(ProtocolError, match="is not a CardEye sentence"):
        decode(0x42, line(Query()))


def test_the_id_sentence_is_the_identity_and_tells_a_cardeye_from_anything_else() -> None:
    driver = AcmeShoeDriver.__new__(AcmeShoeDriver)  # (identify reads nothing of the instance)
    assert driver.identify(*encode(Ident("CE2", "2.3", "CE2-000417"))) == {
        "firmware": "2.3", "serial": "CE2-000417", "model": "CardEye 2"}
    with pytest.raises(ProtocolError, match="model 'CE3', not a CardEye 2"):
        driver.identify(*encode(Ident("CE3", "1.0", "CE3-1")))
    with pytest.raises(ProtocolError, match="0x16 is not a CardEye sentence"):
        driver.identify(0x16, b"\x0cshoe-sim 1.0\x0dSHOE-SIM-0001")  # the built-in shoe's
    with pytest.raises(ProtocolError, match="not ID"):
        driver.identify(*encode(NewShoe(8)))


@pytest.mark.parametrize(("message", "event"), [
    (NewShoe(8), ShoeStart(decks=8)),
    (Drawn(3, "TD"), CardDealt(card="TD", extra={"card_no": 3})),
    (Drawn(1, "5H", burn=True), Burn(card="5H", extra={"card_no": 1})),
    (CutSeen(70), CutCard(extra={"card_no": 70})),
    (KeyPressed(Key.VOID), Void(reason="dealer_button")),
    (ErrorRaised(Error.MISREAD, 2, burn=True),
     Burn(card=None, extra={"device_code": "MISREAD", "card_no": 2, "unreadable": True})),
])
def test_what_each_sentence_means(message: Message, event: object) -> None:
    assert normalize(message) == [event]


@pytest.mark.parametrize(("error", "code"), [
    (Error.MISREAD, "unreadable_card"), (Error.WINDOW, "shoe_sensor_dirty"),
    (Error.EMPTY, "shoe_empty")])
def test_each_error_is_the_fault_any_shoe_reports(error: Error, code: str) -> None:
    (fault,) = normalize(ErrorRaised(error, 9))
    assert isinstance(fault, Fault) and fault.code == code
    assert fault.extra == {"device_code": error.value, "card_no": 9}


def test_status_and_id_mean_no_event() -> None:
    assert normalize(Status(Mode.DEAL, 8, 12)) == []
    assert normalize(Ident("CE2", "2.3", "X")) == []


def test_the_family_is_a_serial_shoe_found_through_its_entry_point() -> None:
    assert family("acme_shoe") is FAMILY
    assert (FAMILY.kind, FAMILY.transport, FAMILY.udev_subsystem) == ("shoe", "serial", "tty")


def test_the_settings_check_takes_what_a_cardeye_can_be() -> None:
    assert check("/dev/tabled/acme-1", "CE2-000417") == []
    assert check("socket://127.0.0.1:7000", None) == []
    assert check("usb://1209:0001", None)[0][0] == "url"
    assert check(None, "CE2 000417") == [
        ("serial", "a CardEye's serial number has 1 to 16 characters of A-Z, 0-9 and -")]
    assert check(None, "ce2-1")[0][0] == "serial"
    assert check(None, "X" * 17)[0][0] == "serial"


def test_a_session_burns_by_the_first_card_deals_and_cuts() -> None:
    reports = deal(random.Random(4), decks=6, cards=30)
    assert reports[0] == NewShoe(6)
    cards = [r for r in reports if isinstance(r, Drawn)]
    burns = [c for c in cards if c.burn]
    value = min("A23456789TJQK".index(burns[0].card[0]) + 1, 10)
    assert len(burns) == 1 + value
    assert [c.count for c in cards] == list(range(1, len(cards) + 1))
    assert len(cards) - len(burns) == 30
    (cut,) = [r for r in reports if isinstance(r, CutSeen)]
    assert cut.count == len(burns) + 20


def test_an_empty_error_loads_the_next_shoe() -> None:
    reports = deal(random.Random(4), decks=6, cards=30, errors=[ShoeError("empty", 15)])
    second = reports.index(NewShoe(6), 1)
    error = reports[second - 1]
    assert isinstance(error, ErrorRaised) and error.code is Error.EMPTY
    assert sum(isinstance(r, Drawn) and not r.burn for r in reports) == 30


def test_loading_the_family_loads_no_simulator() -> None:
    """A table's daemon loads the family (its entry point), never test code."""
    probe = ("import sys; from tabled.drivers.registry import family; family('acme_shoe'); "
             "print(sorted(m for m in sys.modules if 'simulator' in m))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"
