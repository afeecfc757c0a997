"""Durable messages, journal to broker: store and forward.

Owns the publishing of every journaled message (``event``, ``outcome``, ``fault``), read from the
journal's :class:`~tabled.daemon.journal.DeliveryLog`, never from memory, in journal order, QoS 1,
with up to ``max_inflight`` in flight, and the position up to which the broker acknowledged them
(kept in the journal). After a broker outage or a restart, publishing resumes where the broker
stopped acknowledging: nothing lost, nothing re-numbered (a QoS 1 re-delivery carries the same
``table_seq``, given once, by the journal).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import aiomqtt
import structlog

from tabled.daemon.journal import DeliveryLog, JournalError, StoredOutput
from tabled.daemon.mqtt.topics import Topics

log = structlog.get_logger("tabled.mqtt")

#: How often the acknowledged position is written to the journal while publishing, seconds.
T_ACK_PERSIST = 1.0
#: Rows read from the journal per batch.
BATCH = 256


@runtime_checkable
class DirectPublish(Protocol):
    """A client whose QoS 1 publish is on the broker's socket when the call returns, its
    PUBACKs reported by message id: :class:`~tabled.daemon.mqtt.client.TableClient`."""

    on_acked: Callable[[int], None] | None

    def publish_now(self, topic: str, payload: str | bytes) -> int: ...


@dataclass(slots=True)
class _Pump:
    """The publisher's state for one connection."""

    client: DirectPublish
    #: the last journal id started (published or in flight)
    cursor: int
    #: rows up to this id were journaled before the connection: they may be re-deliveries
    first_pass_end: int
    #: every journal row up to this id has been started (or is not to be published)
    scanned: int = 0
    #: started and not yet past the acknowledged position, in journal order: (id, when,
    #: paho's message id)
    inflight: deque[tuple[int, float, int]] = field(default_factory=deque)
    #: publishes not yet acknowledged: paho's message id -> when it was started
    by_mid: dict[int, float] = field(default_factory=dict)
    #: publishes started and not finished
    outstanding: int = 0


class DurablePublisher:
    """A :class:`~tabled.daemon.mqtt.session.ConnectionPart`: the journal's messages, in order,
    until the broker has acknowledged them all."""

    def __init__(self, log_: DeliveryLog, topics: Topics, *, max_inflight: int,
                 puback_timeout: float) -> None:
        self.delivery = log_
        self.topics = topics
        self.max_inflight = max_inflight
        self.puback_timeout = puback_timeout
        self.acked_id = log_.acked_id()
        self.wake = asyncio.Event()
        self.counters: dict[str, int] = {"published": 0, "republished": 0}
        self.publish_latency: list[float] = []
        self._pump: _Pump | None = None

    # -- for the rest of the daemon --------------------------------------------------------

    def notify(self) -> None:
        """New durable messages are in the journal (the runtime calls this after a commit):
        start publishing them now if connected, else wake the publisher."""
        pump = self._pump
        if pump is None:
            self.wake.set()
            return
        try:
            self._fill(pump)
        except (JournalError, aiomqtt.MqttError):
            # never into the commit that called: serve() meets it again, and reports it (a
            # journal it cannot read) or ends the connection (a publish paho refused)
            self.wake.set()

    @property
    def backlog(self) -> int:
        """Durable messages not yet acknowledged by the broker (-1: the journal cannot say)."""
        try:
            return self.delivery.count_outputs_after(self.acked_id)
        except JournalError:
            return -1

    async def drain(self) -> None:
        """Return once the broker acknowledged everything (or the connection is gone): a
        clean shutdown publishes what is left first, under the caller's timeout."""
        while self._pump is not None and self.backlog > 0:
            self.wake.set()
            await asyncio.sleep(0.02)

    def take_latency(self) -> list[float]:
        """The publish-to-PUBACK latencies since the last call, seconds."""
        samples, self.publish_latency = self.publish_latency, []
        return samples

    # -- the connection part ---------------------------------------------------------------

    async def on_connect(self, client: aiomqtt.Client) -> None:
        pass

    def on_disconnect(self) -> None:
        self.persist_ack()

    async def serve(self, client: aiomqtt.Client) -> None:
        """Publish every journaled message after the acknowledged position, in journal order.

        The rows are started by :meth:`_fill`, which runs here and also straight from
        :meth:`notify`, inside the commit that made them durable: a new event is on its way to
        the broker without waiting for this task to be scheduled (measured: about 0.1 ms of
        the device-to-subscriber latency), and, through the client's
        :meth:`~tabled.daemon.mqtt.client.TableClient.publish_now`, on the broker's socket
        before the commit's callback returns. Both run on the loop's one thread and ``_fill``
        never awaits, so rows start once each and in journal order.

        ``client`` must publish directly (:class:`DirectPublish`): aiomqtt's own publish, a
        task and three turns of the loop per row, does not meet the latency goal
        (docs/design.md, "Private library uses")."""
        if not isinstance(client, DirectPublish):
            raise TypeError(f"a {type(client).__name__} does not publish directly")
        pump = _Pump(client, cursor=self.acked_id, first_pass_end=self.delivery.last_id,
                     scanned=self.acked_id)
        client.on_acked = lambda mid: self._puback(pump, mid)
        self._pump = pump
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
                self._advance(pump)
                self._check_overdue(pump)
                # At most once per T_ACK_PERSIST: a write is a durable commit of its own (an
                # fsync on the event loop), and a position a little behind only means a few
                # QoS 1 re-deliveries after a crash, under their original numbers.
                if time.monotonic() - last_persist > T_ACK_PERSIST:
                    self.persist_ack()
                    last_persist = time.monotonic()
                # woken by a commit (notify) or a PUBACK (room, and the position moves at once)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(T_ACK_PERSIST):
                        await self.wake.wait()
        finally:
            self._pump = None

    def persist_ack(self) -> None:
        """A position no journal write has carried yet gets a commit of its own (the journal
        knows which; while events flow every commit carries it and this writes nothing)."""
        try:
            self.delivery.save_acked()
        except JournalError as exc:
            log.warning("ack_not_persisted", error=str(exc))

    # -- internals -------------------------------------------------------------------------

    def _fill(self, pump: _Pump) -> None:
        """Start publishing the rows after ``pump.cursor`` while there is room. Never awaits;
        raises JournalError if the journal cannot be read, MqttError if paho refuses a
        publish (the connection is gone: the session ends and connects again)."""
        room = self.max_inflight - pump.outstanding
        while room > 0:
            wanted = min(BATCH, room)
            last_id = self.delivery.last_id
            rows = self.delivery.outputs_after(pump.cursor, wanted)
            for row in rows:
                if row.id <= pump.first_pass_end:
                    self.counters["republished"] += 1
                self._start(pump, row)
            if len(rows) < wanted:
                pump.scanned = last_id  # that was all of them
                return
            room -= len(rows)

    def _start(self, pump: _Pump, row: StoredOutput) -> None:
        started = time.monotonic()
        mid = pump.client.publish_now(self.topics.durable(row.topic), row.payload)
        pump.by_mid[mid] = started
        pump.outstanding += 1
        pump.inflight.append((row.id, started, mid))
        pump.cursor = row.id

    def _published(self, started: float) -> None:
        self.counters["published"] += 1
        if len(self.publish_latency) < 4096:
            self.publish_latency.append(time.monotonic() - started)

    def _puback(self, pump: _Pump, mid: int) -> None:
        """paho read a PUBACK (on the event loop, inside its read callback): if it is one of
        the durable stream's, move the acknowledged position, and wake the task if the room it
        freed has rows waiting. Only memory here: paho's callback must not fail."""
        started = pump.by_mid.pop(mid, None)
        if started is None or pump is not self._pump:
            return  # the status, a device status, metrics, a reply: aiomqtt's (or too late)
        pump.outstanding -= 1
        self._published(started)
        self._advance(pump)
        if pump.scanned < self.delivery.last_id:
            self.wake.set()

    def _advance(self, pump: _Pump) -> None:
        """Move the acknowledged position over the contiguous acknowledged prefix."""
        inflight = pump.inflight
        while inflight:
            row_id, _, mid = inflight[0]
            if mid in pump.by_mid:
                return  # (paho calls on_publish before it marks its own record published)
            inflight.popleft()
            self.acked_id = row_id
            self.delivery.note_acked(row_id)  # rides on the next journal commit

    def _check_overdue(self, pump: _Pump) -> None:
        """A publish without its PUBACK after ``puback_timeout`` ends the connection, as
        aiomqtt's publish timeout does."""
        if pump.inflight:
            _, started, mid = pump.inflight[0]
            if mid in pump.by_mid and time.monotonic() - started > self.puback_timeout:
                raise aiomqtt.MqttError(f"no PUBACK within {self.puback_timeout:g} s")
