"""Q Poker hand ranking (docs/rules/qpoker.md Art. 4, Art. 8, Reading R-Q1) and its exact
combinatorics."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.games.qpoker.hands import HandClass, RankedHand, all_hands, qualifies, rank_hand

ALL_HANDS = [rank_hand(hand) for hand in all_hands()]


def hand(text: str) -> RankedHand:
    return rank_hand(text.split())


def strongest_first(*texts: str) -> None:
    """Each hand beats every later one, and the classes are as Art. 8 orders them."""
    hands = [hand(text) for text in texts]
    for stronger, weaker in combinations(hands, 2):
        assert stronger.beats(weaker), (stronger.cards, weaker.cards)
        assert not weaker.beats(stronger)


# -- Art. 4 -------------------------------------------------------------------------------------


def test_art4_1_suits_rank_spades_hearts_clubs_diamonds() -> None:
    """Art. 4(1): with equal ranks, the suit of the highest card decides (Art. 8(6))."""
    strongest_first("AS KD 9C", "AH KS 9D", "AC KS 9S", "AD KS 9S")


def test_art4_2_ranks_run_ace_king_down_to_two() -> None:
    """Art. 4(2): A K Q J 10 … 2, the Ace highest."""
    strongest_first("AD 5C 3H", "KD 5C 3H", "QD 5C 3H", "JD 5C 3H", "TD 5C 3H", "9D 5C 3H",
                    "8D 5C 3H", "7D 5C 3H", "6D 5C 3H")


def test_art4_3_straights_run_from_ace_king_queen_down_to_ace_two_three() -> None:
    """Art. 4(3): A-K-Q highest, then K-Q-J … 4-3-2, and A-2-3 the lowest straight."""
    straights = ["AS KD QC", "KS QD JC", "QS JD TC", "JS TD 9C", "TS 9D 8C", "9S 8D 7C",
                 "8S 7D 6C", "7S 6D 5C", "6S 5D 4C", "5S 4D 3C", "4S 3D 2C", "AS 2D 3C"]
    assert all(hand(text).hand_class is HandClass.STRAIGHT for text in straights)
    strongest_first(*straights)


def test_art4_3_king_ace_two_is_not_a_straight() -> None:
    """Art. 4(3): K-A-2 is not in the list of straights; it is an ace-high high card."""
    assert hand("KS AD 2C").hand_class is HandClass.HIGH_CARD
    assert hand("KS AS 2S").hand_class is HandClass.FLUSH
    assert hand("AS 2D 3C").beats(hand("KS AD 2C"))


# -- Art. 8, class by class -----------------------------------------------------------------------


def test_art8_classes_rank_straight_flush_down_to_high_card() -> None:
    """Art. 8: straight flush > three of a kind > straight > flush > pair > high card."""
    texts = ["AD 2D 3D", "2S 2H 2C", "AS KD QC", "AS KS JS", "AS AH KS", "AS KD JC"]
    assert [hand(text).hand_class for text in texts] == sorted(HandClass, reverse=True)
    strongest_first(*texts)


def test_art8_1_straight_flush_by_straight_order_then_suit() -> None:
    """Art. 8(1): compare by straight order; equal straights, the higher suit wins."""
    strongest_first("AD KD QD", "KS QS JS", "4S 3S 2S", "AS 2S 3S", "AH 2H 3H", "AC 2C 3C")


def test_art8_2_three_of_a_kind_by_rank() -> None:
    """Art. 8(2): the higher rank wins (one deck has one set of each rank)."""
    strongest_first("AD AC AH", "KS KH KC", "3S 3H 3D", "2S 2H 2C")


def test_art8_3_straight_by_straight_order_then_suit() -> None:
    """Art. 8(3): straight order first; equal order, the higher suit wins."""
    strongest_first("KD QC JH", "QS JS TD", "9S 8D 7D", "9H 8S 7S", "9C 8S 7S", "9D 8S 7S")


def test_art8_4_flush_card_by_card_then_suit() -> None:
    """Art. 8(4): highest card, then the next, then the next; all equal, the higher suit."""
    strongest_first("KD 9D 5D", "KS 9S 4S", "KH 9H 4H", "KC 8C 7C", "QS JS 9S", "5S 3S 2S")


def test_art8_5_pair_by_pair_then_odd_card_rank_then_its_suit() -> None:
    """Art. 8(5): pair rank, then the odd card's rank, then the odd card's suit."""
    strongest_first("TD TC 2D", "9C 9D AD", "9D 9C 5C", "9S 9H 5D", "9S 9H 4S", "2S 2H 3D")


def test_art8_6_high_card_card_by_card_then_suit_of_highest() -> None:
    """Art. 8(6): highest, next, next; all ranks equal, the suit of the highest card decides."""
    strongest_first("AD 9D 5C", "AS 9S 4D", "AH 9C 4S", "AC 9H 4H", "KS QS 9D", "5S 3H 2D")


def test_reading_r_q1_ace_is_the_highest_card_of_every_straight() -> None:
    """Reading R-Q1: equal straights compare the suit of the highest-ranked card by Art. 4(2):
    the Ace in A-2-3 (not the 3) and in A-K-Q, as Art. 8(6) names it for high cards."""
    strongest_first("AS 2H 3H", "AH 2S 3S")
    strongest_first("AS KH QH", "AH KS QS")
    strongest_first("AS 2S 3S", "AH 2H 3H")  # straight flushes: one suit, the Ace's


def test_art9_4_queen_high_or_better_qualifies() -> None:
    """Art. 9.4: the dealer qualifies with Q-high (its lowest, Q-3-2) or any better hand."""
    assert qualifies(hand("QD 3C 2H"))
    assert qualifies(hand("KD 3C 2H"))
    assert qualifies(hand("2D 2C 3H"))
    assert not qualifies(hand("JS TS 8H"))
    assert not qualifies(hand("JS 3S 2H"))


def test_rank_hand_refuses_what_is_not_three_distinct_cards() -> None:
    with pytest.raises(ValueError):
        rank_hand(["AS", "AS", "2D"])
    with pytest.raises(ValueError):
        rank_hand(["AS", "KD"])
    with pytest.raises(ValueError):
        rank_hand(["AS", "KD", "1C"])


# -- a strict total order -----------------------------------------------------------------------


def test_key_is_a_strict_total_order_over_all_22100_hands() -> None:
    """No two of the 22,100 hands share a key, so ``beats`` orders all of them strictly."""
    assert len(ALL_HANDS) == 22_100
    assert len({ranked.key for ranked in ALL_HANDS}) == 22_100


def test_final_tie_break_never_decides_between_disjoint_hands() -> None:
    """Hands equal by Art. 8 alone (``order``) always share a card: one deck never deals both,
    so the final tie-break (the remaining suits) never decides a round (Art. 8: no ties)."""
    by_order: dict[tuple[int, ...], list[frozenset[str]]] = defaultdict(list)
    for ranked in ALL_HANDS:
        by_order[ranked.order].append(frozenset(ranked.cards))
    groups_needing_tie_break = 0
    for group in by_order.values():
        groups_needing_tie_break += len(group) > 1
        for first, second in combinations(group, 2):
            assert first & second, (first, second)
    assert groups_needing_tie_break > 0  # the tie-break is needed, just never between disjoint


hands_strategy = st.sampled_from(ALL_HANDS)


@settings(max_examples=300)
@given(hands_strategy, hands_strategy, hands_strategy)
def test_beats_is_irreflexive_total_and_transitive(a: RankedHand, b: RankedHand,
                                                   c: RankedHand) -> None:
    assert not a.beats(a)
    if a.cards != b.cards:
        assert a.beats(b) != b.beats(a)
    if a.beats(b) and b.beats(c):
        assert a.beats(c)


@settings(max_examples=300)
@given(st.permutations(sorted({card for ranked in ALL_HANDS for card in ranked.cards})))
def test_disjoint_hands_are_decided_by_article_8_alone(deck: list[str]) -> None:
    """Two hands dealt from one deck differ in ``order``: Art. 8's own criteria decide."""
    first, second = rank_hand(deck[:3]), rank_hand(deck[3:6])
    assert first.order != second.order
    assert first.beats(second) == (first.order > second.order)

