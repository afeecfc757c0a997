"""``tabled pit``: the pit monitor as a service.

Owns start-up order, the message pipeline, the timers and shutdown:

1. open the store (migrating its schema), rebuild the floor and the open alerts from it, so a
   restart forgets neither;
2. connect to the broker (:mod:`pit.ingest`) and, for every message, in arrival order:
   check it (a malformed one is recorded as such, counted and logged), record it, update the
   live model, run the alert rules and the integrity monitors (:mod:`pit.watch`). A store
   that fails is retried with backoff while the message waits (the broker connection keeps
   receiving into memory): nothing is dropped; a message the store refuses for its content is
   filed as malformed, alone, and costs no other message;
3. timers: gap checks and silent tables (half a second), the alerts outbox (publishes every
   alert change on ``<prefix>/<site>/pit/alert``, QoS 1, once, even with several pit servers,
   and picks up changes other processes made, such as ``tabled pit ack``), retention;
4. the floor's leader (:mod:`pit.leader`): of several servers on one PostgreSQL record, only
   the leader runs what must run once per floor: the alert timers (silence, escalation), the
   integrity monitors' alert filing, the outbox's publishing, the shift reports, retention.
   The alert rules of a message run where it was recorded (each message is recorded once),
   and so do the gap checks it starts. Every server keeps following the record (its model,
   its monitors) so that a takeover needs no warm-up;
5. systemd: READY once the store is open and the broker connected (or after a short wait),
   STATUS lines, the watchdog from the event loop; SIGTERM stops cleanly.

Nothing in a message can stop the service: every handler failure is logged and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog

from tabled.contract import CONTRACT_VERSION
from tabled.contract.backoff import Backoff, cancel_all, start_part
from tabled.contract.systemd import Notifier
from tabled.pit.alerts import AlertEngine
from tabled.pit.config import PitConfig
from tabled.pit.ingest import Ingest, wait_connected
from tabled.pit.leader import Leadership
from tabled.pit.messages import Malformed, Message, parse_message
from tabled.pit.metrics import PitMetrics
from tabled.pit.model import ChangeFeed, Floor, panel_event_types
from tabled.pit.reconcile import Reconciler
from tabled.pit.report.schedule import ShiftWriter
from tabled.pit.store import (
    Alert,
    AlertChange,
    AuditEntry,
    Recorded,
    Store,
    StoreDataError,
    StoreError,
)
from tabled.pit.watch import IntegrityWatch
from tabled.pit.web.port import PitPort

log = structlog.get_logger("tabled.pit.service")

T = TypeVar("T")

#: How long start-up waits for the broker before READY, seconds (READY anyway: the pit shows
#: the record and reconnects).
T_READY = 3.0
#: The alert timers (gap checks, silence) run this often, seconds.
T_TICK = 0.5
#: The outbox and other processes' alert changes are looked at this often, seconds.
T_OUTBOX = 0.25
#: Audit entries written this recently are read again (PostgreSQL commits ids out of order).
T_AUDIT_WINDOW = 10.0
#: With a shared subscription, the other servers' new records are read as soon as PostgreSQL
#: tells of their commit (LISTEN/NOTIFY: pit.store_postgres) but at most once in T_FOLLOW_MIN
#: seconds (a busy partner commits a hundred times a second), and at least every T_FOLLOW
#: seconds should a notification be lost (what the page of one server waits for an outcome its
#: partner recorded, at most).
T_FOLLOW = 0.1
T_FOLLOW_MIN = 0.03
#: ... and how often the last T_AUDIT_WINDOW seconds of them are read again, seconds (a row
#: PostgreSQL committed after a larger id was read; each row is applied once).
T_FOLLOW_AGAIN = 1.0
#: With a shared subscription, a jump in a table's numbers is looked for in the record (and
#: fetched if still missing) this long after it was heard, seconds.
T_SHARE_GRACE = 1.5
#: How often the STATUS line is refreshed, seconds.
T_STATUS = 2.0
#: How often the event loop's lateness is sampled (``pit_event_loop_lag_seconds``), seconds.
T_LAG = 0.1
#: A loop this late is logged (``event_loop_stalled``): pages, the record and the alert
#: timers all wait while it is.
T_STALLED = 1.0
#: How long what survived a full garbage collection stays frozen before the collector looks
#: at all of it again, seconds (:meth:`PitService._collector`).
T_GC_THAW = 600.0


def rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def alert_payload(alert: Alert, audit: AuditEntry, pit_id: str) -> dict[str, Any]:
    """What ``…/pit/alert`` carries for one change: the alert after it, the change itself
    (action, actor, note, audit id) and the pit server that published it."""
    body = alert.to_dict()
    for key in ("opened_at", "updated_at", "cleared_at", "closed_at", "escalated_at", "seen_at"):
        body[key] = rfc3339(body[key])
    if body["acknowledged"] is not None:
        body["acknowledged"] = {**body["acknowledged"], "at": rfc3339(alert.acked_at)}
    return {"v": CONTRACT_VERSION, "type": "alert", **body,
            "change": {"audit_id": audit.id, "action": audit.action, "actor": audit.actor,
                       "note": audit.note, "at": rfc3339(audit.at)},
            "pit": pit_id, "ts": rfc3339(time.time())}


def open_store(config: PitConfig, *, readonly: bool = False) -> Store:
    """The configured store, not yet opened."""
    if config.store.postgres is not None:
        from tabled.pit.store_postgres import PostgresStore

        return PostgresStore(config.store.postgres)
    from tabled.pit.store_sqlite import SqliteStore

    return SqliteStore(config.store.sqlite_path, readonly=readonly)


class PitService:
    """One pit server. ``await run()`` until :meth:`request_stop`."""

    def __init__(self, config: PitConfig, *, notifier: Notifier | None = None,
                 store: Store | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.notifier = notifier or Notifier()
        self.actor = f"pit:{config.pit.id}"
        self.metrics = PitMetrics()
        self.store = store or open_store(config)
        self.store.observe = self.metrics.observe_store
        self.changes = ChangeFeed()
        self.floor = Floor(changes=self.changes)
        self.metrics.floor = self.floor
        #: the alert rules' clock (silence, gap checks, escalation): a test moves it by hand
        self.engine = AlertEngine(self.store, self.floor, config.alerts, actor=self.actor,
                                  clock=clock, on_change=self._alert_changed)
        #: what the web layer calls for people's actions (role-checked, audited)
        self.desk = self.engine.desk
        #: the integrity monitors (docs/integrity.md): findings become alerts
        self.watch = IntegrityWatch(config.integrity, self.engine, self.floor, self.store)
        self.ingest = Ingest(config.mqtt, client_id=config.client_id,
                             on_message=self.received_batch, on_connect=self._connected)
        #: fetches what the record lacks from the tables (``[reconcile]``; None: off)
        self.reconciler: Reconciler | None = None
        if config.reconcile.enabled:
            self.reconciler = Reconciler(
                config.reconcile, config.mqtt, config.pit.id, self.store, self.engine,
                self.floor, self.ingest.publish, self.ingest.connected.is_set,
                retention=config.retention)
            self.engine.on_gap = self.reconciler.gap
            if config.mqtt.share_group:
                # a jump is what a shared subscription does: the other servers took the
                # numbers between; the record is asked once their share had time to land
                self.engine.on_gap = self._shared_gap
            self.ingest.extra_subscriptions = self.reconciler.subscriptions()
        #: whether this server leads the floor (always, with SQLite)
        self.leader = Leadership(config.ha, config.store.postgres, config.pit.id,
                                 on_change=self._leadership_changed)
        self.watch.leading = lambda: self.leader.is_leader
        self.metrics.leader.set(1 if self.leader.is_leader else 0)
        self.store_failure: str | None = None
        self.handler_errors = 0
        self._stop = asyncio.Event()
        self._took_over = False
        self._outbox_wake = asyncio.Event()
        self._audit_cursor = 0
        self._audit_seen: dict[int, float] = {}
        #: ids of the records already applied to the floor (a shared subscription's follower)
        self._applied: dict[int, float] = {}
        self._record_cursor = 0
        #: jumps heard with a shared subscription, handed to the reconciler when due
        self._jumps: dict[tuple[str, str, str], tuple[int, int, float]] = {}
        #: tables whose live model is built again after a batch (fetched messages)
        self._reload: set[tuple[str, str]] = set()
        self._metrics_server: Any = None
        #: the web page (:mod:`tabled.pit.web`), when the config has a ``[web]`` section
        self.web: Any = None
        #: each shift's report, written when it ends (``[reports] folder``; None: none)
        self.reports: ShiftWriter | None = (
            ShiftWriter(config.reports, self.store) if config.reports.folder else None)

    def web_port(self) -> PitPort:
        """What the web page may reach of this service (the web never imports the service)."""
        return PitPort(
            pit_id=self.config.pit.id, users=self.config.users,
            audit_days=self.config.retention.alert_days, floor=self.floor, desk=self.desk,
            record=self.store, changes=self.changes,
            broker_connected=self.ingest.connected.is_set,
            store_failure=lambda: self.store_failure, metrics_app=self.metrics.asgi_app(),
            displays=self.config.displays, display_refused=self.metrics.count_display_refused,
            reports=self.config.reports)

    def request_stop(self) -> None:
        self._stop.set()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store and rebuild the floor (what ``run`` does before connecting)."""
        await self.store.open()
        tables = await self.floor.rebuild(self.store)
        await self.engine.start()
        await self.watch.start()
        recent = await self.store.audit(limit=1)
        self._audit_cursor = recent[0].id if recent else 0
        self._record_cursor = await self.store.last_message_id()
        if self.reconciler is not None:
            await self.reconciler.start()
        log.info("store_open", store=self.store.description, tables=tables,
                 alerts=len(self.floor.alerts()))

    async def run(self) -> int:
        cfg = self.config
        if cfg.web is not None:  # its secret and certificate are checked before anything opens
            from tabled.pit.web.server import WebServer

            self.web = WebServer(self.web_port(), cfg.web)
        await self.start()
        if cfg.metrics.port is not None:
            self._metrics_server = self.metrics.serve(cfg.metrics.host, cfg.metrics.port)
            log.info("metrics_serving", host=cfg.metrics.host, port=cfg.metrics.port)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    start_part(group, log, "leader", self.leader.run),
                    start_part(group, log, "ingest", self.ingest.run),
                    start_part(group, log, "timers", self._timers),
                    start_part(group, log, "outbox", self._outbox),
                    start_part(group, log, "retention",
                               functools.partial(self._while_leader, self._retention)),
                    start_part(group, log, "status", self._status_loop),
                    start_part(group, log, "loop", self._loop_lag),
                    start_part(group, log, "gc", self._collector),
                    group.create_task(self.notifier.watchdog(), name="watchdog"),
                ]
                if cfg.mqtt.share_group:
                    tasks.append(start_part(group, log, "share", self._follow_records))
                if self.reconciler is not None:
                    tasks.append(start_part(group, log, "reconcile", self.reconciler.run))
                if self.reports is not None:
                    tasks.append(start_part(group, log, "reports", functools.partial(
                        self._while_leader, self.reports.run)))
                web = None
                if self.web is not None:
                    web = start_part(group, log, "web", self.web.run)
                await wait_connected(self.ingest, T_READY)
                self.notifier.ready(self.status_line())
                log.info("ready", status=self.status_line())
                await self._stop.wait()
                self.notifier.stopping()
                log.info("stopping")
                if web is not None:  # its live streams end, open requests finish
                    await self.web.stop()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(5):
                            await asyncio.shield(web)
                    web.cancel()
                await cancel_all(log, tasks)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            if self._metrics_server is not None:
                await asyncio.to_thread(self._metrics_server.shutdown)
            await self.store.close()
            self.notifier.close()
        log.info("stopped")
        return 0

    def status_line(self) -> str:
        states = self.floor.states()
        broker = "up" if self.ingest.connected.is_set() else "down"
        store = f"FAILING ({self.store_failure})" if self.store_failure else "ok"
        return (f"{self.leader.role}; tables {states['online']} online, "
                f"{states['degraded']} degraded, {states['offline']} offline; alerts "
                f"{len(self.floor.alerts())}; broker {broker}; store {store}")

    # -- the pipeline ---------------------------------------------------------------------------

    async def received(self, topic: str, payload: bytes, retained: bool) -> None:
        """One message from the broker. Never raises (a bug is logged and counted)."""
        await self.received_batch([(topic, payload, retained)])

    async def received_batch(self, batch: Sequence[tuple[str, bytes, bool]]) -> None:
        """Messages that arrived together (``(topic, payload, retained)``, in arrival order):
        checked, recorded in one transaction, then each applied to the live model, the alert
        rules and the integrity monitors, in arrival order. Never raises (a bug is logged and
        counted, and costs only its own message). Each message is judged alone: one the store
        refuses for its content (a data error) is filed in ``malformed`` and the rest of the
        batch recorded without it; an outage is retried while the batch waits. Fetch replies
        (:mod:`pit.reconcile`) go to the reconciler, and the messages they serve through the
        same path, after."""
        started = time.monotonic()
        try:
            await self._received_batch(batch)
        finally:
            self.metrics.batch_seconds.observe(time.monotonic() - started)

    async def _received_batch(self, batch: Sequence[tuple[str, bytes, bool]]) -> None:
        replies: list[tuple[str, bytes]] = []
        if self.reconciler is not None:
            live = []
            for topic, payload, retained in batch:
                if self.reconciler.is_reply(topic):
                    replies.append((topic, payload))
                else:
                    live.append((topic, payload, retained))
            batch = live
        await self._process(batch, backfill=False)
        for topic, payload in replies:
            assert self.reconciler is not None
            served = self.reconciler.reply(topic, payload)
            if served:
                await self._process(served, backfill=True)

    async def _process(self, batch: Sequence[tuple[str, bytes, bool]], *,
                       backfill: bool) -> None:
        """:meth:`received_batch` for live messages, or for messages a table served from its
        journal (``backfill``): recorded the same way, judged alone; the live model of a table
        that got fetched outcomes or shoes is then built again from the record, in the table's
        order (applied one by one, old hands would land on today's roads)."""
        if not batch:
            return
        self._reload = set()
        messages: list[Message | None] = []
        for topic, payload, retained in batch:
            try:
                messages.append(await self._parse(topic, payload, retained, backfill))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.handler_errors += 1
                log.exception("message_failed", topic=topic, bytes=len(payload))
                await self._file_malformed(topic, payload, time.time(), "unchecked",
                                           f"not checked: {type(exc).__name__}: {exc}")
                messages.append(None)
        durable = [m for m in messages if m is not None and m.topic.channel != "metrics"]
        recorded = iter(await self.record_batch(durable) if durable else [])
        for message in messages:
            if message is None:
                continue
            try:
                if message.topic.channel == "metrics":
                    await self._sample(message)
                else:
                    result = next(recorded)
                    if result is not None:
                        await self._recorded(message, result, backfill)
                if self.reconciler is not None and message.topic.channel in ("status",
                                                                             "metrics"):
                    self.reconciler.announce(message)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.handler_errors += 1
                log.exception("message_failed", topic=f"{message.site}/{message.table}/"
                              f"{message.stream}", table_seq=message.table_seq)
        for site, table in sorted(self._reload):
            await self._retrying("reload", functools.partial(self.floor.reload, self.store,
                                                             site, table))

    async def record_batch(self, messages: Sequence[Message]) -> list[Recorded | None]:
        """Record checked ``messages`` in one transaction, retried through an outage; what
        each became, in order. If the store refuses the batch for its content, each message
        again on its own: those it still refuses are filed in ``malformed`` (``None`` in their
        place), the others recorded. Never raises but for cancellation; the one way into the
        record for anything that records messages (the broker's, a table's journal's)."""
        try:
            return list(await self._retrying("record", lambda: self.store.record_many(
                messages, self.actor)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # StoreDataError, or a bug: one message's, most likely
            if len(messages) == 1:
                await self._refused(messages[0], exc)
                return [None]
            self._data_failure("record_batch", exc, messages=len(messages))
        out: list[Recorded | None] = []
        for message in messages:
            try:
                (one,) = await self._retrying("record", functools.partial(
                    self.store.record_many, [message], self.actor))
                out.append(one)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self._refused(message, exc)
                out.append(None)
        return out

    async def _refused(self, message: Message, exc: Exception) -> None:
        """One message the store refused on its own: counted, filed in ``malformed``."""
        self._data_failure("record", exc, table_seq=message.table_seq)
        topic = f"{self.config.mqtt.topic_prefix}/{message.site}/{message.table}/{message.stream}"
        await self._file_malformed(topic, message.text.encode(), message.received_at,
                                   "store_refused", f"store refused: {exc}")

    def _count_store_error(self, exc: StoreError) -> None:
        self.metrics.store_errors.inc()
        self.metrics.store_failures.labels(
            "data" if isinstance(exc, StoreDataError) else "outage").inc()

    def _data_failure(self, what: str, exc: Exception, **fields: Any) -> None:
        """A write the store refused for what it was given (not retried), counted."""
        self.metrics.store_errors.inc()
        self.metrics.store_failures.labels("data").inc()
        if isinstance(exc, StoreDataError):
            log.warning("store_refused", operation=what, error=str(exc), **fields)
        else:
            self.handler_errors += 1
            log.exception("store_refused", operation=what, **fields)

    async def _file_malformed(self, topic: str, payload: bytes, received_at: float, code: str,
                              reason: str) -> None:
        """Keep a message the pit cannot use in ``malformed``, counted by ``code``. Never
        raises for the message's own content (the store keeps any text it is given there)."""
        self.metrics.count_malformed(code)
        log.warning("malformed_message", topic=topic, code=code, reason=reason,
                    bytes=len(payload))
        try:
            await self._retrying("record_malformed", lambda: self.store.record_malformed(
                topic, reason, payload, received_at, self.actor))
        except Exception as exc:  # StoreDataError, or a bug: logged, counted, never raised
            self._data_failure("record_malformed", exc, topic=topic)

    async def _parse(self, topic: str, payload: bytes, retained: bool,
                     backfill: bool = False) -> Message | None:
        """The message checked, or None if malformed (then recorded as such)."""
        now = time.time()
        try:
            message = parse_message(self.config.mqtt.topic_prefix, topic, payload, now,
                                    retained)
        except Malformed as exc:
            await self._file_malformed(topic, payload, now, exc.code, str(exc))
            return None
        if not backfill:
            self.metrics.received.labels(message.topic.channel).inc()
        return message

    async def _sample(self, message: Message) -> None:
        """A metrics sample: not recorded (pit.store); the tile and the silence timer."""
        self.floor.apply(message)
        await self._retrying("alerts", lambda: self.engine.message(message, None, False))

    async def _recorded(self, message: Message, recorded: Recorded,
                        backfill: bool = False) -> None:
        """What follows the record of one message: counters, the live model, the alert rules,
        the integrity monitors (which put each stream in order themselves and see a number
        once: only a new record feeds them)."""
        channel = message.topic.channel
        if recorded.new:
            self.metrics.recorded.labels(channel).inc()
            if backfill:
                self.metrics.backfilled.labels(channel).inc()
        elif recorded.status == "duplicate":
            self.metrics.duplicates.labels(channel).inc()
        else:
            self.metrics.conflicts.labels(channel).inc()
            log.error("seq_conflict", site=message.site, table=message.table,
                      stream=message.stream, table_seq=message.table_seq)
        applied = False
        if recorded.new and backfill:
            if channel == "outcome" or (channel == "event"
                                        and message.kind in panel_event_types()):
                self._reload.add((message.site, message.table))
        elif recorded.new:
            applied = self.floor.apply(message)
            if recorded.id is not None and self.config.mqtt.share_group:
                self._applied[recorded.id] = time.monotonic()
        elif recorded.status == "duplicate" and channel in ("status", "device"):
            # every server of a floor receives the state topics, and one of them recorded this
            # copy first: still news to this server's model (which keeps its own order by
            # table_seq); the alert rules ran where it was recorded
            self.floor.apply(message)
        await self._retrying("alerts", lambda: self.engine.message(message, recorded, applied))
        if recorded.new:
            found = self.watch.feed(message.site, message.table, message.stream,
                                    message.table_seq, message.payload, message.received_at,
                                    message.event)
            if found:
                await self._retrying("integrity", lambda: self.watch.alerts(
                    message.site, message.table, found))

    async def _retrying(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Until the store takes it: the message is not dropped because the database is
        down; the broker connection keeps receiving meanwhile."""
        backoff = Backoff(0.2, 5.0)
        while True:
            try:
                result = await operation()
            except StoreDataError:
                raise  # the content's fault: the same again would fail the same way
            except StoreError as exc:
                self.metrics.store_errors.inc()
                self.metrics.store_failures.labels("outage").inc()
                if self.store_failure is None:
                    log.error("store_failing", operation=what, error=str(exc))
                self.store_failure = str(exc)
                await asyncio.sleep(backoff.next())
                continue
            if self.store_failure is not None:
                log.info("store_recovered", operation=what)
                self.store_failure = None
            return result

    def _shared_gap(self, site: str, table: str, stream: str, first: int, last: int) -> None:
        """A jump in ``table_seq`` with a shared subscription: handed to the reconciler after
        :data:`T_SHARE_GRACE` (by then the record has the other servers' share; what it
        still lacks is fetched)."""
        key = (site, table, stream)
        held = self._jumps.get(key)
        if held is not None:
            first, last = min(first, held[0]), max(last, held[1])
        due = held[2] if held is not None else time.monotonic() + T_SHARE_GRACE
        self._jumps[key] = (first, last, due)

    def _hand_jumps(self) -> None:
        if self.reconciler is None:
            return
        now = time.monotonic()
        for key, (first, last, due) in list(self._jumps.items()):
            if due <= now:
                del self._jumps[key]
                self.reconciler.gap(*key, first, last)

    async def _follow_records(self) -> None:
        """With a shared subscription this server receives only its share of the outcomes;
        the other servers' share reaches its live model through the shared record, read when
        PostgreSQL tells of a partner's commit, within T_FOLLOW_MIN of the last read (and at
        least every T_FOLLOW; alerts need no such path: they are in the record already). Each look
        reads what is newer than the last row read; every T_FOLLOW_AGAIN the recent window
        too, for a row committed late."""
        again = last = time.monotonic()
        while True:
            await self.store.others_recorded(self.actor, T_FOLLOW)
            spacing = last + T_FOLLOW_MIN - time.monotonic()
            if spacing > 0:
                await asyncio.sleep(spacing)
            last = time.monotonic()
            self._hand_jumps()
            recent = 0.0
            if time.monotonic() >= again:
                recent, again = T_AUDIT_WINDOW, time.monotonic() + T_FOLLOW_AGAIN
            try:
                records = await self.store.recorded_by_others(self._record_cursor,
                                                              recent, self.actor)
            except StoreError as exc:
                self._count_store_error(exc)
                log.warning("follow_store_error", error=str(exc))
                continue
            cutoff = time.monotonic() - 2 * T_AUDIT_WINDOW
            for key in [k for k, seen in self._applied.items() if seen < cutoff]:
                del self._applied[key]
            for stored in records:
                self._record_cursor = max(self._record_cursor, stored.id)
                if stored.id in self._applied:
                    continue
                self._applied[stored.id] = time.monotonic()
                self.floor.apply_stored(stored)
                found = self.watch.feed_stored(stored)
                try:
                    await self.watch.alerts(stored.site, stored.table, found)
                except StoreError as exc:
                    self._count_store_error(exc)
                    log.warning("integrity_store_error", error=str(exc))

    # -- the floor's leader -------------------------------------------------------------------

    def _leadership_changed(self, leading: bool) -> None:
        self.metrics.leader.set(1 if leading else 0)
        self._outbox_wake.set()
        if leading:
            self._took_over = True

    async def _while_leader(self, part: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``part`` while this server leads the floor: started when it becomes leader,
        cancelled at once when it stops being leader."""
        while True:
            await self.leader.wait_leader()
            task = asyncio.create_task(part())
            lost = asyncio.create_task(self.leader.wait_follower())
            try:
                await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (task, lost):
                    t.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await t
            if task.done() and not task.cancelled():
                task.result()  # a part's failure is its own: raised, logged, restarted

    async def _take_over(self) -> None:
        """Just became the leader: what the old leader was about is picked up from the
        record (the silent tables) and this server's held findings are filed."""
        await self.engine.lead()
        await self.watch.lead()

    # -- alerts out ---------------------------------------------------------------------------

    def _alert_changed(self, change: AlertChange) -> None:
        if change.alert.kind == "seq_gap" and change.audit.action in ("raised", "reopened"):
            self.metrics.gaps.inc()
        self._audit_seen[change.audit.id] = time.monotonic()
        self._outbox_wake.set()

    def _connected(self) -> None:
        self.metrics.broker_connects.inc()
        self._outbox_wake.set()
        if self.reconciler is not None:
            self.reconciler.on_connected()

    async def _outbox(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(T_OUTBOX):
                    await self._outbox_wake.wait()
            self._outbox_wake.clear()
            self.metrics.broker_connected.set(1 if self.ingest.connected.is_set() else 0)
            try:
                await self._follow()
                if self.config.alerts.publish and self.ingest.connected.is_set() \
                        and self.leader.is_leader:
                    await self._publish_pending()
            except StoreError as exc:
                self._count_store_error(exc)
                log.warning("outbox_store_error", error=str(exc))
                await asyncio.sleep(1.0)

    async def _follow(self) -> None:
        """Alert changes made elsewhere (the command line, another pit server) reach the live
        model (and the web page through the change feed)."""
        entries = await self.store.audit_after(self._audit_cursor, T_AUDIT_WINDOW)
        cutoff = time.monotonic() - 2 * T_AUDIT_WINDOW
        for key in [k for k, seen in self._audit_seen.items() if seen < cutoff]:
            del self._audit_seen[key]
        reload: set[int] = set()
        for entry in entries:
            self._audit_cursor = max(self._audit_cursor, entry.id)
            if entry.id in self._audit_seen:
                continue
            self._audit_seen[entry.id] = time.monotonic()
            reload.add(entry.alert_id)
        for alert_id in sorted(reload):
            alert = await self.store.alert(alert_id)
            if alert is not None:
                self.floor.alert_changed(alert)

    async def _publish_pending(self) -> None:
        prefix = self.config.mqtt.topic_prefix
        for entry, alert in await self.store.pending_publications():
            if not await self.store.claim_publication(entry.id, self.actor, time.time()):
                continue  # another pit server has it
            body = alert_payload(alert, entry, self.config.pit.id)
            sent = await self.ingest.publish(f"{prefix}/{alert.site}/pit/alert",
                                             json.dumps(body, separators=(",", ":")))
            if not sent:
                await self.store.release_publication(entry.id)
                return  # the connection is gone; the next connection publishes it
            await self.store.mark_published(entry.id, time.time())
            self.metrics.alerts_published.inc()

    # -- timers -------------------------------------------------------------------------------

    async def _timers(self) -> None:
        while True:
            await asyncio.sleep(T_TICK)
            try:
                if self._took_over and self.leader.is_leader:
                    await self._take_over()
                    self._took_over = False
                await self.engine.tick(leader=self.leader.is_leader)
                await self.watch.tick()
            except StoreError as exc:
                self._count_store_error(exc)
                log.warning("timers_store_error", error=str(exc))

    async def _retention(self) -> None:
        r = self.config.retention
        while True:
            now = time.time()
            try:
                gone = await self.store.purge(now - r.days * 86400, now - r.alert_days * 86400)
            except StoreError as exc:
                self._count_store_error(exc)
                log.warning("retention_failed", error=str(exc))
            else:
                if any(gone.values()):
                    log.info("retention_purged", **gone)
            await asyncio.sleep(r.interval)

    async def _status_loop(self) -> None:
        last = ""
        while True:
            await asyncio.sleep(T_STATUS)
            line = self.status_line()
            if line != last:
                self.notifier.status(line)
                last = line

    async def _collector(self) -> None:
        """Python's cyclic garbage collector, its pauses kept short. A full collection
        walks every object the pit keeps, and at 1,000 tables that held the event loop for
        100-250 ms (``pit_gc_pause_seconds``; every message, page and timer waits behind it):
        what survives a full collection is frozen out of the collector's sight
        (``gc.freeze``), so the next ones walk only what came since; every T_GC_THAW seconds
        it is all thawed, and the next full collection looks at everything again (what
        became cyclic garbage meanwhile is freed then). Each collection is timed meanwhile."""
        loop = asyncio.get_running_loop()
        full = asyncio.Event()

        def after_full() -> None:
            loop.call_soon_threadsafe(full.set)  # a collection may run in any thread

        try:
            with self.metrics.gc_watched(after_full):
                gc.freeze()  # what start-up made
                thaw_at = loop.time() + T_GC_THAW
                while True:
                    try:
                        async with asyncio.timeout_at(thaw_at):
                            await full.wait()
                    except TimeoutError:
                        gc.unfreeze()
                        thaw_at = loop.time() + T_GC_THAW
                        continue
                    full.clear()
                    gc.freeze()
        finally:
            gc.unfreeze()

    async def _loop_lag(self) -> None:
        """How late the event loop runs a timer: everything the pit does (recording, the
        live pages, the alert timers) waits behind whatever runs too long on the loop."""
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + T_LAG
            await asyncio.sleep(T_LAG)
            late = max(0.0, loop.time() - due)
            self.metrics.loop_lag.observe(late)
            if late >= T_STALLED:
                log.warning("event_loop_stalled", seconds=round(late, 3))


async def run_pit(config: PitConfig) -> int:
    return await PitService(config).run()
