"""Exact house edges of the craps wagers, from CrapsTable outcomes and money.settle (RULES.md §2).

The expected values are the textbook edges per resolved bet; the code computes them from the
table's own records, so a wrong payout or a wrong decision anywhere moves a number here.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from tabled.daemon.rules.craps_odds import (
    ROWS,
    STAKE,
    HouseEdge,
    Placement,
    expected_net,
    format_table,
    house_edge,
    house_edges,
)
from tabled.daemon.rules.options import CrapsOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules" / "craps.md"


@pytest.fixture(scope="module")
def edges() -> dict[str, HouseEdge]:
    return {row.label: row for row in house_edges()}


@pytest.mark.parametrize(("label", "percent", "exact"), [
    ("Pass Line (Art. 2.1)", "1.414", Fraction(7, 495)),
    ("Don't Pass (Art. 3.1)", "1.364", Fraction(3, 220)),
    ("Come (Art. 2.3)", "1.414", Fraction(7, 495)),
    ("Don't Come (Art. 3.3)", "1.364", Fraction(3, 220)),
    ("Field (Art. 4)", "5.556", Fraction(1, 18)),
    ("Hard 4/10 (Art. 5)", "11.111", Fraction(1, 9)),
    ("Hard 6/8 (Art. 5)", "9.091", Fraction(1, 11)),
    ("Big 7 (Art. 6)", "8.333", Fraction(1, 12)),
    ("Eleven (Art. 7)", "11.111", Fraction(1, 9)),
    ("Any Craps (Art. 8)", "11.111", Fraction(1, 9)),
    ("Big 6/8, 7:6 (Art. 9)", "1.515", Fraction(1, 66)),
    ("Big 5/9, 7:5 (Art. 10)", "4.000", Fraction(1, 25)),
    ("Big 4/10, 9:5 (Art. 11)", "6.667", Fraction(1, 15)),
])
def test_house_edge_per_resolved_bet(
    edges: dict[str, HouseEdge], label: str, percent: str, exact: Fraction
) -> None:
    """The house edges of Art. 2-11 as paid by this table, exact and to 3 decimals."""
    assert edges[label].percent == percent
    assert edges[label].edge == exact


def test_every_odds_bet_is_fair(edges: dict[str, HouseEdge]) -> None:
    """Art. 2.2 / 3.2 pay true odds, behind the line and on Come numbers alike: 0 %."""
    odds = [row for label, row in edges.items() if "odds" in label]
    assert len(odds) == 12
    assert all(row.edge == 0 and row.percent == "0.000" for row in odds)


def test_a_dont_pass_push_counts_as_a_resolved_bet() -> None:
    """Art. 3.1: a come-out 12 resolves Don't Pass as a push: 3/220 per resolved bet (it would
    be 27/1925 if pushes were not counted)."""
    assert expected_net(Placement("dont_pass", None)) == -STAKE * Fraction(3, 220)


def test_big_bets_off_on_the_come_out_keep_their_edge(edges: dict[str, HouseEdge]) -> None:
    """R-C4: a Big bet that is off on come-out rolls waits for the same decision."""
    configured = house_edges(CrapsOptions(big_bets_on_come_out=False))
    assert [row.edge for row in configured] == [edges[label].edge for label, _ in ROWS]


def test_a_row_whose_placements_disagree_is_refused() -> None:
    with pytest.raises(ArithmeticError, match="depends on the placement"):
        house_edge("mixed", [Placement("pass", None), Placement("dont_pass", None)])


def test_the_documented_table_is_what_the_command_prints(edges: dict[str, HouseEdge]) -> None:
    """docs/rules/craps.md shows ``python -m tabled.daemon.rules.craps_odds`` verbatim."""
    printed = subprocess.run(
        [sys.executable, "-m", "tabled.daemon.rules.craps_odds"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert printed == format_table(list(edges.values())) + "\n"
    assert printed in DOC.read_text(encoding="utf-8")
