"""Q Poker in words (``tabled console``, the demos' lines): its ``console`` part.

Owns how a person reads a round's outcome (the dealer's hand once revealed, each seat's Dobo
and Play) and what the dealer console shows of an open round: the seats, the dealer's cards
counted (never kept) until the deal of three is complete (Art. 7), and why a reveal needs the
dealer's confirmation (:class:`tabled.games.parts.demo.ConsoleVocabulary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabled.games.parts.demo import ConsoleVocabulary, SeatedConsole, bet_result


def headline(outcome: Mapping[str, Any]) -> str:
    """``round    4  dealer 9S 9D 2C pair (qualifies) | seat 1 ...: dobo lose, play win 1:1``."""
    rnd, result, bets = outcome["round"], outcome["result"], outcome.get("bets") or {}
    dealer = result["dealer"]
    seats = []
    for seat, info in sorted(result["seats"].items(), key=lambda kv: int(kv[0])):
        seat_bets = bets.get(seat, {})
        seats.append(f"seat {seat} {info['hand']}: dobo {bet_result(seat_bets.get('dobo'))}, "
                     f"play {bet_result(seat_bets.get('play'))}")
    qualifies = "qualifies" if dealer["qualifies"] else "does not qualify"
    return (f"round {rnd:>4}  dealer {' '.join(dealer['cards'])} {dealer['hand']} "
            f"({qualifies}) | " + " | ".join(seats))


CONSOLE = ConsoleVocabulary(
    headline=headline,
    bets_by_seat=True,
    seated=SeatedConsole(
        dealer_cards=3,  # a hand is three cards (Art. 7)
        early_reveal="the deal is not complete: a reveal now voids the round (qpoker.art11.1)",
        undecided="seat {seats} has not decided: a player who has not decided folds (Art. 9.3)",
    ),
)
