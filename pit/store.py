"""The pit's record: one async interface, two databases (SQLite embedded, PostgreSQL shared).

Owns what is kept and how it is queried, and nothing that decides: the alert engine says what to
raise or clear, this module makes each change one transaction with its audit entry.

- **Messages**, idempotent by ``(site, table, topic, table_seq)``: a QoS 1 re-delivery (the same
  bytes under a number already stored) is a duplicate and stored once; different bytes under a
  stored number is a *conflict* (a table whose journal was reset), reported, never overwritten.
  The daemon's one unnumbered message (a journal failure on ``…/fault``) is idempotent by its
  digest. What is recorded: every ``event``, ``outcome`` and ``fault`` (the durable, contiguous
  streams), and every ``status`` and ``device/<id>/status`` message (state changes; each carries
  its own number). ``metrics`` is not recorded: it is a periodic sample (QoS 0), its figures go
  to the live model and Prometheus.
- **Malformed** messages, kept with the reason, so that bad input loses nothing.
- **Alerts** with their lifecycle ``open → acknowledged → cleared → closed`` (or ``open →
  cleared`` and then acknowledged to close; or closed by a supervisor) and an **audit trail**:
  every change is a row naming who, when, what and the note. The audit rows are also the
  outbox of ``…/pit/alert``: each is published once (claimed by one pit server, marked when the
  broker acknowledged it), even with several servers on one database.
- **Web sessions** and the **sign-in audit** (schema version 2): a session is a row (the hash
  of its id, never the id), so that sign-out ends it for every pit server on the record; every
  sign-in, failure, throttle, sign-out and ended session is a row of ``sign_in_audit``.

The SQL is written once (``?`` placeholders, portable types); :mod:`pit.store_sqlite` and
:mod:`pit.store_postgres` provide the connection, the transaction and the few words that differ.
Every operation has a timeout and raises :class:`StoreError` when the database fails, or
:class:`StoreDataError` when it refuses the content it was given (retrying would not help).
"""

from __future__ import annotations

import abc
import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

from tabled.contract.outcome import OutcomeError, OutcomeRecord
from tabled.games.registry import decode_outcome
from tabled.pit.errors import PitError
from tabled.pit.messages import DURABLE, Message

#: Every store operation (one transaction) must finish within this, seconds.
T_STORE = 10.0
#: A claimed outbox row not marked published within this is claimed again (its pit died).
T_CLAIM = 30.0

SCHEMA_VERSION = 2

AlertState = Literal["open", "acknowledged", "cleared", "closed"]
LIVE_STATES: tuple[AlertState, ...] = ("open", "acknowledged", "cleared")
Severity = Literal["critical", "major", "minor", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "major", "minor", "info")


class StoreError(PitError):
    """The database failed or did not answer in time (the operation was not done): an outage,
    worth retrying."""


class StoreDataError(StoreError):
    """The database refused what it was given (a number beyond its integers, text it cannot
    keep): the operation was not done, and doing it again would fail the same way."""


def store_error(description: str, exc: BaseException,
                data: tuple[type[BaseException], ...]) -> StoreError:
    """``exc`` of a database driver as the store's error: :class:`StoreDataError` if it is one
    of the dialect's ``data`` errors, an outage (:class:`StoreError`) otherwise. The one rule
    that tells the two apart; each dialect lists its driver's data errors."""
    kind = StoreDataError if isinstance(exc, data) else StoreError
    return kind(f"{description}: {type(exc).__name__}: {exc}")


class AlertActionError(PitError):
    """An alert action that cannot be done: no such alert, or not in its current state."""


Row = tuple[Any, ...]


class Tx(abc.ABC):
    """One transaction's statements (``?`` placeholders)."""

    @abc.abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    @abc.abstractmethod
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


# -- what the store returns -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recorded:
    """What :meth:`Store.record` did with a message."""

    status: Literal["new", "duplicate", "conflict"]
    id: int | None

    @property
    def new(self) -> bool:
        return self.status == "new"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    site: str
    table: str
    stream: str
    table_seq: int | None
    kind: str
    round: int | None
    received_at: float
    payload: dict[str, Any]

    @property
    def outcome(self) -> OutcomeRecord | None:
        """An outcome's typed form, decoded from the record as it was when received (None for
        another stream, or for a record the contract's decoder refuses: one recorded before the
        pit decoded every field)."""
        if self.stream != "outcome":
            return None
        try:
            return decode_outcome(self.payload)
        except OutcomeError:
            return None


@dataclass(frozen=True, slots=True)
class Holdings:
    """What the record holds of one stream (:meth:`Store.holes`): ``high`` the highest number
    recorded (-1: none), ``holes`` the missing runs below it as ``(first, last)``, lowest first
    (the numbers below the lowest recorded one included), ``low_at`` when the lowest recorded
    number was received (None: none; retention purges by that time)."""

    high: int
    holes: list[tuple[int, int]]
    low_at: float | None = None


@dataclass(frozen=True, slots=True)
class RecalledRound:
    """One round for game recall: its outcome and every event the table published for it."""

    round: int
    outcome: dict[str, Any]
    events: list[dict[str, Any]]
    received_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "outcome": self.outcome, "events": self.events,
                "received_at": self.received_at}


@dataclass(frozen=True, slots=True)
class AlertSpec:
    """What the alert engine raises. ``(site, table, kind, subject)`` identifies one condition:
    at most one alert per condition is not closed. ``transient``: a fact, not a lasting
    condition (a void round, a fault): there is nothing to clear, so acknowledging closes it."""

    site: str
    table: str
    kind: str
    subject: str
    severity: Severity
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    transient: bool = False


@dataclass(frozen=True, slots=True)
class Alert:
    id: int
    site: str
    table: str
    kind: str
    subject: str
    severity: Severity
    state: AlertState
    message: str
    detail: dict[str, Any]
    transient: bool
    #: how many times the condition was reported while this alert was not closed
    count: int
    opened_at: float
    updated_at: float
    acked_by: str | None
    acked_at: float | None
    ack_note: str | None
    cleared_at: float | None
    closed_at: float | None
    closed_by: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "site": self.site, "table": self.table, "kind": self.kind,
            "subject": self.subject, "severity": self.severity, "state": self.state,
            "message": self.message, "detail": self.detail, "transient": self.transient,
            "count": self.count, "opened_at": self.opened_at, "updated_at": self.updated_at,
            "acknowledged": None if self.acked_by is None else {
                "by": self.acked_by, "at": self.acked_at, "note": self.ack_note},
            "cleared_at": self.cleared_at, "closed_at": self.closed_at,
            "closed_by": self.closed_by,
        }


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One action on one alert: who (a user, or ``pit:<id>`` for the engine), when, what, the
    alert's state after it, and the note."""

    id: int
    alert_id: int
    at: float
    actor: str
    action: str
    state: str
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "alert_id": self.alert_id, "at": self.at, "actor": self.actor,
                "action": self.action, "state": self.state, "note": self.note}


@dataclass(frozen=True, slots=True)
class AlertChange:
    """An alert after a change, and the audit entry that records the change."""

    alert: Alert
    audit: AuditEntry


# -- web sessions and the sign-in audit (schema version 2) -------------------------------------


@dataclass(frozen=True, slots=True)
class WebSession:
    """A signed-in session of the web page: ``id_hash`` is the SHA-256 of the random id in the
    browser's cookie (the record never holds the id itself); ``password_mark`` a fingerprint of
    the user's password hash when the session began (another hash in the config: the password
    changed, the session ends)."""

    id_hash: str
    user: str
    password_mark: str
    created_at: float
    last_seen: float
    ended_at: float | None
    end_reason: str | None
    client: str
    pit: str

    def to_dict(self) -> dict[str, Any]:
        return {"user": self.user, "created_at": self.created_at, "last_seen": self.last_seen,
                "ended_at": self.ended_at, "end_reason": self.end_reason,
                "client": self.client, "pit": self.pit}


@dataclass(frozen=True, slots=True)
class SignInEntry:
    """One line of the sign-in audit: ``action`` is ``signed_in``, ``failed``, ``throttled``,
    ``signed_out`` or ``session_ended`` (``reason``: ``password_changed``, ``user_removed``,
    ``idle``, ``expired``); never a password."""

    id: int
    at: float
    user: str
    client: str
    action: str
    reason: str | None
    pit: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "user": self.user, "client": self.client,
                "action": self.action, "reason": self.reason, "pit": self.pit}


# -- the interface ----------------------------------------------------------------------------

R = TypeVar("R")


class Store(abc.ABC):
    """The record. :meth:`open` connects and migrates; every other method is one transaction."""

    #: Called with (operation, seconds) after each operation (Prometheus' store latency).
    observe: Callable[[str, float], None] | None = None

    @abc.abstractmethod
    async def open(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def description(self) -> str: ...

    # messages
    @abc.abstractmethod
    async def record(self, message: Message, recorded_by: str) -> Recorded: ...

    @abc.abstractmethod
    async def record_many(self, messages: Sequence[Message],
                          recorded_by: str) -> list[Recorded]:
        """:meth:`record` for each message in order, in one transaction."""

    @abc.abstractmethod
    async def record_malformed(self, topic: str, reason: str, payload: bytes,
                               received_at: float, recorded_by: str) -> None: ...

    @abc.abstractmethod
    async def missing(self, site: str, table: str, stream: str, first: int,
                      last: int) -> list[int]: ...

    @abc.abstractmethod
    async def holes(self, site: str, table: str, stream: str, after: int = -1,
                    limit: int = 10_000) -> Holdings:
        """What the record holds of one numbered stream above ``after`` (a prefix known
        complete): its highest number and the runs of numbers missing below it (from
        ``after + 1``), at most ``limit`` of them, lowest first."""

    @abc.abstractmethod
    async def high_water(self) -> dict[tuple[str, str, str], int]: ...

    @abc.abstractmethod
    async def tables(self) -> list[tuple[str, str]]: ...

    @abc.abstractmethod
    async def messages(self, site: str, table: str, stream: str | None = None, *,
                       limit: int = 100) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def recent_outcomes(self, site: str, table: str,
                              limit: int = 10) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def rounds_since(self, site: str, table: str, since: float) -> int: ...

    @abc.abstractmethod
    async def recall(self, site: str, table: str, last: int = 10) -> list[RecalledRound]: ...

    @abc.abstractmethod
    async def rebuild_records(self, site: str, table: str,
                              limit: int = 5000) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def malformed_count(self) -> int: ...

    @abc.abstractmethod
    async def last_message_id(self) -> int: ...

    @abc.abstractmethod
    async def recorded_by_others(self, after_id: int, recent: float, me: str,
                                 limit: int = 1000) -> list[StoredMessage]:
        """Outcomes and ``shoe_start`` events other pit servers recorded with an id above
        ``after_id`` or in the last ``recent`` seconds (the live model of a server that gets
        only its share of a shared subscription follows the rest through the record)."""

    # alerts
    @abc.abstractmethod
    async def raise_alert(self, spec: AlertSpec, actor: str, now: float,
                          publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def clear_alert(self, site: str, table: str, kind: str, subject: str, actor: str,
                          now: float, note: str | None = None,
                          publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def update_alert(self, alert_id: int, detail: dict[str, Any], message: str,
                           actor: str, now: float, note: str,
                           publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def acknowledge(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange: ...

    @abc.abstractmethod
    async def close_alert(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange: ...

    @abc.abstractmethod
    async def audit_refusal(self, alert_id: int, actor: str, action: str, note: str,
                            now: float) -> AuditEntry | None: ...

    @abc.abstractmethod
    async def alert(self, alert_id: int) -> Alert | None: ...

    @abc.abstractmethod
    async def alerts(self, *, site: str | None = None, table: str | None = None,
                     states: Sequence[str] = LIVE_STATES, kind: str | None = None,
                     limit: int = 1000) -> list[Alert]: ...

    @abc.abstractmethod
    async def audit(self, alert_id: int | None = None, *, limit: int = 200) -> list[AuditEntry]:
        """The audit trail of one alert (oldest first), or the latest entries of all."""

    @abc.abstractmethod
    async def audit_after(self, after_id: int, recent: float = 0.0,
                          limit: int = 500) -> list[AuditEntry]:
        """Audit entries with an id above ``after_id`` or written in the last ``recent``
        seconds: how a pit learns what other processes did (PostgreSQL hands out ids before
        commit, so a late commit may carry a lower id than one already seen)."""

    # outbox
    @abc.abstractmethod
    async def pending_publications(self, limit: int = 100) -> list[tuple[AuditEntry, Alert]]: ...

    @abc.abstractmethod
    async def claim_publication(self, audit_id: int, by: str, now: float) -> bool: ...

    @abc.abstractmethod
    async def mark_published(self, audit_id: int, now: float) -> None: ...

    @abc.abstractmethod
    async def release_publication(self, audit_id: int) -> None: ...

    # retention
    @abc.abstractmethod
    async def purge(self, messages_before: float, alerts_before: float) -> dict[str, int]: ...

    # web sessions and the sign-in audit (schema version 2)
    @abc.abstractmethod
    async def start_session(self, session: WebSession) -> SignInEntry:
        """Store a new session and its ``signed_in`` audit line, in one transaction."""

    @abc.abstractmethod
    async def web_session(self, id_hash: str) -> WebSession | None: ...

    @abc.abstractmethod
    async def touch_session(self, id_hash: str, now: float) -> bool:
        """Note activity on a session not ended; False if it is ended (or unknown)."""

    @abc.abstractmethod
    async def end_session(self, id_hash: str, reason: str, now: float, *,
                          client: str | None = None, pit: str = "") -> SignInEntry | None:
        """End a session not ended yet, with its audit line (``signed_out`` for the reason
        ``signed_out``, else ``session_ended``); None if it was ended already (by another
        request or another pit server: audited once)."""

    @abc.abstractmethod
    async def live_sessions(self, limit: int = 10_000) -> list[WebSession]: ...

    @abc.abstractmethod
    async def record_sign_in(self, at: float, user: str, client: str, action: str,
                             reason: str | None, pit: str) -> SignInEntry: ...

    @abc.abstractmethod
    async def sign_in_audit(self, *, user: str | None = None,
                            limit: int = 100) -> list[SignInEntry]:
        """The latest sign-in audit lines (of one user), newest first."""

    @abc.abstractmethod
    async def purge_sign_in(self, sessions_before: float,
                            audit_before: float) -> dict[str, int]:
        """Delete sessions ended before ``sessions_before`` and audit lines written before
        ``audit_before``."""


# -- the SQL, once ----------------------------------------------------------------------------

_MESSAGE_COLUMNS = "id, site, table_id, topic, table_seq, kind, round, received_at, payload"
_ALERT_COLUMNS = ("id, site, table_id, kind, subject, severity, state, message, detail, "
                  "transient, count, opened_at, updated_at, acked_by, acked_at, ack_note, "
                  "cleared_at, closed_at, closed_by")
_AUDIT_COLUMNS = "id, alert_id, at, actor, action, state, note"


def schema(pk: str, real: str, bigint: str) -> list[str]:
    """Version 1 of the schema in a dialect's words for an auto-increment primary key, a double
    and a 64-bit integer."""
    return [
        f"""CREATE TABLE messages (
            id {pk},
            site TEXT NOT NULL, table_id TEXT NOT NULL, topic TEXT NOT NULL,
            table_seq {bigint}, digest TEXT NOT NULL, kind TEXT NOT NULL, round {bigint},
            event_mark {bigint},
            received_at {real} NOT NULL, recorded_by TEXT NOT NULL, payload TEXT NOT NULL)""",
        # idempotency: one row per number; the unnumbered journal failure once per content
        """CREATE UNIQUE INDEX messages_seq ON messages (site, table_id, topic, table_seq)
           WHERE table_seq IS NOT NULL""",
        """CREATE UNIQUE INDEX messages_unnumbered ON messages (site, table_id, topic, digest)
           WHERE table_seq IS NULL""",
        "CREATE INDEX messages_table ON messages (site, table_id, topic, id)",
        "CREATE INDEX messages_received ON messages (received_at)",
        f"""CREATE TABLE malformed (
            id {pk}, topic TEXT NOT NULL, reason TEXT NOT NULL, received_at {real} NOT NULL,
            recorded_by TEXT NOT NULL, payload TEXT NOT NULL)""",
        "CREATE INDEX malformed_received ON malformed (received_at)",
        f"""CREATE TABLE alerts (
            id {pk},
            site TEXT NOT NULL, table_id TEXT NOT NULL, kind TEXT NOT NULL,
            subject TEXT NOT NULL, severity TEXT NOT NULL, state TEXT NOT NULL,
            message TEXT NOT NULL, detail TEXT NOT NULL, transient INTEGER NOT NULL,
            count INTEGER NOT NULL, opened_at {real} NOT NULL, updated_at {real} NOT NULL,
            acked_by TEXT, acked_at {real}, ack_note TEXT, cleared_at {real},
            closed_at {real}, closed_by TEXT)""",
        # de-duplication: one alert per condition that is not closed, whoever raises it
        """CREATE UNIQUE INDEX alerts_live ON alerts (site, table_id, kind, subject)
           WHERE state <> 'closed'""",
        "CREATE INDEX alerts_table ON alerts (site, table_id, state)",
        f"""CREATE TABLE alert_audit (
            id {pk}, alert_id {bigint} NOT NULL, at {real} NOT NULL, actor TEXT NOT NULL,
            action TEXT NOT NULL, state TEXT NOT NULL, note TEXT,
            pending INTEGER NOT NULL, claimed_by TEXT, claimed_at {real},
            published_at {real})""",
        "CREATE INDEX alert_audit_alert ON alert_audit (alert_id, id)",
        "CREATE INDEX alert_audit_at ON alert_audit (at)",
        "CREATE INDEX alert_audit_pending ON alert_audit (id) WHERE pending = 1",
    ]


def schema_v2(pk: str, real: str) -> list[str]:
    """Version 2: the web page's sessions and the sign-in audit. A session's key is the hash of
    its id; ``user_name`` (``user`` is a reserved word in PostgreSQL)."""
    return [
        f"""CREATE TABLE web_sessions (
            id_hash TEXT PRIMARY KEY, user_name TEXT NOT NULL, password_mark TEXT NOT NULL,
            created_at {real} NOT NULL, last_seen {real} NOT NULL, ended_at {real},
            end_reason TEXT, client TEXT NOT NULL, pit TEXT NOT NULL)""",
        "CREATE INDEX web_sessions_live ON web_sessions (user_name) WHERE ended_at IS NULL",
        "CREATE INDEX web_sessions_ended ON web_sessions (ended_at)",
        f"""CREATE TABLE sign_in_audit (
            id {pk}, at {real} NOT NULL, user_name TEXT NOT NULL, client TEXT NOT NULL,
            action TEXT NOT NULL, reason TEXT, pit TEXT NOT NULL)""",
        "CREATE INDEX sign_in_audit_at ON sign_in_audit (at)",
        "CREATE INDEX sign_in_audit_user ON sign_in_audit (user_name, id)",
    ]


_SESSION_COLUMNS = ("id_hash, user_name, password_mark, created_at, last_seen, ended_at, "
                    "end_reason, client, pit")
_SIGN_IN_COLUMNS = "id, at, user_name, client, action, reason, pit"


def _session(row: Row) -> WebSession:
    return WebSession(id_hash=row[0], user=row[1], password_mark=row[2],
                      created_at=float(row[3]), last_seen=float(row[4]),
                      ended_at=None if row[5] is None else float(row[5]), end_reason=row[6],
                      client=row[7], pit=row[8])


def _sign_in(row: Row) -> SignInEntry:
    return SignInEntry(id=int(row[0]), at=float(row[1]), user=row[2], client=row[3],
                       action=row[4], reason=row[5], pit=row[6])


def _message(row: Row) -> StoredMessage:
    return StoredMessage(id=int(row[0]), site=row[1], table=row[2], stream=row[3],
                         table_seq=row[4], kind=row[5], round=row[6],
                         received_at=float(row[7]), payload=json.loads(row[8]))


def _alert(row: Row) -> Alert:
    return Alert(
        id=int(row[0]), site=row[1], table=row[2], kind=row[3], subject=row[4],
        severity=row[5], state=row[6], message=row[7], detail=json.loads(row[8]),
        transient=bool(row[9]), count=int(row[10]), opened_at=float(row[11]),
        updated_at=float(row[12]), acked_by=row[13], acked_at=row[14], ack_note=row[15],
        cleared_at=row[16], closed_at=row[17], closed_by=row[18])


def _audit(row: Row) -> AuditEntry:
    return AuditEntry(id=int(row[0]), alert_id=int(row[1]), at=float(row[2]), actor=row[3],
                      action=row[4], state=row[5], note=row[6])


def _keepable(text: str) -> str:
    """``text`` as every store keeps it: U+0000 (PostgreSQL's TEXT refuses it) and lone
    surrogates (UTF-8 cannot carry them) become U+FFFD. The malformed row must never fail."""
    text = text.replace("\x00", "\ufffd")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def _in_table_order(arrived: list[StoredMessage]) -> list[StoredMessage]:
    """Messages in arrival order with the ones that arrived late (a number below one of its
    stream already seen: fetched from the table's journal) moved back to where the table's
    time (``ts``) puts them. The others keep their arrival order, which is the table's."""
    out: list[StoredMessage] = []
    high: dict[str, int] = {}
    for m in arrived:
        seq = m.table_seq
        if seq is not None and seq < high.get(m.stream, -1):
            at = _table_time(m)
            where = next((i for i, o in enumerate(out) if _table_time(o) > at), len(out))
            out.insert(where, m)
            continue
        if seq is not None:
            high[m.stream] = seq
        out.append(m)
    return out


def _table_time(m: StoredMessage) -> float:
    """When the table says a message was made (its ``ts``), else when it was received."""
    ts = m.payload.get("ts")
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return m.received_at


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


#: Where an outcome's round ends in the event stream (recall): the highest event number
#: recorded before it, in the daemon's journal order. ``table_seq IS NOT NULL`` lets both
#: databases answer from the partial index ``messages_seq`` (one index probe, not a scan of
#: the table's events).
_EVENT_MARK = ("(SELECT MAX(table_seq) FROM messages WHERE site = ? AND table_id = ? AND "
               "topic = 'event' AND table_seq IS NOT NULL)")
_INSERT_MESSAGE = (
    "INSERT INTO messages (site, table_id, topic, table_seq, digest, kind, round, event_mark, "
    "received_at, recorded_by, payload) VALUES (?, ?, ?, ?, ?, ?, ?, {mark}, ?, ?, ?) "
    "ON CONFLICT DO NOTHING RETURNING id")
INSERT_EVENT_MARKED = _INSERT_MESSAGE.format(mark=_EVENT_MARK)
INSERT_UNMARKED = _INSERT_MESSAGE.format(mark="NULL")
STORED_MESSAGE = ("SELECT id, digest FROM messages WHERE site = ? AND table_id = ? AND "
                  "topic = ? AND table_seq = ?")


def insert_message(m: Message, recorded_by: str) -> tuple[str, list[Any]]:
    """The INSERT of one message (``RETURNING id``; nothing returned if its number, or for the
    unnumbered journal failure its content, is recorded already)."""
    params: list[Any] = [m.site, m.table, m.stream, m.table_seq, m.digest, m.kind, m.round]
    if m.stream == "outcome":
        params += [m.site, m.table, m.received_at, recorded_by, m.text]
        return INSERT_EVENT_MARKED, params
    params += [m.received_at, recorded_by, m.text]
    return INSERT_UNMARKED, params


def stored_message(m: Message) -> tuple[str, list[Any]]:
    """What is recorded under a message's number (``id``, ``digest``)."""
    return STORED_MESSAGE, [m.site, m.table, m.stream, m.table_seq]


class SqlStore(Store):
    """The store's logic over a :class:`Tx`; subclasses connect and run transactions."""

    #: ``FOR UPDATE`` where the database locks rows (PostgreSQL); SQLite serialises writers.
    for_update = ""

    @abc.abstractmethod
    def transaction(self, write: bool = True) -> AbstractAsyncContextManager[Tx]: ...

    async def _run(self, name: str, body: Callable[[Tx], Awaitable[R]],
                   write: bool = True) -> R:
        started = time.monotonic()
        try:
            async with asyncio.timeout(T_STORE), self.transaction(write) as tx:
                result = await body(tx)
        except TimeoutError:
            raise StoreError(f"{self.description}: {name} took longer than {T_STORE:g} s"
                             ) from None
        finally:
            if self.observe is not None:
                self.observe(name, time.monotonic() - started)
        return result

    # -- migrations ---------------------------------------------------------------------------

    def migrations(self) -> list[list[str]]:
        """Statement lists, one per schema version (index 0 is version 1)."""
        raise NotImplementedError

    async def _migrate(self, tx: Tx) -> None:
        await tx.execute("CREATE TABLE IF NOT EXISTS pit_schema (version INTEGER NOT NULL)")
        row = await tx.fetchone("SELECT MAX(version) FROM pit_schema")
        current = int(row[0]) if row is not None and row[0] is not None else 0
        steps = self.migrations()
        if current > len(steps):
            raise StoreError(f"{self.description}: schema version {current} is newer than "
                             f"this pit knows ({len(steps)}); upgrade tabled")
        for version in range(current + 1, len(steps) + 1):
            for statement in steps[version - 1]:
                await tx.execute(statement)
            await tx.execute("INSERT INTO pit_schema (version) VALUES (?)", (version,))

    # -- messages -----------------------------------------------------------------------------

    async def record(self, message: Message, recorded_by: str) -> Recorded:
        async def body(tx: Tx) -> Recorded:
            return await self._record(tx, message, recorded_by)

        return await self._run("record", body)

    async def record_many(self, messages: Sequence[Message],
                          recorded_by: str) -> list[Recorded]:
        """Record each message in order, in one transaction (what :meth:`record` does for
        one): the pit's pipeline records what arrived together in one commit."""
        if not messages:
            return []

        async def body(tx: Tx) -> list[Recorded]:
            return [await self._record(tx, m, recorded_by) for m in messages]

        return await self._run("record_batch", body)

    async def _record(self, tx: Tx, message: Message, recorded_by: str) -> Recorded:
        sql, params = insert_message(message, recorded_by)
        row = await tx.fetchone(sql, params)
        if row is not None:
            return Recorded("new", int(row[0]))
        if message.table_seq is None:
            return Recorded("duplicate", None)
        sql, params = stored_message(message)
        return self._known(message, await tx.fetchone(sql, params))

    def _known(self, message: Message, stored: Row | None) -> Recorded:
        """A message whose insert did nothing: the same bytes (duplicate) or other ones
        (conflict) under its number."""
        if stored is None:  # cannot happen: the conflict was on this key
            raise StoreError(f"{self.description}: insert refused without a stored row")
        return Recorded("duplicate" if stored[1] == message.digest else "conflict",
                        int(stored[0]))

    async def record_malformed(self, topic: str, reason: str, payload: bytes,
                               received_at: float, recorded_by: str) -> None:
        async def body(tx: Tx) -> None:
            await tx.execute(
                "INSERT INTO malformed (topic, reason, received_at, recorded_by, payload) "
                "VALUES (?, ?, ?, ?, ?)",
                (_keepable(topic[:1024]), _keepable(reason[:1024]), received_at, recorded_by,
                 _keepable(payload[:65536].decode("utf-8", errors="replace"))))

        await self._run("record_malformed", body)

    async def malformed_count(self) -> int:
        async def body(tx: Tx) -> int:
            row = await tx.fetchone("SELECT COUNT(*) FROM malformed")
            return int(row[0]) if row else 0

        return await self._run("malformed_count", body, write=False)

    async def last_message_id(self) -> int:
        async def body(tx: Tx) -> int:
            row = await tx.fetchone("SELECT MAX(id) FROM messages")
            return int(row[0]) if row is not None and row[0] is not None else 0

        return await self._run("last_message_id", body, write=False)

    async def recorded_by_others(self, after_id: int, recent: float, me: str,
                                 limit: int = 1000) -> list[StoredMessage]:
        async def body(tx: Tx) -> list[StoredMessage]:
            rows = await tx.fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE (id > ? OR received_at >= ?) "
                "AND recorded_by <> ? AND (topic = 'outcome' OR (topic = 'event' AND "
                "kind = 'shoe_start')) ORDER BY id LIMIT ?",
                (after_id, time.time() - recent, me, limit))
            return [_message(r) for r in rows]

        return await self._run("recorded_by_others", body, write=False)

    async def missing(self, site: str, table: str, stream: str, first: int,
                      last: int) -> list[int]:
        async def body(tx: Tx) -> list[int]:
            rows = await tx.fetchall(
                "SELECT table_seq FROM messages WHERE site = ? AND table_id = ? AND topic = ? "
                "AND table_seq BETWEEN ? AND ?", (site, table, stream, first, last))
            have = {int(r[0]) for r in rows}
            return [n for n in range(first, last + 1) if n not in have]

        return await self._run("missing", body, write=False)

    async def holes(self, site: str, table: str, stream: str, after: int = -1,
                    limit: int = 10_000) -> Holdings:
        """One pass over the stream's numbers above ``after`` in the index ``messages_seq``,
        each compared with the one before it (``LAG``; the one before the first is ``after``):
        a step of more than one is a hole. Nothing is enumerated here, however long the
        stream."""
        where = "site = ? AND table_id = ? AND topic = ? AND table_seq IS NOT NULL"

        async def body(tx: Tx) -> Holdings:
            rows = await tx.fetchall(
                "SELECT prev + 1, table_seq - 1 FROM (SELECT table_seq, "
                "LAG(table_seq, 1, CAST(? AS BIGINT)) OVER (ORDER BY table_seq) AS prev "
                f"FROM messages WHERE {where} AND "
                "table_seq > ?) AS numbered WHERE table_seq > prev + 1 ORDER BY table_seq "
                "LIMIT ?", (after, site, table, stream, after, limit))
            top = await tx.fetchone(
                f"SELECT MAX(table_seq), (SELECT received_at FROM messages WHERE {where} "
                f"ORDER BY table_seq LIMIT 1) FROM messages WHERE {where}",
                (site, table, stream, site, table, stream))
            high = int(top[0]) if top is not None and top[0] is not None else -1
            low_at = float(top[1]) if top is not None and top[1] is not None else None
            return Holdings(high, [(int(a), int(b)) for a, b in rows], low_at)

        return await self._run("holes", body, write=False)

    async def high_water(self) -> dict[tuple[str, str, str], int]:
        async def body(tx: Tx) -> dict[tuple[str, str, str], int]:
            marks = ", ".join(f"'{s}'" for s in DURABLE)
            rows = await tx.fetchall(
                "SELECT site, table_id, topic, MAX(table_seq) FROM messages "
                f"WHERE topic IN ({marks}) AND table_seq IS NOT NULL "
                "GROUP BY site, table_id, topic")
            return {(r[0], r[1], r[2]): int(r[3]) for r in rows}

        return await self._run("high_water", body, write=False)

    async def tables(self) -> list[tuple[str, str]]:
        async def body(tx: Tx) -> list[tuple[str, str]]:
            rows = await tx.fetchall(
                "SELECT DISTINCT site, table_id FROM messages ORDER BY site, table_id")
            return [(r[0], r[1]) for r in rows]

        return await self._run("tables", body, write=False)

    async def messages(self, site: str, table: str, stream: str | None = None, *,
                       limit: int = 100) -> list[StoredMessage]:
        """The table's latest messages (of one stream), oldest first."""

        async def body(tx: Tx) -> list[StoredMessage]:
            where, params = "site = ? AND table_id = ?", [site, table]
            if stream is not None:
                where += " AND topic = ?"
                params.append(stream)
            rows = await tx.fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY id DESC "
                "LIMIT ?", [*params, limit])
            return [_message(r) for r in reversed(rows)]

        return await self._run("messages", body, write=False)

    async def recent_outcomes(self, site: str, table: str,
                              limit: int = 10) -> list[StoredMessage]:
        """The table's last outcomes in the table's order (``table_seq``), oldest first."""

        async def body(tx: Tx) -> list[StoredMessage]:
            rows = await tx.fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'outcome' ORDER BY table_seq DESC LIMIT ?", (site, table, limit))
            return [_message(r) for r in reversed(rows)]

        return await self._run("recent_outcomes", body, write=False)

    async def rounds_since(self, site: str, table: str, since: float) -> int:
        async def body(tx: Tx) -> int:
            row = await tx.fetchone(
                "SELECT COUNT(*) FROM messages WHERE site = ? AND table_id = ? AND "
                "topic = 'outcome' AND received_at >= ?", (site, table, since))
            return int(row[0]) if row else 0

        return await self._run("rounds_since", body, write=False)

    async def recall(self, site: str, table: str, last: int = 10) -> list[RecalledRound]:
        """The table's last ``last`` rounds (GLI-11 recall), each with every event published
        for it: rounds are delimited as in the daemon's journal recall, the events between
        consecutive outcomes, by the table's own event numbering. A round in progress (events
        after the last outcome) is not shown."""

        async def body(tx: Tx) -> list[RecalledRound]:
            outs = await tx.fetchall(
                "SELECT table_seq, round, event_mark, received_at, payload FROM messages "
                "WHERE site = ? AND table_id = ? AND topic = 'outcome' "
                "ORDER BY table_seq DESC LIMIT ?", (site, table, last))
            if not outs:
                return []
            outs.reverse()
            before = await tx.fetchone(
                "SELECT event_mark FROM messages WHERE site = ? AND table_id = ? AND "
                "topic = 'outcome' AND table_seq < ? ORDER BY table_seq DESC LIMIT 1",
                (site, table, outs[0][0]))
            low = int(before[0]) if before is not None and before[0] is not None else -1
            high = max((int(o[2]) for o in outs if o[2] is not None), default=-1)
            events = await tx.fetchall(
                "SELECT table_seq, payload FROM messages WHERE site = ? AND table_id = ? AND "
                "topic = 'event' AND table_seq > ? AND table_seq <= ? ORDER BY table_seq",
                (site, table, low, high))
            rounds = []
            index = 0
            for _, round_no, mark, received_at, payload in outs:
                end = low if mark is None else int(mark)
                mine = []
                while index < len(events) and int(events[index][0]) <= end:
                    mine.append(json.loads(events[index][1]))
                    index += 1
                low = max(low, end)
                rounds.append(RecalledRound(int(round_no), json.loads(payload), mine,
                                            float(received_at)))
            return rounds

        return await self._run("recall", body, write=False)

    async def rebuild_records(self, site: str, table: str,
                              limit: int = 5000) -> list[StoredMessage]:
        """What the live model needs after a restart, in the table's order: the latest birth
        record, the latest status, each device's latest status, and the last ``limit``
        outcomes and ``shoe_start`` events (a new shoe starts the baccarat roads). Messages
        fetched from a table's journal (pit.reconcile) arrive after newer ones: they are put
        back where the table's time puts them."""

        async def body(tx: Tx) -> list[StoredMessage]:
            key = (site, table)
            rows: dict[int, Row] = {}
            for sql in (
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'status' AND kind = 'online' ORDER BY id DESC LIMIT 1",
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'status' ORDER BY id DESC LIMIT 1",
                f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE site = ? AND table_id = ? "
                "AND substr(topic, 1, 7) = 'device/' AND id = (SELECT MAX(id) FROM messages n "
                "WHERE n.site = m.site AND n.table_id = m.table_id AND n.topic = m.topic)",
            ):
                for row in await tx.fetchall(sql, key):
                    rows[int(row[0])] = row
            for row in await tx.fetchall(
                    f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                    "AND (topic = 'outcome' OR (topic = 'event' AND kind = 'shoe_start')) "
                    "ORDER BY id DESC LIMIT ?", (site, table, limit)):
                rows[int(row[0])] = row
            return _in_table_order([_message(rows[i]) for i in sorted(rows)])

        return await self._run("rebuild_records", body, write=False)

    # -- alerts -------------------------------------------------------------------------------

    async def _live(self, tx: Tx, site: str, table: str, kind: str,
                    subject: str) -> Alert | None:
        row = await tx.fetchone(
            f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE site = ? AND table_id = ? AND kind = ? "
            f"AND subject = ? AND state <> 'closed'{self.for_update}",
            (site, table, kind, subject))
        return _alert(row) if row is not None else None

    async def _by_id(self, tx: Tx, alert_id: int) -> Alert | None:
        row = await tx.fetchone(
            f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE id = ?{self.for_update}", (alert_id,))
        return _alert(row) if row is not None else None

    async def _audit(self, tx: Tx, alert_id: int, at: float, actor: str, action: str,
                     state: str, note: str | None, pending: bool) -> AuditEntry:
        row = await tx.fetchone(
            "INSERT INTO alert_audit (alert_id, at, actor, action, state, note, pending) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (alert_id, at, actor, action, state, note, 1 if pending else 0))
        assert row is not None
        return AuditEntry(int(row[0]), alert_id, at, actor, action, state, note)

    async def _set(self, tx: Tx, alert_id: int, **columns: Any) -> Alert:
        names = ", ".join(f"{k} = ?" for k in columns)
        await tx.execute(f"UPDATE alerts SET {names} WHERE id = ?",
                         [*columns.values(), alert_id])
        alert = await self._by_id(tx, alert_id)
        assert alert is not None
        return alert

    async def raise_alert(self, spec: AlertSpec, actor: str, now: float,
                          publish: bool = True) -> AlertChange | None:
        """Open an alert for the condition, or count a repeat of one not closed (``None``: no
        change anyone needs to hear of); a cleared one that comes back is open again."""

        async def body(tx: Tx) -> AlertChange | None:
            for _ in range(2):
                live = await self._live(tx, spec.site, spec.table, spec.kind, spec.subject)
                if live is not None:
                    if live.state != "cleared":
                        await tx.execute(
                            "UPDATE alerts SET count = count + 1 WHERE id = ?", (live.id,))
                        return None
                    alert = await self._set(
                        tx, live.id, state="open", cleared_at=None, updated_at=now,
                        count=live.count + 1, message=spec.message, detail=_dumps(spec.detail))
                    entry = await self._audit(tx, live.id, now, actor, "reopened", "open",
                                              spec.message, publish)
                    return AlertChange(alert, entry)
                row = await tx.fetchone(
                    "INSERT INTO alerts (site, table_id, kind, subject, severity, state, "
                    "message, detail, transient, count, opened_at, updated_at) VALUES "
                    "(?, ?, ?, ?, ?, 'open', ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING "
                    "RETURNING id",
                    (spec.site, spec.table, spec.kind, spec.subject, spec.severity,
                     spec.message, _dumps(spec.detail), 1 if spec.transient else 0, now, now))
                if row is None:
                    continue  # another pit server opened it a moment ago: count it there
                created = await self._by_id(tx, int(row[0]))
                assert created is not None
                entry = await self._audit(tx, created.id, now, actor, "raised", "open",
                                          spec.message, publish)
                return AlertChange(created, entry)
            return None

        return await self._run("raise_alert", body)

    async def clear_alert(self, site: str, table: str, kind: str, subject: str, actor: str,
                          now: float, note: str | None = None,
                          publish: bool = True) -> AlertChange | None:
        """The condition is gone: an open alert is cleared (it still waits for an
        acknowledgement), an acknowledged one is closed."""

        async def body(tx: Tx) -> AlertChange | None:
            live = await self._live(tx, site, table, kind, subject)
            if live is None or live.state == "cleared":
                return None
            if live.state == "acknowledged":
                alert = await self._set(tx, live.id, state="closed", cleared_at=now,
                                        closed_at=now, closed_by=actor, updated_at=now)
            else:
                alert = await self._set(tx, live.id, state="cleared", cleared_at=now,
                                        updated_at=now)
            entry = await self._audit(tx, live.id, now, actor, "cleared", alert.state, note,
                                      publish)
            return AlertChange(alert, entry)

        return await self._run("clear_alert", body)

    async def update_alert(self, alert_id: int, detail: dict[str, Any], message: str,
                           actor: str, now: float, note: str,
                           publish: bool = True) -> AlertChange | None:
        async def body(tx: Tx) -> AlertChange | None:
            alert = await self._by_id(tx, alert_id)
            if alert is None or alert.state == "closed":
                return None
            alert = await self._set(tx, alert_id, detail=_dumps(detail), message=message,
                                    updated_at=now)
            entry = await self._audit(tx, alert_id, now, actor, "updated", alert.state, note,
                                      publish)
            return AlertChange(alert, entry)

        return await self._run("update_alert", body)

    async def acknowledge(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange:
        """``open → acknowledged``; a cleared alert (or a transient one: nothing to clear)
        is closed by its acknowledgement. Raises AlertActionError otherwise."""

        async def body(tx: Tx) -> AlertChange:
            alert = await self._by_id(tx, alert_id)
            if alert is None:
                raise AlertActionError(f"no alert {alert_id}")
            if alert.state == "closed":
                raise AlertActionError(f"alert {alert_id} is closed")
            if alert.state == "acknowledged":
                raise AlertActionError(f"alert {alert_id} was acknowledged by "
                                       f"{alert.acked_by}")
            columns: dict[str, Any] = {"acked_by": actor, "acked_at": now, "ack_note": note,
                                       "updated_at": now, "state": "acknowledged"}
            if alert.state == "cleared" or alert.transient:
                columns.update(state="closed", closed_at=now, closed_by=actor,
                               cleared_at=alert.cleared_at or now)
            alert = await self._set(tx, alert_id, **columns)
            entry = await self._audit(tx, alert_id, now, actor, "acknowledged", alert.state,
                                      note, publish)
            return AlertChange(alert, entry)

        return await self._run("acknowledge", body)

    async def close_alert(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange:
        """A supervisor closes an alert in any state but closed."""

        async def body(tx: Tx) -> AlertChange:
            alert = await self._by_id(tx, alert_id)
            if alert is None:
                raise AlertActionError(f"no alert {alert_id}")
            if alert.state == "closed":
                raise AlertActionError(f"alert {alert_id} is closed")
            alert = await self._set(tx, alert_id, state="closed", closed_at=now,
                                    closed_by=actor, updated_at=now)
            entry = await self._audit(tx, alert_id, now, actor, "closed", "closed", note,
                                      publish)
            return AlertChange(alert, entry)

        return await self._run("close_alert", body)

    async def audit_refusal(self, alert_id: int, actor: str, action: str, note: str,
                            now: float) -> AuditEntry | None:
        """An action someone tried and was not allowed: in the audit trail, not published."""

        async def body(tx: Tx) -> AuditEntry | None:
            alert = await self._by_id(tx, alert_id)
            if alert is None:
                return None
            return await self._audit(tx, alert_id, now, actor, f"refused:{action}",
                                     alert.state, note, False)

        return await self._run("audit_refusal", body)

    async def alert(self, alert_id: int) -> Alert | None:
        async def body(tx: Tx) -> Alert | None:
            row = await tx.fetchone(f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE id = ?",
                                    (alert_id,))
            return _alert(row) if row is not None else None

        return await self._run("alert", body, write=False)

    async def alerts(self, *, site: str | None = None, table: str | None = None,
                     states: Sequence[str] = LIVE_STATES, kind: str | None = None,
                     limit: int = 1000) -> list[Alert]:
        """Alerts in ``states``, newest first."""

        async def body(tx: Tx) -> list[Alert]:
            where = [f"state IN ({', '.join('?' for _ in states)})"]
            params: list[Any] = list(states)
            for column, value in (("site", site), ("table_id", table), ("kind", kind)):
                if value is not None:
                    where.append(f"{column} = ?")
                    params.append(value)
            rows = await tx.fetchall(
                f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE {' AND '.join(where)} "
                "ORDER BY id DESC LIMIT ?", [*params, limit])
            return [_alert(r) for r in rows]

        return await self._run("alerts", body, write=False)

    async def audit(self, alert_id: int | None = None, *,
                    limit: int = 200) -> list[AuditEntry]:
        async def body(tx: Tx) -> list[AuditEntry]:
            if alert_id is not None:
                rows = await tx.fetchall(
                    f"SELECT {_AUDIT_COLUMNS} FROM alert_audit WHERE alert_id = ? "
                    "ORDER BY id LIMIT ?", (alert_id, limit))
                return [_audit(r) for r in rows]
            rows = await tx.fetchall(
                f"SELECT {_AUDIT_COLUMNS} FROM alert_audit ORDER BY id DESC LIMIT ?", (limit,))
            return [_audit(r) for r in rows]

        return await self._run("audit", body, write=False)

    async def audit_after(self, after_id: int, recent: float = 0.0,
                          limit: int = 500) -> list[AuditEntry]:
        async def body(tx: Tx) -> list[AuditEntry]:
            rows = await tx.fetchall(
                f"SELECT {_AUDIT_COLUMNS} FROM alert_audit WHERE id > ? OR at >= ? "
                "ORDER BY id LIMIT ?", (after_id, time.time() - recent if recent else 1e18,
                                        limit))
            return [_audit(r) for r in rows]

        return await self._run("audit_after", body, write=False)

    # -- the outbox of …/pit/alert ----------------------------------------------------------

    async def pending_publications(self, limit: int = 100) -> list[tuple[AuditEntry, Alert]]:
        async def body(tx: Tx) -> list[tuple[AuditEntry, Alert]]:
            columns = ", ".join(f"a.{c.strip()}" for c in _ALERT_COLUMNS.split(","))
            audit = ", ".join(f"u.{c.strip()}" for c in _AUDIT_COLUMNS.split(","))
            rows = await tx.fetchall(
                f"SELECT {audit}, {columns} FROM alert_audit u JOIN alerts a "
                "ON a.id = u.alert_id WHERE u.pending = 1 AND (u.claimed_at IS NULL OR "
                "u.claimed_at < ?) ORDER BY u.id LIMIT ?", (time.time() - T_CLAIM, limit))
            return [(_audit(r[:7]), _alert(r[7:])) for r in rows]

        return await self._run("pending_publications", body, write=False)

    async def claim_publication(self, audit_id: int, by: str, now: float) -> bool:
        async def body(tx: Tx) -> bool:
            changed = await tx.execute(
                "UPDATE alert_audit SET claimed_by = ?, claimed_at = ? WHERE id = ? AND "
                "pending = 1 AND (claimed_at IS NULL OR claimed_at < ?)",
                (by, now, audit_id, now - T_CLAIM))
            return changed == 1

        return await self._run("claim_publication", body)

    async def mark_published(self, audit_id: int, now: float) -> None:
        async def body(tx: Tx) -> None:
            await tx.execute("UPDATE alert_audit SET pending = 0, published_at = ? WHERE id = ?",
                             (now, audit_id))

        await self._run("mark_published", body)

    async def release_publication(self, audit_id: int) -> None:
        async def body(tx: Tx) -> None:
            await tx.execute("UPDATE alert_audit SET claimed_by = NULL, claimed_at = NULL "
                             "WHERE id = ? AND pending = 1", (audit_id,))

        await self._run("release_publication", body)

    # -- retention ----------------------------------------------------------------------------

    async def purge(self, messages_before: float, alerts_before: float) -> dict[str, int]:
        """Delete messages and malformed input received before ``messages_before``, and closed
        alerts (with their audit trail) closed before ``alerts_before``. Alerts not closed are
        kept whatever their age."""

        async def body(tx: Tx) -> dict[str, int]:
            gone = {
                "messages": await tx.execute(
                    "DELETE FROM messages WHERE received_at < ?", (messages_before,)),
                "malformed": await tx.execute(
                    "DELETE FROM malformed WHERE received_at < ?", (messages_before,)),
                "audit": await tx.execute(
                    "DELETE FROM alert_audit WHERE alert_id IN (SELECT id FROM alerts WHERE "
                    "state = 'closed' AND closed_at < ?)", (alerts_before,)),
            }
            gone["alerts"] = await tx.execute(
                "DELETE FROM alerts WHERE state = 'closed' AND closed_at < ?", (alerts_before,))
            return gone

        return await self._run("purge", body)

    # -- web sessions and the sign-in audit (schema version 2) --------------------------------

    async def _sign_in_line(self, tx: Tx, at: float, user: str, client: str, action: str,
                            reason: str | None, pit: str) -> SignInEntry:
        user, client = user[:128], client[:128]
        row = await tx.fetchone(
            "INSERT INTO sign_in_audit (at, user_name, client, action, reason, pit) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING id", (at, user, client, action, reason, pit))
        assert row is not None
        return SignInEntry(int(row[0]), at, user, client, action, reason, pit)

    async def start_session(self, session: WebSession) -> SignInEntry:
        async def body(tx: Tx) -> SignInEntry:
            s = session
            await tx.execute(
                f"INSERT INTO web_sessions ({_SESSION_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                (s.id_hash, s.user, s.password_mark, s.created_at, s.last_seen,
                 s.client[:128], s.pit))
            return await self._sign_in_line(tx, s.created_at, s.user, s.client, "signed_in",
                                            None, s.pit)

        return await self._run("start_session", body)

    async def web_session(self, id_hash: str) -> WebSession | None:
        async def body(tx: Tx) -> WebSession | None:
            row = await tx.fetchone(
                f"SELECT {_SESSION_COLUMNS} FROM web_sessions WHERE id_hash = ?", (id_hash,))
            return None if row is None else _session(row)

        return await self._run("web_session", body, write=False)

    async def touch_session(self, id_hash: str, now: float) -> bool:
        async def body(tx: Tx) -> bool:
            # never backwards (pit servers' clocks differ a little)
            return await tx.fetchone(
                "UPDATE web_sessions SET last_seen = CASE WHEN last_seen < ? THEN ? ELSE "
                "last_seen END WHERE id_hash = ? AND ended_at IS NULL RETURNING 1",
                (now, now, id_hash)) is not None

        return await self._run("touch_session", body)

    async def end_session(self, id_hash: str, reason: str, now: float, *,
                          client: str | None = None, pit: str = "") -> SignInEntry | None:
        async def body(tx: Tx) -> SignInEntry | None:
            row = await tx.fetchone(
                "UPDATE web_sessions SET ended_at = ?, end_reason = ? WHERE id_hash = ? AND "
                "ended_at IS NULL RETURNING user_name, client", (now, reason, id_hash))
            if row is None:
                return None
            action = "signed_out" if reason == "signed_out" else "session_ended"
            return await self._sign_in_line(tx, now, row[0], client or row[1], action,
                                            None if action == "signed_out" else reason, pit)

        return await self._run("end_session", body)

    async def live_sessions(self, limit: int = 10_000) -> list[WebSession]:
        async def body(tx: Tx) -> list[WebSession]:
            rows = await tx.fetchall(
                f"SELECT {_SESSION_COLUMNS} FROM web_sessions WHERE ended_at IS NULL "
                "ORDER BY created_at LIMIT ?", (limit,))
            return [_session(r) for r in rows]

        return await self._run("live_sessions", body, write=False)

    async def record_sign_in(self, at: float, user: str, client: str, action: str,
                             reason: str | None, pit: str) -> SignInEntry:
        async def body(tx: Tx) -> SignInEntry:
            return await self._sign_in_line(tx, at, user, client, action, reason, pit)

        return await self._run("record_sign_in", body)

    async def sign_in_audit(self, *, user: str | None = None,
                            limit: int = 100) -> list[SignInEntry]:
        async def body(tx: Tx) -> list[SignInEntry]:
            if user is None:
                rows = await tx.fetchall(
                    f"SELECT {_SIGN_IN_COLUMNS} FROM sign_in_audit ORDER BY id DESC LIMIT ?",
                    (limit,))
            else:
                rows = await tx.fetchall(
                    f"SELECT {_SIGN_IN_COLUMNS} FROM sign_in_audit WHERE user_name = ? "
                    "ORDER BY id DESC LIMIT ?", (user, limit))
            return [_sign_in(r) for r in rows]

        return await self._run("sign_in_audit", body, write=False)

    async def purge_sign_in(self, sessions_before: float,
                            audit_before: float) -> dict[str, int]:
        async def body(tx: Tx) -> dict[str, int]:
            return {
                "sessions": await tx.execute(
                    "DELETE FROM web_sessions WHERE ended_at < ?", (sessions_before,)),
                "sign_in_audit": await tx.execute(
                    "DELETE FROM sign_in_audit WHERE at < ?", (audit_before,)),
            }

        return await self._run("purge_sign_in", body)
