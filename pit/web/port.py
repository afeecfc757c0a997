"""What the web page may reach of the running pit: :class:`PitPort`, built by the service.

Owns the narrow interface between the pit service and its web layer; never the service object
itself. The service (:mod:`tabled.pit.service`) builds a port and hands it to
:class:`~tabled.pit.web.server.WebServer`; nothing under :mod:`tabled.pit.web` imports the
service (an import-linter contract checks it), so the pit has no import circle.

A port holds the floor's read model, the alert desk (people's actions, role-checked and
audited there), the record's queries the pages and sessions call (:class:`WebRecord`), the
change feed the live streams follow, two readings of the service's health (the broker's
connection, the store's failure), the metrics' ASGI app, and the displays' settings with
the counter of refused display requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tabled.pit.alerts import AlertDesk
from tabled.pit.config import DisplaySettings, ReportSettings, UserSettings
from tabled.pit.model import ChangeFeed, Floor
from tabled.pit.report.figures import ReportRecord
from tabled.pit.store import (
    LIVE_STATES,
    Alert,
    AuditEntry,
    RecalledRound,
    RoundPage,
    RoundQuery,
    Segment,
    SignInEntry,
    StoredMessage,
    WebSession,
)


class WebRecord(ReportRecord, Protocol):
    """The record's queries the web layer calls (a :class:`~tabled.pit.store.Store` is one)."""

    async def recall(self, site: str, table: str, last: int = 10) -> list[RecalledRound]: ...

    async def round_page(self, site: str, table: str, query: RoundQuery) -> RoundPage: ...

    async def segments(self, site: str, table: str, event_type: str, *,
                       before: int | None = None, since: float | None = None,
                       until: float | None = None, size: int = 20) -> list[Segment]: ...

    async def segment(self, site: str, table: str, event_type: str,
                      number: int) -> Segment | None: ...

    async def segment_outcomes(self, site: str, table: str, segment: Segment,
                               limit: int = 2000) -> list[StoredMessage]: ...

    async def alert(self, alert_id: int) -> Alert | None: ...

    async def alerts(self, *, site: str | None = None, table: str | None = None,
                     states: Sequence[str] = LIVE_STATES, kind: str | None = None,
                     limit: int = 1000) -> list[Alert]: ...

    async def audit(self, alert_id: int | None = None, *,
                    limit: int = 200) -> list[AuditEntry]: ...

    async def incident_alerts(self, incidents: Sequence[int]) -> list[Alert]: ...

    async def alerts_since(self, since: float, *, limit: int = 1000) -> list[Alert]: ...

    async def audit_since(self, since: float, *, limit: int = 1000) -> list[AuditEntry]: ...

    async def start_session(self, session: WebSession) -> SignInEntry: ...

    async def web_session(self, id_hash: str) -> WebSession | None: ...

    async def touch_session(self, id_hash: str, now: float) -> bool: ...

    async def end_session(self, id_hash: str, reason: str, now: float, *,
                          client: str | None = None, pit: str = "") -> SignInEntry | None: ...

    async def live_sessions(self, limit: int = 10_000) -> list[WebSession]: ...

    async def record_sign_in(self, at: float, user: str, client: str, action: str,
                             reason: str | None, pit: str) -> SignInEntry: ...

    async def sign_in_audit(self, *, user: str | None = None,
                            limit: int = 100) -> list[SignInEntry]: ...

    async def purge_sign_in(self, sessions_before: float,
                            audit_before: float) -> dict[str, int]: ...



@dataclass(frozen=True)
class PitPort:
    """Exactly what the web layer needs of one running pit service."""

    #: the pit's id (sign-in audit lines name it)
    pit_id: str
    #: the config's users (name, password hash, role)
    users: Sequence[UserSettings]
    #: how long sign-in audit lines and ended sessions are kept, days
    audit_days: float
    #: the floor's read model (tiles, panels, live alerts)
    floor: Floor
    #: people's actions on alerts
    desk: AlertDesk
    #: the record's queries
    record: WebRecord
    #: what changed, for the live streams
    changes: ChangeFeed
    #: whether the broker is connected now
    broker_connected: Callable[[], bool]
    #: the store's failure now (None while it answers)
    store_failure: Callable[[], str | None]
    #: ``/metrics`` (Prometheus' ASGI app)
    metrics_app: Any
    #: the tables' scoreboard displays (``[[displays]]``)
    displays: Sequence[DisplaySettings] = ()
    #: counts one refused display request (a wrong or missing token), by reason
    display_refused: Callable[[str], None] = lambda reason: None
    #: the reports' settings (time zone, shifts, the default language): ``/reports``
    reports: ReportSettings = field(default_factory=ReportSettings)
