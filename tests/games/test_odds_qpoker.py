"""Exact Q Poker odds (tabled.games.qpoker.odds): hand classes, Dobo, and Play under the best
fold strategy, against brute force over the rules core's own ``rank_hand`` and ``play_result``.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest

from tabled.games.money import settle
from tabled.games.qpoker.hands import QUEEN, HandClass, all_hands, rank_hand
from tabled.games.qpoker.odds import (
    DEALER_HANDS,
    class_counts,
    dobo_house_edge,
    play_counts,
    play_expectation,
    play_strategy,
)
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.rules import play_result
from tabled.games.registry import odds

DECK = sorted({card for hand in all_hands() for card in hand})


@pytest.fixture(scope="module")
def counts() -> dict[tuple[str, ...], object]:
    return {c.hand.cards: c for c in play_counts()}


def test_class_counts_over_one_deck_are_exact() -> None:
    """C(52,3) = 22,100 hands, counted by the project's own classifier."""
    assert dict(class_counts()) == {
        HandClass.STRAIGHT_FLUSH: 48,
        HandClass.THREE_OF_A_KIND: 52,
        HandClass.STRAIGHT: 720,
        HandClass.FLUSH: 1_096,
        HandClass.PAIR: 3_744,
        HandClass.HIGH_CARD: 16_440,
    }


def test_art10_dobo_house_edge_is_512_in_22100() -> None:
    """Art. 9.1 and 10 over every hand: 48x40 + 52x30 + 720x6 + 1,096x4 + 3,744x1 = 15,928 paid,
    16,440 taken: the house keeps 512 of 22,100 units, 128/5525 = 2.32 %."""
    assert dobo_house_edge() == Fraction(512, 22_100) == Fraction(128, 5525)
    assert odds("qpoker").bets["dobo"].house_edge == Fraction(128, 5525)


def test_the_dealer_qualifies_with_q_high_or_better() -> None:
    """Art. 9.4, counted directly: every hand but a high card below Q-high qualifies."""
    below = sum(
        1 for cards in all_hands()
        if (hand := rank_hand(cards)).hand_class is HandClass.HIGH_CARD and hand.ranks[0] < QUEEN
    )
    assert odds("qpoker").probabilities["dealer_qualifies"] == 1 - Fraction(below, 22_100)
    assert odds("qpoker").probabilities["dealer_qualifies"] == Fraction(769, 1105)


def brute_force_play(cards: list[str]) -> tuple[int, int, int, Fraction]:
    """Play against each of the 18,424 dealer hands with the rules core: (dealer does not
    qualify, dealer wins, player wins, expected net per unit)."""
    player = rank_hand(cards)
    rest = [card for card in DECK if card not in cards]
    tally = {"qpoker.art9.5": 0, "qpoker.art9.6": 0, "qpoker.art9.7": 0}
    net = 0
    for dealer_cards in combinations(rest, 3):
        result = play_result(player, rank_hand(dealer_cards), played=True)
        assert result.article is not None
        tally[result.article] += 1
        net += settle(result, 100).net
    return (tally["qpoker.art9.5"], tally["qpoker.art9.6"], tally["qpoker.art9.7"],
            Fraction(net, 100 * DEALER_HANDS))


@pytest.mark.parametrize("text", [
    "QS 6D 3C",  # the weakest hand that plays
    "QS 6S 3H",  # just above it, and folds
    "QD 3C 2H",  # a dealer would not qualify with it
    "AS KH 2D", "2S 2H 3D", "AS KS QS", "AD AC AH", "TC 6C 3C", "4H 3S 2D",
])
def test_play_counts_are_brute_force(counts: dict, text: str) -> None:
    """Inclusion-exclusion by bisection equals 18,424 comparisons by ``play_result``."""
    hand = rank_hand(text.split())
    nq, dealer_wins, player_wins, value = brute_force_play(text.split())
    got = counts[hand.cards]
    assert (got.dealer_does_not_qualify, got.dealer_wins, got.player_wins) == (
        nq, dealer_wins, player_wins)
    assert play_expectation(text.split()) == value


def test_play_counts_add_up_over_the_deck(counts: dict) -> None:
    """Each of the 22,100 hands meets 18,424 dealer hands, and each dealer hand is disjoint from
    18,424 player hands, so the non-qualifiers add up to their number times 18,424."""
    assert all(
        c.dealer_does_not_qualify + c.dealer_wins + c.player_wins == DEALER_HANDS
        for c in counts.values()
    )
    non_qualifying = 22_100 - 769 * 20  # 769/1105 = 15,380/22,100 qualify
    assert sum(c.dealer_does_not_qualify for c in counts.values()) == non_qualifying * 18_424
    # every disjoint pair of qualifying hands is one player's win and the other's loss
    qualifying = [c for c in counts.values() if c.hand.hand_class is not HandClass.HIGH_CARD
                  or c.hand.ranks[0] >= QUEEN]
    assert sum(c.dealer_wins for c in qualifying) == sum(c.player_wins for c in qualifying)


def test_the_best_strategy_and_the_edge_of_play() -> None:
    """Play when playing is worth at least the half lost by folding (Art. 9.3)."""
    strategy = play_strategy()
    assert " ".join(strategy.threshold.cards) == "QS 6D 3C"
    assert " ".join(strategy.plays_from.cards) == "QD 6D 4C"
    assert [" ".join(h.cards) for h in strategy.folds_above] == [
        "QS 6D 3S", "QS 6C 3C", "QS 6C 3S", "QS 6H 3H", "QS 6H 3S", "QS 6S 3D", "QS 6S 3C",
        "QS 6S 3H"]
    assert strategy.played == 14_906
    assert strategy.edge == Fraction(11_234_169, 407_170_400)
    assert f"{float(strategy.edge):.4%}" == "2.7591%"
    assert odds("qpoker").bets["play"].house_edge == strategy.edge
    assert play_expectation(["QS", "6D", "3C"]) >= Fraction(-1, 2)
    assert play_expectation(["QS", "6S", "3H"]) < Fraction(-1, 2)


def test_the_best_strategy_is_q64_or_better_and_q_spades_63_in_three_suits(counts: dict) -> None:
    """The rule docs/rules/qpoker.md states, checked against every hand's value."""
    q64 = rank_hand(["QD", "6D", "4C"])
    for cards, c in counts.items():
        hand = c.hand
        stated = hand.order >= q64.order or (
            hand.hand_class is HandClass.HIGH_CARD and hand.ranks == (QUEEN, 6, 3)
            and cards[0] == "QS" and len({card[1] for card in cards}) == 3)
        assert (play_expectation(cards) >= Fraction(-1, 2)) == stated, cards


def test_the_best_strategy_beats_always_playing_and_always_folding(counts: dict) -> None:
    always_play = -sum(
        (c.dealer_does_not_qualify * Fraction(1, 2) - c.dealer_wins
         + c.player_wins * {HandClass.STRAIGHT_FLUSH: 3, HandClass.THREE_OF_A_KIND: 2,
                            HandClass.STRAIGHT: Fraction(3, 2)}.get(c.hand.hand_class, 1)
         for c in counts.values()),
        Fraction(0),
    ) / (22_100 * DEALER_HANDS)
    assert play_strategy().edge < always_play
    assert play_strategy().edge < Fraction(1, 2)  # folding every hand loses half


def test_positions_change_no_figure() -> None:
    """Other seats' cards are unseen: the number of positions changes no probability."""
    few, many = odds("qpoker", QPokerOptions(positions=7)), odds("qpoker", QPokerOptions(20))
    assert few.bets == many.bets and few.probabilities == many.probabilities
    assert many.options == QPokerOptions(20)
