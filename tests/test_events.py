"""The normalized event stream of CONTRACT.md: parsing, encoding, and the errors for bad input."""

from __future__ import annotations

import contextlib
import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import (
    CARD_CODES,
    CardDealt,
    Decision,
    EventError,
    HandDealt,
    LineError,
    Meta,
    Roll,
    RoundStart,
    encode_event,
    event_to_dict,
    parse_event,
    parse_line,
    read_events,
)

cards = st.sampled_from(sorted(CARD_CODES))
seats = st.one_of(st.integers(1, 12), st.just("dealer"))
meta = st.fixed_dictionaries(
    {},
    optional={
        "device": st.text(min_size=1, max_size=12),
        "seq": st.integers(0, 2**40),
        "ts": st.just("2026-11-29T15:43:19.123Z"),
    },
)


def _with(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return meta.map(lambda m: {"v": 1, **base, **m})


event_dicts = st.one_of(
    st.integers(6, 12).flatmap(lambda d: _with({"type": "shoe_start", "decks": d})),
    cards.flatmap(lambda c: _with({"type": "burn", "card": c})),
    _with({"type": "burn"}),
    _with({"type": "cut_card"}),
    _with({"type": "demo"}),
    st.tuples(cards, st.booleans(), seats).flatmap(
        lambda t: _with({"type": "card", "card": t[0], "face_up": t[1], "seat": t[2]})
    ),
    st.lists(st.integers(1, 12), unique=True).flatmap(
        lambda s: _with({"type": "round_start", "seats": s})
    ),
    st.tuples(seats, st.lists(cards, min_size=1, max_size=4)).flatmap(
        lambda t: _with({"type": "hand", "seat": t[0], "cards": t[1]})
    ),
    st.tuples(st.integers(1, 12), st.booleans()).flatmap(
        lambda t: _with({"type": "decision", "seat": t[0], "play": t[1]})
    ),
    _with({"type": "reveal"}),
    st.tuples(st.integers(1, 6), st.integers(1, 6)).flatmap(
        lambda d: _with({"type": "roll", "dice": list(d)})
    ),
    _with({"type": "no_roll", "reason": "off_table"}),
    st.sampled_from(["shuffler_jam", "device_lost"]).flatmap(
        lambda c: _with({"type": "fault", "code": c, "detail": "x"})
    ),
    _with({"type": "void", "reason": "dealer"}),
    st.tuples(seats, st.integers(1, 3)).flatmap(
        lambda t: _with({"type": "withheld", "seat": t[0], "count": t[1]})
    ),
)


@settings(max_examples=400)
@given(event_dicts)
def test_round_trip_keeps_every_field(obj: dict[str, Any]) -> None:
    """parse -> encode -> parse is the identity, and the JSON object comes back unchanged."""
    event = parse_event(obj)
    assert event_to_dict(event) == obj
    assert parse_line(encode_event(event)) == event


@settings(max_examples=200)
@given(obj=event_dicts)
def test_encoded_events_validate_against_the_schema(event_validator, obj: dict[str, Any]) -> None:
    event_validator.validate(event_to_dict(parse_event(obj)))


def test_extra_fields_survive_and_typed_fields_parse() -> None:
    line = '{"v":1,"type":"card","card":"TD","seat":3,"device":"shoe-1","seq":7,"deal":"x"}'
    event = parse_line(line)
    assert event == CardDealt(card="TD", seat=3, meta=Meta(device="shoe-1", seq=7))
    assert event.extra == {"deal": "x"}
    assert json.loads(encode_event(event)) == json.loads(line)


def test_typed_values() -> None:
    assert parse_line('{"v":1,"type":"roll","dice":[3,4]}') == Roll(dice=(3, 4))
    assert parse_line('{"v":1,"type":"decision","seat":2,"play":false}') == Decision(
        seat=2, play=False
    )
    assert parse_line('{"v":1,"type":"round_start","seats":[1,4]}') == RoundStart(seats=(1, 4))
    assert parse_line('{"v":1,"type":"hand","seat":"dealer","cards":["AS","2S","3S"]}') == (
        HandDealt(seat="dealer", cards=("AS", "2S", "3S"))
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("not json", "not JSON"),
        ("[1,2]", "JSON object"),
        ('{"type":"roll","dice":[1,2]}', "contract version"),
        ('{"v":2,"type":"roll","dice":[1,2]}', "contract version"),
        ('{"v":1,"type":"shuffle"}', "unknown event type 'shuffle'"),
        ('{"v":1}', "unknown event type None"),
        ('{"v":1,"type":"card"}', "missing required field 'card'"),
        ('{"v":1,"type":"card","card":"1S"}', "'1S' is not a card code"),
        ('{"v":1,"type":"card","card":"as"}', "'as' is not a card code"),
        ('{"v":1,"type":"card","card":"10D"}', "'10D' is not a card code"),
        ('{"v":1,"type":"card","card":"AS","seat":0}', "seat 0"),
        ('{"v":1,"type":"card","card":"AS","face_up":"yes"}', "face_up 'yes'"),
        ('{"v":1,"type":"roll","dice":[0,3]}', "two integers 1-6"),
        ('{"v":1,"type":"roll","dice":[3,7]}', "two integers 1-6"),
        ('{"v":1,"type":"roll","dice":[3]}', "two integers 1-6"),
        ('{"v":1,"type":"roll","dice":[true,3]}', "two integers 1-6"),
        ('{"v":1,"type":"roll"}', "missing required field 'dice'"),
        ('{"v":1,"type":"hand","seat":1,"cards":"AS"}', "not a list"),
        ('{"v":1,"type":"decision","seat":"dealer","play":true}', "positive integer"),
        ('{"v":1,"type":"decision","seat":1,"play":1}', "play 1"),
        ('{"v":1,"type":"round_start","seats":[1,1]}', "twice"),
        ('{"v":1,"type":"shoe_start","decks":"8"}', "decks '8'"),
        ('{"v":1,"type":"fault"}', "missing required field 'code'"),
        ('{"v":1,"type":"reveal","seq":-1}', "seq -1"),
        ('{"v":1,"type":"withheld","seat":"dealer","count":4}', "count 4"),
    ],
)
def test_malformed_events_name_the_problem(line: str, reason: str) -> None:
    with pytest.raises(EventError, match=reason.replace("(", r"\(").replace("[", r"\[")):
        parse_line(line)


@settings(max_examples=2000)
@given(st.one_of(st.text(), st.binary()))
def test_arbitrary_input_gives_an_event_or_an_event_error(data: str | bytes) -> None:
    with contextlib.suppress(EventError):
        parse_line(data)


def test_read_events_numbers_lines_skips_blank_ones_and_stops_at_the_first_bad_one() -> None:
    """The reader ``tabled replay`` and ``tabled roads`` share: blank lines count but carry no
    event; the first malformed line raises with its number, after the events before it."""
    lines = ['{"v":1,"type":"demo"}\n', "\n", '  \n', '{"v":1,"type":"cut_card"}\n',
             '{"v":1,"type":"card","card":"1S"}\n', '{"v":1,"type":"demo"}\n']
    reader = read_events(lines)
    assert [(n, e.type) for n, e in itertools.islice(reader, 2)] == [(1, "demo"), (4, "cut_card")]
    with pytest.raises(LineError) as caught:
        next(reader)
    assert (caught.value.lineno, str(caught.value)) == (5, f"line 5: {caught.value.reason}")
    assert caught.value.reason.startswith("card '1S' is not a card code")
    assert isinstance(caught.value, EventError)
