"""Games broken on purpose, for the tests of the games conformance kit.

Each is a whole game, declared as an outside game is (a :class:`GameDeclaration` under the
``tabled.games`` entry points, registered by the test) and wrong in one way the kit must name:

- ``kit_no_article``: a dice game whose outcomes cite no article (``rounds_closed``);
- ``kit_random``: a dice game that settles a bet with the process's random numbers
  (``deterministic``);
- ``kit_leaky``: a card game that withholds the dealer's card but names it in a notice
  before the reveal (``withholding``); ``kit_hidden`` is the same game without the leak;
- ``kit_amnesia``: a dice game whose state lives outside the table, so a table rebuilt from
  the journal is not the live one (``journal_rebuild``);
- ``kit_silent``: a game that declares no streams (every check fails, saying so).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from msgspec.structs import replace

from tabled.contract.events import CardDealt, Event, Reveal, Roll, Withheld
from tabled.contract.outcome import BetResult, Notice, Outcome, Output
from tabled.games.odds.model import Odds
from tabled.games.policy import GamePolicy, PublishAll
from tabled.games.registry import GameDeclaration


@dataclass(frozen=True, slots=True)
class NoOptions:
    """A game without regulated options."""


def no_odds(options: Any, *args: Any) -> Odds:
    raise NotImplementedError("a test game has no odds")


class DiceTable:
    """One outcome per roll: ``even`` wins on an even total (``<game>.art1``)."""

    policy: ClassVar[GamePolicy] = GamePolicy(needs=(frozenset({"dice"}),))
    name: ClassVar[str] = ""

    def __init__(self, options: NoOptions) -> None:
        self._options = options
        self._round = 1
        self.game: Any = self.name

    @property
    def options(self) -> NoOptions:
        return self._options

    @property
    def round_open(self) -> bool:
        return False

    @property
    def next_round(self) -> int:
        return self._round

    def publication(self) -> PublishAll:
        return PublishAll()

    def round_of(self, event: Event) -> int | None:
        return self._round

    def bet(self, total: int) -> BetResult:
        return (BetResult("win", f"{self.name}.art1", Fraction(1)) if total % 2 == 0
                else BetResult("lose", f"{self.name}.art1"))

    def feed(self, event: Event) -> list[Output]:
        if not isinstance(event, Roll):
            return [Notice("not_for_game", f"a {event.TYPE} event is not part of this game")]
        number, self._round = self._round, self._round + 1
        return [Outcome(self.game, number, "complete", None,
                        {"even": self.bet(sum(event.dice))})]


class NoArticleTable(DiceTable):
    name = "kit_no_article"

    def bet(self, total: int) -> BetResult:
        return BetResult("win", None, Fraction(1)) if total % 2 == 0 else BetResult("lose")


class RandomTable(DiceTable):
    name = "kit_random"

    def bet(self, total: int) -> BetResult:
        # the process's own random numbers, not the stream: another result each time
        return BetResult(random.choice(("win", "lose")), f"{self.name}.art1")


class AmnesiaTable(DiceTable):
    """Numbers its rounds with a counter outside the table (a class attribute), shared by
    every table of the process: a table made again from the journal does not go on where the
    live one is."""

    name = "kit_amnesia"
    counter: ClassVar[int] = 1

    @property
    def next_round(self) -> int:
        return AmnesiaTable.counter

    def round_of(self, event: Event) -> int | None:
        return AmnesiaTable.counter

    def feed(self, event: Event) -> list[Output]:
        outputs = super().feed(event)
        numbered = []
        for output in outputs:
            if isinstance(output, Outcome):
                output = Outcome(self.game, AmnesiaTable.counter, output.status, None,
                                 output.bets)
                AmnesiaTable.counter += 1
            numbered.append(output)
        return numbered


def dice_streams(rng: random.Random, rounds: int) -> list[str]:
    return [json.dumps({"v": 2, "type": "roll", "dice": [rng.randint(1, 6), rng.randint(1, 6)],
                        "device": "dice-1", "seq": seq}) for seq in range(rounds)]


class _Hold:
    """Publishes the dealer's card as a ``withheld`` placeholder, and the card itself
    (``"withheld": true``) just before the reveal."""

    def __init__(self) -> None:
        self._held: list[CardDealt] = []

    def admit(self, event: Event, outputs: Sequence[Output]) -> list[Event]:
        if isinstance(event, CardDealt) and event.seat == "dealer":
            self._held.append(event)
            return [Withheld(seat="dealer", count=1, meta=event.meta)]
        if any(isinstance(o, Outcome) for o in outputs):
            opened: list[Event] = [replace(held, extra={**held.extra, "withheld": True})
                                   for held in self._held]
            self._held.clear()
            return [*opened, event]
        return [event]


RANKS = "A23456789TJQK"


class HighCardTable:
    """Seat 1's card (face up) against the dealer's (face down until the reveal): the higher
    rank wins (``<game>.art1``)."""

    policy: ClassVar[GamePolicy] = GamePolicy(needs=(frozenset({"shoe"}),))
    name: ClassVar[str] = "kit_hidden"
    leaks: ClassVar[bool] = False

    def __init__(self, options: NoOptions) -> None:
        self._options = options
        self._round = 1
        self._cards: dict[object, str] = {}
        self.game: Any = self.name

    @property
    def options(self) -> NoOptions:
        return self._options

    @property
    def round_open(self) -> bool:
        return bool(self._cards)

    @property
    def next_round(self) -> int:
        return self._round

    def publication(self) -> _Hold:
        return _Hold()

    def round_of(self, event: Event) -> int | None:
        return self._round

    def feed(self, event: Event) -> list[Output]:
        article = f"{self.name}.art1"
        if isinstance(event, CardDealt) and event.seat in (1, "dealer"):
            self._cards[event.seat] = event.card
            if self.leaks and event.seat == "dealer":
                return [Notice("dealer_card", f"the dealer holds {event.card}", article)]
            return []
        if isinstance(event, Reveal) and len(self._cards) == 2:
            player, dealer = (RANKS.index(self._cards[s][0]) for s in (1, "dealer"))
            self._cards.clear()
            number, self._round = self._round, self._round + 1
            bet = (BetResult("win", article, Fraction(1)) if player > dealer
                   else BetResult("lose", article))
            return [Outcome(self.game, number, "complete", None, {"player": bet})]
        return [Notice("not_for_game", f"a {event.TYPE} event is not expected here")]


class LeakyTable(HighCardTable):
    name = "kit_leaky"
    leaks = True


def card_streams(rng: random.Random, rounds: int) -> list[str]:
    lines: list[str] = []
    seq = 0
    for _ in range(rounds):
        deck = [rank + suit for rank in RANKS for suit in "SHCD"]
        rng.shuffle(deck)
        for seat, face_up in ((1, True), ("dealer", False)):
            event = {"v": 2, "type": "card", "card": deck.pop(), "seat": seat,
                     "device": "shoe-1", "seq": seq}
            lines.append(json.dumps({**event, "face_up": True} if face_up else event))
            seq += 1
        lines.append(json.dumps({"v": 2, "type": "reveal"}))
    return lines


class SilentTable(DiceTable):
    name = "kit_silent"


def _declare(table: Any, streams: str | None) -> GameDeclaration:
    return GameDeclaration(name=table.name, title=table.name, summary="a test game, broken on "
                           "purpose", options=NoOptions, table=table,
                           odds="tests.tools.kit_games:no_odds",
                           streams=streams)


DICE = "tests.tools.kit_games:dice_streams"
CARDS = "tests.tools.kit_games:card_streams"
NO_ARTICLE = _declare(NoArticleTable, DICE)
RANDOM = _declare(RandomTable, DICE)
AMNESIA = _declare(AmnesiaTable, DICE)
HIDDEN = _declare(HighCardTable, CARDS)
LEAKY = _declare(LeakyTable, CARDS)
SILENT = _declare(SilentTable, None)

#: The entry points a test registers: name = "module:attribute".
ENTRY_POINTS = {
    "kit_no_article": "tests.tools.kit_games:NO_ARTICLE",
    "kit_random": "tests.tools.kit_games:RANDOM",
    "kit_amnesia": "tests.tools.kit_games:AMNESIA",
    "kit_hidden": "tests.tools.kit_games:HIDDEN",
    "kit_leaky": "tests.tools.kit_games:LEAKY",
    "kit_silent": "tests.tools.kit_games:SILENT",
}
