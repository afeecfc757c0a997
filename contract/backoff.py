"""Trying again: bounded exponential backoff that resets on success (the pymodbus / dsmr
pattern), a long-lived part of a service started again when it fails, and the parts
stopped at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
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


def start_part(group: asyncio.TaskGroup, log: Any, name: str,
               body: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
    """``body`` run by :func:`restarting` as a task of ``group``, named ``name`` (as the log
    names it: ``task_failed``, ``task_still_running``)."""
    return group.create_task(restarting(log, name, body), name=name)


async def cancel_all(log: Any, tasks: Sequence[asyncio.Task[Any]], *,
                     grace: float = 2.0) -> None:
    """Cancel ``tasks`` and return once every one has ended. A task still running ``grace``
    seconds after its cancellation lost it (Python 3.11's ``asyncio.wait_for`` can, in a
    library: tabled.daemon.mqtt.client.Client): it is named in a ``task_still_running``
    warning and cancelled again, for as long as it runs. A stopping service does not hang on
    one lost cancellation; one that never ends is named in the log every ``grace`` seconds
    (and systemd's stop timeout ends the process)."""
    pending = {task for task in tasks if not task.done()}
    rounds = 0
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=grace)
        rounds += 1
        for task in pending:
            log.warning("task_still_running", task=task.get_name(), cancelled=rounds)
