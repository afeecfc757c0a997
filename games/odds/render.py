"""The printed forms of the odds: ``tabled odds``'s table, and the Markdown of docs/rules/.

This module owns how :class:`~tabled.games.odds.model.Odds` read as text: the human table the
command prints, and the helpers each game's odds module builds the tables of docs/rules/ with (a
test checks that the documents hold exactly what each game's ``markdown`` returns, so they cannot
drift). It builds strings only; the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Final

from tabled.games.odds.model import Odds, exact
from tabled.games.options import declare

#: The one sentence that says what every edge means (also in ``--help`` and the docs).
CONVENTION: Final = (
    "house edge = the house's expected gain per unit staked on the wager, a push (tie, "
    "Don't Pass 12, returned odds) counting as a zero-return decision; positive favours the house"
)
def percent(value: Fraction, places: int = 4) -> str:
    """``Fraction(7, 495)`` -> ``"1.4141 %"``, rounded half away from zero, sign kept."""
    scaled = int(abs(value) * 100 * 10**places + Fraction(1, 2))
    whole, part = divmod(scaled, 10**places)
    sign = "-" if value < 0 and scaled else ""
    return f"{sign}{whole}.{part:0{places}d} %"


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]
) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if align else cell.ljust(width)
            for cell, width, align in zip(cells, widths, right, strict=True)
        ).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _options_text(result: Odds) -> str:
    return " ".join(f"{key}={str(value).lower()}" for key, value in declare(result.options).items())


def text(result: Odds) -> str:
    """The human-readable report ``tabled odds`` prints without ``--json``."""
    lines = [f"{result.game}: {_options_text(result)}"]
    lines += result.preface()
    lines += [CONVENTION, ""]
    lines += table(
        ("probability", "per round", "exact"),
        [(name, percent(p), exact(p)) for name, p in result.probabilities.items()],
        (False, True, False),
    )
    lines.append("")
    lines += table(
        ("bet", "house edge", "exact", "article"),
        [(name, percent(bet.house_edge), exact(bet.house_edge), bet.article)
         for name, bet in result.bets.items()],
        (False, True, False, False),
    )
    notes = result.notes()
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
