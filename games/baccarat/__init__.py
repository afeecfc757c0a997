"""Baccarat (docs/rules/baccarat.md, dispatch 67/2007): the game's package and its declaration.

:mod:`.rules` is the rules core (pure), :mod:`.options` its regulated options, :mod:`.odds` its
exact odds (loaded only when asked); the other layers' parts are named in :data:`GAME` and
loaded only by them.
"""

from __future__ import annotations

from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(
    name="baccarat",
    title="Baccarat",
    summary="a shoe or a shuffler-dealer; Player, Banker, Tie and pairs (dispatch 67/2007)",
    options=BaccaratOptions,
    streams="tabled.games.baccarat.streams:streams",  # what the games conformance kit plays
    # the rules core, loaded with the first table
    table="tabled.games.baccarat.rules:BaccaratTable",
    odds="tabled.games.baccarat.odds:baccarat_odds",
    odds_markdown="tabled.games.baccarat.odds:markdown",
    # the dealer's call of a hand: the winner
    declarations=("banker", "player", "tie"),
    # its part of the contract: the typed outcome record and its part of the outcome schema
    record=BaccaratOutcome,
    schema="tabled.games.baccarat:outcome.schema.json",
    option_values={"method": "1|2", "commission": "five_percent|half_on_four",
                   "last_hand": "this|one_more", "decks": "6..12"},
    odds_help="Baccarat: the first hand of a full shoe",
    parts={
        "integrity": "tabled.games.baccarat.integrity:INTEGRITY",
        "pit": "tabled.games.baccarat.pit:PIT",
        "demo": "tabled.games.baccarat.demo:DEMO",
        "console": "tabled.games.baccarat.console:CONSOLE",
        # ``tabled roads``: write_roads(options, lines, out, err) -> exit status
        "roads": "tabled.games.baccarat.roads:write_roads",
    },
)
