"""Exact baccarat odds (docs/rules/baccarat.md): the first hand of a full shoe of 6 to 12 decks,
card by card.

This module owns the composition-exact analysis of one hand: the probability of every way a hand
can end (winner, totals, natural, cards drawn), the pair probabilities, and the house edge of the
five wagers of Art. 12 under the table's method (Art. 9, 16) and commission (Art. 17). It is pure
and exact (integers and ``Fraction``); it never samples.

How it stays the table's own rules rather than a second model of them:

- The drawing rules read card values only (Art. 5), so how a hand goes is decided by the totals
  of its first four cards (P1 B1 P2 B2, Reading R-B1) and the values of the cards it draws. The
  rules core itself, a real :class:`~tabled.games.baccarat.rules.BaccaratTable`, is dealt one hand
  for
  each of those value paths (at most 10 x 10 x 10 x 10, about 8,000 hands) and says when the hand
  is complete and how it ended: that is the *decision table*.
- The shoe is then enumerated without replacement: every ordered sequence of values
  P1 B1 P2 B2 [3rd [4th third card]] weighs the product of the counts still in the shoe, an
  integer; sequences of one length share one denominator, so ``Fraction`` only appears at the
  end. Prefixes with the same totals and the same values removed are grouped before the draws.
- The money comes from the table too: each way a hand can end is dealt again under the table's
  options and its Player/Banker/Tie results are settled with
  :func:`tabled.games.money.settle`;
  likewise a pair and a non-pair for the pair wagers. A change of drawing rule, pay table or
  commission in the rules core moves these figures with it.

A pair (Art. 12) is two cards of the same rank; its probability follows from the rank
composition (13 ranks of ``4 x decks`` cards), whatever the drawing rules do later.

"First hand of a full shoe": burned cards nobody sees do not change it (they are as likely to be
any card as the hand's own); later hands depend on what came out before them, which this module
does not model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from itertools import product
from math import prod
from types import MappingProxyType
from typing import Final, get_args

from tabled.contract.events import RANKS, SUITS, CardDealt
from tabled.contract.outcome import BetResult, Outcome, Output
from tabled.games.baccarat.options import BaccaratMethod, BaccaratOptions, Commission
from tabled.games.baccarat.rules import (
    BET_NAMES,
    CARD_VALUES,
    DEFAULT_OPTIONS,
    BaccaratResult,
    BaccaratTable,
    Winner,
)
from tabled.games.money import settle
from tabled.games.odds.model import BetOdds, Odds
from tabled.games.odds.render import percent

#: The card values of Art. 5.
VALUES: Final = range(10)
#: One major unit in minor units: every baccarat ratio (1:1, 19:20, 1:2, 14:1, 9:1, 11:1) pays
#: it in whole minor units, so settlement rounds nothing away.
STAKE: Final = 100
#: The most cards a hand can take: four, and one third card per side (Art. 9).
MAX_CARDS: Final = 6
#: A representative rank for each value; the two fourth-card zeros are other ranks, so the
#: hands that build the decision table hold no pair.
_RANK_OF_VALUE: Final = {
    value: next(rank for rank in RANKS if CARD_VALUES[rank] == value) for value in VALUES
}
_SECOND_ZEROS: Final = ("JC", "QD")  # P2 and B2: worth 0, never the rank of P1 or B1
_SUIT_BY_POSITION: Final = "SHCDSH"

#: A value path: the two-card totals of Player and Banker, then the values drawn, in order.
ValuePath = tuple[int, ...]


@dataclass(frozen=True, slots=True, order=True)
class Deal:
    """How one hand ends: the winner, the final totals, whether it was a natural (Art. 9(1)),
    and how many cards each side holds (2 or 3)."""

    winner: Winner
    player_total: int
    banker_total: int
    natural: bool
    player_cards: int
    banker_cards: int


@dataclass(frozen=True, slots=True)
class DecisionTable:
    """The rules core's drawing rules over values, for one method: the :class:`Deal` every
    complete value path ends in, and a card sequence that deals it."""

    method: BaccaratMethod
    ends: Mapping[ValuePath, Deal]
    representatives: Mapping[Deal, tuple[str, ...]]


def _cards_for(path: ValuePath) -> list[str]:
    """Cards of the values of ``path``: P1 worth the Player total, B1 the Banker total, P2 and B2
    worth 0 (of other ranks), then the drawn values; suits only keep the codes apart."""
    player_total, banker_total, *drawn = path
    cards = [
        _RANK_OF_VALUE[player_total] + "S", _RANK_OF_VALUE[banker_total] + "H", *_SECOND_ZEROS
    ]
    cards += [_RANK_OF_VALUE[v] + _SUIT_BY_POSITION[4 + i] for i, v in enumerate(drawn)]
    return cards


def play(cards: Sequence[str], options: BaccaratOptions = DEFAULT_OPTIONS) -> Outcome | None:
    """Deal ``cards`` to a fresh table: the outcome brought by the last card, or ``None`` while
    the hand needs more. A card after the hand completed is a :class:`ValueError`."""
    table = BaccaratTable(options)
    outputs: list[Output] = []
    for i, card in enumerate(cards):
        if outputs:
            raise ValueError(f"the hand was complete after {i} of {list(cards)}")
        outputs = table.feed(CardDealt(card=card))
    if not outputs:
        return None
    [outcome] = outputs
    if not isinstance(outcome, Outcome) or outcome.status != "complete":
        raise ValueError(f"{list(cards)} did not deal a complete hand: {outputs}")
    return outcome


def deal_of(outcome: Outcome) -> Deal:
    """The :class:`Deal` of a complete outcome."""
    result = outcome.result
    assert isinstance(result, BaccaratResult) and result.winner is not None
    return Deal(
        result.winner, result.player_total, result.banker_total, result.natural,
        len(result.player_cards), len(result.banker_cards),
    )


@cache
def decision_table(method: BaccaratMethod) -> DecisionTable:
    """Deal every value path through the rules core until each hand is complete (Art. 9)."""
    options = BaccaratOptions(method=method)
    ends: dict[ValuePath, Deal] = {}
    representatives: dict[Deal, tuple[str, ...]] = {}
    pending: list[ValuePath] = [(p, b) for p in VALUES for b in VALUES]
    while pending:
        path = pending.pop()
        cards = _cards_for(path)
        outcome = play(cards, options)
        if outcome is None:
            if len(cards) == MAX_CARDS:
                raise ValueError(f"the rules core wants a seventh card after {cards}")
            pending.extend((*path, v) for v in VALUES)
            continue
        deal = ends[path] = deal_of(outcome)
        representatives.setdefault(deal, tuple(cards))
    return DecisionTable(
        method,
        MappingProxyType(dict(sorted(ends.items()))),
        MappingProxyType(dict(sorted(representatives.items()))),
    )


def shoe_values(decks: int) -> tuple[int, ...]:
    """How many cards of each value 0-9 a full shoe of ``decks`` decks holds (Art. 1, 5)."""
    counts = [0] * len(VALUES)
    for rank in RANKS:
        counts[CARD_VALUES[rank]] += len(SUITS) * decks
    return tuple(counts)


def _falling(n: int, k: int) -> int:
    """n (n-1) ... (n-k+1): the ordered ways to take k cards of n."""
    return prod(range(n - k + 1, n + 1))


@cache
def deal_probabilities(
    composition: tuple[int, ...], method: BaccaratMethod
) -> Mapping[Deal, Fraction]:
    """The exact probability of each :class:`Deal` for the first hand out of a shoe holding
    ``composition[v]`` cards of value ``v``, dealt by the rules core's ``method``."""
    if len(composition) != len(VALUES) or min(composition) < 0:
        raise ValueError(f"a composition is ten non-negative counts, not {composition!r}")
    ends = decision_table(method).ends
    left = list(composition)
    # weights[k - 4][deal]: the number of ordered k-card value sequences that end in deal,
    # each counted with its multiplicity in the shoe.
    weights: list[dict[Deal, int]] = [defaultdict(int) for _ in range(3)]
    # The prefixes that draw, grouped by their totals and the counts they leave in the shoe.
    drawing: dict[tuple[int, int, tuple[int, ...]], int] = defaultdict(int)
    for p1 in VALUES:
        w1 = left[p1]
        if not w1:
            continue
        left[p1] -= 1
        for b1 in VALUES:
            w2 = w1 * left[b1]
            if not w2:
                continue
            left[b1] -= 1
            for p2 in VALUES:
                w3 = w2 * left[p2]
                if not w3:
                    continue
                left[p2] -= 1
                player = (p1 + p2) % 10
                for b2 in VALUES:
                    w4 = w3 * left[b2]
                    if not w4:
                        continue
                    banker = (b1 + b2) % 10
                    natural = ends.get((player, banker))
                    if natural is not None:
                        weights[0][natural] += w4
                    else:
                        left[b2] -= 1
                        drawing[player, banker, tuple(left)] += w4
                        left[b2] += 1
                left[p2] += 1
            left[b1] += 1
        left[p1] += 1
    for (player, banker, remaining), w4 in drawing.items():
        for third in VALUES:
            w5 = w4 * remaining[third]
            if not w5:
                continue
            deal = ends.get((player, banker, third))
            if deal is not None:
                weights[1][deal] += w5
                continue
            for fourth in VALUES:
                w6 = w5 * (remaining[fourth] - (fourth == third))
                if w6:
                    weights[2][ends[player, banker, third, fourth]] += w6
    cards = sum(composition)
    probabilities: dict[Deal, Fraction] = defaultdict(Fraction)
    for extra, by_deal in enumerate(weights):
        ways = _falling(cards, 4 + extra)
        for deal, weight in by_deal.items():
            probabilities[deal] += Fraction(weight, ways)
    return MappingProxyType(dict(sorted(probabilities.items())))


def pair_probability(decks: int) -> Fraction:
    """Art. 12: the chance that a hand's first two cards share a rank, from a full shoe (any two
    given positions of the shoe: Player's P1 P2 and Banker's B1 B2 alike)."""
    per_rank = len(SUITS) * decks
    cards = len(RANKS) * per_rank
    return Fraction(len(RANKS) * per_rank * (per_rank - 1), cards * (cards - 1))


# -- the money ------------------------------------------------------------------------------------


def _net(bet: BetResult) -> Fraction:
    """The player's net per unit staked on ``bet``, as :func:`settle` pays it."""
    money = settle(bet, STAKE)
    if money.rounding or money.stays:
        raise ArithmeticError(f"{bet} does not settle {STAKE} exactly")
    return Fraction(money.net, STAKE)


def _bets(cards: Sequence[str], options: BaccaratOptions) -> Mapping[str, BetResult]:
    outcome = play(cards, options)
    assert outcome is not None, f"{cards} is a whole hand"
    bets = outcome.bets
    assert all(isinstance(bets[name], BetResult) for name in BET_NAMES)
    return {name: bet for name, bet in bets.items() if isinstance(bet, BetResult)}


def _pair_nets(options: BaccaratOptions) -> tuple[Fraction, Fraction]:
    """(net on a pair, net without one) per unit on a pair wager: a hand where both sides hold a
    pair, and one where neither does, dealt under ``options``."""
    paired = ["AS", "2S", "AH", "2H"]  # totals 2 and 4: Player draws, maybe Banker too
    while (outcome := play(paired, options)) is None:
        paired.append("TS")
    pair_bets = outcome.bets
    unpaired = next(iter(decision_table(options.method).representatives.values()))
    plain_bets = _bets(unpaired, options)
    win, lose = pair_bets["player_pair"], plain_bets["player_pair"]
    assert isinstance(win, BetResult) and pair_bets["banker_pair"] == win
    assert plain_bets["banker_pair"] == lose
    return _net(win), _net(lose)


# -- the report ---------------------------------------------------------------------------------

#: The article that prices each wager (Art. 16 for the method's table, 17 for commission, 12).
_ARTICLES: Final = {
    "player": "baccarat.art16, art17",
    "banker": "baccarat.art16, art17",
    "tie": "baccarat.art16",
    "player_pair": "baccarat.art12, art16",
    "banker_pair": "baccarat.art12, art16",
}


@dataclass(frozen=True, slots=True)
class BaccaratOdds(Odds):
    """Baccarat's odds: ``deals`` is the exact probability of every way the hand can end, the
    detail behind ``probabilities`` (``player``, ``banker``, ``tie``, ``natural``,
    ``player_pair``, ``banker_pair``)."""

    deals: Mapping[Deal, Fraction]

    def preface(self) -> list[str]:
        return [f"the first hand of a full shoe of {self.decks} decks, exact for its "
                "composition (no burn seen)"]


def baccarat_odds(
    options: BaccaratOptions = DEFAULT_OPTIONS, decks: int | None = None
) -> BaccaratOdds:
    """The exact odds of the first hand of a full shoe under ``options``; ``decks`` overrides
    ``options.decks`` (and must be 6 to 12 like it, Art. 1)."""
    if decks is not None:
        options = replace(options, decks=decks)  # validated again: 6 to 12
    deals = deal_probabilities(shoe_values(options.decks), options.method)
    winners: dict[str, Fraction] = {"player": Fraction(0), "banker": Fraction(0),
                                    "tie": Fraction(0)}
    natural = Fraction(0)
    expected = dict.fromkeys(("player", "banker", "tie"), Fraction(0))
    representatives = decision_table(options.method).representatives
    for deal, probability in deals.items():
        winners[deal.winner] += probability
        if deal.natural:
            natural += probability
        bets = _bets(representatives[deal], options)
        for name in expected:
            expected[name] += probability * _net(bets[name])
    pair = pair_probability(options.decks)
    pair_win, pair_lose = _pair_nets(options)
    expected["player_pair"] = expected["banker_pair"] = pair * pair_win + (1 - pair) * pair_lose
    probabilities = {**winners, "natural": natural, "player_pair": pair, "banker_pair": pair}
    return BaccaratOdds(
        game="baccarat",
        options=options,
        decks=options.decks,
        probabilities=MappingProxyType(probabilities),
        bets=MappingProxyType(
            {name: BetOdds(-expected[name], _ARTICLES[name]) for name in BET_NAMES}
        ),
        deals=deals,
    )


#: The shoe sizes the baccarat document shows (Art. 1 allows all of them).
DOC_DECKS: Final = tuple(range(6, 13))


def markdown() -> str:
    """The tables of docs/rules/baccarat.md (``tabled odds --game baccarat --markdown``)."""
    methods: tuple[BaccaratMethod, ...] = get_args(BaccaratMethod)
    commissions: tuple[Commission, ...] = get_args(Commission)
    lines = [
        "| method | decks | Player wins | Banker wins | Tie | natural | pair (each side) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method, decks in product(methods, DOC_DECKS):
        p = baccarat_odds(BaccaratOptions(method=method), decks).probabilities
        lines.append(f"| {method} | {decks} | " + " | ".join(
            percent(p[name]) for name in ("player", "banker", "tie", "natural", "player_pair")
        ) + " |")
    lines += [
        "",
        "| method | commission | decks | `player` | `banker` | `tie` | "
        "`player_pair`, `banker_pair` |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for method, commission, decks in product(methods, commissions, DOC_DECKS):
        bets = baccarat_odds(BaccaratOptions(method=method, commission=commission),
                    decks).bets
        assert bets["player_pair"] == bets["banker_pair"]
        lines.append(f"| {method} | {commission} | {decks} | " + " | ".join(
            percent(bets[name].house_edge) for name in ("player", "banker", "tie", "player_pair")
        ) + " |")
    return "\n".join(lines)
