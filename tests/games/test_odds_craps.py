"""Exact house edges of every craps bet key, from CrapsTable outcomes and money.settle
(docs/rules/craps.md, tabled.games.craps.odds).

The expected values are the edges the regulator's pay tables imply, per resolved bet (a push
resolves it); the code computes them from the table's own records, so a wrong payout or a wrong
decision anywhere moves a number here.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from tabled.games.craps import rules
from tabled.games.craps.odds import (
    STAKE,
    Placement,
    craps_odds,
    expected_net,
    house_edge,
    throws_at,
)
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import BET_KEYS, POINTS
from tabled.games.registry import odds

#: The regulator's pay tables (Art. 2-11) imply these edges.
EDGES = {
    "pass": Fraction(7, 495),
    "dont_pass": Fraction(3, 220),
    "come": Fraction(7, 495),
    "dont_come": Fraction(3, 220),
    "field": Fraction(1, 18),
    "big7": Fraction(1, 12),
    "eleven": Fraction(1, 9),
    "any_craps": Fraction(1, 9),
    "hard4": Fraction(1, 9), "hard10": Fraction(1, 9),
    "hard6": Fraction(1, 11), "hard8": Fraction(1, 11),
    "big6": Fraction(1, 66), "big8": Fraction(1, 66),  # 7:6 per unit of 6 (R-C2)
    "big5": Fraction(1, 25), "big9": Fraction(1, 25),  # 7:5 per unit of 5
    "big4": Fraction(1, 15), "big10": Fraction(1, 15),  # 9:5 per unit of 5
    # a wager already on N, from there on: N before 7 wins even money (Art. 2.3, 3.3)
    **{f"come_{n}": e for n, e in ((4, Fraction(1, 3)), (10, Fraction(1, 3)),
                                   (5, Fraction(1, 5)), (9, Fraction(1, 5)),
                                   (6, Fraction(1, 11)), (8, Fraction(1, 11)))},
    **{f"dont_come_{n}": e for n, e in ((4, Fraction(-1, 3)), (10, Fraction(-1, 3)),
                                        (5, Fraction(-1, 5)), (9, Fraction(-1, 5)),
                                        (6, Fraction(-1, 11)), (8, Fraction(-1, 11)))},
    # true odds (Art. 2.2, 3.2), behind the line and on Come numbers alike
    "pass_odds": Fraction(0), "dont_pass_odds": Fraction(0),
    **{f"{kind}_{n}": Fraction(0) for kind in ("come_odds", "dont_come_odds") for n in POINTS},
}


def test_every_bet_key_of_the_contract_has_its_edge() -> None:
    assert set(EDGES) == set(BET_KEYS)
    assert list(craps_odds().bets) == list(BET_KEYS)


@pytest.mark.parametrize("big_on_come_out", [True, False])
@pytest.mark.parametrize("key", BET_KEYS)
def test_house_edge_per_resolved_bet(key: str, big_on_come_out: bool) -> None:
    """R-C4: a Big bet off on come-out rolls waits for the same decision: same edge."""
    result = odds("craps", CrapsOptions(big_bets_on_come_out=big_on_come_out))
    assert result.bets[key].house_edge == EDGES[key]


def test_a_dont_pass_push_counts_as_a_resolved_bet() -> None:
    """Art. 3.1: a come-out 12 resolves Don't Pass as a push: 3/220 per resolved bet (it would
    be 27/1925 if pushes were not counted)."""
    assert expected_net(Placement("dont_pass", None)) == -STAKE * Fraction(3, 220)
    assert Fraction(3, 220) / (1 - Fraction(1, 36)) == Fraction(27, 1925)


def test_the_distribution_of_a_throw() -> None:
    result = odds("craps")
    assert result.totals == {t: Fraction(6 - abs(t - 7), 36) for t in range(2, 13)}
    assert result.probabilities == {str(t): p for t, p in result.totals.items()}
    assert result.hard == dict.fromkeys((4, 6, 8, 10), Fraction(1, 36))


def test_a_row_whose_placements_disagree_is_refused() -> None:
    with pytest.raises(ArithmeticError, match="depends on the placement"):
        house_edge([Placement("pass", None), Placement("dont_pass", None)])


def test_the_edges_follow_the_rules_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table whose Field paid 3:1 on 12 would show it: the edges are read off its records."""
    paid_triple = rules.BetResult("win", "craps.art4", Fraction(3))
    original = rules._roll_bets

    def triple_on_twelve(point, total, pair, big_on_come_out):  # type: ignore[no-untyped-def]
        bets = dict(original(point, total, pair, big_on_come_out))
        if total == 12:
            bets["field"] = paid_triple
        return bets

    monkeypatch.setattr(rules, "_roll_bets", triple_on_twelve)
    rules._throws.cache_clear()
    throws_at.cache_clear()
    craps_odds.cache_clear()
    try:
        options = CrapsOptions()
        assert craps_odds(options).bets["field"].house_edge == Fraction(1, 36)
    finally:
        monkeypatch.undo()
        rules._throws.cache_clear()
        throws_at.cache_clear()
        craps_odds.cache_clear()
    assert craps_odds().bets["field"].house_edge == Fraction(1, 18)
