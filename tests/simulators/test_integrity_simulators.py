"""The simulators' loaded dice (``tabled-sim dice --bias``) and badly shuffled shoes
(``tabled-sim shoe --preset``): the cases the integrity monitors must catch (issue 13)."""

from __future__ import annotations

import argparse
import itertools
import random
from collections import Counter

import pytest

from tabled.simulators import dice, shoe
from tabled.simulators.faults import FaultSpecError


def test_a_bias_names_faces_and_the_rest_share_what_is_left() -> None:
    assert dice.parse_bias("6:0.25") == pytest.approx((0.15,) * 5 + (0.25,))
    assert dice.parse_bias("1:0.5,2:0.5") == pytest.approx((0.5, 0.5, 0, 0, 0, 0))
    assert sum(dice.parse_bias("1:0.1,2:0.1,3:0.1,4:0.1,5:0.1,6:0.5")) == pytest.approx(1)
    for bad in ("7:0.2", "6:1.5", "6", "6:0.5,6:0.1", "1:0.6,2:0.6", "1:0.1,2:0.1,3:0.1,"
                "4:0.1,5:0.1,6:0.1", "x:y"):
        with pytest.raises(FaultSpecError):
            dice.parse_bias(bad)


def test_fair_rolls_are_what_the_simulator_always_drew_and_a_loaded_die_shows() -> None:
    rng = random.Random(4)
    before = [(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(50)]
    assert dice.random_rolls(random.Random(4), 50) == before
    rolls = dice.random_rolls(random.Random(1), 40_000, dice.parse_bias("6:0.25"))
    sixes = Counter(a for a, _ in rolls)[6] / len(rolls)
    assert 0.24 < sixes < 0.26
    assert 0.155 < Counter(b for _, b in rolls)[6] / len(rolls) < 0.178


def test_the_dice_command_line_takes_a_bias() -> None:
    parser = argparse.ArgumentParser()
    dice.add_arguments(parser)
    args = parser.parse_args(["--bias", "1:0.25", "--biased-die", "both"])
    assert args.bias == pytest.approx((0.25,) + (0.15,) * 5) and args.biased_die == "both"
    with pytest.raises(SystemExit):
        parser.parse_args(["--bias", "1:2"])


def test_presets_parse() -> None:
    assert shoe.parse_preset("replay:7:40:20") == shoe.Preset("replay", 7, 40, 20)
    assert shoe.parse_preset("sorted:30:52") == shoe.Preset("sorted", 0, 30, 52)
    assert shoe.parse_preset("riffle") == shoe.Preset("riffle")
    for bad in ("replay:7:40", "sorted:1:0", "riffle:3", "shuffle", "sorted:-1:5"):
        with pytest.raises(FaultSpecError):
            shoe.parse_preset(bad)


def test_a_replayed_block_is_the_earlier_shoes_own_at_the_same_place() -> None:
    source = shoe.shuffled_shoe(random.Random(7), 8)
    dealt = shoe.preset_shoe(random.Random(1), 8, shoe.parse_preset("replay:7:40:20"))
    assert dealt[40:60] == source[40:60]
    assert Counter(dealt) == Counter(source)  # the composition of 8 decks, untouched


def test_a_sorted_block_is_new_deck_order() -> None:
    dealt = shoe.preset_shoe(random.Random(1), 6, shoe.parse_preset("sorted:30:60"))
    assert dealt[30:82] == list(shoe.NEW_DECK_ORDER)
    assert dealt[82:90] == list(shoe.NEW_DECK_ORDER[:8])
    assert Counter(dealt) == Counter(shoe.shuffled_shoe(random.Random(2), 6))


def test_a_single_riffle_keeps_about_half_the_neighbours() -> None:
    previous = shoe.shuffled_shoe(random.Random(3), 8)
    riffled = shoe.riffle(random.Random(5), previous)
    assert Counter(riffled) == Counter(previous)
    # two rising sequences: every card of a packet stays in the packet's order
    pairs = set(itertools.pairwise(previous))
    kept = sum(pair in pairs for pair in itertools.pairwise(riffled))
    assert 0.4 < kept / (len(riffled) - 1) < 0.75


def test_the_dealer_deals_riffled_shoes_after_a_shuffled_first() -> None:
    from tabled.drivers.shoe.driver import normalize

    reader = shoe.ShoeReader()
    dealer = shoe.Dealer(reader, rng=random.Random(9), decks=6, shoes=2,
                         preset=shoe.parse_preset("riffle"))
    shoes: list[list[str]] = []
    for report in dealer.reports():
        event = normalize(report)
        if event is not None and event.type == "shoe_start":
            shoes.append([])
        elif event is not None and event.type in ("card", "burn"):
            card = getattr(event, "card", None)
            if card is not None:
                shoes[-1].append(card)
    assert len(shoes) == 2
    pairs = set(zip(shoes[0], shoes[0][1:], strict=False))
    kept = sum(pair in pairs for pair in zip(shoes[1], shoes[1][1:], strict=False))
    assert kept > len(shoes[1]) * 0.3


def test_without_a_preset_the_dealer_deals_as_before() -> None:
    plain = shoe.Dealer(shoe.ShoeReader(), rng=random.Random(2), decks=8, hands=30)
    also = shoe.Dealer(shoe.ShoeReader(), rng=random.Random(2), decks=8, hands=30, preset=None)
    assert list(plain.reports()) == list(also.reports())
    order = shoe.preset_shoe(random.Random(2), 8, None)
    assert order == shoe.shuffled_shoe(random.Random(2), 8)
