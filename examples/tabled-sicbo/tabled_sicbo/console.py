"""Sic bo in words (``tabled console``, the demos' lines): its ``console`` part.

Owns how a person reads a throw's outcome: the dice, the total, the dealer's call and the bets
most tables see (:class:`tabled.games.parts.demo.ConsoleVocabulary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabled.games.parts.demo import ConsoleVocabulary, bet_result

#: The bets a headline shows, in the words of the layout.
_SHOWN = (("small", "small"), ("big", "big"), ("any_triple", "any triple"))


def headline(outcome: Mapping[str, Any]) -> str:
    """``throw   12  6-6-5 = 17  Big      small lose, big win 1:1, any triple lose``."""
    result, bets = outcome["result"], outcome.get("bets") or {}
    dice = result["dice"]
    call = "triple" if result.get("triple") else "Big" if result["total"] >= 11 else "Small"
    parts = [f"{name} {bet_result(bets.get(key))}" for key, name in _SHOWN]
    return (f"throw {outcome['round']:>4}  {'-'.join(str(d) for d in dice)} = "
            f"{result['total']:>2}  {call:<7}  " + ", ".join(parts))


CONSOLE = ConsoleVocabulary(headline=headline, round_word="throw")

__all__ = ["CONSOLE", "headline"]
