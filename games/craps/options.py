"""Craps' regulated options (docs/rules/craps.md, reading R-C4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CrapsOptions:
    """Reading R-C4: whether the Big bets (Art. 9-11) work on a come-out roll."""

    big_bets_on_come_out: bool = True
