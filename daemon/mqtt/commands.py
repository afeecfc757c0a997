"""Dealer-console commands over the broker: ``…/cmd/<name>`` in, ``…/cmd/<name>/reply`` out.

Owns only the transport of commands: the subscription (made on every connection, only when the
table takes commands), which topic names which command, and the reply, numbered like every
non-durable message. What a command does is the :class:`~tabled.daemon.gate.ConsoleGate`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.volatile import VolatilePublisher

Handler = Callable[[str, bytes], dict[str, Any]]


class CommandListener:
    """Subscribes the table's command topics and answers each command with ``handle``'s
    reply."""

    def __init__(self, session: BrokerSession, volatile: VolatilePublisher,
                 handle: Handler) -> None:
        self.session = session
        self.volatile = volatile
        self.handle = handle
        self.received = 0
        session.subscribe(session.topics.commands, self._message)

    async def _message(self, topic: str, payload: bytes) -> None:
        name = self.session.topics.command_name(topic)
        if name is None or name.endswith("reply"):
            return
        self.received += 1
        reply = self.handle(name, payload)
        await self.volatile.publish(self.session.topics.reply(name), reply, kind="reply")
