"""Q Poker's outcome record as published (docs/contract.md "Outcome records"), typed: what a
receiver decodes (``tabled.games.registry.decode_outcome``), and its part of the outcome schema
(``outcome.schema.json`` beside this module, composed into the contract's by the registry).

It owns the record's shape only: pure, no I/O; the rules core (:mod:`.rules`) makes the records.
"""

from __future__ import annotations

from typing import ClassVar, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from tabled.contract.outcome import Bet, CardCode, GameRecord, SeatKey

HandClass: TypeAlias = Literal["straight_flush", "three_of_a_kind", "straight", "flush", "pair",
                               "high_card"]


class QPokerHand(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A position's cards in dealing order, its hand (null until three are known) and the cards
    exposed by mistake (Art. 11.2), when there were any."""

    #: (more than three only in a void round: a position dealt twice, Art. 1)
    cards: tuple[CardCode, ...]
    hand: HandClass | None
    exposed: tuple[CardCode, ...] | UnsetType = UNSET


class QPokerDealer(QPokerHand, frozen=True, kw_only=True, gc=False):
    #: Art. 9.4: Q-high or better; null while the hand is not known.
    qualifies: bool | None


class QPokerSeat(QPokerHand, frozen=True, kw_only=True, gc=False):
    #: ``void``: dealt without a bet (Art. 11.4).
    status: Literal["active", "void"]


class QPokerResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    dealer: QPokerDealer
    seats: dict[SeatKey, QPokerSeat]


class QPokerSeatBets(msgspec.Struct, frozen=True, kw_only=True, gc=False,
                     forbid_unknown_fields=True):
    dobo: Bet
    play: Bet


class QPokerOutcome(GameRecord, frozen=True, kw_only=True, gc=False, tag="qpoker"):
    MAPPED: ClassVar = {"bets": QPokerSeatBets, "result.seats": QPokerSeat}

    result: QPokerResult
    bets: dict[SeatKey, QPokerSeatBets]
