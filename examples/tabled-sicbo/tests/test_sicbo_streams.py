"""Sic bo's streams for the games conformance kit, and its check of a roll: every stream line is
a valid event, a round closed by the rules; a roll of anything but three dice is refused."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest
from tabled.contract.events import EventError, Roll, parse_event, parse_line
from tabled.contract.outcome import Outcome

from tabled_sicbo import GAME
from tabled_sicbo.rules import SicBoTable, check_roll
from tabled_sicbo.streams import streams


def _contract_takes_three_dice() -> bool:
    try:
        event = parse_event({"v": 2, "type": "roll", "dice": [1, 2, 3]})
    except ValueError:
        return False
    return isinstance(event, Roll) and list(event.dice) == [1, 2, 3]


@pytest.mark.skipif(not _contract_takes_three_dice(),
                    reason="the contract's roll carries two dice only (issue 28: 2 or more)")
def test_a_stream_is_seeded_and_every_line_closes_a_round() -> None:
    lines = streams(random.Random(3), 400)
    assert lines == streams(random.Random(3), 400) and len(lines) == 400
    table = SicBoTable()
    kinds = set()
    for line in lines:
        event = parse_line(line)
        check_roll(event)
        kinds.add(event.TYPE)
        [outcome] = table.feed(event)
        assert isinstance(outcome, Outcome) and outcome.article != ""
    assert kinds == {"roll", "no_roll", "void"} and table.next_round == 401


def test_a_roll_is_three_dice() -> None:
    check_roll(Roll(dice=cast(Any, (1, 2, 3))))
    with pytest.raises(EventError, match="three integers"):
        check_roll(Roll(dice=(1, 2)))


def test_the_declaration_carries_what_the_installed_tabled_takes() -> None:
    assert GAME.name == "sicbo" and GAME.declarations == ("small", "big", "triple")
    for name, value in (("streams", "tabled_sicbo.streams:streams"),
                        ("checks", {"roll": check_roll})):
        if hasattr(GAME, name):
            assert getattr(GAME, name) == value
