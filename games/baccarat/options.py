"""Baccarat's regulated options (docs/rules/baccarat.md, Art. 1, 3, 9, 17, 18): typed, validated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from tabled.games.options import OptionError

#: Art. 1: a baccarat shoe holds 6 to 12 decks (the one place these numbers are written).
MIN_DECKS: Final = 6
MAX_DECKS: Final = 12

BaccaratMethod: TypeAlias = Literal[1, 2]
Commission: TypeAlias = Literal["five_percent", "half_on_four"]
LastHand: TypeAlias = Literal["this", "one_more"]



@dataclass(frozen=True, slots=True)
class BaccaratOptions:
    """Art. 9 drawing method (which also picks the Art. 16 pay table), Art. 17 commission mode,
    Art. 3 last-hand rule, and the number of decks a shoe holds by default (Art. 1)."""

    method: BaccaratMethod = 1
    commission: Commission = "five_percent"
    last_hand: LastHand = "this"
    decks: int = 8

    def __post_init__(self) -> None:
        if self.method not in (1, 2):
            raise OptionError("method", f"{self.method!r} is not 1 or 2 (Art. 9)")
        if self.commission not in ("five_percent", "half_on_four"):
            raise OptionError(
                "commission", f"{self.commission!r} is not five_percent or half_on_four (Art. 17)"
            )
        if self.last_hand not in ("this", "one_more"):
            raise OptionError("last_hand", f"{self.last_hand!r} is not this or one_more (Art. 3)")
        if not (isinstance(self.decks, int) and MIN_DECKS <= self.decks <= MAX_DECKS):
            raise OptionError("decks", f"{self.decks!r} is not {MIN_DECKS} to {MAX_DECKS} "
                                       "(Art. 1)")
