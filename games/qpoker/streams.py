"""Q Poker's event streams for the games conformance kit (docs/games.md): rounds dealt by Art. 7.

Owns :func:`streams`, the declaration's ``streams``: each round a fresh deck (Art. 1) shuffled
with the given ``random.Random``, a ``round_start`` listing the seats with a bet, the deal in
Art. 7's order (ascending seats, the dealer last) from the shuffler-dealer (a hand each, Art.
7(2)) or the shoe (a card at a time, three times round, Art. 7(1)), face down, the players'
decisions (Art. 9.2-9.3) and the reveal. Now and then a player's card is seen face up (Art.
11.2: the round stands) or the dealer voids the round midway (Art. 11.1). Pure: nothing but
``rng`` decides a line.
"""

from __future__ import annotations

import json
import random
from typing import Any, Final

from tabled.contract.events import CARD_CODES
from tabled.games.qpoker.options import QPokerOptions

#: The shares of rounds with a player's card exposed (Art. 11.2), and voided by the dealer in
#: the middle of the deal (Art. 11.1).
EXPOSED: Final = 0.1
VOIDED: Final = 0.05
#: Cards to each position (Art. 7).
CARDS: Final = 3


def streams(rng: random.Random, rounds: int) -> list[str]:
    """``rounds`` rounds under the default options, each closed by its reveal or its void."""
    positions = QPokerOptions().positions
    lines: list[str] = []
    numbers = {"shuffler-1": 0, "shoe-1": 0}

    def emit(device: str | None, event: dict[str, Any]) -> None:
        if device is not None:
            event = {**event, "device": device, "seq": numbers[device]}
            numbers[device] += 1
        lines.append(json.dumps({"v": 2, **event}, separators=(",", ":")))

    for _ in range(rounds):
        deck = sorted(CARD_CODES)
        rng.shuffle(deck)
        seats = sorted(rng.sample(range(1, positions + 1), rng.randint(1, positions)))
        by_hand = rng.random() < 0.5
        device = "shuffler-1" if by_hand else "shoe-1"
        emit(None, {"type": "round_start", "seats": seats})
        order: list[int | str] = [*seats, "dealer"]
        deal: list[dict[str, Any]] = []
        if by_hand:
            deal = [{"type": "hand", "seat": seat, "cards": [deck.pop() for _ in range(CARDS)]}
                    for seat in order]
        else:
            deal = [{"type": "card", "seat": seat, "card": deck.pop()}
                    for _ in range(CARDS) for seat in order]
        if rng.random() < EXPOSED:
            shown = rng.choice([e for e in deal if e["seat"] != "dealer"])
            shown["exposed"] = [shown["cards"][0] if by_hand else shown["card"]]
        void_at = rng.randrange(1, len(deal)) if rng.random() < VOIDED else None
        for at, event in enumerate(deal):
            if at == void_at:
                emit(None, {"type": "void"})
                break
            emit(device, event)
        else:
            for seat in seats:
                emit(None, {"type": "decision", "seat": seat, "play": rng.random() < 0.7})
            emit(None, {"type": "reveal"})
    return lines
