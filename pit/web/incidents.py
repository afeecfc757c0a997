"""The page's incidents: alerts grouped as people handle them, their bulk acknowledgement and
the shift handover.

Owns ``POST /incidents/acknowledge`` (a selection of incidents, through the alert desk, which
checks the role and audits each alert it acknowledges or each refusal), ``GET /handover`` (what
is open, what happened since a time, who did what) and the incident views the alerts pages
show (:func:`incident_rows`, :func:`incident_view`). Never decides what belongs together: that
is :mod:`tabled.pit.alerts`' rule, kept in the record.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tabled.pit.alerts import Incident, floor_incidents, incidents
from tabled.pit.auth import Forbidden, User
from tabled.pit.i18n import N_
from tabled.pit.store import Alert, AuditEntry, StoreError
from tabled.pit.web.port import PitPort, WebRecord


class Page(Protocol):
    """What these routes use of the page (:class:`tabled.pit.web.app.PitWeb`)."""

    port: PitPort

    def user(self, request: Request) -> User | None: ...

    def may_view(self, user: User | None) -> bool: ...

    def render(self, request: Request, name: str, status: int = 200,
               **context: Any) -> HTMLResponse: ...

    def error(self, request: Request, status: int, title: str, text: str) -> HTMLResponse: ...

    def login_redirect(self, request: Request) -> RedirectResponse: ...

__all__ = ["Incident", "TimelineEntry", "floor_incidents", "incident_rows", "incident_view",
           "incidents", "routes", "summary_counts"]

#: The handover looks back this many hours unless told otherwise, and at most this many.
HANDOVER_HOURS = 8.0
MAX_HOURS = 168.0
#: Alerts and audit lines the handover reads at most.
HANDOVER_LISTED = 2000
#: Most incidents one bulk action acknowledges (the desk's own limit is the same or higher).
MAX_SELECTED = 500


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One line of an incident's timeline: an audit entry and the alert it is about."""

    entry: AuditEntry
    alert: Alert


async def incident_rows(record: WebRecord, alerts: Sequence[Alert]) -> list[Incident]:
    """The incidents ``alerts`` belong to, each with every alert it has (closed ones too)."""
    ids = {a.incident_id for a in alerts}
    if not ids:
        return []
    return incidents(await record.incident_alerts(sorted(ids)))


async def incident_view(record: WebRecord, alert: Alert) -> dict[str, Any]:
    """The incident of one alert and its timeline (every audit line of its alerts, in order)."""
    members = await record.incident_alerts([alert.incident_id]) or [alert]
    (incident,) = incidents(members)
    timeline = [TimelineEntry(e, a) for a in incident.alerts for e in await record.audit(a.id)]
    timeline.sort(key=lambda t: (t.entry.at, t.entry.id))
    return {"incident": incident, "timeline": timeline}


def summary_counts(found: Iterable[Incident]) -> dict[str, int]:
    """The header's counts of ``found`` (the floor's incidents, :func:`floor_incidents`):
    incidents waiting for an acknowledgement, critical ones, escalated ones."""
    waiting = [i for i in found if i.needs_ack]
    return {"unacknowledged": len(waiting),
            "critical": sum(1 for i in waiting if i.severity == "critical"),
            "escalated": sum(1 for i in waiting if i.escalation)}


def _since(request: Request, now: float) -> tuple[float, float | None, str | None]:
    """``?since=`` (ISO 8601, local time if no offset) or ``?hours=``: the time the handover
    looks back to, the hours (None: a time was given) and a problem with the input."""
    q = request.query_params
    given = (q.get("since") or "").strip()
    if given:
        try:
            at = datetime.fromisoformat(given)
        except ValueError:
            return now - HANDOVER_HOURS * 3600, HANDOVER_HOURS, "since"
        at = at if at.tzinfo is not None else at.astimezone()
        return min(at.timestamp(), now), None, None
    raw = q.get("hours")
    if raw is None:
        return now - HANDOVER_HOURS * 3600, HANDOVER_HOURS, None
    try:
        hours = float(raw)
    except ValueError:
        return now - HANDOVER_HOURS * 3600, HANDOVER_HOURS, "hours"
    if not 0 < hours <= MAX_HOURS:
        return now - HANDOVER_HOURS * 3600, HANDOVER_HOURS, "hours"
    return now - hours * 3600, hours, None


def routes(web: Page) -> list[Route]:
    """This module's routes on ``web``'s page: a page needs a user who may view, an action a
    signed-in user (the desk checks the role); a record that fails is the 503 page."""

    def page(endpoint: Any, *, acting: bool = False) -> Any:
        async def route(request: Request) -> Response:
            user = web.user(request)
            if user is None if acting else not web.may_view(user):
                return web.login_redirect(request)
            try:
                return await endpoint(web, request)  # type: ignore[no-any-return]
            except StoreError as exc:
                return web.error(request, 503, "The record is not answering", str(exc))
        return route

    async def acknowledge(self: Page, request: Request) -> Response:
        user = self.user(request)
        assert user is not None  # page(acting=True) let a signed-in user through only
        form = await request.form(max_fields=MAX_SELECTED + 10, max_files=0)
        chosen: list[int] = []
        for value in form.getlist("incident"):
            text = str(value)
            if not text.isdigit():
                return self.error(request, 400, N_("Not an incident"), text[:40])
            chosen.append(int(text))
        if not chosen:
            return self.error(request, 400, N_("Nothing selected"),
                              N_("Select the incidents to acknowledge."))
        if len(chosen) > MAX_SELECTED:
            return self.error(request, 400, N_("Too many selected"),
                              N_("At most %(n)s incidents at once.") % {"n": MAX_SELECTED})
        note = str(form.get("note") or "")[:4000] or None
        try:
            await self.port.desk.acknowledge_incidents(chosen, user, note)
        except Forbidden as exc:  # audited by the desk
            return self.error(request, 403, "Not allowed", str(exc))
        back = str(form.get("back") or "")
        return RedirectResponse(back if back.startswith("/alerts") else "/alerts",
                                status_code=303)

    async def handover(self: Page, request: Request) -> Response:
        now = time.time()
        since, hours, problem = _since(request, now)
        record = self.port.record
        alerts = await record.alerts_since(since, limit=HANDOVER_LISTED)
        groups = await incident_rows(record, alerts)
        still_open = [i for i in groups if i.state != "closed"]
        happened = [i for i in groups if i.last_seen >= since or i.opened_at >= since
                    or any((a.closed_at or 0) >= since or (a.acked_at or 0) >= since
                           for a in i.alerts)]
        audit = await record.audit_since(since, limit=HANDOVER_LISTED)
        people = [e for e in audit if not e.actor.startswith("pit:")]
        by_table: dict[str, int] = {}
        for i in happened:
            key = f"{i.site}/{i.table}"
            by_table[key] = by_table.get(key, 0) + 1
        return self.render(request, "handover.html", since=since, hours=hours,
                           problem=problem, still_open=still_open, happened=happened,
                           people=people, by_table=sorted(by_table.items()),
                           live_url="/events?view=static")

    return [
        Route("/incidents/acknowledge", page(acknowledge, acting=True), methods=["POST"]),
        Route("/handover", page(handover)),
    ]
