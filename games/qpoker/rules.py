"""Q Poker (docs/rules/qpoker.md, dispatch 89/2004): one table's rounds, from the deal to settled
bets, and the published form of its event stream.

This module owns a Q Poker round: the positions with a bet, the dealing order of Art. 7, the
single deck of Art. 1, the irregularities of Art. 11, the players' decisions (Art. 9.2-9.3) and
the settlement of Dobo (Art. 9.1, 10) and Play (Art. 9.4-9.7). Hands are ranked by
:mod:`tabled.games.qpoker.hands`. It also owns :class:`Publication`, which withholds
face-down
cards from the published stream until the rules open them.

It is pure: no I/O, no clock, no logging. It must never settle a round whose cards it does not
know, and never let a face-down card into the published stream before the rules open it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeGuard

from msgspec.structs import replace

from tabled.contract.events import (
    DEALER,
    EXPOSED,
    CardDealt,
    Decision,
    Declare,
    Event,
    Fault,
    HandDealt,
    Reveal,
    RoundStart,
    Seat,
    Void,
    Withheld,
    exposed_cards,
    lost_kind,
)
from tabled.contract.faults import (
    DEVICE_LOST,
    EVENT_NOT_APPLIED,
    NOT_APPLIED_CODE,
    NOT_APPLIED_TYPE,
    SHUFFLER_FAILURES,
)
from tabled.contract.outcome import FOR_ANOTHER_ROUND, BetResult, Game, Notice, Outcome, Output
from tabled.games.policy import GamePolicy, Loss
from tabled.games.qpoker.hands import HandClass, RankedHand, qualifies, rank_hand
from tabled.games.qpoker.options import QPokerOptions

#: The notice for dealing that arrives after its round was voided midway (see QPokerTable).
DEALT_AFTER_VOID: Final = "dealt_after_void"
ART1: Final = "qpoker.art1"
ART2: Final = "qpoker.art2"
ART9: Final = "qpoker.art9"
ART9_1: Final = "qpoker.art9.1"
ART9_2: Final = "qpoker.art9.2"
ART9_3: Final = "qpoker.art9.3"
ART9_5: Final = "qpoker.art9.5"
ART9_6: Final = "qpoker.art9.6"
ART9_7: Final = "qpoker.art9.7"
ART10: Final = "qpoker.art10"
ART11: Final = "qpoker.art11"
ART11_1: Final = "qpoker.art11.1"
ART11_3: Final = "qpoker.art11.3"
ART11_4: Final = "qpoker.art11.4"
ART11_5: Final = "qpoker.art11.5"
#: The articles a dealer's ``void`` may cite; any other reason is read as Art. 11.1.
DEALER_VOID_ARTICLES: Final = frozenset(f"qpoker.art11.{n}" for n in range(1, 6))

#: The extra field that marks a card or hand event as the identity of an earlier ``withheld``
#: placeholder, published once the rules open the cards (docs/contract.md, :class:`Publication`).
WITHHELD_MARK: Final = "withheld"

CARDS_PER_POSITION: Final = 3  # Art. 7
#: The shuffling machine's lost link is its failure too (Art. 11.5): the lost device's kind.
SHUFFLER_KIND: Final = "shuffler"

DealingMode: TypeAlias = Literal["card", "hand"]  # Art. 7(1) from the shoe, 7(2) from the machine
SeatStatus: TypeAlias = Literal["active", "void"]

# -- payouts (pre-built: every round reuses them) ----------------------------------------------

#: Art. 10: Dobo pays on the player's own hand; a high card loses it (Art. 9.1).
DOBO_PAYS: Final[Mapping[HandClass, Fraction]] = {
    HandClass.STRAIGHT_FLUSH: Fraction(40),
    HandClass.THREE_OF_A_KIND: Fraction(30),
    HandClass.STRAIGHT: Fraction(6),
    HandClass.FLUSH: Fraction(4),
    HandClass.PAIR: Fraction(1),
}
#: Art. 9.7: Play, when the player beats a qualifying dealer; any other hand pays 1:1.
PLAY_PAYS: Final[Mapping[HandClass, Fraction]] = {
    HandClass.STRAIGHT_FLUSH: Fraction(3),
    HandClass.THREE_OF_A_KIND: Fraction(2),
    HandClass.STRAIGHT: Fraction(3, 2),
    HandClass.FLUSH: Fraction(1),
    HandClass.PAIR: Fraction(1),
    HandClass.HIGH_CARD: Fraction(1),
}
_DOBO_RESULTS: Final[Mapping[HandClass, BetResult]] = {
    hand_class: (
        BetResult("win", ART10, DOBO_PAYS[hand_class])
        if hand_class in DOBO_PAYS
        else BetResult("lose", ART9_1)
    )
    for hand_class in HandClass
}
_PLAY_WINS: Final[Mapping[HandClass, BetResult]] = {
    hand_class: BetResult("win", ART9_7, ratio) for hand_class, ratio in PLAY_PAYS.items()
}
_PLAY_FOLDED: Final = BetResult("fold", ART9_3)
_PLAY_DEALER_DOES_NOT_QUALIFY: Final = BetResult("win", ART9_5, Fraction(1, 2))
_PLAY_DEALER_WINS: Final = BetResult("lose", ART9_6)
_NO_BET_ON_VOID_SEAT: Final = BetResult("void", ART11_4)


def dobo_result(hand_class: HandClass) -> BetResult:
    """Art. 9.1 and 10: the Dobo wager on a player's own hand of ``hand_class``."""
    return _DOBO_RESULTS[hand_class]


def play_result(player: RankedHand, dealer: RankedHand, played: bool) -> BetResult:
    """Art. 9.3-9.7: the Play wager of a player who played (or folded) against the dealer."""
    if not played:
        return _PLAY_FOLDED
    if not qualifies(dealer):
        return _PLAY_DEALER_DOES_NOT_QUALIFY
    if dealer.beats(player):
        return _PLAY_DEALER_WINS
    return _PLAY_WINS[player.hand_class]


# -- the outcome's result part -----------------------------------------------------------------


def _hand_dict(cards: tuple[str, ...], hand: RankedHand | None,
               exposed: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cards": list(cards),
        "hand": None if hand is None else hand.hand_class.label,
    }
    if exposed:  # Art. 11.2: a card shown by mistake is on the record, only when there was one
        out["exposed"] = list(exposed)
    return out


@dataclass(frozen=True, slots=True)
class SeatResult:
    """A player position's cards in dealing order, its hand (None until three are known),
    ``status`` (``void``: Art. 11.4, dealt without a bet) and the cards exposed (Art. 11.2)."""

    cards: tuple[str, ...]
    hand: RankedHand | None
    status: SeatStatus
    exposed: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The seat's part of the record: ``cards``, ``hand``, ``status`` (and ``exposed``)."""
        return {**_hand_dict(self.cards, self.hand, self.exposed), "status": self.status}


@dataclass(frozen=True, slots=True)
class DealerResult:
    """The dealer's cards in dealing order, hand and whether it qualifies (Art. 9.4); the last
    two are None until all three cards are known."""

    cards: tuple[str, ...]
    hand: RankedHand | None
    exposed: tuple[str, ...] = ()

    @property
    def qualifies(self) -> bool | None:
        """Art. 9.4: Q-high or better; None while the hand is not known."""
        return None if self.hand is None else qualifies(self.hand)

    def to_dict(self) -> dict[str, Any]:
        """The dealer's part of the record: ``cards``, ``hand``, ``qualifies`` (and ``exposed``)."""
        return {**_hand_dict(self.cards, self.hand, self.exposed), "qualifies": self.qualifies}


@dataclass(frozen=True, slots=True)
class QPokerResult:
    """The ``result`` of a Q Poker outcome (docs/contract.md): the dealer and every dealt or bet
    seat."""

    dealer: DealerResult
    seats: Mapping[int, SeatResult]

    def to_dict(self) -> dict[str, Any]:
        """``{"dealer": {...}, "seats": {"3": {...}}}``, seats in ascending order."""
        return {
            "dealer": self.dealer.to_dict(),
            "seats": {str(seat): self.seats[seat].to_dict() for seat in sorted(self.seats)},
        }


# -- one round ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Position:
    """One position's cards this round. ``None`` is a withheld card whose identity is to come."""

    bet: bool  # False: a position dealt without a bet (Art. 11.4)
    cards: list[str | None] = field(default_factory=list)
    exposed: list[str] = field(default_factory=list)

    def known(self) -> tuple[str, ...]:
        return tuple(card for card in self.cards if card is not None)

    def hand(self) -> RankedHand | None:
        known = self.known()
        if len(self.cards) != CARDS_PER_POSITION or len(set(known)) != CARDS_PER_POSITION:
            return None
        return rank_hand(known)


class _Round:
    """The state of the round in progress, owned by its :class:`QPokerTable`."""

    def __init__(self, listed: tuple[int, ...] | None) -> None:
        # With a seat list the bets are known from the start; without one, the seats dealt
        # before the dealer's first card are the bets (Art. 6(2): none after the first card).
        self.bet_seats: list[int] = sorted(listed) if listed is not None else []
        self.seats_fixed = listed is not None
        self.seats_fixed_by_list = listed is not None
        self.positions: dict[Seat, _Position] = {seat: _Position(bet=True)
                                                  for seat in self.bet_seats}
        self.positions[DEALER] = _Position(bet=True)
        self.mode: DealingMode | None = None
        self.dealing_events = 0  # dealing events that took their place in the Art. 7 order
        self.dealing_started = False
        self.decisions: dict[int, bool] = {}
        self.seen: set[str] = set()
        self.dealer_cards_dealt = 0  # to the dealer, whether or not they took their place

    def dealing_order(self) -> list[Seat]:
        """Art. 7: the positions with a bet, ascending from the dealer's left, dealer last."""
        return [*self.bet_seats, DEALER]

    def events_due(self) -> int:
        rotations = CARDS_PER_POSITION if self.mode == "card" else 1
        return rotations * len(self.dealing_order())

    @property
    def dealing_complete(self) -> bool:
        """Every position with a bet and the dealer have their three cards."""
        return (self.seats_fixed and self.mode is not None
                and self.dealing_events == self.events_due())

    def next_in_order(self) -> Seat | None:
        """The position the next dealing event must go to (seats known), None when complete."""
        if self.dealing_complete:
            return None
        order = self.dealing_order()
        return order[self.dealing_events % len(order)]

    def misdeal(self, seat: Seat, mode: DealingMode) -> str | None:
        """Why a dealing event to a position with a bet (or the dealer) breaks Art. 7, or None."""
        if self.mode is not None and mode != self.mode:
            return f"a {mode} event in a round dealt by {self.mode} events (Art. 7)"
        if not self.seats_fixed:
            if seat != DEALER and self.bet_seats and seat <= self.bet_seats[-1]:
                return (f"{_name(seat)} dealt after {_name(self.bet_seats[-1])}: "
                        "positions are dealt in ascending order")
            return None
        expected = self.next_in_order()
        if expected is None:
            return f"more than {CARDS_PER_POSITION} cards to {_name(seat)}"
        if seat != expected:
            return f"{_name(seat)} dealt out of order, {_name(expected)} was due"
        return None

    def take_place(self, seat: Seat, mode: DealingMode) -> _Position:
        """Record that a dealing event took its place in the order; the position it went to."""
        if not self.seats_fixed:
            if seat == DEALER:
                self.seats_fixed = True
            else:
                self.bet_seats.append(seat)
                self.positions[seat] = _Position(bet=True)
        self.mode = mode
        self.dealing_events += 1
        return self.positions[seat]

    def shortfall(self) -> str:
        """Why the deal is not complete, for a void's reason: the positions lacking cards."""
        if self.dealing_complete:
            return "the deal was complete, the reveal was due"
        short = [
            f"{_name(seat)} has {len(self.positions[seat].cards)}"
            for seat in self.dealing_order()
            if len(self.positions[seat].cards) < CARDS_PER_POSITION
        ]
        return f"{', '.join(short)} of {CARDS_PER_POSITION} cards"

    def result(self) -> QPokerResult:
        """What is known of the round: every card that took its place, and the void seats'."""
        dealer = self.positions[DEALER]
        return QPokerResult(
            dealer=DealerResult(dealer.known(), dealer.hand(), tuple(dealer.exposed)),
            seats={
                seat: SeatResult(position.known(), position.hand(),
                                 "active" if position.bet else "void", tuple(position.exposed))
                for seat, position in self.positions.items()
                if seat != DEALER
            },
        )


def _name(seat: Seat) -> str:
    return "the dealer" if seat == DEALER else f"seat {seat}"


def _is_withheld_identity(event: CardDealt | HandDealt) -> bool:
    return event.extra.get(WITHHELD_MARK) is True


# -- the table ---------------------------------------------------------------------------------


class QPokerTable:
    """One Q Poker table (docs/rules/qpoker.md): feed it events in order; it returns one outcome per
    round, at ``reveal`` or when the round is voided, and notices for events it declines.

    It accepts the real stream and the published one alike: a ``withheld`` placeholder takes
    its cards' place in the dealing order, and the later events marked ``"withheld": true`` fill
    in their identities. Both streams give the same outcomes (see :class:`Publication`).
    """

    game: Game = "qpoker"
    #: The rounds are dealt by a shuffler-dealer, three cards at a time (Art. 7(2)); what its
    #: loss means is the rules' own decision from its device_lost fault: void while dealing
    #: (Art. 11.5), nothing once the deal is complete.
    policy: ClassVar[GamePolicy] = GamePolicy(
        needs=(frozenset({"shuffler"}),),
        on_loss=MappingProxyType({"shuffler": Loss.FAULT}),
        needs_console=("the players' decisions and the reveal come only from the dealer console:"
                       " without it every round ends void (qpoker.art11.1, the reveal was due)"),
    )

    def __init__(self, options: QPokerOptions = QPokerOptions()) -> None:  # noqa: B008 (frozen)
        self._options = options
        self._round: _Round | None = None
        self._next_round = 1
        # The rest of a deal voided midway may still come (a shuffler whose link dropped keeps
        # dealing): until the next round_start it belongs to the void round, not to a new one.
        self._deal_voided = False
        # The same for a round without a seat list, which no round_start may follow: the dealer
        # is dealt last (Art. 7), so its deal is over once the dealer has had its three cards.
        # How many of them are still to come, 0 when none.
        self._dealer_rest = 0

    @property
    def options(self) -> QPokerOptions:
        """Art. 2: the number of player positions."""
        return self._options

    @property
    def round_open(self) -> bool:
        """A round has begun (a ``round_start`` or a dealing event) and has no outcome yet."""
        return self._round is not None

    @property
    def next_round(self) -> int:
        """The number the next outcome will carry (rounds are numbered from 1)."""
        return self._next_round

    @property
    def dealing_complete(self) -> bool:
        """The open round's positions with a bet and the dealer all have their three cards."""
        return self._round is not None and self._round.dealing_complete

    def publication(self) -> Publication:
        """Face-down cards are withheld until the rules open them (:class:`Publication`)."""
        return Publication(self)

    def round_of(self, event: Event) -> int | None:
        """The number of the round ``event`` belongs to, were it fed now (the number that
        round's outcome carries, or carried): a ``round_start`` belongs to the round it begins,
        the rest of a deal voided midway to that void round, anything else to the open round
        (or, between rounds, the next). The runtime adds it to the published events; a dealer's
        command naming another round is declined (:data:`FOR_ANOTHER_ROUND`)."""
        if isinstance(event, RoundStart):
            return self._next_round + 1 if self._round is not None else self._next_round
        if self._rest_of_void_deal(event):
            return self._next_round - 1
        return self._next_round

    def _rest_of_void_deal(self, event: Event) -> TypeGuard[CardDealt | HandDealt | Withheld]:
        """A dealing event that belongs to the round voided in the middle of its deal: until
        the next ``round_start`` (a listed round), or until the dealer, dealt last, has had
        its cards (an unlisted one; the identities of withheld cards are not dealing)."""
        if not isinstance(event, (CardDealt, HandDealt, Withheld)):
            return False
        if self._deal_voided:
            return True
        return bool(self._dealer_rest) and not (
            isinstance(event, CardDealt | HandDealt) and _is_withheld_identity(event))

    def feed(self, event: Event) -> list[Output]:
        """Apply one event; return the outcome it completed and notices for what it declined."""
        if self._rest_of_void_deal(event):
            return self._dealt_after_void(event)
        match event:
            case CardDealt() if _is_withheld_identity(event):
                return self._identify(event.seat, (event.card,))
            case HandDealt() if _is_withheld_identity(event):
                return self._identify(event.seat, event.cards)
            case CardDealt(seat=None):
                # Art. 7(1) deals each card to a position; one without a position breaks it.
                return self._void(self._open_round(), ART11_1,
                                  f"card {event.card} dealt to no position")
            case CardDealt(seat=seat) if seat is not None:
                what = f"card {event.card} to {_name(seat)}"
                return self._deal(seat, (event.card,), exposed_cards(event), "card", what)
            case HandDealt():
                what = f"hand {' '.join(event.cards)} to {_name(event.seat)}"
                return self._deal(event.seat, event.cards, exposed_cards(event), "hand", what)
            case Withheld():
                mode: DealingMode = "card" if event.count == 1 else "hand"
                what = f"{event.count} withheld card(s) to {_name(event.seat)}"
                return self._deal(event.seat, (None,) * event.count, exposed_cards(event), mode,
                                  what)
            case RoundStart():
                return self._start(event.seats)
            case Decision() | Reveal() | Void() if event.round not in (None, self._next_round):
                return [self._for_another_round(event)]
            case Decision():
                return self._decide(event.seat, event.play)
            case Reveal():
                return self._reveal()
            case Fault():
                return self._fault(event)
            case Void():
                return self._dealer_void(event.reason)
            case Declare():
                return []  # the dealer's call decides nothing; the pit compares it
            case _:  # roll, no_roll, shoe_start, burn, cut_card, demo: other games' events
                return [Notice("not_for_game", f"a {event.type} event is not part of Q Poker")]

    def _dealt_after_void(self, event: CardDealt | HandDealt | Withheld) -> list[Output]:
        """The rest of a deal voided midway: it belongs to that void round (see _void)."""
        if self._deal_voided:
            return [Notice(DEALT_AFTER_VOID,
                           f"a {event.type} event after round {self._next_round - 1} was "
                           "voided in the middle of its deal belongs to that void round; "
                           "the next round begins with a round_start", ART11_1)]
        if event.seat == DEALER:
            count = (1 if isinstance(event, CardDealt) else
                     event.count if isinstance(event, Withheld) else len(event.cards))
            self._dealer_rest = max(0, self._dealer_rest - count)
        return [Notice(DEALT_AFTER_VOID,
                       f"a {event.type} event after round {self._next_round - 1} was "
                       "voided in the middle of its deal belongs to that void round, until "
                       "the dealer, dealt last, has had its cards", ART11_1)]

    def _for_another_round(self, event: Decision | Reveal | Void) -> Notice:
        """A dealer's command for another round than this one: it reached the table late (the
        round it was given in is over) or early; applied here, it would decide, settle or void
        a round the dealer did not act on. Each step of Art. 9 is one round's (its players
        decide on its cards, 9.2; its dealer's cards are turned and it is settled, 9), and an
        irregularity of Art. 11 voids the round it happened in: declined, nothing changes."""
        article = ART9_2 if isinstance(event, Decision) else ART9 if isinstance(
            event, Reveal) else ART11
        what = f"seat {event.seat}'s decision" if isinstance(event, Decision) else (
            f"a {event.type}")
        state = "is open" if self._round is not None else "is next (none is open)"
        return Notice(FOR_ANOTHER_ROUND,
                      f"{what} for round {event.round}, while round {self._next_round} {state}: "
                      f"declined; round {self._next_round} is unchanged", article)

    # -- rounds --------------------------------------------------------------------------------

    def _open_round(self) -> _Round:
        """The round in progress; a dealing event with none open begins one without a seat list."""
        if self._round is None:
            self._round = _Round(None)
        return self._round

    def _start(self, listed: tuple[int, ...] | None) -> list[Output]:
        outputs: list[Output] = []
        if self._round is not None:
            # A round still open is closed, never dropped: its bets were taken on its seats,
            # and its positions were not given their cards (Art. 11.1), none at all if its deal
            # never began.
            outputs += self._void(self._round, ART11_1,
                                  f"a new round began first: {self._round.shortfall()}")
        self._deal_voided = False  # the new round's deal begins here
        self._dealer_rest = 0
        self._round = _Round(listed)
        if listed is not None:
            positions = self._options.positions
            if not listed:
                outputs += self._void(self._round, ART2, "no position has a bet")
            elif not all(1 <= seat <= positions for seat in listed):
                outputs += self._void(self._round, ART2,
                                      f"seats {list(listed)} outside positions 1-{positions}")
        return outputs

    def _outcome(self, rnd: _Round, status: Literal["complete", "void"],
                 bets: Mapping[str, Mapping[str, BetResult]],
                 article: str | None = None, reason: str | None = None) -> list[Output]:
        outcome = Outcome("qpoker", self._next_round, status, rnd.result(), bets,
                          void_reason=reason, article=article)
        self._next_round += 1
        self._round = None
        return [outcome]

    def _void(self, rnd: _Round, article: str, reason: str) -> list[Output]:
        """The round is void and all its bets with it (Art. 11.1, 11.3, 11.5; Art. 1, 2).
        If its seats were listed and its deal was not complete (cut short, or not begun), what
        is left of that deal may still arrive: it is declined until the next ``round_start``.
        Without a seat list, it is declined until the dealer, dealt last, has had its cards."""
        self._deal_voided = rnd.seats_fixed_by_list and not rnd.dealing_complete
        unlisted_rest = (not rnd.seats_fixed_by_list and rnd.dealing_started
                         and not rnd.dealing_complete)
        self._dealer_rest = (max(0, CARDS_PER_POSITION - rnd.dealer_cards_dealt)
                             if unlisted_rest else 0)
        every_bet = BetResult("void", article)
        bets = {
            str(seat): (
                {"dobo": every_bet, "play": every_bet} if position.bet
                else {"dobo": _NO_BET_ON_VOID_SEAT, "play": _NO_BET_ON_VOID_SEAT}
            )
            for seat, position in sorted(_seats(rnd).items())
        }
        return self._outcome(rnd, "void", bets, article, reason)

    # -- dealing -------------------------------------------------------------------------------

    def _deal(self, seat: Seat, cards: tuple[str | None, ...], exposed: tuple[str, ...],
              mode: DealingMode, what: str) -> list[Output]:
        """Art. 7: a dealing event (real, or a withheld placeholder) to ``seat``."""
        rnd = self._open_round()
        rnd.dealing_started = True
        if seat == DEALER:
            rnd.dealer_cards_dealt += len(cards)
        if seat != DEALER and not 1 <= seat <= self._options.positions:
            return self._void(rnd, ART2, f"{what}: the table has positions "
                                         f"1-{self._options.positions}")
        if mode == "hand" and len(cards) != CARDS_PER_POSITION:
            # Art. 7(2) delivers three cards at a time, to any position: a wrong count is a
            # misdeal of the round (Art. 11.1), even at a position without a bet.
            return self._void(rnd, ART11_1, f"{what}: a hand of {len(cards)} cards")
        if seat != DEALER and rnd.seats_fixed and seat not in rnd.bet_seats:
            # Art. 11.4: that position alone is void; it takes no place in the dealing order.
            position = rnd.positions.setdefault(seat, _Position(bet=False))
            return self._receive(rnd, seat, position, cards, exposed)
        if seat == DEALER and not rnd.seats_fixed and not rnd.bet_seats:
            return self._void(rnd, ART2, f"{what} before any position with a bet")
        misdeal = rnd.misdeal(seat, mode)
        if misdeal is not None:
            # The card takes no place in the round, so the record names it in the reason.
            return self._void(rnd, ART11_1, f"{what}: {misdeal}")
        position = rnd.take_place(seat, mode)
        return self._receive(rnd, seat, position, cards, exposed)

    def _receive(self, rnd: _Round, seat: Seat, position: _Position,
                 cards: tuple[str | None, ...], exposed: tuple[str, ...]) -> list[Output]:
        """Cards arrive at a position: Art. 1 (one deck), Art. 11.2 and 11.3 (exposed cards:
        ``exposed`` are the ones seen face up, not necessarily all that arrived)."""
        position.cards.extend(cards)
        position.exposed.extend(exposed)
        known = [card for card in cards if card is not None]
        repeated = self._see(rnd, known)
        if repeated:
            return self._void(rnd, ART1, f"{', '.join(repeated)} dealt twice from one deck")
        if exposed and seat == DEALER:
            return self._void(rnd, ART11_3, f"the dealer's {', '.join(exposed)} exposed")
        return []  # an exposed player card stands (Art. 11.2)

    @staticmethod
    def _see(rnd: _Round, cards: Sequence[str]) -> list[str]:
        """Add cards to those seen this round; those already seen (Art. 1: a single deck)."""
        repeated = []
        for card in cards:
            if card in rnd.seen:
                repeated.append(card)
            rnd.seen.add(card)
        return repeated

    def _identify(self, seat: Seat | None, cards: tuple[str, ...]) -> list[Output]:
        """The identities of earlier withheld cards of ``seat``, in dealing order: not dealing."""
        rnd = self._round
        position = None if rnd is None or seat is None else rnd.positions.get(seat)
        holes = [] if position is None else [
            index for index, card in enumerate(position.cards) if card is None
        ]
        if rnd is None or position is None or len(holes) < len(cards):
            return [Notice("nothing_withheld",
                           f"{' '.join(cards)} for {_name(seat or DEALER)}: "
                           "no withheld card of that position to fill in")]
        for index, card in zip(holes, cards, strict=False):
            position.cards[index] = card
        repeated = self._see(rnd, cards)
        if repeated:
            return self._void(rnd, ART1, f"{', '.join(repeated)} dealt twice from one deck")
        return []

    # -- decisions and settlement --------------------------------------------------------------

    def _decide(self, seat: int, play: bool) -> list[Output]:
        """Art. 9.2-9.3: a player with a bet and three cards plays or folds, once."""
        rnd = self._round
        if rnd is None:
            return [Notice("decision_without_round", f"seat {seat}: no round is open", ART9_2)]
        position = rnd.positions.get(seat)
        has_bet = position.bet if position is not None else not rnd.seats_fixed
        if not has_bet:
            return [Notice("decision_without_bet", f"seat {seat} has no bet this round", ART9_2)]
        if position is None or len(position.cards) < CARDS_PER_POSITION:
            return [Notice("decision_before_cards",
                           f"seat {seat} decided before its {CARDS_PER_POSITION} cards", ART9_2)]
        if seat in rnd.decisions:
            return [Notice("decision_repeated",
                           f"seat {seat} already decided; a decision cannot be withdrawn", ART9_3)]
        rnd.decisions[seat] = play
        return []

    def _reveal(self) -> list[Output]:
        """The dealer's cards are turned and every position with a bet is settled (Art. 9)."""
        rnd = self._round
        if rnd is None:
            return [Notice("nothing_to_reveal", "reveal with no round open")]
        if not rnd.dealing_complete:
            return self._void(rnd, ART11_1, f"reveal before the deal was complete: "
                                            f"{rnd.shortfall()}")
        hands = {seat: rnd.positions[seat].hand() for seat in rnd.dealing_order()}
        dealer = hands.pop(DEALER)
        if dealer is None or any(hand is None for hand in hands.values()):
            return self._void(rnd, ART11_1, "reveal while withheld cards were never identified")
        bets: dict[str, Mapping[str, BetResult]] = {}
        for seat, position in sorted(_seats(rnd).items()):
            hand = hands[seat] if position.bet else None
            if hand is None:  # Art. 11.4: a position dealt without a bet
                bets[str(seat)] = {"dobo": _NO_BET_ON_VOID_SEAT, "play": _NO_BET_ON_VOID_SEAT}
                continue
            # Reading R-Q2: a player who has not decided by the reveal has not played (Art. 9.3).
            played = rnd.decisions.get(seat, False)
            bets[str(seat)] = {"dobo": dobo_result(hand.hand_class),
                               "play": play_result(hand, dealer, played)}
        return self._outcome(rnd, "complete", bets)

    # -- faults and the dealer's void ----------------------------------------------------------

    def _fault(self, fault: Fault) -> list[Output]:
        """Art. 11.5: the shuffling machine failing while the round is dealt voids it: from its
        ``round_start`` (the machine is dealing it: a failure before the first card stops the
        deal as surely as one after it) until every position has its cards."""
        if fault.code == EVENT_NOT_APPLIED:
            return self._not_applied(fault)
        rnd = self._round
        shuffler_failed = fault.code in SHUFFLER_FAILURES or (
            fault.code == DEVICE_LOST and lost_kind(fault) == SHUFFLER_KIND
        )
        if rnd is None or not shuffler_failed or rnd.dealing_complete:
            return []
        detail = f" ({fault.detail})" if fault.detail else ""
        return self._void(rnd, ART11_5, f"the shuffling machine failed while dealing: "
                                        f"{fault.code}{detail}")

    def _not_applied(self, fault: Fault) -> list[Output]:
        """The daemon could not apply an event (fault event_not_applied): what it would have
        done to the round is unknown, so the round is void (Art. 11.1: its deal or its
        decisions cannot be shown to be right), and what is left of its deal is declined until
        the next ``round_start``. A lost event that would have begun a round (a round_start,
        a dealing event) gets a void round of its own: a round is never dropped."""
        lost = fault.extra.get(NOT_APPLIED_TYPE)
        if lost == "fault" and not (fault.extra.get(NOT_APPLIED_CODE) in SHUFFLER_FAILURES
                                    or fault.extra.get(NOT_APPLIED_CODE) == DEVICE_LOST):
            return []  # a fault that voids nothing would have voided nothing
        why = (f"the daemon could not apply a {lost} event"
               + (f" ({fault.detail})" if fault.detail else ""))
        begins = lost in ("round_start", "card", "hand", "withheld")
        outputs: list[Output] = []
        if self._round is not None:
            outputs += self._void(self._round, ART11_1, why)
            if lost != "round_start":
                self._deal_voided = True
                return outputs
        elif not begins or self._deal_voided:
            return outputs  # no round to void, or the lost event was part of a void one
        outputs += self._void(_Round(None), ART11_1, f"{why}: a round it began")
        self._deal_voided = True
        return outputs

    def _dealer_void(self, reason: str | None) -> list[Output]:
        """The dealer voids the round, citing one of Art. 11's voids (11.1 when it names none)."""
        if self._round is None:
            return [Notice("nothing_to_void", "void with no round open")]
        article = reason if reason in DEALER_VOID_ARTICLES else ART11_1
        suffix = f": {reason}" if reason else ""
        return self._void(self._round, article, f"voided by the dealer{suffix}")


def _seats(rnd: _Round) -> dict[int, _Position]:
    return {seat: position for seat, position in rnd.positions.items() if seat != DEALER}


# -- publication -------------------------------------------------------------------------------


def _face_down_dealing(event: Event) -> TypeGuard[CardDealt | HandDealt]:
    """A dealing event with a card that was not seen face up: it must be held (a hand with one
    card exposed is still face down: only that card is public, Art. 11.2)."""
    if (not isinstance(event, CardDealt | HandDealt)
            or event.seat is None  # a seatless card voids its round, so it is never held
            or _is_withheld_identity(event)):
        return False
    count = 1 if isinstance(event, CardDealt) else len(event.cards)
    return len(exposed_cards(event)) < count


def _identified(event: CardDealt | HandDealt) -> CardDealt | HandDealt:
    return replace(event, extra={**event.extra, WITHHELD_MARK: True})


class Publication:
    """The published stream of one table: its events with face-down cards withheld until the
    rules open them (docs/contract.md: the dealer's cards never appear in any message before
    reveal).

    Call :meth:`admit` with each event after ``table.feed(event)``. A face-down card or hand is
    published as a ``withheld`` placeholder at its place in the deal (carrying, in ``exposed``,
    the hand's cards that were seen face up, if any: those alone are public); the players' cards
    follow, marked ``"withheld": true``, as soon as the deal is complete (Art. 9.1: the players open
    their cards); the dealer's come just before the event that ends the round (the reveal, or
    whatever voided it). A fresh :class:`QPokerTable` fed the published stream gives the same
    outcomes as ``table``: the placeholders hold the dealing order, and every card is known
    again before the event that ends its round.
    """

    def __init__(self, table: QPokerTable) -> None:
        self._table = table
        self._held: list[CardDealt | HandDealt] = []

    def admit(self, event: Event, outputs: Sequence[Output]) -> list[Event]:
        """The events to publish now, in order, for ``event`` that the table answered with
        ``outputs``."""
        if any(isinstance(output, Outcome) for output in outputs):
            published: list[Event] = [_identified(held) for held in self._held]
            self._held.clear()
            return [*published, event]
        if any(isinstance(o, Notice) and o.code == DEALT_AFTER_VOID for o in outputs):
            return [event]  # cards of a round already void: nothing left to hide
        if _face_down_dealing(event):
            assert event.seat is not None  # for mypy: the guard checked it
            count = 1 if isinstance(event, CardDealt) else len(event.cards)
            self._held.append(event)
            # A card seen face up is public at its place in the deal; the rest are withheld.
            exposed = exposed_cards(event)
            published = [Withheld(seat=event.seat, count=count, meta=event.meta,
                                  extra={EXPOSED: list(exposed)} if exposed else {})]
        else:
            published = [event]
        if self._table.dealing_complete:
            players = [held for held in self._held if held.seat != DEALER]
            self._held = [held for held in self._held if held.seat == DEALER]
            published += [_identified(held) for held in players]
        return published


__all__ = [
    "DOBO_PAYS",
    "PLAY_PAYS",
    "DealerResult",
    "Publication",
    "QPokerResult",
    "QPokerTable",
    "SeatResult",
    "dobo_result",
    "play_result",
]
