"""The SQL store's record of messages and malformed input
(:class:`tabled.pit.store.RecordStore`).

Owns these queries, written once for both databases over :class:`~tabled.pit.sql.SqlBase`'s
transactions; the connection and the few words that differ are :mod:`tabled.pit.store_sqlite`'s
and :mod:`tabled.pit.store_postgres`'s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

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
    Row,
    StoredMessage,
    StoreError,
    Tx,
)


class SqlRecords(SqlBase, RecordStore):
    """The record of messages and malformed input, in SQL."""

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

    # -- the reports' queries (pit/report) ------------------------------------------------------

    async def messages_between(self, since: float, until: float, *, site: str | None = None,
                               table: str | None = None,
                               streams: Sequence[str] = ("outcome", "fault", "status"),
                               limit: int = 1_000_000) -> list[StoredMessage]:
        async def body(tx: Tx) -> list[StoredMessage]:
            where = ["received_at >= ?", "received_at < ?",
                     f"topic IN ({', '.join('?' for _ in streams)})"]
            params: list[object] = [since, until, *streams]
            for column, value in (("site", site), ("table_id", table)):
                if value is not None:
                    where.append(f"{column} = ?")
                    params.append(value)
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE {' AND '.join(where)} "
                "ORDER BY id LIMIT ?", [*params, limit])
            return [message_row(r) for r in rows]

        return await self._run("messages_between", body, write=False)

    async def statuses_before(self, at: float) -> list[StoredMessage]:
        async def body(tx: Tx) -> list[StoredMessage]:
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE topic = 'status' AND id = "
                "(SELECT MAX(id) FROM messages n WHERE n.site = m.site AND "
                "n.table_id = m.table_id AND n.topic = 'status' AND n.received_at < ?) "
                "ORDER BY id", (at,))
            return [message_row(r) for r in rows]

        return await self._run("statuses_before", body, write=False)
