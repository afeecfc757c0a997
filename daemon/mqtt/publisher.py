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
from dataclasses import dataclass, field

import aiomqtt
import structlog

from tabled.daemon.journal import DeliveryLog, JournalError, StoredOutput
from tabled.daemon.mqtt.topics import Topics

log = structlog.get_logger("tabled.mqtt")

#: How often the acknowledged position is written to the journal while publishing, seconds.
T_ACK_PERSIST = 1.0
#: Rows read from the journal per batch.
BATCH = 256


@dataclass(slots=True)
class _Pump:
    """The publisher's state for one connection."""

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
        except JournalError:
            self.wake.set()  # serve() reports it (and tries again)

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
        the device-to-subscriber latency). Both run on the loop's one thread and ``_fill``
        never awaits, so rows start once each and in journal order."""
        pump = _Pump(client, cursor=self.acked_id, first_pass_end=self.delivery.last_id)
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
                self._advance(pump.inflight)
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
            for _, future in pump.inflight:
                future.cancel()
            await asyncio.gather(*(f for _, f in pump.inflight), return_exceptions=True)

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
        raises JournalError if the journal cannot be read."""
        room = self.max_inflight - pump.outstanding
        while room > 0:
            wanted = min(BATCH, room)
            rows = self.delivery.outputs_after(pump.cursor, wanted)
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
                             timeout=self.puback_timeout)
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
            self.delivery.note_acked(row_id)  # rides on the next journal commit
