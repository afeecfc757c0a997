"""Craps (docs/rules/craps.md): the game's package and its declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its regulated options, :mod:`.odds` its
exact odds (loaded only when asked); the other layers' parts are named in :data:`GAME` and
loaded only by them.
"""

from __future__ import annotations

from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.record import CrapsOutcome
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(
    name="craps",
    title="Craps",
    summary="an electronic dice sensor; Pass, Don't Pass, Come, Field, Big 6/8 and the rest",
    options=CrapsOptions,
    streams="tabled.games.craps.streams:streams",  # what the games conformance kit plays
    table="tabled.games.craps.rules:CrapsTable",  # the rules core, loaded with the first table
    odds="tabled.games.craps.odds:craps_odds",
    odds_markdown="tabled.games.craps.odds:markdown",
    # the stickman's call of a throw: on a come-out roll natural (7 or 11), craps (2, 3, 12) or
    # point (a point is set); with a point on, seven_out, point_made or no_decision
    declarations=("natural", "craps", "point", "seven_out", "point_made", "no_decision"),
    # its part of the contract: a throw is two dice (Art. 1; data, so that its streams' own
    # decoder checks it as it decodes); the typed outcome record and its part of the schema
    dice=2,
    record=CrapsOutcome,
    schema="tabled.games.craps:outcome.schema.json",
    option_values={"big_bets_on_come_out": "true|false"},
    parts={
        "integrity": "tabled.games.craps.integrity:INTEGRITY",
        "pit": "tabled.games.craps.pit:PIT",
        "demo": "tabled.games.craps.demo:DEMO",
        "console": "tabled.games.craps.console:CONSOLE",
    },
)
