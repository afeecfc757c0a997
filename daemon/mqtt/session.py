"""The table's broker connection: connect, say who we are, notice loss, connect again.

Owns one connection at a time to the broker (aiomqtt has no reconnect: this module's loop around
``async with Client(...)``, with bounded exponential backoff), the retained birth record on
``…/status`` and the last will that marks the table offline, with their numbers
(:class:`~tabled.daemon.mqtt.numbers.StatusNumbers`). What travels over a connection belongs to
its *parts* (:class:`ConnectionPart`: the durable publisher, the non-durable one, the metrics
reporter, the command listener), which the session starts on every connection and stops when it
ends. A change of the table's state (``degraded`` and back) ends the connection cleanly and the
next birth says it: the will registered with the broker carries the number after the birth's, so
no status message may come between them.

It also says what is wrong with the broker, once and in words an installer can act on: an
unreachable broker at warning (again at most every ``T_REPEAT`` seconds, with a count), and a
connection that the broker keeps closing right after accepting it as the error it almost always
is, another client connecting with the same client id (MQTT 3.1.1 gives no reason: Mosquitto
just closes the older connection; see :meth:`BrokerSession._lost`).

It never decides game state and never sees a face-down card.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aiomqtt
import structlog
from aiomqtt.exceptions import MqttConnectError

from tabled.contract.backoff import Backoff
from tabled.contract.logs import Repeats
from tabled.contract.secrets import read_secret
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import MQTTSettings
from tabled.daemon.mqtt.client import TableClient
from tabled.daemon.mqtt.numbers import StatusNumbers
from tabled.daemon.mqtt.topics import BrokerAddress, Topics, dumps

log = structlog.get_logger("tabled.mqtt")

#: A QoS 1 publish not acknowledged within this time counts as a lost connection, seconds.
T_PUBACK = 10.0
#: A connection (TCP, TLS handshake, CONNACK) that takes longer has failed, seconds: a broker
#: that refuses a client certificate may just stop answering.
T_CONNECT = 3.0
#: A connection the broker closes within this many seconds of accepting it (plus twice the
#: reconnect delay: a client that took it over comes back after its own) is cut short; two in a
#: row are another client taking our client id over, each in turn.
T_SHORT = 5.0
#: The same broker problem is logged again at most this often, seconds (with a count).
T_REPEAT = 60.0

MessageHandler = Callable[[str, bytes], Awaitable[None]]


class ConnectionPart(Protocol):
    """What travels over each connection. ``on_connect`` runs once the birth is out, before the
    session says it is connected (a part that must send something first does it here);
    ``serve`` runs for as long as the connection lasts (it raises ``MqttError`` if it finds the
    connection gone); ``on_disconnect`` runs when it ended, however."""

    async def on_connect(self, client: aiomqtt.Client) -> None: ...

    async def serve(self, client: aiomqtt.Client) -> None: ...

    def on_disconnect(self) -> None: ...


class _Restatus(Exception):
    """The table's state changed: end this connection cleanly (the broker discards its will)
    and connect again with a birth that says the new state."""


def _why(exc: BaseException) -> str:
    """An aiomqtt error in words, with its cause (the message iterator's "Disconnected during
    message iteration" says why only there: "[code:7] The connection was lost.")."""
    cause = exc.__cause__
    return f"{exc}: {cause}" if cause is not None and str(cause) else str(exc)


class BrokerSession:
    """The table's broker connection. Run :meth:`run` as a task; stop it with :meth:`stop`."""

    def __init__(
        self,
        settings: MQTTSettings,
        url: str,
        topics: Topics,
        numbers: StatusNumbers,
        *,
        client_id: str,
        birth: Callable[[], dict[str, Any]],
    ) -> None:
        self.settings = settings
        self.address = BrokerAddress.parse(url)
        self.topics = topics
        self.numbers = numbers
        self.client_id = client_id
        self._birth = birth
        self.connected = asyncio.Event()
        self.counters: dict[str, int] = {"connects": 0, "disconnects": 0}
        self._parts: list[ConnectionPart] = []
        self._subscriptions: list[tuple[str, MessageHandler]] = []
        self._client: TableClient | None = None
        self._stopping = False
        #: The state the last birth said (``online`` or ``degraded``, with its reason), and
        #: the states to say after it, in order: each is a birth of its own, even one that
        #: lasted less than a connection (a journal that failed and recovered within a probe).
        self._state: tuple[str, str | None] = ("online", None)
        self._states_due: list[tuple[str, str | None]] = []
        self._restatus = asyncio.Event()
        self._password: str | None = None
        if settings.password_file is not None:
            self._password = read_secret(settings.password_file).decode()
        #: Why there is no (lasting) connection, in a few words for the STATUS line; None
        #: while all is well.
        self.problem: str | None = None
        self._unreachable = Repeats(T_REPEAT)
        self._short = T_SHORT + 2 * settings.reconnect_min
        self._accepted_at = 0.0
        self._cut_short = 0  # connections in a row the broker closed soon after accepting
        self._taken_over = False  # said so (once, until a connection lasts)

    # -- for the rest of the daemon --------------------------------------------------------

    def add(self, part: ConnectionPart) -> None:
        """Run ``part`` on every connection, after the parts added before it."""
        self._parts.append(part)

    def subscribe(self, topic_filter: str, handler: MessageHandler) -> None:
        """Subscribe to ``topic_filter`` on every connection; its messages go to ``handler``."""
        self._subscriptions.append((topic_filter, handler))

    @property
    def client(self) -> aiomqtt.Client | None:
        """The connected client, or None (not connected)."""
        return self._client if self.connected.is_set() else None

    @property
    def url(self) -> str:
        return self.address.url

    def health(self) -> str:
        """The broker for the STATUS line: ``up``, ``down (URL: why)``, or ``unstable (URL:
        why)`` while connections do not last."""
        if self.connected.is_set() and not self._taken_over:
            return "up"
        state = "unstable" if self._taken_over else "down"
        return f"{state} ({self.url}: {self.problem or 'connecting'})"

    def set_state(self, state: str, reason: str | None = None) -> None:
        """What ``…/status`` should say: ``online``, or ``degraded`` with its reason. A change
        ends the connection cleanly (the broker drops the will unpublished) and the next
        connection's birth says it."""
        latest = self._states_due[-1] if self._states_due else self._state
        if (state, reason) != latest:
            self._states_due.append((state, reason))
            self._restatus.set()

    async def stop(self) -> None:
        """Mark the table offline (under the will's number: the DISCONNECT that follows makes
        the broker drop the will) and end the loop."""
        client, will = self.client, self.numbers.will
        if client is not None and will is not None:
            offline = {"state": "offline", "reason": "shutdown", "table_seq": will,
                       "ts": rfc3339_now()}
            self.numbers.sent = will
            with contextlib.suppress(aiomqtt.MqttError):
                await client.publish(self.topics.status, dumps(offline), qos=1, retain=True,
                                     timeout=T_PUBACK)
        self._stopping = True

    # -- the connection loop ---------------------------------------------------------------

    async def run(self) -> None:
        backoff = Backoff(self.settings.reconnect_min, self.settings.reconnect_max)
        while not self._stopping:
            again = False
            try:
                again = await self._session(backoff)
            # A lost connection ends the session's task group: its error comes in a group.
            except* aiomqtt.MqttError as group:
                error = _why(group.exceptions[0])
                if self._client is not None:  # the broker had accepted the connection
                    self.counters["disconnects"] += 1
                    self._lost(error, left_cleanly=self._client.left_cleanly())
                else:
                    self._cut_short = 0
                    self.problem = error
                    repeats = self._unreachable.seen(error)
                    if repeats is not None:
                        log.warning("broker_unreachable", error=error, url=self.url,
                                    **({"repeats": repeats} if repeats else {}))
                    else:  # every attempt, for whoever asked for debug
                        log.debug("broker_unreachable", error=error, url=self.url)
            finally:
                self.connected.clear()
                self._client = None
                self.numbers.will = None
                for part in self._parts:
                    part.on_disconnect()
            if self._stopping:
                return
            if not again:
                await asyncio.sleep(backoff.next())

    async def _session(self, backoff: Backoff) -> bool:
        """One connection, until it is lost (MqttError) or the state changes (returns True:
        connect again at once)."""
        birth_seq, will_seq = self.numbers.for_connection()
        state, reason = self._states_due[0] if self._states_due else self._state
        will = aiomqtt.Will(
            self.topics.status,
            dumps({"state": "offline", "reason": "connection_lost", "table_seq": will_seq}),
            qos=1, retain=True,
        )
        client = TableClient(
            self.address.host, self.address.port, identifier=self.client_id,
            username=self.settings.username, password=self._password, will=will,
            keepalive=self.settings.keepalive, tls_context=self._tls_context(),
            durable_inflight=self.settings.max_inflight, timeout=T_CONNECT,
            clean_session=True,
            # Small QoS 1 packets written back to back: with Nagle's algorithm the second waits
            # for the broker's delayed ACK of the first (measured: publish-to-PUBACK p50 of
            # 12 ms in some intervals, 0.6 ms in others). paho does not set it.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        restatus = accepted = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(client)
                except MqttConnectError:
                    raise  # the broker said no: it holds no will of ours
                except aiomqtt.MqttError:
                    if client.may_hold_will():  # no CONNACK; the broker may have the CONNECT
                        self.numbers.spend(will_seq)
                    raise
                # The broker holds the will: from now on it may publish it (a broker stopping
                # cleanly does, to every subscriber), so its number is spent.
                accepted = True
                self._accepted_at = time.monotonic()
                self.numbers.accepted(will_seq)
                self._client = client
                self.counters["connects"] += 1
                backoff.reset()
                birth = {**self._birth(), "state": state,
                         **({"reason": reason} if reason else {}),
                         "table_seq": birth_seq, "ts": rfc3339_now()}
                self.numbers.sent = birth_seq
                await client.publish(self.topics.status, dumps(birth), qos=1, retain=True,
                                     timeout=T_PUBACK)
                self._state = (state, reason)
                if self._states_due and self._states_due[0] == self._state:
                    self._states_due.pop(0)
                for part in self._parts:
                    await part.on_connect(client)
                for topic_filter, _ in self._subscriptions:
                    await client.subscribe(topic_filter, qos=1, timeout=T_PUBACK)
                self.connected.set()
                self._unreachable.clear()
                if self._taken_over:  # said once; each of these connections is short
                    log.debug("broker_connected", url=self.url, state=state)
                else:
                    self.problem = None
                    log.info("broker_connected", url=self.url, state=state)
                try:
                    async with asyncio.TaskGroup() as group:
                        group.create_task(self._lasts(), name="mqtt-lasts")
                        for index, part in enumerate(self._parts):
                            group.create_task(part.serve(client), name=f"mqtt-part-{index}")
                        group.create_task(self._incoming(client), name="mqtt-incoming")
                        group.create_task(self._watch_state(), name="mqtt-state")
                except* _Restatus:
                    restatus = True
                    self.connected.clear()  # nothing more on this connection
        finally:
            # Ended by our DISCONNECT (a change of state, a shutdown, a PUBACK that never
            # came from a broker still there): the broker dropped the will unpublished.
            if accepted and client.left_cleanly():
                self.numbers.left_cleanly()
        return restatus

    def _lost(self, error: str, *, left_cleanly: bool) -> None:
        """An accepted connection ended. If the broker closed it (not our DISCONNECT) soon after
        accepting it, twice in a row, the likely cause is a second client with our client id:
        Mosquitto closes the older of two connections that share one (MQTT 3.1.1 has no reason
        code to say so), and two daemons with one id close each other's, every reconnect delay,
        for ever. Said once as an error, until a connection lasts (:meth:`_lasts`); every lost
        connection is a warning otherwise."""
        lasted = time.monotonic() - self._accepted_at
        cut_short = not left_cleanly and lasted < self._short
        self._cut_short = self._cut_short + 1 if cut_short else 0
        if self._cut_short >= 2:
            if not self._taken_over:
                self._taken_over = True
                self.problem = (f"the broker closes each connection at once: another client "
                                f"uses client id {self.client_id!r}?")
                log.error("broker_session_taken_over", url=self.url, client_id=self.client_id,
                          error=error, lasted_s=round(lasted, 3),
                          likely_cause=f"another client uses client id {self.client_id!r}: "
                                       "two tables with the same [mqtt] client_id?")
            else:
                log.debug("broker_lost", error=error, url=self.url, lasted_s=round(lasted, 3))
            return
        self.problem = error
        log.warning("broker_lost", error=error, url=self.url, lasted_s=round(lasted, 3))

    async def _lasts(self) -> None:
        """A connection that lasts ends a suspected takeover (the next one is news again)."""
        await asyncio.sleep(self._short)
        self._cut_short = 0
        if self._taken_over:
            self._taken_over = False
            self.problem = None
            log.info("broker_connection_lasts", url=self.url, client_id=self.client_id,
                     lasted_s=self._short)

    async def _watch_state(self) -> None:
        """End the connection when a state is due that its birth did not say."""
        while True:
            if self._states_due:
                state, reason = self._states_due[0]
                log.info("status_changed", state=state, reason=reason)
                raise _Restatus
            await self._restatus.wait()
            self._restatus.clear()

    async def _incoming(self, client: aiomqtt.Client) -> None:
        """Subscribed messages to their handlers; and, with or without subscriptions, the way
        a lost connection is noticed (the message iterator raises MqttError)."""
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else str(
                message.payload).encode()
            for topic_filter, handler in self._subscriptions:
                if message.topic.matches(topic_filter):
                    await handler(str(message.topic), payload)

    def _tls_context(self) -> ssl.SSLContext | None:
        if self.settings.tls is not None:
            return self.settings.tls.context()
        return ssl.create_default_context() if self.address.tls else None
