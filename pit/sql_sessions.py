"""The SQL store's web sessions and sign-in audit, schema version 2
(:class:`tabled.pit.store.SessionStore`).

Owns these queries, written once for both databases over :class:`~tabled.pit.sql.SqlBase`'s
transactions; the connection and the few words that differ are :mod:`tabled.pit.store_sqlite`'s
and :mod:`tabled.pit.store_postgres`'s.
"""

from __future__ import annotations

from tabled.pit.sql import (
    SESSION_COLUMNS,
    SIGN_IN_COLUMNS,
    SqlBase,
    session_row,
    sign_in_row,
)
from tabled.pit.store import (
    SessionStore,
    SignInEntry,
    Tx,
    WebSession,
)


class SqlSessions(SqlBase, SessionStore):
    """Web sessions and the sign-in audit (schema version 2), in SQL."""

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
                f"INSERT INTO web_sessions ({SESSION_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                (s.id_hash, s.user, s.password_mark, s.created_at, s.last_seen,
                 s.client[:128], s.pit))
            return await self._sign_in_line(tx, s.created_at, s.user, s.client, "signed_in",
                                            None, s.pit)

        return await self._run("start_session", body)

    async def web_session(self, id_hash: str) -> WebSession | None:
        async def body(tx: Tx) -> WebSession | None:
            row = await tx.fetchone(
                f"SELECT {SESSION_COLUMNS} FROM web_sessions WHERE id_hash = ?", (id_hash,))
            return None if row is None else session_row(row)

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
                f"SELECT {SESSION_COLUMNS} FROM web_sessions WHERE ended_at IS NULL "
                "ORDER BY created_at LIMIT ?", (limit,))
            return [session_row(r) for r in rows]

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
                    f"SELECT {SIGN_IN_COLUMNS} FROM sign_in_audit ORDER BY id DESC LIMIT ?",
                    (limit,))
            else:
                rows = await tx.fetchall(
                    f"SELECT {SIGN_IN_COLUMNS} FROM sign_in_audit WHERE user_name = ? "
                    "ORDER BY id DESC LIMIT ?", (user, limit))
            return [sign_in_row(r) for r in rows]

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
