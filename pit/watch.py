"""The integrity monitors in the running pit: each table's event and outcome streams, in the
table's order, through its :class:`~tabled.pit.integrity.TableMonitors`, and every finding
raised as an alert ``integrity:<monitor>`` through the alert engine (recorded, audited,
published on ``…/pit/alert`` like every alert; one per table, monitor and subject not closed).

- A table's monitors start when the pit knows its game (the birth record, or an outcome's
  ``game``), with the options its birth record declares; new options (new exact odds) start
  them again. The baccarat tables of the floor share one index of shoe blocks (``slug``).
- Each stream goes through a :class:`~tabled.pit.integrity.sequencer.Sequencer` by
  ``table_seq``: in order from the broker, or put back in order when a shared subscription
  brings the other servers' share through the record.
- At start-up each table's monitors replay its last ``rebuild_messages`` recorded messages
  without raising anything, so a restart keeps the statistics' recent state, the current shoe
  and the previous one; what is older than that is forgotten (docs/integrity.md, "In the pit").

Findings never stop the pit: a monitor that fails is logged and counted.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypeAlias

import structlog

from tabled.contract.events import Event, EventError, parse_event
from tabled.contract.outcome import Game, OutcomeError, OutcomeRecord
from tabled.games import registry
from tabled.games.options import GameOptions, OptionError
from tabled.games.registry import decode_outcome, game_names, option_type
from tabled.pit.alerts import AlertEngine
from tabled.pit.config import IntegritySettings
from tabled.pit.integrity import (
    Finding,
    GameSettings,
    Settings,
    TableMonitors,
    calibrate,
    monitored,
    slug_index,
)
from tabled.pit.integrity.sequencer import Sequencer
from tabled.pit.model import Floor
from tabled.pit.store import AlertSpec, RecordStore, StoredMessage

log = structlog.get_logger("tabled.pit.watch")
#: A message's typed form, when its caller decoded it: an event or an outcome record.
Typed: TypeAlias = Event | OutcomeRecord | None

#: A gap in a table's stream is given up on after this long (seconds): a shared record's
#: other half arrives within about a second.
T_GAP = 5.0
#: A follower's findings are held this long (seconds) for a takeover to file: longer than a
#: takeover takes (``[ha]`` poll_interval and a round trip; a lost host's keepalives).
T_HELD = 15.0


def settings_of(config: IntegritySettings) -> Settings:
    """The monitors' settings from the pit's ``[integrity]`` section (each monitored game's
    pace from its ``[integrity.<game>]`` table)."""
    paces = tuple((game, GameSettings(pace.assumed_pace, pace.pace_min, pace.pace_max))
                  for game, pace in config.paces().items())
    return Settings(monitors=frozenset(config.monitors),
                    false_alarms_per_10k_hours=config.false_alarms_per_10k_hours,
                    paces=paces, pace_window=config.pace_window,
                    idle_gap=config.idle_gap, slug_horizon_shoes=config.slug_horizon_shoes)


def options_of(game: Game, declared: Any) -> GameOptions:
    """The options a birth record declares (keys this pit does not know are left out; values
    it cannot read give the defaults, and a warning)."""
    known = {f.name for f in fields(option_type(game))}
    values = {k: v for k, v in declared.items() if k in known} \
        if isinstance(declared, dict) else {}
    try:
        return registry.options_of(game, values)
    except OptionError as exc:
        log.warning("integrity_options_unreadable", game=game, error=str(exc))
        return registry.options_of(game, {})


def seconds(ts: Any, fallback: float) -> float:
    """A record's RFC 3339 ``ts`` (the table's time, which a backlog after an outage keeps
    apart), else when the pit received it."""
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return fallback


@dataclass
class _Table:
    site: str
    table: str
    game: Game
    options: GameOptions
    monitors: TableMonitors
    #: the birth record's options this table's monitors were built from (compared by
    #: identity first: the model keeps the same dict until a new birth)
    declared: Any = None
    streams: dict[str, Sequencer[tuple[Mapping[str, Any], float, Typed]]] = field(
        default_factory=lambda: {"event": Sequencer(T_GAP), "outcome": Sequencer(T_GAP)})


class IntegrityWatch:
    """Every table's integrity monitors, fed from the pipeline (see the module docstring)."""

    def __init__(self, config: IntegritySettings, engine: AlertEngine, floor: Floor,
                 store: RecordStore, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.settings = settings_of(config)
        self.engine = engine
        self.floor = floor
        self.store = store
        self.clock = clock
        self.slugs = slug_index(self.settings)
        self._tables: dict[tuple[str, str], _Table] = {}
        self._unmonitored: set[str] = set()  # games said once not to be monitored
        self.counters = {"findings": 0, "failures": 0, "gaps": 0}
        self._warming: asyncio.Future[None] | None = None
        #: whether this server files findings (the floor's leader; :mod:`pit.leader`)
        self.leading: Callable[[], bool] = lambda: True
        self._held: deque[tuple[float, str, str, Finding]] = deque()

    def _warm(self) -> None:
        for game in game_names():  # the key TableMonitors looks up for a birth with default options
            if monitored(game):
                calibrate(game, options_of(game, {}), self.settings)

    # -- feeding ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Rebuild each table's monitors from its last recorded messages, silently; compute
        the thresholds of every game's default options on a thread meanwhile."""
        if not self.config.enabled:
            return
        if self._warming is None:
            # The exact odds behind a game's thresholds take about a second of CPU (craps,
            # Q Poker): on the event loop, the first table of each game heard would stop the
            # pit for that long (measured: DOM updates 1-2 s late at start).
            self._warming = asyncio.ensure_future(asyncio.to_thread(self._warm))
        if not self.config.rebuild_messages:
            return
        started = time.monotonic()
        replayed = 0
        for site, table in await self.store.tables():
            for stored in await self.store.messages(site, table, None,
                                                    limit=self.config.rebuild_messages):
                if stored.stream in ("event", "outcome"):
                    replayed += 1
                    self._feed(stored.site, stored.table, stored.stream, stored.table_seq,
                               stored.payload, stored.received_at, silent=True,
                               event=stored.outcome)
        log.info("integrity_rebuilt", tables=len(self._tables), messages=replayed,
                 shoes_remembered=0 if self.slugs is None else self.slugs.shoes,
                 seconds=round(time.monotonic() - started, 2))

    def feed(self, site: str, table: str, stream: str, table_seq: int | None,
             payload: Mapping[str, Any], received_at: float,
             event: Typed = None) -> list[Finding]:
        """A message recorded as new (by this server, or by another one of a shared floor):
        the findings it brings, for :meth:`alerts` (apart, so that a store failure retries
        the alerts without feeding the message twice). ``event``: the payload's typed event
        or outcome, when the caller decoded it already."""
        if not self.config.enabled or stream not in ("event", "outcome"):
            return []
        return self._feed(site, table, stream, table_seq, payload, received_at, event=event)

    def feed_stored(self, stored: StoredMessage) -> list[Finding]:
        return self.feed(stored.site, stored.table, stored.stream, stored.table_seq,
                         stored.payload, stored.received_at, stored.outcome)

    async def tick(self) -> None:
        """Streams whose gaps waited long enough go on without the missing messages."""
        now = self.clock()
        for state in list(self._tables.values()):
            found: list[Finding] = []
            for stream, sequencer in state.streams.items():
                found += self._released(state, stream, sequencer.flush(now))
            await self.alerts(state.site, state.table, found)

    # -- inside ------------------------------------------------------------------------------

    def _state(self, site: str, table: str, payload: Mapping[str, Any]) -> _Table | None:
        model = self.floor.table(site, table)
        game = model.game if model is not None else None
        if game is None and payload.get("type") == "outcome":
            game = payload.get("game")
        if game not in game_names():
            return None  # the game is not known yet (no birth record heard): nothing to judge
        declared = model.birth.get("options") if model is not None else None
        state = self._tables.get((site, table))
        if state is not None and state.game == game and state.declared is declared:
            return state  # the same birth record as last time: the same options
        options = options_of(game, declared)
        if state is not None and state.game == game and state.options == options:
            state.declared = declared
            return state
        monitors = TableMonitors(game, options, table=f"{site}/{table}", settings=self.settings,
                                 slugs=self.slugs)
        if not monitors.monitored and game not in self._unmonitored:
            self._unmonitored.add(game)
            log.info("integrity_not_monitored", game=game,
                     reason="the game declares no integrity part")
        fresh = _Table(site, table, game, options, monitors, declared)
        if state is not None:  # the same streams: keep their order, start the statistics over
            fresh.streams = state.streams
            log.info("integrity_restarted", table=f"{site}/{table}", game=game,
                     options=str(options))
        self._tables[(site, table)] = fresh
        return fresh

    def _feed(self, site: str, table: str, stream: str, table_seq: int | None,
              payload: Mapping[str, Any], received_at: float,
              silent: bool = False, event: Typed = None) -> list[Finding]:
        try:
            state = self._state(site, table, payload)
            if state is None:
                return []
            at = seconds(payload.get("ts"), received_at)
            released = state.streams[stream].push(table_seq, (payload, at, event), self.clock())
            found = self._released(state, stream, released)
        except Exception:
            self.counters["failures"] += 1
            log.exception("integrity_failed", table=f"{site}/{table}", stream=stream,
                          table_seq=table_seq)
            return []
        return [] if silent else found

    def _released(self, state: _Table, stream: str,
                  items: list[tuple[Mapping[str, Any], float, Typed] | None]
                  ) -> list[Finding]:
        monitors = state.monitors
        found: list[Finding] = []
        for item in items:
            if item is None:
                self.counters["gaps"] += 1
                if stream == "event":
                    monitors.gap()
                continue
            payload, at, event = item
            if stream == "outcome":
                outcome = event if event is not None and not isinstance(event, Event) else None
                if outcome is None:  # (the caller did not decode it)
                    try:
                        outcome = decode_outcome(payload)
                    except OutcomeError:
                        continue  # recorded as malformed already; nothing for the monitors
                found += monitors.outcome(outcome, at)
                continue
            if not isinstance(event, Event):  # from the record (a restart, another server's)
                try:
                    event = parse_event(payload)
                except EventError:
                    continue  # recorded as malformed already; nothing for the monitors
            found += monitors.event(event, at)
        return found

    async def alerts(self, site: str, table: str, found: list[Finding]) -> None:
        """Each finding as an alert (raised, counted again, or cleared), by the floor's leader
        only (:mod:`pit.leader`): a follower keeps its monitors fed and holds its findings
        for :data:`T_HELD` seconds, which :meth:`lead` files on a takeover."""
        if not self.leading():
            now = time.monotonic()
            self._held.extend((now, site, table, f) for f in found)
            while self._held and self._held[0][0] < now - T_HELD:
                self._held.popleft()
            return
        await self._file(site, table, found)

    async def lead(self) -> None:
        """This server became the floor's leader: the findings it held in the last
        :data:`T_HELD` seconds (those the old leader may not have lived to file) are filed,
        but for a condition already open on the floor."""
        held, self._held = list(self._held), deque()
        cutoff = time.monotonic() - T_HELD
        for at, site, table, finding in held:
            if at < cutoff:
                continue
            model = self.floor.table(site, table)
            kind = f"integrity:{finding.monitor}"
            if not finding.cleared and model is not None and any(
                    (a.kind, a.subject) == (kind, finding.subject)
                    for a in model.alerts.values()):
                continue
            await self._file(site, table, [finding])

    async def _file(self, site: str, table: str, found: list[Finding]) -> None:
        for finding in found:
            kind = f"integrity:{finding.monitor}"
            if finding.cleared:
                await self.engine.clear_alert(site, table, kind, finding.subject,
                                              finding.message)
                continue
            self.counters["findings"] += 1
            await self.engine.raise_alert(AlertSpec(
                site, table, kind, finding.subject, finding.severity, finding.message,
                {**finding.detail, "monitor": finding.monitor, "round": finding.round},
                # a statistic's alarm or a mismatch is a fact: acknowledging closes it; a pace
                # out of bounds is a condition, cleared when it is back within them
                transient=finding.monitor != "pace"))
