"""Outcome records as lines for a person watching a table: the demos and the dealer console.

Owns the layout only: each game words its outcome itself (the headline of its ``console`` part,
:class:`tabled.games.parts.demo.ConsoleVocabulary`: what a pit engineer reads first) and, on
request, every bet of the record follows. It reads published outcome records, which carry a
withheld card (a Q Poker dealer's) only once the round is revealed; it never sees anything else.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any, Literal

from tabled.games import registry
from tabled.games.parts.demo import PLAIN, ConsoleVocabulary, bet_result

BetsShown = Literal["main", "all"]
#: ``--bets`` choices: the bets a pit engineer needs, or every bet of the record.
BETS_SHOWN: tuple[BetsShown, ...] = ("main", "all")


def words(game: Any) -> ConsoleVocabulary:
    """How game ``game`` is worded: its ``console`` part, or :data:`PLAIN` (a game that
    declares none, or a name no installed game has)."""
    try:
        found = registry.part(str(game), "console")
    except registry.UnknownGame:
        return PLAIN
    return found if isinstance(found, ConsoleVocabulary) else PLAIN


def describe(outcome: Mapping[str, Any], bets: BetsShown = "main") -> str:
    """One line per outcome (and, with ``bets="all"``, every bet on the lines after it)."""
    line = _headline(outcome)
    if bets == "all" and outcome.get("bets"):
        line += "\n" + every_bet(outcome)
    return line


def _headline(outcome: Mapping[str, Any]) -> str:
    game, rnd = outcome["game"], outcome["round"]
    said = words(game)
    if outcome["status"] == "void":
        word = said.round_word
        return f"{word} {rnd:>4}  VOID  {outcome.get('void_reason')}  [{outcome.get('article')}]"
    if "result" not in outcome:  # a settled record without a result is malformed
        raise KeyError("result")
    return said.headline(outcome)


def every_bet(outcome: Mapping[str, Any], width: int = 100) -> str:
    """Every bet of the record with its result (and pays on a win), indented, wrapped."""
    bets = outcome.get("bets") or {}
    if words(outcome.get("game")).bets_by_seat:
        items = [f"seat {seat} {kind} {bet_result(bet)}"
                 for seat, per_seat in sorted(bets.items(), key=lambda kv: int(kv[0]))
                 for kind, bet in per_seat.items()]
    else:
        items = [f"{name} {bet_result(bet)}" for name, bet in bets.items()]
    return textwrap.fill(", ".join(items), width=width, initial_indent="        bets: ",
                         subsequent_indent="              ")
