"""The pit's broker connection (aiomqtt): subscribe to the tables' topic trees, hand every
message on in arrival order, publish the pit's alerts.

Owns the connection loop and nothing it receives: the messages go to ``on_message`` (the
service records them, updates the model, runs the alert rules), which must not raise, in
arrival order and in batches: a message with nothing behind it goes alone, at once; what
arrived while the handler was busy goes together (up to ``MAX_BATCH``), so that a busy pit
records many messages per transaction instead of falling behind one commit at a time. aiomqtt
has no reconnect: this loop reconnects with bounded exponential backoff and subscribes again
after every connection.

Subscriptions, QoS 1, for each configured site (``+`` for all):

- ``<prefix>/<site>/+/status``, ``…/+/device/+/status``, ``…/+/metrics``: by every pit server,
  never shared — the retained status is how a pit learns the floor at start (a retained message
  is not delivered to a shared subscription), and every server needs every table's state;
- ``…/+/event``, ``…/+/outcome``, ``…/+/fault``: through ``$share/<group>/`` when
  ``mqtt.share_group`` is set, so the servers of one floor split the record (each message is
  recorded by one of them, into the shared PostgreSQL record);
- with reconciliation (pit.reconcile), ``…/+/fetch/reply/<pit id>``: this server's own fetch
  replies, never shared.

A persistent session (``mqtt.persistent_session``, the default): the broker keeps the
subscriptions and queues QoS 1 messages while the pit is away, so a restart or a network blip
loses nothing that the daemons published meanwhile (the daemons do not publish a message twice
once the broker has it). The cost: with a shared subscription, a stopped server's share waits
for it in the broker's queue (Mosquitto queues for a disconnected member of the group) —
recorded when it returns, not by its partner. Without it, a pit that is down misses what the
tables publish and reports it as ``seq_gap`` when it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Awaitable, Callable

import aiomqtt
import structlog

from tabled.contract.asyncmqtt import Client
from tabled.contract.backoff import Backoff
from tabled.contract.secrets import read_secret
from tabled.pit.config import MQTTSettings

log = structlog.get_logger("tabled.pit.ingest")

#: A connection (TCP, TLS handshake, CONNACK) that takes longer has failed, seconds.
T_CONNECT = 5.0
#: SUBACK and PUBACK must come within this, seconds; else the connection is taken as lost.
T_ACK = 10.0

#: The messages that arrived together, in arrival order: (topic, payload, retained) each.
Batch = list[tuple[str, bytes, bool]]
Handler = Callable[[Batch], Awaitable[None]]
#: At most this many messages go to the handler at once (one store transaction).
MAX_BATCH = 500


class Ingest:
    """Run :meth:`run` as a task; cancel it to stop."""

    def __init__(self, settings: MQTTSettings, *, client_id: str, on_message: Handler,
                 on_connect: Callable[[], None] | None = None) -> None:
        self.settings = settings
        self.client_id = client_id
        self.on_message = on_message
        self.on_connect = on_connect
        self.connected = asyncio.Event()
        #: more topics this pit subscribes to, never shared (the fetch replies, pit.reconcile)
        self.extra_subscriptions: list[str] = []
        self.connects = 0
        self._client: aiomqtt.Client | None = None
        self._password: str | None = None
        if settings.password_file is not None:
            self._password = read_secret(settings.password_file).decode()

    def subscriptions(self) -> list[str]:
        s = self.settings
        share = f"$share/{s.share_group}/" if s.share_group else ""
        topics = []
        for site in s.sites:
            base = f"{s.topic_prefix}/{site}/+"
            topics += [f"{base}/status", f"{base}/device/+/status", f"{base}/metrics"]
            topics += [f"{share}{base}/{stream}" for stream in ("event", "outcome", "fault")]
        return topics + self.extra_subscriptions

    async def publish(self, topic: str, payload: str, *, retain: bool = False) -> bool:
        """QoS 1; True once the broker acknowledged it, False if not connected or it failed."""
        client = self._client
        if client is None or not self.connected.is_set():
            return False
        try:
            await client.publish(topic, payload, qos=1, retain=retain, timeout=T_ACK)
        except aiomqtt.MqttError as exc:
            log.warning("publish_failed", topic=topic, error=str(exc))
            return False
        return True

    async def run(self) -> None:
        backoff = Backoff(self.settings.reconnect_min, self.settings.reconnect_max)
        while True:
            try:
                await self._session(backoff)
            except aiomqtt.MqttError as exc:
                if self.connected.is_set():
                    log.warning("broker_lost", error=str(exc))
                else:
                    log.info("broker_unreachable", error=str(exc), url=self.settings.url)
            finally:
                self.connected.clear()
                self._client = None
            await asyncio.sleep(backoff.next())

    async def _session(self, backoff: Backoff) -> None:
        s = self.settings
        client = Client(  # a cancellation stops it (tabled.contract.asyncmqtt)
            s.host, s.port, identifier=self.client_id, username=s.username,
            password=self._password, keepalive=s.keepalive, tls_context=self._tls_context(),
            timeout=T_CONNECT, clean_session=not s.persistent_session,
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        async with client:
            for topic in self.subscriptions():
                await client.subscribe(topic, qos=1, timeout=T_ACK)
            self._client = client
            self.connected.set()
            self.connects += 1
            backoff.reset()
            log.info("broker_connected", url=s.url, subscriptions=self.subscriptions(),
                     persistent=s.persistent_session)
            if self.on_connect is not None:
                self.on_connect()
            messages = client.messages
            async for message in messages:
                batch = [_item(message)]
                batch += [_item(m) for m in client.waiting(MAX_BATCH - 1)]
                await self.on_message(batch)

    def _tls_context(self) -> ssl.SSLContext | None:
        tls = self.settings.tls
        if tls is not None:
            return tls.context()
        return ssl.create_default_context() if self.settings.uses_tls else None


def _item(message: aiomqtt.Message) -> tuple[str, bytes, bool]:
    raw = message.payload
    payload = raw if isinstance(raw, bytes) else str(raw).encode() if raw is not None else b""
    return str(message.topic), payload, bool(message.retain)


async def wait_connected(ingest: Ingest, within: float) -> bool:
    """True once connected within ``within`` seconds."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            await ingest.connected.wait()
            return True
    return False
