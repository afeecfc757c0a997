"""Exact craps odds (docs/rules/craps.md): the distribution of a throw and the house edge of every
bet key.

This module owns the analysis behind ``tabled odds --game craps``. A wager is followed through a
Markov chain whose states are (the table's point, where the wager stands: its bet key) and whose
transitions are the 36 equally likely throws. Each throw is decided by feeding a roll to a real
:class:`~tabled.games.craps.rules.CrapsTable` built with the table's options, and the wager's
result
is settled with :func:`tabled.games.money.settle`, so the edges are those of the code that
runs
at the table, not of a second model of the rules. Everything is an exact ``Fraction``, the
chain solved by exact elimination: it never simulates.

What each bet key's edge means (the house's expected gain per unit staked, until the wager is
decided; a push decides it with a return of zero):

- ``pass`` and ``dont_pass``: made before a come-out roll.
- ``come`` and ``dont_come``: made in the box while a point is on (Art. 2.3, 3.3).
- ``come_N`` and ``dont_come_N``: a Come / Don't Come wager *already on N*, from there on: N
  before a 7, or a 7 before N. This is what is left of the wager once it has travelled, so it is
  far from the ``come`` figure (``dont_come_4`` favours the player: the 7 comes first 2 times in
  3); the ``come`` row already averages over where the wager travels.
- ``pass_odds``, ``dont_pass_odds``, ``come_odds_N``, ``dont_come_odds_N``: true odds (Art. 2.2,
  3.2), 0 behind every point; Come odds handed back on a come-out roll are a push.
- The wagers of Art. 4-11 (Field, Big 7, Eleven, Any Craps, hard ways, Big numbers): made on any
  roll (Art. 12). A Big bet pays per unit (Reading R-C2): it is taken as whole units, so its edge
  is that of the per-unit ratio (7:6, 7:5, 9:5). A Big bet off on come-out rolls
  (``big_bets_on_come_out=false``, Reading R-C4) waits for the same decision: same edge.

Every wager is computed from each moment it can be made (the states above) and must give one edge
in all of them, or :class:`ArithmeticError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from types import MappingProxyType
from typing import Final

from tabled.contract.events import Roll
from tabled.contract.outcome import BetResult, Outcome
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import BET_KEYS, HARD_WAYS, POINTS, CrapsResult, CrapsTable
from tabled.games.money import settle
from tabled.games.odds.model import BetOdds, Odds, exact
from tabled.games.odds.render import percent

#: 30 currency units: whole Big units of 6 and of 5 (R-C2), and every ratio of the layout pays
#: it in whole minor units, so settlement rounds nothing away and the edges stay exact.
STAKE: Final = 3_000
DICE: Final = tuple((a, b) for a in range(1, 7) for b in range(1, 7))
_ONE_THROW: Final = Fraction(1, len(DICE))
#: Every state of the table: a come-out (no point) or a point on.
TABLE_STATES: Final[tuple[int | None, ...]] = (None, *POINTS)
_DEFAULT_OPTIONS: Final = CrapsOptions()


@dataclass(frozen=True, slots=True)
class Placement:
    """A wager of kind ``key`` (a bet key of the record) made while the table's point is
    ``point`` (``None``: before a come-out roll)."""

    key: str
    point: int | None


def _dice_for(point: int) -> tuple[int, int]:
    """A throw totalling ``point``."""
    return (1, point - 1) if point <= 7 else (point - 6, 6)


@cache
def throws_at(point: int | None, options: CrapsOptions) -> tuple[Outcome, ...]:
    """The table's outcome for each of the 36 throws made while ``point`` is on."""
    outcomes = []
    for dice in DICE:
        table = CrapsTable(options)
        if point is not None:
            table.feed(Roll(dice=_dice_for(point)))
        [outcome] = table.feed(Roll(dice=dice))
        assert isinstance(outcome, Outcome)
        outcomes.append(outcome)
    return tuple(outcomes)


def _result(outcome: Outcome) -> CrapsResult:
    assert isinstance(outcome.result, CrapsResult)
    return outcome.result


def _bet(outcome: Outcome, key: str) -> BetResult:
    bet = outcome.bets[key]
    assert isinstance(bet, BetResult)
    return bet


def _solve(matrix: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction]:
    """Gauss-Jordan elimination over exact fractions: the ``x`` with ``matrix @ x == rhs``."""
    n = len(rhs)
    rows = [[*row, value] for row, value in zip(matrix, rhs, strict=True)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            raise ArithmeticError("singular chain: some wager state is never resolved")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        lead = rows[col][col]
        rows[col] = [x / lead for x in rows[col]]
        for r in range(n):
            factor = rows[r][col]
            if r != col and factor != 0:
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col], strict=True)]
    return [row[n] for row in rows]


def expected_net(placement: Placement, options: CrapsOptions = _DEFAULT_OPTIONS) -> Fraction:
    """The player's expected net, in minor units, on ``STAKE`` placed as ``placement``, over
    every way the table can go until the wager is resolved (win, lose or push)."""
    index = {placement: 0}
    states = [placement]
    # Row i of the chain: (successor state, probability) while the wager stays, and the
    # expected settled amount of the throws that resolve it.
    stays: list[list[tuple[int, Fraction]]] = []
    resolved: list[Fraction] = []
    for state in states:  # grows while new states are found
        moves: list[tuple[int, Fraction]] = []
        settled = Fraction(0)
        for outcome in throws_at(state.point, options):
            bet = _bet(outcome, state.key)
            money = settle(bet, STAKE)
            if money.rounding:
                raise ArithmeticError(f"{state}: {bet} does not pay {STAKE} exactly")
            if not money.stays:
                settled += money.net * _ONE_THROW
                continue
            # A Come / Don't Come wager that travels is now the wager on its number.
            key = state.key if bet.moves_to is None else f"{state.key}_{bet.moves_to}"
            successor = Placement(key, _result(outcome).point_after)
            if successor not in index:
                index[successor] = len(states)
                states.append(successor)
            moves.append((index[successor], _ONE_THROW))
        stays.append(moves)
        resolved.append(settled)
    # value = resolved + P @ value, i.e. (I - P) @ value = resolved.
    size = len(states)
    matrix = [[Fraction(int(i == j)) for j in range(size)] for i in range(size)]
    for i, moves in enumerate(stays):
        for j, probability in moves:
            matrix[i][j] -= probability
    return _solve(matrix, resolved)[0]


def house_edge(
    placements: Sequence[Placement], options: CrapsOptions = _DEFAULT_OPTIONS
) -> Fraction:
    """The house's expected gain per unit staked on a wager that may be made in each of
    ``placements``; they must all give one edge, or :class:`ArithmeticError`."""
    edges = {p: -expected_net(p, options) / STAKE for p in placements}
    if len(set(edges.values())) != 1:
        raise ArithmeticError(f"the edge depends on the placement: {edges}")
    return next(iter(edges.values()))


def placements(key: str) -> tuple[Placement, ...]:
    """Every moment a wager of ``key`` can be made (see the module's docstring)."""
    if key in ("pass", "dont_pass"):
        points: tuple[int | None, ...] = (None,)
    elif key in ("pass_odds", "dont_pass_odds", "come", "dont_come"):
        points = POINTS
    else:
        points = TABLE_STATES
    return tuple(Placement(key, point) for point in points)


def _number(key: str) -> int:
    return int(key.rsplit("_", 1)[-1].removeprefix("hard").removeprefix("big"))


def describe(key: str) -> tuple[str, str]:
    """(a label, the articles) of a bet key, e.g. ``("Come on 4", "craps.art2.3")``."""
    fixed = {
        "pass": ("Pass Line", "craps.art2.1"),
        "dont_pass": ("Don't Pass", "craps.art3.1"),
        "pass_odds": ("Pass odds", "craps.art2.2"),
        "dont_pass_odds": ("Don't Pass odds", "craps.art3.2"),
        "come": ("Come", "craps.art2.3"),
        "dont_come": ("Don't Come", "craps.art3.3"),
        "field": ("Field", "craps.art4"),
        "big7": ("Big 7", "craps.art6"),
        "eleven": ("Eleven", "craps.art7"),
        "any_craps": ("Any Craps", "craps.art8"),
    }
    if key in fixed:
        return fixed[key]
    n = _number(key)
    if key.startswith("come_odds_"):
        return f"Come odds on {n}", "craps.art2.3, art2.2"
    if key.startswith("dont_come_odds_"):
        return f"Don't Come odds on {n}", "craps.art3.3, art3.2"
    if key.startswith("come_"):
        return f"Come on {n}", "craps.art2.3"
    if key.startswith("dont_come_"):
        return f"Don't Come on {n}", "craps.art3.3"
    if key.startswith("hard"):
        return f"Hard {n}", "craps.art5"
    article = {6: "craps.art9", 8: "craps.art9", 5: "craps.art10", 9: "craps.art10"}
    return f"Big {n}", article.get(n, "craps.art11")


@dataclass(frozen=True, slots=True)
class CrapsOdds(Odds):
    """Craps' odds: ``totals`` is the distribution of one throw's total (also in
    ``probabilities`` under ``"2"`` to ``"12"``), ``hard`` the chance of each hard way (the
    number thrown as a pair) on one throw."""

    totals: Mapping[int, Fraction]
    hard: Mapping[int, Fraction]

    def notes(self) -> list[str]:
        return ["come_N / dont_come_N: a wager already on N, from there on; the odds pay "
                "true odds (0); Big bets per whole unit (R-C2)"]


@cache
def craps_odds(options: CrapsOptions = _DEFAULT_OPTIONS) -> CrapsOdds:
    """The exact odds of every bet key of the contract on a table run with ``options``."""
    totals: dict[int, Fraction] = {total: Fraction(0) for total in range(2, 13)}
    hard: dict[int, Fraction] = dict.fromkeys(HARD_WAYS, Fraction(0))
    for outcome in throws_at(None, options):
        result = _result(outcome)
        assert result.total is not None
        totals[result.total] += _ONE_THROW
        if result.hard:
            hard[result.total] += _ONE_THROW
    bets = {}
    for key in BET_KEYS:
        _, article = describe(key)
        bets[key] = BetOdds(house_edge(placements(key), options), article)
    return CrapsOdds(
        game="craps",
        options=options,
        decks=None,
        probabilities=MappingProxyType({str(total): p for total, p in totals.items()}),
        bets=MappingProxyType(bets),
        totals=MappingProxyType(totals),
        hard=MappingProxyType(hard),
    )


def markdown() -> str:
    """The table of docs/rules/craps.md (``tabled odds --game craps --markdown``)."""
    settings = (True, False)
    results = [craps_odds(CrapsOptions(big_bets_on_come_out=on)) for on in settings]
    lines = [
        "| bet key | wager | article | house edge (`big_bets_on_come_out=true`) | "
        "(`=false`) | exact |",
        "|---|---|---|---:|---:|---:|",
    ]
    for key in results[0].bets:
        label, article = describe(key)
        edges = [result.bets[key].house_edge for result in results]
        exacts = sorted({exact(edge) for edge in edges})
        lines.append(f"| `{key}` | {label} | {article} | "
                     + " | ".join(percent(edge) for edge in edges)
                     + f" | {', '.join(exacts)} |")
    return "\n".join(lines)
