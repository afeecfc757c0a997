"""Craps's event streams for the games conformance kit (docs/games.md): throws of fair dice.

Owns :func:`streams`, the declaration's ``streams``: throws of two dice drawn with the given
``random.Random``, now and then a no-roll (Art. 1: off the table) or a throw the dealer declares
invalid (a ``void``, Art. 1). Every event is a round of its own. Pure: nothing but ``rng``
decides a line.
"""

from __future__ import annotations

import json
import random
from typing import Any, Final

#: The shares of throws that are a no-roll, or declared invalid by the dealer (Art. 1).
NO_ROLL: Final = 0.04
VOIDED: Final = 0.03


def streams(rng: random.Random, rounds: int) -> list[str]:
    """``rounds`` throws (each a round with its outcome)."""
    lines: list[str] = []
    seq = 0  # the dice sensor's numbers (a void is the dealer's)
    for _ in range(rounds):
        draw = rng.random()
        event: dict[str, Any]
        if draw < NO_ROLL + VOIDED and draw >= NO_ROLL:
            event = {"type": "void", "reason": "dealer_call"}
        else:
            event = ({"type": "no_roll", "reason": "off_table"} if draw < NO_ROLL
                     else {"type": "roll", "dice": [rng.randint(1, 6), rng.randint(1, 6)]})
            event |= {"device": "dice-1", "seq": seq}
            seq += 1
        lines.append(json.dumps({"v": 2, **event}, separators=(",", ":")))
    return lines
