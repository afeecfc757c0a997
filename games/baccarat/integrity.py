"""Baccarat's integrity part (:class:`tabled.games.parts.integrity.IntegrityPart`,
docs/integrity.md): the winners, naturals and pairs as rates of the exact odds, the dealer's
call of the winner against the hand, a shoe whose order the shoe monitors watch.

Owns how a baccarat outcome record is classified for the monitors; never imports the pit. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.parts.integrity import IntegrityPart, Observation, Pace, Rate, RateGroup
from tabled.games.parts.pit import N_

_WINNERS = ("banker", "player", "tie")
_GROUPS = (RateGroup("hand", (
    Rate("banker", N_("Banker wins")), Rate("player", N_("Player wins")), Rate("tie", N_("ties")),
    Rate("natural", N_("naturals")), Rate("player_pair", N_("Player pairs")),
    Rate("banker_pair", N_("Banker pairs")))),)


def rates(options: Any) -> tuple[RateGroup, ...]:
    """One observation a hand: which of the winner, a natural and the pairs occurred."""
    return _GROUPS


def _pair(cards: Sequence[str]) -> bool:
    return len(cards) >= 2 and cards[0][:1] == cards[1][:1]


def observe(record: OutcomeRecord) -> list[list[Observation]] | None:
    """A complete hand's winner, natural and pairs; a void or demonstration hand is not
    counted."""
    if not isinstance(record, BaccaratOutcome) or record.status != "complete" \
            or record.demo is True:
        return None  # a demonstration hand settles nothing (Art. 2.2): not counted
    result = record.result
    winner = result.winner
    if winner not in _WINNERS:
        return None
    pairs = [_pair(result.player_cards), _pair(result.banker_cards)]
    return [[(winner == "banker", winner == "player", winner == "tie",
              bool(result.natural), *pairs)]]


def decided(record: OutcomeRecord) -> tuple[str, str]:
    """The winner and the totals: ``("player", "Player 7, Banker 6")``."""
    assert isinstance(record, BaccaratOutcome)
    result = record.result
    return str(result.winner), (f"Player {result.player_total}, "
                                f"Banker {result.banker_total}")


#: Baccarat's part. The pace is 60-80 hands an hour at a squeeze table and up to 200 dealt
#: fast (docs/integrity.md, "Pace"): calibrated for 120.
INTEGRITY = IntegrityPart(
    pace=Pace(120.0, 20.0, 200.0),
    rates=rates,
    observe=observe,
    decided=decided,
    shoe=True,
)
