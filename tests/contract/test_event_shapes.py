"""A game states the shape of its events as data (issue 28: craps' two dice), and its streams
are read by a decoder of its own that checks the shape as it decodes: the same events and the
same refusals, with the same reasons and line numbers, as checking each event after a decoder
that knows no game."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import (
    EventCheck,
    EventError,
    GameChecks,
    LineError,
    Roll,
    check_dice,
    parse_line,
    read_events,
)
from tabled.games.registry import event_checks


def checked_one_by_one(lines: list[str], checks: Mapping[str, EventCheck]
                       ) -> list[tuple[int, object]] | str:
    """What a game's reader must give: each line decoded by the contract alone, then checked."""
    out: list[tuple[int, object]] = []
    for lineno, line in enumerate(lines, 1):
        try:
            event = parse_line(line)
            check = checks.get(event.TYPE)
            if check is not None:
                check(event)
        except EventError as exc:
            return f"line {lineno}: {exc}"
        out.append((lineno, event))
    return out


def read(lines: list[str], checks: GameChecks) -> list[tuple[int, object]] | str:
    try:
        return list(read_events(lines, checks))
    except LineError as exc:
        return str(exc)


dice = st.lists(st.integers(0, 7), min_size=0, max_size=5)
lines = st.one_of(
    dice.map(lambda d: json.dumps({"v": 2, "type": "roll", "dice": d})),
    dice.map(lambda d: json.dumps({"v": 2, "type": "roll", "dice": d, "seq": 1, "note": "x"})),
    dice.map(lambda d: json.dumps({"v": 2, "type": "roll", "dice": d, "device": None})),
    st.sampled_from(['{"v":2,"type":"no_roll","reason":"die_off_table"}',
                     '{"v":2,"type":"declare","result":"seven_out"}',
                     '{"v":2,"type":"declare","result":"not_a_word"}',
                     '{"v":2,"type":"round_start"}', "", "{", "[]"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=8), st.sampled_from([2, 3]))
def test_a_shaped_reader_gives_what_checking_each_event_gives(stream: list[str],
                                                              count: int) -> None:
    beyond = dict(event_checks("craps").items())
    del beyond["roll"]  # the game's other checks (a declared word) stay checks
    checks = GameChecks(beyond, dice=count)
    assert read(stream, checks) == checked_one_by_one(stream, dict(checks.items()))


def test_craps_states_two_dice_and_is_read_by_its_own_decoder() -> None:
    checks = event_checks("craps")
    assert isinstance(checks, GameChecks) and checks.dice == 2
    assert "roll" not in checks.beyond_shape and "roll" in checks  # nothing left per roll
    stream = ['{"v":2,"type":"roll","dice":[3,4]}', '{"v":2,"type":"roll","dice":[6,6]}',
              '{"v":2,"type":"roll","dice":[1,2,3]}']
    with pytest.raises(LineError, match=r"^line 3: dice \[1, 2, 3\] is not two integers 1-6$"):
        list(read_events(stream, checks))
    assert [e for _, e in read_events(stream[:2], checks)] == [Roll(dice=(3, 4)),
                                                              Roll(dice=(6, 6))]
    # the same refusal where one event is checked: the daemon's runtime, parse_line
    with pytest.raises(EventError, match=r"^dice \[1, 2, 3\] is not two integers 1-6$"):
        parse_line(stream[2], checks)


def test_a_shape_and_a_games_own_check_of_the_same_type_both_run() -> None:
    def no_double_six(event: object) -> None:
        if isinstance(event, Roll) and event.dice == (6, 6):
            raise EventError("no double six here")

    checks = GameChecks({"roll": no_double_six}, dice=2)
    for stream, reason in [(['{"v":2,"type":"roll","dice":[6,6]}'], "no double six here"),
                           (['{"v":2,"type":"roll","dice":[6,6,6]}'], "is not two integers")]:
        with pytest.raises(LineError, match=reason):
            list(read_events(stream, checks))


@pytest.mark.parametrize("count", [0, 1])
def test_a_roll_has_at_least_two_dice(count: int) -> None:
    with pytest.raises(ValueError, match="at least 2 dice"):
        GameChecks({}, dice=count)


@pytest.mark.parametrize(("count", "word"), [(2, "two"), (3, "three")])
def test_the_refusal_names_the_count(count: int, word: str) -> None:
    check_dice(count)(Roll(dice=(1,) * count))
    with pytest.raises(EventError, match=rf"^dice \[1, 1, 1, 1\] is not {word} integers 1-6$"):
        check_dice(count)(Roll(dice=(1, 1, 1, 1)))
