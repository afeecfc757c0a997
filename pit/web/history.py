"""The history pages: any recorded round of a table, paged, and its segments of play (a
baccarat table's shoes, each with its scoreboard).

==============================================  ==============================================
``GET /table/{site}/{table}/history``           the table's rounds, newest first, from the
                                                record: ``?round=`` (start at that round),
                                                ``?from=&to=`` (received, local time),
                                                ``?size=``, the cursors ``?before=`` /
                                                ``?after=``; each round with its events, its
                                                settlement and the faults that touched it
``GET …/history/segments``                      the table's segments (shoes), newest first
``GET …/history/segments/{number}``             one segment: the game's view of its rounds
                                                (baccarat: the shoe's roads)
==============================================  ==============================================

Owns these routes and the reading of their query; never a game's name (a game's part says what
its history draws: games/parts/pit.py ``history``, ``history_segment``), and never an event
of a round without its outcome (the store gives settled rounds only).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tabled.contract.outcome import OutcomeError, OutcomeRecord
from tabled.games.parts.pit import PitPart
from tabled.games.registry import decode_outcome
from tabled.pit.i18n import N_
from tabled.pit.model import pit_part
from tabled.pit.store import RoundQuery, StoreError
from tabled.pit.web.port import PitPort

#: Rounds a history page shows unless ``?size=`` says otherwise, and the most it shows.
PAGE_SIZE = 20
MAX_SIZE = 100
#: Segments listed on a page.
SEGMENTS_LISTED = 30


class PitWeb(Protocol):
    """What the history asks of the running page (:class:`tabled.pit.web.app.PitWeb`)."""

    port: PitPort

    def user(self, request: Request) -> Any: ...

    def may_view(self, user: Any) -> bool: ...

    def login_redirect(self, request: Request) -> RedirectResponse: ...

    def render(self, request: Request, name: str, status: int = 200,
               **context: Any) -> HTMLResponse: ...

    def error(self, request: Request, status: int, title: str, text: str) -> HTMLResponse: ...


class BadQuery(ValueError):
    """A query parameter the history cannot read: its name and why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name, self.reason = name, reason


def _number(q: Mapping[str, str], name: str, low: int = 0,
            high: int = 2**63 - 1) -> int | None:
    text = q.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise BadQuery(name, N_("not a whole number")) from None
    if not low <= value <= high:
        raise BadQuery(name, N_("out of range"))
    return value


def _time(q: Mapping[str, str], name: str) -> float | None:
    """A local date and time (``2026-12-04T13:05``, as the browser's date-time field sends
    it; or a date) as epoch seconds."""
    text = q.get(name, "").strip()
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise BadQuery(name, N_("not a date and time (YYYY-MM-DDTHH:MM)")) from None


def round_query(q: Mapping[str, str]) -> RoundQuery:
    """The rounds a history page's query asks for (:class:`BadQuery` if it cannot be read)."""
    since, until = _time(q, "from"), _time(q, "to")
    if since is not None and until is not None and since > until:
        raise BadQuery("to", N_("before from"))
    return RoundQuery(before=_number(q, "before"), after=_number(q, "after"),
                      round=_number(q, "round"), since=since, until=until,
                      size=_number(q, "size", 1, MAX_SIZE) or PAGE_SIZE)


def outcome_records(payloads: Sequence[Mapping[str, Any]]) -> list[OutcomeRecord]:
    """The typed outcome records of recorded payloads; one the decoder refuses is left out."""
    out = []
    for payload in payloads:
        try:
            out.append(decode_outcome(dict(payload)))
        except OutcomeError:
            continue
    return out


def _game_of(web: PitWeb, site: str, table: str,
             payloads: Sequence[Mapping[str, Any]]) -> str | None:
    for payload in payloads:
        if isinstance(payload.get("game"), str):
            return str(payload["game"])
    panel = web.port.floor.panel(site, table)
    game = None if panel is None else panel.get("game")
    return game if isinstance(game, str) else None


async def _recorded_game(web: PitWeb, site: str, table: str) -> str | None:
    """The table's game: the live floor's, else its latest recorded outcome's."""
    game = _game_of(web, site, table, [])
    if game is None:
        latest = await web.port.record.round_page(site, table, RoundQuery(size=1))
        game = _game_of(web, site, table, [r.outcome for r in latest.rounds])
    return game


def _part(game: str | None) -> PitPart | None:
    return pit_part(game) if game is not None else None


_Handler = Callable[["PitWeb", Request, str, str], Awaitable[Response]]


def _page(handler: _Handler) -> Callable[[PitWeb], Callable[[Request], Awaitable[Response]]]:
    """A history page as the app's pages are: a user who may view (else sign-in), a bad query
    a 400 naming the parameter, a failing record a 503."""

    def bind(web: PitWeb) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            if not web.may_view(web.user(request)):
                return web.login_redirect(request)
            site, table = request.path_params["site"], request.path_params["table"]
            try:
                return await handler(web, request, site, table)
            except BadQuery as exc:
                return web.error(request, 400, N_("That query cannot be read"),
                                 f"{exc.name}: {exc.reason}")
            except StoreError as exc:
                return web.error(request, 503, "The record is not answering", str(exc))
        return endpoint
    return bind


@_page
async def rounds_page(web: PitWeb, request: Request, site: str, table: str) -> Response:
    query = round_query(request.query_params)
    page = await web.port.record.round_page(site, table, query)
    tile = web.port.floor.tile(site, table)
    if tile is None and not page.rounds and query == RoundQuery(size=query.size):
        return web.error(request, 404, "No such table",
                         f"The record has nothing of {site}/{table}.")
    payloads = [r.outcome for r in page.rounds]
    game = _game_of(web, site, table, payloads)
    part = _part(game)
    view = None
    if part is not None and part.history is not None and part.history_segment is None:
        view = part.history(outcome_records(payloads[::-1]))
    return web.render(
        request, "history.html", site=site, table=table, tile=tile, page=page, query=query,
        form=dict(request.query_params), game=game, part=part, h=view,
        history_template=None if view is None or part is None
        else f"{game}/{part.history_template}",
        live_url="/events?view=static")


@_page
async def segments_page(web: PitWeb, request: Request, site: str, table: str) -> Response:
    q = request.query_params
    game = await _recorded_game(web, site, table)
    part = _part(game)
    if part is None or part.history_segment is None:
        return web.error(request, 404, "No segments",
                         f"{site}/{table}'s game has no segments of play.")
    segments = await web.port.record.segments(
        site, table, part.history_segment, before=_number(q, "before"),
        since=_time(q, "from"), until=_time(q, "to"), size=SEGMENTS_LISTED)
    return web.render(request, "history_segments.html", site=site, table=table,
                      segments=segments, part=part, form=dict(q), listed=SEGMENTS_LISTED,
                      live_url="/events?view=static")


@_page
async def segment_page(web: PitWeb, request: Request, site: str, table: str) -> Response:
    number = int(request.path_params["number"])
    game = await _recorded_game(web, site, table)
    part = _part(game)
    if part is None or part.history_segment is None:
        return web.error(request, 404, "No segments",
                         f"{site}/{table}'s game has no segments of play.")
    segment = await web.port.record.segment(site, table, part.history_segment, number)
    if segment is None:
        return web.error(request, 404, "No such segment",
                         f"The record has no segment {number} of {site}/{table}.")
    stored = await web.port.record.segment_outcomes(site, table, segment)
    outcomes = [m.payload for m in stored]
    view = part.history(outcome_records(outcomes)) if part.history is not None else None
    later = await web.port.record.segment(site, table, part.history_segment, number + 1)
    return web.render(
        request, "history_segment.html", site=site, table=table, segment=segment, part=part,
        h=view, history_template=None if view is None else f"{game}/{part.history_template}",
        outcomes=outcomes, later=later is not None, live_url="/events?view=static")


def routes(web: PitWeb) -> list[Route]:
    """The history's routes, bound to the running page."""
    base = "/table/{site}/{table}/history"
    return [Route(base, rounds_page(web)),
            Route(base + "/segments", segments_page(web)),
            Route(base + "/segments/{number:int}", segment_page(web))]
