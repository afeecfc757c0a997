"""Non-durable messages: device availability, metrics, command replies, a journal failure.

Owns what is published but not journaled: each message gets the next number of its own sequence
(:class:`~tabled.daemon.mqtt.numbers.Sequences`) only as it is sent; one whose publish fails is
sent again, the same bytes under the same number, first thing on the next connection. The
retained per-device availability (``…/device/<id>/status``) is kept here and published again on
every connection, so that a subscriber always finds the current state.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiomqtt
import structlog

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.mqtt.numbers import Sequences
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.topics import dumps

log = structlog.get_logger("tabled.mqtt")


class VolatilePublisher:
    """A :class:`~tabled.daemon.mqtt.session.ConnectionPart`: numbered non-durable messages."""

    def __init__(self, session: BrokerSession, sequences: Sequences, *,
                 puback_timeout: float) -> None:
        self.session = session
        self.sequences = sequences
        self.puback_timeout = puback_timeout
        self._device_status: dict[str, dict[str, Any]] = {}
        #: Numbered messages whose publish failed: sent again, same bytes, first thing on the
        #: next connection (topic, payload, qos, retain).
        self._unsent: list[tuple[str, str, int, bool]] = []

    def set_device_status(self, device_id: str, body: dict[str, Any]) -> None:
        """Retained availability of one device; published now if connected, and again on
        every connection."""
        self._device_status[device_id] = body
        if self.session.client is not None:
            asyncio.get_running_loop().create_task(
                self._publish_device_status(device_id), name=f"device-status-{device_id}")

    async def publish(self, topic: str, body: dict[str, Any], *, kind: str | None,
                      retain: bool = False, qos: int = 1) -> bool:
        """``body`` on ``topic`` now, if connected, with the next number of sequence ``kind``;
        nothing, and no number, if not. ``kind=None`` (only the journal failure on
        ``…/fault``) publishes it outside any sequence, ``table_seq: null``: it could not be
        journaled, so it has no place among the durable numbers."""
        client = self.session.client
        if client is None:
            return False
        seq = None if kind is None else self.sequences.next(kind)
        payload = dumps({**body, "table_seq": seq, "ts": rfc3339_now()})
        unsent = None if seq is None else (topic, payload, qos, retain)
        try:
            await client.publish(topic, payload, qos=qos, retain=retain,
                                 timeout=self.puback_timeout)
        except aiomqtt.MqttError as exc:
            log.warning("publish_failed", topic=topic, error=str(exc))
            if unsent is not None:  # maybe delivered, maybe not: the number is its for good
                self._unsent.append(unsent)
            return False
        except asyncio.CancelledError:
            if unsent is not None:
                self._unsent.append(unsent)
            raise
        return True

    # -- the connection part ---------------------------------------------------------------

    async def on_connect(self, client: aiomqtt.Client) -> None:
        """What failed before goes first, in its order (a QoS 1 re-delivery to whoever got it
        already), before anything newer."""
        while self._unsent:
            topic, payload, qos, retain = self._unsent[0]
            await client.publish(topic, payload, qos=qos, retain=retain,
                                 timeout=self.puback_timeout)
            self._unsent.pop(0)

    async def serve(self, client: aiomqtt.Client) -> None:
        """Every device's current availability, once the session is connected: a change from
        now on is published as it happens (:meth:`set_device_status`), so none is missed."""
        for device_id in list(self._device_status):
            await self._publish_device_status(device_id)

    def on_disconnect(self) -> None:
        pass

    async def _publish_device_status(self, device_id: str) -> None:
        body = self._device_status.get(device_id)
        if body is not None:
            await self.publish(self.session.topics.device_status(device_id), body,
                               kind="device", retain=True)
