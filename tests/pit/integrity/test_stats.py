"""The statistics under the integrity monitors: CUSUMs, thresholds from the budget, the shoe
tests' exact tail bounds (checked against brute force on small shoes), the sequencer."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import pytest

from tabled.pit.integrity.calibration import (
    DEFAULT_SETTINGS,
    DESIGN_DIVERGENCE,
    MONITORS,
    GameSettings,
    Settings,
    calibrate,
    statistics,
    statistics_of,
)
from tabled.pit.integrity.sequencer import Sequencer
from tabled.pit.integrity.shoe import SlugIndex
from tabled.pit.integrity.stats import (
    Cusums,
    block_bound,
    cusum_threshold,
    kl,
    rank_run_bound,
    shifted,
    suit_run_bound,
)


def test_kl_and_the_equal_evidence_shift() -> None:
    assert kl(0.5, 0.5) == 0
    assert kl(0.25, 1 / 6) == pytest.approx(0.25 * math.log(1.5) + 0.75 * math.log(0.9))
    for p0 in (0.0022, 0.0577, 0.4712, 0.6959):
        up = shifted(p0, DESIGN_DIVERGENCE, up=True)
        assert up > p0 and kl(up, p0) == pytest.approx(DESIGN_DIVERGENCE, rel=1e-6)
    down = shifted(0.4712, DESIGN_DIVERGENCE, up=False)
    assert down < 0.4712 and kl(down, 0.4712) == pytest.approx(DESIGN_DIVERGENCE, rel=1e-6)
    # too rare to fall that far: the drought test, as far down as it goes
    assert shifted(0.0022, DESIGN_DIVERGENCE, up=False) < 1e-9


def test_a_cusum_climbs_on_its_event_falls_on_the_others_and_restarts_after_an_alarm() -> None:
    # "a more often" (0.5 -> 0.9) and "b less often" (0.5 -> 0.1)
    cusums = Cusums(["a", "b"], [0.5, 0.5], [0.9, 0.1], h=3.0)
    assert cusums.observe_one(1) == []  # b occurred, a did not: both evidence against
    assert cusums.value == [0.0, 0.0]
    alarms = []
    for _ in range(10):
        alarms += cusums.observe_one(0)  # a occurs, b does not: log(1.8) = 0.588 each time
    assert [(a.index, a.observations, a.hits) for a in alarms] == [(0, 6, 6), (1, 6, 0)]
    assert cusums.value[0] == pytest.approx(4 * math.log(1.8))  # restarted from 0
    assert cusums.observe([True, False]) == []
    cusums.reset()
    assert cusums.value == [0.0, 0.0]
    with pytest.raises(ValueError):
        Cusums(["a"], [0.5], [0.5], 1.0)


def test_the_budget_is_shared_among_the_statistics_a_table_runs() -> None:
    assert statistics_of("craps", DEFAULT_SETTINGS) == 34
    assert statistics_of("baccarat", DEFAULT_SETTINGS) == 16
    assert statistics_of("qpoker", DEFAULT_SETTINGS) == 14
    assert sum(statistics(monitor, game) for monitor in MONITORS
               for game in ("craps", "baccarat", "qpoker")) == 34 + 16 + 14
    craps = calibrate("craps")
    assert craps.dice_h == pytest.approx(math.log(120 * 10_000 * 34 / 1.0))
    assert craps.dice_h == pytest.approx(cusum_threshold(1.2e6, 34, 1.0))
    looser = calibrate("craps", None, replace(DEFAULT_SETTINGS, false_alarms_per_10k_hours=10))
    assert craps.dice_h - looser.dice_h == pytest.approx(math.log(10))
    slower = calibrate("craps", None, DEFAULT_SETTINGS.with_pace(
        "craps", GameSettings(60.0, 30.0, 250.0)))
    assert craps.dice_h - slower.dice_h == pytest.approx(math.log(2))
    qpoker = calibrate("qpoker")
    hands, rounds = qpoker.frequency
    assert hands.per_round == 8 and hands.h - rounds.h == pytest.approx(math.log(8))
    only_dice = calibrate("craps", None, Settings(monitors=frozenset({"dice"})))
    assert only_dice.statistics == 12 and only_dice.frequency == ()


def test_the_frequency_statistics_use_the_exact_odds() -> None:
    baccarat = calibrate("baccarat")
    (hands,) = baccarat.frequency
    assert hands.names == ("banker", "player", "tie", "natural", "player_pair", "banker_pair")
    assert hands.p0[0] == pytest.approx(0.4711525456)
    method2 = calibrate("baccarat").options
    assert method2.decks == 8  # type: ignore[union-attr]
    craps = calibrate("craps").frequency[0]
    assert craps.p0 == pytest.approx([n / 36 for n in (1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1)])


def test_the_shoe_limits() -> None:
    limits = calibrate("baccarat").shoe(8)
    assert (limits.rank_run, limits.suit_run) == (9, 14)
    assert rank_run_bound(9, 8) <= limits.alpha < rank_run_bound(8, 8)
    assert suit_run_bound(14, 8) <= limits.alpha < suit_run_bound(13, 8)
    assert limits.riffle_h == pytest.approx(-math.log(limits.alpha))
    assert calibrate("baccarat").slug_length == 9
    indexed = 1000 * 52 * 12
    assert block_bound(9, 12, indexed) <= calibrate("baccarat").shoe(6).alpha


def _longest_runs(codes: list[int]) -> tuple[int, int]:
    """The longest run of rank steps (up or down) and of one suit."""
    up = down = suit = 1
    best_rank = best_suit = 1
    for a, b in itertools.pairwise(codes):
        step = ((b >> 2) - (a >> 2)) % 13
        up = up + 1 if step == 1 else 1
        down = down + 1 if step == 12 else 1
        suit = suit + 1 if (a & 3) == (b & 3) else 1
        best_rank, best_suit = max(best_rank, up, down), max(best_suit, suit)
    return best_rank, best_suit


def test_the_run_bounds_hold_against_shuffled_shoes() -> None:
    # at lengths common enough to count, the union bounds are above the frequency in shuffled
    # shoes, and close to it (they count twice only shoes with two runs)
    rng = random.Random(1)
    shoe = list(range(52)) * 6
    shoes = 3_000
    rank_hits = suit_hits = 0
    for _ in range(shoes):
        rng.shuffle(shoe)
        rank, suit = _longest_runs(shoe)
        rank_hits += rank >= 4
        suit_hits += suit >= 7
    for hits, bound in ((rank_hits, rank_run_bound(4, 6)), (suit_hits, suit_run_bound(7, 6))):
        seen = hits / shoes
        margin = 3 * math.sqrt(bound * (1 - bound) / shoes)
        assert seen <= bound + margin, (seen, bound)
        assert seen >= 0.6 * bound, (seen, bound)


def test_the_slug_index_is_bounded_and_says_where_a_block_came_from() -> None:
    index = SlugIndex(4, horizon_shoes=4)
    shoes = [bytes(random.Random(i).sample(range(52), 40)) for i in range(6)]
    for i, cards in enumerate(shoes):
        index.add(f"shoe {i}", cards)
    assert index.shoes <= 4
    key = next(iter(index.keys(shoes[-1][10:14])))
    assert key in index
    assert index.locate(shoes[-1][10:14]) == ("shoe 5", 10)
    assert next(iter(index.keys(shoes[0][:4]))) not in index  # forgotten past the horizon
    assert list(index.keys(bytes([1, 2, 255, 3, 4, 5, 6]))) == [
        (3 << 18) | (4 << 12) | (5 << 6) | 6]  # an unseen card breaks blocks


@pytest.mark.parametrize("length", [4, 11])  # keys of 24 bits; of 66 (more than 64)
def test_the_slug_index_finds_every_block_of_both_generations_and_nothing_else(
        length: int) -> None:
    """The older generation, frozen into a sorted array (or a set for keys past 64 bits),
    answers as the newer does: every block of the shoes remembered, no other."""
    index = SlugIndex(length, horizon_shoes=6)
    shoes = [bytes(random.Random(100 + i).choices(range(52), k=60)) for i in range(8)]
    for i, cards in enumerate(shoes):
        index.add(f"shoe {i}", cards)
    # generations of 3: shoes 0-2 dropped, 3-5 the older, 6-7 the newer
    assert index.shoes == 5
    remembered = {k for cards in shoes[3:] for k in index.keys(cards)}
    forgotten = {k for cards in shoes[:3] for k in index.keys(cards)} - remembered
    assert index.blocks == len({k for cards in shoes[3:6] for k in index.keys(cards)}) + len(
        {k for cards in shoes[6:] for k in index.keys(cards)})
    assert all(k in index for k in remembered)
    assert forgotten and not any(k in index for k in forgotten)
    assert index.locate(shoes[4][20:20 + length]) == ("shoe 4", 20)


def test_the_sequencer_puts_a_stream_back_in_order_and_gives_up_on_a_gap() -> None:
    seq: Sequencer[str] = Sequencer(max_wait=5.0, max_held=3)
    assert seq.push(10, "a", 0.0) == ["a"]  # the first number starts the stream
    assert seq.push(12, "c", 0.0) == []
    assert seq.push(11, "b", 0.1) == ["b", "c"]
    assert seq.push(11, "b", 0.2) == []  # a late copy
    assert seq.push(14, "e", 1.0) == []
    assert seq.flush(3.0) == []
    assert seq.flush(6.5) == [None, "e"]  # 13 never came
    assert seq.push(13, "d", 7.0) == []
    for n in (17, 18, 19, 20):
        out = seq.push(n, str(n), 8.0)
    assert out == [None, "17", "18", "19", "20"]  # more held than max_held: given up
    assert seq.gaps == 2 and seq.late == 2
    assert seq.push(None, "x", 9.0) == ["x"]
