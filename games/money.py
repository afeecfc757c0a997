"""Settlement of concrete wagers in integer minor units (docs/rules/README.md "Money").

The outcome records say what happened to each kind of bet (``result`` and ``pays``); this module
turns one such result and a stake into money. Amounts are integers in minor units, never floats.
Where a ratio does not divide evenly, the amount paid to the player is rounded down to the minor
unit and the fraction dropped is reported in ``rounding`` (Reading R-M1: a fold's returned half is
rounded the same way, since it is also an amount paid to the player).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tabled.contract.outcome import BetResult
from tabled.games.errors import RulesError

#: Minor units in one major currency unit (avos in a pataca, cents in a dollar).
MINOR_PER_MAJOR = 100


class SettlementError(RulesError):
    """A stake or bet result that cannot be settled (a negative stake, a win with no ratio)."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """Money for one wager: ``paid`` goes to the player (stake returned plus winnings), ``net`` is
    the player's gain (negative on a loss), ``stays`` says the wager remains on the layout
    (``open``/``off``), and ``rounding`` is the fraction of a minor unit dropped by rounding
    down."""

    stake: int
    paid: int
    net: int
    stays: bool
    rounding: Fraction
    article: str | None


def settle(bet: BetResult, stake: int, *, minor_per_major: int = MINOR_PER_MAJOR) -> Settlement:
    """Settle ``stake`` minor units on a bet whose result is ``bet``.

    A Big bet (``bet.unit`` set, Reading R-C2) pays its per-unit ratio for each whole unit of the
    stake and 1:1 for the remainder below one unit.
    """
    if isinstance(stake, bool) or not isinstance(stake, int) or stake < 0:
        raise SettlementError(f"stake {stake!r} is not a non-negative integer of minor units")
    nothing = Fraction(0)
    match bet.result:
        case "win":
            if bet.pays is None:
                raise SettlementError("a winning bet needs its pays ratio")
            if bet.unit is not None:
                unit = bet.unit * minor_per_major
                exact = (stake // unit) * unit * bet.pays + (stake % unit)
            else:
                exact = stake * bet.pays
            winnings = exact.numerator // exact.denominator
            return Settlement(stake, stake + winnings, winnings, False, exact - winnings,
                              bet.article)
        case "lose":
            return Settlement(stake, 0, -stake, False, nothing, bet.article)
        case "fold":
            half = Fraction(stake, 2)
            paid = stake // 2
            return Settlement(stake, paid, paid - stake, False, half - paid, bet.article)
        case "push" | "void":
            return Settlement(stake, stake, 0, False, nothing, bet.article)
        case "open" | "off":
            return Settlement(stake, 0, 0, True, nothing, bet.article)
    raise SettlementError(f"unknown bet result {bet.result!r}")
