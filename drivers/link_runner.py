"""Runs a sans-IO :class:`~tabled.drivers.link.Link` on the asyncio event loop.

Owns exactly the glue between a link and the loop: feeding it bytes and the monotonic clock,
writing what it wants written, and firing its timers. Both the host side (the drivers) and the
device side (the simulators) use it, so the two sides cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tabled.drivers.link import Link, LinkDown, LinkEvent, MessageReceived, PeerRefused
from tabled.drivers.sink import NOT_DURABLE


class LinkRunner:
    """Drive ``link``: ``write`` gets outgoing bytes, ``on_event`` gets every link event.

    ``barrier``, if given, is called after each batch of received frames has been dispatched and
    before their acknowledgements are written: it makes what they caused durable and returns
    whether it could. The peer's frames are acknowledged only after that (end-to-end
    durability: a host that dies before the barrier never acknowledged them).
    """

    def __init__(
        self,
        link: Link,
        write: Callable[[bytes], None],
        on_event: Callable[[LinkEvent], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        barrier: Callable[[], bool] | None = None,
    ) -> None:
        self.link = link
        self._barrier = barrier
        self._write = write
        self._on_event = on_event
        self._clock = clock
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        # While a batch of received frames is dispatched, nothing is written: the link has
        # already queued their ACKs, which must wait for the barrier (a reply the application
        # sends from a callback waits with them).
        self._holding = False

    def now(self) -> float:
        return self._clock()

    def start(self) -> None:
        """Write what the link has to say at once (the host's RESET) and arm its timers."""
        self.flush()

    def data_received(self, data: bytes) -> None:
        delivered = refused = False
        self._holding = True
        try:
            for item in self.link.receive_data(data, self._clock()):
                delivered |= isinstance(item, MessageReceived)
                if isinstance(item, PeerRefused):
                    # The link is down, but the frames delivered before the refused one are
                    # made durable and acknowledged below, so that the device's next link
                    # starts at the refused frame (which the link never acknowledged).
                    refused = True
                    self._on_event(item)
                else:
                    self._dispatch(item)
        finally:
            self._holding = False
        if delivered and self._barrier is not None and not self._barrier():
            # What these frames said could not be made durable: they must not be
            # acknowledged. Drop the ACKs and the link; the device keeps the frames and sends
            # them again on the next link.
            self.link.data_to_send()
            self.stop()
            self._on_event(LinkDown(NOT_DURABLE))
            return
        self.flush()
        if refused:
            self.stop()

    def send(self, kind: int, payload: bytes) -> None:
        self.link.send(kind, payload, self._clock())
        self.flush()

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> None:
        if self._stopped or self._holding:
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
