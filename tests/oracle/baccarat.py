"""Reference oracle for Baccarat (docs/rules/baccarat.md, the project's baccarat decisions).

It owns a plain second reading of the drawing rules (Art. 9), the pay table (Art. 11, 12, 16,
17), the shoe's last-hand rule (Art. 3, Reading R-B2), demonstration hands (Art. 2.2) and
misdeals (Art. 10), as used by ``tests/daemon/test_replay_oracle.py`` to check ``tabled
replay``. It is also the dealer of :mod:`tests.oracle.streams`: :func:`deal` says which cards a
hand still needs.

It must never import ``tabled.games.table``. Cases the decisions leave open and the generator never
produces (a count violation, a demo past the limit, a cut card during a demo) raise
:class:`~tests.oracle.OutOfScope`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.oracle import OutOfScope, Record

#: Art. 5: 10, J, Q, K count 0, the others their face value (A = 1).
POINTS = {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
          "T": 0, "J": 0, "Q": 0, "K": 0}
BETS = ("player", "banker", "tie", "player_pair", "banker_pair")
#: Art. 16: the tie's pay follows the drawing method.
TIE_PAYS = {1: "14:1", 2: "9:1"}
#: Art. 17: the winning totals that change a 1:1 pay, and to what, per commission mode.
COMMISSION_PAYS = {
    "five_percent": {7: "19:20", 8: "19:20", 9: "19:20"},
    "half_on_four": {4: "1:2"},
}
#: The regulated options the check runs, as ``tabled replay --option`` strings.
OPTION_GRID: tuple[dict[str, str], ...] = tuple(
    {"method": method, "commission": commission, "last_hand": last_hand}
    for method in ("1", "2")
    for commission in ("five_percent", "half_on_four")
    for last_hand in ("this", "one_more")
)

WIN_1_1 = {"result": "win", "pays": "1:1"}
LOSE = {"result": "lose"}
PUSH = {"result": "push"}
VOID_BETS = {name: {"result": "void"} for name in BETS}


def total(cards: Iterable[str]) -> int:
    """Art. 5: the hand's points, modulo 10."""
    return sum(POINTS[card[0]] for card in cards) % 10


@dataclass(frozen=True)
class Deal:
    """The cards of one hand so far, split between Player and Banker in shoe order."""

    player: tuple[str, ...]
    banker: tuple[str, ...]
    complete: bool
    natural: bool


def deal(cards: Sequence[str], method: int) -> Deal:
    """Split ``cards`` (the hand's cards in the order they left the shoe) into the two hands.

    Reading R-B1: P1 B1 P2 B2, then the third cards as Art. 9 calls them. ``complete`` says no
    further card is called for; ``cards`` must not hold more than the rules call for.
    """
    hands: dict[str, list[str]] = {"player": [], "banker": []}
    shoe = iter(cards)

    def draw(side: str) -> bool:
        card = next(shoe, None)
        if card is not None:
            hands[side].append(card)
        return card is not None

    def result(complete: bool, natural: bool = False) -> Deal:
        return Deal(tuple(hands["player"]), tuple(hands["banker"]), complete, natural)

    for side in ("player", "banker", "player", "banker"):  # Art. 7
        if not draw(side):
            return result(False)
    points = {side: total(hand) for side, hand in hands.items()}
    if max(points.values()) >= 8:  # Art. 9, 1: a natural decides the hand
        return result(True, natural=True)
    if points["player"] == points["banker"]:  # Art. 9, 2: both draw, Player first
        return result(draw("player") and draw("banker"))
    # Art. 9, 3: the lower hand draws first; then the other draws or not.
    lower, other = sorted(points, key=points.__getitem__)
    if not draw(lower):
        return result(False)
    now = total(hands[lower])
    other_draws = now > points[other] if method == 2 else now >= points[other]
    return result(not other_draws or draw(other))


def winner(hand: Deal) -> str:
    """Art. 9: the higher total wins, equal totals tie."""
    player, banker = total(hand.player), total(hand.banker)
    if player == banker:
        return "tie"
    return "player" if player > banker else "banker"


def _is_pair(cards: Sequence[str]) -> bool:
    """Art. 12: the first two cards have the same rank (suits ignored)."""
    return cards[0][0] == cards[1][0]


def settle(hand: Deal, method: int, commission: str) -> dict[str, dict[str, str]]:
    """Every wager of a complete hand (Art. 11, 12, 16, 17)."""
    won = winner(hand)
    bets: dict[str, dict[str, str]] = {}
    if won == "tie":
        bets["player"] = bets["banker"] = PUSH  # Art. 11
        bets["tie"] = {"result": "win", "pays": TIE_PAYS[method]}
    else:
        winning_total = total(hand.player if won == "player" else hand.banker)
        pays = COMMISSION_PAYS[commission].get(winning_total, "1:1")
        bets[won] = {"result": "win", "pays": pays}
        bets["banker" if won == "player" else "player"] = LOSE
        bets["tie"] = LOSE
    for name, cards in (("player_pair", hand.player), ("banker_pair", hand.banker)):
        bets[name] = {"result": "win", "pays": "11:1"} if _is_pair(cards) else LOSE
    return bets


def _result(hand: Deal, complete: bool) -> dict[str, Any]:
    """The record's ``result``; a void names no winner and leaves ``natural`` open."""
    result: dict[str, Any] = {
        "player_cards": list(hand.player),
        "banker_cards": list(hand.banker),
        "player_total": total(hand.player),
        "banker_total": total(hand.banker),
        "winner": winner(hand) if complete else None,
    }
    if complete:
        result["natural"] = hand.natural
    return result


class BaccaratOracle:
    """One table's shoe, fed event dicts one by one; ``outcomes`` collects the records."""

    def __init__(self, method: int, commission: str, last_hand: str, decks: int) -> None:
        self.method, self.commission, self.last_hand = method, commission, last_hand
        self.outcomes: list[Record] = []
        self._new_shoe(decks)
        self.hand: list[str] | None = None
        # The cards of a hand the daemon voided because the shoe stayed lost, while the dealer
        # went on dealing it: the cards its drawing still calls for are its own (Art. 10).
        self.rest_of_void: list[str] | None = None

    def _new_shoe(self, decks: int) -> None:
        self.decks = decks
        self.copies: Counter[str] = Counter()
        self.out_of_shoe = 0
        self.hands_dealt = 0  # real hands begun in this shoe, demonstrations not counted
        self.last_hand_number: int | None = None
        self.demos = 0
        self.next_is_demo = False
        self.hand_is_demo = False

    def _count(self, card: str | None) -> None:
        """Card-count integrity: a real shoe never breaks it, so the oracle only asserts it."""
        self.out_of_shoe += 1
        if card is not None:
            self.copies[card] += 1
            if self.copies[card] > self.decks:
                raise OutOfScope(f"{card} seen more often than the {self.decks} decks hold")
        if self.out_of_shoe > 52 * self.decks:
            raise OutOfScope(f"more than {52 * self.decks} cards out of the shoe")

    def _emit(self, status: str, result: dict[str, Any], bets: Mapping[str, Any],
              article: str | None = None, **flags: bool) -> None:
        record: Record = {"game": "baccarat", "round": len(self.outcomes) + 1, "status": status}
        if article is not None:
            record["article"] = article
        record.update(flags)
        record["result"] = result
        record["bets"] = dict(bets)
        self.outcomes.append(record)

    def _void_hand(self, article: str) -> None:
        assert self.hand is not None
        if self.hand_is_demo:
            raise OutOfScope("a demonstration hand voided")
        self._emit("void", _result(deal(self.hand, self.method), False), VOID_BETS, article)
        self.hand = None

    def _begin(self) -> list[str]:
        """A hand begins: a card out of the shoe between hands is the Player's first (Art. 7)."""
        self.hand = []
        self.hand_is_demo, self.next_is_demo = self.next_is_demo, False
        if not self.hand_is_demo:
            self.hands_dealt += 1
        return self.hand

    def _card(self, card: str) -> None:
        self._count(card)
        if self.rest_of_void is not None:
            self.rest_of_void.append(card)
            if deal(self.rest_of_void, self.method).complete:
                self.rest_of_void = None
            return
        if self.hand is None:
            self._begin()
        assert self.hand is not None
        self.hand.append(card)
        hand = deal(self.hand, self.method)
        if not hand.complete:
            return
        self.hand = None
        if self.hand_is_demo:  # Art. 2.2: dealt by the rules, settles nothing
            self._emit("complete", _result(hand, True), VOID_BETS, demo=True)
        elif self.last_hand_number is not None and self.hands_dealt > self.last_hand_number:
            # Art. 3 / R-B2: past the last hand the shoe must be reshuffled.
            self._emit("void", _result(hand, False), VOID_BETS, "baccarat.art3")
        else:
            self._emit("complete", _result(hand, True),
                       settle(hand, self.method, self.commission))

    def _cut_card(self) -> None:
        """Reading R-B2: the hand in progress, or else the next one, is hand k."""
        if self.hand is not None and self.hand_is_demo:
            raise OutOfScope("the cut card came out during a demonstration hand")
        in_progress = self.hand is not None or self.rest_of_void is not None
        k = self.hands_dealt if in_progress else self.hands_dealt + 1
        self.last_hand_number = k if self.last_hand == "this" else k + 1

    def _demo(self) -> None:
        if self.hands_dealt or self.demos >= 3 or self.next_is_demo:
            raise OutOfScope("a demo past Art. 2.2's limit")
        self.demos += 1
        self.next_is_demo = True

    def _at_the_table(self) -> tuple[int, ...]:
        """The numbers a void may name for the hand at the table: the hand being dealt (or
        the next), and a hand already voided for a lost shoe that is still being dealt, which
        a console that counts outcomes calls by the next number."""
        upcoming = len(self.outcomes) + 1
        return (upcoming - 1, upcoming) if self.rest_of_void is not None else (upcoming,)

    def feed(self, event: Mapping[str, Any]) -> None:
        """Apply one event dict."""
        kind = event["type"]
        if kind == "card":
            self._card(event["card"])
            return
        if kind == "fault" and event["code"] == "event_not_applied":
            raise OutOfScope("an event the daemon could not apply")
        if kind == "void" and "round" in event and event["round"] not in self._at_the_table():
            return  # a void for another hand (it came late): only noticed
        following = self.rest_of_void is not None
        # The dealer stopped the hand: whatever a void hand still lacked will not come. (A void
        # the daemon raised for a lost shoe is not the dealer's: see below.)
        dealer_stops = kind in ("shoe_start", "round_start", "void") or (
            kind == "fault" and event["code"] == "unreadable_card")
        if dealer_stops and not (kind == "void" and event.get("device_lost") is True):
            self.rest_of_void = None
        if kind == "shoe_start":
            if self.hand is not None:
                self._void_hand("baccarat.art10")
            self._new_shoe(event["decks"])
        elif kind == "burn":
            self._count(event.get("card"))  # mid-hand: a notice, the hand goes on
        elif kind == "cut_card":
            self._cut_card()
        elif kind == "demo":
            self._demo()
        elif kind in ("round_start", "void"):
            if self.hand is not None:  # Art. 10: a hand still missing cards
                lost = kind == "void" and event.get("device_lost") is True
                rest = self.hand
                self._void_hand("baccarat.art10")
                if lost:  # the dealer saw nothing and deals on: the rest is this hand's
                    self.rest_of_void = rest
        elif kind == "fault" and event["code"] == "unreadable_card":
            self._count(None)
            if self.hand is None and not following:
                self._begin()  # an unread card between hands is the Player's first (Art. 7)
            if self.hand is not None:
                self._void_hand("baccarat.art10")  # it cannot be read: no correction
        # Other faults and other games' events change nothing.


def replay(events: Iterable[Mapping[str, Any]], options: Mapping[str, str]) -> list[Record]:
    """The outcome records the rules give for ``events`` under ``tabled replay`` ``options``."""
    oracle = BaccaratOracle(
        method=int(options.get("method", "1")),
        commission=options.get("commission", "five_percent"),
        last_hand=options.get("last_hand", "this"),
        decks=int(options.get("decks", "8")),
    )
    for event in events:
        oracle.feed(event)
    return oracle.outcomes
