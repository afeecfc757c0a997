"""Craps on the pit's pages (games/parts/pit.py): the panel, the tile's line, the view.

This module owns what the floor shows of a craps table: the last 50 rolls, the point, the
session's totals and per-die face histograms. Pure: records in, plain data out; it imports
only the contract and the games' shared parts, never the pit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.craps import display
from tabled.games.craps.history import history
from tabled.games.craps.record import CrapsOutcome
from tabled.games.parts.pit import N_, Phrase, PitPart, chi_square, given, histogram

#: Rolls kept for the panel.
ROLLS = 50
#: Chance of each craps total with two fair dice, for the histogram's expected marks.
TOTAL_CHANCE = {t: (6 - abs(t - 7)) / 36 for t in range(2, 13)}


@dataclass
class CrapsPanel:
    rolls: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=ROLLS))
    point: int | None = None
    session_rolls: int = 0
    no_rolls: int = 0
    totals: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(2, 13), 0))
    die1: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(1, 7), 0))
    die2: dict[int, int] = field(default_factory=lambda: dict.fromkeys(range(1, 7), 0))

    def new_session(self) -> None:
        self.session_rolls = self.no_rolls = 0
        for hist in (self.totals, self.die1, self.die2):
            for key in hist:
                hist[key] = 0

    def add(self, outcome: OutcomeRecord) -> None:
        if not isinstance(outcome, CrapsOutcome):
            return
        result = outcome.result
        if outcome.no_roll is True:
            self.no_rolls += 1
            self.rolls.append({"round": outcome.round, "no_roll": True})
            return
        dice = result.dice
        if outcome.status == "void" or dice is None:
            self.rolls.append({"round": outcome.round, "void": True,
                               "article": given(outcome.article)})
            return
        a, b = dice
        self.rolls.append({"round": outcome.round, "dice": [a, b], "total": a + b,
                           "point_before": result.point_before,
                           "point_after": result.point_after})
        self.point = result.point_after
        self.session_rolls += 1
        self.totals[a + b] += 1
        self.die1[a] += 1
        self.die2[b] += 1

    def event(self, payload: Mapping[str, Any]) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"game": "craps", "point": self.point, "rolls": list(self.rolls),
                "session": {"rolls": self.session_rolls, "no_rolls": self.no_rolls,
                            "totals": {str(k): v for k, v in self.totals.items()},
                            "die1": {str(k): v for k, v in self.die1.items()},
                            "die2": {str(k): v for k, v in self.die2.items()}}}


def describe(outcome: OutcomeRecord) -> str:
    """A roll in one line: ``#12 6-1 = 7, point off``."""
    if not isinstance(outcome, CrapsOutcome):
        return f"#{outcome.round} {outcome.status}"
    rnd, result = outcome.round, outcome.result
    if outcome.no_roll is True:
        return f"#{rnd} no roll"
    dice = result.dice or ("?", "?")
    point = result.point_after
    return (f"#{rnd} {dice[0]}-{dice[1]} = {result.total}, point "
            f"{'off' if point is None else point}")


def phrase(outcome: OutcomeRecord) -> Phrase:
    """:func:`describe`'s line as the catalogue has it (games/parts/pit.py)."""
    if not isinstance(outcome, CrapsOutcome):
        return N_("#%(round)s %(status)s"), {"round": outcome.round, "status": outcome.status}
    rnd, result = outcome.round, outcome.result
    if outcome.no_roll is True:
        return N_("#%(round)s no roll"), {"round": rnd}
    dice = result.dice or ("?", "?")
    point = result.point_after
    return (N_("#%(round)s %(a)s-%(b)s = %(total)s, point %(point)s"),
            {"round": rnd, "a": dice[0], "b": dice[1], "total": result.total,
             "point": N_("off") if point is None else point})


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The panel as ``panel.html`` lays it out: rolls newest first, histograms, χ² per die."""
    session = panel.get("session") or {}
    totals = session.get("totals") or {}
    die1, die2 = session.get("die1") or {}, session.get("die2") or {}
    rolls = list(panel.get("rolls") or [])
    sevens = totals.get("7", 0)
    return {
        "point": panel.get("point"),
        "rolls": list(reversed(rolls)),
        "session": session,
        "totals": histogram(totals, expected=TOTAL_CHANCE),
        "die1": histogram(die1, expected=dict.fromkeys(range(1, 7), 1 / 6)),
        "die2": histogram(die2, expected=dict.fromkeys(range(1, 7), 1 / 6)),
        "sevens": sevens,
        "chi2_dice": [chi_square(d) for d in (die1, die2)],
    }


#: The bets' names the pit's recall shows through ``|bet`` (its catalogue); a numbered
#: bet (``come_odds_4``) is its name and its number.
WORDS = (N_("Craps"),  # its title
         N_("pass"), N_("don't pass"), N_("pass odds"), N_("don't pass odds"), N_("come"),
         N_("don't come"), N_("field"), N_("any craps"), N_("eleven"), N_("come %(n)s"),
         N_("don't come %(n)s"), N_("come odds %(n)s"), N_("don't come odds %(n)s"),
         N_("big %(n)s"), N_("hard %(n)s"))

PIT = PitPart(panel=CrapsPanel, describe=describe, view=view, package="tabled.games.craps",
              stylesheet="pit.css", phrase=phrase, history=history,
              display_template="display.html", display_view=display.view,
              display_stylesheet="display.css")
