"""Sic bo's exact odds: the 216 throws, each wager's chance and house edge, against the figures
the public sources give (Wizard of Odds' Macau column), and the document's table."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from tabled.games import registry

from tabled_sicbo.odds import markdown, sicbo_odds
from tabled_sicbo.options import SicBoOptions

RULES = Path(__file__).parents[1] / "RULES.md"


def test_outcome_classes_over_216_throws() -> None:
    odds = sicbo_odds()
    p = odds.probabilities
    assert (p["triple"], p["pair"], p["three_different"]) == (
        Fraction(6, 216), Fraction(90, 216), Fraction(120, 216))
    assert p["small"] == p["big"] == Fraction(105, 216)
    assert sum(odds.totals.values()) == 1
    assert odds.totals[10] == odds.totals[11] == Fraction(27, 216)
    assert odds.wins["single_1"] == Fraction(91, 216)
    assert odds.wins["combo_1_2"] == Fraction(30, 216)
    assert odds.wins["double_3"] == Fraction(16, 216)


def test_house_edges_of_the_macau_pay_table() -> None:
    edges = {key: bet.house_edge for key, bet in sicbo_odds().bets.items()}
    assert edges["small"] == edges["big"] == edges["odd"] == edges["even"] == Fraction(1, 36)
    assert edges["total_4"] == edges["total_17"] == Fraction(7, 24)       # 29.17 %
    assert edges["total_5"] == Fraction(17, 36)                            # 47.22 %
    assert edges["total_10"] == Fraction(1, 8)
    assert edges["triple_6"] == Fraction(65, 216)                          # 30.09 %
    assert edges["any_triple"] == Fraction(11, 36)                         # 30.56 %
    assert edges["double_1"] == Fraction(1, 3)
    assert edges["combo_5_6"] == Fraction(1, 6)
    assert edges["single_4"] == Fraction(17, 216)                          # 7.87 %
    assert all(edge > 0 for edge in edges.values())


def test_the_edges_follow_the_declared_pay_table() -> None:
    atlantic = SicBoOptions(total_4_17=60, total_5_16=30, total_6_15=17, specific_triple=180,
                            any_triple=30, specific_double=10)
    edges = {key: bet.house_edge for key, bet in registry.odds("sicbo", atlantic).bets.items()}
    assert edges["total_4"] == Fraction(11, 72)        # 15.28 %
    assert edges["total_5"] == Fraction(5, 36)         # 13.89 %
    assert edges["triple_2"] == Fraction(35, 216)      # 16.20 %
    assert edges["any_triple"] == Fraction(5, 36)
    assert edges["double_2"] == Fraction(40, 216)      # 18.52 %
    assert sicbo_odds(SicBoOptions(odd_even=False)).bets.keys().isdisjoint({"odd", "even"})


def test_the_json_form() -> None:
    out = sicbo_odds().to_json()
    assert out["game"] == "sicbo" and out["options"]["total_4_17"] == 50
    assert out["bets"]["small"] == {"house_edge": 1 / 36, "exact": "1/36"}
    assert out["wins"]["any_triple"] == 6 / 216


def test_the_document_holds_the_table() -> None:
    assert markdown() in RULES.read_text(encoding="utf-8")
