"""Runs a sans-IO :class:`~drivers.link.Link` on the asyncio event loop.

Owns exactly the glue between a link and the loop: feeding it bytes and the monotonic clock,
writing what it wants written, and firing its timers. Both the host side (the drivers) and the
device side (the simulators) use it, so the two sides cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from drivers.link import Link, LinkDown, LinkEvent


class LinkRunner:
    """Drive ``link``: ``write`` gets outgoing bytes, ``on_event`` gets every link event."""

    def __init__(
        self,
        link: Link,
        write: Callable[[bytes], None],
        on_event: Callable[[LinkEvent], None],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link = link
        self._write = write
        self._on_event = on_event
        self._clock = clock
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def now(self) -> float:
        return self._clock()

    def start(self) -> None:
        """Write what the link has to say at once (the host's RESET) and arm its timers."""
        self.flush()

    def data_received(self, data: bytes) -> None:
        for item in self.link.receive_data(data, self._clock()):
            self._dispatch(item)
        self.flush()

    def send(self, kind: int, payload: bytes) -> None:
        self.link.send(kind, payload, self._clock())
        self.flush()

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> None:
        if self._stopped:
            return
        data = self.link.data_to_send()
        if data:
            self._write(data)
        self._arm()

    def _dispatch(self, item: LinkEvent) -> None:
        if isinstance(item, LinkDown):
            self.stop()
        self._on_event(item)

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.link.next_deadline()
        if deadline is None or self._stopped:
            return
        delay = max(0.0, deadline - self._clock())
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._stopped:
            return
        for item in self.link.poll(self._clock()):
            self._dispatch(item)
        self.flush()
