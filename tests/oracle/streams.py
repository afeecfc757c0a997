"""Seeded generators of long, realistic event streams for the three games, irregularities included.

This module owns the streams that ``tests/daemon/test_replay_oracle.py`` feeds both to ``tabled
replay`` and to the oracles: real shoes and decks shuffled by an injected ``random.Random`` (the
same seed gives the same stream), cards dealt in the order the rules call for them, and a few
per cent of irregular events. Each generator returns a list of event dicts of docs/contract.md
(``"v": 1``).

It must never produce a case an oracle declares out of scope, and never import
``tabled.games.table``:
the baccarat dealer is the oracle's own :func:`tests.oracle.baccarat.deal`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tabled.contract.faults import (
    DEVICE_LOST,
    LINK_ERRORS,
    SENSOR_FAULT,
    SHUFFLER_FAILURES,
    UNREADABLE_CARD,
)
from tests.oracle.baccarat import deal

Event = dict[str, Any]
DECK = tuple(rank + suit for rank in "A23456789TJQK" for suit in "SHCD")

#: The share of rounds with an irregular event.
IRREGULAR = 0.04
#: The share of events of another game slipped in (each gets a notice, nothing else).
STRAY_EVENT = 0.01
#: The share of a dealer's commands (decision, reveal, void) that name their round, and the
#: share of rounds in which a command for an earlier round arrives late (each is declined with
#: a notice, nothing else: the rounds it lands in are unchanged).
NAMES_ITS_ROUND = 0.5
LATE_COMMAND = 0.02
FOREIGN_EVENTS: dict[str, tuple[Event, ...]] = {
    "baccarat": ({"type": "roll", "dice": [3, 4]}, {"type": "decision", "seat": 1, "play": True},
                 {"type": "reveal"}, {"type": "hand", "seat": 2, "cards": ["AS", "KD", "2C"]},
                 {"type": "no_roll", "reason": "off_table"},
                 {"type": "withheld", "seat": "dealer", "count": 1}),
    "craps": ({"type": "card", "card": "QH"}, {"type": "shoe_start", "decks": 8},
              {"type": "decision", "seat": 3, "play": False}, {"type": "reveal"}),
    "qpoker": ({"type": "roll", "dice": [6, 6]}, {"type": "no_roll", "reason": "off_table"},
               {"type": "shoe_start", "decks": 6}, {"type": "burn", "card": "7C"},
               {"type": "cut_card"}, {"type": "demo"}),
}


class _Stream:
    """The events of one table, stamped with their device and its per-device sequence number."""

    def __init__(self, rng: random.Random, game: str) -> None:
        self.rng = rng
        self.game = game
        self.events: list[Event] = []
        self._seq: dict[str, int] = {}

    def stamp(self, device: str, fields: Mapping[str, Any]) -> Event:
        self._seq[device] = self._seq.get(device, 0) + 1
        return {"v": 1, "type": fields["type"], "device": device, "seq": self._seq[device],
                **fields}

    def emit(self, device: str, **fields: Any) -> None:
        self.events.append(self.stamp(device, fields))

    def maybe_foreign(self) -> None:
        """Now and then an event of another game, which must change nothing."""
        if self.rng.random() < STRAY_EVENT:
            self.emit("console", **self.rng.choice(FOREIGN_EVENTS[self.game]))


def write_jsonl(path: Path, events: Iterable[Mapping[str, Any]]) -> None:
    """Write events as JSON Lines, the form ``tabled replay`` reads."""
    with path.open("w", encoding="utf-8") as out:
        for event in events:
            out.write(json.dumps(event, separators=(",", ":")))
            out.write("\n")


# -- baccarat ----------------------------------------------------------------------------------

#: Art. 2: burning "as many as the first card's value says" (court cards and tens burn ten).
BURN_COUNT = {"A": 1, "T": 10, "J": 10, "Q": 10, "K": 10} | {str(n): n for n in range(2, 10)}


class _Shoe:
    """One physical baccarat shoe: shuffled decks and a cut card that comes out in its place."""

    def __init__(self, stream: _Stream, method: int) -> None:
        rng = stream.rng
        self.stream, self.method = stream, method
        self.decks = rng.randint(6, 12)  # Art. 1
        self.cards = list(DECK) * self.decks
        rng.shuffle(self.cards)
        self.next = 0
        self.cut_at = len(self.cards) - rng.randint(14, 40)  # Art. 2: about 12 from the end
        self.cut_out = False

    @property
    def left(self) -> int:
        return len(self.cards) - self.next

    def draw(self) -> str:
        """The next card; the cut card comes out first when it lies in front of it."""
        if self.next == self.cut_at:
            self.stream.emit("shoe", type="cut_card")
            self.cut_out = True
        card = self.cards[self.next]
        self.next += 1
        return card

    def hand_length(self) -> int:
        """How many cards the next hand takes (peeking at the shoe, as the dealer's rules do)."""
        length = 4
        while not deal(self.cards[self.next:self.next + length], self.method).complete:
            length += 1
        return length

    def burn(self) -> None:
        card = self.draw()
        shown = self.stream.rng.random() < 0.5
        self.stream.emit("shoe", type="burn", **({"card": card} if shown else {}))

    def deal_hand(self, stop_after: int | None = None, late: Event | None = None) -> None:
        """Deal one hand by Art. 9, or only its first ``stop_after`` cards; ``late``, a command
        for an earlier hand, arrives after its first card."""
        rng, stream = self.stream.rng, self.stream
        cards: list[str] = []
        while stop_after is None or len(cards) < stop_after:
            if len(cards) == 1 and late is not None:
                stream.emit("console", **late)
            if cards and stop_after is None and not self.cut_out and rng.random() < 0.005:
                self.burn()  # mid-hand: a notice (Art. 8), the hand goes on
            stream.maybe_foreign()
            if cards and rng.random() < 0.005:
                stream.emit("shoe", type="fault", code=LINK_ERRORS)  # no output
            cards.append(self.draw())
            exposed = {"face_up": True} if rng.random() < 0.05 else {}
            stream.emit("shoe", type="card", card=cards[-1], **exposed)  # Art. 4: it stands
            if deal(cards, self.method).complete:
                return


def _named(rng: random.Random, number: int) -> dict[str, int]:
    """A command's ``round``, named or not (``NAMES_ITS_ROUND``)."""
    return {"round": number} if rng.random() < NAMES_ITS_ROUND else {}


def _baccarat_shoe(stream: _Stream, method: int, last_hand: str, budget: int,
                   first_round: int = 1) -> int:
    """Deal one shoe (or its first ``budget`` hands), whose first hand is round
    ``first_round``; return how many hands it dealt."""
    rng = stream.rng
    shoe = _Shoe(stream, method)
    stream.emit("shoe", type="shoe_start", decks=shoe.decks)
    if rng.random() < 0.5:  # Art. 2: burn as many as there are decks ...
        burns = shoe.decks
    else:  # ... or as many as the first card's value, the first card shown
        first = shoe.draw()
        stream.emit("shoe", type="burn", card=first)
        burns = BURN_COUNT[first[0]]
    for _ in range(burns):
        shoe.burn()
    hands = 0
    for _ in range(min(budget, rng.choice((0, 0, 1, 2, 3)))):  # Art. 2.2: up to 3 demo hands
        stream.emit("console", type="demo")
        shoe.deal_hand()
        hands += 1
    after_cut = -1  # hands still to deal once the cut card is out: R-B2's last hand
    while hands < budget and after_cut != 0:
        was_out = shoe.cut_out
        if rng.random() < 0.3:
            stream.emit("console", type="round_start")
        if not was_out and rng.random() < 0.03:
            shoe.burn()  # Art. 8: a burn at the start of a hand
        # A misdeal stays well clear of the cut card, whose hand R-B2 must number plainly.
        number = first_round + hands  # every hand is one outcome
        if shoe.next + 12 < shoe.cut_at and rng.random() < IRREGULAR:
            _baccarat_misdeal(shoe, rng.randint(1, shoe.hand_length() - 1), number)
        elif shoe.next + 12 < shoe.cut_at and rng.random() < IRREGULAR / 2:
            # Art. 7: a card out of the shoe between hands is the Player's first; unread, its
            # hand is void (Art. 10) and the dealer stops it there.
            shoe.draw()
            stream.emit("shoe", type="fault", code=UNREADABLE_CARD)
        else:
            late = ({"type": "void", "reason": "misdeal", "round": number - 1}
                    if number > 1 and rng.random() < LATE_COMMAND else None)
            shoe.deal_hand(late=late)
            if shoe.cut_out and not was_out:
                after_cut = 0 if last_hand == "this" else 1
            elif after_cut > 0:
                after_cut -= 1
        hands += 1
    if after_cut == 0 and hands < budget and shoe.left >= 6 and rng.random() < 0.1:
        shoe.deal_hand()  # Art. 3: a hand past the last one, void
        hands += 1
    return hands


def _baccarat_misdeal(shoe: _Shoe, dealt: int, number: int) -> None:
    """Hand ``number`` cut short after ``dealt`` cards (Art. 10), one of the ways a table does
    it."""
    stream, rng = shoe.stream, shoe.stream.rng
    shoe.deal_hand(stop_after=dealt)
    how = rng.choice(("void", "round_start", "unreadable", "lost", "lost"))
    if how == "lost":
        # The daemon voided the hand because the shoe stayed lost (lost_void_after); the dealer
        # saw nothing and dealt on, and the shoe sends the rest when it is back: those cards
        # are the void hand's, never the next hand's. Now and then the dealer stops it first,
        # naming it by its number or, as a console that counts outcomes does, by the next.
        stream.emit("daemon", type="void", reason="device_lost: shoe shoe-1 not back within 3 s",
                    device_lost=True, **_named(rng, number))
        hand = shoe.cards[shoe.next - dealt:shoe.next]
        while not deal(hand, shoe.method).complete:
            if stream.rng.random() < 0.1:
                stop = stream.rng.choice(("void", "round_start", "unreadable"))
                if stop == "unreadable":
                    shoe.draw()
                    stream.emit("shoe", type="fault", code=UNREADABLE_CARD)
                else:
                    named = _named(rng, rng.choice((number, number + 1)))
                    stream.emit("console", type=stop, **({"reason": "dealer_button", **named}
                                                          if stop == "void" else {}))
                return
            hand.append(shoe.draw())
            stream.emit("shoe", type="card", card=hand[-1])
    elif how == "void":
        stream.emit("console", type="void", reason="misdeal", **_named(rng, number))
    elif how == "round_start":
        stream.emit("console", type="round_start")
    else:
        shoe.draw()  # the card left the shoe but could not be read
        stream.emit("shoe", type="fault", code=UNREADABLE_CARD)


def baccarat_stream(rng: random.Random, hands: int, method: int, last_hand: str) -> list[Event]:
    """Shoes dealt by drawing ``method`` until ``hands`` hands are out (each one outcome)."""
    stream = _Stream(rng, "baccarat")
    dealt = 0
    while dealt < hands:
        dealt += _baccarat_shoe(stream, method, last_hand, hands - dealt, dealt + 1)
    return stream.events


# -- craps -------------------------------------------------------------------------------------


def craps_stream(rng: random.Random, rolls: int) -> list[Event]:
    """``rolls`` throws, a few per cent of them no roll or voided; faults and other games' events
    in between (they give no outcome)."""
    stream = _Stream(rng, "craps")
    outcomes = 0
    while outcomes < rolls:
        stream.maybe_foreign()
        draw = rng.random()
        if draw < 0.01:
            code = rng.choice((SENSOR_FAULT, LINK_ERRORS, DEVICE_LOST))
            family = {"family": "dice"} if code == DEVICE_LOST else {}
            stream.emit("dice", type="fault", code=code, **family)
            continue
        if draw < 0.04:
            stream.emit("dice", type="no_roll", reason="off_table")  # Art. 1
        elif draw < 0.06:
            stream.emit("console", type="void", reason="dealer_call",
                        **_named(rng, outcomes + 1))
        elif draw < 0.07 and outcomes:  # a void for a throw already decided: declined
            stream.emit("console", type="void", reason="dealer_call",
                        round=rng.randint(1, outcomes))
            continue
        else:
            stream.emit("dice", type="roll", dice=[rng.randint(1, 6), rng.randint(1, 6)])
        outcomes += 1
    return stream.events


# -- qpoker ------------------------------------------------------------------------------------

#: Irregularities of one round (Art. 1, 11; the project's decisions), and harmless oddities.
QPOKER_IRREGULARITIES = (
    "exposed_player", "stray_seat", "exposed_dealer", "shuffler_fault", "duplicate", "void",
    "fault_before_deal", "void_before_deal",
    "early_reveal", "out_of_order", "wrong_count", "late_fault", "other_device_lost",
    "double_decision", "early_decision",
    "cut_short",  # last: the only one that leaves the round open, for the next round_start
)
#: Faults that mean the shuffler failed (qpoker.art11.5).
SHUFFLER_FAULTS: tuple[Event, ...] = (
    *({"type": "fault", "code": code} for code in sorted(SHUFFLER_FAILURES)),
    {"type": "fault", "code": DEVICE_LOST, "family": "shuffler"},
)
VOID_REASONS = (None, "dealer_call", "qpoker.art11.1", "qpoker.art11.3", "qpoker.art11.5")


class _QRound:
    """One Q Poker round being planned: its events in order, before they are stamped."""

    def __init__(self, rng: random.Random, positions: int) -> None:
        self.rng = rng
        self.deck = list(DECK)
        rng.shuffle(self.deck)
        self.seats = sorted(rng.sample(range(1, positions + 1), rng.randint(1, positions)))
        self.free_seats = [s for s in range(1, positions + 1) if s not in self.seats]
        self.mode = rng.choice(("hand", "card"))
        self.device = "shuffler" if self.mode == "hand" else "shoe"
        self.events: list[tuple[str, Event]] = []  # (device, fields)
        self.dealing: list[int] = []  # indices of the dealing events in ``events``

    def dealing_event(self, seat: int | str, cards: list[str]) -> Event:
        if self.mode == "hand":
            return {"type": "hand", "seat": seat, "cards": cards}
        (card,) = cards
        return {"type": "card", "seat": seat, "card": card}

    def plan(self) -> None:
        """Art. 7's dealing order, decisions (before or after the dealer's cards, or missing:
        Reading R-Q2) and the reveal."""
        rng = self.rng
        rotation: list[int | str] = [*self.seats, "dealer"]
        rounds, per_event = (1, 3) if self.mode == "hand" else (3, 1)
        choices = {s: rng.choices(("play", "fold", "none"), (0.6, 0.25, 0.15))[0]
                   for s in self.seats}
        early = {s for s in self.seats if rng.random() < 0.5}
        late: list[int] = []
        for turn in range(rounds):
            for seat in rotation:
                cards = [self.deck.pop() for _ in range(per_event)]
                self.dealing.append(len(self.events))
                self.events.append((self.device, self.dealing_event(seat, cards)))
                if seat == "dealer" or turn < rounds - 1 or choices[int(seat)] == "none":
                    continue
                if seat in early:
                    self.events.append(("console", self.decision(int(seat), choices[int(seat)])))
                else:
                    late.append(int(seat))
        rng.shuffle(late)
        self.events.extend(("console", self.decision(s, choices[s])) for s in late)
        self.events.append(("console", {"type": "reveal"}))

    @staticmethod
    def decision(seat: int, choice: str) -> Event:
        return {"type": "decision", "seat": seat, "play": choice == "play"}

    def cut(self, after: int, *tail: Event, device: str = "console") -> None:
        """End the round after its ``after``-th dealing event, with ``tail``."""
        del self.events[self.dealing[after] + 1:]
        self.events.extend((device, event) for event in tail)

    def voided_midway_dealt_on(self) -> None:
        """The dealer voids the round in the middle of its deal and the deal goes on to its end
        (a machine does not stop): no decision, no reveal. Without a seat list, the rest of
        the deal is the void round's until the dealer, dealt last, has had its cards."""
        where = self.dealing[self.rng.randrange(len(self.dealing) - 1)]
        dealing = [self.events[i] for i in self.dealing if i > where]
        self.events = [*self.events[:where + 1], ("console", {"type": "void"}), *dealing]

    def irregular(self, kind: str) -> bool:
        """Apply one irregularity; return whether the round stays open for a later round_start
        (only ``cut_short``)."""
        rng, n = self.rng, len(self.dealing)
        some = rng.randrange(n - 1)  # a dealing event that is not the last
        if kind == "exposed_player":  # Art. 11.2: the round stands
            players = [i for i in self.dealing if self.events[i][1]["seat"] != "dealer"]
            self.events[rng.choice(players)][1]["face_up"] = True
        elif kind == "stray_seat" and self.free_seats:  # Art. 11.4 (all seats bet: regular)
            seat = rng.choice(self.free_seats)
            count = 1 if self.mode == "hand" else rng.randint(1, 3)
            last_dealer = self.dealing[-1]
            for _ in range(count):
                cards = [self.deck.pop() for _ in range(3 if self.mode == "hand" else 1)]
                where = rng.randint(0, last_dealer)
                self.events.insert(where, (self.device, self.dealing_event(seat, cards)))
                last_dealer += 1
            if rng.random() < 0.3:  # a decision from the seat without a bet: noticed only
                self.events.insert(-1, ("console", self.decision(seat, "play")))
        elif kind == "exposed_dealer":  # Art. 11.3
            turn = rng.choice([k for k, i in enumerate(self.dealing)
                               if self.events[i][1]["seat"] == "dealer"])
            self.events[self.dealing[turn]][1]["face_up"] = True
            self.cut(turn)
        elif kind == "shuffler_fault":  # Art. 11.5
            self.cut(some, dict(rng.choice(SHUFFLER_FAULTS)), device="shuffler")
        elif kind == "fault_before_deal":  # Art. 11.5: the machine fails at the round's start
            first = self.events[self.dealing[0]]
            self.events = [("shuffler", dict(rng.choice(SHUFFLER_FAULTS)))]
            if rng.random() < 0.5:  # a lost link: its deal may still come, and is declined
                self.events.append(first)
        elif kind == "void_before_deal":  # the dealer voids the round before its first card
            self.events = [("console", {"type": "void", "reason": "dealer_call"})]
        elif kind == "duplicate":  # Art. 1: one deck
            turn = rng.randint(1, n - 1)
            earlier = self.events[self.dealing[rng.randrange(turn)]][1]
            copy = rng.choice(earlier.get("cards") or [earlier.get("card")])
            event = self.events[self.dealing[turn]][1]
            if "cards" in event:
                event["cards"][0] = copy
            else:
                event["card"] = copy
            self.cut(turn)
        elif kind == "void":  # the dealer voids the round, possibly after the dealing
            where = rng.randint(self.dealing[0], len(self.events) - 2)
            del self.events[where + 1:]
            reason = rng.choice(VOID_REASONS)
            self.events.append(("console", {"type": "void", **({"reason": reason} if reason
                                                               else {})}))
        elif kind == "early_reveal":  # Art. 11.1: cards short at the reveal
            self.cut(some, {"type": "reveal"})
        elif kind == "cut_short":  # Art. 11.1: the next round_start voids this round
            self.cut(some)
            return True
        elif kind == "out_of_order":  # Art. 11.1
            first, second = self.dealing[some], self.dealing[some + 1]
            self.events[first], self.events[second] = self.events[second], self.events[first]
            self.cut(some)
        elif kind == "wrong_count":  # Art. 11.1: a hand of 2 or 4 cards, or a 4th card
            if self.mode == "hand":
                event = self.events[self.dealing[some]][1]
                event["cards"] = event["cards"][:2] if rng.random() < 0.5 else [
                    *event["cards"], self.deck.pop()]
                self.cut(some)
            else:
                extra = self.dealing_event(rng.choice(self.seats), [self.deck.pop()])
                self.cut(n - 1, extra, device=self.device)
        elif kind == "late_fault":  # dealing is over: a shuffler fault voids nothing
            self.events.insert(self.dealing[-1] + 1, ("shuffler", dict(SHUFFLER_FAULTS[0])))
        elif kind == "other_device_lost":  # not the shuffler: voids nothing
            fault = {"type": "fault", "code": DEVICE_LOST, "family": "shoe"}
            self.events.insert(self.dealing[some] + 1, ("shoe", fault))
        elif kind == "double_decision":  # Art. 9.3: cannot be withdrawn
            seat = rng.choice(self.seats)
            for play in (True, False) if rng.random() < 0.5 else (False, True):
                self.events.insert(-1, ("console", {"type": "decision", "seat": seat,
                                                    "play": play}))
        elif kind == "early_decision":  # before the seat's cards: noticed, ignored
            self.events.insert(0, ("console", self.decision(rng.choice(self.seats), "play")))
        return False


def qpoker_stream(rng: random.Random, rounds: int, positions: int = 7) -> list[Event]:
    """``rounds`` rounds (each one outcome) with random bet seats, dealt from the shuffler or
    the shoe, a fresh deck each round."""
    stream = _Stream(rng, "qpoker")
    left_open = False  # the last round is waiting for a round_start to void it
    after_void = False  # the last round was voided midway: the next must begin with its seats
    late_commands: list[Event] = []  # the last round's commands, arriving in this one
    made = 0
    while made < rounds:
        made += 1
        stream.maybe_foreign()
        game = _QRound(rng, positions)
        game.plan()
        # A Q Poker round_start lists the seats with a bet (docs/contract.md: one without them is
        # malformed); a round may also begin with no round_start at all, and then the seats
        # dealt before the dealer's first card are the bets.
        style = "declared" if left_open or after_void or rng.random() < 0.85 else "none"
        if style == "declared":
            if made < rounds and rng.random() < 0.02:
                # a round announced and replaced before any card: void (Art. 11.1), a round
                # of its own, never dropped
                stream.emit("console", type="round_start", seats=[rng.randint(1, positions)])
                made += 1
            stream.emit("console", type="round_start", seats=game.seats)
        left_open = after_void = False
        # Twice the usual share: it is spread over fourteen kinds. Only rounds with a seat list
        # get one, since the seats a void must list are otherwise not yet known.
        if style == "declared" and rng.random() < IRREGULAR * 2:
            kinds = QPOKER_IRREGULARITIES[:-1] if made == rounds else QPOKER_IRREGULARITIES
            left_open = game.irregular(rng.choice(kinds))  # the last round is never left open
            after_void = True  # a dealing the rules cut short: a round_start must follow
        elif style != "declared" and rng.random() < IRREGULAR:
            game.voided_midway_dealt_on()
        events = [(device, {**fields, **_named(rng, made)}
                   if fields["type"] in ("decision", "reveal", "void") else fields)
                  for device, fields in game.events]
        for late in late_commands:  # the last round's console, late: anywhere in this round
            events.insert(rng.randint(0, len(events)), ("console", late))
        late_commands = []
        if rng.random() < LATE_COMMAND:  # the console's commands, sent again or slow
            late_commands = [dict(fields, round=made) for _, fields in events
                             if fields["type"] in ("decision", "reveal", "void")]
        if rng.random() < LATE_COMMAND / 2:  # a command for a round to come: declined too
            events.insert(rng.randint(0, len(events)),
                          ("console", {"type": "reveal", "round": made + 1}))
        for device, fields in events:
            stream.events.append(stream.stamp(device, fields))
        if rng.random() < 0.02:  # between rounds: no round to void, nothing to decide
            stream.emit("shuffler", **dict(rng.choice(SHUFFLER_FAULTS)))
        if rng.random() < 0.01:
            stream.emit("console", type="decision", seat=rng.choice(game.seats), play=True,
                        **_named(rng, made))
    return stream.events
