"""Baccarat's event streams for the games conformance kit (docs/games.md): shoes dealt by the rules.

Owns :func:`streams`, the declaration's ``streams``: a shoe shuffled with the given
``random.Random``, its ``shoe_start`` and burn, then hands dealt card by card in the order the
rules call for them (the rules core itself says when a hand is complete), with now and then a
demonstration hand (Art. 2.2) and a hand the dealer voids midway (Art. 10); after some hands the
cut card comes out (Art. 3), between two hands or in one, and a new shoe follows the last hand.
Pure: nothing but ``rng`` decides a line.
"""

from __future__ import annotations

import json
import random
from typing import Any, Final

from tabled.contract.events import CARD_CODES, parse_event
from tabled.contract.outcome import Outcome
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.rules import BaccaratTable

#: The shares of hands that are a demonstration hand (Art. 2.2), or voided by the dealer after
#: their first cards (Art. 10).
DEMO: Final = 0.05
VOIDED: Final = 0.05
#: A new shoe begins when fewer cards than this are left in the old one, or after its last hand:
#: the cut card comes out after this many hands of it (at least, at most).
LOW: Final = 60
CUT_AFTER: Final = (6, 24)
#: More cards than a hand can take (Art. 5-6: six): the rules never closed the hand.
_MOST_CARDS: Final = 8


def streams(rng: random.Random, rounds: int) -> list[str]:
    """``rounds`` hands under the default options, every one closed by its end."""
    decks = BaccaratOptions().decks
    table = BaccaratTable(BaccaratOptions())
    lines: list[str] = []
    seq = 0
    shoe: list[str] = []

    def emit(event: dict[str, Any]) -> bool:
        """Write ``event`` (from the shoe) and feed it to the table: did it close a hand?"""
        nonlocal seq
        if event["type"] != "void":
            event = {**event, "device": "shoe-1", "seq": seq}
            seq += 1
        event = {"v": 2, **event}
        lines.append(json.dumps(event, separators=(",", ":")))
        return any(isinstance(o, Outcome) for o in table.feed(parse_event(event)))

    closed = 0
    hands_left = 0  # in this shoe, before the cut card comes out (Art. 3)
    while closed < rounds:
        if len(shoe) < LOW or hands_left < 0:
            shoe = sorted(CARD_CODES) * decks
            rng.shuffle(shoe)
            hands_left = rng.randint(*CUT_AFTER)
            emit({"type": "shoe_start", "decks": decks})
            emit({"type": "burn", "card": shoe.pop()} if rng.random() < 0.8 else {"type": "burn"})
        cut_in_hand = hands_left == 0 and rng.random() < 0.5
        if hands_left == 0 and not cut_in_hand:
            emit({"type": "cut_card"})  # between hands: the next one is the last
        if rng.random() < DEMO:
            emit({"type": "demo"})
        void_after = rng.randint(1, 3) if rng.random() < VOIDED else None
        for dealt in range(1, _MOST_CARDS + 1):
            if emit({"type": "card", "card": shoe.pop()}):
                break
            if dealt == 1 and cut_in_hand:
                emit({"type": "cut_card"})  # in the hand: this one is the last
            if dealt == void_after:
                if not emit({"type": "void", "reason": "dealer_call"}):
                    raise RuntimeError("the rules did not close a hand the dealer voided")
                break
        else:
            raise RuntimeError(f"the rules closed no hand in {_MOST_CARDS} cards")
        hands_left -= 1
        closed += 1
    return lines
