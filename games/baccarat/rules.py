"""Baccarat (docs/rules/baccarat.md, dispatch 67/2007): the shoe, the deal, the drawing rules, the
settlement.

This module owns one baccarat table's state: the shoe's card counts, the hand being dealt, the
demonstration-hand and last-hand bookkeeping, and the round numbers. It turns the normalized events
of docs/contract.md into outcome records and notices, citing the article behind every void and
payout. It must never do I/O, read a clock, log, guess a card it was not told, or change the table's
regulated options (Art. 18). The project's readings of the rules are in ``docs/rules/baccarat.md``.

``feed`` sits on the replay hot path (75,000 rounds/s in one process), so every bet result and
every bet mapping a hand can settle to is built once, at import (a :class:`FixedBets`: its JSON is
made then too), and the result part is a msgspec ``Struct``, encoded as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias

import msgspec

from tabled.contract.events import (
    RANKS,
    Burn,
    CardDealt,
    CutCard,
    Declare,
    Demo,
    Event,
    Fault,
    RoundStart,
    ShoeStart,
    Void,
)
from tabled.contract.faults import (
    EVENT_NOT_APPLIED,
    NOT_APPLIED_CODE,
    NOT_APPLIED_TYPE,
    UNREADABLE_CARD,
    VOID_DEVICE_LOST,
)
from tabled.contract.outcome import (
    FOR_ANOTHER_ROUND,
    BetResult,
    FixedBets,
    Game,
    Notice,
    Outcome,
    Output,
)
from tabled.games.baccarat.options import (
    MAX_DECKS,
    MIN_DECKS,
    BaccaratMethod,
    BaccaratOptions,
    Commission,
)
from tabled.games.policy import GamePolicy, Loss, PublishAll

Winner: TypeAlias = Literal["player", "banker", "tie"]

ART1: Final = "baccarat.art1"
ART2_2: Final = "baccarat.art2.2"
ART3: Final = "baccarat.art3"
ART8: Final = "baccarat.art8"
ART10: Final = "baccarat.art10"
ART11: Final = "baccarat.art11"
ART12: Final = "baccarat.art12"

#: The notice for a card, or an unreadable card, of a hand that was voided while it was still being
#: dealt (the daemon lost the shoe; nobody at the table stopped): it belongs to that void hand.
DEALT_AFTER_VOID: Final = "dealt_after_void"
#: The notice for a card the daemon cannot place in any hand (after a card it could not apply),
#: until the dealer marks where a hand begins.
CARD_NOT_FOLLOWED: Final = "card_not_followed"

#: Art. 2.2: at most three demonstration hands per shoe.
DEMO_HANDS_PER_SHOE: Final = 3
CARDS_PER_DECK: Final = 52

#: Art. 5: T, J, Q, K count 0, the others their face value (A = 1); keyed by rank character.
CARD_VALUES: Final[Mapping[str, int]] = MappingProxyType(
    {rank: i + 1 if i < 9 else 0 for i, rank in enumerate(RANKS)}
)

#: The five wagers of Art. 12, present in every record.
BET_NAMES: Final = ("player", "banker", "tie", "player_pair", "banker_pair")

# Who receives the next card of a hand, and who won it (indexes of _WINNERS).
_PLAYER: Final = 0
_BANKER: Final = 1
_TIE: Final = 2


# -- the bet results a hand can settle to, built once ---------------------------------------------


@dataclass(frozen=True, slots=True)
class _PayTable:
    """Art. 16's table for one drawing method: the Player/Banker win, the Tie win, a loss."""

    even_win: BetResult
    tie_win: BetResult
    lose: BetResult


def _pay_table(article: str, tie_pays: int) -> _PayTable:
    return _PayTable(
        even_win=BetResult("win", article, Fraction(1)),
        tie_win=BetResult("win", article, Fraction(tie_pays)),
        lose=BetResult("lose", article),
    )


_PAY_TABLES: Final[Mapping[BaccaratMethod, _PayTable]] = {
    1: _pay_table("baccarat.art16.1", 14),
    2: _pay_table("baccarat.art16.2", 9),
}
#: Art. 17: the winning totals whose Player/Banker win the commission reshapes, and the result.
_COMMISSIONED_WINS: Final[Mapping[Commission, tuple[frozenset[int], BetResult]]] = {
    "five_percent": (frozenset({7, 8, 9}), BetResult("win", "baccarat.art17.1", Fraction(19, 20))),
    "half_on_four": (frozenset({4}), BetResult("win", "baccarat.art17.2", Fraction(1, 2))),
}
_TIE_PUSH: Final = BetResult("push", ART11)
_PAIR_WIN: Final = BetResult("win", ART12, Fraction(11))
_PAIR_LOSE: Final = BetResult("lose", ART12)

_WINNERS: Final[tuple[Winner, Winner, Winner]] = ("player", "banker", "tie")
_NO_EXTRA: Final[Mapping[str, Any]] = MappingProxyType({})
_DEMO_EXTRA: Final[Mapping[str, Any]] = MappingProxyType({"demo": True})

BetMap: TypeAlias = Mapping[str, BetResult]


def _bet_index(winner: int, winning_total: int, player_pair: bool, banker_pair: bool) -> int:
    """Where the bets of a complete hand sit in a method/commission's table of bet mappings."""
    return ((winner * 10 + winning_total) * 2 + player_pair) * 2 + banker_pair


def _hand_bets(
    pay: _PayTable, commission: Commission, winner: int, winning_total: int,
    player_pair: bool, banker_pair: bool,
) -> BetMap:
    """The five bets of one complete hand (Art. 11, 12, 16, 17)."""
    if winner == _TIE:
        player = banker = _TIE_PUSH  # Art. 11: a tie loses neither side's wager
        tie = pay.tie_win
    else:
        commissioned_totals, commissioned_win = _COMMISSIONED_WINS[commission]
        win = commissioned_win if winning_total in commissioned_totals else pay.even_win
        player, banker = (win, pay.lose) if winner == _PLAYER else (pay.lose, win)
        tie = pay.lose
    return FixedBets({
        "player": player,
        "banker": banker,
        "tie": tie,
        "player_pair": _PAIR_WIN if player_pair else _PAIR_LOSE,
        "banker_pair": _PAIR_WIN if banker_pair else _PAIR_LOSE,
    })


def _settled_bets(method: BaccaratMethod, commission: Commission) -> tuple[BetMap, ...]:
    """Every bet mapping a complete hand can settle to, in :func:`_bet_index` order."""
    pay = _PAY_TABLES[method]
    return tuple(
        _hand_bets(pay, commission, winner, total, player_pair, banker_pair)
        for winner in (_PLAYER, _BANKER, _TIE)
        for total in range(10)
        for player_pair in (False, True)
        for banker_pair in (False, True)
    )


_SETTLED_BETS: Final[Mapping[tuple[BaccaratMethod, Commission], tuple[BetMap, ...]]] = {
    (method, commission): _settled_bets(method, commission)
    for method in _PAY_TABLES
    for commission in _COMMISSIONED_WINS
}
#: A void or demonstration hand settles no bet: every one is ``void`` under the deciding article.
_VOID_BETS: Final[Mapping[str, BetMap]] = {
    article: FixedBets(dict.fromkeys(BET_NAMES, BetResult("void", article)))
    for article in (ART1, ART2_2, ART3, ART10)
}


# -- the result part of a record -------------------------------------------------------------------


class BaccaratResult(msgspec.Struct, frozen=True, gc=False):
    """What was dealt: both hands in dealt order, their totals (Art. 5), the winner, and whether
    either hand's first two cards make a natural (Art. 9). ``winner`` is ``None`` on a void
    hand, whose totals are those of the cards dealt so far."""

    player_cards: tuple[str, ...]
    banker_cards: tuple[str, ...]
    player_total: int
    banker_total: int
    winner: Winner | None
    natural: bool

    def to_dict(self) -> dict[str, Any]:
        """The contract's ``result`` object."""
        return {
            "player_cards": list(self.player_cards),
            "banker_cards": list(self.banker_cards),
            "player_total": self.player_total,
            "banker_total": self.banker_total,
            "winner": self.winner,
            "natural": self.natural,
        }


# -- the hand being dealt --------------------------------------------------------------------------


class _Hand:
    """The hand being dealt, owned by its table: the cards so far, who gets the next one, and
    why the hand is void if something already condemned it (the first cause is the one reported).
    """

    __slots__ = (
        "banker", "banker_total", "both_draw", "dealt", "demo", "natural", "next_to", "number",
        "player", "player_total", "void_article", "void_reason",
    )

    def __init__(self) -> None:
        self.player: list[str] = []
        self.banker: list[str] = []
        self.player_total = 0
        self.banker_total = 0
        self.dealt = 0
        self.next_to = _PLAYER  # Art. 7: Player first, then alternately
        self.both_draw = False
        self.natural = False
        self.demo = False
        self.void_reason: str | None = None
        self.void_article: str | None = None
        self.number = 0  # the round number its outcome took, once it has one

    def condemn(self, article: str, reason: str) -> None:
        """Mark the hand void, unless an earlier cause already did."""
        if self.void_article is None:
            self.void_article, self.void_reason = article, reason

    def take(self, card: str, method: BaccaratMethod) -> bool:
        """Give ``card`` to whoever the deal calls for (Reading R-B1); True when the hand has
        every card it needs."""
        value = CARD_VALUES[card[0]]
        if self.next_to == _PLAYER:
            self.player.append(card)
            self.player_total = player_total = (self.player_total + value) % 10
            banker_total = self.banker_total
        else:
            self.banker.append(card)
            self.banker_total = banker_total = (self.banker_total + value) % 10
            player_total = self.player_total
        self.dealt = dealt = self.dealt + 1
        if dealt < 4:  # Art. 7: P1 B1 P2 B2
            self.next_to ^= 1
            return False
        if dealt == 4:
            if player_total >= 8 or banker_total >= 8:  # Art. 9 (1): a natural decides
                self.natural = True
                return True
            if player_total == banker_total:  # Art. 9 (2): both draw, Player first
                self.both_draw = True
                self.next_to = _PLAYER
            else:  # Art. 9 (3): the lower hand draws first
                self.next_to = _PLAYER if player_total < banker_total else _BANKER
            return False
        if dealt == 5:
            if self.both_draw:
                self.next_to = _BANKER
                return False
            drawn, other = (
                (player_total, banker_total) if self.next_to == _PLAYER
                else (banker_total, player_total)
            )
            if drawn < other:  # Art. 9 (3)(1): still lower, the other stands and wins
                return True
            if drawn == other and method == 2:  # Method 2 (3)(2): equal, the other stands: tie
                return True
            self.next_to ^= 1  # Method 1 (3)(2) / Method 2 (3)(3): the other must draw
            return False
        return True  # the sixth card: each hand has drawn its one card (Art. 9)

    def result(self, winner: Winner | None) -> BaccaratResult:
        return BaccaratResult(
            tuple(self.player), tuple(self.banker), self.player_total, self.banker_total,
            winner, self.natural,
        )


# -- the table -------------------------------------------------------------------------------------


#: The options of a table built without any: method 1, 5 % commission, this hand last, 8 decks.
DEFAULT_OPTIONS: Final = BaccaratOptions()


class BaccaratTable:
    """One baccarat table (docs/rules/baccarat.md) under fixed regulated options.

    Each ``card`` event is the next card out of the shoe, dealt as the drawing method calls for;
    the outcome of a hand is returned by the ``feed`` that brings its last required card.
    """

    game: Game = "baccarat"
    #: A hand is dealt from a card-reading shoe or by an automatic shuffler-dealer (Art. 1, 7);
    #: either one lost mid-hand and not back in time leaves a deal that cannot be corrected, so
    #: the hand is void (Art. 10).
    policy: ClassVar[GamePolicy] = GamePolicy(
        needs=(frozenset({"shoe", "shuffler"}),),
        on_loss=MappingProxyType({"shoe": Loss.VOID, "shuffler": Loss.VOID}),
    )
    # The shoe's state, set by _new_shoe at construction and at every shoe_start.
    _decks: int
    _capacity: int
    _counts: dict[str, int]
    _out_of_shoe: int
    _demo_hands: int
    _real_hand_dealt: bool
    #: Hands that may still begin before reshuffling (Art. 3); None until the cut card.
    _hands_left: int | None
    #: Why every hand of this shoe is void from its first card (the daemon could not apply a
    #: shoe_start or a cut_card, or lost count of hands after the cut card), or None.
    _doubt_shoe: str | None
    #: The number the shoe's next card out will carry, for a shoe that numbers its cards
    #: (``card_no``, docs/protocols/shoe.md); None until one does.
    _next_card_no: int | None

    def __init__(self, options: BaccaratOptions = DEFAULT_OPTIONS) -> None:
        self._options = options
        self._method = options.method
        self._bets = _SETTLED_BETS[(options.method, options.commission)]
        self._round = 1
        self._hand: _Hand | None = None
        # A hand voided while it was still being dealt, whose remaining cards may still come
        # out of the shoe: the daemon voided it because the shoe stayed lost, and the dealer,
        # who saw nothing, dealt on. The drawing rules say which cards are its own (never the
        # next hand's) until it has them all or the dealer marks a boundary (void, round_start,
        # shoe_start, an unreadable card). Its outcome is already out.
        self._trailing: _Hand | None = None
        # Why the daemon cannot tell where the next hand begins (it could not apply a card of
        # the hand in progress, so it cannot count the rest of it), or None. Cards are declined
        # until the dealer marks a boundary: a void, round_start, shoe_start or unreadable card.
        self._adrift: str | None = None
        # Why the next hand to begin is void from its first card (the daemon could not apply an
        # event between hands, e.g. a demo mark), or None.
        self._doubt_next: str | None = None
        self._demo_marked = False
        self._new_shoe(options.decks)

    # -- the Table protocol

    @property
    def options(self) -> BaccaratOptions:
        """The regulated options the table was built with; read-only (Art. 18)."""
        return self._options

    @property
    def round_open(self) -> bool:
        """A hand has cards and no outcome yet."""
        return self._hand is not None

    @property
    def next_round(self) -> int:
        """The number the next outcome will carry (from 1, +1 per outcome, void hands too)."""
        return self._round

    def feed(self, event: Event) -> list[Output]:
        """Apply one event; return the outcomes it completed and notices for what it declined."""
        return _HANDLERS.get(type(event), BaccaratTable._not_for_game)(self, event)

    def publication(self) -> PublishAll:
        """Baccarat deals face up (Art. 7): every event is published as it comes."""
        return PublishAll()

    def round_of(self, event: Event) -> int | None:
        """The number of the round (hand) ``event`` belongs to, were it fed now (the number its
        outcome carries, or carried): a ``round_start``, ``shoe_start`` or ``demo`` mark belongs
        to the next hand to begin; while a hand the daemon voided is still being dealt (the
        shoe stayed lost), the shoe's events are that hand's; a card the daemon cannot place in
        any hand (adrift, or after a gap in the shoe's numbers) belongs to no round it can
        name: None. The runtime adds it to the published events."""
        if isinstance(event, (RoundStart, ShoeStart, Demo)):
            return self._round + 1 if self._hand is not None else self._round
        if self._trailing is not None:
            return self._trailing.number
        if (isinstance(event, CardDealt) and self._adrift is not None) or self._skips(event):
            return None
        return self._round

    # -- events

    def _card(self, event: CardDealt) -> list[Output]:
        # seat and face_up do not steer the deal: the shoe's order does, and an exposed card
        # stands (Art. 4).
        card = event.card
        gap = self._numbered(event) if event.extra else None  # (the hot path skips the call)
        if gap or self._trailing is not None or self._adrift is not None:
            return [*(gap or ()), *self._off_the_deal(card)]
        hand = self._hand
        if hand is None:
            hand = self._hand = self._begin_hand()
        # self._count_in(hand, card), inlined: this is the replay's hot path (a card in nine of
        # ten events), where two calls per card were a fifth of the rules' time
        self._out_of_shoe = out_of_shoe = self._out_of_shoe + 1
        counts = self._counts
        copies = counts[card] = counts.get(card, 0) + 1
        if copies > self._decks or out_of_shoe > self._capacity:
            overflow = self._overflow(card, copies)
            if overflow is not None:  # (it is: the card overflows the shoe)
                hand.condemn(ART1, overflow)
        if hand.take(card, self._method):
            return [self._close(hand)]
        return []

    def _off_the_deal(self, card: str) -> list[Output]:
        """A card out of the shoe when the deal is not the daemon's to follow as usual: it goes
        to the void hand still being dealt, or nowhere while adrift (or, after a gap in the
        shoe's numbers that left no doubt, to the hand being dealt)."""
        if self._trailing is not None:
            return self._follow(self._trailing, card)
        if self._adrift is not None:
            return [Notice(CARD_NOT_FOLLOWED, f"a card out of the shoe while {self._adrift}; it "
                                              "belongs to no hand the daemon can follow",
                           ART10), *self._count_outside_hands(card, "not followed")]
        hand = self._hand
        if hand is None:
            hand = self._hand = self._begin_hand()
        self._count_in(hand, card)
        return [self._close(hand)] if hand.take(card, self._method) else []

    def _follow(self, hand: _Hand, card: str) -> list[Output]:
        """A card of the void hand still being dealt: it takes its place in that hand, by the
        drawing rules (Reading R-B1), and goes to no other (Art. 10)."""
        out: list[Output] = self._count_outside_hands(card, "dealt to a void hand")
        complete = hand.take(card, self._method)
        if complete:
            self._trailing = None
        out.insert(0, Notice(
            DEALT_AFTER_VOID,
            f"card {hand.dealt} of the hand voided as round {hand.number} while it was still "
            "being dealt: the drawing rules called for it, so it belongs to that void hand, not "
            "to the next" + ("; that hand is now fully dealt" if complete else ""),
            ART10,
        ))
        return out

    def _skips(self, event: Event) -> bool:
        """Whether ``event`` carries a shoe's card number that is not the one due (what
        :meth:`_numbered` acts on), without acting on it."""
        number = event.extra.get("card_no") if event.extra else None
        if not isinstance(number, int) or isinstance(number, bool) \
                or not isinstance(event, (CardDealt, Burn, Fault)):
            return False
        return self._next_card_no is not None and number != self._next_card_no

    def _numbered(self, event: Event) -> list[Output]:
        """A card out of a shoe that numbers its cards: if the numbers skip, cards left the shoe
        that the daemon never saw (a shoe that lost what it read, e.g. in a reboot), so where
        the hands begin is no longer known: what they may have changed is void (Art. 10), and
        cards are declined until the dealer marks a boundary."""
        number = event.extra.get("card_no")
        if not isinstance(number, int) or isinstance(number, bool):
            return []
        expected, self._next_card_no = self._next_card_no, number + 1
        if expected is None or number == expected:
            return []
        if number > expected:
            why = (f"cards {expected} to {number - 1} of the shoe never reached the daemon (the "
                   f"next was numbered {number})")
        else:
            why = f"the shoe numbered a card {number} again, after card {expected - 1}"
        return self._cards_unseen(why, max(number - expected, 0))

    def _cards_unseen(self, why: str, count: int) -> list[Output]:
        """``count`` cards left the shoe that the daemon knows nothing of: they count (Art. 1);
        the hand they went to cannot be followed, so it is void (Art. 10), and the daemon is
        adrift (it cannot count the rest of that hand)."""
        hand = self._hand
        out: list[Output] = []
        if count and hand is None and self._trailing is None and self._adrift is None:
            hand = self._hand = self._begin_hand()  # the first was the Player's (Art. 7)
        for _ in range(count):
            if hand is None:
                out += self._count_outside_hands(None, "never seen")
            else:
                self._count_in(hand, None)
        self._drift(why)
        if hand is None:
            return out
        hand.condemn(ART10, f"{why}, after {hand.dealt} card(s) of the hand; the deal cannot "
                            "be shown to be right")
        return [*out, self._close(hand)]

    def _end_trailing(self) -> None:
        """The dealer marked a boundary: the next card begins a new hand."""
        self._trailing = None
        self._adrift = None

    def _shoe_start(self, event: ShoeStart) -> list[Output]:
        out = [] if self._hand is None else self._misdeal(self._hand, "shoe_start")
        self._end_trailing()
        if not MIN_DECKS <= event.decks <= MAX_DECKS:
            # The shoe on the table is a physical fact: count its cards as they are, and say so.
            out.append(Notice(
                "decks_out_of_range",
                f"a shoe of {event.decks} decks; the rules allow {MIN_DECKS} to {MAX_DECKS}",
                ART1,
            ))
        self._new_shoe(event.decks)
        return out

    def _burn(self, event: Burn) -> list[Output]:
        out: list[Output] = self._numbered(event)
        hand = self._hand or self._trailing
        if hand is not None:
            out.append(Notice(
                "burn_mid_hand",
                f"a card was burned after {hand.dealt} card(s) of the hand; burning is "
                "done at the start of a hand, the hand continues",
                ART8,
            ))
        return out + self._count_outside_hands(event.card, "burned")

    def _cut_card(self, event: CutCard) -> list[Output]:
        if self._hands_left is not None:
            return [Notice(
                "cut_card_repeated",
                "the cut card already came out of this shoe; the last hand stays as it was set",
                ART3,
            )]
        # Reading R-B2: the hand in progress, or else the next hand, is the one the cut card
        # falls in; with "one_more" one hand follows it. A void hand still being dealt is in
        # progress at the table.
        extra = 0 if self._options.last_hand == "this" else 1
        in_progress = self._hand is not None or self._trailing is not None
        self._hands_left = extra if in_progress else extra + 1
        if self._adrift is not None:
            self._doubt("the cut card came out while " + self._adrift)
        return []

    def _demo(self, event: Demo) -> list[Output]:
        self._demo_marked = True  # the limit is checked when the marked hand begins
        if self._adrift is not None:  # which hand it marks is not known
            self._doubt_next = "a demo mark came while " + self._adrift
        return []

    def _round_start(self, event: RoundStart) -> list[Output]:
        self._end_trailing()
        return [] if self._hand is None else self._misdeal(self._hand, "round_start")

    def _void(self, event: Void) -> list[Output]:
        named = event.round
        if named is not None and named != self._round and (
                self._trailing is None or named != self._trailing.number):
            # A void for another hand than the one at the table (it came late: that hand is
            # over): Art. 10 voids the hand whose deal went wrong, never the next one. (While
            # a hand the daemon voided is still being dealt, that hand is the one at the
            # table, under its own number or, as a console counting outcomes sees it, the next.)
            at_table = "is being dealt" if self._hand is not None else "is next"
            return [Notice(FOR_ANOTHER_ROUND, f"a void for round {named}, while round "
                                              f"{self._round} {at_table}: declined; round "
                                              f"{self._round} is unchanged", ART10)]
        device_lost = event.extra.get(VOID_DEVICE_LOST) is True
        hand = self._hand
        if hand is None:
            if device_lost or (self._trailing is None and self._adrift is None):
                return [Notice("nothing_to_void", "a void event with no hand being dealt", ART10)]
            # The dealer voids the hand being dealt, which the daemon had already voided (or
            # could not follow): the next card begins a new hand.
            number = None if self._trailing is None else self._trailing.number
            self._end_trailing()
            which = "the hand being dealt" if number is None else f"round {number}"
            return [Notice("already_void", f"a void event for {which}, already void; the next "
                                           "card begins a new hand", ART10)]
        what = "a void event" if event.reason is None else f"a void event ({event.reason})"
        out = self._misdeal(hand, what)
        if device_lost:
            # The daemon voided the hand, not the dealer: its remaining cards may still come.
            self._trailing = hand
        return out

    def _fault(self, event: Fault) -> list[Output]:
        if event.code == EVENT_NOT_APPLIED:
            lost = event.extra.get(NOT_APPLIED_TYPE)
            if lost == "fault" and event.extra.get(NOT_APPLIED_CODE) == UNREADABLE_CARD:
                lost = "card"  # a card left the shoe, and the daemon knows nothing of it
            return self._not_applied(lost, event.detail)
        if event.code != UNREADABLE_CARD:
            return []  # a device's trouble voids nothing by itself; its card events will tell
        return [*self._numbered(event), *self._unreadable()]

    def _unreadable(self) -> list[Output]:
        """A card left the shoe but could not be read. It counts toward the shoe (Art. 1); the
        hand it belongs to cannot be corrected, so it is void (Art. 10), and the dealer, whom
        the shoe tells at once, deals no more of it: the next card begins a new hand."""
        if self._trailing is not None or self._adrift is not None:
            number = None if self._trailing is None else self._trailing.number
            self._end_trailing()
            which = "a hand the daemon could not follow" if number is None else (
                f"the hand voided as round {number}")
            return [Notice(DEALT_AFTER_VOID, f"an unreadable card of {which}; the dealer stops "
                                             "a hand at an unreadable card, so the next card "
                                             "begins a new hand", ART10),
                    *self._count_outside_hands(None, "unreadable")]
        hand = self._hand
        if hand is None:
            # A card out of the shoe between hands, not burned, is the Player's first (Art. 7).
            hand = self._hand = self._begin_hand()
        self._count_in(hand, None)
        whose = " (the Player's first, Art. 7)" if hand.dealt == 0 else ""
        hand.condemn(ART10, f"misdeal: card {hand.dealt + 1} of the hand{whose} was unreadable "
                            "(fault unreadable_card); the deal cannot be corrected")
        return [self._close(hand)]

    def _declare(self, event: Declare) -> list[Output]:
        return []  # the dealer's call decides nothing; the pit compares it with the outcome

    def _not_applied(self, lost: object, detail: str | None) -> list[Output]:
        """The daemon could not apply an event of type ``lost`` (fault event_not_applied). What
        it would have done is unknown, so whatever it may have changed is void (Art. 10), and
        where the daemon can no longer tell where a hand begins it declines cards until the
        dealer marks a boundary, rather than guess."""
        why = f"the daemon could not apply a {lost} event" + (f" ({detail})" if detail else "")
        if lost == "card":
            return self._cards_unseen(why, 1)
        hand = self._hand
        out: list[Output] = []
        if lost in ("void", "round_start"):
            # The dealer may have ended the hand being dealt, or not: the daemon cannot tell.
            if hand is not None or self._trailing is not None:
                self._drift(why)
        elif lost in ("shoe_start", "cut_card"):
            self._doubt(why)
            if lost == "shoe_start":
                self._drift(why)
        elif lost == "demo":
            self._doubt_next = why  # the next hand may be a demonstration, or not
        elif lost == "burn":
            out += self._count_outside_hands(None, "burned, not applied")
            return out  # a burn is no part of any hand
        if hand is None:
            return out
        hand.condemn(ART10, f"{why}, after {hand.dealt} card(s) of the hand; the deal cannot "
                            "be shown to be right")
        return [*out, self._close(hand)]

    def _drift(self, why: str) -> None:
        """The daemon cannot tell where the next hand begins."""
        self._trailing = None
        self._adrift = why
        if self._hands_left is not None:  # hands it cannot see would not count toward Art. 3
            self._doubt("the daemon lost count of hands after the cut card: " + why)

    def _doubt(self, why: str) -> None:
        """Every hand of this shoe is void from its first card, until the next shoe_start."""
        if self._doubt_shoe is None:
            self._doubt_shoe = why

    def _not_for_game(self, event: Event) -> list[Output]:
        return [Notice("not_for_game", f"a {event.type} event is not part of baccarat")]

    # -- bookkeeping

    def _new_shoe(self, decks: int) -> None:
        """Art. 2: a fresh shoe; card counts, demonstrations and the cut card start over."""
        self._decks = decks
        self._capacity = CARDS_PER_DECK * decks
        self._counts = {}
        self._out_of_shoe = 0
        self._demo_hands = 0
        self._real_hand_dealt = False
        self._hands_left = None
        self._doubt_shoe = None
        self._next_card_no = None  # the new shoe numbers its cards from 1, if it numbers them

    def _count(self, card: str | None) -> str | None:
        """Count one card out of the shoe (``None``: unknown); say how it overflows the shoe."""
        self._out_of_shoe += 1
        copies = 0
        if card is not None:
            copies = self._counts[card] = self._counts.get(card, 0) + 1
        return self._overflow(card, copies)

    def _overflow(self, card: str | None, copies: int) -> str | None:
        """How the card just counted, the shoe's ``copies``-th of it, overflows the shoe, or
        None."""
        if card is not None and copies > self._decks:
            return f"card {card} is copy {copies} in a shoe of {self._decks} decks"
        if self._out_of_shoe > self._capacity:
            named = "an unknown card" if card is None else f"card {card}"
            return (f"{named} is card {self._out_of_shoe} out of a shoe of {self._decks} decks "
                    f"({self._capacity} cards)")
        return None

    def _count_in(self, hand: _Hand, card: str | None) -> None:
        """Count a card that ``hand`` holds; one the shoe cannot have held voids it (Art. 1)."""
        overflow = self._count(card)
        if overflow is not None:
            hand.condemn(ART1, overflow)

    def _count_outside_hands(self, card: str | None, what: str) -> list[Output]:
        """Count a card no hand holds (a burn, an unread card between hands): one the shoe
        cannot have held has no hand to void, so it is a notice (Art. 1)."""
        overflow = self._count(card)
        return [] if overflow is None else [Notice("card_count", f"{what}: {overflow}", ART1)]

    def _begin_hand(self) -> _Hand:
        """A new hand, already void if the shoe is past its last hand or a demonstration is over
        the limit."""
        hand = _Hand()
        if self._doubt_shoe is not None:
            hand.condemn(ART10, f"a hand of a shoe the daemon cannot follow ({self._doubt_shoe})")
        if self._doubt_next is not None:
            hand.condemn(ART10, f"a hand the daemon cannot follow ({self._doubt_next})")
            self._doubt_next = None
        if self._hands_left == 0:
            hand.condemn(ART3, "a hand dealt after the shoe's last hand (cut card, last_hand="
                               f"{self._options.last_hand}); the shoe must be reshuffled")
        elif self._hands_left is not None:
            self._hands_left -= 1
        if self._demo_marked:
            self._demo_marked = False
            hand.demo = True
            if self._real_hand_dealt:
                hand.condemn(ART2_2, "a demonstration hand after the shoe's first real hand")
            elif self._demo_hands >= DEMO_HANDS_PER_SHOE:
                hand.condemn(ART2_2, f"demonstration hand {self._demo_hands + 1} in one shoe; "
                                     f"at most {DEMO_HANDS_PER_SHOE} are allowed")
            else:
                self._demo_hands += 1
        else:
            self._real_hand_dealt = True
        return hand

    def _misdeal(self, hand: _Hand, what: str) -> list[Output]:
        """Art. 10: ``hand``, in progress, cannot be completed, so it is void."""
        hand.condemn(ART10, f"misdeal: {what} arrived after {hand.dealt} card(s), before the "
                            "hand had every card the drawing rules call for")
        return [self._close(hand)]

    def _close(self, hand: _Hand) -> Outcome:
        """The hand's outcome; the next card begins a new hand."""
        self._hand = None
        hand.number = number = self._round
        self._round = number + 1
        extra = _DEMO_EXTRA if hand.demo else _NO_EXTRA
        if hand.void_article is not None:
            return Outcome(
                "baccarat", number, "void", hand.result(None), _VOID_BETS[hand.void_article],
                void_reason=hand.void_reason, article=hand.void_article, extra=extra,
            )
        player_total, banker_total = hand.player_total, hand.banker_total
        if player_total > banker_total:
            winner, winning_total = _PLAYER, player_total
        elif banker_total > player_total:
            winner, winning_total = _BANKER, banker_total
        else:
            winner, winning_total = _TIE, player_total
        if hand.demo:
            bets = _VOID_BETS[ART2_2]  # Art. 2.2: a demonstration settles nothing
        else:
            player, banker = hand.player, hand.banker
            bets = self._bets[_bet_index(
                winner, winning_total, player[0][0] == player[1][0], banker[0][0] == banker[1][0]
            )]
        return Outcome(
            "baccarat", number, "complete", hand.result(_WINNERS[winner]), bets, extra=extra
        )


_HANDLERS: Final[dict[type[Event], Callable[[BaccaratTable, Any], list[Output]]]] = {
    CardDealt: BaccaratTable._card,
    ShoeStart: BaccaratTable._shoe_start,
    Burn: BaccaratTable._burn,
    CutCard: BaccaratTable._cut_card,
    Demo: BaccaratTable._demo,
    RoundStart: BaccaratTable._round_start,
    Void: BaccaratTable._void,
    Fault: BaccaratTable._fault,
    Declare: BaccaratTable._declare,
}
