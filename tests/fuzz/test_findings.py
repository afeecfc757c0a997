"""Regressions for what the fuzzing campaign found (issue 5, "Fuzzing"; docs/reliability.md).

Each test is the smallest form of an input the campaign turned up, against the module that
mishandled it: a decoder's buffer cap that escaped bytes walked past, JSON nested past the
interpreter's stack, text no UTF-8 can carry, a MAC that ``hmac.compare_digest`` refuses to
compare, and a ``fault`` whose ``family`` the event schema refuses but the parser took.
"""

from __future__ import annotations

import json

import pytest

from tabled.contract.events import EventError, Fault, Void, lost_kind, parse_event, parse_line
from tabled.daemon.commands import CommandGate, CommandRejected, parse_ts, sign
from tabled.drivers.framing import DLE, ESCAPE_XOR, ETX, MAX_BODY, STX, CorruptFrame, FrameDecoder

KEY = b"regression-key"
TS = "2027-01-15T08:00:00.000Z"


def _gate() -> CommandGate:
    return CommandGate(KEY, 30.0, clock=lambda: parse_ts(TS))


def _command(**fields: object) -> dict[str, object]:
    return {"cmd": "void", "args": {}, "console": "pit-1", "ts": TS,
            "nonce": "0123456789abcdef", **fields}


# -- tabled.drivers.framing: the buffer cap (STYLE principle 4: decoders cap their buffer)
# -------------


def test_a_run_of_escaped_bytes_is_cut_off_at_the_buffer_cap() -> None:
    """Escaped bytes once grew a frame's buffer without bound: only plain bytes were checked."""
    escaped_stx = bytes((DLE, STX ^ ESCAPE_XOR))
    decoder = FrameDecoder()
    items = decoder.feed(bytes((STX,)) + escaped_stx * 10_000 + bytes((ETX,)))
    assert items and all(isinstance(item, CorruptFrame) for item in items)
    assert max(len(item.raw) for item in items if isinstance(item, CorruptFrame)) == MAX_BODY + 1
    assert decoder.counters["oversize"] >= 1


# -- tabled.contract.events: JSON nested past the stack, lone surrogates, the fault family
# ---------------


@pytest.mark.parametrize("nesting", ["[", '{"v":'])
def test_json_nested_past_the_stack_is_an_event_error(nesting: str) -> None:
    """parse_line let RecursionError out (docs/contract.md, tabled replay: malformed input is
    reported, not a crash)."""
    with pytest.raises(EventError, match="not JSON"):
        parse_line(nesting * 100_000)


@pytest.mark.parametrize("line", [
    '{"v":1,"type":"void","reason":"\\ud800"}',
    '{"v":1,"type":"fault","code":"sensor_fault","detail":"\\udfff"}',
    '{"v":1,"type":"roll","dice":[1,2],"note":["\\ud83d"]}',
    '{"v":1,"type":"reveal","\\ud800":1}',
])
def test_text_no_utf8_can_carry_is_an_event_error(line: str) -> None:
    """A void reason of a lone surrogate once reached an outcome's void_reason, which neither
    the journal nor MQTT nor tabled replay's output can write as UTF-8."""
    with pytest.raises(EventError, match="not valid Unicode"):
        parse_line(line)


def test_a_real_astral_character_is_still_welcome() -> None:
    event = parse_line('{"v":1,"type":"void","reason":"\\ud83c\\udca1 \\u4e2d"}')
    assert isinstance(event, Void) and event.reason == "\U0001f0a1 \u4e2d"


@pytest.mark.parametrize("family", ["Shuffler", "shoe!", "", None, 3, ["shoe"]])
def test_a_fault_family_the_schema_refuses_is_an_event_error(family: object) -> None:
    """contract/schemas/event.schema.json allows a family's name (lowercase letters, digits,
    underscores); what the schema refuses, the parser refuses."""
    with pytest.raises(EventError, match="family"):
        parse_event({"v": 1, "type": "fault", "code": "device_lost", "family": family})


@pytest.mark.parametrize("kind", ["printer", "Shuffler", None, 3, ["shoe"]])
def test_a_lost_device_kind_the_schema_refuses_is_an_event_error(kind: object) -> None:
    """qpoker.art11.5 reads the lost device's kind, so a misspelt one must not pass for a
    shuffler's."""
    with pytest.raises(EventError, match="kind"):
        parse_event({"v": 1, "type": "fault", "code": "device_lost", "kind": kind})


def test_a_fault_family_of_a_device_is_kept() -> None:
    event = parse_event({"v": 1, "type": "fault", "code": "device_lost", "family": "acme_shoe",
                         "kind": "shoe"})
    assert isinstance(event, Fault) and event.extra == {"family": "acme_shoe", "kind": "shoe"}
    assert lost_kind(event) == "shoe"


def test_a_lost_device_from_before_kinds_is_read_by_its_family() -> None:
    """Journals written before kinds were named carry only the family, then always a kind."""
    old = parse_event({"v": 1, "type": "fault", "code": "device_lost", "family": "shuffler"})
    vendor = parse_event({"v": 1, "type": "fault", "code": "device_lost", "family": "acme"})
    assert isinstance(old, Fault) and lost_kind(old) == "shuffler"
    assert isinstance(vendor, Fault) and lost_kind(vendor) is None


# -- tabled.daemon.commands: what reaches the gate before any MAC is checked
# ---------------------------


def test_a_non_ascii_mac_is_forged_not_a_type_error() -> None:
    """hmac.compare_digest raises TypeError on non-ASCII text: one unauthenticated message
    would have taken down the daemon's command listener."""
    payload = json.dumps({**_command(), "mac": "\u00e9"}).encode()
    with pytest.raises(CommandRejected) as refused:
        _gate().check("void", payload)
    assert refused.value.reason == "forged"


def test_content_no_utf8_can_carry_is_malformed() -> None:
    """canonical() encodes to UTF-8 to compute the MAC; a lone surrogate raised
    UnicodeEncodeError out of check()."""
    payload = json.dumps({**_command(args={"reason": "\ud800"}), "mac": "00"}).encode()
    with pytest.raises(CommandRejected) as refused:
        _gate().check("void", payload)
    assert refused.value.reason == "malformed"


def test_a_payload_nested_past_the_stack_is_malformed() -> None:
    with pytest.raises(CommandRejected) as refused:
        _gate().check("void", b"[" * 100_000)
    assert refused.value.reason == "malformed"


def test_a_signed_command_still_passes_once() -> None:
    """The fixes refuse nothing a console signs: its command passes, and only once."""
    payload = json.dumps(sign(_command(), KEY)).encode()
    command = _gate().check("void", payload)
    gate = _gate()
    assert gate.check("void", payload).event == command.event
    with pytest.raises(CommandRejected, match="replayed"):
        gate.check("void", payload)
