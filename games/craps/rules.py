"""Craps ("花旗骰", Portaria 97/85/M; docs/rules/craps.md): the table's state machine and outcome
records.

This module owns the point, the round numbers, and what each throw does to every kind of wager
on the layout (docs/contract.md "craps"): one outcome per ``roll``, ``no_roll`` or ``void``. It
never holds stakes or money (``tabled.games.money`` settles a stake against a result),
never does I/O, and never changes its options.

Every result on a roll depends only on the point and the two dice, so the results are decided
once per table option, ahead of time, from the rules below; ``feed`` is a lookup. That keeps a
replay fast and makes the outcome of a throw a pure function the house-edge analysis can reuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from types import MappingProxyType
from typing import Any, ClassVar, Final, TypeAlias

import msgspec

from tabled.contract.events import Declare, Event, Fault, NoRoll, Roll, Void
from tabled.contract.faults import EVENT_NOT_APPLIED, NOT_APPLIED_TYPE
from tabled.contract.outcome import (
    FOR_ANOTHER_ROUND,
    BetResult,
    FixedBets,
    Game,
    Notice,
    Outcome,
    Output,
)
from tabled.games.craps.options import CrapsOptions
from tabled.games.policy import GamePolicy, PublishAll

#: The numbers that become a point (Art. 2.1), and the ones a Come wager can travel to (Art. 2.3).
POINTS: Final = (4, 5, 6, 8, 9, 10)
#: The numbers that can be thrown the hard way, as a pair (Art. 5).
HARD_WAYS: Final = (4, 6, 8, 10)
SEVEN: Final = 7

#: Every bet key of docs/contract.md's craps record, in the order the record lists them.
BET_KEYS: Final[tuple[str, ...]] = (
    "pass", "dont_pass", "pass_odds", "dont_pass_odds", "come", "dont_come",
    *(f"come_{n}" for n in POINTS),
    *(f"come_odds_{n}" for n in POINTS),
    *(f"dont_come_{n}" for n in POINTS),
    *(f"dont_come_odds_{n}" for n in POINTS),
    "field", "big7", "eleven", "any_craps",
    *(f"hard{n}" for n in HARD_WAYS),
    *(f"big{n}" for n in POINTS),
)

#: Art. 2.2: the odds behind a point pay the true odds of the point against a 7.
TRUE_ODDS: Final[Mapping[int, Fraction]] = MappingProxyType({
    4: Fraction(2), 10: Fraction(2), 5: Fraction(3, 2), 9: Fraction(3, 2),
    6: Fraction(6, 5), 8: Fraction(6, 5),
})
#: Art. 3.2: laying odds against a point pays the inverse of Art. 2.2.
LAY_ODDS: Final[Mapping[int, Fraction]] = MappingProxyType(
    {n: 1 / ratio for n, ratio in TRUE_ODDS.items()}
)
#: Art. 5: the pair pays 9:1 on 6 and 8, 7:1 on 4 and 10.
HARD_PAYS: Final[Mapping[int, Fraction]] = MappingProxyType(
    {4: Fraction(7), 6: Fraction(9), 8: Fraction(9), 10: Fraction(7)}
)
#: Art. 9-11 and Reading R-C2: (per-unit ratio, unit in whole currency units, article).
BIG_PAYS: Final[Mapping[int, tuple[Fraction, int, str]]] = MappingProxyType({
    6: (Fraction(7, 6), 6, "craps.art9"), 8: (Fraction(7, 6), 6, "craps.art9"),
    5: (Fraction(7, 5), 5, "craps.art10"), 9: (Fraction(7, 5), 5, "craps.art10"),
    4: (Fraction(9, 5), 5, "craps.art11"), 10: (Fraction(9, 5), 5, "craps.art11"),
})
#: Art. 4: the Field wins even money on these totals (and double on 2 and 12).
FIELD_EVEN: Final = frozenset({3, 4, 9, 10, 11})
FIELD_DOUBLE: Final = frozenset({2, 12})
#: Art. 8: the craps numbers.
CRAPS: Final = frozenset({2, 3, 12})


class CrapsResult(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The ``result`` of a craps record: the throw and the point either side of it.

    ``dice`` and ``total`` are ``None`` for a no-roll or a voided throw, which leave the point as
    it was. ``hard`` says a 4, 6, 8 or 10 came as a pair (Art. 5); it is absent without dice.
    """

    dice: tuple[int, int] | None
    total: int | None
    point_before: int | None
    point_after: int | None
    hard: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dice": None if self.dice is None else list(self.dice),
            "total": self.total,
            "point_before": self.point_before,
            "point_after": self.point_after,
        }
        if self.hard is not None:
            out["hard"] = self.hard
        return out


# -- the pre-built results ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Wager:
    """The results one kind of wager can have on a throw, each citing the article deciding it."""

    win: BetResult
    lose: BetResult
    push: BetResult
    open: BetResult


def _wager(article: str, pays: Fraction, unit: int | None = None) -> _Wager:
    return _Wager(
        win=BetResult("win", article, pays, unit=unit),
        lose=BetResult("lose", article),
        push=BetResult("push", article),
        open=BetResult("open", article),
    )


_EVEN = Fraction(1)
_PASS = _wager("craps.art2.1", _EVEN)
_DONT_PASS = _wager("craps.art3.1", _EVEN)
_COME = _wager("craps.art2.3", _EVEN)
_DONT_COME = _wager("craps.art3.3", _EVEN)
# A Come / Don't Come wager that travels to its number stays open there (CONTRACT: moves_to).
_COME_MOVES = {n: BetResult("open", "craps.art2.3", moves_to=n) for n in POINTS}
_DONT_COME_MOVES = {n: BetResult("open", "craps.art3.3", moves_to=n) for n in POINTS}
_ODDS = {n: _wager("craps.art2.2", TRUE_ODDS[n]) for n in POINTS}
_LAY = {n: _wager("craps.art3.2", LAY_ODDS[n]) for n in POINTS}
_FIELD = _wager("craps.art4", _EVEN)
_FIELD_DOUBLE_WIN = BetResult("win", "craps.art4", Fraction(2))
_BIG7 = _wager("craps.art6", Fraction(9, 2))
_ELEVEN = _wager("craps.art7", Fraction(15))
_ANY_CRAPS = _wager("craps.art8", Fraction(7))
_HARD = {n: _wager("craps.art5", HARD_PAYS[n]) for n in HARD_WAYS}
_BIG = {n: _wager(article, ratio, unit) for n, (ratio, unit, article) in BIG_PAYS.items()}

# Not working on a come-out roll: odds exist only while a point is on (Art. 2.2, 3.2), the Come
# box only after a point is set (Art. 2.3, 3.3), the Big bets where the table says so (R-C4).
_ODDS_OFF = BetResult("off", "craps.art2.2")
_LAY_OFF = BetResult("off", "craps.art3.2")
_BIG_OFF = BetResult("off", "craps.art12")
# Come odds decided with their Come wager on a come-out roll are handed back (docs/contract.md).
_ODDS_RETURNED = BetResult("push", "craps.art2.2")
# A no-roll decides nothing: throw again (Art. 1).
_HELD = BetResult("open", "craps.art1")

_LINE_OFF_ON_COME_OUT: Mapping[str, BetResult] = {
    "pass_odds": _ODDS_OFF,
    "dont_pass_odds": _LAY_OFF,
    "come": BetResult("off", "craps.art2.3"),
    "dont_come": BetResult("off", "craps.art3.3"),
    **{f"come_odds_{n}": _ODDS_OFF for n in POINTS},
}
#: What is off on a come-out roll, by the table option ``big_bets_on_come_out`` (R-C4).
_OFF_ON_COME_OUT: Mapping[bool, Mapping[str, BetResult]] = {
    True: _LINE_OFF_ON_COME_OUT,
    False: {**_LINE_OFF_ON_COME_OUT, **{f"big{n}": _BIG_OFF for n in POINTS}},
}


# -- the rules of one throw ---------------------------------------------------------------------


def _right(wager: _Wager, point: int | None, total: int) -> BetResult:
    """A wager with the dice: Pass and Come (Art. 2.1, R-C0), their odds (2.2), a Big number.

    ``point`` is the wager's own number; ``None`` means this throw is the wager's come-out.
    """
    if point is None:
        if total in (7, 11):
            return wager.win
        return wager.lose if total in CRAPS else wager.open
    if total == point:
        return wager.win
    return wager.lose if total == SEVEN else wager.open


def _wrong(wager: _Wager, point: int | None, total: int) -> BetResult:
    """A wager against the dice: Don't Pass and Don't Come (Art. 3.1, 3.3), lay odds (3.2)."""
    if point is None:
        if total in (2, 3):
            return wager.win
        if total == 12:
            return wager.push
        return wager.lose if total in (7, 11) else wager.open
    if total == SEVEN:
        return wager.win
    return wager.lose if total == point else wager.open


def _hard(wager: _Wager, number: int, total: int, pair: bool) -> BetResult:
    """Art. 5: the number as a pair wins; any 7, or the number the easy way, loses."""
    if total == number:
        return wager.win if pair else wager.lose
    return wager.lose if total == SEVEN else wager.open


def _one_roll(wager: _Wager, wins: bool) -> BetResult:
    """Art. 4, 6-8: decided on the throw it is made for."""
    return wager.win if wins else wager.lose


def _travel(result: BetResult, moves: Mapping[int, BetResult], total: int) -> BetResult:
    """A Come / Don't Come wager left open on its come-out travels to the number thrown."""
    return moves[total] if result.result == "open" else result


def _roll_bets(
    point: int | None, total: int, pair: bool, big_on_come_out: bool
) -> Mapping[str, BetResult]:
    """Every bet key's result for a throw of ``total`` with ``point`` on (None: a come-out)."""
    bets: dict[str, BetResult] = {
        "pass": _right(_PASS, point, total),
        "dont_pass": _wrong(_DONT_PASS, point, total),
        "field": (
            _FIELD_DOUBLE_WIN if total in FIELD_DOUBLE else _one_roll(_FIELD, total in FIELD_EVEN)
        ),
        "big7": _one_roll(_BIG7, total == SEVEN),
        "eleven": _one_roll(_ELEVEN, total == 11),
        "any_craps": _one_roll(_ANY_CRAPS, total in CRAPS),
    }
    for n in POINTS:
        # Wagers already on a number work on every roll, come-out included (docs/contract.md).
        bets[f"come_{n}"] = _right(_COME, n, total)
        bets[f"dont_come_{n}"] = _wrong(_DONT_COME, n, total)
        bets[f"dont_come_odds_{n}"] = _wrong(_LAY[n], n, total)
        bets[f"big{n}"] = _right(_BIG[n], n, total)
    for n in HARD_WAYS:
        bets[f"hard{n}"] = _hard(_HARD[n], n, total, pair)
    if point is None:
        bets.update(_OFF_ON_COME_OUT[big_on_come_out])
        for n in POINTS:
            if bets[f"come_{n}"].result != "open":
                bets[f"come_odds_{n}"] = _ODDS_RETURNED
    else:
        bets["pass_odds"] = _right(_ODDS[point], point, total)
        bets["dont_pass_odds"] = _wrong(_LAY[point], point, total)
        bets["come"] = _travel(_right(_COME, None, total), _COME_MOVES, total)
        bets["dont_come"] = _travel(_wrong(_DONT_COME, None, total), _DONT_COME_MOVES, total)
        for n in POINTS:
            bets[f"come_odds_{n}"] = _right(_ODDS[n], n, total)
    return FixedBets({key: bets[key] for key in BET_KEYS})


def _held_bets(point: int | None, big_on_come_out: bool) -> Mapping[str, BetResult]:
    """Every bet key's result when no throw counts (Art. 1): what works stays, what is off is
    off."""
    off = _OFF_ON_COME_OUT[big_on_come_out] if point is None else {}
    return FixedBets({key: off.get(key, _HELD) for key in BET_KEYS})


def _point_after(point: int | None, total: int) -> int | None:
    """Art. 2.1: a come-out number becomes the point; the point or a 7 takes it off."""
    if point is None:
        return total if total in POINTS else None
    return None if total in (point, SEVEN) else point


_Decided: TypeAlias = tuple[CrapsResult, Mapping[str, BetResult]]


@cache
def _throws(big_on_come_out: bool) -> Mapping[tuple[int | None, int, int], _Decided]:
    """The result and bets of every (point, die, die), for one setting of the table option."""
    decided: dict[tuple[int | None, int, int], _Decided] = {}
    for point in (None, *POINTS):
        for a in range(1, 7):
            for b in range(1, 7):
                total = a + b
                result = CrapsResult(
                    (a, b), total, point, _point_after(point, total),
                    hard=a == b and total in HARD_WAYS,
                )
                decided[point, a, b] = (result, _roll_bets(point, total, a == b, big_on_come_out))
    return MappingProxyType(decided)


@cache
def _no_throws(big_on_come_out: bool) -> Mapping[int | None, _Decided]:
    """The result and bets of a throw that does not count, by point."""
    return MappingProxyType({
        point: (CrapsResult(None, None, point, point), _held_bets(point, big_on_come_out))
        for point in (None, *POINTS)
    })


# -- the table ----------------------------------------------------------------------------------

_DEFAULT_OPTIONS: Final = CrapsOptions()
_NO_ROLL: Final[Mapping[str, Any]] = MappingProxyType({"no_roll": True})
_NO_EXTRA: Final[Mapping[str, Any]] = MappingProxyType({})
_POINT_UNKNOWN: Final[Mapping[str, Any]] = MappingProxyType({"point_unknown": True})


class CrapsTable:
    """One craps table (docs/rules/craps.md): feed it throws, get one outcome per throw.

    Each roll is a whole round, numbered from 1. A ``roll`` is decided by Art. 2-12; a
    ``no_roll`` (Art. 1) is a complete outcome that decides nothing; a ``void`` is the dealer
    declaring the throw invalid (Art. 1), a void outcome that decides nothing. A ``fault``
    changes nothing: the dice sensor's state is the daemon's business. Events of the card
    games are declined with a ``not_for_game`` notice.

    A throw the daemon could not apply (fault ``event_not_applied``) is a void outcome of its
    own, never dropped; if it was a roll, the point is no longer known, so every roll is void
    (it cannot be settled against a point nobody knows, Art. 2.1) until a 7, after which there
    is no point whatever it was.
    """

    game: Game = "craps"
    #: The throws come from a dice sensor; one away means no roll until it is back (Art. 1),
    #: nothing for a round (each throw is one).
    policy: ClassVar[GamePolicy] = GamePolicy(needs=(frozenset({"dice"}),))

    def __init__(self, options: CrapsOptions = _DEFAULT_OPTIONS) -> None:
        self.options = options
        self._point: int | None = None
        self._point_unknown: str | None = None  # why the point is not known, until a 7
        self._round = 1
        self._throws = _throws(options.big_bets_on_come_out)
        self._no_throws = _no_throws(options.big_bets_on_come_out)

    @property
    def point(self) -> int | None:
        """The point that is on, or ``None``: the next roll is a come-out roll."""
        return self._point

    @property
    def round_open(self) -> bool:
        """Never: each throw is a whole round."""
        return False

    @property
    def next_round(self) -> int:
        return self._round

    def publication(self) -> PublishAll:
        """Dice are in plain sight: every event is published as it comes."""
        return PublishAll()

    def round_of(self, event: Event) -> int | None:
        """The number of the round ``event`` belongs to, were it fed now: every throw is a
        round of its own, so the next one's."""
        return self._round

    def feed(self, event: Event) -> list[Output]:
        """Apply one event; return the outcome of the throw, or a notice, or nothing."""
        if isinstance(event, Roll):
            a, b = event.dice
            try:
                result, bets = self._throws[self._point, a, b]
            except KeyError:
                raise ValueError(f"dice {event.dice!r} are not two faces 1-6") from None
            if self._point_unknown is not None:
                return [self._unknown_point_roll(result)]
            self._point = result.point_after
            return [self._outcome(result, bets)]
        if isinstance(event, NoRoll):
            result, bets = self._no_throws[self._point]
            return [self._outcome(result, bets, article="craps.art1", extra=_NO_ROLL)]
        if isinstance(event, Void):
            if event.round not in (None, self._round):
                # Art. 1: the dealer declares a throw invalid, the one being thrown; a void for
                # another (it came late, that throw was decided) would void the next one.
                return [Notice(FOR_ANOTHER_ROUND, f"a void for round {event.round}, while "
                                                  f"round {self._round} is the next throw: "
                                                  "declined; nothing changes", "craps.art1")]
            result, bets = self._no_throws[self._point]
            return [self._outcome(result, bets, article="craps.art1",
                                  void_reason=event.reason or "throw_declared_invalid")]
        if isinstance(event, Fault):
            return self._not_applied(event) if event.code == EVENT_NOT_APPLIED else []
        if isinstance(event, Declare):
            return []  # the dealer's call decides nothing: the pit compares it with the outcome
        return [Notice("not_for_game", f"a {event.type} event is not a craps event")]

    def _not_applied(self, fault: Fault) -> list[Output]:
        """A throw the daemon could not apply is void; a lost roll also loses the point."""
        lost = fault.extra.get(NOT_APPLIED_TYPE)
        if lost not in ("roll", "no_roll", "void"):
            return []
        why = f"the daemon could not apply a {lost} event" + (
            f" ({fault.detail})" if fault.detail else "")
        result, bets = self._no_throws[self._point]
        outcome = self._outcome(result, bets, article="craps.art1",
                                void_reason=f"{why}: this throw decides nothing")
        if lost == "roll" and self._point_unknown is None:
            self._point_unknown = why
        return [outcome]

    def _unknown_point_roll(self, known: CrapsResult) -> Outcome:
        """A roll while the point is unknown: void, deciding nothing; a 7 ends any point."""
        seven = known.total == SEVEN
        reason = (f"the point is not known ({self._point_unknown}), so this roll cannot be "
                  "settled" + ("; after a 7 there is no point" if seven else ""))
        if seven:
            self._point, self._point_unknown = None, None
        result = CrapsResult(known.dice, known.total, None, None, known.hard)
        _, bets = self._no_throws[None]
        return self._outcome(result, bets, article="craps.art2.1", void_reason=reason,
                             extra=_POINT_UNKNOWN)

    def _outcome(
        self,
        result: CrapsResult,
        bets: Mapping[str, BetResult],
        *,
        article: str | None = None,
        void_reason: str | None = None,
        extra: Mapping[str, Any] = _NO_EXTRA,
    ) -> Outcome:
        outcome = Outcome(
            "craps", self._round, "complete" if void_reason is None else "void", result, bets,
            void_reason=void_reason, article=article, extra=extra,
        )
        self._round += 1
        return outcome


__all__ = [
    "BET_KEYS", "BIG_PAYS", "HARD_PAYS", "HARD_WAYS", "LAY_ODDS", "POINTS", "TRUE_ODDS",
    "CrapsResult", "CrapsTable",
]
