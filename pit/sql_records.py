"""The SQL store's record of messages and malformed input
(:class:`tabled.pit.store.RecordStore`), and the history's paged queries over it (any round by
number or time, a segment of play such as a shoe, the faults that touched a round).

Owns these queries, written once for both databases over :class:`~tabled.pit.sql.SqlBase`'s
transactions; the connection and the few words that differ are :mod:`tabled.pit.store_sqlite`'s
and :mod:`tabled.pit.store_postgres`'s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import structlog

from tabled.pit.messages import DURABLE, Message
from tabled.pit.sql import (
    MESSAGE_COLUMNS,
    SqlBase,
    in_table_order,
    insert_message,
    keepable,
    message_row,
    stored_message,
)
from tabled.pit.store import (
    Holdings,
    RecalledRound,
    Recorded,
    RecordStore,
    RoundPage,
    RoundQuery,
    Row,
    Segment,
    StoredMessage,
    StoreError,
    Tx,
)

log = structlog.get_logger("tabled.pit.store")


class SqlRecords(SqlBase, RecordStore):
    """The record of messages and malformed input, in SQL."""

    #: whether :data:`HISTORY_INDEXES` were made on this store
    _history_indexed: bool = False

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
                (keepable(topic[:1024]), keepable(reason[:1024]), received_at, recorded_by,
                 keepable(payload[:65536].decode("utf-8", errors="replace"))))

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
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE (id > ? OR received_at >= ?) "
                "AND recorded_by <> ? AND (topic = 'outcome' OR (topic = 'event' AND "
                "kind = 'shoe_start')) ORDER BY id LIMIT ?",
                (after_id, time.time() - recent, me, limit))
            return [message_row(r) for r in rows]

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
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where} ORDER BY id DESC "
                "LIMIT ?", [*params, limit])
            return [message_row(r) for r in reversed(rows)]

        return await self._run("messages", body, write=False)

    async def recent_outcomes(self, site: str, table: str,
                              limit: int = 10) -> list[StoredMessage]:
        """The table's last outcomes in the table's order (``table_seq``), oldest first."""

        async def body(tx: Tx) -> list[StoredMessage]:
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'outcome' ORDER BY table_seq DESC LIMIT ?", (site, table, limit))
            return [message_row(r) for r in reversed(rows)]

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
                f"SELECT {ROUND_COLUMNS} FROM messages "
                "WHERE site = ? AND table_id = ? AND topic = 'outcome' "
                "ORDER BY table_seq DESC LIMIT ?", (site, table, last))
            outs.reverse()
            rounds, opened_at = await _with_events(tx, site, table, outs)
            return await _faults_of(tx, site, table, rounds, opened_at)

        return await self._run("recall", body, write=False)

    # -- history: any round, any segment (a shoe), paged -----------------------------------------

    async def _history_indexes(self) -> None:
        """The indexes the history's queries use, made once per store (idempotent: ``IF NOT
        EXISTS``; no schema version of their own). If they cannot be made, the queries work
        all the same, only slower, and the next query tries again."""
        if self._history_indexed:
            return

        async def body(tx: Tx) -> None:
            for statement in HISTORY_INDEXES:
                await tx.execute(statement)

        try:
            await self._run("history_indexes", body)
        except StoreError as exc:
            log.warning("history_indexes_not_made", store=self.description, error=str(exc))
            return
        self._history_indexed = True

    async def round_page(self, site: str, table: str, query: RoundQuery) -> RoundPage:
        await self._history_indexes()
        size = max(1, min(query.size, MAX_PAGE))
        where, params = _round_filter(site, table, query)

        async def body(tx: Tx) -> RoundPage:
            paged, paged_params = where, list(params)
            if query.after is not None:
                paged += " AND table_seq > ?"
                paged_params.append(query.after)
                order = "ASC"
            else:
                if query.before is not None:
                    paged += " AND table_seq < ?"
                    paged_params.append(query.before)
                elif query.round is not None:  # where the pages start: that round and older
                    paged += " AND round <= ?"
                    paged_params.append(query.round)
                order = "DESC"
            outs = await tx.fetchall(
                f"SELECT {ROUND_COLUMNS} FROM messages WHERE {paged} "
                f"ORDER BY table_seq {order} LIMIT ?", [*paged_params, size + 1])
            more = len(outs) > size
            outs = outs[:size]
            if order == "DESC":
                outs.reverse()
            if not outs:
                return RoundPage([], None, None)
            low_seq, high_seq = int(outs[0][0]), int(outs[-1][0])
            older = low_seq if (more and order == "DESC") or (
                order == "ASC" and await _exists(tx, where, params, "table_seq < ?",
                                                 low_seq)) else None
            newer = high_seq if (more and order == "ASC") or (
                order == "DESC" and await _exists(tx, where, params, "table_seq > ?",
                                                  high_seq)) else None
            rounds, opened_at = await _with_events(tx, site, table, outs)
            rounds = await _faults_of(tx, site, table, rounds, opened_at)
            return RoundPage(rounds[::-1], older, newer)

        return await self._run("round_page", body, write=False)

    async def segments(self, site: str, table: str, event_type: str, *,
                       before: int | None = None, since: float | None = None,
                       until: float | None = None, size: int = 20) -> list[Segment]:
        await self._history_indexes()
        where = SEGMENT_WHERE
        params: list[Any] = [site, table, event_type]
        for clause, value in (("table_seq < ?", before), ("received_at >= ?", since),
                              ("received_at <= ?", until)):
            if value is not None:
                where += f" AND {clause}"
                params.append(value)

        async def body(tx: Tx) -> list[Segment]:
            rows = await tx.fetchall(
                f"SELECT table_seq, received_at, payload FROM messages WHERE {where} "
                "ORDER BY table_seq DESC LIMIT ?", [*params, max(1, min(size, MAX_PAGE))])
            out = []
            for row in rows:
                counted = await tx.fetchone(
                    f"SELECT COUNT(*) FROM messages WHERE {SEGMENT_WHERE} AND table_seq <= ?",
                    (site, table, event_type, row[0]))
                number = int(counted[0]) if counted else 0
                out.append(await _segment(tx, site, table, event_type, number, row))
            return out

        return await self._run("segments", body, write=False)

    async def segment(self, site: str, table: str, event_type: str,
                      number: int) -> Segment | None:
        await self._history_indexes()
        if number < 1:
            return None

        async def body(tx: Tx) -> Segment | None:
            row = await tx.fetchone(
                f"SELECT table_seq, received_at, payload FROM messages WHERE {SEGMENT_WHERE} "
                "ORDER BY table_seq LIMIT 1 OFFSET ?", (site, table, event_type, number - 1))
            if row is None:
                return None
            return await _segment(tx, site, table, event_type, number, row)

        return await self._run("segment", body, write=False)

    async def segment_outcomes(self, site: str, table: str, segment: Segment,
                               limit: int = 2000) -> list[StoredMessage]:
        where, params = _in_segment(site, table, segment)

        async def body(tx: Tx) -> list[StoredMessage]:
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {where} "
                "ORDER BY table_seq LIMIT ?", [*params, limit])
            return [message_row(r) for r in rows]

        return await self._run("segment_outcomes", body, write=False)

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
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'status' AND kind = 'online' ORDER BY id DESC LIMIT 1",
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                "AND topic = 'status' ORDER BY id DESC LIMIT 1",
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE site = ? AND table_id = ? "
                "AND substr(topic, 1, 7) = 'device/' AND id = (SELECT MAX(id) FROM messages n "
                "WHERE n.site = m.site AND n.table_id = m.table_id AND n.topic = m.topic)",
            ):
                for row in await tx.fetchall(sql, key):
                    rows[int(row[0])] = row
            for row in await tx.fetchall(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE site = ? AND table_id = ? "
                    "AND (topic = 'outcome' OR (topic = 'event' AND kind = 'shoe_start')) "
                    "ORDER BY id DESC LIMIT ?", (site, table, limit)):
                rows[int(row[0])] = row
            return in_table_order([message_row(rows[i]) for i in sorted(rows)])

        return await self._run("rebuild_records", body, write=False)


# -- history's helpers ----------------------------------------------------------------------------

#: The most rounds or segments one history page holds.
MAX_PAGE = 200
#: The most faults a history page reads.
MAX_FAULTS = 2000
#: Seconds after a page's newest outcome in which a fault naming one of its rounds is looked
#: for (the table publishes a void's fault with its outcome; they may arrive a little apart).
FAULT_SLACK = 5.0
ROUND_COLUMNS = "table_seq, round, event_mark, received_at, payload"
SEGMENT_WHERE = "site = ? AND table_id = ? AND topic = 'event' AND kind = ?"
#: The history's indexes: a table's events of one kind (a segment's start: a shoe), and its
#: outcomes by the event they follow (a segment's rounds).
HISTORY_INDEXES = (
    "CREATE INDEX IF NOT EXISTS messages_history_kind "
    "ON messages (site, table_id, topic, kind, table_seq)",
    "CREATE INDEX IF NOT EXISTS messages_history_mark "
    "ON messages (site, table_id, topic, event_mark)",
)


def _round_filter(site: str, table: str, query: RoundQuery) -> tuple[str, list[Any]]:
    where = "site = ? AND table_id = ? AND topic = 'outcome'"
    params: list[Any] = [site, table]
    for clause, value in (("received_at >= ?", query.since), ("received_at <= ?", query.until)):
        if value is not None:
            where += f" AND {clause}"
            params.append(value)
    return where, params


async def _exists(tx: Tx, where: str, params: list[Any], clause: str, value: int) -> bool:
    row = await tx.fetchone(f"SELECT 1 FROM messages WHERE {where} AND {clause} LIMIT 1",
                            [*params, value])
    return row is not None


async def _with_events(tx: Tx, site: str, table: str,
                       outs: list[Row]) -> tuple[list[RecalledRound], float | None]:
    """Rounds (``outs``: outcome rows of :data:`ROUND_COLUMNS`, in the table's order) with
    their events: those numbered after the previous outcome's mark up to the outcome's own;
    and when the outcome before the first was received (None: none)."""
    if not outs:
        return [], None
    before = await tx.fetchone(
        "SELECT event_mark, received_at FROM messages WHERE site = ? AND table_id = ? AND "
        "topic = 'outcome' AND table_seq < ? ORDER BY table_seq DESC LIMIT 1",
        (site, table, outs[0][0]))
    low = int(before[0]) if before is not None and before[0] is not None else -1
    opened_at = float(before[1]) if before is not None else None
    high = max((int(o[2]) for o in outs if o[2] is not None), default=-1)
    events = await tx.fetchall(
        "SELECT table_seq, payload FROM messages WHERE site = ? AND table_id = ? AND "
        "topic = 'event' AND table_seq > ? AND table_seq <= ? ORDER BY table_seq",
        (site, table, low, high))
    rounds = []
    index = 0
    for seq, round_no, mark, received_at, payload in outs:
        end = low if mark is None else int(mark)
        mine = []
        while index < len(events) and int(events[index][0]) <= end:
            mine.append(json.loads(events[index][1]))
            index += 1
        low = max(low, end)
        rounds.append(RecalledRound(int(round_no), json.loads(payload), mine,
                                    float(received_at), table_seq=int(seq)))
    return rounds, opened_at


def _named_round(fault: dict[str, Any]) -> int | None:
    """The round a fault names: its own ``round``, or that of the event it is about."""
    for where in (fault, fault.get("event")):
        if isinstance(where, dict):
            value = where.get("round")
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


async def _faults_of(tx: Tx, site: str, table: str, rounds: list[RecalledRound],
                     opened_at: float | None) -> list[RecalledRound]:
    """``rounds`` (in the table's order) with the faults that touched each
    (:func:`_with_faults`), read in one query over their time span."""
    if not rounds:
        return rounds
    faults = await tx.fetchall(
        "SELECT received_at, payload FROM messages WHERE site = ? AND table_id = ? "
        "AND topic = 'fault' AND received_at > ? AND received_at <= ? "
        "ORDER BY received_at, id LIMIT ?",
        (site, table, -1.0 if opened_at is None else opened_at,
         rounds[-1].received_at + FAULT_SLACK, MAX_FAULTS))
    return _with_faults(rounds, opened_at, faults)


def _with_faults(rounds: list[RecalledRound], opened_at: float | None,
                 faults: list[Row]) -> list[RecalledRound]:
    """Each round with the faults that touched it: those naming its round, and those received
    after the round before it ended and no later than its own outcome."""
    numbers = {r.round: i for i, r in enumerate(rounds)}
    found: list[list[dict[str, Any]]] = [[] for _ in rounds]
    for received_at, payload in faults:
        fault = json.loads(payload)
        at = float(received_at)
        named = _named_round(fault)
        if named is not None and named in numbers:
            found[numbers[named]].append(fault)
            continue
        start = opened_at if opened_at is not None else float("-inf")
        for i, r in enumerate(rounds):
            if start < at <= r.received_at:
                found[i].append(fault)
                break
            start = r.received_at
    return [replace(r, faults=f) if f else r for r, f in zip(rounds, found, strict=True)]


def _in_segment(site: str, table: str, segment: Segment) -> tuple[str, list[Any]]:
    where = "site = ? AND table_id = ? AND topic = 'outcome' AND event_mark >= ?"
    params: list[Any] = [site, table, segment.table_seq]
    if segment.next_seq is not None:
        where += " AND event_mark < ?"
        params.append(segment.next_seq)
    return where, params


async def _segment(tx: Tx, site: str, table: str, event_type: str, number: int,
                   row: Row) -> Segment:
    seq = int(row[0])
    following = await tx.fetchone(
        f"SELECT MIN(table_seq) FROM messages WHERE {SEGMENT_WHERE} AND table_seq > ?",
        (site, table, event_type, seq))
    next_seq = int(following[0]) if following is not None and following[0] is not None else None
    segment = Segment(number, seq, float(row[1]), json.loads(row[2]), 0, next_seq)
    where, params = _in_segment(site, table, segment)
    counted = await tx.fetchone(f"SELECT COUNT(*) FROM messages WHERE {where}", params)
    return replace(segment, rounds=int(counted[0]) if counted else 0)
