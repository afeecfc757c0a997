"""Craps' integrity part (:class:`tabled.games.parts.integrity.IntegrityPart`, docs/integrity.md):
the totals of a throw as rates of the exact odds, the two dice, the stickman's call against the
throw, the pace in rolls.

Owns how a craps outcome record is classified for the monitors; never imports the pit. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.craps.record import CrapsOutcome
from tabled.games.parts.integrity import IntegrityPart, Observation, Pace, Rate, RateGroup
from tabled.games.parts.pit import N_

#: The totals of a throw, each a rate of ``tabled odds`` (its key is the total).
TOTALS = tuple(str(total) for total in range(2, 13))
#: Each total as a report names it (a literal each, for the pages' catalogue).
_SPOKEN = (N_("totals of 2"), N_("totals of 3"), N_("totals of 4"), N_("totals of 5"),
           N_("totals of 6"), N_("totals of 7"), N_("totals of 8"), N_("totals of 9"),
           N_("totals of 10"), N_("totals of 11"), N_("totals of 12"))
_GROUPS = (RateGroup("roll", tuple(Rate(total, spoken, f"total {total}")
                                   for total, spoken in zip(TOTALS, _SPOKEN, strict=True))),)


def rates(options: Any) -> tuple[RateGroup, ...]:
    """One observation a roll: the index of its total (2 to 12)."""
    return _GROUPS


def observe(record: OutcomeRecord) -> list[list[Observation]] | None:
    """A thrown roll's total; a no-roll or a void is not a throw."""
    if not isinstance(record, CrapsOutcome) or record.status != "complete":
        return None
    total = record.result.total
    if total is None or record.no_roll is True:
        return None
    return [[total - 2]]


def throw(record: OutcomeRecord) -> Sequence[int] | None:
    """The faces of a thrown roll's two dice."""
    if not isinstance(record, CrapsOutcome) or record.status != "complete":
        return None
    return record.result.dice


def decided(record: OutcomeRecord) -> tuple[str, str]:
    """The stickman's call of the throw (the declaration's words) and the throw:
    ``("point_made", "4-4 (8), point 8")``."""
    assert isinstance(record, CrapsOutcome)
    if record.no_roll is True:
        return "no_roll", "no roll"
    result = record.result
    total, point = result.total, result.point_before
    dice = result.dice
    account = f"{dice[0]}-{dice[1]} ({total})" if dice is not None else f"{total}"
    if point is None:
        word = "natural" if total in (7, 11) else "craps" if total in (2, 3, 12) else "point"
    else:
        word = "seven_out" if total == 7 else "point_made" if total == point \
            else "no_decision"
        account += f", point {point}"
    return word, account


#: Craps' part. The pace is about 100 rolls an hour at a busy table (docs/integrity.md,
#: "Pace"): calibrated for 120.
INTEGRITY = IntegrityPart(
    pace=Pace(120.0, 30.0, 250.0),
    rates=rates,
    observe=observe,
    decided=decided,
    dice=2,
    throw=throw,
    unit="rolls",
)
