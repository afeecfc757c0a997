"""Baccarat on the pit's pages (games/parts/pit.py): the panel, the tile's line, the view.

This module owns what the floor shows of a baccarat table: the last hands and the shoe's
scoreboard, the roads of :mod:`tabled.games.baccarat.roads` (the same code as ``tabled
roads``). The one event it reads is ``shoe_start`` (a new shoe starts new roads), which has no
card. Pure; it imports only the contract and the games.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat import display
from tabled.games.baccarat.history import history
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.baccarat.roads import DERIVED_ROADS, RecordError, Roads, hand_of_record
from tabled.games.parts.pit import N_, Phrase, PitPart, given, grid

log = structlog.get_logger("tabled.games.baccarat.pit")

#: Hands kept for the panel.
HANDS = 80
#: Columns each road shows: the latest ones, as a physical scoreboard scrolls left.
BEAD_COLUMNS = 14
BIG_ROAD_COLUMNS = 36
DERIVED_COLUMNS = 30


@dataclass
class BaccaratPanel:
    hands: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HANDS))
    #: The shoe's scoreboard (docs/pit.md "Roads"), the same code as ``tabled roads``.
    roads: Roads = field(default_factory=Roads)
    shoe: int = 0

    def new_session(self) -> None:
        pass

    def new_shoe(self) -> None:
        self.shoe += 1
        self.roads = Roads()

    def event(self, payload: Mapping[str, Any]) -> bool:
        if payload.get("type") != "shoe_start":
            return False
        self.new_shoe()
        return True

    def add(self, outcome: OutcomeRecord) -> None:
        if not isinstance(outcome, BaccaratOutcome):
            return
        result, bets = outcome.result, outcome.bets
        self.hands.append({
            "round": outcome.round, "status": outcome.status,
            "demo": outcome.demo is True, "winner": result.winner,
            "player_total": result.player_total,
            "banker_total": result.banker_total, "natural": result.natural,
            "player_cards": list(result.player_cards),
            "banker_cards": list(result.banker_cards),
            "player_pair": bets["player_pair"].result == "win",
            "banker_pair": bets["banker_pair"].result == "win",
            "article": given(outcome.article), "shoe": self.shoe})
        try:
            hand = hand_of_record(outcome)
        except RecordError as exc:  # never fatal: the hand stays in the list, off the roads
            log.warning("roads_skipped", round=outcome.round, reason=str(exc))
            return
        if hand is not None:
            self.roads.add(hand)

    def to_dict(self) -> dict[str, Any]:
        return {"game": "baccarat", "shoe": self.shoe, "hands": list(self.hands),
                "roads": self.roads.to_dict()}


def describe(outcome: OutcomeRecord) -> str:
    """A hand in one line: ``#12 banker wins 5-7 natural``."""
    if not isinstance(outcome, BaccaratOutcome):
        return f"#{outcome.round} {outcome.status}"
    rnd, result = outcome.round, outcome.result
    if outcome.demo is True:
        return f"#{rnd} demonstration hand"
    winner = result.winner
    head = "tie" if winner == "tie" else f"{winner} wins"
    natural = " natural" if result.natural else ""
    return f"#{rnd} {head} {result.player_total}-{result.banker_total}{natural}"


def phrase(outcome: OutcomeRecord) -> Phrase:
    """:func:`describe`'s line as the catalogue has it (games/parts/pit.py)."""
    if not isinstance(outcome, BaccaratOutcome):
        return N_("#%(round)s %(status)s"), {"round": outcome.round, "status": outcome.status}
    rnd, result = outcome.round, outcome.result
    if outcome.demo is True:
        return N_("#%(round)s demonstration hand"), {"round": rnd}
    values = {"round": rnd, "player": result.player_total, "banker": result.banker_total}
    if result.winner == "tie":
        return ((N_("#%(round)s tie %(player)s-%(banker)s natural") if result.natural else
                 N_("#%(round)s tie %(player)s-%(banker)s")), values)
    if result.winner == "banker":
        return ((N_("#%(round)s banker wins %(player)s-%(banker)s natural") if result.natural
                 else N_("#%(round)s banker wins %(player)s-%(banker)s")), values)
    return ((N_("#%(round)s player wins %(player)s-%(banker)s natural") if result.natural
             else N_("#%(round)s player wins %(player)s-%(banker)s")), values)


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The scoreboard of the current shoe: grids of the five roads, counts and the ask road."""
    roads = panel.get("roads") or {}
    counts = dict(roads.get("counts") or {})
    counts["hands"] = sum(counts.get(k, 0) for k in ("banker", "player", "tie"))
    hands = [h for h in panel.get("hands") or [] if h.get("shoe") == panel.get("shoe")]
    return {
        "bead_plate": grid("bead_plate", roads.get("bead_plate") or [], BEAD_COLUMNS),
        "big_road": grid("big_road", roads.get("big_road") or [], BIG_ROAD_COLUMNS),
        "derived": [grid(name, roads.get(name) or [], DERIVED_COLUMNS)
                    for name in DERIVED_ROADS],
        "counts": counts,
        "ask": roads.get("ask"),
        "hands": list(reversed(hands))[:12],
        "shoe": panel.get("shoe"),
    }


#: The words of a hand the pit's pages show through ``|tr`` and ``|bet`` (its catalogue).
WORDS = (N_("Baccarat"),  # its title
         N_("banker"), N_("player"), N_("tie"), N_("banker pair"), N_("player pair"))

PIT = PitPart(panel=BaccaratPanel, describe=describe, view=view, package="tabled.games.baccarat",
              events=("shoe_start",), stylesheet="pit.css", phrase=phrase,
              history=history,
              history_segment="shoe_start", history_segment_title="Shoe",
              display_template="display.html", display_view=display.view,
              display_stylesheet="display.css")
