"""Q Poker's history view (games/parts/pit.py ``PitPart.history``): a table's rounds.

Owns what the pit's history shows of a Q Poker table's recorded rounds: the dealer's hand and
whether it qualified, each seat's hand and its bets. Pure: it reads outcome records only, so a
dealer card shown here is one the outcome named (a dealer card never reaches the history before
its round's outcome).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.parts.pit import given, pays
from tabled.games.qpoker.record import QPokerOutcome


def history(outcomes: Sequence[OutcomeRecord]) -> dict[str, Any]:
    """The rounds, newest first; a void round names its article and shows what it dealt."""
    rounds = []
    for outcome in outcomes:
        if not isinstance(outcome, QPokerOutcome):
            continue
        dealer = outcome.result.dealer
        seats = []
        for key, seat in sorted(outcome.result.seats.items(), key=lambda kv: int(kv[0])):
            bets = outcome.bets.get(key)
            seats.append({"seat": key, "cards": list(seat.cards), "hand": seat.hand,
                          "status": seat.status,
                          "dobo": pays(bets.dobo) if bets else None,
                          "play": pays(bets.play) if bets else None})
        rounds.append({"round": outcome.round, "status": outcome.status,
                       "article": given(outcome.article),
                       "void_reason": given(outcome.void_reason),
                       "dealer": {"cards": list(dealer.cards), "hand": dealer.hand,
                                  "qualifies": dealer.qualifies},
                       "seats": seats})
    return {"rounds": list(reversed(rounds))}
