"""The record in one SQLite file (WAL): the embedded default, for one pit server.

Owns the connection and nothing else: the stdlib ``sqlite3`` on one thread of its own, so that
no query ever runs on the event loop; statements of one transaction run there in order, one
transaction at a time. ``synchronous=NORMAL`` in WAL: a commit is not an fsync (the WAL is synced
at checkpoints). The pit acknowledges a QoS 1 message to the broker when it receives it (aiomqtt
has no manual acknowledgement), so a crash may lose the last messages either way; such a loss is
not silent: the next message of that stream shows the jump and raises ``seq_gap``.

Other processes (``tabled pit alerts ack``, ``tabled pit status``, tests) may open the same file:
WAL lets them read while the service writes, and the busy timeout lets them write in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from tabled.pit.messages import Message
from tabled.pit.sql import insert_message, schema, schema_v2, schema_v3, stored_message
from tabled.pit.store import T_STORE, Recorded, Row, StoreError, Tx, store_error
from tabled.pit.store_sql import SqlStore

T = TypeVar("T")

#: What SQLite (and the stdlib's binding of a value) refuses for the content it is given: an
#: integer beyond 64 bits, text UTF-8 cannot carry, a value of no SQL type, a constraint. Every
#: other error (locked, disk full or failing, not open) is an outage (pit.store.store_error).
DATA_ERRORS: tuple[type[BaseException], ...] = (
    sqlite3.IntegrityError, sqlite3.DataError, sqlite3.InterfaceError, OverflowError,
    UnicodeError)
_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, *DATA_ERRORS)

#: How long a writer waits for another process's write lock, milliseconds.
BUSY_TIMEOUT_MS = 5000
#: How often the checkpointer copies the WAL into the database, seconds.
T_CHECKPOINT = 1.0


class _SqliteTx(Tx):
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        def run(db: sqlite3.Connection) -> int:
            return db.execute(sql, tuple(params)).rowcount

        return await self._store.call(run)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        def run(db: sqlite3.Connection) -> list[Row]:
            return [tuple(r) for r in db.execute(sql, tuple(params)).fetchall()]

        return await self._store.call(run)


class SqliteStore(SqlStore):
    """``SqliteStore(path)``; ``await open()`` creates the file (mode 0600) and migrates."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._executor: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._checkpointer: tuple[threading.Thread, threading.Event] | None = None

    @property
    def description(self) -> str:
        return f"sqlite {self.path}"

    def migrations(self) -> list[list[str]]:
        return [schema("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL", "INTEGER"),
                schema_v2("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL"),
                schema_v3("REAL", "INTEGER")]

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(connection)`` on the store's thread."""
        if self._executor is None or self._db is None:
            raise StoreError(f"{self.description}: not open")
        db = self._db
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, db)
        except _ERRORS as exc:
            raise store_error(self.description, exc, DATA_ERRORS) from exc

    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pit-sqlite")
        loop = asyncio.get_running_loop()

        def connect() -> sqlite3.Connection:
            if self.readonly:
                db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                     isolation_level=None, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self.path.touch(mode=0o600, exist_ok=True)
                db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not self.readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                # checkpoints on a thread of their own (_start_checkpointer), never in a commit
                db.execute("PRAGMA wal_autocheckpoint=0")
            return db

        try:
            self._db = await loop.run_in_executor(self._executor, connect)
        except (sqlite3.Error, OSError) as exc:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise StoreError(f"{self.description}: cannot open: {exc}") from exc
        if not self.readonly:
            await self._run("migrate", self._migrate)
            self._start_checkpointer()

    def _start_checkpointer(self) -> None:
        """Move WAL checkpoints off the commit path, as the daemon's journal does: inline,
        SQLite checkpoints inside a commit every 1,000 pages, and with ``synchronous=NORMAL``
        that is the only commit that syncs the disk (measured: record batches waiting up to a
        second behind it while another process kept the disk busy). A thread with its own
        connection copies the WAL into the database every ``T_CHECKPOINT`` seconds."""
        stop = threading.Event()

        def run() -> None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                while not stop.wait(T_CHECKPOINT):
                    with contextlib.suppress(sqlite3.Error):  # a failing disk: commits say so
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                db.close()

        thread = threading.Thread(target=run, name="pit-sqlite-checkpoint", daemon=True)
        self._checkpointer = (thread, stop)
        thread.start()

    async def close(self) -> None:
        if self._checkpointer is not None:
            thread, stop = self._checkpointer
            self._checkpointer = None
            stop.set()
            await asyncio.to_thread(thread.join, 5)
        executor, db = self._executor, self._db
        self._executor, self._db = None, None
        if executor is None:
            return
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                await asyncio.get_running_loop().run_in_executor(executor, db.close)
        executor.shutdown(wait=True)

    async def record_many(self, messages: Sequence[Message],
                          recorded_by: str) -> list[Recorded]:
        """The shared SQL of :meth:`SqlStore.record_many`, but the whole transaction in one
        call on the store's thread: a statement at a time, each a hop to the thread and back,
        cost the pit more than the statements themselves (docs/performance.md)."""
        if not messages:
            return []

        def run(db: sqlite3.Connection) -> list[Recorded]:
            db.execute("BEGIN IMMEDIATE")
            try:
                out = []
                for m in messages:
                    sql, params = insert_message(m, recorded_by)
                    row = db.execute(sql, params).fetchone()
                    if row is not None:
                        out.append(Recorded("new", int(row[0])))
                    elif m.table_seq is None:
                        out.append(Recorded("duplicate", None))
                    else:
                        sql, params = stored_message(m)
                        out.append(self._known(m, db.execute(sql, params).fetchone()))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return out

        started = time.monotonic()
        try:
            async with asyncio.timeout(T_STORE), self._lock:
                # shielded: the thread finishes (commits or rolls back) whatever the caller does
                return await asyncio.shield(self.call(run))
        except TimeoutError:
            raise StoreError(f"{self.description}: record_batch took longer than "
                             f"{T_STORE:g} s") from None
        finally:
            if self.observe is not None:
                self.observe("record_batch", time.monotonic() - started)

    @contextlib.asynccontextmanager
    async def transaction(self, write: bool = True) -> AsyncIterator[Tx]:
        # One transaction at a time on the one connection. A write transaction takes SQLite's
        # write lock at once (IMMEDIATE), so that its reads and writes see one state.
        async with self._lock:
            try:
                # inside the try: a BEGIN whose caller timed out still runs on the thread, and
                # must be rolled back, or every later BEGIN fails inside it
                await self.call(lambda db: db.execute("BEGIN IMMEDIATE" if write and not
                                                      self.readonly else "BEGIN"))
                yield _SqliteTx(self)
            except BaseException:
                # shielded: a cancelled or timed-out operation still rolls back before the next
                # transaction begins (the thread runs them in order)
                with contextlib.suppress(StoreError, sqlite3.Error):
                    await asyncio.shield(self.call(lambda db: db.execute("ROLLBACK")))
                raise
            await self.call(lambda db: db.execute("COMMIT"))
