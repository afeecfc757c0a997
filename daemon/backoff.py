"""Trying again: bounded exponential backoff that resets on success (the pymodbus / dsmr
pattern), and a long-lived part of a service started again when it fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


class Backoff:
    """Delays ``low, 2·low, 4·low, …`` capped at ``high``; :meth:`reset` after a success."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self.delay = low

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.high, self.delay * 2)
        return delay

    def reset(self) -> None:
        self.delay = self.low


async def restarting(log: Any, name: str, body: Callable[[], Awaitable[None]],
                     pause: float = 1.0) -> None:
    """Run a long-lived part of a service (the table daemon's, the pit's); if it fails
    unexpectedly, log it (``task_failed``, with the traceback) and start it again after
    ``pause`` seconds: a bug in one part must not take the whole service down."""
    while True:
        try:
            await body()
            return
        except Exception:
            log.exception("task_failed", task=name)
            await asyncio.sleep(pause)
