"""The games' history views (games/<game>/history.py, ``PitPart.history``), pure: a baccarat
shoe's scoreboard is the roads ``tabled roads`` computes from the same hands, whole; craps rolls
come by shooter, each turn ending at its seven-out, with only the settled bets listed; a Q Poker
round shows the dealer's cards its outcome names."""

from __future__ import annotations

from typing import Any

from tabled.contract import CONTRACT_VERSION
from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat.history import history as baccarat_history
from tabled.games.baccarat.roads import Roads, hand_from_record
from tabled.games.craps.history import bet_label
from tabled.games.craps.history import history as craps_history
from tabled.games.qpoker.history import history as qpoker_history
from tabled.games.registry import decode_outcome, part
from tests.pit.conftest import all_bets, baccarat_outcome, void_outcome


def records(payloads: list[dict[str, Any]]) -> list[OutcomeRecord]:
    return [decode_outcome(p) for p in payloads]


def test_a_shoe_history_is_its_whole_scoreboard() -> None:
    winners = ["banker", "banker", "player", "tie", "player", "player", "banker"] * 6
    payloads = [baccarat_outcome(n, n, winner=w).payload
                for n, w in enumerate(winners, start=1)]
    payloads.insert(5, void_outcome(99, 99, game="baccarat").payload)
    view = baccarat_history(records(payloads))
    expected = Roads(h for h in map(hand_from_record, payloads) if h is not None).to_dict()
    assert view["big_road"].entries == len(expected["big_road"])
    for grid in (view["bead_plate"], view["big_road"], *view["derived"]):
        cells = sorted((dict(e) for row in grid.rows for e in row if e),
                       key=lambda e: (e["col"], e["row"]))
        assert grid.first == 0  # drawn whole, however wide
        assert cells == sorted(expected[grid.name], key=lambda e: (e["col"], e["row"]))
    assert view["counts"]["hands"] == len(winners)
    assert view["ask"] == expected["ask"]
    assert [h["round"] for h in view["hands"]][:2] == [42, 41]  # newest first
    assert [h["on_roads"] for h in view["hands"] if h["round"] == 99] == [False]


def roll(n: int, dice: tuple[int, int], before: int | None, after: int | None,
         **bets: Any) -> dict[str, Any]:
    open_bets = {name: {"result": "open"} for name in ("come_4", "place_6")}
    return {"v": CONTRACT_VERSION, "type": "outcome", "game": "craps", "round": n,
            "status": "complete",
            "result": {"dice": list(dice), "total": sum(dice), "point_before": before,
                       "point_after": after},
            "bets": all_bets("craps", **open_bets, **bets)}


def test_craps_rolls_by_shooter() -> None:
    win = {"result": "win", "pays": "1:1"}
    rolls = [
        roll(1, (3, 4), None, None, pass_line=win),  # a natural: the shooter goes on
        roll(2, (2, 2), None, 4),
        roll(3, (1, 3), 4, None, pass_line=win),  # the point made
        roll(4, (5, 5), None, 10),
        roll(5, (3, 4), 10, None, dont_pass=win),  # seven out
        roll(6, (1, 1), None, None),
        roll(7, (4, 4), None, 8),
    ]
    view = craps_history(records(rolls))
    turns = view["shooters"]
    assert [(t["first"], t["last"], t["ended"], t["points"]) for t in turns] \
        == [(6, 7, False, 0), (1, 5, True, 1)]
    last = turns[1]["rolls"][0]
    assert last["round"] == 5 and last["seven_out"]
    assert [(b["label"], b["result"]) for b in last["settled"] if b["result"] == "win"] \
        == [("Don't Pass", "win")]
    assert all(b["result"] != "open" for t in turns for r in t["rolls"] for b in r["settled"])
    assert last["open"] == 2
    assert view["rolls"] == 7


def test_bet_labels() -> None:
    assert bet_label("dont_pass") == "Don't Pass"
    assert bet_label("dont_come_odds_4") == "Don't Come Odds 4"
    assert bet_label("hard8") == "Hard 8"
    assert bet_label("any_craps") == "Any Craps"


def test_a_qpoker_round_shows_the_dealer_its_outcome_names() -> None:
    seat = {"cards": ["AS", "KS", "QS"], "hand": "straight_flush", "status": "active"}
    payload = {"v": CONTRACT_VERSION, "type": "outcome", "game": "qpoker", "round": 4,
               "status": "complete",
               "result": {"dealer": {"cards": ["2H", "7C", "9D"], "hand": "high_card",
                                     "qualifies": False},
                          "seats": {"1": seat}},
               "bets": {"1": {"dobo": {"result": "win", "pays": "40:1"},
                              "play": {"result": "push"}}}}
    view = qpoker_history(records([void_outcome(3, 3).payload, payload]))
    assert [r["round"] for r in view["rounds"]] == [4, 3]
    assert view["rounds"][0]["dealer"]["cards"] == ["2H", "7C", "9D"]
    assert view["rounds"][0]["seats"][0]["dobo"] == {"result": "win", "pays": "40:1"}
    assert view["rounds"][1]["status"] == "void" and view["rounds"][1]["dealer"]["cards"] == []


def test_each_game_part_names_its_history() -> None:
    for game in ("baccarat", "craps", "qpoker"):
        assert part(game, "pit").history is not None
    assert part("baccarat", "pit").history_segment == "shoe_start"
