"""Waiting, in the tests, for state that has no event of its own (a link's backlog, a driver's
events list): poll it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (callers bound it with ``asyncio.timeout``)."""
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0.01)
