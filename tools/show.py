"""Outcome records as lines for a person watching a table: the demos and the dealer console.

Owns the wording only: what a pit engineer reads first (the winner and the cards, the dice and
the point with the line bets, the dealer's hand and each seat's Dobo and Play) and, on request,
every bet of the record. It reads published outcome records, which carry the dealer's Q Poker
cards only once the round is revealed; it never sees anything else.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from typing import Any, Literal

BetsShown = Literal["main", "all"]
#: ``--bets`` choices: the bets a pit engineer needs, or every bet of the record.
BETS_SHOWN: tuple[BetsShown, ...] = ("main", "all")

#: Craps: the line bets, in the words of the layout.
_LINE_BETS = (("pass", "pass"), ("dont_pass", "don't pass"))
_COME_BETS = (("come", "come"), ("dont_come", "don't come"))


def describe(outcome: Mapping[str, Any], bets: BetsShown = "main") -> str:
    """One line per outcome (and, with ``bets="all"``, every bet on the lines after it)."""
    line = _headline(outcome)
    if bets == "all" and outcome.get("bets"):
        line += "\n" + every_bet(outcome)
    return line


def _headline(outcome: Mapping[str, Any]) -> str:
    game, rnd = outcome["game"], outcome["round"]
    if outcome["status"] == "void":
        word = _ROUND_WORDS.get(game, "round")
        return f"{word} {rnd:>4}  VOID  {outcome.get('void_reason')}  [{outcome.get('article')}]"
    return _HEADLINES[game](rnd, outcome, outcome["result"], outcome.get("bets") or {})


def _baccarat(rnd: int, outcome: Mapping[str, Any], result: Mapping[str, Any],
              bets: Mapping[str, Any]) -> str:
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


def _result(bet: Mapping[str, Any] | None) -> str:
    if not bet:
        return "-"
    text = str(bet.get("result"))
    return f"{text} {bet['pays']}" if "pays" in bet else text


def _craps(rnd: int, outcome: Mapping[str, Any], result: Mapping[str, Any],
           bets: Mapping[str, Any]) -> str:
    if outcome.get("no_roll"):
        return f"roll  {rnd:>4}  no roll: a die left the table  [craps.art1]"
    a, b = result["dice"]
    before, after = result["point_before"], result["point_after"]
    if before is None:
        point = "come-out" if after is None else f"come-out, point {after}"
    elif after is None:
        made = result["total"] == before
        point = f"point {before} made" if made else f"point {before}, seven out"
    else:
        point = f"point {before}"
    parts = [f"{name} {_result(bets.get(key))}" for key, name in _LINE_BETS]
    for key, name in _COME_BETS:
        bet = bets.get(key) or {}
        if bet.get("result") in ("win", "lose", "push"):
            parts.append(f"{name} {_result(bet)}")
        elif bet.get("moves_to") is not None:
            parts.append(f"{name} to {bet['moves_to']}")
    return f"roll  {rnd:>4}  {a}-{b} = {result['total']:>2}  {point:<22} " + ", ".join(parts)


def _qpoker(rnd: int, outcome: Mapping[str, Any], result: Mapping[str, Any],
            bets: Mapping[str, Any]) -> str:
    dealer = result["dealer"]
    seats = []
    for seat, info in sorted(result["seats"].items(), key=lambda kv: int(kv[0])):
        seat_bets = bets.get(seat, {})
        seats.append(f"seat {seat} {info['hand']}: dobo {_result(seat_bets.get('dobo'))}, "
                     f"play {_result(seat_bets.get('play'))}")
    qualifies = "qualifies" if dealer["qualifies"] else "does not qualify"
    return (f"round {rnd:>4}  dealer {' '.join(dealer['cards'])} {dealer['hand']} "
            f"({qualifies}) | " + " | ".join(seats))


def every_bet(outcome: Mapping[str, Any], width: int = 100) -> str:
    """Every bet of the record with its result (and pays on a win), indented, wrapped."""
    bets = outcome.get("bets") or {}
    if outcome.get("game") == "qpoker":
        items = [f"seat {seat} {kind} {_result(bet)}"
                 for seat, per_seat in sorted(bets.items(), key=lambda kv: int(kv[0]))
                 for kind, bet in per_seat.items()]
    else:
        items = [f"{name} {_result(bet)}" for name, bet in bets.items()]
    return textwrap.fill(", ".join(items), width=width, initial_indent="        bets: ",
                         subsequent_indent="              ")


#: One line per outcome, each game its own way.
_HEADLINES: dict[str, Callable[[int, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]],
                               str]] = {
    "baccarat": _baccarat, "craps": _craps, "qpoker": _qpoker,
}
#: What a round is called, where it is not a round.
_ROUND_WORDS = {"craps": "roll "}
