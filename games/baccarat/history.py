"""Baccarat's history view (games/parts/pit.py ``PitPart.history``): a shoe's scoreboard.

Owns what the pit's history shows of one recorded shoe: its five roads, drawn whole, its
counts and its ask road, built with :mod:`tabled.games.baccarat.roads` (the same code as
``tabled roads``) from the shoe's outcome records, and its hands. Pure: outcome records in,
plain data out; never an event, so never a card before its hand's outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.baccarat.roads import DERIVED_ROADS, RecordError, Roads, hand_of_record
from tabled.games.parts.pit import given, grid

#: The fewest columns a road of the history shows (a physical scoreboard's width); a longer
#: shoe's road is drawn whole, as wide as it is.
MIN_COLUMNS = 24


def _whole(name: str, entries: Sequence[Any]) -> Any:
    last = max((int(e["col"]) for e in entries), default=-1)
    return grid(name, entries, max(MIN_COLUMNS, last + 1))


def history(outcomes: Sequence[OutcomeRecord]) -> dict[str, Any]:
    """One shoe's scoreboard from its outcome records (in the table's order): every road
    whole, the counts, the ask road, and the hands (newest first) with the ones left off the
    roads (a void, a demonstration hand, one the roads refuse) marked."""
    roads = Roads()
    hands = []
    for outcome in outcomes:
        if not isinstance(outcome, BaccaratOutcome):
            continue
        result = outcome.result
        try:
            hand = hand_of_record(outcome)
        except RecordError:
            hand = None
        if hand is not None:
            roads.add(hand)
        hands.append({
            "round": outcome.round, "status": outcome.status, "demo": outcome.demo is True,
            "winner": result.winner, "player_total": result.player_total,
            "banker_total": result.banker_total, "natural": result.natural,
            "player_cards": list(result.player_cards),
            "banker_cards": list(result.banker_cards),
            "article": given(outcome.article), "void_reason": given(outcome.void_reason),
            "on_roads": hand is not None})
    board = roads.to_dict()
    counts = dict(board.get("counts") or {})
    counts["hands"] = sum(counts.get(k, 0) for k in ("banker", "player", "tie"))
    return {
        "bead_plate": _whole("bead_plate", board.get("bead_plate") or []),
        "big_road": _whole("big_road", board.get("big_road") or []),
        "derived": [_whole(name, board.get(name) or []) for name in DERIVED_ROADS],
        "counts": counts,
        "ask": board.get("ask"),
        "hands": list(reversed(hands)),
    }
