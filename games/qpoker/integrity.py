"""Q Poker's integrity part (:class:`tabled.games.parts.integrity.IntegrityPart`,
docs/integrity.md): every hand's class and the dealer's qualifying as rates of the exact odds,
the dealer's call of the qualifying against the round.

Owns how a Q Poker outcome record is classified for the monitors; never imports the pit. Pure:
it reads outcome records only, after the reveal, so no dealer card is ever seen before it.
"""

from __future__ import annotations

from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.parts.integrity import IntegrityPart, Observation, Pace, Rate, RateGroup
from tabled.games.parts.pit import N_
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.record import QPokerOutcome

_CLASSES = (Rate("straight_flush", N_("straight flushes")),
            Rate("three_of_a_kind", N_("three of a kinds")), Rate("straight", N_("straights")),
            Rate("flush", N_("flushes")), Rate("pair", N_("pairs")),
            Rate("high_card", N_("high cards")))
_CLASS_INDEX = {rate.name: i for i, rate in enumerate(_CLASSES)}
_QUALIFIES = RateGroup("round", (Rate("dealer_qualifies",
                                      N_("rounds where the dealer qualifies")),))


def rates(options: Any) -> tuple[RateGroup, ...]:
    """Each hand's class (every position with a bet and the dealer hold a hand each round),
    and, once a round, whether the dealer qualifies."""
    assert isinstance(options, QPokerOptions)
    return (RateGroup("hand", _CLASSES, float(options.positions + 1)), _QUALIFIES)


def observe(record: OutcomeRecord) -> list[list[Observation]] | None:
    """A complete round's hand classes (the seats', the dealer's last) and whether the dealer
    qualifies."""
    if not isinstance(record, QPokerOutcome) or record.status != "complete":
        return None
    result = record.result
    dealer = result.dealer
    hands: list[Observation] = []
    # every hand dealt is a random three cards, a void seat's too (Art. 11.4: no bet, still
    # dealt); the dealer's last
    for seat in result.seats.values():
        index = _CLASS_INDEX.get(str(seat.hand))
        if index is not None:
            hands.append(index)
    index = _CLASS_INDEX.get(str(dealer.hand))
    if index is not None:
        hands.append(index)
    qualifies = dealer.qualifies
    return [hands, [(qualifies,)] if isinstance(qualifies, bool) else []]


def decided(record: OutcomeRecord) -> tuple[str, str]:
    """Whether the dealer qualifies (Art. 9.4), and the dealer's hand (revealed: the round is
    decided)."""
    assert isinstance(record, QPokerOutcome)
    dealer = record.result.dealer
    word = "dealer_qualifies" if dealer.qualifies else "dealer_does_not_qualify"
    return word, f"dealer {' '.join(dealer.cards)} ({dealer.hand})"


#: Q Poker's part. The pace is about 40 to 60 rounds an hour (docs/integrity.md, "Pace").
INTEGRITY = IntegrityPart(
    pace=Pace(60.0, 10.0, 120.0),
    rates=rates,
    observe=observe,
    decided=decided,
)
