"""Baccarat in words (``tabled console``, the demos' lines): its ``console`` part.

Owns how a person reads a hand's outcome: the winner and both hands
(:class:`tabled.games.parts.demo.ConsoleVocabulary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabled.games.parts.demo import ConsoleVocabulary


def headline(outcome: Mapping[str, Any]) -> str:
    """``round    3  banker wins (natural)   P 5H 2C     = 7   B 9D KS     = 9``."""
    rnd, result = outcome["round"], outcome["result"]
    if outcome.get("demo"):
        tag = "demonstration hand"
    else:
        winner = result["winner"]
        tag = "tie" if winner == "tie" else f"{winner} wins"
        if result["natural"]:
            tag += " (natural)"
    return (f"round {rnd:>4}  {tag:<22} P {' '.join(result['player_cards']):<9} = "
            f"{result['player_total']}   B {' '.join(result['banker_cards']):<9} = "
            f"{result['banker_total']}")


CONSOLE = ConsoleVocabulary(headline=headline)
