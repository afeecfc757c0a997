"""Reading a published sic bo outcome record (the contract's decoded record) back: its throw.

Owns the one way the game's parts (pit, integrity) read a record's three faces, whether the
record is typed or kept as it came (a pit that has no typed record of the game keeps
``result`` as plain JSON values). Pure; never raises on a record it cannot read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec


def plain(value: Any) -> dict[str, Any]:
    """A record's ``result`` as plain values, typed (a struct) or not."""
    if isinstance(value, msgspec.Struct):
        return dict(msgspec.to_builtins(value))
    return dict(value) if isinstance(value, Mapping) else {}


def throw_of(record: Any) -> tuple[int, int, int] | None:
    """The three faces of a complete outcome, or None (a void round, or no three faces)."""
    if getattr(record, "status", None) != "complete":
        return None
    dice = plain(getattr(record, "result", None)).get("dice")
    if not isinstance(dice, list | tuple) or len(dice) != 3 or not all(
            type(d) is int and 1 <= d <= 6 for d in dice):
        return None
    return dice[0], dice[1], dice[2]


def call(dice: tuple[int, int, int]) -> str:
    """The dealer's call of a throw (Art. 12; the declaration's words): ``triple`` (Big and
    Small lose, Art. 3.3), ``big`` or ``small``."""
    if dice[0] == dice[1] == dice[2]:
        return "triple"
    return "big" if sum(dice) >= 11 else "small"


__all__ = ["call", "plain", "throw_of"]
