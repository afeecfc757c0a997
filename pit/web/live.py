"""Live updates: the pit's change feed, turned into server-rendered fragments over SSE.

Each open page holds one ``GET /events?view=…`` stream. The stream subscribes to
the port's ``changes`` (coalesced sets of :class:`~tabled.pit.model.Change`), and for each batch
renders the fragments of that page that the batch touches — a floor tile, a table's panel, the
alerts panel, the alerts table — and sends each as an SSE event named after the element that
shows it (``sse-swap`` in the templates); htmx's SSE extension swaps it in. On connecting
(and on every reconnect) the stream first sends all of its page's fragments, so a page never
misses what changed while it was loading or disconnected.

Rendering is on the event loop, and cheap (a tile is a template over a dict); the store is read
only for the alerts pages. Nothing here blocks the pit: the change feed never waits for a
listener, and a slow browser only makes its own batches larger.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from sse_starlette import ServerSentEvent

from tabled.pit.model import Change, Subscription

#: A page whose stream ended (its pit server stopped or was killed) opens it again after this
#: many milliseconds, through the load balancer on another server (the browsers' default
#: is 3 s).
RECONNECT_MS = 500

Fragments = Callable[[set[Change] | None], "AsyncIterator[tuple[str, str]]"]


@dataclass(frozen=True, slots=True)
class View:
    """What one page shows, so its stream knows which changes concern it."""

    name: str  # floor | table | alerts | alert | static
    site: str | None = None
    table: str | None = None
    alert_id: int | None = None
    state: str | None = None

    def concerns(self, change: Change) -> bool:
        if change.what == "floor" or self.name == "floor":
            return True
        if self.name in ("alerts",):
            return change.what == "alerts"
        return change.site == self.site and change.table == self.table


async def _next(sub: Subscription, stopping: asyncio.Event) -> set[Change] | None:
    """The next batch, or None once the server is stopping."""
    waiter = asyncio.ensure_future(sub.next())
    stopper = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, stopper):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if waiter.done() and not waiter.cancelled():
        return waiter.result()
    return None


async def _together(events: AsyncIterator[tuple[str, str]]) -> bytes:
    """A batch's fragments as one chunk of SSE events: one write to the browser, not one
    through every middleware per fragment (at a busy floor, most batches are a tile or two
    and the summary)."""
    return b"".join([ServerSentEvent(data=html, event=name).encode()
                     async for name, html in events])


async def stream(sub: Subscription, fragments: Fragments,
                 stopping: asyncio.Event) -> AsyncIterator[ServerSentEvent | bytes]:
    """The SSE events of one page: everything first, then what each batch changed."""
    with sub:
        yield ServerSentEvent(retry=RECONNECT_MS)
        first = await _together(fragments(None))
        if first:
            yield first
        while not stopping.is_set():
            batch = await _next(sub, stopping)
            if batch is None:
                return
            chunk = await _together(fragments(batch))
            if chunk:
                yield chunk
