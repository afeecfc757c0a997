"""A table for the pit's reconciliation tests: what a table daemon publishes, made by the
daemon's own runtime and encoding (``tests.pit.tablefeed.TableFeed``: the rules, the journal's
numbering and encoding, the birth record), kept in memory as its journal would keep it, and
served back on ``…/fetch`` exactly as docs/mqtt.md's fetch protocol says (signed requests,
refusals, replies chunked by count and bytes, ``next``, ``high_water``, ``journal``).

Not a daemon (no devices, no disk): the unit tests of the pit side use it; the end-to-end tests
use real daemons. Each test says what the table withholds from the broker (``drop``), whether it
answers (``answering``), its journal's id and first number.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.contract.signing import verify

PREFIX = "tabled"
MAX_MESSAGES = 500
MAX_PART_MESSAGES = 100
MAX_PART_BYTES = 60_000
STREAMS = ("event", "outcome", "fault")


@dataclass
class ServingTable:
    """One table. ``await start()``, ``play(n)``, ``await stop()``."""

    port: int
    key: bytes
    index: int = 0
    journals: Path = Path("/tmp")
    #: answer fetch requests at all (False: an offline table, or one without a fetch key)
    answering: bool = True
    #: refuse every request with this error instead of serving
    refuse: str | None = None
    journal_id: str = field(default_factory=lambda: secrets.token_hex(8))
    first: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STREAMS, 0))
    #: the journal: every published text of each stream, index = table_seq
    journal: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in STREAMS})
    requests: list[dict[str, Any]] = field(default_factory=list)
    served: int = 0
    site: str = "floor"
    #: the broker identity it connects as (None: anonymous)
    username: str | None = None
    password: str | None = None

    def __post_init__(self) -> None:
        from tests.pit.tablefeed import TableFeed

        self.feed = TableFeed(self.index, self.journals, site=self.site)
        self.name = self.feed.name
        self.base = f"{PREFIX}/{self.site}/{self.name}"
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._nonces: set[str] = set()

    # -- publishing -----------------------------------------------------------------------------

    def high_water(self) -> dict[str, int]:
        return {s: len(self.journal[s]) - 1 for s in STREAMS}

    def journal_info(self) -> dict[str, Any]:
        return {"id": self.journal_id, "first": dict(self.first)}

    async def start(self) -> None:
        self._client = aiomqtt.Client("127.0.0.1", self.port,
                                      identifier=f"serving-{self.name}-{secrets.token_hex(3)}",
                                      username=self.username, password=self.password)
        await self._client.__aenter__()
        await self._client.subscribe(f"{self.base}/fetch", qos=1)
        self._task = asyncio.create_task(self._serve())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._client is not None:
            await self._client.__aexit__(None, None, None)

    async def birth(self) -> None:
        """The retained birth record with the high-water marks and the journal."""
        assert self._client is not None
        for out in self.feed.birth():
            body = json.loads(out.payload)
            if out.topic.endswith("/status") and "/device/" not in out.topic:
                body["high_water"] = self.high_water()
                body["journal"] = {**body.get("journal", {}), **self.journal_info()}
            await self._client.publish(out.topic, json.dumps(body, separators=(",", ":")),
                                       qos=1, retain=out.retain)

    async def metrics(self) -> None:
        assert self._client is not None
        for out in self.feed.metrics():
            body = json.loads(out.payload)
            body["high_water"] = self.high_water()
            await self._client.publish(out.topic, json.dumps(body), qos=0)

    async def play(self, steps: int, *, publish: bool = True,
                   drop: set[tuple[str, int]] | None = None) -> None:
        """``steps`` device events through the table's runtime; what they make is journaled
        and (unless ``publish`` is False, or the number is in ``drop``) published, QoS 1."""
        for _ in range(steps):
            for out in self.feed.step():
                stream = out.topic.rsplit("/", 1)[1]
                assert out.seq == len(self.journal[stream]), (stream, out.seq)
                self.journal[stream].append(out.payload)
                if publish and (drop is None or (stream, out.seq) not in drop):
                    assert self._client is not None
                    await self._client.publish(out.topic, out.payload, qos=1)

    def rounds(self) -> int:
        return len(self.journal["outcome"])

    # -- serving --------------------------------------------------------------------------------

    async def _serve(self) -> None:
        assert self._client is not None
        async for message in self._client.messages:
            payload = message.payload
            assert isinstance(payload, bytes)
            try:
                await self._request(json.loads(payload))
            except (ValueError, TypeError) as exc:
                await self._refuse(None, None, "malformed", str(exc))

    async def _refuse(self, reply_to: str | None, nonce: Any, error: str, detail: str) -> None:
        if reply_to is None:
            return
        assert self._client is not None
        await self._client.publish(reply_to, json.dumps(
            {"type": "fetch_reply", "nonce": nonce, "ok": False, "error": error,
             "detail": detail}), qos=1)

    async def _request(self, body: dict[str, Any]) -> None:
        if not self.answering:
            return
        self.requests.append(body)
        requester = body.get("requester")
        reply_to = f"{self.base}/fetch/reply/{requester}"
        if body.get("reply_to") != reply_to:
            return await self._refuse(None, body.get("nonce"), "malformed", "reply_to")
        if not verify(body, self.key):
            return await self._refuse(reply_to, body.get("nonce"), "forged", "bad mac")
        ts = datetime.fromisoformat(str(body["ts"]).replace("Z", "+00:00")).timestamp()
        if abs(ts - time.time()) > 30:
            return await self._refuse(reply_to, body.get("nonce"), "stale", "ts")
        if body["nonce"] in self._nonces:
            return await self._refuse(reply_to, body["nonce"], "replayed", "nonce")
        self._nonces.add(body["nonce"])
        if self.refuse is not None:
            return await self._refuse(reply_to, body["nonce"], self.refuse, "refused")
        stream, first, last = body["stream"], int(body["from"]), int(body["to"])
        if stream not in STREAMS or first > last or first < 0:
            return await self._refuse(reply_to, body["nonce"], "malformed", "range")
        last = min(last, first + MAX_MESSAGES - 1)
        texts = [self.journal[stream][n] for n in range(max(first, self.first[stream]),
                                                         min(last, len(self.journal[stream]) - 1)
                                                         + 1)]
        parts: list[list[str]] = [[]]
        size = 0
        for text in texts:
            if len(parts[-1]) >= MAX_PART_MESSAGES or size + len(text) > MAX_PART_BYTES:
                parts.append([])
                size = 0
            parts[-1].append(text)
            size += len(text)
        assert self._client is not None
        for k, part in enumerate(parts, 1):
            self.served += len(part)
            await self._client.publish(reply_to, json.dumps({
                "type": "fetch_reply", "ok": True, "nonce": body["nonce"], "stream": stream,
                "from": first, "to": last,
                "journal": {"id": self.journal_id, "first": self.first[stream]},
                "messages": part, "part": k, "last": k == len(parts), "next": last + 1,
                "high_water": len(self.journal[stream]) - 1}), qos=1)
        return None
