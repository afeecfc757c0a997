"""The dealer-procedure monitors: ``result_mismatch`` (what the dealer declared on the console
against what the rules core decided) and ``pace`` (rounds per hour outside the site's bounds).
A game's words are its own: the words a dealer may declare are its declaration's, what its
rules decided is read by its integrity part (:mod:`tabled.games.parts.integrity`).

Neither is a statistical test: a table that follows procedure never trips them, so they take
no share of the false-alarm budget. Pure: times are given, never read from a clock.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Final

from msgspec import UNSET

from tabled.contract.events import Declare
from tabled.contract.outcome import Game, OutcomeRecord
from tabled.games.registry import game as declared_game
from tabled.pit.integrity.calibration import Calibration, integrity_part
from tabled.pit.integrity.findings import Finding, finding

#: How many decided rounds a declaration naming its round may look back to, and how many
#: declarations may wait for a round not decided yet.
KEPT_ROUNDS: Final = 32


def decided(game: Game, record: OutcomeRecord) -> tuple[str, str]:
    """What the rules core decided, in the words a dealer declares (the game's
    ``declarations``), and a short account of the round: ``("player", "Player 7, Banker 6")``,
    as the record's game's integrity part reads it. A void round is ``"void"``, a craps
    no-roll ``"no_roll"``. (``game`` is the table's: a record of another game is read as its
    own.)"""
    if record.status == "void":
        reason = None if record.void_reason is UNSET else record.void_reason
        return "void", f"void: {reason}"
    found = integrity_part(record.game)
    if found is None:  # a record of a game not monitored, at this table: nothing to compare
        return record.status, f"a round of {record.game}"
    return found.decided(record)


class DeclarationMonitor:
    """``result_mismatch``: a ``declare`` event against the outcome of the round it names (or,
    naming none, the round decided last)."""

    def __init__(self, game: Game, table: str = "") -> None:
        self.game = game
        self.table = table
        self._decided: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._waiting: dict[int, list[str]] = {}
        self._last: int | None = None

    def declared(self, event: Declare, next_round: int) -> list[Finding]:
        if event.result not in declared_game(self.game).declarations:
            return [self._finding(event.round or self._last, event.result,
                                  None, f"{event.result!r} is not a result of {self.game}")]
        number = event.round if event.round is not None else self._last
        if number is None:
            if event.round is None:
                return [self._finding(None, event.result, None, "no round was decided yet")]
            return []
        outcome = self._decided.get(number)
        if outcome is not None:
            return self._compare(number, event.result, outcome)
        if (self._last is None or number > self._last) and len(self._waiting) < KEPT_ROUNDS:
            self._waiting.setdefault(number, []).append(event.result)
        return []  # older than what the pit remembers: nothing to compare it with

    def outcome(self, record: OutcomeRecord) -> list[Finding]:
        number = record.round
        outcome = decided(self.game, record)
        self._decided[number] = outcome
        while len(self._decided) > KEPT_ROUNDS:
            self._decided.popitem(last=False)
        self._last = number if self._last is None else max(self._last, number)
        found: list[Finding] = []
        for declared in self._waiting.pop(number, []):
            found += self._compare(number, declared, outcome)
        for stale in [n for n in self._waiting if n < number - KEPT_ROUNDS]:
            del self._waiting[stale]
        return found

    def _compare(self, number: int, declared: str, outcome: tuple[str, str]) -> list[Finding]:
        if declared == outcome[0]:
            return []
        return [self._finding(number, declared, outcome, "")]

    def _finding(self, number: int | None, declared: str, outcome: tuple[str, str] | None,
                 why: str) -> Finding:
        if outcome is None:
            text = f"the dealer declared {declared}, but {why}"
        else:
            text = (f"round {number}: the dealer declared {declared.replace('_', ' ')}, the "
                    f"rules decided {outcome[0].replace('_', ' ')} ({outcome[1]})")
        return finding("result_mismatch", self.table, number,
                       f"round {number}" if number is not None else "no round",
                       text, declared=declared,
                       decided=None if outcome is None else outcome[0],
                       account=None if outcome is None else outcome[1], game=self.game)


class PaceMonitor:
    """``pace``: rounds per hour over the last ``window`` seconds, once the table has played
    that long without a pause of more than ``idle_gap`` (an idle table is not a slow one),
    against ``[pace_min, pace_max]``. A condition: raised when the rate leaves the bounds,
    cleared when it comes back."""

    def __init__(self, calibration: Calibration, table: str = "") -> None:
        settings = calibration.settings
        self.low = calibration.pace.pace_min
        self.high = calibration.pace.pace_max
        self.window = settings.pace_window
        self.idle_gap = settings.idle_gap
        self.table = table
        self.unit = calibration.part.unit
        self._times: deque[float] = deque()
        self._since: float | None = None
        self._last: float | None = None
        self.state: str | None = None  # "fast", "slow" or None (within bounds)

    def outcome(self, at: float | None, round_no: int | None) -> list[Finding]:
        if at is None:
            return []
        if self._last is not None and at < self._last:
            return []  # out of order: the table's clock or a late copy, not a pace
        found: list[Finding] = []
        if self._last is None or at - self._last > self.idle_gap:
            self._times.clear()
            self._since = at
            if self.state is not None:
                found.append(self._clear(round_no, "the table paused; the pace starts again"))
        self._last = at
        times = self._times
        times.append(at)
        while times[0] <= at - self.window:
            times.popleft()
        assert self._since is not None
        if at - self._since < self.window:
            return found
        rate = len(times) * 3600.0 / self.window
        state = "fast" if rate > self.high else "slow" if rate < self.low else None
        if state == self.state:
            return found
        if self.state is not None:
            found.append(self._clear(round_no, f"{rate:.0f} {self.unit} an hour"))
        self.state = state
        if state is not None:
            bound = self.high if state == "fast" else self.low
            found.append(finding(
                "pace", self.table, round_no, state,
                f"{rate:.0f} {self.unit} an hour over the last {self.window / 60:g} minutes: "
                f"{'above' if state == 'fast' else 'below'} the bound of {bound:g}",
                rounds_per_hour=round(rate, 1), bounds=[self.low, self.high],
                window_s=self.window))
        return found

    def _clear(self, round_no: int | None, why: str) -> Finding:
        state, self.state = self.state, None
        assert state is not None
        return Finding("pace", self.table, round_no, "minor", state,
                       f"pace within bounds again: {why}", {}, cleared=True)
