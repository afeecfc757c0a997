"""The page's routes: the floor, a table, recall, the alerts desk, sign-in, the live stream.

============================  ===============================================================
``GET /``                     the floor: a tile per table
``GET /table/{site}/{table}`` a table: its state and devices, and its game's panel (the
                              game's pit part draws it: games/parts/pit.py)
``GET …/recall``              the table's last 10 rounds from the record: every event, card
                              and settlement (GLI-11 recall)
``GET /alerts``               every alert (``?state=`` filter) and the latest actions
``GET /alerts/{id}``          one alert, its audit trail, and (for a supervisor) its actions
``POST /alerts/{id}/acknowledge``, ``POST /alerts/{id}/close``  through the alert desk
``GET|POST /login``, ``POST /logout``  sign-in (argon2 via :mod:`tabled.pit.auth`)
``GET /events``               the page's server-sent events (:mod:`tabled.pit.web.live`)
``GET /display/…``            a table's scoreboard display, by token, no sign-in
                              (:mod:`tabled.pit.web.display`)
``GET /reports``, ``/reports/view``, ``/reports/file``  shift and day reports
                              (:mod:`tabled.pit.web.reports`)
``GET /healthz``              the service's health (JSON; 503 while the store fails)
``/metrics``                  Prometheus (the port's ``metrics_app``)
``/static/…``                 the stylesheet, the page script, vendored htmx
============================  ===============================================================

Every page needs a signed-in user (``viewer`` or ``supervisor``) unless ``[web]
anonymous_view``; acting needs a supervisor, which the desk checks and audits (a refused
attempt is audited there, so this layer never pre-empts it). A session is a row of the record
(:mod:`tabled.pit.web.sessions`) whose random id rides in Starlette's signed cookie
(itsdangerous), ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over TLS: every request looks it
up, so sign-out and a changed password end it on the server, not only in the browser. Every
state-changing request needs the CSRF token (:mod:`tabled.pit.web.security`); sign-in is
throttled per user name and address and audited.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import jinja2
import structlog
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from tabled.games import registry
from tabled.pit import i18n
from tabled.pit.auth import Forbidden, User, Users
from tabled.pit.config import WebSettings
from tabled.pit.i18n import N_
from tabled.pit.model import Change, game_title, pit_part
from tabled.pit.store import LIVE_STATES, AlertActionError, StoreError, WebSession
from tabled.pit.web import history, incidents, present, reports
from tabled.pit.web.display import Displays
from tabled.pit.web.live import View, stream
from tabled.pit.web.port import PitPort
from tabled.pit.web.security import SecurityHeaders, SignInThrottle, csrf_protect
from tabled.pit.web.sessions import Sessions

log = structlog.get_logger("tabled.pit.web")

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "pit_session"
#: Alerts listed on the alerts page, and actions in its "latest actions".
ALERTS_LISTED = 300
AUDIT_LISTED = 40
#: Sign-in audit lines a supervisor sees on the alerts page.
SIGN_INS_LISTED = 20
#: Paths that need no session (nothing is looked up for them).
NO_SESSION = ("/static/", "/metrics", "/healthz")
#: The alerts panel shown on every page lists this many (the rest: a count and a link).
PANEL_ALERTS = 12
#: Longest note accepted (the desk cuts at its own limit too).
MAX_FIELD = 4000
STATE_FILTERS: dict[str, tuple[str, ...]] = {
    "live": LIVE_STATES, "open": ("open",), "acknowledged": ("acknowledged",),
    "cleared": ("cleared",), "closed": ("closed",), "all": (*LIVE_STATES, "closed"),
}


def _game_templates() -> dict[str, jinja2.BaseLoader]:
    """Each installed game's templates (package data of its package, games/parts/pit.py),
    under the game's name: ``craps/panel.html``. A game whose part or templates do not load
    is logged and drawn with the generic panel."""
    try:
        names = list(registry.games())
    except registry.BadGame as exc:
        log.error("games_unusable", error=str(exc))
        return {}
    loaders: dict[str, jinja2.BaseLoader] = {}
    for name in names:
        part = pit_part(name)
        if part is None:
            continue
        try:
            loaders[name] = jinja2.PackageLoader(part.package, "templates")
        except (ValueError, ImportError) as exc:
            log.error("pit_templates_unusable", game=name, package=part.package, error=str(exc))
    return loaders


def panel_template(game: str | None) -> str | None:
    """The template of game ``game``'s panel on its table page (the generic one for a game
    with no pit part)."""
    part = pit_part(game)
    if part is None:
        return "_outcomes.html"
    return f"{game}/{part.panel_template}"


def recall_template(game: Any) -> str | None:
    """The template of a recalled round's outcome at game ``game``; None: none."""
    part = pit_part(game) if isinstance(game, str) else None
    if part is None or part.recall_template is None:
        return None
    return f"{game}/{part.recall_template}"


def panel_view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """A table's panel (the model's dict) as its template lays it out."""
    game = panel.get("game")
    part = pit_part(game) if isinstance(game, str) else None
    if part is not None:
        return dict(part.view(panel))
    return {"outcomes": list(reversed(list(panel.get("outcomes") or [])))}


def _stylesheet(env: jinja2.Environment) -> bytes:
    """The page's stylesheet (``/static/pit.css``): the pit's own, then each game's (its pit
    part's ``stylesheet``, in the games' order). A game's that does not load is logged and
    left out: its panel shows unstyled, the page still works."""
    sheets = [(HERE / "static" / "pit.css").read_text(encoding="utf-8")]
    loader = env.loader
    for name in _game_templates():
        part = pit_part(name)
        if part is None or part.stylesheet is None or loader is None:
            continue
        try:
            sheets.append(loader.get_source(env, f"{name}/{part.stylesheet}")[0])
        except jinja2.TemplateNotFound as exc:
            log.error("pit_stylesheet_unusable", game=name, error=str(exc))
    return "\n".join(sheets).encode()


def _environment() -> jinja2.Environment:
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(HERE / "templates"),
                                  jinja2.PrefixLoader(_game_templates())])
    # auto_reload off: the templates are the installed package's, and looking at each file's
    # time on every render was a system call per fragment (at 1,000 tables, hundreds a second)
    env = jinja2.Environment(loader=loader, extensions=["jinja2.ext.i18n"],
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, auto_reload=False)
    env.install_null_translations(newstyle=True)  # type: ignore[attr-defined]
    # what a template imported without the render's context (its macros) calls: the language
    # of the render under way in this task (English outside any), never a request's global
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=lambda s: _rendering().gettext(s),
        ngettext=lambda s, p, n: _rendering().ngettext(s, p, n),
        pgettext=lambda c, s: _rendering().pgettext(c, s),
        npgettext=lambda c, s, p, n: _rendering().npgettext(c, s, p, n), newstyle=True)
    env.filters.update(card=present.card, cards=present.cards, clock=present.clock,
                       stamp=present.stamp, iso=present.iso,
                       quote=lambda s: quote(str(s), safe=""), article=_article,
                       tr=_word, bet=_bet, outcome_line=_outcome_line)
    env.globals.update(PIPS=present.PIPS, ago=_ago, ago_formats=_ago_formats,
                       game_title=game_title, recall_template=recall_template)
    return env


# -- languages (tabled.pit.i18n; docs/pit.md "Languages") ---------------------------------------
#: The cookie that remembers a browser's ``?lang=`` choice.
LANGUAGE_COOKIE = "pit_lang"
LANGUAGE_COOKIE_AGE = 365 * 86400
#: The language of the request being served (set by :class:`_Language` for its task, which the
#: live stream's tasks inherit): :meth:`PitWeb.fragment`'s language when none is given.
_request_language: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "pit_request_language", default=None)


def _rendering() -> Any:
    """The translations of the render under way in this task (English outside any)."""
    return i18n.translations(_request_language.get() or "en")


def _language_of(context: jinja2.runtime.Context) -> str:
    """A filter's language: its render's, also in a template imported without context."""
    return str(context.get("language") or _request_language.get() or i18n.DEFAULT)


def _chosen_language(scope: Scope) -> str | None:
    """The request's ``?lang=`` when it is one of the pit's languages."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("lang") or [None]
    language = values[-1]
    return language if language in i18n.LANGUAGES else None


def request_language(scope: Scope, default: str) -> str:
    """A request's language: ``?lang=``, else the cookie's remembered choice, else the
    browser's ``Accept-Language``, else ``default`` (``[web] language``)."""
    chosen = _chosen_language(scope)
    if chosen is not None:
        return chosen
    headers = {k.decode("latin-1").lower(): v.decode("latin-1")
               for k, v in scope.get("headers") or ()}
    remembered = cookie_parser(headers.get("cookie", "")).get(LANGUAGE_COOKIE)
    if remembered in i18n.LANGUAGES:
        return str(remembered)
    return i18n.negotiate(headers.get("accept-language")) or default


class _Language:
    """Resolves each request's language (:func:`request_language`) into
    ``scope["pit_language"]`` and the request's context; a ``?lang=`` choice is remembered in
    a cookie set on whatever the answer is (a page, a redirect to sign-in)."""

    def __init__(self, app: ASGIApp, default: str, tls: bool) -> None:
        self.app = app
        self.default = default
        self.tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        language = request_language(scope, self.default)
        scope["pit_language"] = language
        chosen = _chosen_language(scope)
        cookie = (f"{LANGUAGE_COOKIE}={chosen}; Path=/; Max-Age={LANGUAGE_COOKIE_AGE}; "
                  f"HttpOnly; SameSite=Lax{'; Secure' if self.tls else ''}") if chosen else None

        async def remembering(message: Any) -> None:
            if cookie and message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"],
                                      (b"set-cookie", cookie.encode("latin-1"))]
            await send(message)

        token = _request_language.set(language)
        try:
            await self.app(scope, receive, remembering)
        finally:
            _request_language.reset(token)


def _language_context(request: Request | None, language: str) -> dict[str, Any]:
    """What a render binds for ``language``: its gettext callables, its name, and (for a
    page) the chooser's links to this page in each language."""
    context: dict[str, Any] = {**i18n.jinja_gettext(language), "language": language,
                               "html_lang": i18n.HTML_LANG[language]}
    if request is not None:
        context["language_links"] = [
            (code, i18n.NAMES[code], i18n.HTML_LANG[code],
             request.url.path + "?" + str(request.url.include_query_params(lang=code).query))
            for code in i18n.LANGUAGES]
    return context


@jinja2.pass_context
def _article(context: jinja2.runtime.Context, code: object) -> str:
    """``{{ o.article|article }}``: a rule's article as the render's language names it."""
    if code is None:
        return ""
    return i18n.article(code, _language_of(context))


@jinja2.pass_context
def _ago(context: jinja2.runtime.Context, ts: float | None, now: float) -> str:
    """``{{ ago(t.since, now) }}``: how long ago, in the render's language."""
    return present.ago(ts, now, i18n.translations(_language_of(context)).gettext)


@jinja2.pass_context
def _ago_formats(context: jinja2.runtime.Context) -> str:
    """The four forms of "how long ago" in the render's language, for the page's script
    (base.html's ``data-ago-formats``), which keeps the labels current."""
    gettext = i18n.translations(_language_of(context)).gettext
    return json.dumps([gettext(form) for form in present.AGO], ensure_ascii=False)


@jinja2.pass_context
def _word(context: jinja2.runtime.Context, value: object) -> str:
    """``{{ a.kind|tr }}``: a word of the record (``device_lost``) in the render's language
    (its msgid ``device lost`` is marked in :data:`present.WORDS`); one not in the catalogue
    shows as it is."""
    if value is None:
        return ""
    return i18n.translations(_language_of(context)).gettext(present.word(value))


@jinja2.pass_context
def _bet(context: jinja2.runtime.Context, name: object) -> str:
    """``{{ name|bet }}``: a bet's name in the render's language (:func:`present.bet`)."""
    return present.bet(name, i18n.translations(_language_of(context)).gettext)


@jinja2.pass_context
def _outcome_line(context: jinja2.runtime.Context, outcome: Mapping[str, Any] | None) -> str:
    """``{{ t.last_outcome|outcome_line }}``: a tile's last outcome in the render's language
    (its ``phrase``, :func:`tabled.pit.i18n.phrase`), else its line as kept."""
    if not outcome:
        return "—"
    language = _language_of(context)
    if outcome.get("phrase"):
        return i18n.phrase(outcome["phrase"], language)
    return str(outcome.get("line") or "").replace("_", " ")


_Endpoint = Callable[["PitWeb", Request], Awaitable[Response]]


def _page(*, acting: bool = False) -> Callable[[_Endpoint], _Endpoint]:
    """A route's sign-in check and its answer while the record fails, written once.

    A page needs a user who may view (or ``[web] anonymous_view``), an action
    (``acting``) a signed-in user (the desk checks the role and audits a refusal); else the
    browser goes to sign-in. A :class:`~tabled.pit.store.StoreError` from the route is the
    error page with 503 "The record is not answering" and the store's reason.
    """

    def wrap(endpoint: _Endpoint) -> _Endpoint:
        @functools.wraps(endpoint)
        async def route(self: PitWeb, request: Request) -> Response:
            user = self.user(request)
            if user is None if acting else not self.may_view(user):
                return self.login_redirect(request)
            try:
                return await endpoint(self, request)
            except StoreError as exc:
                return self.error(request, 503, N_("The record is not answering"), str(exc))
        return route
    return wrap


class PitWeb:
    """The web layer of one running pit service, which it reaches only through its
    :class:`~tabled.pit.web.port.PitPort`."""

    def __init__(self, port: PitPort, settings: WebSettings, secret: str) -> None:
        self.port = port
        self.settings = settings
        #: (language, site, table) → (the table's version, the second, its tile): tile_html
        self._tiles: dict[tuple[str, str, str], tuple[int, int, str]] = {}
        self.users = Users(port.users)
        self.throttle = SignInThrottle(settings.sign_in_failures, settings.sign_in_window,
                                       settings.sign_in_address_failures)
        self.sessions = Sessions(port.record, self.users, settings, port.pit_id,
                                 port.audit_days)
        self.env = _environment()
        self.env.globals["tile_game"] = self.tile_game
        self.css = _stylesheet(self.env)
        self.css_etag = '"' + hashlib.sha256(self.css).hexdigest()[:32] + '"'
        #: set when the server stops: the live streams end, so shutdown does not wait
        self.stopping = asyncio.Event()
        routes = [
            Route("/", self.floor_page),
            Route("/table/{site}/{table}", self.table_page),
            Route("/table/{site}/{table}/recall", self.recall_page),
            *history.routes(self),
            Route("/alerts", self.alerts_page),
            Route("/alerts/{alert_id:int}", self.alert_page),
            Route("/alerts/{alert_id:int}/{action:str}", self.alert_action, methods=["POST"]),
            *incidents.routes(self),
            Route("/login", self.login_page, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/events", self.events),
            *Displays(port, self.env, self.stopping).routes(),  # the tables' displays
            Route("/healthz", self.healthz),
            Route("/static/pit.css", self.stylesheet),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
            Route("/metrics", _Asgi(port.metrics_app)),
            *reports.routes(self),
        ]
        inner = Starlette(routes=routes, middleware=[
            Middleware(SessionMiddleware, secret_key=secret, session_cookie=SESSION_COOKIE,
                       max_age=settings.session_max_age, same_site="strict",
                       https_only=settings.uses_tls),
            Middleware(_SessionLookup, sessions=self.sessions)])
        self.app: ASGIApp = SecurityHeaders(_Language(
            csrf_protect(inner, secret=secret, tls=settings.uses_tls,
                         refused=self._csrf_refused), settings.language, settings.uses_tls),
            tls=settings.uses_tls)

    # -- helpers ----------------------------------------------------------------------------

    def user(self, request: Request) -> User | None:
        session = request.scope.get("pit_session")
        return self.users.get(session.user) if isinstance(session, WebSession) else None

    def may_view(self, user: User | None) -> bool:
        return (user is not None and user.may("view")) or self.settings.anonymous_view

    def render(self, request: Request, name: str, status: int = 200,
               language: str | None = None, **context: Any) -> HTMLResponse:
        """A page in ``language`` (a display's configured one), else the request's."""
        user = self.user(request)
        token = request.scope["csrftoken"]() if "csrftoken" in request.scope else ""
        visible = self.may_view(user)  # nothing of the floor before sign-in
        live_url = context.pop("live_url", None)
        language = self.language(request, language)
        rendering = _request_language.set(language)  # this task's, for the render's macros
        try:
            html = self.env.get_template(name).render(
                request=request, user=user, csrf=token, now=time.time(),
                summary=self.summary() if visible else None,
                panel_alerts=self.panel_alerts() if visible else [],
                live_url=live_url if visible else None,
                **_language_context(request, language), **context)
        finally:
            _request_language.reset(rendering)
        return HTMLResponse(html, status_code=status)

    def language(self, request: Request | None = None, language: str | None = None) -> str:
        """``language`` if given, else the request's (:class:`_Language`), else the live
        stream's, else ``[web] language``."""
        scoped = request.scope.get("pit_language") if request is not None else None
        return i18n.choose(language or scoped or _request_language.get(),
                           self.settings.language)

    def fragment(self, name: str, language: str | None = None, **context: Any) -> str:
        language = self.language(None, language)
        rendering = _request_language.set(language)  # this task's, for the render's macros
        try:
            return self.env.get_template(name).render(
                now=time.time(), **_language_context(None, language), **context)
        finally:
            _request_language.reset(rendering)

    def tile_html(self, site: str, table: str, language: str | None = None) -> str | None:
        """A table's floor tile in ``language`` (else this task's), or None for a table the
        floor does not know. Every live page of a language shares one rendering of a tile
        while its table is unchanged (:attr:`TableModel.version`) within the same second
        (the tile's clock labels and its rounds in the last hour are worked out to the
        second; the page's own script keeps the labels current). At 1,000 tables with two
        live streams open, rendering each changed tile once per stream was about a sixth of
        a pit's busy time (py-spy on bench/scale.py's pit A)."""
        model = self.port.floor.table(site, table)
        if model is None:
            return None
        language = self.language(None, language)
        key, second = (language, site, table), int(self.port.floor.clock())
        kept = self._tiles.get(key)
        if kept is not None and kept[0] == model.version and kept[1] == second:
            return kept[2]
        tile = self.port.floor.tile(site, table)
        if tile is None:
            return None
        html = self.fragment("_tile.html", language, t=tile)
        self._tiles[key] = (model.version, second, html)
        return html

    def summary(self) -> dict[str, Any]:
        floor = self.port.floor
        states = floor.states()
        return {"tables": sum(states.values()), **states, "alerts": len(floor.alerts()),
                **incidents.summary_counts(incidents.floor_incidents(floor)),
                "broker": self.port.broker_connected(),
                "store": self.port.store_failure() is None}

    def panel_alerts(self) -> list[Any]:
        """The incidents of the alerts not closed, those waiting first (the panel's list)."""
        return incidents.floor_incidents(self.port.floor)

    def tile_game(self, tile: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a table's game draws in its floor tile (its pit part's ``tile_template``, with
        ``view``), or None."""
        part = pit_part(tile.get("game"))
        if part is None or part.tile_template is None:
            return None
        panel = self.port.floor.panel(str(tile.get("site")), str(tile.get("table")))
        if panel is None:
            return None
        return {"template": f"{tile.get('game')}/{part.tile_template}",
                "view": panel_view(panel)}

    def login_redirect(self, request: Request) -> RedirectResponse:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)

    def gettext(self, request: Request, message: str, **values: Any) -> str:
        """``message`` (marked ``N_``) in the request's language, ``%(name)s`` filled in."""
        text = i18n.translations(self.language(request)).gettext(message)
        return text % values if values else text

    def error(self, request: Request, status: int, title: str, text: str,
              **values: Any) -> HTMLResponse:
        """The error page: ``title`` and ``text`` are msgids (``N_``) in the request's
        language, ``text``'s ``%(name)s`` filled in from ``values`` (a text that is not in
        the catalogue, a store's reason, shows as it is)."""
        return self.render(request, "error.html", status=status,
                           title=self.gettext(request, title),
                           text=self.gettext(request, text, **values))

    # -- pages ------------------------------------------------------------------------------

    @_page()
    async def floor_page(self, request: Request) -> Response:
        return self.render(request, "floor.html", tiles=self.port.floor.tiles(),
                           live_url="/events?view=floor")

    def table_context(self, site: str, table: str) -> dict[str, Any] | None:
        floor = self.port.floor
        tile = floor.tile(site, table)
        if tile is None:
            return None
        panel = floor.panel(site, table)
        game = None if panel is None else panel.get("game")
        return {"tile": tile, "game": game,
                "view": {} if panel is None else panel_view(panel),
                "panel_template": None if panel is None else panel_template(game),
                "table_alerts": present.worst_first(floor.alerts(site, table))}

    @_page()
    async def table_page(self, request: Request) -> Response:
        site, table = request.path_params["site"], request.path_params["table"]
        context = self.table_context(site, table)
        if context is None:
            return self.error(request, 404, N_("No such table"),
                              N_("The pit has heard nothing from %(table)s."),
                              table=f"{site}/{table}")
        return self.render(request, "table.html", site=site, table=table, **context,
                           live_url=f"/events?view=table&site={quote(site)}"
                                    f"&table={quote(table)}")

    @_page()
    async def recall_page(self, request: Request) -> Response:
        site, table = request.path_params["site"], request.path_params["table"]
        tile = self.port.floor.tile(site, table)
        rounds = await self.port.record.recall(site, table, 10)
        if tile is None and not rounds:
            return self.error(request, 404, N_("No such table"),
                              N_("The record has nothing of %(table)s."),
                              table=f"{site}/{table}")
        return self.render(request, "recall.html", site=site, table=table, tile=tile,
                           rounds=list(reversed(rounds)), settlement=present.settlement,
                           event_line=functools.partial(
                               present.event_line, gettext=i18n.translations(
                                   self.language(request)).gettext),
                           event_cards=present.event_cards,
                           live_url="/events?view=static")

    async def alerts_context(self, state: str) -> dict[str, Any]:
        store = self.port.record
        alerts = await store.alerts(states=STATE_FILTERS[state], limit=ALERTS_LISTED)
        # people's and the rules' actions, not each repeat (those are the incidents' timelines)
        audit = [e for e in await store.audit(limit=AUDIT_LISTED * 4)
                 if e.action != "repeated"][:AUDIT_LISTED]
        return {"alerts": alerts, "audit": audit, "state": state,
                "incidents": await incidents.incident_rows(store, alerts),
                "filters": list(STATE_FILTERS)}

    @_page()
    async def alerts_page(self, request: Request) -> Response:
        state = request.query_params.get("state", "live")
        if state not in STATE_FILTERS:
            state = "live"
        user = self.user(request)
        context = await self.alerts_context(state)
        # who signed in, failed, was throttled, signed out: for a supervisor
        sign_ins = (await self.port.record.sign_in_audit(limit=SIGN_INS_LISTED)
                    if user is not None and user.role == "supervisor" else None)
        return self.render(request, "alerts.html", **context, sign_ins=sign_ins,
                           live_url=f"/events?view=alerts&state={state}")

    async def alert_context(self, alert_id: int) -> dict[str, Any] | None:
        alert = await self.port.record.alert(alert_id)
        if alert is None:
            return None
        return {"alert": alert, "trail": await self.port.record.audit(alert_id),
                **await incidents.incident_view(self.port.record, alert)}

    @_page()
    async def alert_page(self, request: Request) -> Response:
        alert_id = int(request.path_params["alert_id"])
        context = await self.alert_context(alert_id)
        if context is None:
            return self.error(request, 404, N_("No such alert"),
                              N_("There is no alert %(id)s."), id=alert_id)
        alert = context["alert"]
        return self.render(request, "alert.html", **context,
                           live_url=f"/events?view=alert&id={alert_id}"
                                    f"&site={quote(alert.site)}&table={quote(alert.table)}")

    # -- actions ----------------------------------------------------------------------------

    @_page(acting=True)
    async def alert_action(self, request: Request) -> Response:
        user = self.user(request)
        assert user is not None  # _page(acting=True) let a signed-in user through only
        alert_id = int(request.path_params["alert_id"])
        action = request.path_params["action"]
        if action not in ("acknowledge", "close"):
            return self.error(request, 404, N_("No such action"), "%(action)s",
                              action=action)
        form = await request.form(max_fields=10, max_files=0)
        note = str(form.get("note") or "")[:MAX_FIELD] or None
        desk = self.port.desk
        try:
            if action == "acknowledge":
                await desk.acknowledge(alert_id, user, note)
            else:
                await desk.close(alert_id, user, note)
        except Forbidden as exc:  # audited by the desk
            return self.error(request, 403, N_("Not allowed"), "%(reason)s", reason=str(exc))
        except AlertActionError as exc:
            return self.error(request, 409, N_("That cannot be done"), "%(reason)s",
                              reason=str(exc))
        return RedirectResponse(f"/alerts/{alert_id}", status_code=303)

    async def login_page(self, request: Request) -> Response:
        target = _local(request.query_params.get("next"))
        if request.method == "GET":
            return self.render(request, "login.html", next=target, failed=None)
        form = await request.form(max_fields=10, max_files=0)
        name = str(form.get("name") or "")[:128]
        password = str(form.get("password") or "")[:MAX_FIELD]
        target = _local(str(form.get("next") or "")) or target
        client = _client(request)
        refusal = self.throttle.refused(client, name)
        if refusal is not None:
            log.warning("sign_in_throttled", user=name, client=client, scope=refusal.scope,
                        retry_after=refusal.retry_after)
            await self.sessions.audit_throttled(refusal.scope, name, client,
                                                refusal.retry_after)
            too_many = (N_("Too many failed sign-ins for this name from your address: try "
                           "again in %(wait)s.") if refusal.scope == "user" else
                        N_("Too many failed sign-ins for any name from your address: try "
                           "again in %(wait)s."))
            response = self.render(
                request, "login.html", status=429, next=target, retry_after=refusal.retry_after,
                failed=self.gettext(request, too_many,
                                    wait=present.duration(
                                        refusal.retry_after,
                                        i18n.translations(self.language(request)).gettext)))
            response.headers["retry-after"] = str(refusal.retry_after)
            return response
        user = await asyncio.to_thread(self.users.authenticate, name, password)
        if user is None:
            self.throttle.failed(client, name)
            reason = "unknown_user" if self.users.get(name) is None else "bad_password"
            log.warning("sign_in_failed", user=name, client=client, reason=reason)
            await self.sessions.audit(name, client, "failed", reason)
            return self.render(request, "login.html", status=401, next=target,
                               failed=self.gettext(request, N_("Sign-in failed.")))
        self.throttle.succeeded(client, name)
        old = request.session.get("sid")
        try:
            session_id = await self.sessions.start(
                user, client, replaces=old if isinstance(old, str) else None)
        except StoreError as exc:
            log.error("sign_in_unrecorded", user=user.name, client=client, error=str(exc))
            return self.error(request, 503, N_("The record is not answering"),
                              N_("Sign-in needs the record, which is not answering: try "
                                 "again in a moment."))
        request.session.clear()
        request.session["sid"] = session_id
        return RedirectResponse(target or "/", status_code=303)

    async def logout(self, request: Request) -> Response:
        session_id = request.session.get("sid")
        request.session.clear()
        if isinstance(session_id, str):
            await self.sessions.end(session_id, "signed_out", _client(request))
        return RedirectResponse("/login", status_code=303)

    async def _csrf_refused(self, scope: Scope, send: Send, reason: Any) -> None:
        log.warning("csrf_refused", path=scope.get("path"), method=scope.get("method"),
                    reason=getattr(reason, "name", str(reason)))
        html = self.fragment("refused.html")
        response = HTMLResponse(html, status_code=403)
        await response({"type": "http"}, _nothing, send)

    # -- live ---------------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        user = self.user(request)
        if not self.may_view(user):
            return Response("sign in first", status_code=401)
        q = request.query_params
        view = View(q.get("view", "floor"), q.get("site"), q.get("table"),
                    int(q["id"]) if q.get("id", "").isdigit() else None,
                    q.get("state") if q.get("state") in STATE_FILTERS else "live")
        known: set[tuple[str, str]] = set()
        #: what this page shows now of the summary and of each tile: a fragment the page
        #: already shows is not sent again (the summary rarely changes with a batch; a tile's
        #: model may change without its tile changing), so the browser swaps only what changed
        shown: dict[str, str] = {}
        #: the summary's figures this page shows: rendered again only when they change
        summarised: list[dict[str, Any]] = []

        def new(name: str, html: str) -> bool:
            if shown.get(name) == html:
                return False
            shown[name] = html
            return True

        async def fragments(batch: set[Change] | None) -> AsyncIterator[tuple[str, str]]:
            everything = batch is None or any(c.what == "floor" for c in batch)
            mine = [c for c in batch or () if view.concerns(c)]
            figures = self.summary()
            if everything or summarised != [figures]:
                summarised[:] = [figures]
                summary = self.fragment("_summary.html", summary=figures)
                if new("summary", summary) or everything:
                    yield "summary", summary
            if everything or any(c.what == "alerts" for c in batch or ()):
                yield "alerts-panel", self.fragment("_alerts_panel.html", user=user,
                                                    panel_alerts=self.panel_alerts())
            if view.name == "floor":
                floor = self.port.floor
                changed = {(c.site, c.table) for c in mine if c.site and c.table}
                if everything or not changed <= known:
                    tiles = floor.tiles()
                    known.clear()
                    known.update((t["site"], t["table"]) for t in tiles)
                    rendered: dict[str, str] = {}
                    for t in tiles:
                        html = self.tile_html(t["site"], t["table"])
                        if html is not None:
                            rendered[f"tile:{t['site']}/{t['table']}"] = html
                    for name in [n for n in shown if n.startswith("tile:")]:
                        del shown[name]  # the floor's own tiles replace them
                    shown.update(rendered)
                    yield "floor", self.fragment("_floor.html", tiles=tiles, rendered=rendered)
                    return
                for site, table in sorted(changed):  # only the tiles that changed
                    html = self.tile_html(site, table)
                    if html is not None:
                        name = f"tile:{site}/{table}"
                        if new(name, html):
                            yield name, html
            elif view.name == "table" and view.site and view.table:
                if everything or mine:
                    context = self.table_context(view.site, view.table)
                    if context is not None:
                        html = self.fragment("_table_live.html", user=user, **context)
                        if new("table", html) or everything:
                            yield "table", html
            elif view.name == "alerts" and (everything or mine):
                try:
                    context = await self.alerts_context(view.state or "live")
                except StoreError:
                    return
                yield "alerts-table", self.fragment("_alerts_table.html", user=user,
                                                    **context)
                yield "audit-log", self.fragment("_audit_log.html", **context)
            elif view.name == "alert" and view.alert_id is not None and (everything or mine):
                try:
                    found = await self.alert_context(view.alert_id)
                except StoreError:
                    return
                if found is not None:
                    yield "alert", self.fragment("_alert_state.html", user=user, **found)

        session = request.scope.get("pit_session")

        async def guarded() -> AsyncIterator[ServerSentEvent | bytes]:
            # the stream ends with the server or with its session (sign-out, password change)
            ended = asyncio.Event()
            guard = asyncio.create_task(self.sessions.guard(
                session if isinstance(session, WebSession) else None, ended, self.stopping))
            try:
                async for event in stream(self.port.changes.subscribe(), fragments, ended):
                    yield event
            finally:
                guard.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await guard

        return EventSourceResponse(
            guarded(), ping=15,
            headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def stylesheet(self, request: Request) -> Response:
        """The page's stylesheet, the pit's and every game's (:func:`_stylesheet`)."""
        if request.headers.get("if-none-match") == self.css_etag:
            return Response(status_code=304, headers={"etag": self.css_etag})
        return Response(self.css, media_type="text/css", headers={"etag": self.css_etag})

    async def healthz(self, request: Request) -> Response:
        port = self.port
        failure = port.store_failure()
        body: Mapping[str, Any] = {
            "status": "ok" if failure is None else "store_failing",
            "broker": "up" if port.broker_connected() else "down",
            "store": failure or "ok",
            "tables": port.floor.states(),
            "alerts": len(port.floor.alerts()),
        }
        return JSONResponse(body, status_code=200 if failure is None else 503)


class _SessionLookup:
    """Inside the session cookie's middleware: looks the cookie's session up in the record
    (``scope["pit_session"]``: the valid :class:`WebSession` or None); an ended or unknown one
    empties the cookie's content, so the response clears the cookie."""

    def __init__(self, app: ASGIApp, sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not str(scope.get("path", "")).startswith(NO_SESSION):
            cookie = scope.get("session")
            session_id = cookie.get("sid") if isinstance(cookie, dict) else None
            found = (await self.sessions.resolve(session_id) if isinstance(session_id, str)
                     else None)
            if found is None and cookie:
                cookie.clear()
            scope["pit_session"] = found
        await self.app(scope, receive, send)


class _Asgi:
    """An ASGI app as a route's endpoint (Starlette calls an object that is not a function
    as ASGI): ``/metrics`` itself, with no redirect to ``/metrics/``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


async def _nothing() -> Any:
    return {"type": "http.disconnect"}


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _local(target: str | None) -> str | None:
    """A redirect target only within this site (no ``//host``, no scheme)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return None
    return target
