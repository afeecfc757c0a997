"""Baccarat (docs/rules/baccarat.md, dispatch 67/2007): the game's package and its declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its regulated options, :mod:`.odds` its
exact odds; the other layers' parts are named in :data:`GAME` and loaded only by them.
"""

from __future__ import annotations

from tabled.games.baccarat.odds import baccarat_odds, markdown
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.rules import BaccaratTable
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(
    name="baccarat",
    title="Baccarat",
    summary="a shoe or a shuffler-dealer; Player, Banker, Tie and pairs (dispatch 67/2007)",
    options=BaccaratOptions,
    table=BaccaratTable,
    odds=baccarat_odds,
    odds_markdown=markdown,
    # the dealer's call of a hand: the winner
    declarations=("banker", "player", "tie"),
    parts={"integrity": "tabled.games.baccarat.integrity:INTEGRITY"},
)
