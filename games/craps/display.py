"""Craps' display beside the table, for the players: the point, the last rolls, the hot and
cold numbers.

This module owns what the display shows of a craps table, made from the pit's panel dict
(:mod:`tabled.games.craps.pit`) and nothing else: the point (on, and its number, or off), the
last :data:`LAST_ROLLS` thrown rolls newest first (each with its dice, its total and what it did:
a natural, craps, a point set or made, a seven-out), and each total's count over the rolls the
panel keeps against the count fair dice would give, the three most above it "hot", the three
most below it "cold". A no-roll and a void roll are not on it (nor any reason or article). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Rolls shown, newest first.
LAST_ROLLS = 20
#: Totals marked hot, and cold.
MARKED = 3
#: Each total's chance with two fair dice (its ways of 36).
TOTAL_CHANCE = {t: (6 - abs(t - 7)) / 36 for t in range(2, 13)}


def kind(roll: Mapping[str, Any]) -> str:
    """What a thrown roll did: ``natural``, ``craps``, ``point`` (set), ``made``, ``seven-out``
    or ``roll``."""
    total, before = roll.get("total"), roll.get("point_before")
    if before:
        return "seven-out" if total == 7 else "made" if total == before else "roll"
    return "natural" if total in (7, 11) else "craps" if total in (2, 3, 12) else "point"


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The display's values: ``point``, ``rolls`` (newest first), ``totals`` (each total's
    ``count``, ``expected`` and ``mark``: hot, cold or None), ``window`` (rolls counted)."""
    thrown = [r for r in panel.get("rolls") or []
              if isinstance(r.get("dice"), list) and len(r["dice"]) == 2]
    window = len(thrown)
    counts = dict.fromkeys(TOTAL_CHANCE, 0)
    for roll in thrown:
        if roll.get("total") in counts:
            counts[roll["total"]] += 1
    excess = {t: counts[t] - TOTAL_CHANCE[t] * window for t in counts}
    ranked = sorted(counts, key=lambda t: (excess[t], -t))
    hot = {t for t in ranked[-MARKED:] if excess[t] > 0.5}
    cold = {t for t in ranked[:MARKED] if excess[t] < -0.5}
    return {
        "point": panel.get("point") if isinstance(panel.get("point"), int) else None,
        "rolls": [{"dice": list(r["dice"]), "total": r.get("total"), "kind": kind(r)}
                  for r in reversed(thrown[-LAST_ROLLS:])],
        "totals": [{"total": t, "count": counts[t],
                    "expected": round(TOTAL_CHANCE[t] * window, 1),
                    "mark": "hot" if t in hot else "cold" if t in cold else None}
                   for t in counts],
        "window": window,
    }
