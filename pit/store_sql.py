"""The SQL store: the record's parts put together, its migrations and its retention.

Owns :class:`SqlStore`, the one class :mod:`tabled.pit.store_sqlite` and
:mod:`tabled.pit.store_postgres` subclass: the record (:mod:`.sql_records`), the alerts and the
outbox (:mod:`.sql_alerts`), the sessions (:mod:`.sql_sessions`), over :mod:`.sql`'s transactions.
"""

from __future__ import annotations

from tabled.pit.sql_alerts import SqlAlerts
from tabled.pit.sql_records import SqlRecords
from tabled.pit.sql_sessions import SqlSessions
from tabled.pit.store import (
    Store,
    StoreError,
    Tx,
)


class SqlStore(SqlRecords, SqlAlerts, SqlSessions, Store):
    """The whole record over SQL; subclasses connect and run transactions."""

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
