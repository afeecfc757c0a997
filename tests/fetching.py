"""The pit's side of ``…/fetch`` as tests speak it (docs/mqtt.md "Reconciliation"): a signed
request, and a client that sends requests and collects each one's whole reply, on a real broker.

For the daemon's tests and the pit's end-to-end tests alike: nothing here is the pit's code, it
is what the protocol says, so that each side is checked against the spec, not against the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.contract.signing import sign
from tabled.contract.timeutil import rfc3339_now


def fetch_key(path: Path) -> bytes:
    """A fetch key file as `tabled console keygen` writes one (64 hex + newline, mode 0600);
    the key, as both ends read it."""
    key = secrets.token_hex(32)
    path.write_text(key + "\n")
    path.chmod(0o600)
    return key.encode()


def signed_fetch(key: bytes, base: str, stream: str, first: int, last: int, *,
                 requester: str = "pit-a", ts: str | None = None, nonce: str | None = None,
                 over: dict[str, Any] | None = None) -> dict[str, Any]:
    """A fetch request for ``stream``'s numbers ``first`` to ``last`` of the table whose topics
    start ``base`` (``tabled/<site>/<table>``), signed with ``key``. ``over`` replaces or adds
    fields before signing (a wrong ``reply_to``, ``"from": -1``, ...)."""
    body: dict[str, Any] = {
        "stream": stream, "from": first, "to": last, "requester": requester,
        "reply_to": f"{base}/fetch/reply/{requester}", "ts": ts or rfc3339_now(),
        "nonce": nonce or secrets.token_hex(16), **(over or {})}
    return {**body, "mac": sign(body, key)}


class FetchClient:
    """A broker client that asks one table for ranges and collects the replies (all of them,
    in arrival order, in :attr:`replies`), on ``<base>/fetch/reply/<requester>``."""

    def __init__(self, host: str, port: int, base: str, key: bytes, *,
                 requester: str = "pit-a", **client_kwargs: Any) -> None:
        self.host, self.port, self.base, self.key = host, port, base, key
        self.requester = requester
        self.client_kwargs = client_kwargs
        self.replies: list[dict[str, Any]] = []
        #: The reply messages' payloads as they came (bytes), in arrival order.
        self.raw: list[bytes] = []
        self._changed = asyncio.Event()
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def reply_topic(self) -> str:
        return f"{self.base}/fetch/reply/{self.requester}"

    async def __aenter__(self) -> FetchClient:
        self._client = aiomqtt.Client(self.host, self.port, **self.client_kwargs)
        await self._client.__aenter__()
        await self._client.subscribe(f"{self.base}/fetch/reply/+", qos=1)
        self._task = asyncio.create_task(self._read(self._client))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None and self._client is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
            await self._task
        await self._client.__aexit__(None, None, None)

    async def _read(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            raw = message.payload if isinstance(message.payload, bytes) else str(
                message.payload).encode()
            self.raw.append(raw)
            self.replies.append({**json.loads(raw), "_topic": str(message.topic)})
            self._changed.set()

    async def send(self, body: dict[str, Any] | bytes) -> int:
        """Publish ``body`` (signed, or deliberately not; bytes as they are) on the table's
        ``…/fetch``; return how many replies had come before it (for :meth:`reply_to`)."""
        assert self._client is not None
        since = len(self.replies)
        payload = body if isinstance(body, bytes) else json.dumps(body)
        await self._client.publish(f"{self.base}/fetch", payload, qos=1)
        return since

    async def request(self, stream: str, first: int, last: int, *, timeout: float = 15.0,
                      over: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Ask for ``stream``'s ``first`` to ``last``; return the reply's parts in order (one
        refusal, or every part up to the one that says ``last``)."""
        body = signed_fetch(self.key, self.base, stream, first, last,
                            requester=self.requester, over=over)
        since = await self.send(body)
        return await self.reply_to(body["nonce"], since=since, timeout=timeout)

    async def reply_to(self, nonce: str | None, *, since: int = 0, timeout: float = 15.0
                       ) -> list[dict[str, Any]]:
        """The whole reply to the request with ``nonce`` (among the replies after the first
        ``since``): its parts, or its refusal."""
        async with asyncio.timeout(timeout):
            while True:
                self._changed.clear()
                parts = [r for r in self.replies[since:] if r.get("nonce") == nonce]
                if any(p.get("ok") is False or p.get("last") is True for p in parts):
                    return parts
                await self._changed.wait()

    async def fetch_all(self, stream: str, first: int, last: int) -> list[str]:
        """Every message of ``stream`` from ``first`` to ``last``, asking again from each
        reply's ``next`` while the range was clipped and the stream goes on (up to its
        ``high_water``): the published texts, in order."""
        texts: list[str] = []
        while first <= last:
            parts = await self.request(stream, first, last)
            assert all(p["ok"] for p in parts), parts
            texts += [text for p in parts for text in p["messages"]]
            first = parts[-1]["next"]
            if first > parts[-1]["high_water"]:
                break
        return texts
