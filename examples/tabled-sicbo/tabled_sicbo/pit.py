"""Sic bo on the pit's pages (tabled.games.parts.pit): the panel, its scoreboard, the tile's line.

This module owns what the floor shows of a sic bo table: the last 50 throws, the scoreboard
(the bead road of Big, Small and triples, six to a column, as sic bo tables display it), the
session's counts, and the histograms of totals and faces against fair dice. Pure: records in,
plain data out; it imports only the contract and the games' shared parts, never the pit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.parts.pit import GRID_ROWS, PitPart, chi_square, grid, histogram

from tabled_sicbo.options import OUTCOMES, total_ways
from tabled_sicbo.published import call, throw_of
from tabled_sicbo.rules import SICBO

#: Throws kept for the panel's list.
THROWS = 50
#: Entries of the bead road kept (a screen's worth of columns).
ROAD = 6 * 30
#: Columns of the bead road the page shows.
ROAD_WIDTH = 20
#: The chance of each total of three fair dice, for the histogram's expected marks.
TOTAL_CHANCE = {t: total_ways(t) / OUTCOMES for t in range(3, 19)}


def mark(dice: tuple[int, int, int]) -> str:
    """A throw on the road: ``T`` a triple (Big and Small lose, Art. 3.3), ``B`` Big, ``S``
    Small."""
    return {"triple": "T", "big": "B", "small": "S"}[call(dice)]


@dataclass
class SicBoPanel:
    """One sic bo table's panel (games/parts/pit.py ``Panel``)."""

    throws: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=THROWS))
    road: deque[str] = field(default_factory=lambda: deque(maxlen=ROAD))
    session_throws: int = 0
    voids: int = 0
    marks: dict[str, int] = field(default_factory=lambda: dict.fromkeys("BST", 0))
    totals: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(3, 19), 0))
    faces: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(1, 7), 0))

    def new_session(self) -> None:
        self.session_throws = self.voids = 0
        self.road.clear()
        self.marks = dict.fromkeys(self.marks, 0)
        self.totals = dict.fromkeys(self.totals, 0)
        self.faces = dict.fromkeys(self.faces, 0)

    def add(self, outcome: OutcomeRecord) -> None:
        dice = throw_of(outcome)
        if dice is None:
            if outcome.status == "void":
                self.voids += 1
                article = getattr(outcome, "article", None)
                self.throws.append({"round": outcome.round, "void": True,
                                    "article": article if isinstance(article, str) else None})
            return
        total = sum(dice)
        self.throws.append({"round": outcome.round, "dice": list(dice), "total": total,
                            "mark": mark(dice)})
        self.road.append(mark(dice))
        self.session_throws += 1
        self.marks[mark(dice)] += 1
        self.totals[total] += 1
        for face in dice:
            self.faces[face] += 1

    def event(self, payload: Mapping[str, Any]) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"game": SICBO, "throws": list(self.throws), "road": "".join(self.road),
                "session": {"throws": self.session_throws, "voids": self.voids,
                            "big": self.marks["B"], "small": self.marks["S"],
                            "triples": self.marks["T"],
                            "totals": {str(k): v for k, v in self.totals.items()},
                            "faces": {str(k): v for k, v in self.faces.items()}}}


def describe(outcome: OutcomeRecord) -> str:
    """A throw in one line: ``#12 6-6-5 = 17 Big``."""
    dice = throw_of(outcome)
    if dice is None:
        return f"#{outcome.round} {outcome.status}"
    word = {"T": "triple", "B": "Big", "S": "Small"}[mark(dice)]
    return f"#{outcome.round} {dice[0]}-{dice[1]}-{dice[2]} = {sum(dice)} {word}"


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The panel as ``panel.html`` lays it out: throws newest first, the bead road, the
    histograms, χ² of the faces."""
    session = panel.get("session") or {}
    totals = session.get("totals") or {}
    faces = session.get("faces") or {}
    road = str(panel.get("road") or "")
    beads = [{"col": i // GRID_ROWS, "row": i % GRID_ROWS, "mark": m} for i, m in enumerate(road)]
    return {
        "throws": list(reversed(list(panel.get("throws") or []))),
        "session": session,
        "road": grid("bead", beads, ROAD_WIDTH),
        "totals": histogram(totals, expected=TOTAL_CHANCE),
        "faces": histogram(faces, expected=dict.fromkeys(range(1, 7), 1 / 6)),
        "chi2_faces": chi_square(faces),
    }


PIT = PitPart(panel=SicBoPanel, describe=describe, view=view, package="tabled_sicbo",
              stylesheet="pit.css")

__all__ = ["PIT", "SicBoPanel", "describe", "mark", "view"]
