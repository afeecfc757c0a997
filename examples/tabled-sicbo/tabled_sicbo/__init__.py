"""Sic bo (骰寶, three dice; RULES.md), a game outside tabled's tree: its package and declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its pay table, :mod:`.odds` its exact
odds; tabled finds :data:`GAME` through this package's ``tabled.games`` entry point
(pyproject.toml). The other layers' parts are named in :data:`GAME` and loaded only by them.
The three-dice sensor is a device family of its own (:mod:`.sensor`). This module imports only
the rules core: a table's daemon loads it.
"""

from __future__ import annotations

from dataclasses import fields

from tabled.games.registry import GameDeclaration

from tabled_sicbo.options import SicBoOptions
from tabled_sicbo.record import SicBoOutcome
from tabled_sicbo.rules import check_roll

#: What the dealer calls out on a throw (Art. 12): the pit compares it with the outcome.
DECLARATIONS = ("small", "big", "triple")

GAME = GameDeclaration(
    name="sicbo",
    title="Sic Bo",
    summary="three dice (骰寶): Big/Small, totals, triples, doubles, combinations, numbers "
            "(example game)",
    options=SicBoOptions,
    table="tabled_sicbo.rules:SicBoTable",
    # its exact odds, loaded only when asked (tabled odds)
    odds="tabled_sicbo.odds:sicbo_odds",
    odds_markdown="tabled_sicbo.odds:markdown",
    declarations=DECLARATIONS,
    # a throw is three dice (Art. 1), refused by the parser otherwise where the game is known
    checks={"roll": check_roll},
    # its part of the contract: the typed outcome record and its part of the outcome schema
    record=SicBoOutcome,
    schema="tabled_sicbo:outcome.schema.json",
    option_values={"odd_even": "true|false",
                   **{f.name: "N (of N to 1)" for f in fields(SicBoOptions)
                      if f.name != "odd_even"}},
    streams="tabled_sicbo.streams:streams",  # what the games conformance kit plays
    # the other layers' parts, loaded only by the layer that asks (tabled.games.parts)
    parts={"pit": "tabled_sicbo.pit:PIT", "integrity": "tabled_sicbo.integrity:INTEGRITY",
           "demo": "tabled_sicbo.demo:DEMO", "console": "tabled_sicbo.console:CONSOLE"},
)

__all__ = ["DECLARATIONS", "GAME"]
