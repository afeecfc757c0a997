"""Exact house edges of the craps wagers, computed from the table's own outcomes (RULES.md §2).

This module owns the analysis behind docs/rules/craps.md's house-edge table. A wager is followed
through a Markov chain whose states are (the table's point, where the wager stands: its bet key)
and whose transitions are the 36 equally likely throws. Each throw is decided by feeding a roll
to a real :class:`~tabled.daemon.rules.craps.CrapsTable` and settling the wager's result with
:func:`tabled.daemon.rules.money.settle`, so the edges are those of the code that runs at the table,
not of a second model of the rules. Everything is an exact ``Fraction``: it never simulates and
never draws a random number. Only ``python -m tabled.daemon.rules.craps_odds`` prints (the table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Final, TypeAlias

from tabled.contract.events import Roll
from tabled.contract.outcome import BetResult, Outcome
from tabled.daemon.rules.craps import POINTS, CrapsResult, CrapsTable
from tabled.daemon.rules.money import settle
from tabled.daemon.rules.options import CrapsOptions

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


@dataclass(frozen=True, slots=True)
class HouseEdge:
    """The house's expected gain per unit staked, per resolved wager (a push resolves it), for a
    row of the table. The wager was placed in each of ``placements`` and the edge is the same in
    all of them (:func:`house_edge` checks it)."""

    label: str
    edge: Fraction
    placements: tuple[Placement, ...]

    @property
    def percent(self) -> str:
        """The edge as a percentage rounded to three decimals, e.g. ``"1.414"``."""
        thousandths = round(abs(self.edge) * 100_000)
        sign = "-" if self.edge < 0 else ""  # a wager that favours the player
        return f"{sign}{thousandths // 1000}.{thousandths % 1000:03d}"


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


def _point_after(outcome: Outcome) -> int | None:
    assert isinstance(outcome.result, CrapsResult)
    return outcome.result.point_after


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
            successor = Placement(key, _point_after(outcome))
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
    label: str, placements: Sequence[Placement], options: CrapsOptions = _DEFAULT_OPTIONS
) -> HouseEdge:
    """The edge of a row: the same wager placed at several moments (or a pair of numbers that
    pay alike), which must all give one edge, or :class:`ArithmeticError`."""
    edges = {p: -expected_net(p, options) / STAKE for p in placements}
    if len(set(edges.values())) != 1:
        raise ArithmeticError(f"{label}: the edge depends on the placement: {edges}")
    return HouseEdge(label, next(iter(edges.values())), tuple(placements))


#: A row of the house-edge table: its label and the placements that must agree on the edge.
Row: TypeAlias = tuple[str, tuple[Placement, ...]]


def _at(keys: Sequence[str], points: Sequence[int | None]) -> tuple[Placement, ...]:
    return tuple(Placement(key, point) for key in keys for point in points)


#: The numbers whose wagers pay alike (Art. 2.2, 3.2, 5, 9-11).
_ALIKE: Final = ((4, 10), (5, 9), (6, 8))


def _alike(label: str, place: Callable[[int], tuple[Placement, ...]]) -> list[Row]:
    """One row per pair of numbers that pay alike; ``label`` has a ``{}`` for the pair."""
    return [(label.format(f"{a}/{b}"), (*place(a), *place(b))) for a, b in _ALIKE]


#: The rows of the table: a label and where the wager is placed. Pass and Don't Pass are made
#: before a come-out; Come and Don't Come once a point is on (Art. 2.3, 3.3); odds behind the
#: point they back; odds on a Come number, and the wagers of Art. 4-11, at any moment (Art. 12).
ROWS: Final[tuple[Row, ...]] = (
    ("Pass Line (Art. 2.1)", _at(["pass"], [None])),
    ("Don't Pass (Art. 3.1)", _at(["dont_pass"], [None])),
    ("Come (Art. 2.3)", _at(["come"], POINTS)),
    ("Don't Come (Art. 3.3)", _at(["dont_come"], POINTS)),
    *_alike("Pass odds {} (Art. 2.2)", lambda n: _at(["pass_odds"], [n])),
    *_alike("Don't Pass odds {} (Art. 3.2)", lambda n: _at(["dont_pass_odds"], [n])),
    *_alike("Come odds {} (Art. 2.3, 2.2)", lambda n: _at([f"come_odds_{n}"], TABLE_STATES)),
    *_alike("Don't Come odds {} (Art. 3.3, 3.2)",
            lambda n: _at([f"dont_come_odds_{n}"], TABLE_STATES)),
    ("Field (Art. 4)", _at(["field"], TABLE_STATES)),
    ("Hard 4/10 (Art. 5)", _at(["hard4", "hard10"], TABLE_STATES)),
    ("Hard 6/8 (Art. 5)", _at(["hard6", "hard8"], TABLE_STATES)),
    ("Big 7 (Art. 6)", _at(["big7"], TABLE_STATES)),
    ("Eleven (Art. 7)", _at(["eleven"], TABLE_STATES)),
    ("Any Craps (Art. 8)", _at(["any_craps"], TABLE_STATES)),
    ("Big 6/8, 7:6 (Art. 9)", _at(["big6", "big8"], TABLE_STATES)),
    ("Big 5/9, 7:5 (Art. 10)", _at(["big5", "big9"], TABLE_STATES)),
    ("Big 4/10, 9:5 (Art. 11)", _at(["big4", "big10"], TABLE_STATES)),
)


def house_edges(options: CrapsOptions = _DEFAULT_OPTIONS) -> list[HouseEdge]:
    """Every row of the house-edge table, for a table run with ``options``."""
    return [house_edge(label, placements, options) for label, placements in ROWS]


def format_table(edges: Sequence[HouseEdge]) -> str:
    """The house-edge table as Markdown, as docs/rules/craps.md shows it."""
    lines = ["| wager | house edge per resolved bet | exact |", "|---|---:|---:|"]
    lines += [f"| {e.label} | {e.percent} % | {e.edge} |" for e in edges]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_table(house_edges()))
