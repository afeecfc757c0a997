"""The page's reports: the form, the report, its files.

============================  ===============================================================
``GET /reports``              the form: the period (local to ``[reports] timezone``), one
                              table or the floor, the language
``GET /reports/view?…``       the report as a page, with links to its CSV and PDF
``GET /reports/file?…``       the report as a file (``format=html|csv|pdf``), to download
============================  ===============================================================

Owns these routes and reading the form; the figures and the files are :mod:`tabled.pit.report`'s
(from the record only). Any user who may view the floor may make a report; a report changes
nothing, so it needs no CSRF token. A period that cannot be read is the form again with the
reason (400).
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tabled.pit.auth import User
from tabled.pit.i18n import DEFAULT, LANGUAGES
from tabled.pit.report import FORMATS, MEDIA_TYPES, render
from tabled.pit.report.figures import Report, gather
from tabled.pit.report.period import PeriodError, ended_shifts, parse_period
from tabled.pit.report.render_html import body
from tabled.pit.store import StoreError
from tabled.pit.web.port import PitPort

#: The form's time fields (``datetime-local``).
FIELD_TIME = "%Y-%m-%dT%H:%M"


class PitWeb(Protocol):
    """What these routes use of the page (:class:`tabled.pit.web.app.PitWeb`)."""

    port: PitPort

    def user(self, request: Request) -> User | None: ...

    def may_view(self, user: User | None) -> bool: ...

    def login_redirect(self, request: Request) -> Response: ...

    def render(self, request: Request, name: str, status: int = 200,
               **context: Any) -> Response: ...

    def error(self, request: Request, status: int, title: str, text: str) -> Response: ...


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def routes(web: PitWeb) -> list[Route]:
    """The report routes of ``web`` (app.py's route list takes them)."""
    pages = ReportPages(web)
    return [Route("/reports", pages.form), Route("/reports/view", pages.view),
            Route("/reports/file", pages.file)]


class ReportPages:
    def __init__(self, web: PitWeb) -> None:
        self.web = web
        self.settings = web.port.reports

    def _local(self, t: float) -> str:
        return datetime.fromtimestamp(t, ZoneInfo(self.settings.timezone)).strftime(FIELD_TIME)

    def _tables(self) -> list[str]:
        return sorted(f"{t['site']}/{t['table']}" for t in self.web.port.floor.tiles())

    def _form(self, request: Request, status: int = 200, error: str | None = None,
              chosen: dict[str, str] | None = None) -> Response:
        now = time.time()
        shifts = ended_shifts(self.settings.shifts, self.settings.timezone, now)
        since, until = shifts[-1] if shifts else (now - 8 * 3600, now)
        values = {"from": self._local(since), "to": self._local(until), "table": "",
                  "lang": self.settings.language, **(chosen or {})}
        return self.web.render(request, "reports.html", status=status, error=error,
                               values=values, tables=self._tables(), languages=LANGUAGES,
                               timezone=self.settings.timezone)

    def _query(self, request: Request) -> dict[str, str]:
        q = request.query_params
        return {"from": q.get("from", ""), "to": q.get("to", ""), "table": q.get("table", ""),
                "lang": q.get("lang", self.settings.language)}

    async def _report(self, values: dict[str, str]) -> Report:
        try:
            since, until = parse_period(values["from"], values["to"], self.settings.timezone)
        except PeriodError as exc:
            raise _Refused(str(exc)) from None
        if values["lang"] not in LANGUAGES:
            raise _Refused(f"lang: one of {', '.join(LANGUAGES)}")
        site = table = None
        if values["table"]:
            site, sep, table = values["table"].partition("/")
            if not sep or not site or not table:
                raise _Refused("table: SITE/TABLE, or none for the floor")
        return await gather(self.web.port.record, since, until, made_at=time.time(),
                            timezone=self.settings.timezone, site=site, table=table)

    async def _guarded(self, request: Request, answer: Any) -> Response:
        web = self.web
        if not web.may_view(web.user(request)):
            return web.login_redirect(request)
        values = self._query(request)
        try:
            response: Response = await answer(request, values)
            return response
        except _Refused as exc:
            return self._form(request, 400, exc.reason, values)
        except StoreError as exc:
            return web.error(request, 503, "The record is not answering", str(exc))

    async def form(self, request: Request) -> Response:
        web = self.web
        if not web.may_view(web.user(request)):
            return web.login_redirect(request)
        chosen = {k: v for k, v in self._query(request).items() if v}
        return self._form(request, chosen=chosen)

    async def view(self, request: Request) -> Response:
        async def answer(request: Request, values: dict[str, str]) -> Response:
            report = await self._report(values)
            language = values["lang"] or DEFAULT
            links = {fmt: "/reports/file?" + urlencode({**values, "format": fmt})
                     for fmt in FORMATS}
            return self.web.render(request, "report.html", report_body=body(report, language),
                                   links=links, values=values)

        return await self._guarded(request, answer)

    async def file(self, request: Request) -> Response:
        async def answer(request: Request, values: dict[str, str]) -> Response:
            fmt = request.query_params.get("format", "pdf")
            if fmt not in FORMATS:
                raise _Refused(f"format: one of {', '.join(FORMATS)}")
            report = await self._report(values)
            data = await asyncio.to_thread(render, report, fmt, values["lang"])
            since = datetime.fromtimestamp(report.since, ZoneInfo(report.timezone))
            scope = (report.scope or "floor").replace("/", "-")
            name = f"report-{scope}-{since:%Y-%m-%d-%H%M}.{fmt}"
            return Response(data, media_type=MEDIA_TYPES[fmt], headers={
                "Content-Disposition": f'attachment; filename="{name}"'})

        return await self._guarded(request, answer)
