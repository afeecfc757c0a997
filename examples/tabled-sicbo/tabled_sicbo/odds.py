"""Exact sic bo odds (RULES.md "House edges"): the 216 throws and the house edge of every wager.

This module owns the analysis behind ``tabled odds --game sicbo``. Each of the 216 equally
likely throws is decided by feeding a roll to a real :class:`~tabled_sicbo.rules.SicBoTable`
built with the table's pay table, and each wager settled with :func:`tabled.games.money.settle`,
so the edges are those of the code that runs at the table, not of a second model of the rules.
Every wager is decided on the throw it is made for: its edge is one sum over 216 throws, an
exact ``Fraction``. It never simulates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from types import MappingProxyType
from typing import Any, Final, cast

from tabled.contract.events import Roll
from tabled.contract.outcome import BetResult, Outcome
from tabled.games.money import settle
from tabled.games.odds.model import BetOdds, Odds, exact
from tabled.games.odds.render import percent

from tabled_sicbo.options import OUTCOMES, SicBoOptions
from tabled_sicbo.rules import SICBO, THROWS, TOTAL_OPTION, SicBoResult, SicBoTable

#: A stake every declared pay settles exactly (pays are whole "N to 1").
STAKE: Final = 100
_ONE_THROW: Final = Fraction(1, OUTCOMES)
_DEFAULT_OPTIONS: Final = SicBoOptions()


def throws(options: SicBoOptions = _DEFAULT_OPTIONS) -> tuple[Outcome, ...]:
    """The table's outcome for each of the 216 throws."""
    table = SicBoTable(options)
    outcomes = []
    for dice in THROWS:
        [outcome] = table.feed(Roll(dice=cast(Any, dice)))
        assert isinstance(outcome, Outcome)
        outcomes.append(outcome)
    return tuple(outcomes)


def describe(key: str, options: SicBoOptions = _DEFAULT_OPTIONS) -> tuple[str, str, str]:
    """(a label, the article, what it pays) of a bet key, e.g. ``("Total 4", "sicbo.art5",
    "50 to 1")``."""
    kind, _, rest = key.partition("_")
    match kind:
        case "small" | "big":
            return kind.capitalize() + (" (4-10)" if kind == "small" else " (11-17)"), \
                "sicbo.art3", "1 to 1"
        case "odd" | "even":
            return kind.capitalize(), "sicbo.art4", "1 to 1"
        case "total":
            pays = getattr(options, TOTAL_OPTION[int(rest)])
            return f"Total {rest}", "sicbo.art5", f"{pays} to 1"
        case "any":
            return "Any triple", "sicbo.art7", f"{options.any_triple} to 1"
        case "triple":
            return f"Triple {rest}s", "sicbo.art6", f"{options.specific_triple} to 1"
        case "double":
            return f"Double {rest}s", "sicbo.art8", f"{options.specific_double} to 1"
        case "combo":
            a, b = rest.split("_")
            return f"Combination {a}-{b}", "sicbo.art9", f"{options.combination} to 1"
        case "single":
            return (f"Single {rest}", "sicbo.art10",
                    f"1/{options.single_two}/{options.single_three} to 1")
    raise KeyError(key)


@dataclass(frozen=True, slots=True)
class SicBoOdds(Odds):
    """Sic bo's odds: ``totals`` is the distribution of a throw's total (3 to 18), ``wins`` the
    chance each wager wins (a single number: that it shows at least once)."""

    totals: Mapping[int, Fraction]
    wins: Mapping[str, Fraction]

    def preface(self) -> list[str]:
        return [f"{OUTCOMES} equally likely throws of three dice"]

    def notes(self) -> list[str]:
        return ["every wager is decided on its throw; a void round (RULES.md Art. 2) returns "
                "every stake and is not counted"]

    def extra_json(self) -> dict[str, Any]:
        return {"wins": {key: float(p) for key, p in self.wins.items()}}


@cache
def sicbo_odds(options: SicBoOptions = _DEFAULT_OPTIONS) -> SicBoOdds:
    """The exact odds of every bet key of a table run with ``options``."""
    totals = dict.fromkeys(range(3, 19), Fraction(0))
    classes = dict.fromkeys(("small", "big", "triple", "pair", "three_different"), Fraction(0))
    net: dict[str, Fraction] = {}
    wins: dict[str, Fraction] = {}
    for outcome in throws(options):
        result = outcome.result
        assert isinstance(result, SicBoResult) and result.dice is not None
        assert result.total is not None
        totals[result.total] += _ONE_THROW
        kinds = len(set(result.dice))
        classes[{1: "triple", 2: "pair", 3: "three_different"}[kinds]] += _ONE_THROW
        if kinds > 1:
            classes["small" if result.total <= 10 else "big"] += _ONE_THROW
        for key, bet in outcome.bets.items():
            assert isinstance(bet, BetResult)
            money = settle(bet, STAKE)
            if money.rounding or money.stays:
                raise ArithmeticError(f"{key}: {bet} is not decided exactly on its throw")
            net[key] = net.get(key, Fraction(0)) + money.net * _ONE_THROW
            wins[key] = wins.get(key, Fraction(0)) + (_ONE_THROW if bet.result == "win" else 0)
    bets = {key: BetOdds(-value / STAKE, describe(key, options)[1]) for key, value in net.items()}
    probabilities = {**classes, **{f"total_{t}": p for t, p in totals.items()}}
    return SicBoOdds(
        game=SICBO, options=options, decks=None,
        probabilities=MappingProxyType(probabilities), bets=MappingProxyType(bets),
        totals=MappingProxyType(totals), wins=MappingProxyType(wins),
    )


def markdown() -> str:
    """The table of RULES.md "House edges" (``tabled odds --game sicbo --markdown``), for the
    default pay table: one row per kind of wager (a wager on each number, total pair or
    combination has the same figures as its siblings)."""
    result = sicbo_odds()
    lines = ["| bet keys | wager | article | pays | wins | house edge | exact |",
             "|---|---|---|---|---:|---:|---:|"]
    seen: set[tuple[str, str, str]] = set()
    for key, bet in result.bets.items():
        label, article, pays = describe(key)
        group = _group(key)
        row = (group, pays, exact(bet.house_edge))
        if row in seen:
            continue
        seen.add(row)
        keys = _group_keys(key, result)
        wager = label if keys == f"`{key}`" else _plural(key)
        lines.append(f"| {keys} | {wager} | "
                     f"{article} | {pays} | {percent(result.wins[key], 2)} | "
                     f"{percent(bet.house_edge)} | {exact(bet.house_edge)} |")
    return "\n".join(lines)


def _group(key: str) -> str:
    kind = key.split("_")[0]
    if kind == "total":
        total = int(key.split("_")[1])
        return f"total_{min(total, 21 - total)}"
    return kind if kind in ("triple", "double", "combo", "single") else key


def _group_keys(key: str, result: SicBoOdds) -> str:
    if key.startswith("total_"):
        total = int(key.split("_")[1])
        return f"`total_{total}`, `total_{21 - total}`"
    kind = key.split("_")[0]
    if kind in ("triple", "double", "single"):
        return f"`{kind}_1` … `{kind}_6`"
    if kind == "combo":
        return "`combo_1_2` … `combo_5_6` (15)"
    return f"`{key}`"


def _plural(key: str) -> str:
    kind = key.split("_")[0]
    return {"total": f"Total {key.split('_')[1]} or {21 - int(key.split('_')[1])}",
            "triple": "Specific triple", "double": "Specific double",
            "combo": "Two-dice combination", "single": "Single number"}[kind]


__all__ = ["STAKE", "SicBoOdds", "describe", "markdown", "sicbo_odds", "throws"]
