"""The pit's SQL, once: the schema, the statements and rows' conversions, and the base every
part of the SQL store runs its transactions on (``?`` placeholders, portable types; each
database's few different words are given by :mod:`tabled.pit.store_sqlite` and
:mod:`tabled.pit.store_postgres`).
"""

from __future__ import annotations

import abc
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, TypeVar

from tabled.pit.messages import Message
from tabled.pit.store import (
    T_STORE,
    Alert,
    AuditEntry,
    Row,
    SignInEntry,
    StoredMessage,
    StoreError,
    Tx,
    WebSession,
)

R = TypeVar("R")


MESSAGE_COLUMNS = "id, site, table_id, topic, table_seq, kind, round, received_at, payload"
ALERT_COLUMNS = ("id, site, table_id, kind, subject, severity, state, message, detail, "
                  "transient, count, opened_at, updated_at, acked_by, acked_at, ack_note, "
                  "cleared_at, closed_at, closed_by, incident, escalation, escalated_at, "
                  "seen_at")
AUDIT_COLUMNS = "id, alert_id, at, actor, action, state, note"


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


def schema_v3(real: str, bigint: str) -> list[str]:
    """Version 3: incidents and escalation. ``incident`` is the id of the incident's first
    alert (each alert recorded before is an incident of its own); ``escalation`` the level an
    alert not acknowledged was escalated to; ``seen_at`` when its condition was last reported."""
    return [
        f"ALTER TABLE alerts ADD COLUMN incident {bigint}",
        "UPDATE alerts SET incident = id",
        "ALTER TABLE alerts ADD COLUMN escalation INTEGER NOT NULL DEFAULT 0",
        f"ALTER TABLE alerts ADD COLUMN escalated_at {real}",
        f"ALTER TABLE alerts ADD COLUMN seen_at {real}",
        "UPDATE alerts SET seen_at = updated_at",
        "CREATE INDEX alerts_incident ON alerts (incident)",
        "CREATE INDEX alerts_updated ON alerts (updated_at)",
    ]


SESSION_COLUMNS = ("id_hash, user_name, password_mark, created_at, last_seen, ended_at, "
                    "end_reason, client, pit")
SIGN_IN_COLUMNS = "id, at, user_name, client, action, reason, pit"


def session_row(row: Row) -> WebSession:
    return WebSession(id_hash=row[0], user=row[1], password_mark=row[2],
                      created_at=float(row[3]), last_seen=float(row[4]),
                      ended_at=None if row[5] is None else float(row[5]), end_reason=row[6],
                      client=row[7], pit=row[8])


def sign_in_row(row: Row) -> SignInEntry:
    return SignInEntry(id=int(row[0]), at=float(row[1]), user=row[2], client=row[3],
                       action=row[4], reason=row[5], pit=row[6])


def message_row(row: Row) -> StoredMessage:
    return StoredMessage(id=int(row[0]), site=row[1], table=row[2], stream=row[3],
                         table_seq=row[4], kind=row[5], round=row[6],
                         received_at=float(row[7]), payload=json.loads(row[8]))


def alert_row(row: Row) -> Alert:
    return Alert(
        id=int(row[0]), site=row[1], table=row[2], kind=row[3], subject=row[4],
        severity=row[5], state=row[6], message=row[7], detail=json.loads(row[8]),
        transient=bool(row[9]), count=int(row[10]), opened_at=float(row[11]),
        updated_at=float(row[12]), acked_by=row[13], acked_at=row[14], ack_note=row[15],
        cleared_at=row[16], closed_at=row[17], closed_by=row[18],
        incident=int(row[19] or 0), escalation=int(row[20] or 0),
        escalated_at=None if row[21] is None else float(row[21]),
        seen_at=None if row[22] is None else float(row[22]))


def audit_row(row: Row) -> AuditEntry:
    return AuditEntry(id=int(row[0]), alert_id=int(row[1]), at=float(row[2]), actor=row[3],
                      action=row[4], state=row[5], note=row[6])


def keepable(text: str) -> str:
    """``text`` as every store keeps it: U+0000 (PostgreSQL's TEXT refuses it) and lone
    surrogates (UTF-8 cannot carry them) become U+FFFD. The malformed row must never fail."""
    text = text.replace("\x00", "\ufffd")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def in_table_order(arrived: list[StoredMessage]) -> list[StoredMessage]:
    """Messages in arrival order with the ones that arrived late (a number below one of its
    stream already seen: fetched from the table's journal) moved back to where the table's
    time (``ts``) puts them. The others keep their arrival order, which is the table's."""
    out: list[StoredMessage] = []
    high: dict[str, int] = {}
    for m in arrived:
        seq = m.table_seq
        if seq is not None and seq < high.get(m.stream, -1):
            at = table_time(m)
            where = next((i for i, o in enumerate(out) if table_time(o) > at), len(out))
            out.insert(where, m)
            continue
        if seq is not None:
            high[m.stream] = seq
        out.append(m)
    return out


def table_time(m: StoredMessage) -> float:
    """When the table says a message was made (its ``ts``), else when it was received."""
    ts = m.payload.get("ts")
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return m.received_at


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


#: Where an outcome's round ends in the event stream (recall): the highest event number
#: recorded before it, in the daemon's journal order. ``table_seq IS NOT NULL`` lets both
#: databases answer from the partial index ``messages_seq`` (one index probe, not a scan of
#: the table's events).
EVENT_MARK = ("(SELECT MAX(table_seq) FROM messages WHERE site = ? AND table_id = ? AND "
               "topic = 'event' AND table_seq IS NOT NULL)")
INSERT_MESSAGE = (
    "INSERT INTO messages (site, table_id, topic, table_seq, digest, kind, round, event_mark, "
    "received_at, recorded_by, payload) VALUES (?, ?, ?, ?, ?, ?, ?, {mark}, ?, ?, ?) "
    "ON CONFLICT DO NOTHING RETURNING id")
INSERT_EVENT_MARKED = INSERT_MESSAGE.format(mark=EVENT_MARK)
INSERT_UNMARKED = INSERT_MESSAGE.format(mark="NULL")
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


class SqlBase(abc.ABC):
    """What every part of the SQL store runs on: a :class:`Tx` per operation, with its timeout
    and its latency observed; subclasses connect and run transactions."""

    #: Called with (operation, seconds) after each operation (Prometheus' store latency).
    observe: Callable[[str, float], None] | None = None

    @property
    @abc.abstractmethod
    def description(self) -> str: ...

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
