"""Sic bo's integrity part: every rate is a key of the game's exact odds, each throw observed as
its class and total, its three dice, and the dealer's call against the throw."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from tabled.contract.events import NoRoll, Roll, Void
from tabled.contract.outcome import Outcome

pytest.importorskip("tabled.games.parts.integrity", reason="the integrity part's protocol")

from tabled.games import registry

from tabled_sicbo import DECLARATIONS
from tabled_sicbo.integrity import INTEGRITY, decided, observe, rates, throw
from tabled_sicbo.odds import sicbo_odds
from tabled_sicbo.options import SicBoOptions
from tabled_sicbo.rules import THROWS, SicBoTable


class Record:
    """An outcome record as the pit decodes it: the published record's fields."""

    def __init__(self, outcome: Outcome) -> None:
        record = json.loads(outcome.to_json())
        self.round, self.status, self.result = record["round"], record["status"], record["result"]


def records(*events: Any) -> list[Any]:
    table = SicBoTable()
    return [Record(o) for e in events for o in table.feed(e) if isinstance(o, Outcome)]


def test_the_game_names_its_integrity_part() -> None:
    assert (INTEGRITY.dice, INTEGRITY.unit, INTEGRITY.shoe) == (3, "throws", False)
    assert registry.part("sicbo", "integrity") is INTEGRITY


def test_every_rate_is_a_probability_of_the_exact_odds() -> None:
    probabilities = sicbo_odds().probabilities
    for group in rates(SicBoOptions()):
        assert set(group.names) <= set(probabilities)
        assert sum(probabilities[name] for name in group.names) == 1  # exclusive, exhaustive


def test_each_throw_is_observed_once_per_group() -> None:
    counts = [[0] * len(group.rates) for group in rates(SicBoOptions())]
    for dice in THROWS:
        [record] = records(Roll(dice=cast(Any, dice)))
        observed = observe(record)
        assert observed is not None
        for group, (index,) in enumerate(observed):
            assert isinstance(index, int)
            counts[group][index] += 1
    assert counts[0] == [105, 105, 6]
    assert counts[1][0] == counts[1][-1] == 1 and sum(counts[1]) == 216


def test_the_dice_and_the_call() -> None:
    big, triple, unread, void = records(Roll(dice=cast(Any, (6, 6, 5))),
                                        Roll(dice=cast(Any, (2, 2, 2))),
                                        NoRoll(reason="die_not_flat"), Void())
    assert throw(big) == (6, 6, 5) and throw(unread) is None
    assert decided(big) == ("big", "6-6-5 (17)")
    assert decided(triple) == ("triple", "2-2-2 (6)")
    assert observe(unread) is None and observe(void) is None
    assert {decided(r)[0] for r in (big, triple)} <= set(DECLARATIONS)
