"""The normalized event stream of docs/contract.md: parsing, encoding, and the errors for bad
input."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import assume, given, settings
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
from tabled.games.registry import event_checks, games

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
    return meta.map(lambda m: {"v": 2, **base, **m})


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
    st.tuples(st.integers(1, 12), st.booleans(), st.one_of(st.none(), st.integers(1, 10**6))
              ).flatmap(
        lambda t: _with({"type": "decision", "seat": t[0], "play": t[1],
                         **({} if t[2] is None else {"round": t[2]})})
    ),
    _with({"type": "reveal"}),
    st.integers(1, 10**6).flatmap(lambda r: _with({"type": "reveal", "round": r})),
    st.tuples(st.integers(1, 6), st.integers(1, 6)).flatmap(
        lambda d: _with({"type": "roll", "dice": list(d)})
    ),
    _with({"type": "no_roll", "reason": "off_table"}),
    st.sampled_from(["shuffler_jam", "device_lost"]).flatmap(
        lambda c: _with({"type": "fault", "code": c, "detail": "x"})
    ),
    _with({"type": "void", "reason": "dealer"}),
    st.integers(1, 10**6).flatmap(lambda r: _with({"type": "void", "round": r})),
    st.tuples(seats, st.integers(1, 3)).flatmap(
        lambda t: _with({"type": "withheld", "seat": t[0], "count": t[1]})
    ),
    st.tuples(st.sampled_from(["banker", "seven_out", "dealer_qualifies"]),
              st.one_of(st.none(), st.integers(1, 10**6))).flatmap(
        lambda t: _with({"type": "declare", "result": t[0],
                         **({} if t[1] is None else {"round": t[1]})})
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
    line = '{"v":2,"type":"card","card":"TD","seat":3,"device":"shoe-1","seq":7,"deal":"x"}'
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
        ('{"v":3,"type":"roll","dice":[1,2]}', "contract version"),
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


# -- strictness: what docs/contract.md calls malformed, whatever the parser is made of (issue 16)
# -----
#
# These tests know nothing of the parser's insides: they feed JSON text or decoded JSON values to
# ``parse_line``/``parse_event`` and judge the answer by docs/contract.md alone, through the small
# reading of it below (which JSON values each field may take). A parser written another way (say
# msgspec, issue 14) must pass them unchanged.

# Each typed field of each event type, and the kind of value docs/contract.md gives it.
FIELD_KINDS: dict[str, dict[str, str]] = {
    "shoe_start": {"decks": "positive_int"},
    "burn": {"card": "card"},
    "cut_card": {},
    "demo": {},
    "card": {"card": "card", "face_up": "bool", "seat": "seat"},
    "round_start": {"seats": "player_seats"},
    "hand": {"seat": "seat", "cards": "cards", "face_up": "bool"},
    "decision": {"seat": "player_seat", "play": "bool"},
    "reveal": {},
    "roll": {"dice": "dice"},
    "no_roll": {"reason": "text"},
    "fault": {"code": "text", "detail": "string"},
    "void": {"reason": "string"},
    "withheld": {"seat": "seat", "count": "count"},
    "declare": {"result": "declared", "round": "positive_int"},
}
META_KINDS = {"device": "string", "seq": "non_negative_int", "ts": "string"}
# What each type cannot do without (docs/contract.md's table; "v" and "type" for every event).
REQUIRED: dict[str, tuple[str, ...]] = {
    "shoe_start": ("decks",), "card": ("card",), "hand": ("seat", "cards"),
    "decision": ("seat", "play"), "roll": ("dice",), "no_roll": ("reason",),
    "fault": ("code",), "withheld": ("seat", "count"), "declare": ("result",),
}
# What one game requires beyond that, as each game declares it (Q Poker deals every card to a
# seat, and a round_start lists the seats with a bet).
GAME_REQUIRED = {name: dict(declared.required) for name, declared in games().items()}
#: A declared word, as docs/contract.md reads it: an id (which words, the table's game's).
DECLARED_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _int(value: Any) -> bool:
    return type(value) is int  # JSON's integers: not true/false, not 1.0


def acceptable(kind: str, value: Any) -> bool:
    """docs/contract.md's reading of one field's value, independent of the parser."""
    if kind == "positive_int":
        return _int(value) and value >= 1
    if kind == "non_negative_int":
        return _int(value) and value >= 0
    if kind == "count":  # a withheld placeholder stands for one card or a hand of three
        return _int(value) and 1 <= value <= 3
    if kind == "bool":
        return type(value) is bool
    if kind == "string":
        return type(value) is str
    if kind == "text":
        return type(value) is str and value != ""
    if kind == "card":
        return type(value) is str and value in CARD_CODES
    if kind == "declared":  # docs/contract.md: a word a game lets its dealer call, an id
        return type(value) is str and DECLARED_WORD.fullmatch(value) is not None
    if kind == "cards":
        return type(value) is list and all(acceptable("card", c) for c in value)
    if kind == "player_seat":
        return acceptable("positive_int", value)
    if kind == "seat":
        return (type(value) is str and value == "dealer") or acceptable("player_seat", value)
    if kind == "player_seats":
        return (type(value) is list and all(acceptable("player_seat", s) for s in value)
                and len(set(value)) == len(value))
    if kind == "dice":
        return (type(value) is list and len(value) >= 2
                and all(_int(d) and 1 <= d <= 6 for d in value))
    raise AssertionError(kind)


def as_json(value: Any) -> str:
    """JSON text, type-exact: ``1``, ``1.0`` and ``true`` differ here, not under ``==``."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**70) | st.floats(allow_nan=False,
                                                                  allow_infinity=False)
    | st.sampled_from([0, 1, 2, 3, 6, 7, 1.0, 2.0, 3.0, 0.0, -0.0, 1e0, True, False, "1", "3",
                       "dealer", "AS", "TD", "", " ", "x", "off_table"])
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=2),
    max_leaves=6,
)
# Values a field of each kind may take, to build well-formed events from.
good_values: dict[str, st.SearchStrategy[Any]] = {
    "positive_int": st.integers(1, 2**40), "non_negative_int": st.integers(0, 2**40),
    "count": st.integers(1, 3), "bool": st.booleans(), "string": st.text(max_size=8),
    "text": st.text(min_size=1, max_size=8), "card": cards,
    "declared": st.sampled_from(sorted({w for g in games().values() for w in g.declarations})),
    "cards": st.lists(cards, max_size=4), "player_seat": st.integers(1, 20),
    "seat": seats, "player_seats": st.lists(st.integers(1, 20), unique=True, max_size=5),
    "dice": st.lists(st.integers(1, 6), min_size=2, max_size=4),
}


@st.composite
def well_formed(draw: st.DrawFn) -> dict[str, Any]:
    """Any event docs/contract.md accepts, with any of its optional fields."""
    etype = draw(st.sampled_from(sorted(FIELD_KINDS)))
    obj: dict[str, Any] = {"v": 2, "type": etype}
    for name, kind in {**FIELD_KINDS[etype], **META_KINDS}.items():
        if name in REQUIRED.get(etype, ()) or draw(st.booleans()):
            obj[name] = draw(good_values[kind])
    return obj


def outcome_of(parse: Any, arg: Any) -> tuple[str, Any]:
    try:
        return "ok", parse(arg)
    except EventError as exc:
        return "malformed", str(exc)


@settings(max_examples=600)
@given(data=st.data(), obj=well_formed())
def test_every_typed_field_takes_exactly_the_values_the_contract_gives_it(
        data: st.DataObject, obj: dict[str, Any]) -> None:
    """bool for int, float for int (1.0 included), int for bool, a string for an int, null,
    a list or object where a scalar belongs, and the reverse: one field at a time, the parser
    accepts a value exactly when docs/contract.md does, and keeps it as it came."""
    kinds = {**FIELD_KINDS[obj["type"]], **META_KINDS}
    name = data.draw(st.sampled_from(sorted(kinds)), label="field")
    value = data.draw(json_values | good_values[kinds[name]], label="value")
    spoiled = {**obj, name: value}
    verdict, result = outcome_of(parse_line, as_json(spoiled))
    if acceptable(kinds[name], value):
        assert verdict == "ok", result
        assert as_json(event_to_dict(result)) == as_json(spoiled)
    else:
        assert verdict == "malformed", f"{as_json(spoiled)} was accepted"
        assert outcome_of(parse_event, spoiled)[0] == "malformed"


@settings(max_examples=300)
@given(obj=well_formed(), v=json_values)
def test_v_is_the_integer_1_or_2_and_nothing_python_holds_equal_to_them(obj: dict[str, Any],
                                                                       v: Any) -> None:
    verdict, result = outcome_of(parse_line, as_json({**obj, "v": v}))
    assert verdict == ("ok" if _int(v) and v in (1, 2) else "malformed"), result


def test_a_version_1_event_reads_and_is_written_as_version_2() -> None:
    """Contract version 2 changed no event's fields: a stream recorded under version 1 reads
    as it did, and what is written of it (journaled, published) says version 2."""
    event = parse_line('{"v":1,"type":"card","card":"TD","seat":3}')
    assert event == parse_line('{"v":2,"type":"card","card":"TD","seat":3}')
    assert event_to_dict(event) == {"v": 2, "type": "card", "card": "TD", "seat": 3}


@pytest.mark.parametrize("v", ["true", "1.0", "2.0", "1e0", "10e-1", '"1"', "[1]", "null", "3",
                               "0"])
def test_v_spelt_otherwise_is_malformed(v: str) -> None:
    with pytest.raises(EventError, match="contract version"):
        parse_line('{"v":' + v + ',"type":"reveal"}')


@settings(max_examples=400)
@given(obj=well_formed(), data=st.data())
def test_what_is_accepted_comes_back_unchanged_so_nothing_was_invented(
        obj: dict[str, Any], data: st.DataObject) -> None:
    """A parser that supplies a default (a no_roll reason), drops a null, or turns 1.0 into 1
    would change the event on its way through: an accepted event encodes to exactly its input."""
    drop = data.draw(st.sets(st.sampled_from(sorted(obj))), label="dropped")
    smaller = {k: v for k, v in obj.items() if k not in drop}
    verdict, result = outcome_of(parse_event, smaller)
    if verdict == "ok":
        assert as_json(event_to_dict(result)) == as_json(smaller)
    missing = {"v", "type", *REQUIRED.get(obj["type"], ())} & drop
    assert verdict == ("malformed" if missing else "ok"), (smaller, result)


@pytest.mark.parametrize(("etype", "field"), [(t, f) for t, fs in REQUIRED.items() for f in fs])
def test_a_missing_required_field_is_named(etype: str, field: str) -> None:
    obj = {"v": 2, "type": etype, "decks": 8, "card": "AS", "seat": 1, "cards": ["AS"],
           "play": True, "dice": [1, 2], "reason": "off_table", "code": "x", "count": 1,
           "result": "tie"}
    obj = {k: v for k, v in obj.items() if k in {"v", "type", *FIELD_KINDS[etype]}}
    del obj[field]
    with pytest.raises(EventError, match=f"missing required field '{field}'"):
        parse_event(obj)


def test_no_roll_without_reason_is_malformed_not_given_one() -> None:
    """docs/contract.md: ``no_roll`` | ``reason``. The parser once made up ``"off_table"``."""
    for line in ('{"v":1,"type":"no_roll"}', '{"v":1,"type":"no_roll","reason":""}',
                 '{"v":1,"type":"no_roll","reason":null}'):
        with pytest.raises(EventError, match="reason"):
            parse_line(line)
    event = parse_line('{"v":1,"type":"no_roll","reason":"die_off_table"}')
    assert event_to_dict(event) == {"v": 2, "type": "no_roll", "reason": "die_off_table"}


@pytest.mark.parametrize("line", ["", "\n", " ", "   \n", "\t", "\r\n", b"", b" \n"])
def test_a_blank_line_is_malformed(line: str | bytes) -> None:
    with pytest.raises(EventError, match="blank line"):
        parse_line(line)


@pytest.mark.parametrize("line", [
    '{"v":1,"type":"reveal","x":NaN}',
    '{"v":1,"type":"reveal","x":[Infinity]}',
    '{"v":1,"type":"void","reason":"x","y":{"z":-Infinity}}',
    ' {"v":1,"type":"reveal","x":NaN}',  # the slower path through json.loads too
])
def test_nan_and_infinity_are_not_json(line: str) -> None:
    """Python's JSON reader takes them; RFC 8259 has no such values, and the journal, MQTT and
    replay's output would carry them on as text no consumer can read."""
    with pytest.raises(EventError, match="not JSON"):
        parse_line(line)


@settings(max_examples=300)
@given(obj=well_formed(), game=st.sampled_from(["baccarat", "craps", "qpoker"]),
       data=st.data())
def test_a_game_requires_its_own_fields(obj: dict[str, Any], game: str,
                                        data: st.DataObject) -> None:
    """Q Poker deals every card to a seat and lists a round's seats: without them the line is
    malformed for Q Poker (and only for Q Poker); ``parse_line`` without a game knows no game.
    (A game's other checks, its declared words and its dice, are tests/test_game_checks.py's.)"""
    assume(obj["type"] not in ("declare", "roll"))
    needed = GAME_REQUIRED.get(game, {}).get(obj["type"], ())
    drop = data.draw(st.sets(st.sampled_from(needed)) if needed else st.just(set()))
    smaller = {k: v for k, v in obj.items() if k not in drop}
    assert outcome_of(parse_line, as_json(smaller))[0] == "ok"
    verdict, result = outcome_of(lambda line: parse_line(line, event_checks(game)),
                                 as_json(smaller))
    missing = set(needed) - set(smaller)
    assert verdict == ("malformed" if missing else "ok"), result
    if missing:
        assert f"missing required field '{sorted(missing)[0]}'" in result or any(
            f"'{m}'" in result for m in missing)
        assert game in result


@pytest.mark.parametrize(("line", "reason"), [
    ('{"v":1,"type":"card","card":"AS"}', "missing required field 'seat' (required in qpoker)"),
    ('{"v":1,"type":"card","card":"AS","seat":null}', "seat is null"),
    ('{"v":1,"type":"round_start"}', "missing required field 'seats' (required in qpoker)"),
])
def test_qpoker_cards_name_their_seat_and_rounds_their_seats(line: str, reason: str) -> None:
    with pytest.raises(EventError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_line(line, event_checks("qpoker"))
    assert parse_line(line.replace(',"seat":null', ""), event_checks("baccarat")) is not None


def test_read_events_numbers_lines_and_stops_at_the_first_bad_one() -> None:
    """The reader ``tabled replay`` and ``tabled roads`` share: each line is numbered; the
    first malformed line raises with its number, after the events before it. A blank line is
    malformed too (one event object per line, docs/contract.md; issue 16 item 8)."""
    lines = ['{"v":1,"type":"demo"}\n', '{"v":1,"type":"cut_card"}\n',
             '{"v":1,"type":"card","card":"1S"}\n', '{"v":1,"type":"demo"}\n']
    reader = read_events(lines)
    assert [(n, e.type) for n, e in itertools.islice(reader, 2)] == [(1, "demo"), (2, "cut_card")]
    with pytest.raises(LineError) as caught:
        next(reader)
    assert (caught.value.lineno, str(caught.value)) == (3, f"line 3: {caught.value.reason}")
    assert caught.value.reason.startswith("card '1S' is not a card code")
    assert isinstance(caught.value, EventError)
    blank = read_events(['{"v":1,"type":"demo"}\n', "  \n", '{"v":1,"type":"demo"}\n'])
    assert next(blank)[0] == 1
    with pytest.raises(LineError, match=r"^line 2: a blank line"):
        next(blank)
    # given the game, the fields it requires too
    qpoker = read_events(['{"v":1,"type":"card","card":"AS"}\n'], event_checks("qpoker"))
    with pytest.raises(LineError, match=r"^line 1: .*'seat' \(required in qpoker\)"):
        next(qpoker)
