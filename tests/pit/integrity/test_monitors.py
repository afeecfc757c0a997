"""The integrity monitors (issue 13): fair streams from the simulators stay quiet; each biased
case is caught (a die with a face at 1/4, a replayed 20-card block, a single riffle, a sorted
block, a biased Banker rate); the card-count anomaly; the dealer's declaration against the
outcome; the pace. Seeded and bounded: the full calibration is ``make integrity-calibration``."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import pytest

from tabled.contract.events import (
    Burn,
    CardDealt,
    Declare,
    Event,
    Fault,
    ShoeStart,
)
from tabled.contract.outcome import Game, OutcomeRecord
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.record import BACCARAT_BETS
from tabled.games.craps.record import CRAPS_BETS
from tabled.games.registry import decode_outcome
from tabled.pit.integrity import Finding, Settings, TableMonitors, slug_index
from tabled.pit.integrity.calibration import DEFAULT_SETTINGS
from tabled.simulators.shoe import NEW_DECK_ORDER, Preset, shuffled_shoe
from tests.oracle.integrity import (
    baccarat_events,
    banker_delay,
    banker_pools,
    craps_events,
    play,
    qpoker_events,
    replay_delay,
    riffle_delay,
    sorted_delay,
)


def run(game: Game, events: Iterable[Event], monitors: TableMonitors | None = None,
        ) -> list[Finding]:
    monitors = monitors or TableMonitors(game, slugs=slug_index())
    found: list[Finding] = []

    def seen(_: int, finding: Finding) -> bool:
        found.append(finding)
        return False

    play(game, events, [monitors], seen)
    return found


# -- fair streams stay quiet ----------------------------------------------------------------------


def test_fair_dice_stay_quiet() -> None:
    assert run("craps", craps_events(random.Random(1), 40_000)) == []


def test_fair_shoes_stay_quiet() -> None:
    # about 190 shoes: every shoe test and the floor's index of blocks get exercised
    assert run("baccarat", baccarat_events(random.Random(2), 15_000)) == []


def test_fair_qpoker_stays_quiet() -> None:
    assert run("qpoker", qpoker_events(random.Random(3), 4_000)) == []


# -- each biased case is caught -------------------------------------------------------------------


def test_a_die_with_a_face_at_a_quarter_is_caught() -> None:
    found = run("craps", craps_events(random.Random(4), 4_000, "6:0.25"))
    dice = [f for f in found if f.monitor == "dice"]
    assert dice and {f.subject for f in dice} == {"die 1 face 6"}
    first = dice[0]
    assert first.severity == "critical" and first.round is not None and first.round < 2_000
    detail = first.detail
    assert detail["die"] == 1 and detail["face"] == 6 and detail["p1"] == 0.25
    assert detail["count"] > detail["expected"] and detail["cusum"] >= detail["threshold"]
    assert "die 1 shows 6 too often" in first.message
    assert "1 false alarm per 10,000 table-hours" in first.message


def test_a_replayed_block_of_another_tables_shoe_is_caught_within_its_first_cards() -> None:
    delays = [replay_delay(seed) for seed in range(6)]
    assert all(d is not None and d <= 4 for d in delays), delays


def test_the_slug_finding_names_the_block_and_where_it_came_from() -> None:
    index = slug_index()
    source = TableMonitors("baccarat", table="lab/bac-1", slugs=index)
    assert run("baccarat", itertools.chain(baccarat_events(random.Random(77), None, shoes=1),
                                           [ShoeStart(decks=8)]), source) == []
    slugged = TableMonitors("baccarat", table="lab/bac-2", slugs=index)
    found = run("baccarat", baccarat_events(random.Random(5), None, shoes=1,
                                            preset=Preset("replay", 77, 100, 20)), slugged)
    (slug,) = [f for f in found if f.monitor == "slug"]
    block = shuffled_shoe(random.Random(77), 8)[100:120]
    assert slug.detail["cards"] == block[:slug.detail["length"]]
    assert slug.detail["source"] == {"shoe": "lab/bac-1 shoe of round 1", "position": 100}
    assert "an earlier shoe of the floor (lab/bac-1 shoe of round 1, cards 101-109)" in \
        slug.message
    assert slug.severity == "critical"


def test_a_single_riffle_instead_of_a_shuffle_is_caught_within_the_shoe() -> None:
    delays = [riffle_delay(seed) for seed in range(6)]
    assert all(d is not None and d <= 15 for d in delays), delays


def test_a_sorted_block_is_caught_as_a_run_of_ranks() -> None:
    delays = [sorted_delay(seed) for seed in range(4)]
    assert all(d is not None and d <= 3 for d in delays), delays
    found = run("baccarat", baccarat_events(random.Random(8), None, shoes=1,
                                            preset=Preset("sorted", 0, 50, 52)))
    runs = [f for f in found if f.monitor == "shoe_runs"]
    assert runs[0].detail["kind"] == "rank" and runs[0].detail["length"] == 9
    assert runs[0].detail["cards"] == list(NEW_DECK_ORDER[:9])


def test_a_biased_banker_rate_is_caught() -> None:
    pools = banker_pools(9, 3_000)
    delays = [banker_delay(seed, pools) for seed in range(3)]
    assert all(d is not None and d < 15_000 for d in delays), delays


def test_the_frequency_finding_states_the_rate_against_the_exact_odds() -> None:
    monitors = TableMonitors("baccarat")
    record: dict[str, Any] = {"status": "complete", "result": {
        "winner": "banker", "natural": False, "player_cards": ["2S", "3H"],
        "banker_cards": ["4D", "5C"]}}
    found: list[Finding] = []
    for number in range(1, 400):
        found += monitors.outcome(typed({**record, "round": number}))
    banker = next(f for f in found if f.subject == "banker up")
    assert banker.monitor == "frequency" and banker.severity == "major"
    assert banker.detail["p0"] == pytest.approx(0.47115, abs=1e-5)
    assert "Banker wins more often than the exact odds" in banker.message
    assert "expected at 47.12 % (tabled odds)" in banker.message
    assert {f.subject for f in found} >= {"banker up", "player down"}


# -- the card count -------------------------------------------------------------------------------


def test_a_ninth_copy_in_eight_decks_and_cards_beyond_the_shoe_are_found() -> None:
    monitors = TableMonitors("baccarat", BaccaratOptions(decks=8))
    assert monitors.event(ShoeStart(decks=8)) == []
    found: list[Finding] = []
    for _ in range(9):
        found += monitors.event(CardDealt(card="KH"))
    (count,) = [f for f in found if f.monitor == "shoe_count"]
    assert count.detail["card"] == "KH" and count.detail["copies"] == 9
    assert "KH came out 9 times from a shoe of 8 decks" in count.message
    monitors = TableMonitors("baccarat", settings=replace(
        DEFAULT_SETTINGS, monitors=frozenset({"shoe_count"})))
    monitors.event(ShoeStart(decks=6))
    cards = shuffled_shoe(random.Random(1), 6)
    found = []
    for card in cards:
        found += monitors.event(CardDealt(card=card))
    assert found == []
    found += monitors.event(Burn())  # unseen, but it left the shoe: card 313 of 312
    found += monitors.event(Fault(code="unreadable_card"))
    (overflow,) = found
    assert overflow.detail["cards_out"] == 313 and overflow.detail["capacity"] == 312


def test_an_unseen_card_breaks_a_run() -> None:
    settings = replace(DEFAULT_SETTINGS, monitors=frozenset({"shoe_runs"}))
    monitors = TableMonitors("baccarat", settings=settings)
    monitors.event(ShoeStart(decks=8))
    found: list[Finding] = []
    for i, card in enumerate(NEW_DECK_ORDER[:12]):
        if i == 6:
            found += monitors.event(Burn())
        found += monitors.event(CardDealt(card=card))
    assert found == []  # runs of 6 and 6, not 12
    for card in NEW_DECK_ORDER[12:22]:
        found += monitors.event(CardDealt(card=card))
    # reported once per run, at the limit (8 here: with only this monitor on, its two
    # statistics share the whole budget)
    limit = monitors.calibration.shoe(8).rank_run
    assert limit == 8 and [f.detail["length"] for f in found] == [limit]


# -- the dealer's procedure -----------------------------------------------------------------------


#: What a test leaves out of a record's ``result``, as a table writes it.
_RESULT: dict[str, dict[str, Any]] = {
    "baccarat": {"player_cards": [], "banker_cards": [], "player_total": 0, "banker_total": 0,
                 "winner": None, "natural": False},
    "craps": {"dice": None, "total": None, "point_before": None, "point_after": None},
    "qpoker": {"dealer": {"cards": [], "hand": None, "qualifies": None}, "seats": {}},
}


def typed(fields: dict[str, Any]) -> OutcomeRecord:
    """The typed record (as the pit reads it) of a record with the fields a test names: the
    rest as a table writes them (its bets all lost)."""
    game = fields.get("game", "baccarat")
    names = {"baccarat": BACCARAT_BETS, "craps": CRAPS_BETS}.get(game, ())
    return decode_outcome({"v": 2, "type": "outcome", "game": game,
                           "bets": {name: {"result": "lose"} for name in names}, **fields,
                           "result": {**_RESULT[game], **fields.get("result", {})}})


def _hand(number: int, winner: str) -> OutcomeRecord:
    return typed({"round": number, "status": "complete", "game": "baccarat",
            "result": {"winner": winner, "player_total": 7, "banker_total": 6,
                       "natural": False, "player_cards": ["7S", "KH"],
                       "banker_cards": ["6D", "QC"]}})


def test_a_declaration_that_differs_from_the_outcome_is_a_result_mismatch() -> None:
    monitors = TableMonitors("baccarat")
    assert monitors.event(Declare(result="banker")) != []  # nothing decided yet
    monitors.outcome(_hand(1, "player"))
    assert monitors.event(Declare(result="player")) == []  # the round decided last: right
    (wrong,) = monitors.event(Declare(result="banker"))
    assert (wrong.monitor, wrong.round, wrong.severity) == ("result_mismatch", 1, "major")
    assert wrong.message == ("round 1: the dealer declared banker, the rules decided player "
                             "(Player 7, Banker 6)")
    assert wrong.detail["declared"] == "banker" and wrong.detail["decided"] == "player"
    # naming a round not decided yet: compared when it is
    assert monitors.event(Declare(result="tie", round=2)) == []
    (late,) = monitors.outcome(_hand(2, "banker"))
    assert late.round == 2 and late.detail["declared"] == "tie"
    assert monitors.event(Declare(result="player", round=1)) == []  # an earlier round: right
    (other,) = monitors.event(Declare(result="seven_out"))
    assert "not a result of baccarat" in other.message


def test_craps_calls_and_qpoker_qualifying_are_compared() -> None:
    craps = TableMonitors("craps")

    def roll(number: int, dice: tuple[int, int], point: int | None) -> OutcomeRecord:
        return typed({"round": number, "status": "complete", "game": "craps",
                      "result": {"dice": list(dice), "total": sum(dice),
                                 "point_before": point}})

    assert craps.outcome(roll(1, (3, 3), None)) == []
    assert craps.event(Declare(result="point")) == []
    craps.outcome(roll(2, (3, 4), 6))
    assert craps.event(Declare(result="seven_out")) == []
    (wrong,) = craps.event(Declare(result="point_made"))
    assert "declared point made, the rules decided seven out (3-4 (7), point 6)" in wrong.message
    qpoker = TableMonitors("qpoker")
    qpoker.outcome(typed({"round": 5, "status": "complete", "game": "qpoker", "result": {
        "dealer": {"cards": ["JS", "4H", "2C"], "hand": "high_card", "qualifies": False},
        "seats": {}}}))
    assert qpoker.event(Declare(result="dealer_does_not_qualify", round=5)) == []
    assert qpoker.event(Declare(result="dealer_qualifies", round=5))[0].round == 5


def test_pace_out_of_bounds_is_raised_then_cleared() -> None:
    settings = replace(DEFAULT_SETTINGS, pace_window=600.0, idle_gap=120.0)
    monitors = TableMonitors("baccarat", settings=settings)  # bounds 20-200 rounds an hour
    found: list[Finding] = []
    t = 0.0
    for number in range(1, 80):  # a round every 10 s: 360 an hour
        t += 10.0
        found += monitors.outcome(_hand(number, "banker"), at=t)
    (fast,) = [f for f in found if f.monitor == "pace"]
    assert fast.subject == "fast" and not fast.cleared and fast.severity == "minor"
    assert fast.detail["rounds_per_hour"] == 360.0
    found = []
    for number in range(80, 200):  # then one a minute: 60 an hour, within bounds
        t += 60.0
        found += monitors.outcome(_hand(number, "banker"), at=t)
    (back,) = [f for f in found if f.monitor == "pace"]
    assert back.cleared and back.subject == "fast"
    found = []
    for number in range(200, 260):  # one every 100 s: 36 an hour ... still within 20-200
        t += 100.0
        found += monitors.outcome(_hand(number, "banker"), at=t)
    assert [f for f in found if f.monitor == "pace"] == []
    slow = TableMonitors("baccarat", settings=settings.with_pace("baccarat", replace(
        settings.game("baccarat"), pace_min=50.0)))
    found = []
    for number in range(1, 40):
        t += 100.0
        found += slow.outcome(_hand(number, "banker"), at=t)
    assert [f.subject for f in found if f.monitor == "pace"] == ["slow"]
    # a pause longer than the idle gap: the table stopped, it is not slow; the count restarts
    t += 1_000.0
    (over,) = slow.outcome(_hand(41, "banker"), at=t)
    assert over.cleared and over.subject == "slow"
    assert TableMonitors("craps").outcome(_hand(1, "banker")) == []  # no time: no pace


def test_switched_off_monitors_do_not_run() -> None:
    settings = Settings(monitors=frozenset({"pace"}))
    found = run("craps", craps_events(random.Random(4), 3_000, "6:0.5"),
                TableMonitors("craps", settings=settings))
    assert found == []
