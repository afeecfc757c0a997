"""Reference oracle for Craps (docs/rules/craps.md, the project's craps decisions).

It owns a table-driven second reading of every wager of docs/contract.md on one throw: what each
total does to it with and without a point, as used by ``tests/daemon/test_replay_oracle.py``
to check ``tabled replay``. It must never import ``tabled.games.table``.

Every roll is a whole round; the only state is the point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tests.oracle import Record

Bet = dict[str, Any]

NUMBERS = (4, 5, 6, 8, 9, 10)
HARD_NUMBERS = (4, 6, 8, 10)
#: Art. 2.2 true odds behind Pass / Come, and Art. 3.2 lay odds behind Don't Pass / Don't Come.
TAKE_ODDS = {4: "2:1", 10: "2:1", 5: "3:2", 9: "3:2", 6: "6:5", 8: "6:5"}
LAY_ODDS = {4: "1:2", 10: "1:2", 5: "2:3", 9: "2:3", 6: "5:6", 8: "5:6"}
#: Art. 4: the Field's winning totals and pays; 5, 6, 7, 8 lose.
FIELD_PAYS = {2: "2:1", 3: "1:1", 4: "1:1", 9: "1:1", 10: "1:1", 11: "1:1", 12: "2:1"}
#: Art. 5: a hard way's pay.
HARD_PAYS = {4: "7:1", 6: "9:1", 8: "9:1", 10: "7:1"}
#: Art. 9-11 (R-C2): a Big bet's per-unit ratio and its unit.
BIG_PAYS = {4: ("9:5", 5), 10: ("9:5", 5), 5: ("7:5", 5), 9: ("7:5", 5), 6: ("7:6", 6),
            8: ("7:6", 6)}
#: One-roll bets: the totals that win and the pay (Art. 6, 7, 8).
ONE_ROLL = {
    "big7": ({7}, "9:2"),
    "eleven": ({11}, "15:1"),
    "any_craps": ({2, 3, 12}, "7:1"),
}
OPTION_GRID: tuple[dict[str, str], ...] = (
    {"big_bets_on_come_out": "true"},
    {"big_bets_on_come_out": "false"},
)

LOSE: Bet = {"result": "lose"}
OPEN: Bet = {"result": "open"}
OFF: Bet = {"result": "off"}
PUSH: Bet = {"result": "push"}


def win(pays: str, **more: Any) -> Bet:
    """A winning wager paying ``pays``."""
    return {"result": "win", "pays": pays, **more}


def bet_names() -> list[str]:
    """Every wager key of docs/contract.md, in its order."""
    names = ["pass", "dont_pass", "pass_odds", "dont_pass_odds", "come", "dont_come"]
    for n in NUMBERS:
        names += [f"come_{n}", f"come_odds_{n}", f"dont_come_{n}", f"dont_come_odds_{n}"]
    names += ["field", "big7", "eleven", "any_craps"]
    names += [f"hard{n}" for n in HARD_NUMBERS]
    names += [f"big{n}" for n in NUMBERS]
    return names


def come_out_line(total: int, right: bool) -> Bet:
    """A line wager on its own come-out roll: Pass / Come (``right``, Art. 2.1, 2.3) or
    Don't Pass / Don't Come (Art. 3.1, 3.3). A number travels there and stays open."""
    if total in (7, 11):
        return win("1:1") if right else LOSE
    if total in (2, 3):
        return LOSE if right else win("1:1")
    if total == 12:
        return LOSE if right else PUSH
    return {"result": "open", "moves_to": total}


def on_number(total: int, number: int, right: bool, pays: str) -> Bet:
    """A wager riding on ``number``: the right way wins on it and loses on 7, the wrong way
    the reverse; any other total leaves it open (Art. 2.1 with R-C0, 2.2, 3.1, 3.2, 5, 9-11)."""
    if total == number:
        return win(pays) if right else LOSE
    if total == 7:
        return LOSE if right else win(pays)
    return OPEN


def roll_bets(dice: tuple[int, int], point: int | None, big_on_come_out: bool) -> dict[str, Bet]:
    """What one throw does to every wager on the layout, given the point before it."""
    total = dice[0] + dice[1]
    come_out = point is None
    bets: dict[str, Bet] = {}
    if come_out:
        line = come_out_line(total, True)
        bets["pass"] = OPEN if "moves_to" in line else line
        wrong = come_out_line(total, False)
        bets["dont_pass"] = OPEN if "moves_to" in wrong else wrong
        bets["pass_odds"] = bets["dont_pass_odds"] = OFF
        bets["come"] = bets["dont_come"] = OFF
    else:
        assert point is not None
        bets["pass"] = on_number(total, point, True, "1:1")
        bets["dont_pass"] = on_number(total, point, False, "1:1")
        bets["pass_odds"] = on_number(total, point, True, TAKE_ODDS[point])
        bets["dont_pass_odds"] = on_number(total, point, False, LAY_ODDS[point])
        bets["come"] = come_out_line(total, True)
        bets["dont_come"] = come_out_line(total, False)
    for n in NUMBERS:
        bets[f"come_{n}"] = on_number(total, n, True, "1:1")
        if come_out:  # odds are off on a come-out: returned if their wager is decided
            bets[f"come_odds_{n}"] = PUSH if total in (n, 7) else OFF
        else:
            bets[f"come_odds_{n}"] = on_number(total, n, True, TAKE_ODDS[n])
        bets[f"dont_come_{n}"] = on_number(total, n, False, "1:1")
        bets[f"dont_come_odds_{n}"] = on_number(total, n, False, LAY_ODDS[n])
    bets["field"] = win(FIELD_PAYS[total]) if total in FIELD_PAYS else LOSE
    for name, (totals, pays) in ONE_ROLL.items():
        bets[name] = win(pays) if total in totals else LOSE
    for n in HARD_NUMBERS:
        if total == n:
            bets[f"hard{n}"] = win(HARD_PAYS[n]) if dice[0] == dice[1] else LOSE
        else:
            bets[f"hard{n}"] = LOSE if total == 7 else OPEN
    for n in NUMBERS:
        pays, unit = BIG_PAYS[n]
        if come_out and not big_on_come_out:  # Reading R-C4, the table's option
            bets[f"big{n}"] = OFF
        else:
            bet = on_number(total, n, True, pays)
            bets[f"big{n}"] = {**bet, "unit": unit} if bet["result"] == "win" else bet
    return bets


def idle_bets(point: int | None, big_on_come_out: bool) -> dict[str, Bet]:
    """Every wager on a throw that does not count (Art. 1): nothing decided, so each stays
    ``open``, or ``off`` where it would not be working on this roll."""
    come_out = point is None
    off = set()
    if come_out:
        off = {"pass_odds", "dont_pass_odds", "come", "dont_come"}
        off |= {f"come_odds_{n}" for n in NUMBERS}
        if not big_on_come_out:
            off |= {f"big{n}" for n in NUMBERS}
    return {name: OFF if name in off else OPEN for name in bet_names()}


def next_point(total: int, point: int | None) -> int | None:
    """Art. 2.1: a come-out number becomes the point; the point or a 7 ends it."""
    if point is None:
        return total if total in NUMBERS else None
    return None if total in (point, 7) else point


def replay(events: Iterable[Mapping[str, Any]], options: Mapping[str, str]) -> list[Record]:
    """The outcome records the rules give for ``events`` under ``tabled replay`` ``options``."""
    big_on_come_out = options.get("big_bets_on_come_out", "true") == "true"
    point: int | None = None
    outcomes: list[Record] = []
    for event in events:
        kind = event["type"]
        record: Record = {"game": "craps", "round": len(outcomes) + 1}
        if kind == "void" and event.get("round", record["round"]) != record["round"]:
            continue  # a void for a throw already decided (it came late): only noticed
        if kind == "roll":
            a, b = event["dice"]
            after = next_point(a + b, point)
            record.update(
                status="complete",
                result={"dice": [a, b], "total": a + b, "point_before": point,
                        "point_after": after},
                bets=roll_bets((a, b), point, big_on_come_out),
            )
            point = after
        elif kind in ("no_roll", "void"):  # Art. 1: throw again; the point stands
            record.update(
                status="complete" if kind == "no_roll" else "void",
                article="craps.art1",
                result={"dice": None, "total": None, "point_before": point,
                        "point_after": point},
                bets=idle_bets(point, big_on_come_out),
            )
            if kind == "no_roll":
                record["no_roll"] = True
        else:  # faults give no output; other games' events are only noticed
            continue
        outcomes.append(record)
    return outcomes
