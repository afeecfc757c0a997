"""Baccarat's scoreboard display: the road board beside the table, for the players.

This module owns what the display shows of a baccarat table, made from the pit's panel dict
(:mod:`tabled.games.baccarat.pit`) and nothing else: the current shoe's five roads (the cells of
:mod:`tabled.games.baccarat.roads`, the same code as ``tabled roads``), its counts, the ask road
(what each derived road would mark if the next hand were a Banker or a Player win,
:meth:`~tabled.games.baccarat.roads.Roads.predict`), the shoe's number and counted hands,
whether the cut card is out, and the last counted hand's result. It never passes on what a
player must not see: no void's reason or article, no fault, no alert, no other table. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabled.games.baccarat.roads import DERIVED_ROADS
from tabled.games.parts.pit import grid

#: Columns each road shows on a 1920 px screen (the latest ones, as a board scrolls left).
BEAD_COLUMNS = 12
BIG_ROAD_COLUMNS = 24
DERIVED_COLUMNS = 20
SIDES = ("banker", "player")


def cut_card_out(panel: Mapping[str, Any]) -> bool:
    """Whether the current shoe's cut card has come out (Art. 3): the panel's shoe count says
    so (``shoe_count.cut_out``, set by the shoe's ``cut_card`` event, reset by a new shoe)."""
    count = panel.get("shoe_count")
    return isinstance(count, Mapping) and count.get("cut_out") is True


def _last_hand(panel: Mapping[str, Any]) -> dict[str, Any] | None:
    """The current shoe's last counted hand: its winner and totals (a void or a demonstration
    hand is not on the board)."""
    for hand in reversed(list(panel.get("hands") or [])):
        if hand.get("shoe") != panel.get("shoe"):
            return None
        if hand.get("status") == "complete" and not hand.get("demo"):
            return {"winner": hand.get("winner"), "player_total": hand.get("player_total"),
                    "banker_total": hand.get("banker_total"),
                    "natural": bool(hand.get("natural")), "round": hand.get("round")}
    return None


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The board's values: ``bead_plate``, ``big_road``, ``derived`` (grids), ``counts`` (with
    ``hands``), ``ask`` (``{side: {road: "red"|"blue"|None}}``), ``shoe``, ``cut_card``,
    ``last``."""
    roads = panel.get("roads") or {}
    counts = {k: int((roads.get("counts") or {}).get(k, 0))
              for k in ("banker", "player", "tie", "banker_pair", "player_pair", "natural")}
    counts["hands"] = counts["banker"] + counts["player"] + counts["tie"]
    asked = roads.get("ask") or {}
    ask = {side: {road: (asked.get(side) or {}).get(road) for road in DERIVED_ROADS}
           for side in SIDES}
    return {
        "bead_plate": grid("bead_plate", roads.get("bead_plate") or [], BEAD_COLUMNS),
        "big_road": grid("big_road", roads.get("big_road") or [], BIG_ROAD_COLUMNS),
        "derived": [grid(name, roads.get(name) or [], DERIVED_COLUMNS)
                    for name in DERIVED_ROADS],
        "counts": counts,
        "ask": ask,
        "shoe": panel.get("shoe") if isinstance(panel.get("shoe"), int) else 0,
        "cut_card": cut_card_out(panel),
        "last": _last_hand(panel),
    }
