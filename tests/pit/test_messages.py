"""What the pit accepts from a table's topic tree, judged by the contract's ranges
(tabled.contract.limits): each refusal is :class:`Malformed` with a reason and a code, never
another exception (issue 27, items 1 and 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tabled.contract.limits import MAX_DEPTH, MAX_SEQ
from tabled.pit.messages import MALFORMED_CODES, Malformed, parse_message

PREFIX = "tabled"
CARD = {"v": 1, "type": "card", "card": "AS", "device": "shoe-1", "seq": 3}


def parse(topic: str, payload: bytes | str | dict[str, Any]) -> Any:
    if isinstance(payload, dict):
        payload = json.dumps(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return parse_message(PREFIX, f"{PREFIX}/{topic}", payload, 0.0)


def nested(depth: int) -> str:
    return '{"v":1,"type":"card","card":"AS","table_seq":1,"x":' + "[" * (depth - 1) + \
        "]" * (depth - 1) + "}"


POISON = [
    # (topic, payload, code, words of the reason)
    ("lab/t1/event", {**CARD, "table_seq": 2**63}, "out_of_range", "9223372036854775808 beyond"),
    ("lab/t1/event", {**CARD, "table_seq": 10**30}, "out_of_range", "beyond"),
    ("lab/t1/event", {**CARD, "table_seq": -1}, "out_of_range", "table_seq -1"),
    ("lab/t1/event", {**CARD, "table_seq": MAX_SEQ + 1}, "out_of_range", "beyond"),
    ("lab/t1/event", '{"v":1,"type":"card","card":"AS","table_seq":' + "9" * 10_000 + "}",
     "out_of_range", "beyond"),
    ("lab/t1/event", {**CARD, "table_seq": "7"}, "wrong_type", "not an integer"),
    ("lab/t1/event", {**CARD, "table_seq": True}, "wrong_type", "not an integer"),
    ("lab/t1/event", {**CARD, "seq": 2**64, "table_seq": 1}, "out_of_range", "beyond"),
    # below the range, an event's and an outcome's numbers are refused in the words of the
    # contract's own parser (tests/contract/test_one_decoder.py), code ``invalid``
    ("lab/t1/event", {**CARD, "seq": -3, "table_seq": 1}, "invalid",
     "seq -3 is not a non-negative integer"),
    ("lab/t1/event", {**CARD, "table_seq": 1, "x": -(2**60)}, "out_of_range", "beyond"),
    ("lab/t1/event", '{"v":1,"type":"card","card":"AS","table_seq":1,"x":1e999}',
     "out_of_range", "not finite"),
    ("lab/t1/event", '{"v":1,"type":"card","card":"AS","table_seq":1,"x":NaN}', "not_json",
     "NaN"),
    ("lab/t1/outcome", {"v": 1, "type": "outcome", "game": "craps", "round": -2,
                        "status": "complete", "result": {}, "bets": {}, "table_seq": 1},
     "invalid", "round: -2"),
    ("lab/t1/event", "[" * 10_000, "too_deep", "nested deeper"),
    ("lab/t1/event", '{"a":' * 50_000, "too_deep", "nested deeper"),
    ("lab/t1/event", nested(MAX_DEPTH + 1), "too_deep", f"deeper than {MAX_DEPTH}"),
    ("lab/t1/fault", {"v": 1, "type": "fault", "code": "x\u0000y", "table_seq": 1},
     "bad_text", "U+0000"),
    ("lab/t1/fault", '{"v":1,"type":"fault","code":"x","detail":"\\ud800","table_seq":1}',
     "bad_text", "not valid Unicode"),
    ("lab/t1/event", {**CARD, "table_seq": 1, "note": {"k\u0000": 1}}, "bad_text", "U+0000"),
    ("lab/t1/fault", {"v": 1, "type": "fault", "code": "x", "detail": 5, "table_seq": 1},
     "wrong_type", "detail 5 is not text"),
    ("lab/t1/fault", {"v": 1, "type": "fault", "code": "x", "device": ["a"], "table_seq": 1},
     "wrong_type", "device"),
    ("lab/t1/status", {"state": "offline", "reason": {"a": 1}, "table_seq": 1}, "wrong_type",
     "reason"),
    ("lab/t1/status", {"state": "online", "game": "craps", "devices": "dice-1",
                       "table_seq": 1}, "wrong_type", "devices"),
    ("lab/t1/device/d1/status", {"state": "lost", "family": 7, "table_seq": 1}, "wrong_type",
     "family"),
    ("lab/t1/device/d1/status", {"state": "connected", "info": "x", "table_seq": 1},
     "wrong_type", "info"),
    ("lab/../event", {**CARD, "table_seq": 1}, "bad_id", "table id '..'"),
    ("lab/<img src=x>/event", {**CARD, "table_seq": 1}, "bad_id", "table id '<img src=x>'"),
    ("<b>/t1/event", {**CARD, "table_seq": 1}, "bad_id", "site id"),
    ("lab/t1/device/<script>/status", {"state": "lost", "table_seq": 1}, "bad_id",
     "device id"),
    ("lab/" + "t" * 65 + "/event", {**CARD, "table_seq": 1}, "bad_id", "not an id"),
    ("lab/pit/alert", {"type": "alert"}, "bad_topic", "the pit's own"),
    ("lab/t1/event", b"\xff\xfe", "not_utf8", "UTF-8"),
    ("lab/t1/event", "{not json", "not_json", "not JSON"),
    ("lab/t1/event", "[1, 2]", "wrong_type", "not a JSON object"),
    ("lab/t1/event", {"v": 1, "type": "card", "card": "AS"}, "no_seq", "no table_seq"),
    ("lab/t1/event", "x" * (256 * 1024 + 1), "too_large", "bytes"),
    ("lab/t1/event", {"v": 1, "type": "card", "card": "ZZ", "table_seq": 1}, "invalid",
     "event"),
]


@pytest.mark.parametrize(("topic", "payload", "code", "words"), POISON,
                         ids=[f"{p[2]}-{i}" for i, p in enumerate(POISON)])
def test_a_message_outside_the_contract_is_malformed_with_its_reason_and_code(
        topic: str, payload: Any, code: str, words: str) -> None:
    with pytest.raises(Malformed) as refused:
        parse(topic, payload)
    assert refused.value.code == code and code in MALFORMED_CODES
    assert words in refused.value.reason, refused.value.reason


@pytest.mark.parametrize("topic", ["lab/t1/event", "site.1/bac_07-a/event",
                                   "lab/" + "t" * 64 + "/event"])
def test_messages_within_the_contract_pass(topic: str) -> None:
    message = parse(topic, {**CARD, "table_seq": MAX_SEQ})
    assert message.table_seq == MAX_SEQ and message.kind == "card"
    assert parse("lab/t1/event", nested(MAX_DEPTH)).table_seq == 1
    assert parse("lab/t1/event", {**CARD, "table_seq": 0, "x": -MAX_SEQ, "y": 1.5e300,
                                  "z": "caf\u00e9 \U0001f3b2"}).table_seq == 0
    device = parse("lab/t1/device/shoe-1.a/status",
                   {"state": "connected", "device": "shoe-1.a", "family": "shoe",
                    "info": {"firmware": "1"}, "table_seq": 2})
    assert device.topic.device == "shoe-1.a"
    fault = parse("lab/t1/fault", {"v": 1, "type": "fault", "code": "journal_failure",
                                   "detail": None, "durable": False, "table_seq": None})
    assert fault.table_seq is None
