"""Sic bo (骰寶, three dice; RULES.md): the table's state machine and outcome records.

This module owns what each throw of three dice does to every wager of the layout (Art. 3-10):
one outcome per ``roll``, ``no_roll`` or ``void``, every bet result citing its article. Every
wager is decided on the throw it is made for, so a table holds no game state but its round
number; the results of the 216 throws are decided once per pay table, ahead of time, and
``feed`` is a lookup. It never holds stakes or money (``tabled.games.money`` settles a stake
against a result), never does I/O, and imports only tabled.contract and tabled.games.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import cache
from types import MappingProxyType
from typing import Any, ClassVar, Final, cast

import msgspec
from tabled.contract.events import Declare, Event, EventError, Fault, NoRoll, Roll, Void
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
from tabled.games.policy import GamePolicy, PublishAll

from tabled_sicbo.options import SicBoOptions

#: The game's name: the contract's ``game``, the config's ``[table] game``. (Through ``Any``
#: while the contract's ``Game`` lists only the built-in games, issue 28; then a plain str.)
SICBO: Final[Game] = cast(Any, "sicbo")
FACES: Final = (1, 2, 3, 4, 5, 6)
#: Art. 5: the totals a bet can name (3 and 18 only come as triples: no bet names them).
TOTALS: Final = tuple(range(4, 18))
#: Art. 3: Small and Big.
SMALL: Final = frozenset(range(4, 11))
BIG: Final = frozenset(range(11, 18))
#: Art. 9: the 15 pairs of different numbers.
COMBINATIONS: Final = tuple((a, b) for a in FACES for b in FACES if a < b)
#: The options that price each total (Art. 5).
TOTAL_OPTION: Final[Mapping[int, str]] = MappingProxyType({
    total: f"total_{min(total, 21 - total)}_{max(total, 21 - total)}" for total in TOTALS
})

#: The notice of a roll that is not three faces 1-6 (a two-dice sensor at a sic bo table).
NOT_THREE_DICE: Final = "not_three_dice"


def bet_keys(options: SicBoOptions) -> tuple[str, ...]:
    """Every bet key of a record at a table run with ``options``, in the record's order: Odd
    and Even only where the layout offers them (Art. 4)."""
    return (
        "small", "big", *(("odd", "even") if options.odd_even else ()),
        *(f"total_{t}" for t in TOTALS),
        "any_triple", *(f"triple_{n}" for n in FACES),
        *(f"double_{n}" for n in FACES),
        *(f"combo_{a}_{b}" for a, b in COMBINATIONS),
        *(f"single_{n}" for n in FACES),
    )


class SicBoResult(msgspec.Struct, frozen=True, gc=False):
    """The ``result`` of a sic bo record: the three faces as read, their total, and whether
    they are a triple; all ``None`` when no throw counts (a void round, Art. 2)."""

    dice: tuple[int, int, int] | None
    total: int | None
    triple: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"dice": None if self.dice is None else list(self.dice), "total": self.total,
                "triple": self.triple}


def check_roll(event: Event) -> None:
    """The game's check of a ``roll`` where the game is known (the parser's, ``tabled replay``,
    the daemon): three faces, no more, no fewer (Art. 1); EventError otherwise."""
    if isinstance(event, Roll) and len(event.dice) != 3:
        raise EventError(f"dice {list(event.dice)!r} is not three integers 1-6 (sicbo.art1)")


# -- the rules of one throw ---------------------------------------------------------------------

_LOSE: dict[str, BetResult] = {}


def _win(article: str, pays: int) -> BetResult:
    return BetResult("win", article, Fraction(pays))


def _lose(article: str) -> BetResult:
    return _LOSE.setdefault(article, BetResult("lose", article))


def _decide(dice: tuple[int, int, int], options: SicBoOptions) -> Mapping[str, BetResult]:
    """Every bet key's result on the throw ``dice`` (Art. 3-10)."""
    total = sum(dice)
    triple = dice[0] == dice[1] == dice[2]
    shown = {n: dice.count(n) for n in FACES}
    bets: dict[str, BetResult] = {}
    # Art. 3.3, 4: any triple loses Big, Small, Odd and Even.
    for key, wins in (("small", total in SMALL), ("big", total in BIG)):
        bets[key] = (_lose("sicbo.art3.3") if triple
                     else _win("sicbo.art3", 1) if wins else _lose("sicbo.art3"))
    if options.odd_even:
        for key, wins in (("odd", total % 2 == 1), ("even", total % 2 == 0)):
            bets[key] = (_lose("sicbo.art4") if triple
                         else _win("sicbo.art4", 1) if wins else _lose("sicbo.art4"))
    for t in TOTALS:
        pays = getattr(options, TOTAL_OPTION[t])
        bets[f"total_{t}"] = _win("sicbo.art5", pays) if total == t else _lose("sicbo.art5")
    bets["any_triple"] = (_win("sicbo.art7", options.any_triple) if triple
                          else _lose("sicbo.art7"))
    for n in FACES:
        bets[f"triple_{n}"] = (_win("sicbo.art6", options.specific_triple) if shown[n] == 3
                               else _lose("sicbo.art6"))
    for n in FACES:
        # Art. 8: at least two of the number; three of it is a double too.
        bets[f"double_{n}"] = (_win("sicbo.art8", options.specific_double) if shown[n] >= 2
                               else _lose("sicbo.art8"))
    for a, b in COMBINATIONS:
        # Art. 9: both numbers shown, paid once whatever the third die.
        bets[f"combo_{a}_{b}"] = (_win("sicbo.art9", options.combination)
                                  if shown[a] and shown[b] else _lose("sicbo.art9"))
    single_pays = {1: 1, 2: options.single_two, 3: options.single_three}
    for n in FACES:
        bets[f"single_{n}"] = (_win("sicbo.art10", single_pays[shown[n]]) if shown[n]
                               else _lose("sicbo.art10"))
    return FixedBets({key: bets[key] for key in bet_keys(options)})


#: Every throw, as the sensor reads it: the three faces in its order.
THROWS: Final = tuple((a, b, c) for a in FACES for b in FACES for c in FACES)


@cache
def _throws(options: SicBoOptions) -> Mapping[tuple[int, ...], tuple[SicBoResult,
                                                                       Mapping[str, BetResult]]]:
    """The result and bets of each of the 216 throws, for one pay table. Throws of the same
    faces in another order share their bets."""
    by_faces: dict[tuple[int, ...], Mapping[str, BetResult]] = {}
    decided: dict[tuple[int, ...], tuple[SicBoResult, Mapping[str, BetResult]]] = {}
    for dice in THROWS:
        faces = tuple(sorted(dice))
        if faces not in by_faces:
            by_faces[faces] = _decide(dice, options)
        decided[dice] = (SicBoResult(dice, sum(dice), dice[0] == dice[1] == dice[2]),
                         by_faces[faces])
    return MappingProxyType(decided)


@cache
def _void_bets(options: SicBoOptions, article: str) -> Mapping[str, BetResult]:
    """Every bet key void, its stake returned (Art. 2)."""
    void = BetResult("void", article)
    return FixedBets(dict.fromkeys(bet_keys(options), void))


# -- the table ----------------------------------------------------------------------------------

_DEFAULT_OPTIONS: Final = SicBoOptions()
_NO_THROW: Final = SicBoResult(None, None, None)
_NO_EXTRA: Final[Mapping[str, Any]] = MappingProxyType({})
_NO_ROLL: Final[Mapping[str, Any]] = MappingProxyType({"no_roll": True})
#: Art. 2.1, 2.2, 2.3: a throw the sensor could not read, one the dealer declares invalid, one
#: the daemon could not apply.
UNREADABLE: Final = "sicbo.art2.1"
DECLARED_INVALID: Final = "sicbo.art2.2"
NOT_APPLIED: Final = "sicbo.art2.3"


class SicBoTable:
    """One sic bo table (RULES.md): feed it throws, get one outcome per throw.

    Each throw is a whole round, numbered from 1. A ``roll`` of three faces is decided by Art.
    3-10; a ``no_roll`` (the sensor could not read the dice: one not lying flat, one on
    another) and a ``void`` (the dealer declares the throw invalid) are void rounds, every bet
    returned (Art. 2); so is a throw the daemon could not apply (fault ``event_not_applied``).
    A ``roll`` that is not three faces is declined (notice ``not_three_dice``). A ``fault``
    changes nothing else, a ``declare`` nothing at all; other games' events are declined.
    """

    game: Game = SICBO
    #: The throws come from a dice sensor; one away means no throw until it is back, nothing
    #: for a round (each throw is one).
    policy: ClassVar[GamePolicy] = GamePolicy(needs=(frozenset({"dice"}),))

    def __init__(self, options: SicBoOptions = _DEFAULT_OPTIONS) -> None:
        self.options = options
        self._round = 1
        self._throws = _throws(options)

    @property
    def round_open(self) -> bool:
        """Never: each throw is a whole round."""
        return False

    @property
    def next_round(self) -> int:
        return self._round

    def publication(self) -> PublishAll:
        """Dice are in plain sight once the shaker opens: every event is published."""
        return PublishAll()

    def round_of(self, event: Event) -> int | None:
        """Every throw is a round of its own: the next one's."""
        return self._round

    def feed(self, event: Event) -> list[Output]:
        """Apply one event; return the outcome of the throw, or a notice, or nothing."""
        if isinstance(event, Roll):
            decided = self._throws.get(tuple(event.dice))
            if decided is None:
                return [Notice(NOT_THREE_DICE, f"a roll of {list(event.dice)}: sic bo is "
                                               "three faces 1-6; declined, nothing changes",
                               "sicbo.art1")]
            return [self._outcome(*decided)]
        if isinstance(event, NoRoll):
            return [self._void(UNREADABLE, f"no_roll: {event.reason}", _NO_ROLL)]
        if isinstance(event, Void):
            if event.round not in (None, self._round):
                return [Notice(FOR_ANOTHER_ROUND, f"a void for round {event.round}, while "
                                                  f"round {self._round} is the next throw: "
                                                  "declined; nothing changes",
                               DECLARED_INVALID)]
            return [self._void(DECLARED_INVALID, event.reason or "throw_declared_invalid")]
        if isinstance(event, Fault):
            lost = event.extra.get(NOT_APPLIED_TYPE) if event.code == EVENT_NOT_APPLIED else None
            if lost not in ("roll", "no_roll", "void"):
                return []
            why = f"the daemon could not apply a {lost} event" + (
                f" ({event.detail})" if event.detail else "")
            return [self._void(NOT_APPLIED, f"{why}: this throw decides nothing")]
        if isinstance(event, Declare):
            return []  # the dealer's call decides nothing (Art. 12): the pit compares it
        return [Notice("not_for_game", f"a {event.type} event is not a sic bo event")]

    def _void(self, article: str, reason: str,
              extra: Mapping[str, Any] = _NO_EXTRA) -> Outcome:
        return self._outcome(_NO_THROW, _void_bets(self.options, article), article=article,
                             void_reason=reason, extra=extra)

    def _outcome(self, result: SicBoResult, bets: Mapping[str, BetResult], *,
                 article: str | None = None, void_reason: str | None = None,
                 extra: Mapping[str, Any] = _NO_EXTRA) -> Outcome:
        outcome = Outcome(SICBO, self._round, "complete" if void_reason is None else "void",
                          result, bets, void_reason=void_reason, article=article, extra=extra)
        self._round += 1
        return outcome


__all__ = [
    "BIG", "COMBINATIONS", "FACES", "NOT_THREE_DICE", "SICBO", "SMALL", "THROWS", "TOTALS",
    "SicBoResult", "SicBoTable", "bet_keys", "check_roll",
]
