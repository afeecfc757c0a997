"""The alert engine: what raises an alert, what clears it, and what people may do to one.

Owns the rules, not the record: each decision is one call to the store, which makes it one
transaction with its audit entry (so a restart, another pit server or the command line see the
same alerts). The kinds, their severities and what raises and clears each are docs/pit.md's
"Alerts" table (offline, degraded, silent, device_lost, device_unavailable, wrong_device,
seq_gap, seq_conflict, fault, notice, command_rejected, void, ``integrity:<name>``).

One alert per (table, kind, subject) that is not closed: a repeat counts, it does not open
another, and the alert then shows the repeat's message. A *transient* alert reports a fact with
nothing to clear, so acknowledging it closes it. People act through :class:`AlertDesk`, which
checks the role here (a viewer cannot acknowledge, whatever page or command it comes through)
and audits refusals too. It never decides a table's state itself: it reads what the tables
published.

Alerts that belong together are one **incident** (:class:`Incident`, :func:`incidents`): a new
alert joins the incident of a recent alert of its table (``[alerts] group_window``) that is the
same condition again (a repeat after it was closed, a device lost again), a fault of the device
it names, or (a void) the fault that caused it and (a fault) the void it caused. An incident
not acknowledged for ``[alerts] escalate_after`` (per severity) is **escalated** on the engine's
clock, one level per period (published on ``…/pit/alert`` with the new level).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import structlog
from msgspec import UNSET

from tabled.contract import faults
from tabled.contract.devices import REASON_WRONG_DEVICE, DeviceState
from tabled.pit.auth import Forbidden, User
from tabled.pit.config import AlertSettings
from tabled.pit.messages import DURABLE, Message
from tabled.pit.model import Floor
from tabled.pit.store import (
    LIVE_STATES,
    Alert,
    AlertActionError,
    AlertChange,
    AlertSpec,
    AlertStore,
    AuditEntry,
    Recorded,
    Severity,
    Store,
)

log = structlog.get_logger("tabled.pit.alerts")

__all__ = ["AlertActionError", "AlertDesk", "AlertEngine", "Forbidden", "Incident", "incidents",
           "ranges"]

#: How bad each fault code is (codes not listed: major).
FAULT_SEVERITY: dict[str, Severity] = {
    faults.JOURNAL_FAILURE: "critical",
    "rules_error": "critical",
    faults.SHUFFLER_FAILURE: "major",
    faults.SHUFFLER_JAM: "major",
    faults.DECK_COUNT: "major",
    faults.CARD_EXPOSED: "major",
    faults.SENSOR_FAULT: "major",
    faults.LINK_ERRORS: "minor",
    faults.SHUFFLER_DOOR_OPEN: "minor",
    faults.UNREADABLE_CARD: "minor",
    faults.SHOE_EMPTY: "minor",
    faults.SHOE_SENSOR_DIRTY: "minor",
    faults.COCKED_DIE: "info",
}
#: A note longer than this is cut (it is a remark, not a document).
MAX_NOTE = 2000
#: How many missing numbers an alert lists one by one (beyond, ranges carry them).
MAX_LISTED = 1000
#: A void and a fault of its table this close in time are one incident even when the void's
#: reason does not name the fault, seconds.
CAUSE_WINDOW = 10.0
#: Alert kinds about one device (their subject is the device's id).
DEVICE_KINDS = ("device_lost", "device_unavailable", "wrong_device")
#: Most bulk-acknowledged incidents in one action.
MAX_BULK = 500
_WORST: dict[str, int] = {"critical": 0, "major": 1, "minor": 2, "info": 3}
_AWAITING = ("open", "cleared")


@dataclass(frozen=True, slots=True)
class Incident:
    """Alerts of one table that belong together, as people see them: the latest message, the
    count of every report, and each alert (oldest first) for its timeline. Its id is its first
    alert's."""

    id: int
    alerts: tuple[Alert, ...]

    @property
    def site(self) -> str:
        return self.alerts[0].site

    @property
    def table(self) -> str:
        return self.alerts[0].table

    @property
    def latest(self) -> Alert:
        """The alert last reported: its message is the incident's."""
        return max(self.alerts, key=lambda a: (a.last_seen, a.id))

    @property
    def message(self) -> str:
        return self.latest.message

    @property
    def kind(self) -> str:
        return self.latest.kind

    @property
    def kinds(self) -> list[str]:
        return list(dict.fromkeys(a.kind for a in self.alerts))

    @property
    def awaiting(self) -> list[Alert]:
        """Its alerts waiting for an acknowledgement (open, or cleared and not acknowledged)."""
        return [a for a in self.alerts if a.state in _AWAITING]

    @property
    def needs_ack(self) -> bool:
        return bool(self.awaiting)

    @property
    def state(self) -> str:
        states = {a.state for a in self.alerts}
        return next((s for s in ("open", "cleared", "acknowledged") if s in states), "closed")

    @property
    def severity(self) -> Severity:
        pool = self.awaiting or list(self.alerts)
        return min((a.severity for a in pool), key=lambda s: _WORST.get(s, 9))

    @property
    def count(self) -> int:
        return sum(a.count for a in self.alerts)

    @property
    def opened_at(self) -> float:
        return min(a.opened_at for a in self.alerts)

    @property
    def last_seen(self) -> float:
        return max(a.last_seen for a in self.alerts)

    @property
    def escalation(self) -> int:
        """The level it was escalated to while waiting (0: not escalated, or acknowledged)."""
        return max((a.escalation for a in self.awaiting), default=0)

    @property
    def acknowledged(self) -> Alert | None:
        """Its alert acknowledged last (who, when, the note)."""
        acked = [a for a in self.alerts if a.acked_at is not None]
        return max(acked, key=lambda a: a.acked_at or 0.0) if acked else None

    @property
    def articles(self) -> list[str]:
        """The rule articles its alerts cite (a void's, a notice's)."""
        out = [a.detail.get("article") for a in self.alerts]
        return list(dict.fromkeys(x for x in out if isinstance(x, str) and x))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "site": self.site, "table": self.table, "state": self.state,
                "severity": self.severity, "message": self.message, "count": self.count,
                "escalation": self.escalation, "alerts": [a.id for a in self.alerts]}


def floor_incidents(floor: Floor) -> list[Incident]:
    """The incidents of the floor's alerts not closed (:func:`incidents`), grouped once per
    change of its alerts."""
    found: list[Incident] = floor.derived("incidents", lambda: incidents(floor.alerts()))
    return list(found)


def incidents(alerts: Iterable[Alert]) -> list[Incident]:
    """Alerts grouped into their incidents, those waiting first, worst first, newest first."""
    groups: dict[int, list[Alert]] = {}
    for a in alerts:
        groups.setdefault(a.incident_id, []).append(a)
    out = [Incident(key, tuple(sorted(members, key=lambda a: a.id)))
           for key, members in groups.items()]
    return sorted(out, key=lambda i: (not i.needs_ack, -i.escalation,
                                      _WORST.get(i.severity, 9), -i.last_seen, -i.id))


def belongs(spec: AlertSpec, other: Alert, now: float, window: float) -> bool:
    """Does a new alert for ``spec`` belong to ``other``'s incident (same table, within
    ``window`` seconds of ``other``'s last report)?"""
    if (spec.site, spec.table) != (other.site, other.table) \
            or now - max(other.last_seen, other.updated_at) > window:
        return False
    if (spec.kind, spec.subject) == (other.kind, other.subject):
        return True  # the same condition again: a repeat, a device lost again
    device = spec.subject if spec.kind in DEVICE_KINDS else spec.detail.get("device")
    theirs = other.subject if other.kind in DEVICE_KINDS else other.detail.get("device")
    if isinstance(device, str) and device == theirs \
            and (spec.kind in DEVICE_KINDS or other.kind in DEVICE_KINDS):
        return True  # a device's loss and its faults
    kinds = {spec.kind, other.kind}
    if kinds == {"void", "fault"}:
        void, fault = (spec.detail, other.detail) if spec.kind == "void" else \
            (other.detail, spec.detail)
        reason, code = str(void.get("void_reason") or ""), fault.get("code")
        close = abs(now - other.last_seen) <= CAUSE_WINDOW
        return close or (isinstance(code, str) and bool(code) and code in reason)
    return False


def ranges(numbers: Iterable[int]) -> list[list[int]]:
    """``[4, 5, 6, 9] -> [[4, 6], [9, 9]]``."""
    out: list[list[int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def _text(spans: list[list[int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


class AlertDesk:
    """What a signed-in person does to an alert: acknowledge, close. Role-checked and audited
    here, for every front end."""

    def __init__(self, store: AlertStore, *, publish: bool = True,
                 clock: Callable[[], float] = time.time,
                 on_change: Callable[[AlertChange], None] | None = None) -> None:
        self.store = store
        self.publish = publish
        self.clock = clock
        self.on_change = on_change

    async def acknowledge(self, alert_id: int, user: User, note: str | None = None) -> Alert:
        """``open → acknowledged`` (a cleared or transient alert: closed) by ``user``, with
        their note. Raises Forbidden (a viewer), AlertActionError (no such alert, or not in a
        state that can be acknowledged), StoreError."""
        await self._allowed(alert_id, user, "acknowledge", note)
        change = await self.store.acknowledge(alert_id, user.name, _note(note), self.clock(),
                                              publish=self.publish)
        self._done(change)
        return change.alert

    async def close(self, alert_id: int, user: User, note: str | None = None) -> Alert:
        """A supervisor closes an alert whatever its state (with a note saying why)."""
        await self._allowed(alert_id, user, "close", note)
        change = await self.store.close_alert(alert_id, user.name, _note(note), self.clock(),
                                              publish=self.publish)
        self._done(change)
        return change.alert

    async def acknowledge_incidents(self, incident_ids: Iterable[int], user: User,
                                    note: str | None = None) -> list[Alert]:
        """Acknowledge every alert waiting in each of these incidents (a bulk action of the
        alerts page): each alert acknowledged is its own audit line. Raises Forbidden (a
        viewer: the refusal audited on each incident). Alerts acknowledged or closed meanwhile
        are left as they are."""
        ids = list(dict.fromkeys(incident_ids))[:MAX_BULK]
        if not user.may("acknowledge"):
            for incident_id in ids:
                await self.store.audit_refusal(
                    incident_id, user.name, "acknowledge",
                    f"role {user.role}: {_note(note) or ''}".strip(), self.clock())
            log.warning("alert_action_refused", incidents=ids, user=user.name, role=user.role,
                        action="acknowledge")
            raise Forbidden(user, "acknowledge")
        done: list[Alert] = []
        for alert in await self.store.incident_alerts(ids):
            if alert.state not in _AWAITING:
                continue
            try:
                change = await self.store.acknowledge(alert.id, user.name, _note(note),
                                                      self.clock(), publish=self.publish)
            except AlertActionError:
                continue  # acknowledged or closed meanwhile (another person, another pit)
            self._done(change)
            done.append(change.alert)
        return done

    async def audit(self, alert_id: int, user: User) -> list[AuditEntry]:
        user.require("view")
        return await self.store.audit(alert_id)

    async def _allowed(self, alert_id: int, user: User, action: str, note: str | None) -> None:
        if user.may("acknowledge" if action == "acknowledge" else "close"):
            return
        log.warning("alert_action_refused", alert=alert_id, user=user.name, role=user.role,
                    action=action)
        await self.store.audit_refusal(alert_id, user.name, action,
                                       f"role {user.role}: {_note(note) or ''}".strip(),
                                       self.clock())
        raise Forbidden(user, action)

    def _done(self, change: AlertChange) -> None:
        log.info("alert_" + change.audit.action, alert=change.alert.id, by=change.audit.actor,
                 state=change.alert.state, kind=change.alert.kind,
                 table=f"{change.alert.site}/{change.alert.table}")
        if self.on_change is not None:
            self.on_change(change)


def _note(note: str | None) -> str | None:
    if note is None:
        return None
    note = note.strip()
    return note[:MAX_NOTE] if note else None


@dataclass(frozen=True, slots=True)
class _GapCheck:
    due: float
    site: str
    table: str
    stream: str
    first: int
    last: int


class AlertEngine:
    """Raises and clears alerts from what the tables publish and from timers."""

    def __init__(self, store: Store, floor: Floor, settings: AlertSettings, *, actor: str,
                 clock: Callable[[], float] = time.time,
                 on_change: Callable[[AlertChange], None] | None = None) -> None:
        self.store = store
        self.floor = floor
        self.settings = settings
        self.actor = actor
        self.clock = clock
        self.on_change = on_change
        self.desk = AlertDesk(store, publish=settings.publish, clock=clock,
                              on_change=self._changed)
        self._high: dict[tuple[str, str, str], int] = {}
        self._checks: list[_GapCheck] = []
        self._heard: dict[tuple[str, str], float] = {}
        self._silent: set[tuple[str, str]] = set()
        self._lost: set[tuple[str, str, str]] = set()
        self.counters = {"gaps": 0, "late": 0, "conflicts": 0}
        #: with reconciliation (:mod:`pit.reconcile`): a jump in ``table_seq`` is handed to it
        #: (``site, table, stream, first, last``) instead of a gap check of the engine's own
        self.on_gap: Callable[[str, str, str, int, int], None] | None = None

    async def start(self) -> None:
        """Pick up where the record is: each stream's highest number, the conditions open."""
        self._high = await self.store.high_water()
        now = self.clock()
        for model in self.floor.tables():
            # a restarted pit gives every table a full silence period before it complains
            self._heard[(model.site, model.table)] = now
        for alert in await self.store.alerts(kind="silent"):
            self._silent.add((alert.site, alert.table))
        for alert in await self.store.alerts(kind="device_lost"):
            self._lost.add((alert.site, alert.table, alert.subject))

    async def lead(self) -> None:
        """This server became the floor's leader: the silent tables the old leader found are
        picked up from the record (not raised again)."""
        self._silent = {(a.site, a.table) for a in await self.store.alerts(kind="silent")}

    # -- incidents and escalation ---------------------------------------------------------

    async def _incident(self, spec: AlertSpec) -> int | None:
        """The incident a new alert for ``spec`` joins (None: its own); nothing is looked up
        for a condition already open, which the store counts on its alert."""
        model = self.floor.table(spec.site, spec.table)
        if model is not None and any((a.kind, a.subject) == (spec.kind, spec.subject)
                                     for a in model.alerts.values()):
            return None
        window = self.settings.group_window
        if window <= 0:
            return None
        now = self.clock()
        recent = await self.store.alerts(site=spec.site, table=spec.table,
                                         states=(*LIVE_STATES, "closed"), limit=50)
        for other in recent:  # newest first
            if belongs(spec, other, now, window):
                return other.incident_id
        return None

    async def escalate(self) -> None:
        """Escalate each incident waiting for an acknowledgement longer than its severity's
        ``escalate_after`` (one level per period, up to ``escalate_levels``)."""
        now = self.clock()
        limits = self.settings.escalate_after
        for incident in floor_incidents(self.floor):
            waiting = incident.awaiting
            if not waiting:
                continue
            after = limits.get(incident.severity)
            if after is None:
                continue
            since = min(a.opened_at for a in waiting)
            level = min(self.settings.escalate_levels, int((now - since) // after))
            if level < 1 or level <= incident.escalation:
                continue
            target = min(waiting, key=lambda a: (_WORST.get(a.severity, 9), a.id))
            note = (f"{incident.severity} incident #{incident.id} not acknowledged for "
                    f"{now - since:.0f} s: level {level}")
            change = await self.store.escalate(target.id, level, self.actor, now, note,
                                               publish=self.settings.publish)
            if change is not None:
                log.warning("alert_escalated", alert=target.id, incident=incident.id,
                            level=level, severity=incident.severity,
                            table=f"{incident.site}/{incident.table}")
                self._changed(change)

    # -- what the tables publish ----------------------------------------------------------

    def heard(self, site: str, table: str, at: float) -> None:
        key = (site, table)
        self._heard[key] = max(self._heard.get(key, at), at)

    async def message(self, message: Message, recorded: Recorded | None,
                      applied: bool) -> None:
        """After the message was recorded (``recorded``; None for metrics, not recorded) and
        applied to the floor (``applied``: it was news to the live model)."""
        m = message
        self.heard(m.site, m.table, m.received_at)
        key = (m.site, m.table)
        if key in self._silent:
            await self._clear(m.site, m.table, "silent", "", "heard again")
            self._silent.discard(key)
        if recorded is None:
            return
        if recorded.status == "conflict":
            await self._conflict(m)
            return
        if not recorded.new:
            return
        if m.stream in DURABLE and m.table_seq is not None:
            await self._sequence(m, m.table_seq)
        channel = m.topic.channel
        if channel == "status" and applied:
            await self._status(m)
        elif channel == "device" and applied:
            await self._device(m)
        elif channel == "fault":
            await self._fault(m)
        elif m.outcome is not None and m.outcome.status == "void":
            o = m.outcome  # (a void record names both: the contract's decoder checked it)
            article = None if o.article is UNSET else o.article
            reason = None if o.void_reason is UNSET else o.void_reason
            await self._raise(AlertSpec(
                m.site, m.table, "void", f"round {o.round}", "minor",
                f"round {o.round} void [{article}]: {reason}",
                {"round": o.round, "game": o.game, "article": article,
                 "void_reason": reason, "table_seq": m.table_seq},
                transient=True))

    async def _status(self, m: Message) -> None:
        state, reason = m.payload.get("state"), m.payload.get("reason")
        if state == "online":
            await self._clear(m.site, m.table, "offline", "", "online again")
            await self._clear(m.site, m.table, "degraded", "", "online again")
        elif state == "degraded":
            await self._raise(AlertSpec(m.site, m.table, "degraded", "", "major",
                                        f"table degraded: {reason}", {"reason": reason}))
            await self._clear(m.site, m.table, "offline", "", "online (degraded)")
        elif state == "offline":
            shutdown = reason == "shutdown"
            text = "table shut down" if shutdown else \
                f"table offline: last will ({reason or 'connection lost'})"
            await self._raise(AlertSpec(m.site, m.table, "offline", "",
                                        "major" if shutdown else "critical", text,
                                        {"reason": reason, "table_seq": m.table_seq}))
            await self._clear(m.site, m.table, "degraded", "", "offline")
            if (m.site, m.table) in self._silent:
                await self._clear(m.site, m.table, "silent", "", "offline")
                self._silent.discard((m.site, m.table))

    async def _device(self, m: Message) -> None:
        device = m.topic.device
        assert device is not None
        state = str(m.payload.get("state"))
        # the daemon refused it: not the configured device (contract/devices.py)
        refused = (state == DeviceState.UNAVAILABLE
                   and m.payload.get("reason") == REASON_WRONG_DEVICE)
        family = m.payload.get("family")
        model = self.floor.table(m.site, m.table)
        declared = model.declared_devices() if model is not None else {}
        detail = {"device": device, "family": family, "state": state,
                  "detail": m.payload.get("error") or m.payload.get("reason")}
        expected = declared.get(device)
        wrong = refused or (bool(declared) and (
            device not in declared or (isinstance(family, str) and expected is not None
                                       and expected != family)))
        if wrong:
            why = (f"is not the configured one (refused: {detail['detail']})" if refused else
                   "is not declared by the table" if device not in declared else
                   f"is a {family}, the table declares a {expected}")
            await self._raise(AlertSpec(m.site, m.table, "wrong_device", device, "major",
                                        f"device {device} {why}",
                                        {**detail, "declared": declared}))
        elif state == DeviceState.CONNECTED:
            await self._clear(m.site, m.table, "wrong_device", device, "the right device")
        key = (m.site, m.table, device)
        if state == DeviceState.CONNECTED:
            await self._clear(m.site, m.table, "device_lost", device, "connected again")
            await self._clear(m.site, m.table, "device_unavailable", device, "connected")
            self._lost.discard(key)
        elif state == DeviceState.LOST:
            self._lost.add(key)
            await self._raise(AlertSpec(m.site, m.table, "device_lost", device, "major",
                                        f"device {device} lost: {detail['detail']}", detail))
        elif state == DeviceState.UNAVAILABLE and key not in self._lost and not refused:
            await self._raise(AlertSpec(m.site, m.table, "device_unavailable", device, "major",
                                        f"device {device} unavailable: {detail['detail']}",
                                        detail))

    async def _fault(self, m: Message) -> None:
        p = m.payload
        kind = p.get("type")
        if kind == "fault":
            code = str(p.get("code"))
            device = p.get("device")
            detail = {"code": code, "device": device, "detail": p.get("detail"),
                      "source": p.get("source"), "table_seq": m.table_seq}
            if code == faults.DEVICE_LOST and isinstance(device, str):
                self._lost.add((m.site, m.table, device))
                await self._raise(AlertSpec(m.site, m.table, "device_lost", device, "major",
                                            f"device {device} lost: {p.get('detail')}", detail))
                return
            what = faults.DESCRIPTIONS.get(code, code)
            subject = code if not isinstance(device, str) else f"{code}@{device}"
            text = f"{code}{' on ' + device if isinstance(device, str) else ''}: {what}"
            if p.get("detail"):
                text += f" ({p.get('detail')})"
            await self._raise(AlertSpec(m.site, m.table, "fault", subject,
                                        FAULT_SEVERITY.get(code, "major"), text, detail,
                                        transient=True))
        elif kind == "notice":
            code = str(p.get("code"))
            await self._raise(AlertSpec(
                m.site, m.table, "notice", code, "minor",
                f"rules notice {code} [{p.get('article')}]: {p.get('message')}",
                {"code": code, "article": p.get("article"), "message": p.get("message"),
                 "table_seq": m.table_seq}, transient=True))
        elif kind == "command_rejected":
            reason = str(p.get("reason"))
            await self._raise(AlertSpec(
                m.site, m.table, "command_rejected", reason,
                "critical" if reason == "forged" else "major",
                f"console command {p.get('command')} refused: {reason}",
                {"command": p.get("command"), "reason": reason, "detail": p.get("detail"),
                 "table_seq": m.table_seq}, transient=True))

    async def _conflict(self, m: Message) -> None:
        self.counters["conflicts"] += 1
        await self._raise(AlertSpec(
            m.site, m.table, "seq_conflict", f"{m.stream} {m.table_seq}", "critical",
            f"{m.stream} table_seq {m.table_seq} arrived again with other content "
            "(was the table's journal reset?)",
            # kept here so that the second message is not lost: the record keeps the first
            {"stream": m.stream, "table_seq": m.table_seq, "payload": m.text[:8192]},
            transient=True))

    # -- what other parts of the pit find ------------------------------------------------------

    async def raise_alert(self, spec: AlertSpec) -> None:
        """Raise an alert another part of the pit found (an integrity monitor's finding), or
        count it again on the one already open for its condition."""
        await self._raise(spec)

    async def clear_alert(self, site: str, table: str, kind: str, subject: str,
                          note: str) -> None:
        """The condition of an alert raised with :meth:`raise_alert` is over."""
        await self._clear(site, table, kind, subject, note)

    # -- sequence numbers -------------------------------------------------------------------

    async def _sequence(self, m: Message, seq: int) -> None:
        key = (m.site, m.table, m.stream)
        high = self._high.get(key)
        if high is None or seq == high + 1:
            # the first number heard of a stream starts it: what came before the pit is not
            # the pit's to miss
            self._high[key] = seq if high is None else max(high, seq)
            return
        if seq > high + 1:
            self._high[key] = seq
            if self.on_gap is not None:
                self.on_gap(m.site, m.table, m.stream, high + 1, seq - 1)
                return
            self._checks.append(_GapCheck(self.clock() + self.settings.gap_grace, m.site,
                                          m.table, m.stream, high + 1, seq - 1))
            return
        if self.on_gap is None:  # else the reconciler accounts for what arrives
            await self._late(m, seq)

    def highest(self, site: str, table: str, stream: str) -> int:
        """The highest number of a stream heard or recorded (-1: none)."""
        return self._high.get((site, table, stream), -1)

    async def gap_overdue(self, site: str, table: str, stream: str,
                          missing: list[tuple[int, int]], *, unrecoverable: bool,
                          why: str) -> None:
        """With reconciliation (:mod:`pit.reconcile`): numbers still missing
        ``reconcile.gap_deadline`` after they were first known missing (``why``: what the
        fetch came to), or numbers the table's journal no longer has (``unrecoverable``): a
        ``seq_gap`` naming them, one per stream and span."""
        if not missing:
            return
        self.counters["gaps"] += 1
        numbers = sum(b - a + 1 for a, b in missing)
        first, last = missing[0][0], missing[-1][1]
        detail: dict[str, Any] = {"stream": stream, "first": first, "last": last,
                                  "count": numbers, "missing": [[a, b] for a, b in missing],
                                  "unrecoverable": unrecoverable, "why": why}
        if numbers <= MAX_LISTED:
            detail["numbers"] = _expand(detail["missing"])
        text = self._gap_message(stream, _expand(detail["missing"])) if numbers <= MAX_LISTED \
            else f"{stream}: {numbers} messages missing (table_seq {_text(detail['missing'])})"
        text += ": the table's journal no longer has them" if unrecoverable else f" ({why})"
        subject = f"{stream} {first}-{last}"
        model = self.floor.table(site, table)
        live = None if model is None else next(
            (a for a in model.alerts.values() if a.kind == "seq_gap" and a.subject == subject),
            None)
        if live is not None and live.detail.get("unrecoverable") != unrecoverable:
            change = await self.store.update_alert(live.id, detail, text, self.actor,
                                                   self.clock(), why,
                                                   publish=self.settings.publish)
            if change is not None:
                self._changed(change)
            return
        await self._raise(AlertSpec(site, table, "seq_gap", subject, "major", text, detail))

    async def gap_progress(self, alert: Alert, missing: list[tuple[int, int]]) -> None:
        """What a ``seq_gap`` alert names is now ``missing`` (a part of it arrived, fetched
        or late): updated, or closed with a note once nothing is missing."""
        d = alert.detail
        before = [list(span) for span in d.get("missing", [])]
        now_missing = [[a, b] for a, b in missing]
        if now_missing == before:
            return
        arrived = sum(b - a + 1 for a, b in before) - sum(b - a + 1 for a, b in now_missing)
        note = f"{arrived} missing number{'s' if arrived != 1 else ''} arrived"
        if not now_missing:
            try:
                closed = await self.store.close_alert(
                    alert.id, self.actor, f"every missing number arrived ({note})",
                    self.clock(), publish=self.settings.publish)
            except AlertActionError:
                return  # closed meanwhile (a person, another pit server)
            log.info("alert_closed", alert=alert.id, kind="seq_gap", subject=alert.subject,
                     table=f"{alert.site}/{alert.table}")
            self._changed(closed)
            return
        count = sum(b - a + 1 for a, b in now_missing)
        detail = {**d, "missing": now_missing, "count": count}
        detail.pop("numbers", None)
        if count <= MAX_LISTED:
            detail["numbers"] = _expand(now_missing)
        text = f"{d.get('stream')}: {count} message{'s' if count != 1 else ''} missing " \
               f"(table_seq {_text(now_missing)})"
        change = await self.store.update_alert(alert.id, detail, text, self.actor,
                                               self.clock(), note, publish=self.settings.publish)
        if change is not None:
            self._changed(change)

    async def _late(self, m: Message, seq: int) -> None:
        """A number below the highest arrived for the first time: it may fill a gap."""
        model = self.floor.table(m.site, m.table)
        if model is None:
            return
        for alert in list(model.alerts.values()):
            d = alert.detail
            if alert.kind != "seq_gap" or d.get("stream") != m.stream \
                    or not d.get("first", 0) <= seq <= d.get("last", -1):
                continue
            self.counters["late"] += 1
            missing = await self.store.missing(m.site, m.table, m.stream, d["first"], d["last"])
            detail = {**d, "missing": ranges(missing), "count": len(missing),
                      "arrived_late": ranges([*_expand(d.get("arrived_late", [])), seq])}
            note = f"table_seq {seq} arrived late"
            if not missing:
                await self.store.update_alert(alert.id, detail, alert.message, self.actor,
                                              self.clock(), note, publish=False)
                await self._clear(m.site, m.table, "seq_gap", alert.subject,
                                  f"every missing number arrived late ({note})")
            else:
                change = await self.store.update_alert(
                    alert.id, detail, self._gap_message(m.stream, missing), self.actor,
                    self.clock(), note, publish=self.settings.publish)
                if change is not None:
                    self._changed(change)

    @staticmethod
    def _gap_message(stream: str, missing: list[int]) -> str:
        return (f"{stream}: {len(missing)} message{'s' if len(missing) != 1 else ''} missing "
                f"(table_seq {_text(ranges(missing))})")

    async def _check_gap(self, check: _GapCheck) -> None:
        missing = await self.store.missing(check.site, check.table, check.stream, check.first,
                                           check.last)
        if not missing:
            return
        self.counters["gaps"] += 1
        spans = ranges(missing)
        detail: dict[str, Any] = {"stream": check.stream, "first": check.first,
                                  "last": check.last, "count": len(missing), "missing": spans}
        if len(missing) <= MAX_LISTED:
            detail["numbers"] = missing
        await self._raise(AlertSpec(check.site, check.table, "seq_gap",
                                    f"{check.stream} {check.first}-{check.last}", "major",
                                    self._gap_message(check.stream, missing), detail))

    # -- timers -------------------------------------------------------------------------------

    async def tick(self, *, leader: bool = True) -> None:
        """Gap checks that are due (this server's: it recorded what started them),
        escalations and silent tables (the floor's leader's, :mod:`pit.leader`). Call every
        half second or so."""
        now = self.clock()
        due = [c for c in self._checks if c.due <= now]
        self._checks = [c for c in self._checks if c.due > now]
        for check in due:
            await self._check_gap(check)
        if not leader:
            return
        await self.escalate()
        for model in self.floor.tables():
            key = (model.site, model.table)
            heard = self._heard.setdefault(key, now)
            if model.state == "online" and key not in self._silent \
                    and now - heard > self.settings.silence_after:
                self._silent.add(key)
                await self._raise(AlertSpec(
                    model.site, model.table, "silent", "", "major",
                    f"table online but silent for {now - heard:.0f} s",
                    {"last_heard": heard, "silence_after": self.settings.silence_after}))

    # -- helpers ------------------------------------------------------------------------------

    async def _raise(self, spec: AlertSpec) -> None:
        if spec.incident is None:
            joins = await self._incident(spec)
            if joins is not None:
                spec = replace(spec, incident=joins)
        change = await self.store.raise_alert(spec, self.actor, self.clock(),
                                              publish=self.settings.publish)
        if change is not None:
            log.warning("alert_" + change.audit.action, alert=change.alert.id, kind=spec.kind,
                        subject=spec.subject, severity=spec.severity, message=spec.message,
                        table=f"{spec.site}/{spec.table}")
            self._changed(change)

    async def _clear(self, site: str, table: str, kind: str, subject: str, note: str) -> None:
        change = await self.store.clear_alert(site, table, kind, subject, self.actor,
                                              self.clock(), note, publish=self.settings.publish)
        if change is not None:
            log.info("alert_cleared", alert=change.alert.id, kind=kind, subject=subject,
                     state=change.alert.state, table=f"{site}/{table}")
            self._changed(change)

    def _changed(self, change: AlertChange) -> None:
        self.floor.alert_changed(change.alert)
        if self.on_change is not None:
            self.on_change(change)


def _expand(spans: Iterable[Iterable[int]]) -> list[int]:
    out: list[int] = []
    for span in spans:
        a, b = list(span)
        out.extend(range(a, b + 1))
    return out
