"""Exact Q Poker combinatorics from the project's own classifier and Dobo settlement (RULES.md §1).

This module owns the figures behind docs/rules/qpoker.md: how many of the 22,100 three-card hands
of one deck fall in each class of Art. 8, and the house edge of Dobo (Art. 9.1, 10). Every hand
is classified by :func:`~tabled.daemon.rules.qpoker_hands.rank_hand` and settled by
:func:`~tabled.daemon.rules.qpoker.dobo_result` and :func:`tabled.daemon.rules.money.settle`, so
the figures
are those of the code that runs at the table, not of a second model of the rules. Everything is
exact (integers and ``Fraction``); it never samples. Only ``python -m
tabled.daemon.rules.qpoker_odds``
prints.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Final

from tabled.daemon.rules.money import settle
from tabled.daemon.rules.qpoker import dobo_result
from tabled.daemon.rules.qpoker_hands import HandClass, all_hands, rank_hand

#: One minor unit: every Dobo ratio is whole (Art. 10), so settlement rounds nothing away.
STAKE: Final = 1


def class_counts() -> dict[HandClass, int]:
    """How many of the 22,100 hands of one deck are of each class, strongest class first."""
    counts = Counter(rank_hand(hand).hand_class for hand in all_hands())
    return {hand_class: counts[hand_class] for hand_class in sorted(HandClass, reverse=True)}


def dobo_house_edge(counts: dict[HandClass, int] | None = None) -> Fraction:
    """The house's expected gain per unit staked on Dobo, over all hands equally likely."""
    counts = class_counts() if counts is None else counts
    player_net = 0
    for hand_class, count in counts.items():
        settlement = settle(dobo_result(hand_class), STAKE)
        assert settlement.rounding == 0, "a whole Dobo ratio on one minor unit rounds nothing"
        player_net += count * settlement.net
    return Fraction(-player_net, sum(counts.values()) * STAKE)


def report() -> str:
    """The table of class counts and the Dobo house edge, as docs/rules/qpoker.md shows it."""
    counts = class_counts()
    total = sum(counts.values())
    lines = [f"{'class':<16} {'hands':>6}  {'share':>7}"]
    lines += [
        f"{hand_class.label:<16} {count:>6,}  {100 * count / total:>6.3f}%"
        for hand_class, count in counts.items()
    ]
    lines.append(f"{'all':<16} {total:>6,}")
    edge = dobo_house_edge(counts)
    lost_per_hand_dealt = edge * total  # the player's net loss over one stake on every hand
    lines.append(f"Dobo house edge: {lost_per_hand_dealt}/{total} = {edge} = {float(edge):.4%}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
