"""MQTT for one table with aiomqtt: topic tree, birth and will, store-and-forward, commands.

Owns the broker connection and everything that crosses it (docs/mqtt.md):

- durable messages (``event``, ``outcome``, ``fault``) are read from the journal, never from
  memory, and published in journal order with QoS 1 until the broker acknowledges them; the
  acknowledged position is kept in the journal, so after a broker outage or a restart
  publishing resumes where the broker stopped acknowledging: nothing lost, nothing re-numbered
  (a QoS 1 re-delivery carries the same ``table_seq``);
- a retained birth record on ``…/status`` and a retained last will that marks the table offline;
- retained per-device availability on ``…/device/<id>/status``;
- ``…/metrics`` every few seconds;
- dealer-console commands on ``…/cmd/<name>`` (when enabled), answered on ``…/cmd/<name>/reply``.

Each topic's ``table_seq`` goes up by one per message a subscriber can receive, and a number is
given only to a message that is sent (docs/mqtt.md, "Sequence numbers"): a connection attempt
that fails consumes none; a ``…/status`` message is only ever a connection's birth (a change of
state, ``degraded`` and back, reconnects to say it) followed by that connection's will or our own
``offline``, both numbered one after the birth; a non-durable message whose publish failed is
sent again, the same bytes under the same number, on the next connection.

Reconnection is this module's loop around ``async with Client(...)`` (aiomqtt has none), with
bounded exponential backoff. It never decides game state and never sees a face-down card: what
it publishes was redacted before the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiomqtt
import structlog
from aiomqtt.exceptions import MqttConnectError

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.backoff import Backoff
from tabled.daemon.config import MQTTSettings, read_secret
from tabled.daemon.journal import Journal, JournalError, StoredOutput

log = structlog.get_logger("tabled.mqtt")

#: How often the acknowledged position is written to the journal while publishing, seconds.
T_ACK_PERSIST = 1.0
#: A QoS 1 publish not acknowledged within this time counts as a lost connection, seconds.
T_PUBACK = 10.0
#: A connection (TCP, TLS handshake, CONNACK) that takes longer has failed, seconds: a broker
#: that refuses a client certificate may just stop answering.
T_CONNECT = 3.0
#: Rows read from the journal per batch.
BATCH = 256
#: The journal's meta key of the highest ``…/status`` number a subscriber may have received.
STATUS_SEQ_KEY = "seq:status"


class _Restatus(Exception):
    """The table's state changed: end this connection cleanly (the broker discards its will)
    and connect again with a birth that says the new state."""


class Topics:
    """The topic tree of one table: ``<prefix>/<site>/<table>/…``."""

    def __init__(self, prefix: str, site: str, table: str) -> None:
        self.base = f"{prefix}/{site}/{table}"
        self.status = f"{self.base}/status"
        self.event = f"{self.base}/event"
        self.outcome = f"{self.base}/outcome"
        self.fault = f"{self.base}/fault"
        self.metrics = f"{self.base}/metrics"
        self.commands = f"{self.base}/cmd/+"

    def durable(self, topic: str) -> str:
        return f"{self.base}/{topic}"

    def device_status(self, device_id: str) -> str:
        return f"{self.base}/device/{device_id}/status"

    def reply(self, command: str) -> str:
        return f"{self.base}/cmd/{command}/reply"

    def command_name(self, topic: str) -> str | None:
        prefix = f"{self.base}/cmd/"
        rest = topic[len(prefix):] if topic.startswith(prefix) else ""
        return rest if rest and "/" not in rest else None


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool

    @classmethod
    def parse(cls, url: str) -> BrokerAddress:
        parts = urlsplit(url)
        tls = parts.scheme == "mqtts"
        return cls(parts.hostname or "127.0.0.1", parts.port or (8883 if tls else 1883), tls)


def dumps(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


# Two facts about a connection that aiomqtt keeps to itself (aiomqtt is pinned below 3). Where
# they cannot be read, each answer is the one that risks a gap in ``…/status`` numbers rather
# than one number on two different messages.


def _may_hold_will(client: aiomqtt.Client) -> bool:
    """After a connection attempt without a CONNACK: may the broker have taken our CONNECT,
    and with it the will? Not if no connection was made (refused, TLS handshake failed), the
    broker answered no (a negative CONNACK), or the connection was closed (the broker does not
    close a connection it accepted without a CONNACK). A CONNACK that did not come in time on
    an open connection: it may have."""
    paho = getattr(client, "_client", None)
    try:
        return paho is None or paho.socket() is not None
    except Exception:  # not what this aiomqtt looks like: assume it may
        return True


def _left_cleanly(client: aiomqtt.Client) -> bool:
    """Did the connection end with our DISCONNECT, so that the broker dropped the will?"""
    ended = getattr(client, "_disconnected", None)
    return (isinstance(ended, asyncio.Future) and ended.done() and not ended.cancelled()
            and ended.exception() is None)


CommandHandler = Callable[[str, bytes], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class _Pump:
    """The durable publisher's state for one connection."""

    client: aiomqtt.Client
    #: the last journal id started (published or in flight)
    cursor: int
    #: rows up to this id were journaled before the connection: they may be re-deliveries
    first_pass_end: int
    inflight: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)
    #: publishes started and not finished
    outstanding: int = 0

    def done(self, _: asyncio.Future[None]) -> None:
        self.outstanding -= 1


class MqttService:
    """The table's broker connection. Run :meth:`run` as a task; stop it with :meth:`stop`."""

    def __init__(
        self,
        settings: MQTTSettings,
        url: str,
        topics: Topics,
        journal: Journal,
        *,
        client_id: str,
        birth: Callable[[], dict[str, Any]],
        metrics: Callable[[], dict[str, Any]],
        on_command: CommandHandler | None = None,
    ) -> None:
        self.settings = settings
        self.address = BrokerAddress.parse(url)
        self.topics = topics
        self.journal = journal
        self.client_id = client_id
        self._birth = birth
        self._metrics = metrics
        self._on_command = on_command
        self.connected = asyncio.Event()
        self.wake = asyncio.Event()
        self.acked_id = journal.acked_id()
        self._device_status: dict[str, dict[str, Any]] = {}
        self._client: aiomqtt.Client | None = None
        self._pump_state: _Pump | None = None
        self._volatile_seq: dict[str, int] = {}
        #: Numbered non-durable messages whose publish failed: sent again, same bytes, first
        #: thing on the next connection (topic, payload, qos, retain).
        self._unsent: list[tuple[str, str, int, bool]] = []
        self._stopping = False
        #: The highest ``…/status`` number that may have reached a subscriber: every status
        #: message published, and the will of every connection the broker accepted, unless
        #: that connection ended with our DISCONNECT (the broker dropped the will unpublished).
        self._status_seq = int(journal.get_meta(STATUS_SEQ_KEY, "-1") or -1)
        #: The will's number on the current connection (our shutdown ``offline`` takes it).
        self._will_seq: int | None = None
        #: The last ``…/status`` number this daemon itself published (or tried to).
        self._status_sent = self._status_seq
        #: The state the last birth said (``online`` or ``degraded``, with its reason), and
        #: the states to say after it, in order: each is a birth of its own, even one that
        #: lasted less than a connection (a journal that failed and recovered within a probe).
        self._state: tuple[str, str | None] = ("online", None)
        self._states_due: list[tuple[str, str | None]] = []
        self._restatus = asyncio.Event()
        self.counters: dict[str, int] = {"connects": 0, "disconnects": 0, "published": 0,
                                         "republished": 0, "commands": 0}
        self.publish_latency: list[float] = []
        self._password: str | None = None
        if settings.password_file is not None:
            self._password = read_secret(settings.password_file).decode()

    # -- for the rest of the daemon --------------------------------------------------------

    def notify(self) -> None:
        """New durable messages are in the journal (the runtime calls this after a commit):
        start publishing them now if connected, else wake the publisher."""
        pump = self._pump_state
        if pump is None:
            self.wake.set()
            return
        try:
            self._fill(pump)
        except JournalError:
            self.wake.set()  # the pump reports it (and tries again)

    @property
    def backlog(self) -> int:
        """Durable messages not yet acknowledged by the broker (-1: the journal cannot say)."""
        try:
            return self.journal.count_outputs_after(self.acked_id)
        except JournalError:
            return -1

    def set_device_status(self, device_id: str, body: dict[str, Any]) -> None:
        """Retained availability of one device; re-published on every (re)connect."""
        self._device_status[device_id] = body
        if self.connected.is_set():
            asyncio.get_running_loop().create_task(
                self._publish_device_status(device_id), name=f"device-status-{device_id}")

    def set_state(self, state: str, reason: str | None = None) -> None:
        """What ``…/status`` should say: ``online``, or ``degraded`` with its reason. The
        will registered with the broker carries the number after the birth's, so no status
        message can come between them: a change of state ends the connection cleanly (the
        broker drops the will unpublished) and the next connection's birth says it."""
        latest = self._states_due[-1] if self._states_due else self._state
        if (state, reason) != latest:
            self._states_due.append((state, reason))
            self._restatus.set()

    async def publish_volatile(self, topic: str, body: dict[str, Any], *, kind: str | None,
                               retain: bool = False, qos: int = 1) -> bool:
        """A message that is not journaled (device status, metrics, replies): published now
        if connected, with the next number of its own sequence ``kind``; nothing, and no
        number, if not. One whose publish fails is sent again, with the same number, on the
        next connection. ``kind=None`` (only the journal failure on ``…/fault``) publishes it
        outside any sequence, ``table_seq: null``: it could not be journaled, so it has no
        place among the durable numbers. ``…/status`` is not published here (:meth:`set_state`)."""
        assert kind != "status", "status messages are births (set_state)"
        client = self._client
        if client is None or not self.connected.is_set():
            return False
        seq = None if kind is None else self._next_volatile(kind)
        payload = dumps({**body, "table_seq": seq, "ts": rfc3339_now()})
        unsent = None if seq is None else (topic, payload, qos, retain)
        try:
            await client.publish(topic, payload, qos=qos, retain=retain, timeout=T_PUBACK)
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

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Publish what is left (bounded wait), mark the table offline, disconnect."""
        if self.connected.is_set():
            try:
                async with asyncio.timeout(drain_timeout):
                    while self.backlog > 0 and self.connected.is_set():
                        self.wake.set()
                        await asyncio.sleep(0.02)
            except TimeoutError:
                log.warning("shutdown_with_backlog", backlog=self.backlog)
            client = self._client
            if client is not None and self.connected.is_set() and self._will_seq is not None:
                # The will's number: the DISCONNECT that follows makes the broker drop the
                # will, so this message takes its place after the birth.
                offline = {"state": "offline", "reason": "shutdown", "table_seq": self._will_seq,
                           "ts": rfc3339_now()}
                self._status_sent = self._will_seq
                with contextlib.suppress(aiomqtt.MqttError):
                    await client.publish(self.topics.status, dumps(offline), qos=1, retain=True,
                                         timeout=T_PUBACK)
        self._stopping = True
        self._persist_ack()

    # -- the connection loop ---------------------------------------------------------------

    async def run(self) -> None:
        backoff = Backoff(self.settings.reconnect_min, self.settings.reconnect_max)
        while not self._stopping:
            again = False
            try:
                again = await self._session(backoff)
            # A lost connection ends the session's task group: its error comes in a group.
            except* aiomqtt.MqttError as group:
                error = str(group.exceptions[0])
                if self._client is not None:  # the broker had accepted the connection
                    self.counters["disconnects"] += 1
                    log.warning("broker_lost", error=error, backlog=self.backlog)
                else:
                    log.info("broker_unreachable", error=error, url=self._url())
            finally:
                self.connected.clear()
                self._client = None
                self._will_seq = None
                self._persist_ack()
            if self._stopping:
                return
            if not again:
                await asyncio.sleep(backoff.next())

    async def _session(self, backoff: Backoff) -> bool:
        """One connection, until it is lost (MqttError) or the state changes (returns True:
        connect again at once). Numbers for ``…/status``: the birth takes the next one and
        the will the one after, so that it sorts after the birth; neither is spent unless
        the broker accepts the connection."""
        birth_seq, will_seq = self._status_seq + 1, self._status_seq + 2
        state, reason = self._states_due[0] if self._states_due else self._state
        will = aiomqtt.Will(
            self.topics.status,
            dumps({"state": "offline", "reason": "connection_lost", "table_seq": will_seq}),
            qos=1, retain=True,
        )
        client = aiomqtt.Client(
            self.address.host, self.address.port, identifier=self.client_id,
            username=self.settings.username, password=self._password, will=will,
            keepalive=self.settings.keepalive, tls_context=self._tls_context(),
            max_inflight_messages=self.settings.max_inflight, timeout=T_CONNECT,
            clean_session=True,
            # Small QoS 1 packets written back to back: with Nagle's algorithm the second waits
            # for the broker's delayed ACK of the first (measured: publish-to-PUBACK p50 of
            # 12 ms in some intervals, 0.6 ms in others). paho does not set it.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        # up to max_inflight publishes wait for their PUBACK by design: not worth a warning
        client.pending_calls_threshold = self.settings.max_inflight + 16
        restatus = accepted = False
        self._status_sent = self._status_seq
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(client)
                except MqttConnectError:
                    raise  # the broker said no: it holds no will of ours
                except aiomqtt.MqttError:
                    if _may_hold_will(client):  # no CONNACK; the broker may have the CONNECT
                        self._spend_status(will_seq)
                    raise
                # The broker holds the will: from now on it may publish it (a broker stopping
                # cleanly does, to every subscriber), so its number is spent.
                accepted = True
                self._spend_status(will_seq)
                self._will_seq = will_seq
                self._client = client
                self.counters["connects"] += 1
                backoff.reset()
                birth = {**self._birth(), "state": state,
                         **({"reason": reason} if reason else {}),
                         "table_seq": birth_seq, "ts": rfc3339_now()}
                self._status_sent = birth_seq
                await client.publish(self.topics.status, dumps(birth), qos=1, retain=True,
                                     timeout=T_PUBACK)
                self._state = (state, reason)
                if self._states_due and self._states_due[0] == self._state:
                    self._states_due.pop(0)
                await self._send_unsent(client)
                self.connected.set()
                log.info("broker_connected", url=self._url(), backlog=self.backlog, state=state)
                for device_id in list(self._device_status):
                    await self._publish_device_status(device_id)
                if self._on_command is not None:
                    await client.subscribe(self.topics.commands, qos=1, timeout=T_PUBACK)
                try:
                    async with asyncio.TaskGroup() as group:
                        group.create_task(self._pump(client), name="mqtt-pump")
                        group.create_task(self._metrics_loop(), name="mqtt-metrics")
                        group.create_task(self._incoming(client), name="mqtt-incoming")
                        group.create_task(self._watch_state(), name="mqtt-state")
                except* _Restatus:
                    restatus = True
                    self.connected.clear()  # nothing more on this connection
        finally:
            # Ended by our DISCONNECT (a change of state, a shutdown, a PUBACK that never
            # came from a broker still there): the broker dropped the will unpublished, and
            # its number goes to the next message after the last one we sent ourselves.
            if accepted and _left_cleanly(client):
                self._spend_status(self._status_sent, dropped_will=True)
        return restatus

    async def _watch_state(self) -> None:
        """End the connection when a state is due that its birth did not say."""
        while True:
            if self._states_due:
                state, reason = self._states_due[0]
                log.info("status_changed", state=state, reason=reason)
                raise _Restatus
            await self._restatus.wait()
            self._restatus.clear()

    def _spend_status(self, number: int, *, dropped_will: bool = False) -> None:
        """Record the highest ``…/status`` number a subscriber may have received, durably
        (a restart goes on after it). It only goes back when the broker certainly dropped a
        will unpublished: after our own DISCONNECT, never after a lost connection."""
        if number == self._status_seq:
            return
        if number <= self._status_seq and not dropped_will:
            return
        self._status_seq = number
        # If the journal fails, the number still holds in memory (the failure is reported on
        # its own); only a restart before the disk recovers could then use a number again.
        with contextlib.suppress(JournalError):
            self.journal.set_meta(STATUS_SEQ_KEY, str(number))

    async def _send_unsent(self, client: aiomqtt.Client) -> None:
        """Numbered messages whose publish failed, again: same bytes, same number (a QoS 1
        re-delivery to whoever got them already), in their order, before anything newer."""
        while self._unsent:
            topic, payload, qos, retain = self._unsent[0]
            await client.publish(topic, payload, qos=qos, retain=retain, timeout=T_PUBACK)
            self._unsent.pop(0)

    # -- durable messages: journal -> broker --------------------------------------------------

    async def _pump(self, client: aiomqtt.Client) -> None:
        """Publish every journaled message after the acknowledged position, in journal order,
        with up to ``max_inflight`` in flight.

        The rows are started by :meth:`_fill`, which runs here and also straight from
        :meth:`notify`, inside the commit that made them durable: a new event is on its way to
        the broker without waiting for this task to be scheduled (measured: about 0.1 ms of
        the device-to-subscriber latency). Both run on the loop's one thread and ``_fill``
        never awaits, so rows start once each and in journal order."""
        pump = _Pump(client, cursor=self.acked_id, first_pass_end=self.journal.last_id)
        self._pump_state = pump
        last_persist = time.monotonic()
        try:
            while True:
                self.wake.clear()
                try:
                    self._fill(pump)
                except JournalError as exc:
                    # the disk fails: keep the connection (status and faults still go out) and
                    # try again; nothing unread is lost, it is still in the journal
                    log.warning("journal_unreadable", error=str(exc))
                    await asyncio.sleep(T_ACK_PERSIST)
                    continue
                self._advance(pump.inflight)
                # At most once per T_ACK_PERSIST: a write is a durable commit of its own (an
                # fsync on the event loop), and a position a little behind only means a few
                # QoS 1 re-deliveries after a crash, under their original numbers.
                if time.monotonic() - last_persist > T_ACK_PERSIST:
                    self._persist_ack()
                    last_persist = time.monotonic()
                # woken by a commit (notify) or a PUBACK (room, and the position moves at once)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(T_ACK_PERSIST):
                        await self.wake.wait()
        finally:
            self._pump_state = None
            for _, future in pump.inflight:
                future.cancel()
            await asyncio.gather(*(f for _, f in pump.inflight), return_exceptions=True)

    def _fill(self, pump: _Pump) -> None:
        """Start publishing the rows after ``pump.cursor`` while there is room. Never awaits;
        raises JournalError if the journal cannot be read."""
        room = self.settings.max_inflight - pump.outstanding
        while room > 0:
            wanted = min(BATCH, room)
            rows = self.journal.outputs_after(pump.cursor, wanted)
            for row in rows:
                if row.id <= pump.first_pass_end:
                    self.counters["republished"] += 1
                future = asyncio.ensure_future(self._publish_row(pump.client, row))
                pump.outstanding += 1
                future.add_done_callback(pump.done)
                future.add_done_callback(lambda _: self.wake.set())
                pump.inflight.append((row.id, future))
                pump.cursor = row.id
            if len(rows) < wanted:
                return  # that was all of them
            room -= len(rows)

    async def _publish_row(self, client: aiomqtt.Client, row: StoredOutput) -> None:
        started = time.monotonic()
        await client.publish(self.topics.durable(row.topic), row.payload, qos=1,
                             timeout=T_PUBACK)
        self.counters["published"] += 1
        if len(self.publish_latency) < 4096:
            self.publish_latency.append(time.monotonic() - started)

    def _advance(self, inflight: deque[tuple[int, asyncio.Future[None]]]) -> None:
        """Move the acknowledged position over the contiguous acknowledged prefix."""
        while inflight and inflight[0][1].done():
            row_id, future = inflight.popleft()
            exc = future.exception()
            if exc is not None:
                raise exc  # the connection is gone: the session ends, the loop reconnects
            self.acked_id = row_id
            self.journal.note_acked(row_id)  # rides on the next journal commit

    def _persist_ack(self) -> None:
        """A position no journal write has carried yet gets a commit of its own (the journal
        knows which; while events flow every commit carries it and this writes nothing)."""
        try:
            self.journal.save_acked()
        except JournalError as exc:
            log.warning("ack_not_persisted", error=str(exc))

    # -- volatile messages ------------------------------------------------------------------

    def _next_volatile(self, kind: str) -> int:
        if kind not in self._volatile_seq:
            self._volatile_seq[kind] = int(self.journal.get_meta(f"seq:{kind}", "-1") or -1)
        self._volatile_seq[kind] += 1
        seq = self._volatile_seq[kind]
        # If the journal fails, the number still goes up in memory (the failure is reported
        # on its own); it is only lost if the daemon also restarts before the disk recovers.
        with contextlib.suppress(JournalError):
            self.journal.set_meta(f"seq:{kind}", str(seq))
        return seq

    async def _publish_device_status(self, device_id: str) -> None:
        body = self._device_status.get(device_id)
        if body is not None:
            await self.publish_volatile(self.topics.device_status(device_id), body,
                                        kind="device", retain=True)

    async def _metrics_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.metrics_interval)
            await self.publish_volatile(self.topics.metrics, self._metrics(), kind="metrics",
                                        qos=0)

    async def _incoming(self, client: aiomqtt.Client) -> None:
        """Commands in; and, with or without commands, the way a lost connection is noticed
        (the message iterator raises MqttError)."""
        async for message in client.messages:
            name = self.topics.command_name(str(message.topic))
            if name is None or name.endswith("reply") or self._on_command is None:
                continue
            self.counters["commands"] += 1
            payload = message.payload if isinstance(message.payload, bytes) else str(
                message.payload).encode()
            reply = await self._on_command(name, payload)
            await self.publish_volatile(self.topics.reply(name), reply, kind="reply")

    # -- helpers ---------------------------------------------------------------------------

    def _url(self) -> str:
        scheme = "mqtts" if self.address.tls else "mqtt"
        return f"{scheme}://{self.address.host}:{self.address.port}"

    def _tls_context(self) -> ssl.SSLContext | None:
        tls = self.settings.tls
        if tls is None and not self.address.tls:
            return None
        context = ssl.create_default_context(cafile=str(tls.ca_file) if tls else None)
        if tls is not None and tls.cert_file is not None and tls.key_file is not None:
            context.load_cert_chain(str(tls.cert_file), str(tls.key_file))
        return context
