"""One table's integrity monitors: :class:`TableMonitors` routes a table's events and outcome
records, in the table's order, to the monitors its game runs, and returns their findings.

Pure and synchronous: the pit (``pit/watch.py``) and ``tabled integrity`` feed it the same way,
so a recorded stream gives the same findings in both. The round a finding names is the outcome's
for the rate and procedure monitors, and for the shoe monitors the round being dealt (the one
after the last outcome). Which monitors a game runs follows from its integrity part
(:mod:`tabled.games.parts.integrity`); a game that declares none runs none.
"""

from __future__ import annotations

from tabled.contract.events import Burn, CardDealt, Declare, Event, Fault, ShoeStart
from tabled.contract.faults import UNREADABLE_CARD
from tabled.contract.outcome import Game, OutcomeRecord
from tabled.games.options import GameOptions
from tabled.pit.integrity.calibration import (
    DEFAULT_SETTINGS,
    Calibration,
    Settings,
    calibrate,
    integrity_part,
    options_of,
    shoe_games,
    slug_length,
)
from tabled.pit.integrity.findings import Finding
from tabled.pit.integrity.procedure import DeclarationMonitor, PaceMonitor
from tabled.pit.integrity.rates import DiceMonitor, FrequencyMonitor
from tabled.pit.integrity.shoe import ShoeMonitor, SlugIndex

_NONE: list[Finding] = []


def slug_index(settings: Settings = DEFAULT_SETTINGS) -> SlugIndex | None:
    """The floor's index of shoe blocks for ``settings`` (one per floor, shared by its tables
    dealt from a shoe), or None when the ``slug`` monitor is off or no game is dealt from a
    watched shoe."""
    if "slug" not in settings.monitors or not shoe_games():
        return None
    return SlugIndex(slug_length(settings), settings.slug_horizon_shoes)


class TableMonitors:
    """The monitors of one table of ``game`` with ``options``, under ``settings``.

    ``event(event, at)`` for each event the table publishes, ``outcome(record, at)`` for each
    outcome record, in the table's order; ``at`` is when it happened (seconds; the ``pace``
    monitor needs it, the others ignore it). ``gap()`` when messages were lost. Each returns
    the findings, usually none. A game that declares no integrity part is not monitored:
    ``monitored`` is False, ``calibration`` None, and every call returns no finding."""

    calibration: Calibration | None
    dice: DiceMonitor | None
    frequency: FrequencyMonitor | None
    shoe: ShoeMonitor | None
    declarations: DeclarationMonitor | None
    pace: PaceMonitor | None

    def __init__(self, game: Game, options: GameOptions | None = None, *, table: str = "",
                 settings: Settings = DEFAULT_SETTINGS, slugs: SlugIndex | None = None) -> None:
        self.game = game
        self.table = table
        self.next_round = 1
        self.monitored = integrity_part(game) is not None
        if not self.monitored:
            self.calibration = None
            self.options = options_of(game, options)
            self.dice = self.frequency = self.shoe = self.declarations = self.pace = None
            return
        self.calibration = calibration = calibrate(game, options, settings)
        self.options = calibration.options
        runs = settings.runs
        self.dice = DiceMonitor(calibration, table) if runs("dice", game) else None
        self.frequency = (
            FrequencyMonitor(calibration, table)
            if runs("frequency", game) and calibration.frequency else None)
        shoe_parts = [runs(m, game) for m in ("shoe_count", "shoe_runs", "riffle")]
        self.shoe = (ShoeMonitor(calibration, table,
                                 slugs if runs("slug", game) else None,
                                 count=shoe_parts[0], runs=shoe_parts[1], riffle=shoe_parts[2])
                     if any(shoe_parts) or (runs("slug", game) and slugs is not None)
                     else None)
        self.declarations = (
            DeclarationMonitor(game, table) if runs("result_mismatch", game) else None)
        self.pace = PaceMonitor(calibration, table) if runs("pace", game) else None

    def event(self, event: Event, at: float | None = None) -> list[Finding]:
        """One event of the table's stream."""
        shoe = self.shoe
        if shoe is not None:
            kind = type(event)
            if kind is CardDealt:
                return shoe.card(event.card, self.next_round)  # type: ignore[attr-defined]
            if kind is Burn:
                return shoe.card(event.card, self.next_round)  # type: ignore[attr-defined]
            if kind is ShoeStart:
                shoe.new_shoe(event.decks, self.next_round)  # type: ignore[attr-defined]
                return _NONE
            if kind is Fault and event.code == UNREADABLE_CARD:  # type: ignore[attr-defined]
                return shoe.card(None, self.next_round)
        if isinstance(event, Declare) and self.declarations is not None:
            return self.declarations.declared(event, self.next_round)
        return _NONE

    def outcome(self, record: OutcomeRecord, at: float | None = None) -> list[Finding]:
        """One outcome record, typed (``decode_outcome``; ``bets`` is not read)."""
        round_no = record.round
        self.next_round = max(self.next_round, round_no + 1)
        found: list[Finding] = []
        if self.dice is not None:
            found += self.dice.outcome(record, round_no)
        if self.frequency is not None:
            found += self.frequency.outcome(record, round_no)
        if self.declarations is not None:
            found += self.declarations.outcome(record)
        if self.pace is not None:
            found += self.pace.outcome(at, round_no)
        return found

    def gap(self) -> None:
        """Messages of the table's event stream were lost: the card order is broken there."""
        if self.shoe is not None:
            self.shoe.broken()
