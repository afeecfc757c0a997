"""Exact baccarat odds (tabled.games.baccarat.odds) against the rules core and
docs/rules/baccarat.md.

The module reads the drawing rules off the rules core (its decision table) and enumerates the
shoe by value. These tests check each half independently: the decision table against a dealer
written here from docs/rules/baccarat.md Art. 9, the rules core against the decision table on every
four-card value prefix and every draw, the enumeration against brute force over small physical shoes
dealt card by card through ``BaccaratTable``, and the whole against random shoes; then the money
against the pays of Art. 12, 16 and 17 as docs/rules/baccarat.md states them.
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from itertools import product

import pytest

from tabled.contract.events import CARD_CODES, RANKS, CardDealt
from tabled.contract.outcome import Outcome
from tabled.games.baccarat import rules
from tabled.games.baccarat.odds import (
    Deal,
    baccarat_odds,
    deal_of,
    deal_probabilities,
    decision_table,
    pair_probability,
    play,
    shoe_values,
)
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.rules import CARD_VALUES, BaccaratTable
from tabled.games.options import OptionError
from tabled.games.registry import odds

METHODS = (1, 2)
RANKS_OF_VALUE = {v: [r for r in RANKS if CARD_VALUES[r] == v] for v in range(10)}


def reference_deal(values: list[int], method: int) -> tuple[Deal, int]:
    """docs/rules/baccarat.md Art. 9 and R-B1 over card values, written afresh: the deal and cards
    used."""
    player, banker = [values[0], values[2]], [values[1], values[3]]
    used = 4

    def total(hand: list[int]) -> int:
        return sum(hand) % 10

    natural = total(player) >= 8 or total(banker) >= 8
    if not natural:
        if total(player) == total(banker):  # (2): both draw, Player first
            player.append(values[4])
            banker.append(values[5])
            used = 6
        else:  # (3): the lower hand draws first
            lower, other = (player, banker) if total(player) < total(banker) else (banker, player)
            lower.append(values[4])
            used = 5
            if total(lower) > total(other) or (total(lower) == total(other) and method == 1):
                other.append(values[5])
                used = 6
    p, b = total(player), total(banker)
    winner = "player" if p > b else "banker" if b > p else "tie"
    return Deal(winner, p, b, natural, len(player), len(banker)), used


@pytest.mark.parametrize("method", METHODS)
def test_the_decision_table_is_art9_as_rules_md_words_it(method: int) -> None:
    """Every value path the rules core decided ends as a dealer written from docs/rules/baccarat.md
    says, and every path that dealer can take is in the table."""
    ends = decision_table(method).ends
    for player, banker, third, fourth in product(range(10), repeat=4):
        deal, used = reference_deal([player, 0, 0, banker, third, fourth], method)
        path = (player, banker, third, fourth)[: used - 2]
        assert ends[path] == deal, path
    assert len(ends) == len({
        (p, b, t, f)[: reference_deal([p, 0, 0, b, t, f], method)[1] - 2]
        for p, b, t, f in product(range(10), repeat=4)
    })


@pytest.mark.parametrize("method", METHODS)
def test_the_rules_core_deals_every_value_prefix_and_every_draw_as_the_table_says(
    method: int,
) -> None:
    """All 10,000 ordered values of P1 B1 P2 B2, each once, with cards of random ranks and suits;
    the draws are paired with the prefixes so that every (totals, third, fourth card) of each
    pair of totals is dealt once too (a Latin square: 10,000 hands, not 10^6)."""
    rng = random.Random(method)
    ends = decision_table(method).ends
    options = BaccaratOptions(method=method)

    def card(value: int) -> str:
        return rng.choice(RANKS_OF_VALUE[value]) + rng.choice("SHCD")

    dealt = Counter()
    for p1, b1, p2, b2 in product(range(10), repeat=4):
        player, banker = (p1 + p2) % 10, (b1 + b2) % 10
        third, fourth = (p1 + b1) % 10, b1  # a bijection of (p1, b1) for fixed totals
        values = [p1, b1, p2, b2, third, fourth]
        cards = [card(v) for v in values]
        table = BaccaratTable(options)
        outputs = [table.feed(CardDealt(card=c)) for c in cards]
        done = next(i for i, out in enumerate(outputs) if out)
        [outcome] = outputs[done]
        assert isinstance(outcome, Outcome) and outcome.status == "complete"
        path = (player, banker, third, fourth)[: done + 1 - 2]
        assert deal_of(outcome) == ends[path], (cards, path)
        dealt[path] += 1
    assert set(dealt) == set(ends)  # every path the enumeration weighs was dealt


def brute_force(cards: list[str], method: int) -> dict[Deal, Fraction]:
    """Every order of a small physical shoe, card by card through BaccaratTable: exact."""
    options = BaccaratOptions(method=method)
    found: dict[Deal, Fraction] = Counter()
    ways = Fraction(1)

    def walk(prefix: list[str], rest: list[str], weight: Fraction) -> None:
        outcome = play(prefix, options) if len(prefix) >= 4 else None
        if outcome is not None:
            found[deal_of(outcome)] += weight
            return
        for i, card in enumerate(rest):
            walk([*prefix, card], rest[:i] + rest[i + 1:], weight / len(rest))

    walk([], cards, ways)
    return dict(found)


@pytest.mark.parametrize(("seed", "method"), [(1, 1), (1, 2), (2, 1), (3, 2)])
def test_the_enumeration_is_brute_force_over_small_shoes(seed: int, method: int) -> None:
    """Composition without replacement, exact: an 8-card shoe, every order, dealt by the table."""
    cards = random.Random(seed).sample(sorted(CARD_CODES), 8)
    composition = [0] * 10
    for c in cards:
        composition[CARD_VALUES[c[0]]] += 1
    assert deal_probabilities(tuple(composition), method) == brute_force(cards, method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("decks", [6, 8, 12])
def test_probabilities_are_whole_and_player_banker_symmetric(method: int, decks: int) -> None:
    """The variant's drawing rules are symmetric (the lower hand draws first; equal totals both
    draw) and P1 B1 P2 B2 are exchangeable, so Player and Banker win equally often, exactly."""
    deals = deal_probabilities(shoe_values(decks), method)
    assert sum(deals.values()) == 1
    p = odds("baccarat", BaccaratOptions(method=method), decks).probabilities
    assert p["player"] == p["banker"]
    assert p["player"] + p["banker"] + p["tie"] == 1
    mirrored = Counter()
    for deal, probability in deals.items():
        winner = {"player": "banker", "banker": "player", "tie": "tie"}[deal.winner]
        mirrored[Deal(winner, deal.banker_total, deal.player_total, deal.natural,
                      deal.banker_cards, deal.player_cards)] += probability
    assert mirrored == deals


def test_a_shoe_holds_16_zeros_and_4_of_each_value_per_deck() -> None:
    assert shoe_values(8) == (128, 32, 32, 32, 32, 32, 32, 32, 32, 32)


def test_pairs_are_ranks_not_values() -> None:
    """Art. 12: P(pair) for 8 decks = 13 x (32/416)(31/415) = 31/415; 6 decks likewise."""
    assert pair_probability(8) == 13 * Fraction(32, 416) * Fraction(31, 415) == Fraction(31, 415)
    assert pair_probability(6) == 13 * Fraction(24, 312) * Fraction(23, 311)
    result = odds("baccarat")
    assert result.probabilities["player_pair"] == result.probabilities["banker_pair"]
    assert result.bets["player_pair"].house_edge == 1 - 12 * Fraction(31, 415) == Fraction(43, 415)


def test_natural_is_either_hand_8_or_9_on_two_cards() -> None:
    """Art. 9(1), counted straight from the shoe: P(neither two-card total is 8 or 9)."""
    counts = shoe_values(8)
    cards = sum(counts)
    neither = Fraction(0)
    for values in product(range(10), repeat=4):
        if (values[0] + values[2]) % 10 < 8 and (values[1] + values[3]) % 10 < 8:
            weight, left = 1, list(counts)
            for v in values:
                weight *= left[v]
                left[v] -= 1
            neither += weight
    neither /= cards * (cards - 1) * (cards - 2) * (cards - 3)
    assert odds("baccarat").probabilities["natural"] == 1 - neither


def edges_from_rules_md(method: int, commission: str, decks: int) -> dict[str, Fraction]:
    """The edges from the deals and the pays as docs/rules/baccarat.md Art. 11, 12, 16, 17 state
    them."""
    deals = deal_probabilities(shoe_values(decks), method)
    tie_pays = {1: 14, 2: 9}[method]
    commissioned = {"five_percent": ({7, 8, 9}, Fraction(19, 20)),
                    "half_on_four": ({4}, Fraction(1, 2))}[commission]
    net = Counter()
    for deal, p in deals.items():
        if deal.winner == "tie":
            net["tie"] += p * tie_pays
            continue
        won = deal.player_total if deal.winner == "player" else deal.banker_total
        pays = commissioned[1] if won in commissioned[0] else 1
        loser = "banker" if deal.winner == "player" else "player"
        net[deal.winner] += p * pays
        net[loser] -= p
        net["tie"] -= p
    pair = pair_probability(decks)
    net["player_pair"] = net["banker_pair"] = 11 * pair - (1 - pair)
    return {bet: -value for bet, value in net.items()}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("commission", ["five_percent", "half_on_four"])
@pytest.mark.parametrize("decks", [6, 8])
def test_edges_are_the_pays_of_art16_and_art17(method: int, commission: str, decks: int) -> None:
    options = BaccaratOptions(method=method, commission=commission)  # type: ignore[arg-type]
    result = baccarat_odds(options, decks)
    assert {bet: b.house_edge for bet, b in result.bets.items()} == edges_from_rules_md(
        method, commission, decks
    )
    tie = result.probabilities["tie"]
    assert result.bets["tie"].house_edge == 1 - {1: 15, 2: 10}[method] * tie


def test_default_figures() -> None:
    """The figures docs/rules/baccarat.md quotes for the default table (method 1, 5 %, 8 decks)."""
    result = odds("baccarat")
    assert result.decks == 8
    assert result.probabilities["player"] == Fraction(262835722256, 557856950391)
    assert result.probabilities["tie"] == Fraction(32185505879, 557856950391)
    assert result.bets["banker"].house_edge == Fraction(98567504702, 6508331087895)
    assert f"{float(result.bets['banker'].house_edge):.4%}" == "1.5145%"
    assert f"{float(result.bets['tie'].house_edge):.4%}" == "13.4576%"


def test_the_odds_follow_the_rules_core_settlement(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule change moves the odds with it: a table whose 5 % commission settled like the
    50 %-on-4 rule gives that rule's edges."""
    half_on_four = rules._SETTLED_BETS[1, "half_on_four"]
    before = odds("baccarat").bets
    monkeypatch.setitem(rules._SETTLED_BETS, (1, "five_percent"), half_on_four)
    after = odds("baccarat").bets
    assert after != before
    assert after == odds("baccarat", BaccaratOptions(commission="half_on_four")).bets


def test_random_first_hands_agree_loosely() -> None:
    """20,000 first hands of freshly shuffled 8-deck shoes through BaccaratTable: every winner's
    frequency within 5 standard deviations of the exact probability (seeded: never flaky)."""
    rng = random.Random(13)
    shoe = [code for code in sorted(CARD_CODES) for _ in range(8)]
    hands = 20_000
    seen = Counter()
    for _ in range(hands):
        table = BaccaratTable()
        for card in rng.sample(shoe, 6):
            if out := table.feed(CardDealt(card=card)):
                [outcome] = out
                assert isinstance(outcome, Outcome)
                record = outcome.to_record()
                seen[record["result"]["winner"]] += 1
                seen["natural"] += record["result"]["natural"]
                seen["player_pair"] += record["bets"]["player_pair"]["result"] == "win"
                break
    p = odds("baccarat").probabilities
    for name in ("player", "banker", "tie", "natural", "player_pair"):
        expected = hands * p[name]
        sigma = (hands * p[name] * (1 - p[name])) ** 0.5
        assert abs(seen[name] - expected) < 5 * sigma, (name, seen[name], float(expected))


def test_decks_override_the_option_and_are_checked() -> None:
    assert odds("baccarat", None, 6) == odds("baccarat", BaccaratOptions(decks=6))
    assert odds("baccarat", BaccaratOptions(decks=8), 6).options.decks == 6
    with pytest.raises(OptionError, match="decks"):
        odds("baccarat", None, 5)
    with pytest.raises(ValueError, match="dealt from a shoe only"):
        odds("craps", None, 8)  # type: ignore[call-overload]


@pytest.mark.parametrize("method", METHODS)
def test_each_way_a_hand_ends_is_settled_on_a_hand_that_ends_so(method: int) -> None:
    """The hands dealt again to read the money deal the Deal they stand for, without a pair."""
    for deal, cards in decision_table(method).representatives.items():
        outcome = play(cards, BaccaratOptions(method=method))
        assert outcome is not None and deal_of(outcome) == deal
        assert outcome.to_record()["bets"]["player_pair"]["result"] == "lose"
        assert outcome.to_record()["bets"]["banker_pair"]["result"] == "lose"
