"""Craps, article by article and Reading by Reading (docs/rules/craps.md, docs/contract.md "craps").

Each test names the article or Reading it proves and asserts the records the table publishes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from tabled.contract.events import CardDealt, Event, Fault, NoRoll, Reveal, Roll, Void
from tabled.contract.outcome import BetResult, Notice, Outcome
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import CrapsTable
from tabled.games.money import settle
from tabled.games.registry import make_table

NUMBERS = (4, 5, 6, 8, 9, 10)
# A throw for each total (the easy way where there is one).
EASY = {2: (1, 1), 3: (1, 2), 4: (1, 3), 5: (1, 4), 6: (1, 5), 7: (2, 5), 8: (2, 6),
        9: (3, 6), 10: (4, 6), 11: (5, 6), 12: (6, 6)}

Throw = tuple[int, int] | str


def _event(throw: Throw) -> Event:
    if throw == "no_roll":
        return NoRoll()
    if throw == "void":
        return Void()
    assert isinstance(throw, tuple)
    return Roll(dice=throw)


DEFAULT = CrapsOptions()


def records(*throws: Throw, options: CrapsOptions = DEFAULT) -> list[dict[str, Any]]:
    """The records a fresh table publishes for ``throws``."""
    table = CrapsTable(options)
    out = []
    for throw in throws:
        [outcome] = table.feed(_event(throw))
        assert isinstance(outcome, Outcome)
        out.append(outcome.to_record())
    return out


def last(*throws: Throw, options: CrapsOptions = DEFAULT) -> dict[str, Any]:
    """The record of the last of ``throws`` on a fresh table."""
    return records(*throws, options=options)[-1]


def point_on(point: int) -> tuple[int, int]:
    """The come-out throw that sets ``point``."""
    return EASY[point]


def win(pays: str, article: str, **more: Any) -> dict[str, Any]:
    return {"result": "win", "pays": pays, "article": article, **more}


def res(result: str, article: str, **more: Any) -> dict[str, Any]:
    return {"result": result, "article": article, **more}


def bet_results(record: dict[str, Any], *keys: str) -> dict[str, dict[str, Any]]:
    return {key: record["bets"][key] for key in keys}


# -- Art. 1 ---------------------------------------------------------------------------------------

COME_OUT_OFF = {
    "pass_odds": res("off", "craps.art2.2"),
    "dont_pass_odds": res("off", "craps.art3.2"),
    "come": res("off", "craps.art2.3"),
    "dont_come": res("off", "craps.art3.3"),
    **{f"come_odds_{n}": res("off", "craps.art2.2") for n in NUMBERS},
}
ALL_KEYS = [
    "pass", "dont_pass", "pass_odds", "dont_pass_odds", "come", "dont_come",
    *(f"{kind}_{n}" for kind in ("come", "come_odds", "dont_come", "dont_come_odds")
      for n in NUMBERS),
    "field", "big7", "eleven", "any_craps", "hard4", "hard6", "hard8", "hard10",
    *(f"big{n}" for n in NUMBERS),
]


def test_art1_no_roll_on_the_come_out_decides_nothing_and_keeps_what_is_off() -> None:
    """Art. 1: a die off the table is no roll; throw again. Exact record."""
    held = res("open", "craps.art1")
    assert last("no_roll") == {
        "v": 2, "type": "outcome", "game": "craps", "round": 1, "status": "complete",
        "article": "craps.art1", "no_roll": True,
        "result": {"dice": None, "total": None, "point_before": None, "point_after": None},
        "bets": {key: COME_OUT_OFF.get(key, held) for key in ALL_KEYS},
    }


def test_art1_no_roll_with_a_point_on_keeps_the_point_and_every_wager_open() -> None:
    """Art. 1: nothing is off once a point is on, and a no-roll decides nothing."""
    _, second, third = records(point_on(9), "no_roll", EASY[9])
    assert second["round"] == 2 and second["no_roll"] is True
    assert second["result"] == {"dice": None, "total": None, "point_before": 9, "point_after": 9}
    assert second["bets"] == {key: res("open", "craps.art1") for key in ALL_KEYS}
    assert third["result"]["point_before"] == 9 and third["bets"]["pass"]["result"] == "win"


def test_art1_a_throw_the_dealer_declares_invalid_is_a_void_round_that_decides_nothing() -> None:
    """Art. 1: the dealer voids the throw: a void outcome, same bets as a no-roll."""
    table = CrapsTable()
    table.feed(Roll(dice=(2, 2)))
    [outcome] = table.feed(Void(reason="dice_hit_dealer"))
    assert isinstance(outcome, Outcome)
    rec = outcome.to_record()
    assert {k: rec[k] for k in ("round", "status", "void_reason", "article")} == {
        "round": 2, "status": "void", "void_reason": "dice_hit_dealer", "article": "craps.art1"}
    assert "no_roll" not in rec
    assert rec["result"] == {"dice": None, "total": None, "point_before": 4, "point_after": 4}
    assert rec["bets"] == {key: res("open", "craps.art1") for key in ALL_KEYS}
    assert table.point == 4


def test_art1_void_without_a_reason_gets_a_stable_one() -> None:
    rec = last("void")
    assert (rec["status"], rec["void_reason"], rec["article"]) == (
        "void", "throw_declared_invalid", "craps.art1")
    assert rec["bets"] == {key: COME_OUT_OFF.get(key, res("open", "craps.art1"))
                           for key in ALL_KEYS}


def test_a_fault_publishes_nothing_and_uses_no_round_number() -> None:
    table = CrapsTable()
    assert table.feed(Fault(code="sensor_fault", extra={"family": "dice"})) == []
    assert table.next_round == 1 and table.round_open is False


@pytest.mark.parametrize("event", [CardDealt(card="AS"), Reveal()])
def test_events_of_other_games_are_declined_with_a_notice(event: Event) -> None:
    table = CrapsTable()
    [notice] = table.feed(event)
    assert isinstance(notice, Notice) and notice.code == "not_for_game"
    assert table.next_round == 1


def test_a_roll_is_a_whole_round_numbered_from_one() -> None:
    table = make_table("craps")
    assert isinstance(table, CrapsTable) and table.game == "craps"
    rounds = []
    for event in (Roll(dice=(1, 3)), NoRoll(), Void(), Roll(dice=(2, 5))):
        [outcome] = table.feed(event)
        assert isinstance(outcome, Outcome) and table.round_open is False
        rounds.append(outcome.round)
    assert rounds == [1, 2, 3, 4] and table.next_round == 5


def test_dice_outside_one_to_six_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="faces 1-6"):
        CrapsTable().feed(Roll(dice=(0, 7)))


# -- a whole record, exactly --------------------------------------------------------------------

LAY = {4: "1:2", 10: "1:2", 5: "2:3", 9: "2:3", 6: "5:6", 8: "5:6"}
TRUE = {4: "2:1", 10: "2:1", 5: "3:2", 9: "3:2", 6: "6:5", 8: "6:5"}
BIG_ARTICLE = {6: "craps.art9", 8: "craps.art9", 5: "craps.art10", 9: "craps.art10",
               4: "craps.art11", 10: "craps.art11"}


def test_art2_to_art11_a_seven_out_decides_every_wager_on_the_layout() -> None:
    """Art. 2.1, 2.2, 2.3, 3.1-3.3, 4-11 and R-C1 on a seven-out, the whole record exactly."""
    assert last(point_on(4), (2, 5)) == {
        "v": 2, "type": "outcome", "game": "craps", "round": 2, "status": "complete",
        "result": {"dice": [2, 5], "total": 7, "point_before": 4, "point_after": None,
                   "hard": False},
        "bets": {
            "pass": res("lose", "craps.art2.1"),
            "dont_pass": win("1:1", "craps.art3.1"),
            "pass_odds": res("lose", "craps.art2.2"),
            "dont_pass_odds": win("1:2", "craps.art3.2"),
            "come": win("1:1", "craps.art2.3"),
            "dont_come": res("lose", "craps.art3.3"),
            **{f"come_{n}": res("lose", "craps.art2.3") for n in NUMBERS},
            **{f"come_odds_{n}": res("lose", "craps.art2.2") for n in NUMBERS},
            **{f"dont_come_{n}": win("1:1", "craps.art3.3") for n in NUMBERS},
            **{f"dont_come_odds_{n}": win(LAY[n], "craps.art3.2") for n in NUMBERS},
            "field": res("lose", "craps.art4"),
            "big7": win("9:2", "craps.art6"),
            "eleven": res("lose", "craps.art7"),
            "any_craps": res("lose", "craps.art8"),
            **{f"hard{n}": res("lose", "craps.art5") for n in (4, 6, 8, 10)},
            **{f"big{n}": res("lose", BIG_ARTICLE[n]) for n in NUMBERS},
        },
    }


def test_art12_a_come_out_hard_six_decides_the_number_wagers_too() -> None:
    """Art. 12 / R-C4: a come-out (3, 3) — whole record; the Art. 4-11 wagers are working."""
    assert last((3, 3)) == {
        "v": 2, "type": "outcome", "game": "craps", "round": 1, "status": "complete",
        "result": {"dice": [3, 3], "total": 6, "point_before": None, "point_after": 6,
                   "hard": True},
        "bets": {
            "pass": res("open", "craps.art2.1"),
            "dont_pass": res("open", "craps.art3.1"),
            **COME_OUT_OFF,
            "come_odds_6": res("push", "craps.art2.2"),
            **{f"come_{n}": res("open", "craps.art2.3") for n in NUMBERS},
            "come_6": win("1:1", "craps.art2.3"),
            **{f"dont_come_{n}": res("open", "craps.art3.3") for n in NUMBERS},
            "dont_come_6": res("lose", "craps.art3.3"),
            **{f"dont_come_odds_{n}": res("open", "craps.art3.2") for n in NUMBERS},
            "dont_come_odds_6": res("lose", "craps.art3.2"),
            "field": res("lose", "craps.art4"),
            "big7": res("lose", "craps.art6"),
            "eleven": res("lose", "craps.art7"),
            "any_craps": res("lose", "craps.art8"),
            "hard4": res("open", "craps.art5"),
            "hard6": win("9:1", "craps.art5"),
            "hard8": res("open", "craps.art5"),
            "hard10": res("open", "craps.art5"),
            **{f"big{n}": res("open", BIG_ARTICLE[n]) for n in NUMBERS},
            "big6": win("7:6", "craps.art9", unit=6),
        },
    }


# -- Art. 2: with the dice ------------------------------------------------------------------------

@pytest.mark.parametrize(("throw", "expected", "point_after"), [
    ((3, 4), win("1:1", "craps.art2.1"), None),
    ((5, 6), win("1:1", "craps.art2.1"), None),
    ((1, 1), res("lose", "craps.art2.1"), None),
    ((1, 2), res("lose", "craps.art2.1"), None),
    ((6, 6), res("lose", "craps.art2.1"), None),
    *(((EASY[n]), res("open", "craps.art2.1"), n) for n in NUMBERS),
])
def test_art2_1_pass_line_on_the_come_out(
    throw: tuple[int, int], expected: dict[str, Any], point_after: int | None
) -> None:
    """Art. 2.1: 7 or 11 wins 1:1, 2, 3 or 12 loses, a number becomes the point."""
    rec = last(throw)
    assert rec["bets"]["pass"] == expected
    assert (rec["result"]["point_before"], rec["result"]["point_after"]) == (None, point_after)


def test_art2_1_pass_line_with_the_point_on() -> None:
    """Art. 2.1: the point before a 7 wins; a 7 first loses; either takes the point off."""
    made = last(point_on(5), (2, 3))
    assert made["bets"]["pass"] == win("1:1", "craps.art2.1")
    assert made["result"]["point_after"] is None
    out = last(point_on(5), (1, 6))
    assert out["bets"]["pass"] == res("lose", "craps.art2.1")
    assert out["result"]["point_after"] is None


@pytest.mark.parametrize("point", NUMBERS)
def test_reading_rc0_pass_wins_only_on_its_own_point(point: int) -> None:
    """R-C0: "4, 5, 6, 8, 9 or 10 thrown again" means the point, not any of the six."""
    for other in NUMBERS:
        if other == point:
            continue
        rec = last(point_on(point), EASY[other])
        assert rec["bets"]["pass"] == res("open", "craps.art2.1")
        assert rec["result"]["point_after"] == point
    # 2, 3, 11 and 12 decide nothing once the point is on either.
    for total in (2, 3, 11, 12):
        assert last(point_on(point), EASY[total])["bets"]["pass"]["result"] == "open"


@pytest.mark.parametrize("point", NUMBERS)
def test_art2_2_pass_odds_pay_true_odds_and_are_off_on_the_come_out(point: int) -> None:
    """Art. 2.2: 2:1 on 4/10, 3:2 on 5/9, 6:5 on 6/8, only while the point is on."""
    assert last(point_on(point))["bets"]["pass_odds"] == res("off", "craps.art2.2")
    assert last(point_on(point), EASY[point])["bets"]["pass_odds"] == win(
        TRUE[point], "craps.art2.2")
    assert last(point_on(point), (3, 4))["bets"]["pass_odds"] == res("lose", "craps.art2.2")
    assert last(point_on(point), (5, 6))["bets"]["pass_odds"] == res("open", "craps.art2.2")


def test_art2_3_come_is_resolved_like_pass_on_its_own_come_out() -> None:
    """Art. 2.3: off on a come-out roll; after a point, 7/11 win, craps lose, a number travels."""
    assert last((5, 6))["bets"]["come"] == res("off", "craps.art2.3")
    assert last(point_on(4), (5, 6))["bets"]["come"] == win("1:1", "craps.art2.3")
    assert last(point_on(4), (3, 4))["bets"]["come"] == win("1:1", "craps.art2.3")
    assert last(point_on(4), (1, 2))["bets"]["come"] == res("lose", "craps.art2.3")
    assert last(point_on(4), (6, 6))["bets"]["come"] == res("lose", "craps.art2.3")
    for n in NUMBERS:
        assert last(point_on(4), EASY[n])["bets"]["come"] == res(
            "open", "craps.art2.3", moves_to=n)


def test_art2_3_a_come_number_works_on_every_roll_and_its_odds_follow_common_practice() -> None:
    """Art. 2.3 + CONTRACT: come_N decided on any roll; its odds off on a come-out, so a come
    number decided then has its odds returned (push)."""
    # A point roll: the 8 is made, odds pay 6:5; a 7 takes both.
    assert bet_results(last(point_on(4), EASY[8]), "come_8", "come_odds_8", "come_odds_5") == {
        "come_8": win("1:1", "craps.art2.3"), "come_odds_8": win("6:5", "craps.art2.2"),
        "come_odds_5": res("open", "craps.art2.2")}
    assert bet_results(last(point_on(4), (3, 4)), "come_8", "come_odds_8") == {
        "come_8": res("lose", "craps.art2.3"), "come_odds_8": res("lose", "craps.art2.2")}
    # A come-out roll: an 8 wins the come 8 and hands its odds back, a 7 loses it likewise.
    assert bet_results(last(EASY[8]), "come_8", "come_odds_8", "come_odds_5") == {
        "come_8": win("1:1", "craps.art2.3"), "come_odds_8": res("push", "craps.art2.2"),
        "come_odds_5": res("off", "craps.art2.2")}
    assert bet_results(last((3, 4)), "come_8", "come_odds_8") == {
        "come_8": res("lose", "craps.art2.3"), "come_odds_8": res("push", "craps.art2.2")}


# -- Art. 3: against the dice ---------------------------------------------------------------------

@pytest.mark.parametrize(("throw", "expected"), [
    ((1, 1), win("1:1", "craps.art3.1")),
    ((1, 2), win("1:1", "craps.art3.1")),
    ((6, 6), res("push", "craps.art3.1")),
    ((3, 4), res("lose", "craps.art3.1")),
    ((5, 6), res("lose", "craps.art3.1")),
    *((EASY[n], res("open", "craps.art3.1")) for n in NUMBERS),
])
def test_art3_1_dont_pass_on_the_come_out(throw: tuple[int, int], expected: dict[str, Any]) -> None:
    """Art. 3.1: 2 or 3 wins, 12 is a push, 7 or 11 loses, a number is the point against."""
    assert last(throw)["bets"]["dont_pass"] == expected


def test_art3_1_dont_pass_with_the_point_on() -> None:
    """Art. 3.1: a 7 first wins, the point first loses."""
    assert last(point_on(10), (1, 6))["bets"]["dont_pass"] == win("1:1", "craps.art3.1")
    assert last(point_on(10), (5, 5))["bets"]["dont_pass"] == res("lose", "craps.art3.1")
    assert last(point_on(10), (4, 5))["bets"]["dont_pass"] == res("open", "craps.art3.1")


@pytest.mark.parametrize("point", NUMBERS)
def test_art3_2_lay_odds_pay_the_inverse_of_true_odds(point: int) -> None:
    """Art. 3.2: 1:2 on 4/10, 2:3 on 5/9, 5:6 on 6/8, only while the point is on."""
    assert last(point_on(point))["bets"]["dont_pass_odds"] == res("off", "craps.art3.2")
    assert last(point_on(point), (3, 4))["bets"]["dont_pass_odds"] == win(
        LAY[point], "craps.art3.2")
    assert last(point_on(point), EASY[point])["bets"]["dont_pass_odds"] == res(
        "lose", "craps.art3.2")
    assert last(point_on(point), (1, 1))["bets"]["dont_pass_odds"] == res("open", "craps.art3.2")


def test_art3_3_dont_come_is_resolved_like_dont_pass_and_its_number_works_every_roll() -> None:
    """Art. 3.3: off on a come-out; 2/3 win, 12 push, 7/11 lose, a number travels; dont_come_N
    and its lay odds are decided on every roll, come-out included."""
    assert last((1, 2))["bets"]["dont_come"] == res("off", "craps.art3.3")
    assert last(point_on(6), (1, 2))["bets"]["dont_come"] == win("1:1", "craps.art3.3")
    assert last(point_on(6), (6, 6))["bets"]["dont_come"] == res("push", "craps.art3.3")
    assert last(point_on(6), (5, 6))["bets"]["dont_come"] == res("lose", "craps.art3.3")
    assert last(point_on(6), EASY[9])["bets"]["dont_come"] == res(
        "open", "craps.art3.3", moves_to=9)
    come_out_seven = last((3, 4))
    assert bet_results(come_out_seven, "dont_come_9", "dont_come_odds_9") == {
        "dont_come_9": win("1:1", "craps.art3.3"), "dont_come_odds_9": win("2:3", "craps.art3.2")}
    assert bet_results(last(EASY[9]), "dont_come_9", "dont_come_odds_9", "dont_come_4") == {
        "dont_come_9": res("lose", "craps.art3.3"),
        "dont_come_odds_9": res("lose", "craps.art3.2"),
        "dont_come_4": res("open", "craps.art3.3")}


# -- Art. 4-8: one-roll wagers and the hard ways --------------------------------------------------

@pytest.mark.parametrize(("total", "expected"), [
    (2, win("2:1", "craps.art4")), (12, win("2:1", "craps.art4")),
    *((t, win("1:1", "craps.art4")) for t in (3, 4, 9, 10, 11)),
    *((t, res("lose", "craps.art4")) for t in (5, 6, 7, 8)),
])
def test_art4_field(total: int, expected: dict[str, Any]) -> None:
    """Art. 4: 3, 4, 9, 10, 11 win 1:1; 2 and 12 win 2:1; 5, 6, 7, 8 lose — on any roll."""
    assert last(EASY[total])["bets"]["field"] == expected
    assert last(point_on(5), EASY[total])["bets"]["field"] == expected


@pytest.mark.parametrize(("number", "pair", "easy", "pays"), [
    (4, (2, 2), (1, 3), "7:1"), (6, (3, 3), (2, 4), "9:1"),
    (8, (4, 4), (3, 5), "9:1"), (10, (5, 5), (4, 6), "7:1"),
])
def test_art5_hard_ways(
    number: int, pair: tuple[int, int], easy: tuple[int, int], pays: str
) -> None:
    """Art. 5: the pair wins (9:1 on 6/8, 7:1 on 4/10); a 7 or the easy way loses; else open."""
    key = f"hard{number}"
    assert last(pair)["bets"][key] == win(pays, "craps.art5")
    assert last(point_on(9), pair)["result"]["hard"] is True
    assert last(easy)["bets"][key] == res("lose", "craps.art5")
    assert last(point_on(9), (1, 6))["bets"][key] == res("lose", "craps.art5")
    assert last(point_on(9), (1, 2))["bets"][key] == res("open", "craps.art5")


def test_art6_big_seven_is_a_one_roll_wager() -> None:
    """Art. 6: any 7 pays 9:2; anything else loses."""
    assert last((1, 6))["bets"]["big7"] == win("9:2", "craps.art6")
    assert last(point_on(8), (4, 3))["bets"]["big7"] == win("9:2", "craps.art6")
    assert last((4, 4))["bets"]["big7"] == res("lose", "craps.art6")


def test_art7_eleven_is_a_one_roll_wager() -> None:
    """Art. 7: 11 pays 15:1; anything else loses."""
    assert last((6, 5))["bets"]["eleven"] == win("15:1", "craps.art7")
    assert last((6, 6))["bets"]["eleven"] == res("lose", "craps.art7")


@pytest.mark.parametrize("throw", [(1, 1), (2, 1), (6, 6)])
def test_art8_any_craps_wins_on_2_3_12(throw: tuple[int, int]) -> None:
    """Art. 8: 2, 3 or 12 pays 7:1; anything else loses."""
    assert last(throw)["bets"]["any_craps"] == win("7:1", "craps.art8")
    assert last(point_on(6), (5, 6))["bets"]["any_craps"] == res("lose", "craps.art8")


# -- Art. 9-11 and Readings R-C1..R-C3: the Big numbers ------------------------------------------

@pytest.mark.parametrize(("number", "pays", "unit", "article"), [
    (6, "7:6", 6, "craps.art9"), (8, "7:6", 6, "craps.art9"),
    (5, "7:5", 5, "craps.art10"), (9, "7:5", 5, "craps.art10"),
    (4, "9:5", 5, "craps.art11"), (10, "9:5", 5, "craps.art11"),
])
def test_art9_to_art11_big_number_before_seven(
    number: int, pays: str, unit: int, article: str
) -> None:
    """Art. 9 (Big 6/8: 7 per 6), Art. 10 (Big 5/9: 7 per 5), Art. 11 (Big 4/10: 9 per 5)."""
    key = f"big{number}"
    assert last(EASY[number])["bets"][key] == win(pays, article, unit=unit)
    assert last(point_on(number if number != 4 else 10), EASY[number])["bets"][key] == win(
        pays, article, unit=unit)
    assert last((1, 1))["bets"][key] == res("open", article)


def test_reading_rc1_a_seven_loses_a_big_bet_and_big6_big8_are_separate() -> None:
    """R-C1: a 7 loses the wager; any other total is no decision; Big 6 and Big 8 are two
    wagers."""
    assert {k: v["result"] for k, v in last((3, 4))["bets"].items() if k.startswith("big")} == {
        "big7": "win", **{f"big{n}": "lose" for n in NUMBERS}}
    six = last((1, 5))["bets"]
    assert (six["big6"]["result"], six["big8"]["result"]) == ("win", "open")
    assert last((5, 6))["bets"]["big6"] == res("open", "craps.art9")


def _big_win(number: int) -> BetResult:
    [outcome] = CrapsTable().feed(Roll(dice=EASY[number]))
    assert isinstance(outcome, Outcome)
    bet = outcome.bets[f"big{number}"]
    assert isinstance(bet, BetResult)
    return bet


def test_reading_rc2_whole_units_per_unit_and_the_remainder_even_money() -> None:
    """R-C2: winnings = (stake // unit) x unit_win + stake % unit, through money.settle."""
    big6 = _big_win(6)
    assert settle(big6, 1_200).net == 1_400  # two units of 6: 7 each
    assert settle(big6, 800).net == 900  # one unit (7) and 2 at 1:1
    assert settle(big6, 500).net == 500  # below one unit: 1:1 (Art. 9)
    assert settle(_big_win(9), 1_000).net == 1_400  # two units of 5: 7 each (Art. 10)


def test_reading_rc3_big4_below_one_unit_of_5_not_below_6() -> None:
    """R-C3: Art. 11's "below 6" is read as below one unit (5): a 5 wager wins 9, not 5."""
    big4 = _big_win(4)
    assert big4.unit == 5 and big4.pays == Fraction(9, 5)
    assert settle(big4, 500).net == 900
    assert settle(big4, 550).net == 950  # 1 unit (9) + 0.50 at 1:1
    assert settle(big4, 499).net == 499


def test_reading_rc4_big_bets_work_on_the_come_out_unless_the_table_says_otherwise() -> None:
    """R-C4: working on every roll by default; with big_bets_on_come_out=False they are off on
    a come-out roll — and that option changes nothing else."""
    off = CrapsOptions(big_bets_on_come_out=False)
    assert last((1, 5))["bets"]["big6"] == win("7:6", "craps.art9", unit=6)
    assert last((1, 5), options=off)["bets"]["big6"] == res("off", "craps.art12")
    assert last("no_roll", options=off)["bets"]["big6"] == res("off", "craps.art12")
    # On a point roll the option changes nothing: Big 6 works.
    assert last(point_on(4), (1, 5), options=off)["bets"]["big6"] == win(
        "7:6", "craps.art9", unit=6)
    for dice in EASY.values():
        default, configured = last(dice)["bets"], last(dice, options=off)["bets"]
        differs = {k for k in default if default[k] != configured[k]}
        assert differs == {f"big{n}" for n in NUMBERS}
        assert all(configured[k] == res("off", "craps.art12") for k in differs)


def test_art12_the_wagers_of_art4_to_art11_are_decided_on_a_come_out_roll() -> None:
    """Art. 12: Field, hard ways, Big 7, Eleven, Any Craps and Big numbers work on any roll."""
    assert bet_results(last((1, 1)), "field", "any_craps", "big7", "eleven", "hard4") == {
        "field": win("2:1", "craps.art4"), "any_craps": win("7:1", "craps.art8"),
        "big7": res("lose", "craps.art6"), "eleven": res("lose", "craps.art7"),
        "hard4": res("open", "craps.art5")}
    assert bet_results(last((5, 5)), "hard10", "big10", "field") == {
        "hard10": win("7:1", "craps.art5"), "big10": win("9:5", "craps.art11", unit=5),
        "field": win("1:1", "craps.art4")}


# -- a throw the daemon could not apply -----------------------------------------------------------


def test_a_roll_not_applied_is_void_and_the_point_is_unknown_until_a_seven() -> None:
    """A roll the daemon could not apply may have set or ended the point: the throw is void,
    and every roll after it is void (Art. 2.1 needs the point) until a 7, which leaves no point
    whatever the point was."""
    table = CrapsTable()
    table.feed(Roll(dice=point_on(6)))
    lost = Fault(code="event_not_applied", detail="KeyError in the runtime",
                 extra={"event_type": "roll"})
    (void,) = table.feed(lost)
    assert isinstance(void, Outcome)
    assert (void.round, void.status, void.article) == (2, "void", "craps.art1")
    statuses = []
    for dice in [(1, 3), (3, 3), (2, 5), (1, 3)]:
        (outcome,) = table.feed(Roll(dice=dice))
        assert isinstance(outcome, Outcome)
        statuses.append((outcome.status, outcome.article, outcome.extra.get("point_unknown")))
    assert statuses == [("void", "craps.art2.1", True)] * 3 + [("complete", None, None)]
    assert table.point == 4  # the roll after the 7 was a come-out roll


@pytest.mark.parametrize("lost", ["no_roll", "void"])
def test_a_no_roll_or_void_not_applied_is_a_void_throw_and_keeps_the_point(lost: str) -> None:
    table = CrapsTable()
    table.feed(Roll(dice=point_on(5)))
    (void,) = table.feed(Fault(code="event_not_applied", extra={"event_type": lost}))
    assert isinstance(void, Outcome) and void.status == "void"
    assert table.point == 5


def test_other_events_not_applied_change_nothing() -> None:
    table = CrapsTable()
    assert table.feed(Fault(code="event_not_applied", extra={"event_type": "fault"})) == []
    assert table.next_round == 1
