"""Craps' history view (games/parts/pit.py ``PitPart.history``): rolls by shooter.

Owns how the pit's history groups a craps table's recorded rolls: a shooter keeps the dice
until a seven-out (a seven thrown while a point is on), so each turn is the rolls up to and
including one. Each roll shows its settled bets; the bets still open are counted, not listed.
Pure: outcome records in, plain data out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.craps.record import CrapsOutcome
from tabled.games.parts.pit import given


def bet_label(name: str) -> str:
    """A bet's name as the floor says it: ``dont_come_odds_4`` → ``Don't Come Odds 4``,
    ``hard8`` → ``Hard 8``, ``big7`` → ``Big 7``."""
    words = []
    for word in name.split("_"):
        head = word.rstrip("0123456789")
        words.append("Don't" if head == "dont" else head.capitalize())
        if head != word:
            words.append(word[len(head):])
    return " ".join(w for w in words if w)


def seven_out(outcome: CrapsOutcome) -> bool:
    """The roll ends the shooter's turn: a seven with a point on."""
    result = outcome.result
    return outcome.status == "complete" and result.total == 7 and (
        result.point_before is not None or outcome.point_unknown is True)


def roll(outcome: CrapsOutcome) -> dict[str, Any]:
    result = outcome.result
    settled = [{"bet": name, "label": bet_label(name), "result": bet.result,
                "pays": given(bet.pays)}
               for name, bet in outcome.bets.items() if bet.result != "open"]
    return {"round": outcome.round, "status": outcome.status,
            "no_roll": outcome.no_roll is True,
            "dice": list(result.dice) if result.dice else None, "total": result.total,
            "point_before": result.point_before, "point_after": result.point_after,
            "hard": result.hard is True, "article": given(outcome.article),
            "void_reason": given(outcome.void_reason), "seven_out": seven_out(outcome),
            "settled": settled, "open": sum(1 for b in outcome.bets.values()
                                            if b.result == "open")}


def history(outcomes: Sequence[OutcomeRecord]) -> dict[str, Any]:
    """The rolls (in the table's order) grouped by shooter, newest shooter and roll first.
    A turn's ``first`` and ``last`` are its rounds; ``ended``: it ended with a seven-out
    (else it goes on past the stretch shown); ``points``: the points the shooter made."""
    turns: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for outcome in outcomes:
        if not isinstance(outcome, CrapsOutcome):
            continue
        current.append(roll(outcome))
        if current[-1]["seven_out"]:
            turns.append(_turn(current, ended=True))
            current = []
    if current:
        turns.append(_turn(current, ended=False))
    return {"shooters": list(reversed(turns)),
            "rolls": sum(len(t["rolls"]) for t in turns)}


def _turn(rolls: list[dict[str, Any]], *, ended: bool) -> dict[str, Any]:
    points = sum(1 for r in rolls if r["point_before"] is not None
                 and r["total"] == r["point_before"] and r["point_after"] is None)
    return {"first": rolls[0]["round"], "last": rolls[-1]["round"], "ended": ended,
            "points": points, "rolls": list(reversed(rolls))}
