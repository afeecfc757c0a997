"""Craps (docs/rules/craps.md): the game's package and its declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its regulated options, :mod:`.odds` its
exact odds; the other layers' parts are named in :data:`GAME` and loaded only by them.
"""

from __future__ import annotations

from tabled.games.craps.odds import craps_odds, markdown
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import CrapsTable
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(
    name="craps",
    title="Craps",
    summary="an electronic dice sensor; Pass, Don't Pass, Come, Field, Big 6/8 and the rest",
    options=CrapsOptions,
    table=CrapsTable,
    odds=craps_odds,
    odds_markdown=markdown,
    # the stickman's call of a throw: on a come-out roll natural (7 or 11), craps (2, 3, 12) or
    # point (a point is set); with a point on, seven_out, point_made or no_decision
    declarations=("natural", "craps", "point", "seven_out", "point_made", "no_decision"),
    parts={"integrity": "tabled.games.craps.integrity:INTEGRITY"},
)
