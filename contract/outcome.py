"""Typed outcome records of CONTRACT.md, shared by the three games.

This module owns the shape of what the rules core produces: per-bet results, whole-round outcomes
and notices (events the core declined without voiding a round). It is pure: no I/O, no clock.
``Outcome.to_record()`` gives exactly the JSON object the daemon publishes and ``tabled replay``
prints; nothing else may build those dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Protocol, TypeAlias

from tabled.contract import CONTRACT_VERSION

Game: TypeAlias = Literal["baccarat", "craps", "qpoker"]
GAMES: tuple[Game, ...] = ("baccarat", "craps", "qpoker")
BetOutcome: TypeAlias = Literal["win", "lose", "push", "open", "off", "fold", "void"]
Status: TypeAlias = Literal["complete", "void"]


def pays(winnings: int, stake: int) -> Fraction:
    """A payout ratio, winnings to stake (kept in lowest terms by ``Fraction``)."""
    return Fraction(winnings, stake)


def format_pays(ratio: Fraction) -> str:
    """``Fraction(19, 20)`` -> ``"19:20"``: the contract's ``"W:S"`` form, in lowest terms."""
    return f"{ratio.numerator}:{ratio.denominator}"


@dataclass(frozen=True, slots=True)
class BetResult:
    """What happened to one kind of wager in one round, and the article that decided it.

    ``pays`` is set on a win only. ``unit`` (Craps Big bets, Reading R-C2) is the stake unit, in
    whole currency units, to which the per-unit ratio applies. ``moves_to`` is where a Come or
    Don't Come wager travels.
    """

    result: BetOutcome
    article: str | None = None
    pays: Fraction | None = None
    moves_to: int | None = None
    unit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"result": self.result}
        if self.pays is not None:
            out["pays"] = format_pays(self.pays)
        if self.article is not None:
            out["article"] = self.article
        if self.moves_to is not None:
            out["moves_to"] = self.moves_to
        if self.unit is not None:
            out["unit"] = self.unit
        return out


class ResultPart(Protocol):
    """A game's typed ``result`` part of an outcome record."""

    def to_dict(self) -> dict[str, Any]: ...


Bets: TypeAlias = Mapping[str, BetResult] | Mapping[str, Mapping[str, BetResult]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One round's outcome record (CONTRACT.md "Outcome records")."""

    game: Game
    round: int
    status: Status
    result: ResultPart | None
    bets: Bets
    void_reason: str | None = None
    article: str | None = None
    #: Extra top-level fields of the record, e.g. ``{"demo": True}`` or ``{"no_roll": True}``.
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "v": CONTRACT_VERSION,
            "type": "outcome",
            "game": self.game,
            "round": self.round,
            "status": self.status,
        }
        if self.status == "void":
            rec["void_reason"] = self.void_reason
            rec["article"] = self.article
        elif self.article is not None:
            rec["article"] = self.article
        rec.update(self.extra)
        rec["result"] = {} if self.result is None else self.result.to_dict()
        rec["bets"] = {
            name: (
                value.to_dict()
                if isinstance(value, BetResult)
                else {k: v.to_dict() for k, v in value.items()}
            )
            for name, value in self.bets.items()
        }
        return rec


@dataclass(frozen=True, slots=True)
class Notice:
    """An event the rules core declined without voiding a round, and why.

    A notice is not an outcome: replay writes it to standard error, the daemon logs it and
    publishes it as a fault. ``code`` is stable (snake_case), ``article`` cites the rule.
    """

    code: str
    message: str
    article: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.article is not None:
            out["article"] = self.article
        return out


#: The notice of a dealer's command (``decision``, ``reveal``, ``void``) whose ``round`` names
#: another round than the one the table would act on (``tabled.contract.events.FOR_A_ROUND``):
#: it came late, or early; the rules decline it and change nothing.
FOR_ANOTHER_ROUND = "for_another_round"

Output: TypeAlias = Outcome | Notice
