"""The journal served back over the broker: ``…/fetch`` in, ``…/fetch/reply/<pit>`` out.

Owns the transport of fetch requests (docs/mqtt.md "Reconciliation: ``…/fetch``"): the
subscription (made on every connection, only when the table has a fetch key), the refusals, and
the replies, QoS 1, not retained, not numbered (they are copies of numbered messages). What a
request may ask is the :class:`~tabled.daemon.fetch.FetchGate`'s; what is served is the
journal's published text, byte for byte (:meth:`~tabled.daemon.journal.Journal.published_range`).

A request is checked as it arrives and served by this part's own task, one reply message at a
time, each awaiting its PUBACK before the next is read: a large request takes one of the
client's slots for messages of its own and a fraction of a millisecond of the event loop per
part, never the durable publisher's window or a card's way to the broker.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Final

import aiomqtt
import structlog

from tabled.contract.logs import Repeats
from tabled.daemon.fetch import (
    PART_MESSAGES,
    REASONS,
    FetchGate,
    FetchRefused,
    FetchRequest,
    escaped_size,
    part_count,
)
from tabled.daemon.journal import FIRST_NUMBER, Journal, JournalError
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.topics import dumps

log = structlog.get_logger("tabled.fetch")

#: Requests (and refusals to say) waiting to be served, at most; more are refused unanswered.
MAX_WAITING: Final = 32
#: The same refusal is logged again at most this often, seconds (with a count).
T_REPEAT: Final = 60.0
#: Rows read from the journal at a time, with a turn of the event loop after each read: what
#: a card that arrives meanwhile may wait for (a fraction of a millisecond).
STEP: Final = 25

_Job = FetchRequest | FetchRefused


class FetchServer:
    """A :class:`~tabled.daemon.mqtt.session.ConnectionPart`: serves the pit's fetch requests
    from the journal."""

    def __init__(self, session: BrokerSession, journal: Journal, gate: FetchGate, *,
                 puback_timeout: float) -> None:
        self.session = session
        self.journal = journal
        self.gate = gate
        self.puback_timeout = puback_timeout
        self.requests = 0
        #: Requests served (every part of their reply acknowledged by the broker) and the
        #: messages those replies carried.
        self.served = 0
        self.messages = 0
        self.refused: dict[str, int] = dict.fromkeys(REASONS, 0)
        self._waiting: deque[_Job] = deque()
        self._wake = asyncio.Event()
        self._repeats: dict[str, Repeats] = {}
        session.subscribe(session.topics.fetch, self._message)

    def counters(self) -> dict[str, Any]:
        """``fetch`` in ``…/metrics``."""
        return {"requests": self.requests, "served": self.served, "messages": self.messages,
                "refused": dict(self.refused)}

    # -- requests in -----------------------------------------------------------------------

    async def _message(self, topic: str, payload: bytes) -> None:
        """Check a request as it comes (no await: the session's incoming loop goes on at
        once) and leave it to :meth:`serve`."""
        if topic != self.session.topics.fetch:
            return
        self.requests += 1
        try:
            job: _Job = self.gate.check(payload)
        except FetchRefused as refusal:
            self._refuse(refusal)
            return
        if len(self._waiting) >= MAX_WAITING:
            self._refuse(FetchRefused("rate_limited", f"{MAX_WAITING} requests waiting",
                                      nonce=job.nonce), answer=False)
            return
        self._waiting.append(job)
        self._wake.set()

    def _refuse(self, refusal: FetchRefused, *, answer: bool = True) -> None:
        """Count and log a refusal; say it to whoever asked where that is allowed: to the
        reply topic of this table's that the request named, always if its MAC was right, at
        the refusals' own rate otherwise (a forger gets no amplifier)."""
        self.refused[refusal.reason] = self.refused.get(refusal.reason, 0) + 1
        repeats = self._repeats.setdefault(refusal.reason, Repeats(T_REPEAT)).seen(
            refusal.detail)
        if repeats is not None:
            log.warning("fetch_refused", reason=refusal.reason, detail=refusal.detail,
                        **({"repeats": repeats} if repeats else {}))
        if (answer and refusal.reply_to is not None and len(self._waiting) < MAX_WAITING
                and (refusal.authenticated or self.gate.refusals.take())):
            self._waiting.append(refusal)
            self._wake.set()

    # -- the connection part ---------------------------------------------------------------

    async def on_connect(self, client: aiomqtt.Client) -> None:
        pass

    async def serve(self, client: aiomqtt.Client) -> None:
        while True:
            while self._waiting:
                job = self._waiting.popleft()
                if isinstance(job, FetchRefused):
                    assert job.reply_to is not None
                    await self._publish(client, job.reply_to, job.reply())
                else:
                    await self._serve(client, job)
            self._wake.clear()
            await self._wake.wait()

    def on_disconnect(self) -> None:
        # nothing waits across connections: the broker's session is clean, the pit asks again
        self._waiting.clear()

    # -- replies out -----------------------------------------------------------------------

    async def _serve(self, client: aiomqtt.Client, request: FetchRequest) -> None:
        """The request's range, a reply message at a time: each read from the journal just
        before it is sent, a few rows at a time (:data:`STEP`), letting the event loop run
        between reads."""
        head = {"type": "fetch_reply", "ok": True, "nonce": request.nonce,
                "stream": request.stream, "from": request.first, "to": request.last,
                "journal": {"id": self.journal.id, "first": FIRST_NUMBER}}
        cursor, part, sent, read_all = request.first, 0, 0, False
        pending: list[str] = []  # read, not sent yet, and their sizes in a reply
        sizes: list[int] = []
        while True:
            while not read_all and part_count(sizes) == len(sizes) <= PART_MESSAGES:
                try:
                    rows = self.journal.published_range(request.stream, cursor, request.last,
                                                        STEP)
                except JournalError as exc:
                    await self._unavailable(client, request, exc)
                    return
                pending += [row.payload for row in rows]
                sizes += [escaped_size(row.payload) for row in rows]
                if len(rows) < STEP:
                    read_all = True
                else:
                    cursor = rows[-1].stream_seq + 1
                await asyncio.sleep(0)
            count = part_count(sizes)
            last = read_all and count == len(pending)
            part += 1
            await self._publish(client, request.reply_to, {
                **head, "messages": pending[:count], "part": part, "last": last,
                "next": request.last + 1,
                "high_water": self.journal.high_water()[request.stream]})
            sent += count
            del pending[:count], sizes[:count]
            if last:
                break
        self.served += 1
        self.messages += sent
        log.info("fetch_served", requester=request.requester, stream=request.stream,
                 first=request.first, last=request.last, messages=sent, parts=part)

    async def _unavailable(self, client: aiomqtt.Client, request: FetchRequest,
                           exc: JournalError) -> None:
        refusal = FetchRefused("unavailable", f"the journal cannot be read: {exc}",
                               nonce=request.nonce, reply_to=request.reply_to,
                               authenticated=True)
        self.refused["unavailable"] += 1
        log.warning("fetch_refused", reason=refusal.reason, detail=refusal.detail)
        await self._publish(client, request.reply_to, refusal.reply())

    async def _publish(self, client: aiomqtt.Client, topic: str, body: dict[str, Any]) -> None:
        await client.publish(topic, dumps(body), qos=1, timeout=self.puback_timeout)
