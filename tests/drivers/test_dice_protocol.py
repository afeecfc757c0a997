"""The dice sensor's report and control-payload codec (pure), and its documented examples.

docs/protocols/dice.md's byte-level examples are read from the page itself and must decode to
what the page says; every message round-trips; any bytes give a message or a ProtocolError.
"""

from __future__ import annotations

import contextlib
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.dice.protocol import (
    DIE_1,
    DIE_2,
    INFO_SIZE,
    NUMBER_MODULO,
    REPORT_SIZE,
    REQUEST_TYPE_IN,
    REQUEST_TYPE_OUT,
    DeviceInfo,
    NoRollReport,
    Report,
    ReportDamaged,
    Request,
    ResendReply,
    RollReport,
    SensorFaultCode,
    SensorFaultReport,
    SensorState,
    StatusReport,
    decode_info,
    decode_report,
    decode_resend_reply,
    encode_info,
    encode_report,
    encode_resend_reply,
    join_number,
    number_is_ahead,
    split_number,
)
from tabled.drivers.dice.usb_transport import UsbAddress, parse_usb_url
from tabled.drivers.errors import ProtocolError
from tabled.drivers.framing import crc16

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols" / "dice.md"

numbers = st.integers(0, NUMBER_MODULO - 1)
faces = st.integers(1, 6)
dice_masks = st.sampled_from([DIE_1, DIE_2, DIE_1 | DIE_2])
fault_codes = st.sampled_from(list(SensorFaultCode))

reports: st.SearchStrategy[Report] = st.one_of(
    st.builds(RollReport, numbers, faces, faces, st.integers(0, 100),
              st.sampled_from([0, DIE_1, DIE_2, DIE_1 | DIE_2])),
    st.builds(NoRollReport, numbers, dice_masks),
    st.builds(SensorFaultReport, numbers, fault_codes),
    st.builds(StatusReport, numbers, numbers, st.sampled_from(list(SensorState)),
              st.none() | fault_codes, st.integers(0, 2**32 - 1)),
)

#: The page's examples, by the label in its first column, and what each must decode to.
DOCUMENTED_REPORTS: dict[str, Report] = {
    "ROLL #7: 3-4, confidence 97 %": RollReport(7, 3, 4, 97),
    "ROLL #8: 6-6, confidence 71 %, die 2 cocked": RollReport(8, 6, 6, 71, DIE_2),
    "NO_ROLL #9: die 2 off the table": NoRollReport(9, DIE_2),
    "SENSOR_FAULT #10: code 1, lens obscured":
        SensorFaultReport(10, SensorFaultCode.LENS_OBSCURED),
    "STATUS: next 11, all acknowledged, ready, up 3600 s":
        StatusReport(11, 11, SensorState.READY, None, 3600),
    "STATUS: next 12, unacked from 10, fault 1 latched, up 3601 s":
        StatusReport(12, 10, SensorState.FAULT, SensorFaultCode.LENS_OBSCURED, 3601),
}
DOCUMENTED_INFO = DeviceInfo(1, (2, 1, 0), 0xB007, "DS-0001")
DOCUMENTED_SETUP = {
    "GET_INFO": (REQUEST_TYPE_IN, Request.GET_INFO, 0, INFO_SIZE),
    "RESEND from #8": (REQUEST_TYPE_IN, Request.RESEND, 8, 6),
    "ACK up to #11": (REQUEST_TYPE_OUT, Request.ACK, 11, 0),
    "RESEND from #70000 (0x00011170)": (REQUEST_TYPE_IN, Request.RESEND, 70000, 6),
}


def documented(label: str) -> bytes:
    """The hex bytes the page gives for ``label`` in a table row."""
    match = re.search(rf"^\| {re.escape(label)} \| `([0-9a-f ]+)` \|$", DOC.read_text(),
                      re.MULTILINE)
    assert match, f"docs/protocols/dice.md has no example row {label!r}"
    return bytes.fromhex(match.group(1))


def with_crc(head: bytes) -> bytes:
    return head + crc16(head).to_bytes(2, "big")


@pytest.mark.parametrize("label", list(DOCUMENTED_REPORTS))
def test_documented_reports_decode_as_documented(label: str) -> None:
    data = documented(label)
    assert decode_report(data) == DOCUMENTED_REPORTS[label]
    assert encode_report(DOCUMENTED_REPORTS[label]) == data


def test_documented_control_payloads_decode_as_documented() -> None:
    label = "GET_INFO reply: protocol 1, firmware 2.1.0, boot id 0x0000b007, serial DS-0001"
    assert decode_info(documented(label)) == DOCUMENTED_INFO
    assert encode_info(DOCUMENTED_INFO) == documented(label)
    reply = documented("RESEND reply: 3 reports from #8")
    assert decode_resend_reply(reply) == ResendReply(8, 3)
    assert encode_resend_reply(ResendReply(8, 3)) == reply


@pytest.mark.parametrize("label", list(DOCUMENTED_SETUP))
def test_documented_setup_packets(label: str) -> None:
    request_type, request, number, length = DOCUMENTED_SETUP[label]
    value, index = split_number(number)
    setup = struct.pack("<BBHHH", request_type, request, value, index, length)
    assert setup == documented(label)
    assert join_number(value, index) == number


@settings(max_examples=300)
@given(reports)
def test_every_report_round_trips_in_a_fixed_size_packet(report: Report) -> None:
    data = encode_report(report)
    assert len(data) == REPORT_SIZE
    assert decode_report(data) == report


@settings(max_examples=500)
@given(st.binary(max_size=2 * REPORT_SIZE))
def test_arbitrary_bytes_give_a_report_or_a_protocol_error(data: bytes) -> None:
    try:
        report = decode_report(data)
    except ReportDamaged as exc:
        assert exc.reason in ("bad_length", "bad_crc", "bad_kind", "bad_content")
    else:
        assert encode_report(report) == data  # only a canonical packet is accepted


@settings(max_examples=500)
@given(st.integers(0, 255), numbers, st.binary(min_size=13, max_size=13))
def test_arbitrary_bodies_with_a_good_crc_give_a_report_or_a_protocol_error(
        kind: int, number: int, body: bytes) -> None:
    data = with_crc(bytes((kind,)) + number.to_bytes(4, "big") + body)
    try:
        report = decode_report(data)
    except ReportDamaged as exc:
        assert exc.reason in ("bad_kind", "bad_content")
    else:
        assert encode_report(report) == data


@settings(max_examples=200)
@given(reports, st.integers(0, 8 * (REPORT_SIZE - 2) - 1))
def test_any_single_bit_flip_is_caught_by_the_crc(report: Report, bit: int) -> None:
    data = bytearray(encode_report(report))
    data[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(ReportDamaged) as info:
        decode_report(bytes(data))
    assert info.value.reason == "bad_crc"


@pytest.mark.parametrize(
    ("head", "reason"),
    [
        (bytes(5 + 13), "bad_kind"),  # an all-zero packet: a dead sensor
        (b"\x01" + bytes(4) + bytes((7, 3, 90, 0)) + bytes(9), "bad_content"),  # face 7
        (b"\x01" + bytes(4) + bytes((3, 3, 101, 0)) + bytes(9), "bad_content"),  # 101 %
        (b"\x01" + bytes(4) + bytes((3, 3, 90, 4)) + bytes(9), "bad_content"),  # a third die
        (b"\x02" + bytes(4) + bytes(13), "bad_content"),  # a no-roll with no die off
        (b"\x03" + bytes(4) + bytes((9,)) + bytes(12), "bad_content"),  # unknown fault code
        (b"\x04" + bytes(4) + bytes((2,)) + bytes(12), "bad_content"),  # unknown state
        (b"\x02" + bytes(4) + bytes((1,)) + bytes(11) + b"\x01", "bad_content"),  # reserved
    ],
)
def test_invalid_content_is_refused_with_its_reason(head: bytes, reason: str) -> None:
    with pytest.raises(ReportDamaged) as info:
        decode_report(with_crc(head))
    assert info.value.reason == reason


def test_a_short_packet_is_a_length_error() -> None:
    with pytest.raises(ReportDamaged) as info:
        decode_report(encode_report(RollReport(1, 2, 3, 99))[:REPORT_SIZE // 2])
    assert info.value.reason == "bad_length"


@settings(max_examples=200)
@given(st.builds(DeviceInfo, st.integers(0, 255), st.tuples(*[st.integers(0, 255)] * 3),
                 numbers, st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E),
                                  min_size=1, max_size=16)))
def test_device_info_round_trips(info: DeviceInfo) -> None:
    assert decode_info(encode_info(info)) == info


@settings(max_examples=200)
@given(st.builds(ResendReply, numbers, st.integers(0, 64)))
def test_resend_reply_round_trips(reply: ResendReply) -> None:
    assert decode_resend_reply(encode_resend_reply(reply)) == reply


@settings(max_examples=300)
@given(st.binary(max_size=32))
def test_arbitrary_control_payloads_give_a_message_or_a_protocol_error(data: bytes) -> None:
    for decode in (decode_info, decode_resend_reply):
        with contextlib.suppress(ProtocolError):  # anything else fails the test
            decode(data)


@settings(max_examples=300)
@given(numbers, st.integers(1, NUMBER_MODULO // 2 - 1))
def test_report_numbers_compare_across_the_wrap(a: int, step: int) -> None:
    b = (a + step) % NUMBER_MODULO
    assert number_is_ahead(a, b)
    assert not number_is_ahead(b, a)
    assert join_number(*split_number(b)) == b


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("usb://1209:0001", UsbAddress(0x1209, 0x0001)),
        ("usb://1209:0001?serial=DS-0001", UsbAddress(0x1209, 0x0001, "DS-0001")),
        ("usb://1209:00ff?serial=X&backend=sim:/tmp/d.sock",
         UsbAddress(0x1209, 0x00FF, "X", "sim:/tmp/d.sock")),
    ],
)
def test_usb_urls_name_vendor_product_serial_and_backend(url: str, address: UsbAddress) -> None:
    assert parse_usb_url(url) == address


@pytest.mark.parametrize("url", ["/dev/ttyUSB0", "usb://1209", "usb://12:34", "usb://zzzz:0001",
                                 "usb://1209:0001?color=red", "usb://1209:0001?backend=libusb"])
def test_malformed_usb_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        parse_usb_url(url)


@pytest.mark.parametrize(("mask", "dice"), [(0, None), (1, [1]), (2, [2]), (3, [1, 2])])
def test_a_roll_names_its_cocked_dice(mask: int, dice: list[int] | None) -> None:
    """The class of issue 16 item 4: the roll says which die was not lying flat, as the fault
    does, not only that the roll had one."""
    from tabled.drivers.dice.driver import normalize

    roll, *fault = normalize(RollReport(1, 6, 6, 70, mask))
    assert roll.extra.get("cocked_dice") == dice
    assert [f.extra["cocked_dice"] for f in fault] == ([dice] if dice else [])
