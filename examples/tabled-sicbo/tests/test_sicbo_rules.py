"""Sic bo's rules core: what each throw does to every wager, the void rounds, the pay table as
declared options, and the game's declaration as tabled's registry finds it."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabled.contract.events import Declare, Fault, NoRoll, Roll, Void, parse_event
from tabled.contract.faults import NOT_APPLIED_TYPE
from tabled.contract.outcome import BetResult, Notice, Outcome
from tabled.games import registry
from tabled.games.options import OptionError, OptionErrors

from tabled_sicbo import GAME
from tabled_sicbo.options import SicBoOptions, total_ways
from tabled_sicbo.rules import COMBINATIONS, THROWS, SicBoResult, SicBoTable, bet_keys

faces = st.integers(1, 6)
throws = st.tuples(faces, faces, faces)


def roll(*dice: int) -> Roll:
    return Roll(dice=cast(Any, dice))


def outcome_of(table: SicBoTable, *dice: int) -> Outcome:
    [outcome] = table.feed(roll(*dice))
    assert isinstance(outcome, Outcome)
    return outcome


def bet(outcome: Outcome, key: str) -> BetResult:
    result = outcome.bets[key]
    assert isinstance(result, BetResult)
    return result


def test_a_throw_is_a_round_of_its_own() -> None:
    table = SicBoTable()
    first = outcome_of(table, 1, 2, 4)
    assert (first.game, first.round, first.status) == ("sicbo", 1, "complete")
    assert first.result == SicBoResult((1, 2, 4), 7, False)
    assert first.to_record()["result"] == {"dice": [1, 2, 4], "total": 7, "triple": False}
    assert outcome_of(table, 6, 6, 5).round == 2
    assert not table.round_open and table.next_round == 3


@pytest.mark.parametrize(("dice", "small", "big", "odd", "even"), [
    ((1, 1, 2), "win", "lose", "lose", "win"),      # 4: the smallest Small
    ((3, 3, 4), "win", "lose", "lose", "win"),      # 10: the largest Small
    ((5, 4, 2), "lose", "win", "win", "lose"),      # 11: the smallest Big
    ((6, 6, 5), "lose", "win", "win", "lose"),      # 17: the largest Big
    ((2, 2, 2), "lose", "lose", "lose", "lose"),    # a triple in Small's range loses it
    ((5, 5, 5), "lose", "lose", "lose", "lose"),    # and in Big's
])
def test_big_small_odd_even_lose_on_any_triple(dice: tuple[int, int, int], small: str, big: str,
                                              odd: str, even: str) -> None:
    outcome = outcome_of(SicBoTable(), *dice)
    assert [bet(outcome, k).result for k in ("small", "big", "odd", "even")] == [
        small, big, odd, even]
    triple = dice[0] == dice[1] == dice[2]
    assert bet(outcome, "small").article == ("sicbo.art3.3" if triple else "sicbo.art3")
    if bet(outcome, "small").result == "win":
        assert bet(outcome, "small").pays == 1


def test_totals_pay_the_declared_table() -> None:
    options = SicBoOptions(total_4_17=60, total_9_12=7)
    table = SicBoTable(options)
    four = outcome_of(table, 1, 1, 2)
    assert bet(four, "total_4") == BetResult("win", "sicbo.art5", Fraction(60))
    assert bet(four, "total_17").result == "lose"
    nine = outcome_of(table, 3, 3, 3)  # a triple wins the total it makes (Art. 5)
    assert bet(nine, "total_9") == BetResult("win", "sicbo.art5", Fraction(7))
    assert sum(bet(nine, k).result == "win" for k in nine.bets if k.startswith("total_")) == 1


def test_triples_doubles_combinations_and_single_numbers() -> None:
    table = SicBoTable()
    trips = outcome_of(table, 4, 4, 4)
    assert bet(trips, "triple_4") == BetResult("win", "sicbo.art6", Fraction(150))
    assert bet(trips, "triple_3").result == "lose"
    assert bet(trips, "any_triple") == BetResult("win", "sicbo.art7", Fraction(24))
    assert bet(trips, "double_4") == BetResult("win", "sicbo.art8", Fraction(8))  # Art. 8
    assert bet(trips, "single_4") == BetResult("win", "sicbo.art10", Fraction(3))
    assert bet(trips, "combo_3_4").result == "lose"
    pair = outcome_of(table, 2, 5, 2)
    assert bet(pair, "double_2").result == "win" and bet(pair, "double_5").result == "lose"
    assert bet(pair, "single_2").pays == 2 and bet(pair, "single_5").pays == 1
    assert bet(pair, "combo_2_5") == BetResult("win", "sicbo.art9", Fraction(5))
    assert bet(pair, "combo_2_3").result == "lose" and bet(pair, "any_triple").result == "lose"
    assert bet(pair, "single_6") == BetResult("lose", "sicbo.art10")


@given(throws)
def test_every_bet_is_decided_and_cites_its_article(dice: tuple[int, int, int]) -> None:
    outcome = outcome_of(SicBoTable(), *dice)
    assert list(outcome.bets) == list(bet_keys(SicBoOptions()))
    for key, result in outcome.bets.items():
        assert isinstance(result, BetResult)
        assert result.result in ("win", "lose"), key
        assert result.article is not None and result.article.startswith("sicbo.art"), key
        assert (result.pays is not None) == (result.result == "win"), key
    # the order the sensor reads the dice in decides nothing
    for other in itertools.permutations(dice):
        assert outcome_of(SicBoTable(), *other).bets == outcome.bets
    # the published record is what the struct encodes, key for key
    assert json.loads(outcome.to_json()) == outcome.to_record()


def test_the_layout_without_odd_and_even() -> None:
    outcome = outcome_of(SicBoTable(SicBoOptions(odd_even=False)), 1, 2, 3)
    assert "odd" not in outcome.bets and "even" not in outcome.bets
    assert len(outcome.bets) == 2 + 14 + 1 + 6 + 6 + len(COMBINATIONS) + 6


def test_a_throw_nobody_can_read_is_void_and_returns_every_stake() -> None:
    table = SicBoTable()
    [no_roll] = table.feed(NoRoll(reason="die_not_flat"))
    assert isinstance(no_roll, Outcome)
    record = no_roll.to_record()
    assert (record["status"], record["article"], record["void_reason"], record["no_roll"]) == (
        "void", "sicbo.art2.1", "no_roll: die_not_flat", True)
    assert record["result"] == {"dice": None, "total": None, "triple": None}
    assert {b["result"] for b in record["bets"].values()} == {"void"}
    [void] = table.feed(Void())
    assert isinstance(void, Outcome)
    assert (void.round, void.status, void.article, void.void_reason) == (
        2, "void", "sicbo.art2.2", "throw_declared_invalid")
    assert table.next_round == 3


def test_a_void_for_another_throw_is_declined() -> None:
    table = SicBoTable()
    outcome_of(table, 1, 2, 3)
    [notice] = table.feed(Void(round=1, reason="late"))
    assert isinstance(notice, Notice) and notice.code == "for_another_round"
    assert notice.article == "sicbo.art2.2" and table.next_round == 2
    [void] = table.feed(Void(round=2))
    assert isinstance(void, Outcome) and void.status == "void"


def test_a_throw_the_daemon_could_not_apply_is_a_void_round() -> None:
    table = SicBoTable()
    lost = Fault(code="event_not_applied", detail="disk full",
                 extra={NOT_APPLIED_TYPE: "roll"})
    [void] = table.feed(lost)
    assert isinstance(void, Outcome)
    assert (void.status, void.article) == ("void", "sicbo.art2.3")
    assert void.void_reason is not None and "disk full" in void.void_reason
    assert table.feed(Fault(code="sensor_fault")) == []
    assert table.feed(Fault(code="event_not_applied",
                            extra={NOT_APPLIED_TYPE: "declare"})) == []
    assert table.next_round == 2


def test_what_is_not_a_throw_of_three_dice_decides_nothing() -> None:
    table = SicBoTable()
    [two] = table.feed(roll(3, 4))  # a craps sensor at a sic bo table
    assert isinstance(two, Notice) and two.code == "not_three_dice"
    assert two.article == "sicbo.art1"
    [seven] = table.feed(roll(1, 2, 7))
    assert isinstance(seven, Notice) and seven.code == "not_three_dice"
    assert table.feed(Declare(result="big")) == []
    [card] = table.feed(parse_event({"v": 2, "type": "card", "card": "AS"}))
    assert isinstance(card, Notice) and card.code == "not_for_game"
    assert table.next_round == 1


# -- the pay table as declared options ---------------------------------------------------------


def test_the_defaults_are_the_macau_pay_table() -> None:
    options = SicBoOptions()
    assert (options.total_4_17, options.total_5_16, options.total_6_15, options.total_7_14,
            options.total_8_13, options.total_9_12, options.total_10_11) == (
        50, 18, 14, 12, 8, 6, 6)
    assert (options.specific_triple, options.any_triple, options.specific_double,
            options.combination, options.single_two, options.single_three) == (
        150, 24, 8, 5, 2, 3)
    assert [total_ways(t) for t in range(3, 19)] == [
        1, 3, 6, 10, 15, 21, 25, 27, 27, 25, 21, 15, 10, 6, 3, 1]


@pytest.mark.parametrize(("key", "value", "words"), [
    ("total_4_17", 71, "favours the player (sicbo.art5, Art. 11): at most 70 to 1"),
    ("total_10_11", 7, "at most 6 to 1"),
    ("specific_triple", 215, "at most 214 to 1"),
    ("any_triple", 35, "at most 34 to 1"),
    ("specific_double", 13, "at most 12 to 1"),
    ("combination", 7, "at most 6 to 1"),
    ("single_three", 1, "pays less than 2 to 1 on two"),
    ("single_two", 0, "is not a whole number 1 to 1000"),
    ("any_triple", True, "is not a whole number"),
    ("odd_even", 1, "is not true or false"),
])
def test_a_pay_table_that_favours_the_player_is_refused(key: str, value: object,
                                                        words: str) -> None:
    with pytest.raises(OptionError) as caught:
        SicBoOptions(**{key: value})  # type: ignore[arg-type]
    assert caught.value.key == key and words in caught.value.reason


def test_the_largest_fair_pays_are_taken() -> None:
    SicBoOptions(total_4_17=70, total_10_11=6, specific_triple=214, any_triple=34,
                 specific_double=12, combination=6, single_two=2, single_three=12)
    with pytest.raises(OptionError, match="favour the player"):
        SicBoOptions(single_two=3, single_three=5)  # 45 + 5 > 50: the player's edge


def test_options_from_a_config_and_from_the_command_line() -> None:
    options = registry.options_of("sicbo", {"total_4_17": 60, "odd_even": False})
    assert options == SicBoOptions(total_4_17=60, odd_even=False)
    assert registry.parse_options("sicbo", {"any_triple": "30"}) == SicBoOptions(any_triple=30)
    with pytest.raises(OptionErrors) as caught:
        registry.options_of("sicbo", {"any_triple": 99, "tie": 8, "combination": "5"})
    assert [e.key for e in caught.value.errors] == ["any_triple", "tie", "combination"]


def test_tabled_finds_the_game() -> None:
    assert registry.game("sicbo") is GAME
    assert "sicbo" in registry.game_names()
    table = registry.make_table("sicbo", {"specific_double": "10"})
    assert isinstance(table, SicBoTable) and table.options.specific_double == 10
    assert registry.game_policy("sicbo").check_devices(["dice"]) == []
    assert registry.game_policy("sicbo").check_devices(["shoe"]) != []


def test_every_throw_is_known() -> None:
    assert len(THROWS) == 216 and len(set(THROWS)) == 216
