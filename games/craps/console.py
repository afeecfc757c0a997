"""Craps in words (``tabled console``, the demos' lines): its ``console`` part.

Owns how a person reads a throw's outcome: the dice, the point and the line bets, in the words
of the layout (:class:`tabled.games.parts.demo.ConsoleVocabulary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabled.games.parts.demo import ConsoleVocabulary, bet_result

#: The line bets, in the words of the layout.
_LINE_BETS = (("pass", "pass"), ("dont_pass", "don't pass"))
_COME_BETS = (("come", "come"), ("dont_come", "don't come"))


def headline(outcome: Mapping[str, Any]) -> str:
    """``roll   12  3-4 =  7  point 6, seven out  pass lose, don't pass win 1:1``."""
    rnd = outcome["round"]
    if outcome.get("no_roll"):
        return f"roll  {rnd:>4}  no roll: a die left the table  [craps.art1]"
    result, bets = outcome["result"], outcome.get("bets") or {}
    a, b = result["dice"]
    before, after = result["point_before"], result["point_after"]
    if before is None:
        point = "come-out" if after is None else f"come-out, point {after}"
    elif after is None:
        made = result["total"] == before
        point = f"point {before} made" if made else f"point {before}, seven out"
    else:
        point = f"point {before}"
    parts = [f"{name} {bet_result(bets.get(key))}" for key, name in _LINE_BETS]
    for key, name in _COME_BETS:
        bet = bets.get(key) or {}
        if bet.get("result") in ("win", "lose", "push"):
            parts.append(f"{name} {bet_result(bet)}")
        elif bet.get("moves_to") is not None:
            parts.append(f"{name} to {bet['moves_to']}")
    return f"roll  {rnd:>4}  {a}-{b} = {result['total']:>2}  {point:<22} " + ", ".join(parts)


CONSOLE = ConsoleVocabulary(headline=headline, round_word="roll ")
