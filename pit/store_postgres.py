"""The record in PostgreSQL (psycopg 3, async, with a connection pool): the store of a floor
where several pit servers share one record.

Owns the connections and the few words of SQL that differ from SQLite; the logic is
:class:`pit.store.SqlStore`'s. Several servers writing at once stay correct through the
database, not through the pits: idempotency and the one-alert-per-condition rule are unique
indexes (``INSERT … ON CONFLICT DO NOTHING``), alert rows are locked while they change
(``SELECT … FOR UPDATE``), migrations run under an advisory lock, and each outbox row is claimed
by one server before it is published.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
import structlog
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from tabled.contract.secrets import read_secret
from tabled.pit.config import PostgresSettings
from tabled.pit.messages import Message
from tabled.pit.sql import insert_message, schema, schema_v2, schema_v3, stored_message
from tabled.pit.store import T_STORE, Recorded, Row, StoreError, Tx, store_error
from tabled.pit.store_sql import SqlStore

log = structlog.get_logger("tabled.pit.store")

#: The channel each commit of messages is announced on (its payload: the pit server that
#: recorded them), so a partner following the record reads it at once (:meth:`others_recorded`).
RECORDED_CHANNEL = "tabled_recorded"
#: After the listening connection failed, the next try this much later, seconds (meanwhile the
#: followers poll, pit.service T_FOLLOW).
T_LISTEN_RETRY = 2.0

#: What PostgreSQL (or psycopg, adapting a value) refuses for the content it is given: SQLSTATE
#: class 22 (``bigint out of range``, NUL in text, an invalid text representation) and 23 (a
#: constraint), an integer or text psycopg cannot adapt. Every other error (connection refused
#: or lost, a timeout, the server shutting down, disk full) is an outage (pit.store.store_error).
DATA_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.DataError, psycopg.IntegrityError, OverflowError, UnicodeError)
_ERRORS: tuple[type[BaseException], ...] = (psycopg.Error, *DATA_ERRORS)

#: Any advisory lock id, the same for every pit: migrations run one server at a time.
MIGRATION_LOCK = 0x7AB1ED
#: A statement the server has not finished in this time is cancelled by the server, ms.
STATEMENT_TIMEOUT_MS = int(T_STORE * 1000)
#: Connecting (TCP, TLS, authentication) must take less, seconds.
T_CONNECT = 5


def _placeholders(sql: str) -> str:
    # The shared SQL uses "?"; psycopg wants "%s". No statement has a "?" or "%" of its own.
    return sql.replace("?", "%s")


class _PgTx(Tx):
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cur = await self._conn.execute(_placeholders(sql), tuple(params))
        return cur.rowcount

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = await self._conn.execute(_placeholders(sql), tuple(params))
        return [tuple(r) for r in await cur.fetchall()]


class PostgresStore(SqlStore):
    for_update = " FOR UPDATE"

    def __init__(self, settings: PostgresSettings, *, open_timeout: float = T_STORE) -> None:
        self.settings = settings
        #: how long :meth:`open` keeps trying to connect before it gives up, seconds
        self.open_timeout = open_timeout
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._kwargs: dict[str, Any] = {}
        #: LISTEN: set by another server's commit of messages (:meth:`others_recorded`)
        self._others = asyncio.Event()
        self._listener: asyncio.Task[None] | None = None

    @property
    def description(self) -> str:
        safe = " ".join(p for p in self.settings.conninfo.split()
                        if not p.startswith("password"))
        return f"postgres ({safe})"

    def migrations(self) -> list[list[str]]:
        pk = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
        return [schema(pk, "DOUBLE PRECISION", "BIGINT"), schema_v2(pk, "DOUBLE PRECISION"),
                schema_v3("DOUBLE PRECISION", "BIGINT")]

    async def open(self) -> None:
        kwargs: dict[str, Any] = {
            "connect_timeout": T_CONNECT,
            "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            "application_name": "tabled-pit",
        }
        if self.settings.password_file is not None:
            kwargs["password"] = read_secret(self.settings.password_file).decode()
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            self.settings.conninfo, min_size=self.settings.pool_min,
            max_size=self.settings.pool_max, kwargs=kwargs, open=False, timeout=T_STORE,
            name="tabled-pit")
        try:
            await pool.open(wait=True, timeout=self.open_timeout)
        except (PoolTimeout, psycopg.Error) as exc:
            await pool.close()
            raise StoreError(f"{self.description}: cannot connect: {exc}") from exc
        self._pool = pool
        self._kwargs = kwargs
        await self._run("migrate", self._migrate_locked)

    async def _migrate_locked(self, tx: Tx) -> None:
        await tx.execute(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        await self._migrate(tx)

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=T_STORE)

    async def record_many(self, messages: Sequence[Message],
                          recorded_by: str) -> list[Recorded]:
        """The shared SQL of :meth:`SqlStore.record_many` in one transaction, pipelined: every
        INSERT goes to the server before the first answer is read (statements still run in
        order, so an outcome's event mark sees the events before it), one round trip for the
        batch instead of one per message."""
        if not messages:
            return []
        if self._pool is None:
            raise StoreError(f"{self.description}: not open")
        started = time.monotonic()
        try:
            async with asyncio.timeout(T_STORE), self._pool.connection(
                    timeout=T_STORE) as conn, conn.transaction():
                async with conn.pipeline():
                    cursors = []
                    for m in messages:
                        sql, params = insert_message(m, recorded_by)
                        cursors.append(await conn.execute(_placeholders(sql), params))
                    # delivered at the commit, once per transaction: partners read at once
                    await conn.execute("SELECT pg_notify(%s, %s)",
                                       (RECORDED_CHANNEL, recorded_by))
                    rows = [await cur.fetchone() for cur in cursors]
                out: list[Recorded | None] = []
                for m, row in zip(messages, rows, strict=True):
                    if row is not None:
                        out.append(Recorded("new", int(row[0])))
                    elif m.table_seq is None:
                        out.append(Recorded("duplicate", None))
                    else:
                        out.append(None)
                for i, m in enumerate(messages):
                    if out[i] is None:  # a re-delivery or a conflict: rare, one query each
                        sql, params = stored_message(m)
                        cur = await conn.execute(_placeholders(sql), params)
                        out[i] = self._known(m, await cur.fetchone())
                return [r for r in out if r is not None]
        except TimeoutError:
            raise StoreError(f"{self.description}: record_batch took longer than "
                             f"{T_STORE:g} s") from None
        except PoolTimeout as exc:
            raise StoreError(f"{self.description}: no connection: {exc}") from exc
        except _ERRORS as exc:
            raise store_error(self.description, exc, DATA_ERRORS) from exc
        finally:
            if self.observe is not None:
                self.observe("record_batch", time.monotonic() - started)

    async def others_recorded(self, me: str, within: float) -> bool:
        """PostgreSQL's ``LISTEN``: woken by a partner's commit of messages (its
        ``pg_notify`` in :meth:`record_many`), or after ``within`` seconds. The listening connection
        is the store's own, opened at the first call and again after it fails."""
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self._listen(me), name="store-listen")
        try:
            async with asyncio.timeout(within):
                await self._others.wait()
        except TimeoutError:
            return False
        finally:
            self._others.clear()
        return True

    async def _listen(self, me: str) -> None:
        while self._pool is not None:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.settings.conninfo, autocommit=True, **self._kwargs)
            except psycopg.Error as exc:
                log.warning("store_listen_failed", error=str(exc))
                await asyncio.sleep(T_LISTEN_RETRY)
                continue
            try:
                await conn.execute(f"LISTEN {RECORDED_CHANNEL}")
                async for notice in conn.notifies():
                    if notice.payload != me:
                        self._others.set()
            except psycopg.Error as exc:
                log.warning("store_listen_failed", error=str(exc))
            finally:
                with contextlib.suppress(psycopg.Error):
                    await conn.close()
            await asyncio.sleep(T_LISTEN_RETRY)

    @contextlib.asynccontextmanager
    async def transaction(self, write: bool = True) -> AsyncIterator[Tx]:
        if self._pool is None:
            raise StoreError(f"{self.description}: not open")
        try:
            async with self._pool.connection(timeout=T_STORE) as conn, conn.transaction():
                if not write:
                    await conn.execute("SET TRANSACTION READ ONLY")
                yield _PgTx(conn)
        except PoolTimeout as exc:
            raise StoreError(f"{self.description}: no connection: {exc}") from exc
        except _ERRORS as exc:
            raise store_error(self.description, exc, DATA_ERRORS) from exc
