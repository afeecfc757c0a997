"""The baccarat roads (``pit.roads``, docs/pit.md "Roads"): hand-made shoes with their cells
worked out by hand, the derived-road rule at every corner, properties against a reference written
here straight from the rule text, and ``tabled roads`` as an operator runs it.

Notation in the hand-made cases: a shoe is a string of winners, ``B`` banker, ``P`` player,
``T`` tie; a big-road cell is ``(col, row, winner, ties)``, a derived-road cell ``(col, row,
colour)`` with ``"r"``/``"b"``.
"""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.outcome import Outcome
from tabled.games.baccarat.roads import (
    DERIVED_ROADS,
    ROWS,
    Hand,
    RecordError,
    Roads,
    Side,
    Winner,
    hand_from_record,
    hand_of,
    write_roads,
)
from tabled.games.baccarat.rules import BaccaratTable

ROOT = Path(__file__).resolve().parents[2]
WINNER: dict[str, Winner] = {"B": "banker", "P": "player", "T": "tie"}
SHORT = {"banker": "B", "player": "P", "tie": "T", "red": "r", "blue": "b"}


def shoe(text: str) -> list[Hand]:
    """Hands without pairs or naturals, one per letter of ``text``."""
    return [Hand(WINNER[letter]) for letter in text.replace(" ", "")]


def big(roads: Roads) -> list[tuple[int, int, str, int]]:
    return [(e.col, e.row, SHORT[e.winner], e.ties) for e in roads.big_road]


def marks(roads: Roads, name: str) -> list[tuple[int, int, str]]:
    return [(m.col, m.row, SHORT[m.color]) for m in getattr(roads, name)]


def colors(roads: Roads, name: str) -> str:
    return "".join(SHORT[m.color] for m in getattr(roads, name))


def ask(roads: Roads) -> dict[str, str]:
    """The ask road as ``{"banker": "rb-", ...}``: one letter per derived road, ``-`` no mark."""
    return {side: "".join("-" if c is None else SHORT[c] for c in p.to_dict().values())
            for side, p in (("banker", roads.ask().banker), ("player", roads.ask().player))}


def test_the_roads_load_only_the_contract_and_the_rules_core() -> None:
    """The roads (baccarat's, games/baccarat/roads.py) load the contract and the games only,
    never the daemon's service internals (runtime, journal, MQTT, service), the pit, nor replay."""
    code = ("import sys, tabled.games.baccarat.roads; print(' '.join(sorted(m for m in "
            "sys.modules if m.startswith('tabled.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)
    loaded = set(done.stdout.split())
    assert "tabled.games.baccarat.roads" in loaded
    assert {m for m in loaded
            if not m.startswith(("tabled.contract.", "tabled.games."))} <= {
        "tabled.contract", "tabled.games"}


# -- the bead plate and the counts -------------------------------------------------------------


def test_bead_plate_every_counted_hand_six_rows_a_column_top_to_bottom() -> None:
    hands = [*shoe("BPTBBPP"), Hand("tie", banker_pair=True, player_pair=True, natural=True)]
    roads = Roads(hands)
    assert [(b.col, b.row, SHORT[b.winner]) for b in roads.bead_plate] == [
        (0, 0, "B"), (0, 1, "P"), (0, 2, "T"), (0, 3, "B"), (0, 4, "B"), (0, 5, "P"),
        (1, 0, "P"), (1, 1, "T")]
    last = roads.bead_plate[-1]
    assert (last.banker_pair, last.player_pair) == (True, True)
    assert roads.counts.to_dict() == {"banker": 3, "player": 3, "tie": 2, "banker_pair": 1,
                                      "player_pair": 1, "natural": 1}


# -- the big road ------------------------------------------------------------------------------


def test_big_road_streaks_go_down_and_a_new_result_starts_the_next_column() -> None:
    assert big(Roads(shoe("BBPPPB"))) == [
        (0, 0, "B", 0), (0, 1, "B", 0), (1, 0, "P", 0), (1, 1, "P", 0), (1, 2, "P", 0),
        (2, 0, "B", 0)]


def test_leading_ties_wait_for_the_first_entry_and_later_ties_go_on_the_previous_one() -> None:
    roads = Roads(shoe("TT B TT P T"))
    assert big(roads) == [(0, 0, "B", 4), (1, 0, "P", 1)]
    assert len(roads.bead_plate) == 7 and roads.counts.tie == 5


def test_a_shoe_of_ties_only_has_no_big_road_and_no_derived_marks() -> None:
    roads = Roads(shoe("TTT"))
    assert roads.big_road == () and roads.streaks == ()
    assert [b.winner for b in roads.bead_plate] == ["tie"] * 3
    assert roads.counts.tie == 3
    assert all(getattr(roads, name) == () for name in DERIVED_ROADS)
    assert ask(roads) == {"banker": "---", "player": "---"}


def test_big_road_pairs_are_the_entrys_own_hand_and_a_ties_pairs_stay_on_the_bead_plate(
) -> None:
    roads = Roads([Hand("tie", player_pair=True), Hand("banker", banker_pair=True),
                   Hand("tie", banker_pair=True), Hand("banker"),
                   Hand("player", player_pair=True, banker_pair=True)])
    assert [(e.ties, e.banker_pair, e.player_pair) for e in roads.big_road] == [
        (2, True, False), (0, False, False), (0, True, True)]
    assert [(b.banker_pair, b.player_pair) for b in roads.bead_plate] == [
        (False, True), (True, False), (True, False), (False, False), (True, True)]


def test_a_streak_longer_than_six_turns_right_at_row_5() -> None:
    assert big(Roads(shoe("B" * 8 + "P"))) == [
        *((0, row, "B", 0) for row in range(6)), (1, 5, "B", 0), (2, 5, "B", 0),
        (1, 0, "P", 0)]


def test_a_streak_turns_earlier_over_an_earlier_tail_and_the_next_turns_over_that_one() -> None:
    """B x8 runs along row 5; P x7 meets it at row 4 and turns there; B x6 meets P's tail
    at row 3 and turns there."""
    assert big(Roads(shoe("B" * 8 + "P" * 7 + "B" * 6))) == [
        *((0, row, "B", 0) for row in range(6)), (1, 5, "B", 0), (2, 5, "B", 0),
        *((1, row, "P", 0) for row in range(5)), (2, 4, "P", 0), (3, 4, "P", 0),
        *((2, row, "B", 0) for row in range(4)), (3, 3, "B", 0), (4, 3, "B", 0)]


NESTED_TAILS = "B" * 9 + "P" * 8 + "B" * 7 + "P" * 6 + "B" * 5 + "P" * 4 + "B"


def test_nested_tails_down_to_a_tail_along_row_0_which_the_next_streak_starts_after() -> None:
    """Each streak turns one row higher than the one before, until P x4 can only go right along
    row 0 (row 1 below its first cell is B x5's tail); the next streak starts in the first free
    column of row 0, past that tail."""
    assert big(Roads(shoe(NESTED_TAILS))) == [
        *((0, r, "B", 0) for r in range(6)), (1, 5, "B", 0), (2, 5, "B", 0), (3, 5, "B", 0),
        *((1, r, "P", 0) for r in range(5)), (2, 4, "P", 0), (3, 4, "P", 0), (4, 4, "P", 0),
        *((2, r, "B", 0) for r in range(4)), (3, 3, "B", 0), (4, 3, "B", 0), (5, 3, "B", 0),
        *((3, r, "P", 0) for r in range(3)), (4, 2, "P", 0), (5, 2, "P", 0), (6, 2, "P", 0),
        (4, 0, "B", 0), (4, 1, "B", 0), (5, 1, "B", 0), (6, 1, "B", 0), (7, 1, "B", 0),
        (5, 0, "P", 0), (6, 0, "P", 0), (7, 0, "P", 0), (8, 0, "P", 0),
        (9, 0, "B", 0)]
    assert Roads(shoe(NESTED_TAILS)).streaks == (9, 8, 7, 6, 5, 4, 1)


def test_a_tail_ends_and_the_streak_after_it_goes_down_again_in_free_columns() -> None:
    """After B x7 (tail to column 1), P starts in column 1 and stops at row 4; the B after
    it starts in column 2, whose row 5 is free, and goes down to row 5."""
    assert big(Roads(shoe("B" * 7 + "PPPPP" + "BBBBBB"))) == [
        *((0, r, "B", 0) for r in range(6)), (1, 5, "B", 0),
        *((1, r, "P", 0) for r in range(5)),
        *((2, r, "B", 0) for r in range(6))]


# -- the derived roads at every corner ---------------------------------------------------------

#  lens [2, 1, 3, 2]; each entry's marks (big eye boy / small road / cockroach pig):
#  (0,0) (0,1) (1,0): none (c < k+1 at row 0; c < k at row 1)
#  (2,0): bey len1=1 vs len0=2 blue; sr c = k = 2 at row 0: none
#  (2,1): bey len1=1 = r blue; sr len0=2 != 1 red; cp c < 3 none
#  (2,2): bey len1=1 < 2 red; sr len0=2 = 2 blue
#  (3,0): bey len2=3 vs len1=1 blue; sr len2=3 vs len0=2 blue; cp c = k = 3 at row 0: none
#  (3,1): bey len2=3 > 1 red; sr len1=1 = 1 blue; cp (c = k, r >= 1) len0=2 != 1 red
CORNERS = "BBPBBBPP"


def test_derived_roads_every_corner_of_the_rule() -> None:
    roads = Roads(shoe(CORNERS))
    assert roads.streaks == (2, 1, 3, 2)
    assert colors(roads, "big_eye_boy") == "bbrbr"
    assert colors(roads, "small_road") == "rbbb"
    assert colors(roads, "cockroach_pig") == "r"
    assert marks(roads, "big_eye_boy") == [(0, 0, "b"), (0, 1, "b"), (1, 0, "r"), (2, 0, "b"),
                                           (3, 0, "r")]
    assert marks(roads, "small_road") == [(0, 0, "r"), (1, 0, "b"), (1, 1, "b"), (1, 2, "b")]
    assert marks(roads, "cockroach_pig") == [(0, 0, "r")]
    # Banker next: new column 4 (len3=2 vs len2=3 blue, vs len1=1 blue, vs len0=2 red);
    # Player next: (3,2) (len2=3 != 2 red, len1=1 != 2 red, len0=2 = 2 blue)
    assert ask(roads) == {"banker": "bbr", "player": "rrb"}


@pytest.mark.parametrize(("text", "big_eye_boy"), [
    ("BPP", "b"),  # c = k = 1, r = 1: len0 = 1 = r: blue
    ("BBPP", "r"),  # len0 = 2 > r = 1: red
    ("BPPP", "br"),  # r = 2: len0 = 1 < 2: red
    ("BPB", "r"),  # c = 2, r = 0: len1 = len0 = 1: red
    ("BBPB", "b"),  # (1,0): none (c = k at row 0); (2,0): len1 = 1 vs len0 = 2: blue
    ("BP", ""),  # (1,0): none
])
def test_big_eye_boy_small_cases(text: str, big_eye_boy: str) -> None:
    assert colors(Roads(shoe(text)), "big_eye_boy") == big_eye_boy


def test_small_road_and_cockroach_pig_start_one_and_two_columns_later() -> None:
    """Small road: first mark at (2,1) or (3,0); cockroach pig: at (3,1) or (4,0)."""
    assert colors(Roads(shoe("BPB")), "small_road") == ""
    assert colors(Roads(shoe("BPBB")), "small_road") == "b"  # (2,1): len0 = 1 = r
    assert colors(Roads(shoe("BPBP")), "small_road") == "r"  # (3,0): len2 = len0 = 1
    assert colors(Roads(shoe("BPBP")), "cockroach_pig") == ""
    assert colors(Roads(shoe("BPBPP")), "cockroach_pig") == "b"  # (3,1): len0 = 1 = r
    assert colors(Roads(shoe("BBPBPB")), "cockroach_pig") == "b"  # (4,0): len3=1, len0=2


# B, P x9, B, PP, B, PP, B: lens [1, 9, 1, 2, 1, 2, 1]. Big eye boy: (1,1) blue, (1,2..8) red
# x7, then every entry blue (columns alternating 1 and 2 long) x7: a red tail along row 5 and a
# blue streak that meets it and turns at row 4. Small road: (3,0) len2=len0 red, (3,1) len1=9
# red, (4,0) 1 vs 9 blue, (5,0) len4=len2 red, (5,1) len3=2 red, (6,0) len5=len3 red.
# Cockroach pig: (3,1) len0=1 blue, (4,0) 2 vs 1 blue, (5,0) 1 vs 9 blue, (5,1) len2=1 blue,
# (6,0) 2 vs 1 blue.
DERIVED_TAILS = "B" + "P" * 9 + "B" + "PP" + "B" + "PP" + "B"


def test_derived_roads_place_tails_exactly_as_the_big_road_does() -> None:
    roads = Roads(shoe(DERIVED_TAILS))
    assert big(roads) == [
        (0, 0, "B", 0), *((1, r, "P", 0) for r in range(6)), (2, 5, "P", 0), (3, 5, "P", 0),
        (4, 5, "P", 0), (2, 0, "B", 0), (3, 0, "P", 0), (3, 1, "P", 0), (4, 0, "B", 0),
        (5, 0, "P", 0), (5, 1, "P", 0), (6, 0, "B", 0)]
    assert marks(roads, "big_eye_boy") == [
        (0, 0, "b"), *((1, r, "r") for r in range(6)), (2, 5, "r"),
        *((2, r, "b") for r in range(5)), (3, 4, "b"), (4, 4, "b")]
    assert marks(roads, "small_road") == [(0, 0, "r"), (0, 1, "r"), (1, 0, "b"), (2, 0, "r"),
                                          (2, 1, "r"), (2, 2, "r")]
    assert marks(roads, "cockroach_pig") == [(0, r, "b") for r in range(5)]
    # Banker next: (6,1): len5=2 != 1 red, len4=1 = 1 blue, len3=2 != 1 red.
    # Player next: (7,0): len6=1 vs len5=2 blue, vs len4=1 red, vs len3=2 blue.
    assert ask(roads) == {"banker": "rbr", "player": "brb"}


# Streaks 1, 10, 1, 9, 8, 6, 7, 4. Big eye boy, column by column: (1,1) len0 = 1 blue, (1,2..9)
# red x8; (2,0) 10 vs 1 blue; (3,0) 1 vs 10 blue, (3,1) len2 = 1 blue, (3,2..8) red x7; (4,0)
# blue, (4,1..7) len3 = 9 > r red x7; (5,0) blue, red x5; (6,0) blue, (6,1..5) red, (6,6)
# len5 = 6 blue; (7,0) blue, red x3. Its streaks b1 r8 b3 r7 b1 r7 b1 r5 b1 r5 b2 r3 nest their
# tails one row higher each time until b2 turns along row 0 at (10,0) -> (11,0), under which
# r3 cannot start: it starts at column 12, and turns along row 0 at once.
STAIRCASE = [1, 10, 1, 9, 8, 6, 7, 4]


def test_a_derived_road_nests_tails_up_to_row_0_and_starts_past_them() -> None:
    roads = Roads([Hand("banker" if i % 2 == 0 else "player")
                   for i, length in enumerate(STAIRCASE) for _ in range(length)])
    assert colors(roads, "big_eye_boy") == (
        "b" + "r" * 8 + "b" + "bb" + "r" * 7 + "b" + "r" * 7 + "b" + "r" * 5 + "b" + "r" * 5
        + "b" + "b" + "r" * 3)
    assert marks(roads, "big_eye_boy") == [
        (0, 0, "b"), *((1, r, "r") for r in range(6)), (2, 5, "r"), (3, 5, "r"),
        (2, 0, "b"), (2, 1, "b"), (2, 2, "b"),
        *((3, r, "r") for r in range(5)), (4, 4, "r"), (5, 4, "r"),
        (4, 0, "b"),
        *((5, r, "r") for r in range(4)), (6, 3, "r"), (7, 3, "r"), (8, 3, "r"),
        (6, 0, "b"),
        (7, 0, "r"), (7, 1, "r"), (7, 2, "r"), (8, 2, "r"), (9, 2, "r"),
        (8, 0, "b"),
        (9, 0, "r"), (9, 1, "r"), (10, 1, "r"), (11, 1, "r"), (12, 1, "r"),
        (10, 0, "b"), (11, 0, "b"),
        (12, 0, "r"), (13, 0, "r"), (14, 0, "r")]


def test_ask_is_empty_until_a_road_could_mark_and_does_not_change_the_roads() -> None:
    assert ask(Roads()) == {"banker": "---", "player": "---"}
    assert ask(Roads(shoe("B"))) == {"banker": "---", "player": "---"}  # (0,1), (1,0): none
    # Banker next: (2,0), len1 = len0: red; Player next: (1,1), len0 = 1 = r: blue
    assert ask(Roads(shoe("BP"))) == {"banker": "r--", "player": "b--"}
    roads = Roads(shoe(CORNERS))
    before = roads.to_dict()
    roads.ask()
    roads.predict("banker")
    assert roads.to_dict() == before


def test_an_update_says_what_one_hand_changed() -> None:
    roads = Roads(shoe("T BPB"))
    update = roads.add(Hand("banker", player_pair=True))  # (2,1): bey len1 = 1 = r: blue;
    assert update.to_dict() == {                          # sr (c = k, r >= 1) len0 = 1: blue
        "bead": {"col": 0, "row": 4, "winner": "banker", "banker_pair": False,
                 "player_pair": True},
        "big_road": {"col": 2, "row": 1, "winner": "banker", "ties": 0, "banker_pair": False,
                     "player_pair": True},
        "big_eye_boy": {"col": 1, "row": 0, "color": "blue"},
        "small_road": {"col": 0, "row": 0, "color": "blue"},
        "cockroach_pig": None}
    tie = roads.add(Hand("tie"))
    assert tie.big_road == (2, 1, "banker", 1, False, True)  # the same cell, one tie more
    assert (tie.big_eye_boy, tie.small_road, tie.cockroach_pig) == (None, None, None)
    assert Roads().add(Hand("tie")).big_road is None  # it waits for the first entry


# -- properties, against a reference written from the rule text --------------------------------

WINNERS = ("banker", "player", "tie")
runs = st.lists(
    st.tuples(st.sampled_from(WINNERS),
              st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()),
                       min_size=1, max_size=10)),
    max_size=30,
)


def flatten(streaks: list[tuple[str, list[tuple[bool, bool, bool]]]]) -> list[Hand]:
    return [Hand(winner, *flags) for winner, hands in streaks for flags in hands]  # type: ignore[arg-type]


# Streak lengths sorted longest first nest their dragon tails row above row, down to row 0
# (which random shoes almost never do); the derived roads of such shoes are as tangled.
staircases = st.lists(st.integers(1, 12), max_size=16).map(
    lambda lengths: [Hand("banker" if i % 2 else "player")
                     for i, length in enumerate(sorted(lengths, reverse=True))
                     for _ in range(length)])
hand_lists = st.one_of(runs.map(flatten), staircases)


def reference_place(keys: Sequence[str]) -> list[tuple[int, int]]:
    """The placement rule, word for word, over a dict of taken cells."""
    taken: set[tuple[int, int]] = set()
    cells: list[tuple[int, int]] = []
    start = col = row = -1
    turned = False
    for index, key in enumerate(keys):
        if index == 0 or key != keys[index - 1]:
            col, row, turned = start + 1, 0, False
            while (col, 0) in taken:
                col += 1
            start = col
        elif not turned and row + 1 < 6 and (col, row + 1) not in taken:
            row += 1
        else:
            col, turned = col + 1, True
        assert (col, row) not in taken
        taken.add((col, row))
        cells.append((col, row))
    return cells


def reference(hands: Sequence[Hand], *, with_ask: bool = True) -> dict[str, Any]:
    """The whole JSON object of ``hands``, recomputed from scratch."""
    entries: list[list[Any]] = []  # [winner, ties, banker_pair, player_pair]
    waiting = 0
    for hand in hands:
        if hand.winner == "tie":
            if entries:
                entries[-1][1] += 1
            else:
                waiting += 1
        else:
            entries.append([hand.winner, waiting, hand.banker_pair, hand.player_pair])
            waiting = 0
    logical: list[tuple[int, int]] = []
    lengths: list[int] = []
    for index, entry in enumerate(entries):
        if index == 0 or entry[0] != entries[index - 1][0]:
            lengths.append(0)
        logical.append((len(lengths) - 1, lengths[-1]))
        lengths[-1] += 1

    def color(c: int, r: int, k: int) -> str | None:
        if not ((c == k and r >= 1) or c >= k + 1):
            return None
        if r == 0:
            return "red" if lengths[c - 1] == lengths[c - 1 - k] else "blue"
        return "blue" if lengths[c - k] == r else "red"

    out: dict[str, Any] = {
        "counts": {
            "banker": sum(h.winner == "banker" for h in hands),
            "player": sum(h.winner == "player" for h in hands),
            "tie": sum(h.winner == "tie" for h in hands),
            "banker_pair": sum(h.banker_pair for h in hands),
            "player_pair": sum(h.player_pair for h in hands),
            "natural": sum(h.natural for h in hands),
        },
        "bead_plate": [{"col": i // 6, "row": i % 6, "winner": h.winner,
                        "banker_pair": h.banker_pair, "player_pair": h.player_pair}
                       for i, h in enumerate(hands)],
        "big_road": [{"col": c, "row": r, "winner": e[0], "ties": e[1], "banker_pair": e[2],
                      "player_pair": e[3]}
                     for (c, r), e in zip(reference_place([e[0] for e in entries]), entries,
                                          strict=True)],
    }
    for k, name in enumerate(DERIVED_ROADS, 1):
        found = [c for c in (color(c, r, k) for c, r in logical) if c is not None]
        out[name] = [{"col": c, "row": r, "color": found[i]}
                     for i, (c, r) in enumerate(reference_place(found))]
    if with_ask:
        out["ask"] = {}
        sides: tuple[Side, Side] = ("banker", "player")
        for side in sides:
            after = reference([*hands, Hand(side)], with_ask=False)
            out["ask"][side] = {
                name: after[name][-1]["color"] if len(after[name]) > len(out[name]) else None
                for name in DERIVED_ROADS}
    return out


@settings(max_examples=400, deadline=None)
@given(hand_lists)
def test_roads_equal_the_reference(hands: list[Hand]) -> None:
    assert Roads(hands).to_dict() == reference(hands)


@settings(max_examples=300, deadline=None)
@given(hand_lists)
def test_placement_invariants_on_every_road(hands: list[Hand]) -> None:
    """On each road: cells unique and six rows deep; the first entry at (0,0); a streak starts
    in row 0 of the first column after the previous streak's first one whose row 0 is free;
    inside a streak each step goes one down, or one right for good, and goes right only when
    the cell below is the bottom or taken."""
    roads = Roads(hands)
    for road in ("big_road", *DERIVED_ROADS):
        cells = [(e.col, e.row) for e in getattr(roads, road)]
        keys = [getattr(e, "winner", None) or getattr(e, "color", None)
                for e in getattr(roads, road)]
        assert len(set(cells)) == len(cells)
        assert all(0 <= row < ROWS and col >= 0 for col, row in cells)
        assert not cells or cells[0] == (0, 0)
        start = 0
        turned = False
        for index in range(1, len(cells)):
            (col0, row0), (col, row) = cells[index - 1], cells[index]
            earlier = set(cells[:index])
            if keys[index] != keys[index - 1]:
                assert row == 0 and col > start
                assert all((c, 0) in earlier for c in range(start + 1, col))
                start, turned = col, False
            elif (col, row) == (col0, row0 + 1):
                assert not turned
            else:
                assert (col, row) == (col0 + 1, row0)
                assert turned or row0 == ROWS - 1 or (col0, row0 + 1) in earlier
                turned = True


@settings(max_examples=300, deadline=None)
@given(hand_lists)
def test_counts_and_the_number_of_marks(hands: list[Hand]) -> None:
    """Bead plate: one bead per counted hand. Derived road k: one mark per big-road entry from
    the second entry of logical column k on (none when there are k columns or fewer)."""
    roads = Roads(hands)
    assert len(roads.bead_plate) == len(hands) == sum(roads.counts.to_dict()[w] for w in WINNERS)
    entries = len(roads.big_road)
    assert entries == roads.counts.banker + roads.counts.player == sum(roads.streaks)
    assert sum(e.ties for e in roads.big_road) == (roads.counts.tie if entries else 0)
    for k, name in enumerate(DERIVED_ROADS, 1):
        expected = entries - sum(roads.streaks[:k]) - 1 if len(roads.streaks) > k else 0
        assert len(getattr(roads, name)) == expected


@settings(max_examples=300, deadline=None)
@given(hand_lists)
def test_incremental_equals_batch_and_each_update_is_what_changed(hands: list[Hand]) -> None:
    roads = Roads()
    for count, hand in enumerate(hands, 1):
        before = {name: getattr(roads, name) for name in ("big_road", *DERIVED_ROADS)}
        asked = roads.ask()
        update = roads.add(hand)
        assert update.bead == roads.bead_plate[-1]
        assert len(roads.bead_plate) == count
        if hand.winner == "tie":
            assert update.big_road == (roads.big_road[-1] if roads.big_road else None)
            assert roads.big_road[:-1] == before["big_road"][:-1]
            if update.big_road is not None:
                assert update.big_road.ties == before["big_road"][-1].ties + 1
        else:
            assert roads.big_road[:-1] == before["big_road"]
            assert update.big_road == roads.big_road[-1]
        for name in DERIVED_ROADS:
            now = getattr(roads, name)
            assert now[:len(before[name])] == before[name]
            assert getattr(update, name) == (now[-1] if len(now) > len(before[name]) else None)
            if hand.winner != "tie":  # the ask road said what this hand would mark
                predicted = getattr(getattr(asked, hand.winner), name)
                assert predicted == (getattr(update, name).color if getattr(update, name)
                                     else None)
    batch = Roads()
    batch.extend(hands)
    whole = roads.to_dict()
    assert whole == batch.to_dict() == Roads(hands).to_dict()
    # the shoe's object is made of the cells' own objects
    assert whole["counts"] == roads.counts.to_dict()
    assert whole["ask"] == roads.ask().to_dict()
    for name in ("bead_plate", "big_road", *DERIVED_ROADS):
        assert whole[name] == [cell.to_dict() for cell in getattr(roads, name)]


def test_properties_can_fail() -> None:
    """The reference is not the implementation: a road with a wrong cell fails against it."""
    hands = shoe(NESTED_TAILS)
    wrong = Roads(hands).to_dict()
    wrong["big_road"][-1]["col"] = 8
    assert wrong != reference(hands)


# -- hands from outcomes -------------------------------------------------------------------------


def feed(*codes: str) -> list[Outcome]:
    """The outcomes of a fresh table fed these cards."""
    from tabled.contract.events import CardDealt

    table = BaccaratTable()
    out = [o for code in codes for o in table.feed(CardDealt(card=code))]
    return [o for o in out if isinstance(o, Outcome)]


def test_hand_of_a_complete_outcome_and_of_its_record() -> None:
    # Player 4S 4H (8, a pair, natural) against Banker KD 9C (9, natural): Banker wins.
    (outcome,) = feed("4S", "KD", "4H", "9C")
    expected = Hand("banker", banker_pair=False, player_pair=True, natural=True)
    assert hand_of(outcome) == expected
    record = {"seq": 7, **outcome.to_record()}  # envelope fields are ignored
    assert hand_from_record(record) == expected
    # Player 2S KH 5S (7), Banker 3H KD KS (3): no natural, no pair.
    (outcome,) = feed("2S", "3H", "KH", "KD", "5S", "KS")
    assert hand_of(outcome) == Hand("player")
    assert hand_from_record(outcome.to_record()) == Hand("player")


def test_void_and_demonstration_hands_are_on_no_road() -> None:
    from tabled.contract.events import CardDealt, Demo, Void

    table = BaccaratTable()
    out = [*table.feed(Demo()), *(o for c in ("9S", "KD", "KH", "KC") for o in
                                  table.feed(CardDealt(card=c))),
           *table.feed(CardDealt(card="2S")), *table.feed(Void())]
    demo, void = out
    assert isinstance(demo, Outcome) and isinstance(void, Outcome)
    assert demo.status == "complete" and demo.extra["demo"] is True
    assert void.status == "void"
    for outcome in (demo, void):
        assert hand_of(outcome) is None
        assert hand_from_record(outcome.to_record()) is None


@pytest.mark.parametrize("record", [
    {"type": "outcome", "game": "craps", "status": "complete"},
    {"type": "event", "game": "baccarat"},
    {"type": "outcome", "game": "baccarat", "status": "open"},
    {"type": "outcome", "game": "baccarat", "status": "complete"},
    {"type": "outcome", "game": "baccarat", "status": "complete",
     "result": {"winner": "dragon", "player_cards": [], "banker_cards": [], "natural": False}},
    {"type": "outcome", "game": "baccarat", "status": "complete",
     "result": {"winner": "tie", "player_cards": ["9S", "XX"], "banker_cards": ["9H", "KD"],
                "natural": True}},
    {"type": "outcome", "game": "baccarat", "status": "complete",
     "result": {"winner": "tie", "player_cards": ["9S", "KC"], "banker_cards": ["9H", "KD"],
                "natural": "yes"}},
])
def test_a_record_that_is_not_a_baccarat_outcome_is_refused(record: dict[str, Any]) -> None:
    with pytest.raises(RecordError):
        hand_from_record(record)


def test_a_hand_needs_a_known_winner() -> None:
    with pytest.raises(ValueError, match="dragon"):
        Hand("dragon")  # type: ignore[arg-type]


# -- tabled roads ------------------------------------------------------------------------------


class Dealer:
    """Cards for natural hands of a chosen result, suits rotated so that no code comes out more
    often than an 8-deck shoe holds it in the streams below."""

    def __init__(self) -> None:
        self._suits = itertools.cycle("SHCD")

    def _cards(self, *ranks: str) -> list[str]:
        cards = [rank + next(self._suits) for rank in ranks]
        next(self._suits)  # four cards a hand would give each position the same suit
        return cards

    def hand(self, winner: str, banker_pair: bool = False, player_pair: bool = False
             ) -> list[str]:
        """P1 B1 P2 B2 of a natural: the winner has 9 (8 with a pair), the loser 0 (tie: both
        9, or both 8 with pairs)."""
        def two(wins: bool, pair: bool) -> tuple[str, str]:
            if wins:
                return ("4", "4") if pair else ("9", "T")
            return ("K", "K") if pair else ("J", "Q")
        if winner == "tie":
            player = banker = ("4", "4") if banker_pair or player_pair else ("9", "T")
            assert banker_pair == player_pair, "a tie of pairs has both"
        else:
            player = two(winner == "player", player_pair)
            banker = two(winner == "banker", banker_pair)
        return self._cards(player[0], banker[0], player[1], banker[1])


def card_events(codes: Sequence[str]) -> list[dict[str, Any]]:
    return [{"v": 1, "type": "card", "card": code} for code in codes]


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, **fields}


def lines_of(events: Sequence[dict[str, Any]]) -> list[str]:
    return [json.dumps(e) + "\n" for e in events]


def run_roads(events: Sequence[dict[str, Any] | str]) -> tuple[int, list[Any], str]:
    lines = [e if isinstance(e, str) else json.dumps(e) + "\n" for e in events]
    out, err = io.StringIO(), io.StringIO()
    status = write_roads(None, lines, out, err)
    return status, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def natural_stream(text: str, dealer: Dealer | None = None) -> list[dict[str, Any]]:
    dealer = dealer or Dealer()
    return [e for letter in text for e in card_events(dealer.hand(WINNER[letter]))]


EMPTY: dict[str, Any] = {
    "counts": {"banker": 0, "player": 0, "tie": 0, "banker_pair": 0, "player_pair": 0,
               "natural": 0},
    "bead_plate": [], "big_road": [], "big_eye_boy": [], "small_road": [], "cockroach_pig": [],
    "ask": {"banker": {"big_eye_boy": None, "small_road": None, "cockroach_pig": None},
            "player": {"big_eye_boy": None, "small_road": None, "cockroach_pig": None}},
}


def test_the_first_shoe_begins_at_the_streams_start_without_a_shoe_start() -> None:
    status, shoes, err = run_roads([*natural_stream("BP"), event("shoe_start", decks=8),
                                    *natural_stream("T")])
    assert (status, err) == (0, "")
    assert [[b["winner"] for b in s["bead_plate"]] for s in shoes] == [["banker", "player"],
                                                                       ["tie"]]


def test_no_shoe_before_the_first_shoe_start_when_no_hand_came_before_it() -> None:
    status, shoes, _ = run_roads([event("burn", card="5S"), event("demo"),
                                  event("shoe_start", decks=8), *natural_stream("B")])
    assert status == 0 and len(shoes) == 1
    assert run_roads([]) == (0, [], "")  # no stream, no shoe
    assert run_roads([event("shoe_start", decks=8)]) == (0, [EMPTY], "")


def test_an_empty_shoe_between_two_shoe_starts_is_printed_empty() -> None:
    status, shoes, _ = run_roads([event("shoe_start", decks=8), *natural_stream("P"),
                                  event("shoe_start", decks=8), event("shoe_start", decks=8),
                                  *natural_stream("B")])
    assert status == 0
    assert [s["counts"]["player"] + s["counts"]["banker"] for s in shoes] == [1, 0, 1]
    assert shoes[1] == EMPTY


def test_a_hand_cut_short_by_shoe_start_is_void_and_on_no_road() -> None:
    status, shoes, _ = run_roads([*natural_stream("B"), *card_events(["9S", "KD"]),
                                  event("shoe_start", decks=8), *natural_stream("P")])
    assert status == 0
    assert [len(s["bead_plate"]) for s in shoes] == [1, 1]


def test_malformed_line_exit_2_after_the_shoes_that_ended_before_it() -> None:
    """The shoe the bad line cuts short is not written, even its completed hands."""
    events = [event("shoe_start", decks=8), *natural_stream("BB"), event("shoe_start", decks=8),
              *natural_stream("P"), event("roll", dice=[1, 2]), event("card", card="1S"),
              *natural_stream("P")]
    status, shoes, err = run_roads(events)
    assert status == 2
    assert [s["counts"]["banker"] for s in shoes] == [2]
    bad = len(events) - 4  # 1-based number of the "1S" line
    assert err.splitlines() == [
        f"line {bad - 1}: notice not_for_game: a roll event is not part of baccarat",
        f"line {bad}: card '1S' is not a card code (rank A23456789TJQK + suit SHCD)"]


def test_roads_across_a_long_stream_agree_with_replay(tmp_path: Path) -> None:
    """Every counted hand of ``tabled replay``'s outcomes is on a bead plate, in order, and the
    shoes are the stream's ``shoe_start``s (irregular events, demos and voids included)."""
    import random

    from tabled.daemon.replay import replay
    from tests.oracle.streams import baccarat_stream

    events = baccarat_stream(random.Random(11), 3000, 2, "one_more")
    lines = lines_of(events)
    out, err = io.StringIO(), io.StringIO()
    assert replay("baccarat", {"method": "2", "last_hand": "one_more"}, lines, out, err) == 0
    counted = [hand_from_record(json.loads(line)) for line in out.getvalue().splitlines()]
    out2, err2 = io.StringIO(), io.StringIO()
    assert write_roads({"method": "2", "last_hand": "one_more"}, lines, out2, err2) == 0
    assert err2.getvalue() == err.getvalue()  # the same notices, on the same lines
    shoes = [json.loads(line) for line in out2.getvalue().splitlines()]
    assert len(shoes) == sum(e["type"] == "shoe_start" for e in events) > 10
    assert [(b["winner"], b["banker_pair"], b["player_pair"])
            for s in shoes for b in s["bead_plate"]] == [
        (h.winner, h.banker_pair, h.player_pair) for h in counted if h is not None]
    assert sum(s["counts"]["natural"] for s in shoes) == sum(
        h.natural for h in counted if h is not None)
    for s in shoes:
        hands = [Hand(b["winner"], b["banker_pair"], b["player_pair"]) for b in s["bead_plate"]]
        expected = reference(hands)
        s["counts"]["natural"] = expected["counts"]["natural"]  # not on the bead plate
        assert s == expected


def tabled_roads(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real command line, as an operator runs it."""
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", "roads", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


def cli_stream() -> list[dict[str, Any]]:
    """Shoe 1: a demonstration hand, ties before the first result, DERIVED_TAILS with pairs on
    its first entry, on a tie and on its third Player, then a void hand. Shoe 2 is empty.
    Shoe 3: one Player win without a natural."""
    d = Dealer()
    return [
        event("shoe_start", decks=8), event("burn", card="7H"),
        event("demo"), *card_events(d.hand("player")),
        *card_events(d.hand("tie")), *card_events(d.hand("tie", True, True)),
        event("round_start"), *card_events(d.hand("banker", banker_pair=True)),
        *card_events(d.hand("tie")),
        *card_events(d.hand("player")), *card_events(d.hand("player")),
        *card_events(d.hand("player", player_pair=True)),
        *(e for _ in range(6) for e in card_events(d.hand("player"))),
        *natural_stream("BPPBPPB", d),
        *card_events(["2S", "3H"]), event("void", reason="misdeal"),
        event("shoe_start", decks=8),
        event("shoe_start", decks=8),
        *card_events(["2S", "3H", "KH", "KD", "5S", "KS"]),
    ]


def test_tabled_roads_prints_each_shoe_exactly(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(lines_of(cli_stream())))
    done = tabled_roads(str(path))
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    shoes = [json.loads(line) for line in lines]
    for line, obj in zip(lines, shoes, strict=True):
        assert line == json.dumps(obj, separators=(",", ":"))  # compact, one object a line
        assert list(obj) == ["counts", "bead_plate", "big_road", "big_eye_boy", "small_road",
                             "cockroach_pig", "ask"]
    first, empty, last = shoes
    assert first["counts"] == {"banker": 4, "player": 13, "tie": 3, "banker_pair": 2,
                               "player_pair": 2, "natural": 20}
    beads = [(b["col"], b["row"], SHORT[b["winner"]], b["banker_pair"], b["player_pair"])
             for b in first["bead_plate"]]
    assert beads[:8] == [(0, 0, "T", False, False), (0, 1, "T", True, True),
                         (0, 2, "B", True, False), (0, 3, "T", False, False),
                         (0, 4, "P", False, False), (0, 5, "P", False, False),
                         (1, 0, "P", False, True), (1, 1, "P", False, False)]
    assert [(c, r) for c, r, *_ in beads] == [(i // 6, i % 6) for i in range(20)]
    assert "".join(w for _, _, w, *_ in beads) == "TTBT" + "P" * 9 + "BPPBPPB"
    assert first["big_road"][:4] == [
        {"col": 0, "row": 0, "winner": "banker", "ties": 3, "banker_pair": True,
         "player_pair": False},
        {"col": 1, "row": 0, "winner": "player", "ties": 0, "banker_pair": False,
         "player_pair": False},
        {"col": 1, "row": 1, "winner": "player", "ties": 0, "banker_pair": False,
         "player_pair": False},
        {"col": 1, "row": 2, "winner": "player", "ties": 0, "banker_pair": False,
         "player_pair": True}]
    assert [(e["col"], e["row"], SHORT[e["winner"]], e["ties"]) for e in first["big_road"]] == [
        (0, 0, "B", 3), *((1, r, "P", 0) for r in range(6)), (2, 5, "P", 0), (3, 5, "P", 0),
        (4, 5, "P", 0), (2, 0, "B", 0), (3, 0, "P", 0), (3, 1, "P", 0), (4, 0, "B", 0),
        (5, 0, "P", 0), (5, 1, "P", 0), (6, 0, "B", 0)]
    assert [(m["col"], m["row"], SHORT[m["color"]]) for m in first["big_eye_boy"]] == [
        (0, 0, "b"), *((1, r, "r") for r in range(6)), (2, 5, "r"),
        *((2, r, "b") for r in range(5)), (3, 4, "b"), (4, 4, "b")]
    assert first["small_road"] == [{"col": c, "row": r, "color": color} for c, r, color in (
        (0, 0, "red"), (0, 1, "red"), (1, 0, "blue"), (2, 0, "red"), (2, 1, "red"),
        (2, 2, "red"))]
    assert first["cockroach_pig"] == [{"col": 0, "row": r, "color": "blue"} for r in range(5)]
    assert first["ask"] == {
        "banker": {"big_eye_boy": "red", "small_road": "blue", "cockroach_pig": "red"},
        "player": {"big_eye_boy": "blue", "small_road": "red", "cockroach_pig": "blue"}}
    assert empty == EMPTY
    assert last == {**EMPTY,
                    "counts": {**EMPTY["counts"], "player": 1},
                    "bead_plate": [{"col": 0, "row": 0, "winner": "player",
                                    "banker_pair": False, "player_pair": False}],
                    "big_road": [{"col": 0, "row": 0, "winner": "player", "ties": 0,
                                  "banker_pair": False, "player_pair": False}]}
    # standard input gives the same
    assert tabled_roads("-", stdin=path.read_text()).stdout == done.stdout


def test_tabled_roads_refuses_what_replay_refuses() -> None:
    bad_option = tabled_roads("--option", "method=3")
    assert bad_option.returncode == 2 and bad_option.stdout == ""
    assert bad_option.stderr == "tabled roads: option method: 3 is not 1 or 2 (Art. 9)\n"
    missing = tabled_roads("/nonexistent/stream.jsonl")
    assert missing.returncode == 2
    assert missing.stderr.startswith("tabled roads: cannot read /nonexistent/stream.jsonl")
    text = "".join(lines_of([event("shoe_start", decks=8), *natural_stream("B"),
                             event("shoe_start", decks=8), *natural_stream("P")]))
    broken = tabled_roads(stdin=text + "{not json\n")
    assert broken.returncode == 2
    assert [json.loads(line)["counts"]["banker"] for line in broken.stdout.splitlines()] == [1]
    assert broken.stderr.startswith("line 11: not JSON")
