"""Q Poker's regulated options (docs/rules/qpoker.md, Art. 2)."""

from __future__ import annotations

from dataclasses import dataclass

from tabled.games.options import OptionError


@dataclass(frozen=True, slots=True)
class QPokerOptions:
    """Art. 2: the number of player positions at the table (8 or more seats with the dealer's)."""

    positions: int = 7

    def __post_init__(self) -> None:
        if not 7 <= self.positions <= 20:
            raise OptionError(
                "positions", f"{self.positions!r} is not 7 to 20 (Art. 2: 8 or more seats)"
            )
