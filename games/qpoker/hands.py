"""Q Poker hands (docs/rules/qpoker.md, Art. 4 and Art. 8, Reading R-Q1): class and order of three
cards.

This module owns the order of cards and of three-card hands: a hand's class, which of two hands
wins, and whether the dealer qualifies (Art. 9.4). It knows nothing of rounds, seats or wagers.
It is pure and total over three distinct card codes; it must never do I/O, and never let two
hands that one deck can deal together compare equal (Art. 8: with suits ranked there is no tie).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import combinations
from typing import Final, TypeAlias

from tabled.contract.events import CARD_CODES

#: Art. 4(2): ranks high to low A K Q J 10 … 2, as numbers that sort the same way (A high).
RANK_VALUES: Final[dict[str, int]] = {rank: value for value, rank in enumerate("23456789TJQKA", 2)}
#: Art. 4(1): suits high to low spades, hearts, clubs, diamonds.
SUIT_VALUES: Final[dict[str, int]] = {"S": 3, "H": 2, "C": 1, "D": 0}
ACE: Final = RANK_VALUES["A"]
QUEEN: Final = RANK_VALUES["Q"]
#: Art. 4(3): A-2-3 is a straight, the lowest; it ranks just below 4-3-2 (top card 4).
_ACE_LOW_STRAIGHT: Final = (ACE, 3, 2)
_ACE_LOW_TOP: Final = 3

HandKey: TypeAlias = tuple[int, ...]


class HandClass(IntEnum):
    """Art. 8's six classes; a larger value is a stronger class."""

    HIGH_CARD = 0
    PAIR = 1
    FLUSH = 2
    STRAIGHT = 3
    THREE_OF_A_KIND = 4
    STRAIGHT_FLUSH = 5

    @property
    def label(self) -> str:
        """The class's name in outcome records (docs/contract.md), e.g. ``"three_of_a_kind"``."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class RankedHand:
    """Three cards with their class and their place in the order of Art. 8.

    ``cards`` are in canonical order: rank high to low by Art. 4(2) (the Ace high, also in A-2-3),
    then suit high to low; ``ranks`` are their rank values. ``order`` is Art. 8's comparison: the
    class, then the class's own criteria down to the suit that the article (or Reading R-Q1)
    names; it decides between any two hands that can be dealt from one deck. ``key`` is ``order``
    followed by the final tie-break, the suits of all three cards in canonical order: it makes
    the order strict and total over all 22,100 hands, and never decides between disjoint hands.
    """

    cards: tuple[str, str, str]
    ranks: tuple[int, int, int]
    hand_class: HandClass
    order: HandKey
    key: HandKey

    def beats(self, other: RankedHand) -> bool:
        """Whether this hand ranks above ``other`` (Art. 8)."""
        return self.key > other.key


def _canonical(card: str) -> tuple[int, int]:
    return RANK_VALUES[card[0]], SUIT_VALUES[card[1]]


def _straight_top(ranks: tuple[int, int, int]) -> int | None:
    """Art. 4(3): the straight's place in straight order (its top rank, 3 for A-2-3), or None.

    K-A-2 is not a straight: the Ace is either above the King or below the 2, never both.
    """
    high, mid, low = ranks
    if high - mid == 1 and mid - low == 1:
        return high
    if ranks == _ACE_LOW_STRAIGHT:
        return _ACE_LOW_TOP
    return None


def rank_hand(cards: Sequence[str]) -> RankedHand:
    """Classify and order three distinct cards (Art. 8), or raise ``ValueError``."""
    if len(cards) != 3 or len(set(cards)) != 3 or not CARD_CODES.issuperset(cards):
        raise ValueError(f"a Q Poker hand is three distinct card codes, not {list(cards)!r}")
    ordered = sorted(cards, key=_canonical, reverse=True)
    (r1, s1), (r2, s2), (r3, s3) = (_canonical(card) for card in ordered)
    ranks = (r1, r2, r3)
    flush = s1 == s2 == s3
    straight_top = _straight_top(ranks)
    # Every straight compares the suit of its highest-ranked card by Art. 4(2), which canonical
    # order puts first: the Ace in A-K-Q and, by Reading R-Q1, in A-2-3 as well.
    order: HandKey
    if straight_top is not None:
        hand_class = HandClass.STRAIGHT_FLUSH if flush else HandClass.STRAIGHT
        order = (hand_class, straight_top, s1)  # Art. 8(1), 8(3)
    elif r1 == r3:
        hand_class = HandClass.THREE_OF_A_KIND
        order = (hand_class, r1)  # Art. 8(2): one deck holds one set of each rank
    elif flush:
        hand_class = HandClass.FLUSH
        order = (hand_class, r1, r2, r3, s1)  # Art. 8(4)
    elif r1 == r2 or r2 == r3:
        hand_class = HandClass.PAIR
        odd_rank, odd_suit = (r3, s3) if r1 == r2 else (r1, s1)
        order = (hand_class, r2, odd_rank, odd_suit)  # Art. 8(5); r2 is always in the pair
    else:
        hand_class = HandClass.HIGH_CARD
        order = (hand_class, r1, r2, r3, s1)  # Art. 8(6)
    return RankedHand(
        cards=(ordered[0], ordered[1], ordered[2]),
        ranks=ranks,
        hand_class=hand_class,
        order=order,
        key=(*order, s1, s2, s3),
    )


def qualifies(dealer: RankedHand) -> bool:
    """Art. 9.4: the dealer plays with Q-high (a high card whose highest card is a Q) or better."""
    return dealer.hand_class is not HandClass.HIGH_CARD or dealer.ranks[0] >= QUEEN


def all_hands() -> Iterator[tuple[str, str, str]]:
    """Every three-card hand of one 52-card deck (Art. 1): C(52, 3) = 22,100 of them."""
    return combinations(sorted(CARD_CODES), 3)
