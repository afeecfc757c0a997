"""The live floor: one model per table, built from what the tables publish, and a change feed.

Owns the picture the web page shows — per table: game, state (online / degraded / offline /
unknown) and since when, each device's state, the last outcome in one line, outcomes in the last
hour, open alerts, and its game's panel. It knows no game by name: a game's panel and its
one-line description are the game's pit part (games/parts/pit.py), asked of the registry; a
game that declares none gets a generic panel (its last outcomes by round, status and article).
Pure and synchronous: records in, dicts out; no I/O but :meth:`Floor.rebuild` reading the store
at start.

It must never show a card the table has not shown: the panels are built from **outcome
records only** (a withheld card is published with the outcome, at the reveal), never from the
event stream, where it arrives a moment before the outcome. The only events it reads are those
a game's part lists (``PitPart.events``: a new shoe; a baccarat card, public as it is dealt;
never a hidden card: games/parts/pit.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import structlog

from tabled.contract.outcome import OutcomeRecord
from tabled.games import registry
from tabled.games.parts.pit import Panel, PitPart, given
from tabled.pit.i18n import N_
from tabled.pit.messages import Message, device_state
from tabled.pit.store import SEVERITIES, Alert, StoredMessage

if TYPE_CHECKING:
    from tabled.pit.store import Store

log = structlog.get_logger("tabled.pit.model")

#: Outcomes kept for the panel of a game that declares no pit part.
OUTCOMES = 10
HOUR = 3600.0
MINUTE = 60

TableState = Literal["unknown", "online", "degraded", "offline"]


# -- change notifications ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """Something the page shows changed: a table's tile or panel (``table``), the alerts of a
    table (``alerts``), or anything (``floor``: redraw all, after a subscriber fell behind)."""

    what: Literal["table", "alerts", "floor"]
    site: str | None = None
    table: str | None = None


class Subscription:
    """One listener's pending changes, coalesced: a table that changed ten times while the
    listener was busy is one change. ``async for batch in subscription`` yields sets."""

    #: More distinct pending changes than this collapse into one ``floor`` change.
    LIMIT = 1000

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        self._pending: set[Change] = set()
        # asyncio.Event binds to a loop only when waited on (3.10+): a feed can be made anywhere
        self._ready = asyncio.Event()

    def _put(self, change: Change) -> None:
        if len(self._pending) >= self.LIMIT:
            self._pending = {Change("floor")}
        else:
            self._pending.add(change)
        self._ready.set()

    async def next(self) -> set[Change]:
        """Wait for changes and take them all."""
        while not self._pending:
            self._ready.clear()
            await self._ready.wait()
        batch, self._pending = self._pending, set()
        return batch

    def __aiter__(self) -> AsyncIterator[set[Change]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[set[Change]]:
        while True:
            yield await self.next()

    def close(self) -> None:
        self._feed._subscribers.discard(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ChangeFeed:
    """Publish "table X changed" / "alerts changed" to any number of listeners (the web page
    pushes them to browsers). Publishing never blocks and never fails."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()

    def subscribe(self) -> Subscription:
        sub = Subscription(self)
        self._subscribers.add(sub)
        return sub

    def publish(self, change: Change) -> None:
        for sub in list(self._subscribers):
            sub._put(change)


# -- each game's panel --------------------------------------------------------------------------


#: Games whose pit part does not load (each logged once).
_UNUSABLE: set[str] = set()


def pit_part(game: str | None) -> PitPart | None:
    """Game ``game``'s pit part (games/parts/pit.py), asked of the registry; None for a game
    that declares none, or is not installed here. A part that does not load is logged and
    treated as none: the table still shows, with the generic panel."""
    if game is None or game in _UNUSABLE:
        return None
    try:
        part = registry.part(game, "pit")
    except registry.UnknownGame:
        return None
    except registry.BadGame as exc:
        error = str(exc)
    else:
        if part is None or isinstance(part, PitPart):
            return part
        error = f"its pit part is a {type(part).__name__}, not a PitPart"
    _UNUSABLE.add(game)  # logged once: the table shows with the generic panel from now on
    log.error("pit_part_unusable", game=game, error=error)
    return None


def panel_event_types() -> frozenset[str]:
    """The event types some installed game's panel reads (``PitPart.events``): a record
    fetched late of one of them, like an outcome, has its table's model built again."""
    try:
        names = list(registry.games())
    except registry.BadGame:
        return frozenset()
    return frozenset(kind for name in names if (part := pit_part(name)) is not None
                     for kind in part.events)


def game_title(game: str | None) -> str:
    """A game's name as the page shows it (its declaration's title; the id of a game not
    installed here; ``?`` before the table named one)."""
    if game is None:
        return "?"
    try:
        return registry.game(game).title
    except registry.UnknownGame:
        return game


@dataclass
class OutcomesPanel:
    """The panel of a game that declares no pit part: its last outcomes by round, status and
    article."""

    game: str
    outcomes: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=OUTCOMES))

    def new_session(self) -> None:
        pass

    def add(self, outcome: OutcomeRecord) -> None:
        self.outcomes.append({"round": outcome.round, "status": outcome.status,
                              "article": given(outcome.article),
                              "void_reason": given(outcome.void_reason)})

    def event(self, payload: Mapping[str, Any]) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"game": self.game, "outcomes": list(self.outcomes)}


def describe(outcome: OutcomeRecord) -> str:
    """The last outcome of a table in one line, for its tile."""
    if outcome.status == "void":
        return (f"#{outcome.round} void ({given(outcome.article)}): "
                f"{given(outcome.void_reason)}")
    part = pit_part(outcome.game)
    if part is None:
        return f"#{outcome.round} {outcome.status}"
    return part.describe(outcome)


def phrase(outcome: OutcomeRecord) -> list[Any] | None:
    """:func:`describe`'s line as the catalogue has it, ``[msgid, values]`` (the page shows it
    in its language: tabled.pit.i18n.phrase); None: the line as it is."""
    if outcome.status == "void":
        return [N_("#%(round)s void (%(article)s): %(reason)s"),
                {"round": outcome.round, "article": given(outcome.article),
                 "reason": given(outcome.void_reason)}]
    part = pit_part(outcome.game)
    if part is None or part.phrase is None:
        return None
    msgid, values = part.phrase(outcome)
    return [msgid, dict(values)]


# -- one table ----------------------------------------------------------------------------------


class Numbers:
    """Which ``table_seq`` of one stream a table's model has applied, over the last
    ``WINDOW`` numbers below the highest (a bit each). The model is fed by more than one path
    (this server's new records; another server's records read back when a floor is shared,
    pit.service; a rebuild), so it keeps its own account: a QoS 1 re-delivery or another copy
    under a number it applied is never applied twice, and a number it has not seen is applied
    in whatever order it comes (a shared subscription's other half comes through the record
    later). A number more than ``WINDOW`` below the highest is taken as seen: the live model
    shows the latest rounds only."""

    __slots__ = ("high", "mask")
    WINDOW = 1024

    def __init__(self) -> None:
        self.high: int | None = None
        #: bit i: number ``high - i`` applied
        self.mask = 0

    def first_time(self, seq: int | None) -> bool:
        """Whether ``seq`` was not applied yet (and note it)."""
        if seq is None:
            return True
        high = self.high
        if high is None or seq > high:
            shift = 0 if high is None else seq - high
            self.mask = ((self.mask << shift) | 1) & ((1 << self.WINDOW) - 1) \
                if shift < self.WINDOW else 1
            self.high = seq
            return True
        bit = 1 << (high - seq)
        if high - seq >= self.WINDOW or self.mask & bit:
            return False
        self.mask |= bit
        return True


@dataclass
class DeviceView:
    id: str
    family: str | None
    state: str
    since: float
    detail: str | None = None
    #: the table's birth record names this device
    declared: bool = True
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "family": self.family, "state": self.state,
                "since": self.since, "detail": self.detail, "declared": self.declared}


def _when(payload: Mapping[str, Any], key: str, fallback: float) -> float:
    value = payload.get(key)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(
                UTC).timestamp()
        except ValueError:
            pass
    return fallback


@dataclass
class TableModel:
    site: str
    table: str
    game: str | None = None
    state: TableState = "unknown"
    since: float | None = None
    #: The floor's count of changes when this table's tile or panel last changed (the
    #: :class:`Floor` sets it whenever it publishes a change of this table): a page's rendering
    #: of the table may be kept while it is the same.
    version: int = 0
    reason: str | None = None
    birth: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    status_seq: int | None = None
    devices: dict[str, DeviceView] = field(default_factory=dict)
    last_outcome: dict[str, Any] | None = None
    #: outcomes received per minute (minute number -> count), the last hour's only
    outcome_minutes: dict[int, int] = field(default_factory=dict)
    #: when the first outcome counted came: until an hour has passed, the tile says "n rounds
    #: in m min" (a count over less than an hour is not a rate per hour)
    counted_since: float | None = None
    #: the outcome numbers applied; the number of the last event its panel read
    outcomes: Numbers = field(default_factory=Numbers)
    panel_event_seq: int | None = None
    last_heard: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    panel: Panel | None = None
    alerts: dict[int, Alert] = field(default_factory=dict)

    def declared_devices(self) -> dict[str, str | None]:
        devices = self.birth.get("devices")
        if not isinstance(devices, list):
            return {}
        return {str(d.get("id")): d.get("family") for d in devices if isinstance(d, dict)}

    def count_outcome(self, at: float) -> None:
        if self.counted_since is None or at < self.counted_since:
            self.counted_since = at
        minute = int(at // MINUTE)
        self.outcome_minutes[minute] = self.outcome_minutes.get(minute, 0) + 1
        self.rounds_last_hour(at)

    def rounds_last_hour(self, now: float) -> int:
        """Outcomes received in the last hour, counted by the minute (a table's memory of it
        stays 60 counters whatever its pace)."""
        first = int((now - HOUR) // MINUTE) + 1
        minutes = self.outcome_minutes
        for minute in [m for m in minutes if m < first]:
            del minutes[minute]
        return sum(minutes.values())

    def rounds_minutes(self, now: float) -> int | None:
        """The minutes ``rounds_last_hour`` counts over: since the first outcome counted, at
        least 1, at most 60; None before any."""
        if self.counted_since is None:
            return None
        return max(1, min(60, int((now - self.counted_since) // MINUTE)))

    def tile(self, now: float) -> dict[str, Any]:
        by_severity = dict.fromkeys(SEVERITIES, 0)
        for alert in self.alerts.values():
            if alert.state in ("open", "cleared"):
                by_severity[alert.severity] += 1
        worst = next((s for s in SEVERITIES if by_severity[s]), None)
        return {
            "site": self.site, "table": self.table, "game": self.game, "state": self.state,
            "since": self.since, "reason": self.reason,
            "version": self.birth.get("version"), "started_at": self.started_at,
            "options": self.birth.get("options"),
            "devices": [d.to_dict() for d in sorted(self.devices.values(), key=lambda d: d.id)],
            "last_outcome": self.last_outcome,
            "rounds_last_hour": self.rounds_last_hour(now),
            "rounds_minutes": self.rounds_minutes(now),
            "last_heard": self.last_heard,
            "alerts": {"not_closed": len(self.alerts),
                       "unacknowledged": sum(by_severity.values()),
                       "by_severity": by_severity, "worst": worst},
            "metrics": self.metrics,
        }


# -- the floor ----------------------------------------------------------------------------------


class Floor:
    """Every table the pit has heard of."""

    def __init__(self, *, changes: ChangeFeed | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.changes = changes or ChangeFeed()
        self.clock = clock
        self._tables: dict[tuple[str, str], TableModel] = {}
        #: Device statuses applied whose state this pit does not know (a newer daemon's): kept
        #: and shown as they are, counted here (``pit_device_states_unknown``) and logged.
        self.unknown_device_states = 0
        #: Bumped whenever the alerts not closed change: what is derived from all of them (the
        #: sorted list, the incidents) is made once per change, not once per page render.
        self.alerts_version = 0
        self._derived: dict[str, tuple[int, Any]] = {}
        #: Bumped whenever a table's state changes, or a table comes or goes: the floor's
        #: counts by state (every live page's summary, after every change) are counted once
        #: per change of a state, not once per table per render.
        self.states_version = 0
        self._touches = 0  # TableModel.version's source: one count for the whole floor
        self._states: tuple[int, dict[str, int]] | None = None

    # -- reads (the web page) ---------------------------------------------------------------

    def tables(self) -> list[TableModel]:
        return [self._tables[k] for k in sorted(self._tables)]

    def table(self, site: str, table: str) -> TableModel | None:
        return self._tables.get((site, table))

    def tiles(self) -> list[dict[str, Any]]:
        now = self.clock()
        return [t.tile(now) for t in self.tables()]

    def tile(self, site: str, table: str) -> dict[str, Any] | None:
        model = self.table(site, table)
        return None if model is None else model.tile(self.clock())

    def panel(self, site: str, table: str) -> dict[str, Any] | None:
        model = self.table(site, table)
        if model is None or model.panel is None:
            return None
        return model.panel.to_dict()

    def alerts(self, site: str | None = None, table: str | None = None) -> list[Alert]:
        """Alerts not closed, newest first."""
        if site is None and table is None:
            return list(self.derived("alerts", lambda: self._alerts(None, None)))
        return self._alerts(site, table)

    def _alerts(self, site: str | None, table: str | None) -> list[Alert]:
        out = [a for t in self._tables.values() for a in t.alerts.values()
               if (site is None or t.site == site) and (table is None or t.table == table)]
        return sorted(out, key=lambda a: a.id, reverse=True)

    def derived(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()``, made again only after the alerts changed (:attr:`alerts_version`):
        the floor's incidents are grouped and sorted once per change, not on every render of
        a page or tick of the escalation (at a busy floor that was a third of the pit's
        time). What it gives is shared: never change it."""
        kept = self._derived.get(name)
        if kept is not None and kept[0] == self.alerts_version:
            return kept[1]
        value = make()
        self._derived[name] = (self.alerts_version, value)
        return value

    def states(self) -> dict[str, int]:
        """How many tables are in each state (a new dict each time: the caller's own)."""
        kept = self._states
        if kept is None or kept[0] != self.states_version:
            counts = dict.fromkeys(("online", "degraded", "offline", "unknown"), 0)
            for t in self._tables.values():
                counts[t.state] += 1
            kept = self._states = (self.states_version, counts)
        return dict(kept[1])

    def snapshot(self) -> dict[str, Any]:
        """Everything, JSON-ready (``tabled pit status``)."""
        return {"tables": [{**t.tile(self.clock()),
                            "panel": None if t.panel is None else t.panel.to_dict()}
                           for t in self.tables()],
                "alerts": [a.to_dict() for a in self.alerts()]}

    # -- writes -------------------------------------------------------------------------------

    def _touch(self, model: TableModel) -> None:
        self._touches += 1
        model.version = self._touches

    def _model(self, site: str, table: str) -> TableModel:
        key = (site, table)
        model = self._tables.get(key)
        if model is None:
            model = self._tables[key] = TableModel(site, table)
            self.states_version += 1
        return model

    def heard(self, site: str, table: str, at: float) -> TableModel:
        model = self._model(site, table)
        model.last_heard = at if model.last_heard is None else max(model.last_heard, at)
        return model

    def apply(self, message: Message) -> bool:
        """A new message from a table; True if its tile or panel changed."""
        return self._apply(message.site, message.table, message.stream, message.table_seq,
                           message.payload, message.received_at, message.outcome)

    def apply_stored(self, stored: StoredMessage) -> bool:
        outcome = stored.outcome
        if stored.stream == "outcome" and outcome is None:
            # recorded before the pit decoded outcomes, and refused by the decoder now: the
            # record keeps it; the page does not show it
            log.warning("stored_outcome_not_shown", site=stored.site, table=stored.table,
                        table_seq=stored.table_seq)
        return self._apply(stored.site, stored.table, stored.stream, stored.table_seq,
                           stored.payload, stored.received_at, outcome)

    def _apply(self, site: str, table: str, stream: str, seq: int | None,
               payload: Mapping[str, Any], received_at: float,
               outcome: OutcomeRecord | None = None) -> bool:
        model = self.heard(site, table, received_at)
        if stream == "status":
            changed = self._status(model, seq, payload, received_at)
        elif stream.startswith("device/"):
            changed = self._device(model, stream.split("/")[1], seq, payload, received_at)
        elif stream == "outcome":
            # (an outcome the contract's decoder refuses is in ``malformed``, not here; one
            # recorded before the pit decoded outcomes that it refuses now is not shown)
            changed = (outcome is not None and model.outcomes.first_time(seq)
                       and self._outcome(model, outcome, received_at))
        elif stream == "event":
            changed = self._event(model, seq, payload)
        elif stream == "metrics":
            changed = self._metrics(model, payload)
        else:
            changed = False
        if changed:
            self._touch(model)
            self.changes.publish(Change("table", site, table))
        return changed

    def _status(self, model: TableModel, seq: int | None, payload: Mapping[str, Any],
                received_at: float) -> bool:
        state = payload.get("state")
        started = payload.get("started_at")
        new_run = state == "online" and isinstance(started, str) and started != model.started_at
        # status numbers survive restarts: an older number is a late or retained copy
        if not new_run and model.status_seq is not None and seq is not None \
                and seq <= model.status_seq:
            return False
        model.status_seq = seq
        if isinstance(started, str) and "game" in payload:
            model.birth = {k: payload.get(k) for k in (
                "version", "game", "options", "devices", "started_at", "pid", "commands")}
            if new_run or model.started_at is None:
                model.started_at = started
                for device in model.devices.values():
                    device.seq = None  # a new run numbers its device statuses anew
                if model.panel is not None:
                    model.panel.new_session()
            game = payload.get("game")
            if isinstance(game, str):
                self._set_game(model, game)
            declared = model.declared_devices()
            for device_id, device in model.devices.items():
                device.declared = device_id in declared
        if state in ("online", "degraded", "offline") and state != model.state:
            model.state = state
            self.states_version += 1
            model.since = _when(payload, "ts", received_at) if state != "offline" \
                else received_at  # a last will carries no time: when the broker sent it
        reason = payload.get("reason")
        model.reason = reason if isinstance(reason, str) else None
        return True

    def _device(self, model: TableModel, device_id: str, seq: int | None,
                payload: Mapping[str, Any], received_at: float) -> bool:
        device = model.devices.get(device_id)
        if device is not None and device.seq is not None and seq is not None \
                and seq <= device.seq:
            return False
        state = str(payload.get("state"))
        if device_state(state) is None:
            self.unknown_device_states += 1
            log.warning("device_state_unknown", site=model.site, table=model.table,
                        device=device_id, state=state, table_seq=seq)
        family = payload.get("family")
        detail = payload.get("error") or payload.get("reason")
        declared = model.declared_devices()
        if device is None:
            device = model.devices[device_id] = DeviceView(
                device_id, family if isinstance(family, str) else None, state,
                _when(payload, "since", received_at))
        elif device.state != state:
            device.since = _when(payload, "since", received_at)
        device.state = state
        if isinstance(family, str):
            device.family = family
        device.detail = str(detail) if detail is not None else None
        device.declared = not declared or device_id in declared
        device.seq = seq
        return True

    def _set_game(self, model: TableModel, game: str) -> None:
        if model.game == game and model.panel is not None:
            return
        model.game = game
        part = pit_part(game)
        model.panel = OutcomesPanel(game) if part is None else part.panel()

    def _outcome(self, model: TableModel, outcome: OutcomeRecord, received_at: float) -> bool:
        game = outcome.game
        if model.game is None:
            self._set_game(model, game)
        if game != model.game:
            log.warning("outcome_of_another_game", site=model.site, table=model.table,
                        game=game, table_game=model.game)
            return False
        model.count_outcome(received_at)
        model.last_outcome = {"round": outcome.round, "status": outcome.status,
                              "line": describe(outcome), "phrase": phrase(outcome),
                              "at": received_at}
        if model.panel is not None:
            model.panel.add(outcome)
        return True

    def _event(self, model: TableModel, seq: int | None, payload: Mapping[str, Any]) -> bool:
        # Only the events a game's panel reads matter here (baccarat: a new shoe, its public
        # cards as dealt; never a hidden card: games/parts/pit.py); nothing else of the event
        # stream is shown (module docstring).
        part = pit_part(model.game)
        if model.panel is None or part is None or payload.get("type") not in part.events:
            return False
        if seq is not None and model.panel_event_seq is not None \
                and seq <= model.panel_event_seq:
            return False  # a copy, or an older event arriving late
        model.panel_event_seq = seq if seq is not None else model.panel_event_seq
        return model.panel.event(payload)

    def _metrics(self, model: TableModel, payload: Mapping[str, Any]) -> bool:
        model.metrics = {k: payload.get(k) for k in (
            "uptime_s", "events", "outcomes", "queue_depth", "degraded", "broker_connects",
            "journal_failures") if k in payload}
        return False  # a tile need not be redrawn for a metrics sample

    # -- alerts -------------------------------------------------------------------------------

    def alert_changed(self, alert: Alert) -> None:
        model = self._model(alert.site, alert.table)
        known = model.alerts.get(alert.id)
        if known is not None and known.updated_at > alert.updated_at:
            return  # an older copy (another process's change read late)
        if alert.state == "closed":
            if model.alerts.pop(alert.id, None) is None:
                return
        else:
            model.alerts[alert.id] = alert
        self.alerts_version += 1
        self._touch(model)
        self.changes.publish(Change("alerts", alert.site, alert.table))

    def set_alerts(self, alerts: Iterable[Alert]) -> None:
        for model in self._tables.values():
            model.alerts.clear()
        for alert in alerts:
            if alert.state != "closed":
                self._model(alert.site, alert.table).alerts[alert.id] = alert
        self.alerts_version += 1
        for model in self._tables.values():
            self._touch(model)
        self.changes.publish(Change("floor"))

    def _replay(self, site: str, table: str, records: list[StoredMessage]) -> None:
        """The record's messages of one table, in its order; its game (the latest birth
        record's) is known from the first, so that a shoe started before the birth that the
        record keeps still counts."""
        game = next((r.payload.get("game") for r in reversed(records)
                     if r.stream == "status" and isinstance(r.payload.get("game"), str)), None)
        if isinstance(game, str):
            self._set_game(self._model(site, table), game)
        for stored in records:
            self.apply_stored(stored)

    async def reload(self, store: Store, site: str, table: str) -> None:
        """One table's model again from the record, in the table's order (after messages
        fetched from its journal, which arrive after newer ones: applied one by one they would
        put old hands on the roads)."""
        records = await store.rebuild_records(site, table)
        alerts = await store.alerts(site=site, table=table)
        old = self._tables.pop((site, table), None)
        self.states_version += 1
        self._replay(site, table, records)
        model = self._model(site, table)
        if old is not None:
            model.last_heard = old.last_heard
            model.metrics = old.metrics
        model.alerts = {a.id: a for a in alerts if a.state != "closed"}
        self.alerts_version += 1
        self._touch(model)
        self.changes.publish(Change("table", site, table))

    # -- start-up -----------------------------------------------------------------------------

    async def rebuild(self, store: Store) -> int:
        """The floor as the record has it: each table's latest birth, status and device
        statuses, its recent outcomes, and the alerts not closed. Returns the tables."""
        for site, table in await store.tables():
            self._replay(site, table, await store.rebuild_records(site, table))
        self.set_alerts(await store.alerts())
        return len(self._tables)
