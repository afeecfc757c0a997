"""aiomqtt's client, as the table daemon and the pit use it.

One change: a cancellation always stops it (:class:`Client`). Here, not in
:mod:`tabled.daemon.mqtt`, because the pit uses it too and the table's MQTT parts are the table
service's own.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import TypeVar

import aiomqtt
from aiomqtt.exceptions import MqttError

T = TypeVar("T")


class Client(aiomqtt.Client):
    """An :class:`aiomqtt.Client` that a cancellation always stops: the table's and the pit's.

    aiomqtt waits for every acknowledgement (PUBACK, SUBACK, CONNACK, the end of a DISCONNECT)
    with :func:`asyncio.wait_for`, which on Python 3.11 loses a cancellation that arrives in the
    same turn of the loop as the acknowledgement: it returns the result and the task runs on
    (CPython gh-86296, fixed in 3.12 by rewriting ``wait_for`` on :func:`asyncio.timeout`). A
    daemon told to stop then cancelled a task that published its metrics once a second, and
    waited for it for ever (seen once in CI: the table's shutdown hung after its "offline").
    Here the wait is 3.12's: the timeout around the awaited future itself."""

    async def _wait_for(self, fut: Awaitable[T], timeout: float | None) -> T:  # noqa: ASYNC109 (aiomqtt's)
        if timeout is None:
            timeout = self.timeout
        try:
            async with asyncio.timeout(None if timeout == math.inf else timeout):
                return await fut
        except TimeoutError:
            raise MqttError("Operation timed out") from None
