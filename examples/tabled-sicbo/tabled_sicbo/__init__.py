"""Sic bo (骰寶, three dice; RULES.md), a game outside tabled's tree: its package and declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its pay table, :mod:`.odds` its exact
odds; tabled finds :data:`GAME` through this package's ``tabled.games`` entry point
(pyproject.toml). The other layers' parts are named in :data:`GAME` and loaded only by them.
The three-dice sensor is a device family of its own (:mod:`.sensor`). This module imports only
the rules core: a table's daemon loads it.
"""

from __future__ import annotations

from tabled.games.registry import GameDeclaration

from tabled_sicbo.odds import markdown, sicbo_odds
from tabled_sicbo.options import SicBoOptions
from tabled_sicbo.rules import SicBoTable

#: What the dealer calls out on a throw (Art. 12): the pit compares it with the outcome.
DECLARATIONS = ("small", "big", "triple")

GAME = GameDeclaration(
    name="sicbo",
    title="Sic Bo",
    summary="three dice (骰寶): Big/Small, totals, triples, doubles, combinations, numbers "
            "(example game)",
    options=SicBoOptions,
    table=SicBoTable,
    odds=sicbo_odds,
    odds_markdown=markdown,
    declarations=DECLARATIONS,
    # the other layers' parts, loaded only by the layer that asks (tabled.games.parts)
    parts={"pit": "tabled_sicbo.pit:PIT", "integrity": "tabled_sicbo.integrity:INTEGRITY"},
)

__all__ = ["DECLARATIONS", "GAME"]
