"""One event decoder (issue 14): ``tabled replay`` reading a line, the daemon rebuilding its
rules from the journal, and the pit checking a published event all go through
``tabled.contract.events``, so they accept the same events and refuse the same ones, for the
same reason, in the same words."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from tabled.contract.events import EventError, encode_event, parse_event, parse_line
from tabled.daemon.replay import replay
from tabled.pit.messages import Malformed, parse_message

PREFIX = "tabled"

GOOD: list[dict[str, Any]] = [
    {"v": 1, "type": "card", "card": "AS", "device": "shoe-1", "seq": 3},
    {"v": 1, "type": "roll", "dice": [6, 1], "device_boot": 7, "device_msg": 2},
    {"v": 1, "type": "hand", "seat": "dealer", "cards": ["2C", "3D", "KH"], "face_up": False},
    {"v": 1, "type": "fault", "code": "device_lost", "family": "shoe", "kind": "shoe"},
    {"v": 1, "type": "void", "reason": "misdeal", "round": 4, "unknown_extra": [1, {"a": None}]},
]
BAD: list[dict[str, Any]] = [
    {"v": 1, "type": "card", "card": "1S"},
    {"v": 1, "type": "card", "card": "AS", "face_up": 1},
    {"v": 1, "type": "roll", "dice": [0, 7]},
    {"v": 1, "type": "roll", "dice": [1.0, 2]},
    {"v": 1, "type": "hand", "seat": 0, "cards": ["AS"]},
    {"v": 1, "type": "hand", "seat": 1, "cards": ["AS", "XX"]},
    {"v": 1, "type": "decision", "seat": 2},
    {"v": 1, "type": "shoe_start", "decks": True},
    {"v": 1, "type": "burn", "card": None},
    {"v": 1, "type": "no_roll"},
    {"v": 1, "type": "fault", "code": "x", "kind": "toaster"},
    {"v": 1, "type": "teleport"},
    {"v": True, "type": "reveal"},
    {"v": 1, "type": "card", "card": "AS", "seq": -1},
    {"v": 1, "type": "card", "card": "AS", "device_boot": 2**32},
]


def pit_check(obj: dict[str, Any]) -> str | None:
    """The pit's verdict on ``obj`` published as a table's event: None, or its reason."""
    payload = json.dumps({**obj, "table_seq": 1}).encode()
    try:
        parse_message(PREFIX, f"{PREFIX}/lab/t1/event", payload, 0.0)
    except Malformed as exc:
        return str(exc)
    return None


def reason(parse: Any, arg: Any) -> str | None:
    try:
        parse(arg)
    except EventError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("obj", GOOD, ids=lambda o: str(o["type"]))
def test_an_event_one_accepts_every_one_accepts_as_the_same_event(obj: dict[str, Any]) -> None:
    line = json.dumps(obj)
    event = parse_line(line)
    assert parse_event(obj) == event and parse_event(obj).extra == event.extra
    assert parse_line(encode_event(event)) == event
    assert pit_check(obj) is None


@pytest.mark.parametrize("obj", BAD, ids=lambda o: json.dumps(o))
def test_an_event_one_refuses_every_one_refuses_in_the_same_words(obj: dict[str, Any]) -> None:
    line = json.dumps(obj)
    why = reason(parse_line, line)
    assert why is not None, line
    assert reason(parse_event, obj) == why
    assert pit_check(obj) == f"event: {why}"
    out, err = io.StringIO(), io.StringIO()
    assert replay("craps", None, [json.dumps({"v": 1, "type": "roll", "dice": [3, 4]}), line],
                  out, err) == 2
    assert err.getvalue() == f"line 2: {why}\n"
    assert out.getvalue().count("\n") == 1  # the round before the bad line, and only it
