"""Reference oracle for Q Poker (docs/rules/qpoker.md, the project's qpoker decisions).

It owns a second reading of the hand ranking (Art. 4, 8, Reading R-Q1), the Dobo and Play pays
(Art. 9, 10), and the round's irregularities (Art. 1, 11) as the project decided them, used by
``tests/daemon/test_replay_oracle.py`` to check ``tabled replay`` on the real (unredacted)
stream. It must never import ``tabled.games.table``.

A void caused by a dealing event itself (a duplicate, out of order, a wrong count, an exposed
dealer card) leaves its ``result`` uncompared: the decisions do not say whether that event's cards
count as dealt. Other voids pin the cards dealt before them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tabled.contract.faults import DEVICE_LOST, SHUFFLER_FAILURES
from tests.oracle import OutOfScope, Record

Seat = int | str
DEALER = "dealer"
RANKS = "23456789TJQKA"  # Art. 4(2), low to high
SUITS = "DCHS"  # Art. 4(1), low to high
QUEEN = RANKS.index("Q")
#: Art. 8's classes, low to high.
CLASSES = ("high_card", "pair", "flush", "straight", "three_of_a_kind", "straight_flush")
#: Art. 10: Dobo pays by the seat's own hand; a high card loses.
DOBO_PAYS = {"straight_flush": "40:1", "three_of_a_kind": "30:1", "straight": "6:1",
             "flush": "4:1", "pair": "1:1"}
#: Art. 9.7: Play pays by the player's hand when it beats a qualifying dealer.
PLAY_PAYS = {"straight_flush": "3:1", "three_of_a_kind": "2:1", "straight": "3:2"}
#: ``void`` reasons that name their own article; any other reason is a misdeal (Art. 11.1).
VOID_ARTICLES = frozenset(f"qpoker.art11.{n}" for n in range(1, 6))
OPTION_GRID: tuple[dict[str, str], ...] = ({},)

VOID_SEAT = {"dobo": {"result": "void"}, "play": {"result": "void"}}


def _rank(card: str) -> int:
    return RANKS.index(card[0])


def _suit(card: str) -> int:
    return SUITS.index(card[1])


def hand_class(cards: Sequence[str]) -> str:
    """The Art. 8 class of three cards."""
    ranks = sorted(_rank(c) for c in cards)
    flush = len({c[1] for c in cards}) == 1
    straight = len(set(ranks)) == 3 and (
        ranks[2] - ranks[0] == 2 or ranks == [0, 1, RANKS.index("A")]  # A-2-3 (not K-A-2)
    )
    if straight and flush:
        return "straight_flush"
    if len(set(ranks)) == 1:
        return "three_of_a_kind"
    if straight:
        return "straight"
    if flush:
        return "flush"
    if len(set(ranks)) == 2:
        return "pair"
    return "high_card"


def hand_key(cards: Sequence[str]) -> tuple[int, ...]:
    """A key ordering hands as Art. 8 compares them; two hands from one deck never tie."""
    kind = hand_class(cards)
    by_rank = sorted(cards, key=_rank, reverse=True)
    top = by_rank[0]  # R-Q1: the highest-ranked card, the Ace in A-2-3 as in A-K-Q
    ranks = [_rank(c) for c in by_rank]
    head = CLASSES.index(kind)
    if kind in ("straight", "straight_flush"):
        low_straight = ranks == [RANKS.index("A"), 1, 0]
        return (head, -1 if low_straight else ranks[0], _suit(top))
    if kind == "three_of_a_kind":
        return (head, ranks[0])
    if kind == "pair":
        paired = ranks[1]  # the middle of three sorted ranks is always in the pair
        odd = next(c for c in by_rank if _rank(c) != paired)
        return (head, paired, _rank(odd), _suit(odd))
    return (head, *ranks, _suit(top))  # flush, high card: ranks high to low, then top suit


def qualifies(cards: Sequence[str]) -> bool:
    """Art. 9.4: the dealer plays with Q-high or better."""
    return hand_class(cards) != "high_card" or max(_rank(c) for c in cards) >= QUEEN


def play_bet(player: Sequence[str], dealer: Sequence[str]) -> dict[str, str]:
    """Art. 9.5-9.7: a Play wager against the dealer's hand."""
    if not qualifies(dealer):
        return {"result": "win", "pays": "1:2"}
    player_key, dealer_key = hand_key(player), hand_key(dealer)
    if player_key == dealer_key:
        raise AssertionError(f"two disjoint hands tie: {player} {dealer}")
    if dealer_key > player_key:
        return {"result": "lose"}
    return {"result": "win", "pays": PLAY_PAYS.get(hand_class(player), "1:1")}


def dobo_bet(cards: Sequence[str]) -> dict[str, str]:
    """Art. 9.1, 10: the Dobo wager on a seat's own hand."""
    pays = DOBO_PAYS.get(hand_class(cards))
    return {"result": "win", "pays": pays} if pays else {"result": "lose"}



def _exposed(event: Mapping[str, Any], cards: list[str]) -> bool:
    """Whether any card of a dealing event was seen face up: ``face_up``, or a card of the
    event named in its ``exposed`` list (one card of a hand turned over, Art. 11.2 / 11.3)."""
    listed = event.get("exposed")
    return bool(event.get("face_up")) or (
        isinstance(listed, list) and any(card in listed for card in cards))

class QPokerOracle:
    """One Q Poker table, fed event dicts one by one; ``outcomes`` collects the records."""

    def __init__(self, positions: int) -> None:
        self.positions = positions
        self.outcomes: list[Record] = []
        self.declared: tuple[int, ...] | None = None  # seats of the latest round_start
        # after a round with declared seats is voided midway, the rest of its deal may still
        # come: it belongs to that void round until the next round_start (project decision)
        self.deal_voided = False
        # without a seat list, the rest of such a deal ends with the dealer's cards (Art. 7: the
        # dealer is dealt last): how many are still to come
        self.dealer_rest = 0
        self._clear()

    def _clear(self) -> None:
        """No round being dealt: nothing dealt, nothing decided."""
        self.mode: str | None = None  # "hand" (shuffler) or "card" (shoe); set by the 1st event
        self.bet_seats: list[int] = []
        self.fixed = False  # the bet seats are known (declared, or inferred at the dealer's turn)
        self.order: list[Seat] = []  # Art. 7: the seat of every dealing event, in turn
        self.turn = 0
        self.cards: dict[Seat, list[str]] = {}
        self.stray: dict[int, list[str]] = {}  # Art. 11.4: seats dealt without a bet
        self.seen: set[str] = set()
        self.decisions: dict[int, bool] = {}
        self.listed = False  # the bet seats came from a round_start
        self.opened = False  # a round_start began a round (its deal may not have begun)
        self.dealer_dealt = 0  # cards dealt to the dealer, in their place or not

    @property
    def dealing(self) -> bool:
        return self.mode is not None

    @property
    def dealt(self) -> bool:
        return self.fixed and self.turn == len(self.order)

    def _fix_seats(self) -> None:
        rotation: list[Seat] = [*self.bet_seats, DEALER]
        self.order = rotation * (3 if self.mode == "card" else 1)
        self.fixed = True

    def _begin(self, mode: str) -> None:
        self.mode = mode
        if self.declared is not None:
            self.bet_seats = sorted(self.declared)
            self.listed = True
            self._fix_seats()

    def _finish(self, record: Record) -> None:
        record = {"game": "qpoker", "round": len(self.outcomes) + 1, **record}
        self.outcomes.append(record)
        self.declared = None
        self._clear()

    @property
    def number(self) -> int:
        """The number of the round being dealt, or of the next one: every round before it has
        had its outcome, void ones included."""
        return len(self.outcomes) + 1

    @property
    def open(self) -> bool:
        """A round has begun: its round_start, or its first dealing event."""
        return self.opened or self.dealing

    def _void(self, article: str, cards_known: bool = True) -> None:
        # A round whose seats were listed and whose deal is not complete (cut short, or not
        # begun) may still see the rest of its deal: it belongs to this void round.
        listed = self.listed or (not self.dealing and self.declared is not None)
        self.deal_voided = listed and not self.dealt
        rest = not listed and self.dealing and not self.dealt
        self.dealer_rest = max(0, 3 - self.dealer_dealt) if rest else 0
        if not self.dealing and self.declared is not None:
            self.bet_seats = sorted(self.declared)
        result: dict[str, Any] = {}
        if cards_known:
            seats: dict[str, Any] = {str(s): {"cards": list(self.cards[s])}
                                     for s in self.bet_seats if self.cards.get(s)}
            seats.update({str(s): {"cards": list(c), "status": "void"}
                          for s, c in self.stray.items()})
            result["seats"] = seats
            if self.cards.get(DEALER):
                result["dealer"] = {"cards": list(self.cards[DEALER])}
        self._finish({"status": "void", "article": article, "result": result,
                      "bets": {str(s): VOID_SEAT for s in self.bet_seats}})

    def _settle(self) -> None:
        dealer = self.cards[DEALER]
        seats: dict[str, Any] = {}
        bets: dict[str, Any] = {}
        for seat in self.bet_seats:
            cards = self.cards[seat]
            seats[str(seat)] = {"cards": cards, "hand": hand_class(cards), "status": "active"}
            play = self.decisions.get(seat, False)  # Reading R-Q2: no decision is a fold
            bets[str(seat)] = {
                "dobo": dobo_bet(cards),
                "play": play_bet(cards, dealer) if play else {"result": "fold"},
            }
        seats.update({str(s): {"cards": c, "status": "void"} for s, c in self.stray.items()})
        self._finish({
            "status": "complete",
            "result": {"dealer": {"cards": dealer, "hand": hand_class(dealer),
                                  "qualifies": qualifies(dealer)},
                       "seats": seats},
            "bets": bets,
        })

    def _dealt(self, mode: str, seat: Seat, cards: list[str], face_up: bool) -> None:
        """A ``card`` or ``hand`` event."""
        if seat == DEALER:
            self.dealer_dealt += len(cards)
        if not self.dealing:
            self._begin(mode)
        elif mode != self.mode:
            return self._void("qpoker.art11.1", cards_known=False)  # shoe and shuffler mixed
        if self.seen.intersection(cards) or len(set(cards)) < len(cards):
            return self._void("qpoker.art1", cards_known=False)  # one deck: no card twice
        if self.fixed and seat != DEALER and seat not in self.bet_seats:
            assert isinstance(seat, int)
            self.stray.setdefault(seat, []).extend(cards)  # Art. 11.4: that seat alone is void
            self.seen.update(cards)
            return None
        if mode == "hand" and len(cards) != 3:
            return self._void("qpoker.art11.1", cards_known=False)  # wrong number of cards
        if not self.fixed:  # seats inferred: those dealt before the dealer, ascending
            if seat == DEALER:
                self._fix_seats()
            elif self.bet_seats and int(seat) <= self.bet_seats[-1]:
                return self._void("qpoker.art11.1", cards_known=False)
            else:
                self.bet_seats.append(int(seat))
                self.order.append(seat)
        if self.turn >= len(self.order) or self.order[self.turn] != seat:
            return self._void("qpoker.art11.1", cards_known=False)  # out of order, a 4th card
        self.turn += 1
        self.seen.update(cards)
        self.cards.setdefault(seat, []).extend(cards)
        if seat == DEALER and face_up:
            return self._void("qpoker.art11.3", cards_known=False)
        return None  # a player's card exposed: the round stands (Art. 11.2)

    def feed(self, event: Mapping[str, Any]) -> None:
        """Apply one event dict."""
        kind = event["type"]
        if kind in ("decision", "reveal", "void") and event.get("round", self.number) \
                != self.number:
            return  # the dealer's command for another round (it came late): only noticed
        if self.deal_voided and kind in ("card", "hand"):
            return  # the rest of a deal voided midway: not a new round
        if self.dealer_rest and kind in ("card", "hand"):
            if event["seat"] == DEALER:
                self.dealer_rest = max(0, self.dealer_rest - len(event.get("cards") or [1]))
            return  # the rest of an unlisted deal voided midway, until the dealer's cards
        if kind == "card":
            self._dealt("card", event["seat"], [event["card"]], _exposed(event, [event["card"]]))
        elif kind == "hand":
            cards = list(event["cards"])
            self._dealt("hand", event["seat"], cards, _exposed(event, cards))
        elif kind == "round_start":
            if self.open:  # Art. 11.1: a new round before this one has its cards; never dropped
                self._void("qpoker.art11.1")
            self.deal_voided = False
            self.dealer_rest = 0
            self.opened = True
            seats = event.get("seats")
            if seats is not None and not all(1 <= s <= self.positions for s in seats):
                raise OutOfScope(f"seats {seats} outside 1..{self.positions}")
            self.declared = None if seats is None else tuple(seats)
        elif kind == "decision":
            seat = event["seat"]
            if (self.dealing and seat in self.bet_seats and len(self.cards.get(seat, ())) == 3
                    and seat not in self.decisions):
                self.decisions[seat] = event["play"]  # Art. 9.3: cannot be withdrawn
        elif kind == "reveal" and self.open:
            if self.dealt:
                self._settle()
            else:
                self._void("qpoker.art11.1")
        elif kind == "void" and self.open:
            reason = event.get("reason")
            self._void(reason if reason in VOID_ARTICLES else "qpoker.art11.1")
        elif kind == "fault" and event["code"] == "event_not_applied":
            raise OutOfScope("an event the daemon could not apply")
        elif kind == "fault" and self.open and not self.dealt and (
            event["code"] in SHUFFLER_FAILURES
            or (event["code"] == DEVICE_LOST
                and event.get("kind", event.get("family")) == "shuffler")
        ):
            self._void("qpoker.art11.5")  # the machine was dealing the round: from its start
        # Anything else (other games' events, a reveal or void with no round) is only noticed.


def replay(events: Iterable[Mapping[str, Any]], options: Mapping[str, str]) -> list[Record]:
    """The outcome records the rules give for ``events`` under ``tabled replay`` ``options``."""
    oracle = QPokerOracle(int(options.get("positions", "7")))
    for event in events:
        oracle.feed(event)
    return oracle.outcomes
