"""The floor's leader: of the pit servers sharing one PostgreSQL record, the one that runs what
must run once per floor (the alert timers, the integrity monitors' alert filing, the outbox's
publishing, the shift reports, retention; :mod:`pit.service` says which).

Owns the leadership and nothing else: a session-level advisory lock (``pg_try_advisory_lock``)
held on a dedicated connection of its own (never the store's pool), with TCP keepalives set at
both ends. Every ``[ha] poll_interval`` a follower tries to take the lock and the leader checks
it still holds it (``pg_locks``); a look that fails or takes longer than ``poll_timeout``
means the database is out of reach: the leader steps down at once and closes the connection.

- A leader killed (``kill -9``, a crash): its host's kernel closes the socket, PostgreSQL ends
  the session and releases the lock; a follower takes it at its next look (within one
  ``poll_interval`` and a round trip).
- A leader's host lost (power, network): PostgreSQL's keepalive probes on the session's socket
  (``tcp_keepalives_*``, set for this session) end it after ``keepalive_idle +
  keepalive_interval x keepalive_count`` seconds; meanwhile the cut-off leader stepped down
  after ``poll_interval + poll_timeout`` at most (the config insists that is shorter): never
  two leaders.
- A pit that cannot reach PostgreSQL is not leader. With SQLite (one server) the process is
  always leader.

Never raises out of :meth:`Leadership.run` but for cancellation; each change is logged
(``leader_gained`` / ``leader_lost`` with the reason) and handed to ``on_change``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import psycopg
import structlog

from tabled.contract.secrets import read_secret
from tabled.pit.config import HASettings, PostgresSettings

log = structlog.get_logger("tabled.pit.leader")

#: Seconds a connection attempt of the lock's connection may take.
T_CONNECT = 5


class Leadership:
    """Whether this pit server leads its floor. ``await run()`` in a task; read
    :attr:`is_leader`, or wait with :meth:`wait_leader` / :meth:`wait_follower`."""

    def __init__(self, settings: HASettings, postgres: PostgresSettings | None, pit_id: str,
                 on_change: Callable[[bool], None] | None = None) -> None:
        self.settings = settings
        self.postgres = postgres
        self.pit_id = pit_id
        self.on_change = on_change
        #: one server (SQLite) leads from the start
        self.is_leader = postgres is None
        #: monotonic time of the last change (0: never changed)
        self.since = 0.0
        self._leading = asyncio.Event()
        self._following = asyncio.Event()
        (self._leading if self.is_leader else self._following).set()
        self._problem: str | None = None

    @property
    def role(self) -> str:
        return "leader" if self.is_leader else "follower"

    async def wait_leader(self) -> None:
        await self._leading.wait()

    async def wait_follower(self) -> None:
        await self._following.wait()

    def _set(self, leading: bool, reason: str) -> None:
        if leading == self.is_leader:
            return
        self.is_leader = leading
        self.since = time.monotonic()
        if leading:
            self._following.clear()
            self._leading.set()
            log.warning("leader_gained", pit=self.pit_id, reason=reason)
        else:
            self._leading.clear()
            self._following.set()
            log.warning("leader_lost", pit=self.pit_id, reason=reason)
        if self.on_change is not None:
            self.on_change(leading)

    async def run(self) -> None:
        try:
            await self._run()
        finally:  # stopped: the lock's connection is closed, so is the lead
            self._set(False, "stopped")

    async def _run(self) -> None:
        if self.postgres is None:
            self._set(True, "one server (SQLite): always the leader")
            log.info("leader_alone", pit=self.pit_id, reason="one server (SQLite): the leader")
            await asyncio.Event().wait()
        s = self.settings
        while True:
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                async with asyncio.timeout(T_CONNECT + s.poll_timeout):
                    conn = await self._connect()
                while True:
                    async with asyncio.timeout(s.poll_timeout):
                        held = await self._look(conn)
                    if held:
                        self._set(True, "took the floor's advisory lock")
                    elif self.is_leader:  # (the session is alive: nobody else can release it)
                        self._set(False, "the advisory lock is no longer held")
                    self._problem = None
                    await asyncio.sleep(s.poll_interval)
            except (psycopg.Error, OSError, TimeoutError) as exc:
                reason = f"{type(exc).__name__}: {exc}".strip()
                self._set(False, f"the database is out of reach ({reason})")
                if reason != self._problem:
                    log.warning("leader_lock_unreachable", pit=self.pit_id, error=reason)
                    self._problem = reason
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(1.0):
                            await conn.close()
            await asyncio.sleep(s.poll_interval)

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        assert self.postgres is not None
        s = self.settings
        kwargs: dict[str, Any] = {
            "connect_timeout": T_CONNECT,
            "autocommit": True,
            "application_name": f"tabled-pit-leader:{self.pit_id}"[:63],
            # this end: the leader notices a dead database (its poll_timeout is quicker still)
            "keepalives": 1, "keepalives_idle": s.keepalive_idle,
            "keepalives_interval": s.keepalive_interval, "keepalives_count": s.keepalive_count,
            # the database's end: a lost host's session (and its lock) ends after these
            "options": (f"-c tcp_keepalives_idle={s.keepalive_idle} "
                        f"-c tcp_keepalives_interval={s.keepalive_interval} "
                        f"-c tcp_keepalives_count={s.keepalive_count} "
                        f"-c statement_timeout={int(s.poll_timeout * 1000)} "
                        "-c idle_session_timeout=0"),
        }
        if self.postgres.password_file is not None:
            kwargs["password"] = read_secret(self.postgres.password_file).decode()
        return await psycopg.AsyncConnection.connect(self.postgres.conninfo, **kwargs)

    async def _look(self, conn: psycopg.AsyncConnection[Any]) -> bool:
        """Try to take the lock (a follower), or check this session holds it (the leader: a
        second ``pg_try_advisory_lock`` would stack a second hold)."""
        key = self.settings.lock_key
        if not self.is_leader:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
        else:
            unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND "
                "pid = pg_backend_pid() AND granted AND database = (SELECT oid FROM "
                "pg_database WHERE datname = current_database()) AND classid = %s::oid AND "
                "objid = %s::oid AND objsubid = 1)", (unsigned >> 32, unsigned & 0xFFFF_FFFF))
        row = await cur.fetchone()
        return bool(row and row[0])
