"""Sic bo's integrity part (tabled.games.parts.integrity, docs/integrity.md): a throw's class and
total as rates of the exact odds, the three dice, the dealer's call against the throw, the pace.

Owns how a sic bo outcome record is classified for the pit's monitors; never imports the pit.
Pure: every rate is a key of :func:`tabled_sicbo.odds.sicbo_odds`' ``probabilities``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from tabled.contract.outcome import OutcomeRecord
from tabled.games.parts.integrity import IntegrityPart, Observation, Pace, Rate, RateGroup

from tabled_sicbo.published import call, throw_of

#: A throw is Small, Big or a triple (they part the 216 throws, Art. 3.3).
CLASSES: Final = ("small", "big", "triple")
_CLASS_RATES: Final = (Rate("small", "Small throws (4-10, no triple)", "Small"),
                       Rate("big", "Big throws (11-17, no triple)", "Big"),
                       Rate("triple", "triples", "triple"))
_TOTAL_RATES: Final = tuple(Rate(f"total_{t}", f"totals of {t}", f"total {t}")
                            for t in range(3, 19))
_GROUPS: Final = (RateGroup("throw", _CLASS_RATES), RateGroup("throw", _TOTAL_RATES))


def rates(options: Any) -> tuple[RateGroup, ...]:
    """Two observations a throw: its class and its total (the pay table changes neither)."""
    return _GROUPS


def observe(record: OutcomeRecord) -> list[list[Observation]] | None:
    """A read throw's class and total; a void round is not a throw."""
    dice = throw_of(record)
    if dice is None:
        return None
    return [[CLASSES.index(call(dice))], [sum(dice) - 3]]


def throw(record: OutcomeRecord) -> Sequence[int] | None:
    """The faces of a read throw's three dice."""
    return throw_of(record)


def decided(record: OutcomeRecord) -> tuple[str, str]:
    """The dealer's call of the throw (the declaration's words) and the throw:
    ``("big", "6-6-5 (17)")``."""
    dice = throw_of(record)
    if dice is None:
        return "void", "no throw"
    return call(dice), f"{dice[0]}-{dice[1]}-{dice[2]} ({sum(dice)})"


#: Sic bo's part. A live table throws about once a minute: calibrated for 60 an hour.
INTEGRITY = IntegrityPart(
    pace=Pace(60.0, 15.0, 150.0),
    rates=rates,
    observe=observe,
    decided=decided,
    dice=3,
    throw=throw,
    unit="throws",
)

__all__ = ["CLASSES", "INTEGRITY", "decided", "observe", "rates", "throw"]
