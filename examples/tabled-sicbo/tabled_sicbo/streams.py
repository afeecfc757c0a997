"""Sic bo's event streams for the games conformance kit (``tabled conformance --game sicbo``):
shakes of three fair dice.

Owns :func:`streams`, the declaration's ``streams``: throws of three dice drawn with the given
``random.Random``, now and then one the sensor cannot read (a ``no_roll``, Art. 2.1) or one the
dealer declares invalid (a ``void``, Art. 2.2). Every event is a round of its own. Pure:
nothing but ``rng`` decides a line.
"""

from __future__ import annotations

import json
import random
from typing import Any, Final

#: The shares of throws the sensor cannot read, and that the dealer declares invalid (Art. 2).
UNREADABLE: Final = 0.04
VOIDED: Final = 0.02


def streams(rng: random.Random, rounds: int) -> list[str]:
    """``rounds`` throws (each a round with its outcome), as JSON Lines without newlines."""
    lines: list[str] = []
    seq = 0  # the sensor's numbers (a void from the console is the dealer's)
    for _ in range(rounds):
        draw = rng.random()
        event: dict[str, Any]
        if UNREADABLE <= draw < UNREADABLE + VOIDED:
            event = {"type": "void", "reason": "dealer_call"}
        else:
            event = ({"type": "no_roll", "reason": "die_not_flat"} if draw < UNREADABLE
                     else {"type": "roll", "dice": [rng.randint(1, 6) for _ in range(3)]})
            event |= {"device": "dice-1", "seq": seq}
            seq += 1
        lines.append(json.dumps({"v": 2, **event}, separators=(",", ":")))
    return lines


__all__ = ["streams"]
