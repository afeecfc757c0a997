"""Reconciliation: the pit's record compared with what each table announces, and what it lacks
fetched from the table's journal (docs/pit.md "Reconciliation", docs/mqtt.md "Fetch").

Owns, per (site, table, stream) of the numbered streams (event, outcome, fault): what the record
holds (its highest number and its holes, one query, :meth:`Store.holes`), what the table
announced (``high_water`` and ``journal`` of its retained status and of its metrics), what is
being fetched (signed requests on ``<prefix>/<site>/<table>/fetch``, at most
``reconcile.max_in_flight`` per table, paced, bounded by ``reconcile.request_size``), and since
when each missing number is known missing. Never records a message itself: the served texts go
back to the service (:meth:`Reconciler.reply`), which takes them through the same path as live
ones, and never decides an alert's wording: :class:`~tabled.pit.alerts.AlertEngine` raises and
closes ``seq_gap``.

A pass over a table (at start, for every table of the record and every retained status as it
arrives; after a jump heard live; after a high-water mark above the record, once
``reconcile.high_water_grace`` has passed; after a new journal id; after every broker
(re)connection; after each answered request) asks the record again: nothing of it is kept
across a restart but the alerts, so a pit killed in the middle finds the same holes when it
comes back. Numbers below the journal's ``first`` or from a journal that was replaced (a new
journal id: the new one numbers from 0 again) cannot be served: they are reported at once as
``seq_gap`` with ``unrecoverable``. Numbers still missing ``reconcile.gap_deadline`` after they
were first known missing (the table offline, the request refused or unanswered, the journal
without them) are reported as ``seq_gap``; the alert is closed when they arrive.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard

import structlog

from tabled.contract.secrets import read_secret
from tabled.contract.signing import sign
from tabled.pit.alerts import AlertEngine
from tabled.pit.config import MQTTSettings, ReconcileSettings, RetentionSettings
from tabled.pit.messages import DURABLE, Message
from tabled.pit.model import Floor
from tabled.pit.store import RecordStore, StoreError

log = structlog.get_logger("tabled.pit.reconcile")

#: How often the reconciler looks at what is due, seconds.
T_TICK = 0.2
#: The least time between two requests to one table, seconds (the table allows 5 a second).
T_PACE = 0.25
#: After a failure (no answer, refused) a table is asked again after this, doubling, seconds.
T_RETRY_MIN = 0.5
T_RETRY_MAX = 30.0
#: Numbers a table was asked for and did not serve are not asked for again before this.
T_UNSERVED = 30.0
#: The ``requester`` alphabet of the fetch protocol.
_REQUESTER = re.compile(r"[^A-Za-z0-9_-]")

Span = tuple[int, int]
Publish = Callable[[str, str], Awaitable[bool]]
#: ``(topic, payload, retained)``, what the service's pipeline takes
Item = tuple[str, bytes, bool]


def requester_id(pit_id: str) -> str:
    """The pit's id in the fetch protocol's alphabet (``[A-Za-z0-9_-]{1,64}``)."""
    return _REQUESTER.sub("-", pit_id)[:64] or "pit"


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def subtract(spans: list[Span], minus: list[Span]) -> list[Span]:
    """The numbers of ``spans`` not in ``minus`` (both sorted, disjoint), as spans."""
    out: list[Span] = []
    for a, b in spans:
        start = a
        for c, d in minus:
            if d < start or c > b:
                continue
            if c > start:
                out.append((start, c - 1))
            start = max(start, d + 1)
            if start > b:
                break
        if start <= b:
            out.append((start, b))
    return out


def intersect(spans: list[Span], a: int, b: int) -> list[Span]:
    return [(max(x, a), min(y, b)) for x, y in spans if y >= a and x <= b]


def normalise(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def carry(old: list[tuple[int, int, float]], new: list[Span],
          now: float) -> list[tuple[int, int, float]]:
    """``new`` missing spans, each part with the time its numbers were first known missing
    (from ``old``; ``now`` for numbers not known missing before)."""
    out: list[tuple[int, int, float]] = []
    for a, b in new:
        start = a
        for c, d, since in old:
            if d < start or c > b:
                continue
            if c > start:
                out.append((start, c - 1, now))
            out.append((max(start, c), min(b, d), since))
            start = min(b, d) + 1
            if start > b:
                break
        if start <= b:
            out.append((start, b, now))
    return out


@dataclass
class _Request:
    nonce: str
    site: str
    table: str
    stream: str
    first: int
    last: int
    deadline: float


@dataclass
class _Stream:
    #: the table's announced high-water mark (-1: none yet) and when it was heard
    announced: int = -1
    announced_at: float = 0.0
    #: the lowest number the table's journal can serve
    first: int = 0
    #: numbers up to this are of a journal that was replaced: never asked for again
    barrier: int = -1
    #: every number up to this is in the record (or beyond it: retention): not looked at again
    prefix: int = -1
    #: missing spans with the time each was first known missing
    known: list[tuple[int, int, float]] = field(default_factory=list)
    #: spans asked for and answered without them, with when: not asked again soon
    unserved: list[tuple[int, int, float]] = field(default_factory=list)


@dataclass
class _Table:
    site: str
    table: str
    streams: dict[str, _Stream] = field(
        default_factory=lambda: {s: _Stream() for s in DURABLE})
    journal: str | None = None
    #: a pass over the table is wanted at this time (None: none wanted)
    due: float | None = None
    #: no request before this (pace, backoff after a failure)
    retry_at: float = 0.0
    failures: int = 0
    why: str = "being fetched"
    #: False once its birth record says it serves no fetches (no ``[fetch]`` key)
    serves: bool = True
    #: when the table last answered a fetch (a part of a reply that was not a refusal)
    answered: float = 0.0


class Reconciler:
    """Run :meth:`run` as a task; the service feeds it (see the module docstring)."""

    def __init__(self, settings: ReconcileSettings, mqtt: MQTTSettings, pit_id: str,
                 store: RecordStore, engine: AlertEngine, floor: Floor, publish: Publish,
                 connected: Callable[[], bool], *,
                 retention: RetentionSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        assert settings.hmac_key_file is not None
        self.settings = settings
        self.prefix = mqtt.topic_prefix
        self.sites = mqtt.sites
        self.requester = requester_id(pit_id)
        self.store = store
        self.engine = engine
        self.floor = floor
        self.publish = publish
        self.clock = clock
        self._key = read_secret(settings.hmac_key_file)
        self._tables: dict[tuple[str, str], _Table] = {}
        self._requests: dict[str, _Request] = {}
        self._wake = asyncio.Event()
        self._connected = connected
        self.retention = retention or RetentionSettings()
        self.counters = {"requests": 0, "refused": 0, "timeouts": 0, "served": 0}

    # -- what the service tells it ------------------------------------------------------------

    def subscriptions(self) -> list[str]:
        return [f"{self.prefix}/{site}/+/fetch/reply/{self.requester}" for site in self.sites]

    def is_reply(self, topic: str) -> bool:
        parts = topic.split("/")
        return (topic.startswith(self.prefix + "/") and len(parts) >= 4
                and parts[-3:-1] == ["fetch", "reply"])

    async def start(self) -> None:
        """Every table of the record is looked at once connected; its last journal id is
        taken from its recorded birth records (a replaced journal is seen after a restart)."""
        now = self.clock()
        for site, table in await self.store.tables():
            t = self._table(site, table)
            t.due = now
            for stored in reversed(await self.store.messages(site, table, "status", limit=50)):
                journal = stored.payload.get("journal")
                if isinstance(journal, dict) and isinstance(journal.get("id"), str):
                    t.journal = journal["id"]
                    break

    @property
    def connected(self) -> bool:
        return self._connected()

    def on_connected(self) -> None:
        """A broker (re)connection: what was lost meanwhile is looked for on every table."""
        now = self.clock()
        for t in self._tables.values():
            t.due = now
            t.retry_at = min(t.retry_at, now)
        self._wake.set()

    def gap(self, site: str, table: str, stream: str, first: int, last: int) -> None:
        """A jump heard live (the alert engine's hook): fetched at once."""
        now = self.clock()
        t = self._table(site, table)
        s = t.streams[stream]
        s.known = carry(s.known, normalise([(a, b) for a, b, _ in s.known] + [(first, last)]),
                        now)
        t.due = now
        self._wake.set()

    def announce(self, message: Message) -> None:
        """A table's status or metrics (recorded, or a copy): its high-water marks and journal."""
        p = message.payload
        if not isinstance(p, dict):
            return
        t = self._table(message.site, message.table)
        now = self.clock()
        journal = p.get("journal")
        if isinstance(journal, dict):
            self._journal(t, journal.get("id"), journal.get("first"), now)
        marks = p.get("high_water")
        # a retained status is old news: what it announces is not on its way any more
        grace = 0.0 if message.retained else self.settings.high_water_grace
        if isinstance(marks, dict):
            for stream, value in marks.items():
                s = t.streams.get(stream)
                if s is None or not _int(value) or value <= s.announced:
                    continue
                s.announced, s.announced_at = value, now - (self.settings.high_water_grace
                                                           - grace)
                if value > self.engine.highest(t.site, t.table, stream):
                    self._want(t, now + grace)
        if message.topic.channel == "status" and p.get("state") in ("online", "degraded"):
            serves = p.get("fetch") is not False
            if not serves:
                t.why = "the table serves no fetches (no [fetch] key)"
            elif not t.serves:
                t.why = "being fetched"
            t.serves = serves
            self._want(t, now)  # a retained status at start, or a table back

    def reply(self, topic: str, payload: bytes) -> list[Item]:
        """One reply message (``…/fetch/reply/<requester>``): the served message texts, as
        items of the stream's topic for the service's pipeline. Never raises."""
        try:
            return self._reply(topic, payload)
        except Exception:
            log.exception("fetch_reply_failed", topic=topic, bytes=len(payload))
            return []

    # -- the loop -----------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                async with asyncio.timeout(T_TICK):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.tick()
            except StoreError as exc:
                log.warning("reconcile_store_error", error=str(exc))
                await asyncio.sleep(1.0)
            except Exception:  # a bug here must not stop the pit's record
                log.exception("reconcile_failed")
                await asyncio.sleep(1.0)

    async def tick(self) -> None:
        """Requests that timed out, tables due for a pass, spans past their deadline."""
        now = self.clock()
        for nonce, request in list(self._requests.items()):
            if request.deadline <= now:
                del self._requests[nonce]
                self.counters["timeouts"] += 1
                t = self._table(request.site, request.table)
                self._failed(t, f"no answer to the fetch within "
                                f"{self.settings.request_timeout:g} s", now)
        for t in list(self._tables.values()):
            if t.due is not None and t.due <= now and self.connected:
                t.due = None
                await self._pass(t, now)
        for t in list(self._tables.values()):
            await self._deadlines(t, now)

    # -- inside -------------------------------------------------------------------------------

    def _table(self, site: str, table: str) -> _Table:
        key = (site, table)
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = _Table(site, table)
        return t

    def _want(self, t: _Table, at: float) -> None:
        t.due = at if t.due is None else min(t.due, at)
        if at <= self.clock():
            self._wake.set()

    def _journal(self, t: _Table, journal_id: Any, first: Any, now: float) -> None:
        if isinstance(first, dict):
            for stream, value in first.items():
                if stream in t.streams and _int(value):
                    t.streams[stream].first = value
        if not isinstance(journal_id, str) or journal_id == t.journal:
            return
        if t.journal is not None:
            # a replaced journal numbers from 0 again: what the record lacks of the old one
            # cannot be served by the new one (it would serve other messages under the numbers)
            for stream, s in t.streams.items():
                s.barrier = max(s.barrier, s.announced,
                                self.engine.highest(t.site, t.table, stream))
                s.announced = -1
            log.warning("journal_replaced", table=f"{t.site}/{t.table}", was=t.journal,
                        now=journal_id)
        t.journal = journal_id
        self._want(t, now)

    def _open_gaps(self, t: _Table, stream: str) -> list[Any]:
        model = self.floor.table(t.site, t.table)
        if model is None:
            return []
        return [a for a in model.alerts.values()
                if a.kind == "seq_gap" and a.detail.get("stream") == stream
                and a.state != "closed"]

    async def _pass(self, t: _Table, now: float) -> None:
        """What the record lacks of each stream, asked for; the alerts brought up to date."""
        for stream, s in t.streams.items():
            held = await self.store.holes(t.site, t.table, stream, after=s.prefix)
            missing = list(held.holes)
            if missing and s.prefix < 0 and missing[0][0] == 0 and held.low_at is not None \
                    and self._purged(held.low_at, now):
                missing.pop(0)  # below the record's lowest number: retention purged it
            tail = s.announced
            if tail > held.high and s.announced_at + self.settings.high_water_grace > now:
                self._want(t, s.announced_at + self.settings.high_water_grace)
                tail = held.high
            if tail > held.high:
                missing.append((held.high + 1, tail))
            for alert in self._open_gaps(t, stream):
                first, last = alert.detail.get("first"), alert.detail.get("last")
                if _int(first) and _int(last):
                    await self.engine.gap_progress(alert, intersect(missing, first, last))
            lost = normalise(
                [(a, min(b, s.first - 1)) for a, b in missing if a < s.first]
                + [(a, min(b, s.barrier)) for a, b in missing if a <= s.barrier])
            if lost:
                await self._unrecoverable(t, stream, lost)
            # the record is complete up to the first number missing (lost ones included: their
            # alert is brought up to date by the passes that follow)
            s.prefix = max(s.prefix, missing[0][0] - 1 if missing else held.high)
            missing = subtract(missing, lost)
            s.known = carry(s.known, missing, now)
            s.unserved = [u for u in s.unserved if u[2] + T_UNSERVED > now]
            asked = normalise([(r.first, r.last) for r in self._requests.values()
                               if (r.site, r.table, r.stream) == (t.site, t.table, stream)]
                              + [(a, b) for a, b, _ in s.unserved])
            await self._ask(t, stream, subtract(missing, asked), now)
            if s.known:  # looked at again: late arrivals close the alerts, failures retry
                self._want(t, now + 1.0)

    def _purged(self, low_at: float, now: float) -> bool:
        """Whether the record's lowest number was received so long ago that what lies below it
        was purged by ``[retention]`` (not never heard): then it is not fetched again."""
        r = self.retention
        horizon = r.days * 86400
        return low_at < now - horizon + min(86400.0, horizon / 10) + 2 * r.interval

    async def _unrecoverable(self, t: _Table, stream: str, lost: list[Span]) -> None:
        for alert in self._open_gaps(t, stream):
            if alert.detail.get("unrecoverable"):
                lost = subtract(lost, [(int(a), int(b)) for a, b in
                                       alert.detail.get("missing", [])])
        if lost:
            await self.engine.gap_overdue(
                t.site, t.table, stream, lost, unrecoverable=True,
                why="below the first number its journal keeps, or of a journal replaced")

    async def _ask(self, t: _Table, stream: str, wanted: list[Span], now: float) -> None:
        if not t.serves:
            return
        size = self.settings.request_size
        for a, b in _coalesce(wanted, size):
            while a <= b:
                if sum(1 for r in self._requests.values()
                       if (r.site, r.table) == (t.site, t.table)) >= self.settings.max_in_flight:
                    return
                if t.retry_at > now or not self.connected:
                    self._want(t, max(t.retry_at, now + T_PACE))
                    return
                last = min(b, a + size - 1)
                if not await self._send(t, stream, a, last, now):
                    self._want(t, now + 1.0)
                    return
                t.retry_at = now + T_PACE
                a = last + 1

    async def _send(self, t: _Table, stream: str, first: int, last: int, now: float) -> bool:
        base = f"{self.prefix}/{t.site}/{t.table}/fetch"
        body: dict[str, Any] = {
            "stream": stream, "from": first, "to": last, "requester": self.requester,
            "reply_to": f"{base}/reply/{self.requester}", "ts": _ts(now),
            "nonce": secrets.token_hex(16)}
        body["mac"] = sign(body, self._key)
        request = _Request(body["nonce"], t.site, t.table, stream, first, last,
                           now + self.settings.request_timeout)
        self._requests[request.nonce] = request  # before the reply can come
        if not await self.publish(base, json.dumps(body, separators=(",", ":"))):
            del self._requests[request.nonce]
            return False
        self.counters["requests"] += 1
        log.info("fetch_requested", table=f"{t.site}/{t.table}", stream=stream, first=first,
                 last=last)
        return True

    def _failed(self, t: _Table, why: str, now: float) -> None:
        t.failures += 1
        t.why = why
        t.retry_at = now + min(T_RETRY_MAX, T_RETRY_MIN * 2 ** (t.failures - 1))
        self._want(t, t.retry_at)

    async def _deadlines(self, t: _Table, now: float) -> None:
        if not self._overdue(t, now):
            return
        await self._pass(t, now)  # what arrived since the last pass is not reported
        for stream, overdue in self._overdue(t, now).items():
            await self.engine.gap_overdue(t.site, t.table, stream, overdue,
                                          unrecoverable=False, why=t.why)

    def _overdue(self, t: _Table, now: float) -> dict[str, list[Span]]:
        """Per stream, the numbers missing longer than the deadline that no open alert names.
        While the table is answering (a long backlog being fetched), only the numbers it was
        asked for and did not serve are: the others are on their way."""
        serving = t.failures == 0 and now - t.answered < 2 * self.settings.request_timeout
        out: dict[str, list[Span]] = {}
        for stream, s in t.streams.items():
            overdue = normalise([(a, b) for a, b, since in s.known
                                 if since + self.settings.gap_deadline <= now])
            if serving:
                unserved = normalise([(a, b) for a, b, _ in s.unserved])
                overdue = subtract(overdue, subtract(overdue, unserved))
            if not overdue:
                continue
            for alert in self._open_gaps(t, stream):
                overdue = subtract(overdue, [(int(a), int(b)) for a, b in
                                             alert.detail.get("missing", [])])
            if overdue:
                out[stream] = overdue
        return out

    def _reply(self, topic: str, payload: bytes) -> list[Item]:
        parts = topic[len(self.prefix) + 1:].split("/")
        if len(parts) != 5:
            return []
        site, table = parts[0], parts[1]
        body = json.loads(payload)
        if not isinstance(body, dict):
            log.warning("fetch_reply_malformed", topic=topic)
            return []
        now = self.clock()
        t = self._table(site, table)
        nonce = body.get("nonce")
        request = self._requests.get(nonce) if isinstance(nonce, str) else None
        if request is not None and (request.site, request.table) != (site, table):
            request = None
        if body.get("ok") is False:
            self.counters["refused"] += 1
            log.warning("fetch_refused", table=f"{site}/{table}", error=body.get("error"),
                        detail=body.get("detail"))
            if request is not None:
                del self._requests[request.nonce]
            self._failed(t, f"the table refused the fetch: {body.get('error')}", now)
            return []
        stream = body.get("stream")
        if not isinstance(stream, str) or stream not in DURABLE:
            log.warning("fetch_reply_malformed", topic=topic, stream=stream)
            return []
        s = t.streams[stream]
        journal = body.get("journal")
        if isinstance(journal, dict):
            first = journal.get("first")
            self._journal(t, journal.get("id"),
                          {stream: first} if _int(first) else None, now)
        high = body.get("high_water")
        if _int(high) and high > s.announced:
            s.announced, s.announced_at = high, now
        texts = body.get("messages")
        items: list[Item] = []
        if isinstance(texts, list):
            topic_of = f"{self.prefix}/{site}/{table}/{stream}"
            items = [(topic_of, text.encode(), False) for text in texts if isinstance(text, str)]
            self.counters["served"] += len(items)
        t.answered = now
        if request is not None:
            request.deadline = now + self.settings.request_timeout
            if body.get("last") is True:
                del self._requests[request.nonce]
                t.failures, t.why = 0, "being fetched"
                end = body.get("next")
                stop = min(request.last, end - 1) if _int(end) else request.last
                # what a complete answer left out is not asked for again soon (the journal
                # does not have it); what it served is recorded before the next pass
                s.unserved.append((request.first, stop, now))
                self._want(t, now + T_PACE)
        return items


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _coalesce(spans: list[Span], size: int) -> list[Span]:
    """Spans close enough to be asked for in one request of at most ``size`` numbers: with a
    shared subscription the record's holes alternate with the numbers the other servers
    recorded, and one request for the stretch (what is recorded already comes back as a
    duplicate) beats one request per hole at the pace a table allows."""
    out: list[Span] = []
    for a, b in spans:
        if out and b - out[-1][0] < size:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
