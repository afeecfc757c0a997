"""The tables' scoreboard displays: the road board on the screen beside a table, for the players.

=======================================  ====================================================
``GET /display/{site}/{table}?token=…``  the display's page, full-screen, in its language
``GET /display/{site}/{table}/events``   its server-sent events (``?token=…`` too): the
                                         board, redrawn when the table's panel changes
``GET /static/display.css``              the displays' stylesheet: the pit's display sheet,
                                         then each game's ``display_stylesheet``
=======================================  ====================================================

This module owns those routes and the check of a display's token; never sign-in, sessions or
anything of the supervisor's page. A display is configured per table (``[[displays]]``,
:class:`~tabled.pit.config.DisplaySettings`) with a token of its own; it needs no sign-in. A
request whose token is missing or matches no display of that table is refused with the same
403 whatever the table (the answer never says whether the table exists), logged
(``display_refused``, without the token) and counted (``pit_display_refused``). Tokens are
compared in constant time (their SHA-256 digests, with :func:`hmac.compare_digest`, against
every display's, so neither the time nor the length tells anything).

A display shows only what its game's pit part draws from the table's panel with
``display_view`` (games/parts/pit.py): what the players may see. It reads no alert, no fault,
no device, no other table, and links nowhere; a game without a display part shows "no
scoreboard". Its page has the supervisor's page's headers (the CSP: no inline style or
script).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import jinja2
import structlog
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tabled.contract.secrets import SecretError, read_secret
from tabled.games import registry
from tabled.pit.config import DISPLAY_TOKEN, DisplaySettings
from tabled.pit.errors import PitError
from tabled.pit.i18n import translations
from tabled.pit.model import Change, game_title, pit_part
from tabled.pit.web.live import View, stream
from tabled.pit.web.port import PitPort

log = structlog.get_logger("tabled.pit.web")

HERE = Path(__file__).resolve().parent
#: The ``lang`` of a display's page, by the pit's language.
HTML_LANG = {"zh_Hant": "zh-Hant", "en": "en", "pt": "pt"}


class DisplayTokenError(PitError, SecretError):
    """A display's token file that cannot serve (unreadable, readable by others, malformed)."""


@dataclass(frozen=True, slots=True)
class Display:
    """One configured display, its token read: the digest it is compared by."""

    site: str
    table: str
    language: str
    digest: bytes
    #: its address on this pit, token included (the supervisor's page links to it)
    url: str


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def load_displays(settings: Sequence[DisplaySettings]) -> list[Display]:
    """The configured displays with their tokens; a token file that cannot serve is a
    :class:`DisplayTokenError` naming the key (the pit refuses to start, as for its other
    secrets)."""
    out = []
    for index, entry in enumerate(settings):
        token = entry.token
        if entry.token_file is not None:
            try:
                token = read_secret(entry.token_file).decode(errors="replace")
            except SecretError as exc:
                raise DisplayTokenError(f"displays.{index}.token_file: {exc}") from None
            if not re.match(DISPLAY_TOKEN, token):
                raise DisplayTokenError(
                    f"displays.{index}.token_file: {entry.token_file} does not hold a display "
                    "token (32 to 256 characters of A-Z, a-z, 0-9, _ and -)")
        assert token is not None  # DisplaySettings asks for one of the two
        url = (f"/display/{quote(entry.site)}/{quote(entry.table_name)}"
               f"?token={quote(token)}")
        out.append(Display(entry.site, entry.table_name, entry.language, _digest(token), url))
    return out


class Displays:
    """The display routes of one pit's web page."""

    def __init__(self, port: PitPort, env: jinja2.Environment,
                 stopping: asyncio.Event) -> None:
        self.port = port
        self.env = env
        self.stopping = stopping
        self.displays = load_displays(port.displays)
        #: one environment per language: the page's loaders, extensions, filters and globals,
        #: with the language's translations installed
        self._envs: dict[str, jinja2.Environment] = {}
        self.css = self._stylesheet()
        #: the supervisor's tile and table page link a table's (first) display
        env.globals["display_url"] = self.url_of
        self.css_etag = '"' + hashlib.sha256(self.css).hexdigest()[:32] + '"'

    def url_of(self, site: str, table: str) -> str | None:
        """The address of table ``site/table``'s first display; None: it has none."""
        return next((d.url for d in self.displays if (d.site, d.table) == (site, table)),
                    None)

    def routes(self) -> list[Route]:
        return [Route("/display/{site}/{table}", self.page),
                Route("/display/{site}/{table}/events", self.events),
                Route("/static/display.css", self.stylesheet)]

    # -- the token ------------------------------------------------------------------------------

    def display(self, request: Request) -> Display | None:
        """The display this request's token opens for its table; None (logged, counted) when
        the token is missing or opens no display of that table."""
        site, table = request.path_params["site"], request.path_params["table"]
        token = request.query_params.get("token", "")
        given = _digest(token)
        found = None
        for display in self.displays:  # every one, whatever matched: the time says nothing
            if hmac.compare_digest(display.digest, given) and (
                    display.site, display.table) == (site, table):
                found = display
        if found is None:
            reason = "no_token" if not token else "bad_token"
            log.warning("display_refused", reason=reason, site=site[:64], table=table[:64],
                        client=request.client.host if request.client else "?")
            self.port.display_refused(reason)
        return found

    def refused(self) -> Response:
        return HTMLResponse(self.env.get_template("display_refused.html").render(),
                            status_code=403)

    # -- rendering ------------------------------------------------------------------------------

    def environment(self, language: str) -> jinja2.Environment:
        env = self._envs.get(language)
        if env is None:
            base = self.env
            env = jinja2.Environment(
                loader=base.loader, extensions=list(base.extensions),
                autoescape=base.autoescape, trim_blocks=base.trim_blocks,
                lstrip_blocks=base.lstrip_blocks, undefined=base.undefined)
            env.filters.update(base.filters)
            env.globals.update(base.globals)
            env.install_gettext_translations(  # type: ignore[attr-defined]
                translations(language), newstyle=True)
            self._envs[language] = env
        return env

    def board(self, display: Display) -> str:
        """The board fragment: the table's name and game, and the game's display of the
        table's panel (or a word saying why there is none)."""
        panel = self.port.floor.panel(display.site, display.table)
        game = None if panel is None else panel.get("game")
        part = pit_part(game) if isinstance(game, str) else None
        drawn = (part is not None and part.display_template is not None
                 and part.display_view is not None)
        return self.environment(display.language).get_template("_display_board.html").render(
            site=display.site, table=display.table,
            title=game_title(game) if isinstance(game, str) else "",
            template=f"{game}/{part.display_template}" if drawn and part else None,
            view=dict(part.display_view(panel or {})) if drawn and part and part.display_view
            else {}, waiting=panel is None)

    async def page(self, request: Request) -> Response:
        display = self.display(request)
        if display is None:
            return self.refused()
        env = self.environment(display.language)
        html = env.get_template("display.html").render(
            table=display.table, lang=HTML_LANG.get(display.language, "en"),
            board=self.board(display),
            events=f"/display/{quote(display.site)}/{quote(display.table)}/events?token="
                   f"{quote(request.query_params.get('token', ''))}")
        return HTMLResponse(html)

    async def events(self, request: Request) -> Response:
        display = self.display(request)
        if display is None:
            return self.refused()
        view = View("table", display.site, display.table)
        shown: dict[str, str] = {}

        async def fragments(batch: set[Change] | None) -> AsyncIterator[tuple[str, str]]:
            if batch is not None and not any(view.concerns(c) for c in batch):
                return
            html = self.board(display)
            if batch is None or shown.get("board") != html:
                shown["board"] = html
                yield "board", html

        return EventSourceResponse(
            stream(self.port.changes.subscribe(), fragments, self.stopping), ping=15,
            headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    # -- the stylesheet -------------------------------------------------------------------------

    def _stylesheet(self) -> bytes:
        """The display's sheet, then each game's display sheet (one that does not load is
        logged and left out)."""
        sheets = [(HERE / "static" / "display.css").read_text(encoding="utf-8")]
        loader = self.env.loader
        for game in registry.game_names():  # a game whose part does not load: pit_part logs it
            part = pit_part(game)
            if part is None or part.display_stylesheet is None or loader is None:
                continue
            try:
                sheets.append(loader.get_source(self.env, f"{game}/{part.display_stylesheet}")[0])
            except jinja2.TemplateNotFound as exc:
                log.error("display_stylesheet_unusable", game=game, error=str(exc))
        return "\n".join(sheets).encode()

    async def stylesheet(self, request: Request) -> Response:
        if request.headers.get("if-none-match") == self.css_etag:
            return Response(status_code=304, headers={"etag": self.css_etag})
        return Response(self.css, media_type="text/css", headers={"etag": self.css_etag})
