"""Exact Q Poker odds (docs/rules/qpoker.md): hand classes, Dobo, and Play under the best fold
strategy.

This module owns the combinatorics of one 52-card deck (Art. 1) behind ``tabled odds --game
qpoker``: how many of the 22,100 three-card hands fall in each class of Art. 8, how often the
dealer qualifies (Art. 9.4), the house edge of Dobo (Art. 9.1, 10), and the exact value of
playing each of the 22,100 hands against the 18,424 dealer hands of the other 49 cards
(Art. 9.2-9.7), hence the best strategy and the edge of Play under it. Everything is exact
(integers and ``Fraction``); it never samples.

The figures are those of the code that runs at the table: hands are ranked by
:func:`~tabled.games.qpoker.hands.rank_hand` (whose ``key`` orders every pair of hands one
deck
can deal together exactly as ``beats`` does), the dealer qualifies by
:func:`~tabled.games.qpoker.hands.qualifies`, and every result comes from
:func:`~tabled.games.qpoker.rules.dobo_result` / :func:`~tabled.games.qpoker.rules.play_result`
settled by
:func:`tabled.games.money.settle`.

Dobo and Play are separate wagers (Art. 5: either or both): Dobo is decided by the player's own
hand before the decision (Art. 9.1), so it changes nothing in the Play decision, and each has its
own edge per unit staked on it.

The Play decision: the player sees only the three own cards (not the dealer's, nor any other
seat's: unseen cards change no probability, so the number of seats changes no figure), then plays
or folds. Folding loses half the wager (Art. 9.3). The best strategy plays a hand when its
expected net from playing is at least that of folding (ties go to playing).

Counting without 407 million comparisons: the 22,100 hands are sorted once by ``key``; the dealer
hands disjoint from a player hand ``H`` in any range of that order are the range's size, minus
those holding one of ``H``'s cards, plus those holding two of them, minus ``H`` itself
(inclusion-exclusion), each a bisection in the sorted positions of the hands holding that card
or pair of cards.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations
from math import comb
from types import MappingProxyType
from typing import Any, Final

from tabled.contract.outcome import BetResult
from tabled.games.money import settle
from tabled.games.odds.model import BetOdds, Odds, exact
from tabled.games.odds.render import percent
from tabled.games.qpoker.hands import HandClass, RankedHand, all_hands, qualifies, rank_hand
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.rules import dobo_result, play_result

#: One major unit in minor units: every Dobo and Play ratio (40:1 ... 3:2, 1:2, and the half lost
#: on a fold) settles it in whole minor units, so nothing is rounded away.
STAKE: Final = 100
DECK: Final = 52
HAND: Final = 3
#: The dealer's hands from the 49 cards a player does not hold: C(49, 3) = 18,424.
DEALER_HANDS: Final = comb(DECK - HAND, HAND)


def _net(bet: BetResult) -> Fraction:
    """The player's net per unit staked on ``bet``, as :func:`settle` pays it."""
    money = settle(bet, STAKE)
    if money.rounding or money.stays:
        raise ArithmeticError(f"{bet} does not settle {STAKE} exactly")
    return Fraction(money.net, STAKE)


@dataclass(frozen=True, slots=True)
class _Deck:
    """Every hand of the deck in Art. 8 order (weakest first), and where each stands in it."""

    hands: tuple[RankedHand, ...]
    #: where each hand (its cards in canonical order) stands in ``hands``
    positions: Mapping[tuple[str, str, str], int]
    #: the sorted positions of the hands holding a card, and holding two given cards
    by_card: Mapping[str, list[int]]
    by_pair: Mapping[tuple[str, str], list[int]]
    #: the first position of a qualifying hand: the non-qualifiers are a prefix (Art. 9.4)
    first_qualifier: int


@cache
def _deck() -> _Deck:
    hands = tuple(sorted((rank_hand(cards) for cards in all_hands()), key=lambda h: h.key))
    by_card: dict[str, list[int]] = defaultdict(list)
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for position, hand in enumerate(hands):  # positions ascend, so every list comes sorted
        for card in hand.cards:
            by_card[card].append(position)
        for pair in combinations(sorted(hand.cards), 2):
            by_pair[pair].append(position)
    first = next(i for i, hand in enumerate(hands) if qualifies(hand))
    if not all(qualifies(hand) for hand in hands[first:]):
        raise ArithmeticError("the qualifying hands are not the top of Art. 8's order")
    positions = {hand.cards: position for position, hand in enumerate(hands)}
    return _Deck(hands, MappingProxyType(positions), MappingProxyType(by_card),
                 MappingProxyType(by_pair), first)


def _disjoint_in(deck: _Deck, hand: RankedHand, position: int, start: int, stop: int) -> int:
    """How many hands at positions ``start <= i < stop`` share no card with ``hand`` (which is
    at ``position``): inclusion-exclusion over its cards and pairs of cards."""
    if start >= stop:
        return 0

    def within(positions: Sequence[int]) -> int:
        return bisect_left(positions, stop) - bisect_left(positions, start)

    count = stop - start
    count -= sum(within(deck.by_card[card]) for card in hand.cards)
    count += sum(within(deck.by_pair[pair]) for pair in combinations(sorted(hand.cards), 2))
    count -= start <= position < stop
    return count


@dataclass(frozen=True, slots=True)
class PlayCounts:
    """A player hand's 18,424 dealer hands, split by how the Play wager ends (Art. 9.5-9.7)."""

    hand: RankedHand
    dealer_does_not_qualify: int
    dealer_wins: int
    player_wins: int


def play_counts() -> tuple[PlayCounts, ...]:
    """For every player hand, weakest first, how its dealer hands split."""
    deck = _deck()
    total = len(deck.hands)
    out = []
    for position, hand in enumerate(deck.hands):
        below = _disjoint_in(deck, hand, position, 0, deck.first_qualifier)
        above = _disjoint_in(deck, hand, position, max(position + 1, deck.first_qualifier), total)
        out.append(PlayCounts(hand, below, above, DEALER_HANDS - below - above))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PlayStrategy:
    """The best Play decision for every hand, and its value.

    ``threshold`` is the weakest hand (in Art. 8's order) that plays. Suits make the strategy
    not quite a threshold: the cards a player holds change the dealer's chances of a flush or a
    qualifying hand, so a few hands just above ``threshold`` fold (``folds_above``); every hand
    from ``plays_from`` up plays. ``played`` is how many of the 22,100 hands play; ``edge`` is
    the house edge of Play per unit of the Play wager under this strategy, each fold counted at
    its half loss."""

    threshold: RankedHand
    folds_above: tuple[RankedHand, ...]
    plays_from: RankedHand
    played: int
    edge: Fraction


def _play_value(counts: PlayCounts, nets: Mapping[str, Fraction]) -> Fraction:
    """Sum over the dealer hands of the net on one unit played (not yet divided by 18,424)."""
    return (counts.dealer_does_not_qualify * nets["no_qualify"]
            + counts.dealer_wins * nets["dealer_wins"]
            + counts.player_wins * nets[counts.hand.hand_class.label])


@cache
def _play_nets() -> Mapping[str, Fraction]:
    """The net per unit of each way Play ends, by the rules core's own ``play_result``: on
    hands that end that way (a fold, a dealer who does not qualify, a dealer who wins, and a
    player who beats a qualifying dealer with each class)."""
    low_dealer, high_dealer = rank_hand(["2S", "3H", "5D"]), rank_hand(["AS", "AH", "AD"])
    nets = {
        "fold": _net(play_result(low_dealer, high_dealer, played=False)),
        "no_qualify": _net(play_result(high_dealer, low_dealer, played=True)),
        "dealer_wins": _net(play_result(low_dealer, high_dealer, played=True)),
    }
    qualifying_dealer = rank_hand(["QC", "4C", "2H"])  # Q-high: the weakest class that qualifies
    for cards in (["KS", "QS", "JS"], ["KS", "KH", "KD"], ["KS", "QH", "JD"], ["KS", "9S", "7S"],
                  ["KS", "KH", "9D"], ["KS", "9H", "7D"]):
        player = rank_hand(cards)
        assert qualifying_dealer.hand_class is HandClass.HIGH_CARD and qualifies(qualifying_dealer)
        nets[player.hand_class.label] = _net(play_result(player, qualifying_dealer, played=True))
    return MappingProxyType(nets)


@cache
def play_strategy() -> PlayStrategy:
    """The best fold strategy for Play and the house edge under it (exact)."""
    nets = _play_nets()
    fold = nets["fold"] * DEALER_HANDS
    playing = [(c.hand, _play_value(c, nets) >= fold, _play_value(c, nets)) for c in play_counts()]
    first = next(i for i, (_, plays, _) in enumerate(playing) if plays)
    last_fold = max(i for i, (_, plays, _) in enumerate(playing) if not plays)
    folds_above = tuple(hand for hand, plays, _ in playing[first:] if not plays)
    total = sum(value if plays else fold for _, plays, value in playing)
    return PlayStrategy(
        threshold=playing[first][0],
        folds_above=folds_above,
        plays_from=playing[last_fold + 1][0],
        played=sum(plays for _, plays, _ in playing),
        edge=-Fraction(total, len(playing) * DEALER_HANDS),
    )


def play_expectation(cards: Sequence[str]) -> Fraction:
    """The player's expected net per unit of the Play wager if a player holding ``cards``
    plays, over the 18,424 dealer hands of the other cards (fold: -1/2)."""
    deck = _deck()
    hand = rank_hand(cards)
    position = deck.positions[hand.cards]
    below = _disjoint_in(deck, hand, position, 0, deck.first_qualifier)
    above = _disjoint_in(deck, hand, position, max(position + 1, deck.first_qualifier),
                         len(deck.hands))
    counts = PlayCounts(hand, below, above, DEALER_HANDS - below - above)
    return Fraction(_play_value(counts, _play_nets()), DEALER_HANDS)


@cache
def class_counts() -> Mapping[HandClass, int]:
    """How many of the 22,100 hands of one deck are of each class, strongest class first."""
    counts = {hand_class: 0 for hand_class in sorted(HandClass, reverse=True)}
    for hand in _deck().hands:
        counts[hand.hand_class] += 1
    return MappingProxyType(counts)


def dobo_house_edge() -> Fraction:
    """The house's expected gain per unit staked on Dobo, all 22,100 hands equally likely."""
    counts = class_counts()
    player_net = sum(
        (count * _net(dobo_result(hand_class)) for hand_class, count in counts.items()),
        Fraction(0),
    )
    return -player_net / sum(counts.values())


def dealer_qualifies() -> Fraction:
    """The chance that the dealer's hand, from a full deck, qualifies (Art. 9.4)."""
    deck = _deck()
    return Fraction(len(deck.hands) - deck.first_qualifier, len(deck.hands))


def hand_text(hand: RankedHand) -> str:
    """``"QS 6H 4D (high_card)"``: a hand's cards in canonical order and its class."""
    return f"{' '.join(hand.cards)} ({hand.hand_class.label})"


@dataclass(frozen=True, slots=True)
class QPokerOdds(Odds):
    """Q Poker's odds: ``classes`` (counts of the 22,100 hands by class), ``dealer_qualifies``
    (also in ``probabilities``) and the Play ``strategy``."""

    classes: Mapping[HandClass, int]
    strategy: PlayStrategy

    def notes(self) -> list[str]:
        return strategy_lines(self)

    def extra_json(self) -> dict[str, Any]:
        """The strategy behind the Play edge: ``{"strategy": {"threshold": [cards], "class",
        "plays_from": [cards], "hands_played"}}``."""
        return {"strategy": {
            "threshold": list(self.strategy.threshold.cards),
            "class": self.strategy.threshold.hand_class.label,
            "plays_from": list(self.strategy.plays_from.cards),
            "hands_played": self.strategy.played,
        }}


def qpoker_odds(options: QPokerOptions | None = None) -> QPokerOdds:
    """The exact odds of Q Poker (the number of positions changes none of them)."""
    options = QPokerOptions() if options is None else options
    counts = class_counts()
    hands = sum(counts.values())
    probabilities = {hand_class.label: Fraction(n, hands) for hand_class, n in counts.items()}
    probabilities["dealer_qualifies"] = dealer_qualifies()
    strategy = play_strategy()
    return QPokerOdds(
        game="qpoker",
        options=options,
        decks=None,
        probabilities=MappingProxyType(probabilities),
        bets=MappingProxyType({
            "dobo": BetOdds(dobo_house_edge(), "qpoker.art9.1, art10"),
            "play": BetOdds(strategy.edge, "qpoker.art9.3-9.7",
                            f"best strategy: play {hand_text(strategy.threshold)} or better"),
        }),
        classes=counts,
        strategy=strategy,
    )


def strategy_lines(result: QPokerOdds) -> list[str]:
    strategy = result.strategy
    hands = sum(result.classes.values())
    lines = [
        f"play: the best strategy plays {strategy.played:,} of {hands:,} hands; the weakest "
        f"that plays is {hand_text(strategy.threshold)},",
        f"and every hand from {hand_text(strategy.plays_from)} up plays",
    ]
    if strategy.folds_above:
        folds = ", ".join(" ".join(hand.cards) for hand in strategy.folds_above)
        lines[-1] += f"; between them {len(strategy.folds_above)} fold: {folds}"
    lines.append("dobo and play are separate wagers; play's edge is per unit of the Play "
                 "wager, a fold losing half of it (Art. 9.3)")
    return lines



def markdown() -> str:
    """The tables of docs/rules/qpoker.md (``tabled odds --game qpoker --markdown``)."""
    result = qpoker_odds(QPokerOptions())
    hands = sum(result.classes.values())
    lines = ["| class | hands | probability | exact |", "|---|---:|---:|---:|"]
    for hand_class, count in result.classes.items():
        p = Fraction(count, hands)
        lines.append(f"| {hand_class.label} | {count:,} | {percent(p)} | {exact(p)} |")
    qualifies = result.probabilities["dealer_qualifies"]
    lines += [
        f"| dealer qualifies (Q-high or better) | {int(qualifies * hands):,} "
        f"| {percent(qualifies)} | {exact(qualifies)} |",
        "",
        "| bet | house edge | exact | article |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| `{name}` | {percent(bet.house_edge)} | {exact(bet.house_edge)} | {bet.article} |"
              for name, bet in result.bets.items()]
    lines += ["", *strategy_lines(result)]
    return "\n".join(lines)
