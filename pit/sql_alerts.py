"""The SQL store's alerts, their audit trail and the outbox of ``…/pit/alert``
(:class:`tabled.pit.store.AlertStore`, :class:`tabled.pit.store.OutboxStore`).

Owns these queries, written once for both databases over :class:`~tabled.pit.sql.SqlBase`'s
transactions; the connection and the few words that differ are :mod:`tabled.pit.store_sqlite`'s
and :mod:`tabled.pit.store_postgres`'s.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tabled.pit.sql import (
    ALERT_COLUMNS,
    AUDIT_COLUMNS,
    SqlBase,
    alert_row,
    audit_row,
    dumps,
)
from tabled.pit.store import (
    LIVE_STATES,
    T_CLAIM,
    Alert,
    AlertActionError,
    AlertChange,
    AlertSpec,
    AlertStore,
    AuditEntry,
    OutboxStore,
    Tx,
)


class SqlAlerts(SqlBase, AlertStore, OutboxStore):
    """Alerts, their audit trail and the outbox of ``…/pit/alert``, in SQL."""

    async def _live(self, tx: Tx, site: str, table: str, kind: str,
                    subject: str) -> Alert | None:
        row = await tx.fetchone(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE site = ? AND table_id = ? AND kind = ? "
            f"AND subject = ? AND state <> 'closed'{self.for_update}",
            (site, table, kind, subject))
        return alert_row(row) if row is not None else None

    async def _by_id(self, tx: Tx, alert_id: int) -> Alert | None:
        row = await tx.fetchone(
            f"SELECT {ALERT_COLUMNS} FROM alerts WHERE id = ?{self.for_update}", (alert_id,))
        return alert_row(row) if row is not None else None

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
        """Open an alert for the condition (in ``spec.incident``, or an incident of its own), or
        count a repeat of one not closed, which then shows the repeat's message and detail (its
        audit line ``repeated``, not published, is the incident's timeline); a cleared one that
        comes back is open again."""

        async def body(tx: Tx) -> AlertChange | None:
            for _ in range(2):
                live = await self._live(tx, spec.site, spec.table, spec.kind, spec.subject)
                if live is not None:
                    if live.state != "cleared":
                        alert = await self._set(
                            tx, live.id, count=live.count + 1, message=spec.message,
                            detail=dumps(spec.detail), updated_at=now, seen_at=now)
                        entry = await self._audit(tx, live.id, now, actor, "repeated",
                                                  alert.state, spec.message, False)
                        return AlertChange(alert, entry)
                    alert = await self._set(
                        tx, live.id, state="open", cleared_at=None, updated_at=now, seen_at=now,
                        count=live.count + 1, message=spec.message, detail=dumps(spec.detail))
                    entry = await self._audit(tx, live.id, now, actor, "reopened", "open",
                                              spec.message, publish)
                    return AlertChange(alert, entry)
                row = await tx.fetchone(
                    "INSERT INTO alerts (site, table_id, kind, subject, severity, state, "
                    "message, detail, transient, count, opened_at, updated_at, incident, "
                    "seen_at) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?, 1, ?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING RETURNING id",
                    (spec.site, spec.table, spec.kind, spec.subject, spec.severity,
                     spec.message, dumps(spec.detail), 1 if spec.transient else 0, now, now,
                     spec.incident, now))
                if row is None:
                    continue  # another pit server opened it a moment ago: count it there
                if spec.incident is None:
                    await tx.execute("UPDATE alerts SET incident = id WHERE id = ?",
                                     (int(row[0]),))
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
            alert = await self._set(tx, alert_id, detail=dumps(detail), message=message,
                                    updated_at=now, seen_at=now)
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

    async def escalate(self, alert_id: int, level: int, actor: str, now: float, note: str,
                       publish: bool = True) -> AlertChange | None:
        async def body(tx: Tx) -> AlertChange | None:
            alert = await self._by_id(tx, alert_id)
            if alert is None or alert.state not in ("open", "cleared") \
                    or alert.escalation >= level:
                return None
            alert = await self._set(tx, alert_id, escalation=level, escalated_at=now,
                                    updated_at=now)
            entry = await self._audit(tx, alert_id, now, actor, "escalated", alert.state, note,
                                      publish)
            return AlertChange(alert, entry)

        return await self._run("escalate", body)

    async def alerts_since(self, since: float, *, limit: int = 1000) -> list[Alert]:
        async def body(tx: Tx) -> list[Alert]:
            rows = await tx.fetchall(
                f"SELECT {ALERT_COLUMNS} FROM alerts WHERE state <> 'closed' OR updated_at >= ? "
                "OR closed_at >= ? ORDER BY id DESC LIMIT ?", (since, since, limit))
            return [alert_row(r) for r in rows]

        return await self._run("alerts_since", body, write=False)

    async def incident_alerts(self, incidents: Sequence[int]) -> list[Alert]:
        async def body(tx: Tx) -> list[Alert]:
            out: list[Alert] = []
            ids = sorted(set(incidents))
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                marks = ", ".join("?" for _ in part)
                rows = await tx.fetchall(
                    f"SELECT {ALERT_COLUMNS} FROM alerts WHERE incident IN ({marks}) "
                    f"OR id IN ({marks}) ORDER BY id", [*part, *part])
                out.extend(alert_row(r) for r in rows)
            return sorted({a.id: a for a in out}.values(), key=lambda a: a.id)

        return await self._run("incident_alerts", body, write=False)

    async def audit_since(self, since: float, *, limit: int = 1000) -> list[AuditEntry]:
        async def body(tx: Tx) -> list[AuditEntry]:
            rows = await tx.fetchall(
                f"SELECT {AUDIT_COLUMNS} FROM alert_audit WHERE at >= ? ORDER BY at, id "
                "LIMIT ?", (since, limit))
            return [audit_row(r) for r in rows]

        return await self._run("audit_since", body, write=False)

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
            row = await tx.fetchone(f"SELECT {ALERT_COLUMNS} FROM alerts WHERE id = ?",
                                    (alert_id,))
            return alert_row(row) if row is not None else None

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
                f"SELECT {ALERT_COLUMNS} FROM alerts WHERE {' AND '.join(where)} "
                "ORDER BY id DESC LIMIT ?", [*params, limit])
            return [alert_row(r) for r in rows]

        return await self._run("alerts", body, write=False)

    async def audit(self, alert_id: int | None = None, *,
                    limit: int = 200) -> list[AuditEntry]:
        async def body(tx: Tx) -> list[AuditEntry]:
            if alert_id is not None:
                rows = await tx.fetchall(
                    f"SELECT {AUDIT_COLUMNS} FROM alert_audit WHERE alert_id = ? "
                    "ORDER BY id LIMIT ?", (alert_id, limit))
                return [audit_row(r) for r in rows]
            rows = await tx.fetchall(
                f"SELECT {AUDIT_COLUMNS} FROM alert_audit ORDER BY id DESC LIMIT ?", (limit,))
            return [audit_row(r) for r in rows]

        return await self._run("audit", body, write=False)

    async def audit_after(self, after_id: int, recent: float = 0.0,
                          limit: int = 500) -> list[AuditEntry]:
        async def body(tx: Tx) -> list[AuditEntry]:
            rows = await tx.fetchall(
                f"SELECT {AUDIT_COLUMNS} FROM alert_audit WHERE id > ? OR at >= ? "
                "ORDER BY id LIMIT ?", (after_id, time.time() - recent if recent else 1e18,
                                        limit))
            return [audit_row(r) for r in rows]

        return await self._run("audit_after", body, write=False)

    # -- the outbox of …/pit/alert ----------------------------------------------------------


    async def pending_publications(self, limit: int = 100) -> list[tuple[AuditEntry, Alert]]:
        async def body(tx: Tx) -> list[tuple[AuditEntry, Alert]]:
            columns = ", ".join(f"a.{c.strip()}" for c in ALERT_COLUMNS.split(","))
            audit = ", ".join(f"u.{c.strip()}" for c in AUDIT_COLUMNS.split(","))
            rows = await tx.fetchall(
                f"SELECT {audit}, {columns} FROM alert_audit u JOIN alerts a "
                "ON a.id = u.alert_id WHERE u.pending = 1 AND (u.claimed_at IS NULL OR "
                "u.claimed_at < ?) ORDER BY u.id LIMIT ?", (time.time() - T_CLAIM, limit))
            return [(audit_row(r[:7]), alert_row(r[7:])) for r in rows]

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

    # -- the reports' queries (pit/report) ------------------------------------------------------

    async def alerts_opened(self, since: float, until: float, *, site: str | None = None,
                            table: str | None = None,
                            limit: int = 1_000_000) -> list[Alert]:
        async def body(tx: Tx) -> list[Alert]:
            where = ["opened_at >= ?", "opened_at < ?"]
            params: list[Any] = [since, until]
            for column, value in (("site", site), ("table_id", table)):
                if value is not None:
                    where.append(f"{column} = ?")
                    params.append(value)
            rows = await tx.fetchall(
                f"SELECT {ALERT_COLUMNS} FROM alerts WHERE {' AND '.join(where)} "
                "ORDER BY opened_at, id LIMIT ?", [*params, limit])
            return [alert_row(r) for r in rows]

        return await self._run("alerts_opened", body, write=False)
