"""Q Poker (docs/rules/qpoker.md): the game's package and its declaration.

:mod:`.rules` is the rules core (pure), :mod:`.hands` its hand ranking, :mod:`.options` its
regulated options, :mod:`.odds` its exact odds; the other layers' parts are named in
:data:`GAME` and loaded only by them.
"""

from __future__ import annotations

from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.record import QPokerOutcome
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(
    name="qpoker",
    title="Q Poker",
    summary="a shuffler-dealer dealing every seat; the dealer's cards withheld until reveal",
    options=QPokerOptions,
    streams="tabled.games.qpoker.streams:streams",  # what the games conformance kit plays
    table="tabled.games.qpoker.rules:QPokerTable",  # the rules core, loaded with the first table
    odds="tabled.games.qpoker.odds:qpoker_odds",
    odds_markdown="tabled.games.qpoker.odds:markdown",
    # whether the dealer qualifies (Art. 9.4)
    declarations=("dealer_qualifies", "dealer_does_not_qualify"),
    # Q Poker deals every card to a seat, and a round's round_start lists the seats with a bet
    required={"card": ("seat",), "round_start": ("seats",)},
    # its part of the contract: the typed outcome record and its part of the outcome schema
    record=QPokerOutcome,
    schema="tabled.games.qpoker:outcome.schema.json",
    option_values={"positions": "7..20"},
    odds_help="Q Poker Play: under the best fold strategy",
    parts={
        "integrity": "tabled.games.qpoker.integrity:INTEGRITY",
        "pit": "tabled.games.qpoker.pit:PIT",
        "demo": "tabled.games.qpoker.demo:DEMO",
        "console": "tabled.games.qpoker.console:CONSOLE",
    },
)
