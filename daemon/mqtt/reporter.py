"""``…/metrics``: the table's counters and latencies every ``metrics_interval`` seconds (QoS 0,
numbered like every non-durable message). What goes in them is the caller's (``collect``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiomqtt

from tabled.daemon.mqtt.volatile import VolatilePublisher


class MetricsReporter:
    """A :class:`~tabled.daemon.mqtt.session.ConnectionPart`: ``collect()`` published every
    ``interval`` seconds while connected."""

    def __init__(self, volatile: VolatilePublisher, collect: Callable[[], dict[str, Any]],
                 interval: float) -> None:
        self.volatile = volatile
        self.collect = collect
        self.interval = interval

    async def on_connect(self, client: aiomqtt.Client) -> None:
        pass

    async def serve(self, client: aiomqtt.Client) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.volatile.publish(self.volatile.session.topics.metrics, self.collect(),
                                        kind="metrics", qos=0)

    def on_disconnect(self) -> None:
        pass
