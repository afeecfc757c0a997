"""aiomqtt's client, as the table daemon and the pit use it.

Owns :class:`Client`: aiomqtt's, with the adapter's wait that a cancellation always stops
(:mod:`tabled.contract.mqttprivate`), and the messages already received taken without a wait
each (:meth:`Client.waiting`). Here, not in :mod:`tabled.daemon.mqtt`, because the pit uses it
too and the table's MQTT parts are the table service's own. It never touches a private name
of aiomqtt or paho itself: those are :mod:`tabled.contract.mqttprivate`'s.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiomqtt

from tabled.contract.mqttprivate import AdaptedClient


class Client(AdaptedClient):
    """An :class:`aiomqtt.Client` that a cancellation always stops: the table's and the pit's.

    Its queue of received messages is made by aiomqtt from the ``queue_type`` it is given (a
    documented argument), here a queue that tells this client it was made: so the client holds
    it and :meth:`waiting` reads it without a private name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        made: list[asyncio.Queue[aiomqtt.Message]] = []

        class Inbox(asyncio.Queue[aiomqtt.Message]):
            def __init__(self, maxsize: int = 0) -> None:
                super().__init__(maxsize)
                made.append(self)

        kwargs.setdefault("queue_type", Inbox)
        super().__init__(*args, **kwargs)
        self._inbox = made[0] if made else None

    def waiting(self, limit: int) -> list[aiomqtt.Message]:
        """The messages already received and not yet handed on (at most ``limit``), without
        waiting: aiomqtt's iterator makes a task and a wait per message (what that costs:
        docs/design.md, "Private library uses")."""
        out: list[aiomqtt.Message] = []
        queue = self._inbox
        if queue is None:
            return out
        while len(out) < limit:
            try:
                out.append(queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return out
