"""The pit's fetch requests: authenticated, fresh, used once, bounded; and the replies' parts.

Owns the request format (docs/mqtt.md "Reconciliation: ``…/fetch``") and its checks. A request
is a JSON object::

    {"stream": "event", "from": 120, "to": 180, "requester": "pit-a",
     "reply_to": "tabled/macau-01/bac-07/fetch/reply/pit-a",
     "ts": "2026-12-03T23:00:00.000Z", "nonce": "<32 hex>", "mac": "<hex HMAC-SHA256>"}

signed as a dealer console's command is (:mod:`tabled.contract.signing`), with the key shared
with the pit. It is refused when its MAC is wrong (``forged``), its timestamp further than
``max_skew`` from our clock (``stale``), its nonce seen within twice that (``replayed``), its
content not a request (``malformed``: a reply topic that is not the requester's own under this
table), or it comes faster than the table serves (``rate_limited``: a token bucket). Also how a
served range is cut into reply messages. Pure apart from the clocks, which are injected; never
logs.
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tabled.contract.signing import verify
from tabled.daemon.commands import CommandRejected, parse_ts
from tabled.daemon.errors import DaemonError
from tabled.daemon.journal import DURABLE_TOPICS

#: The reasons a request is refused (each counted in ``…/metrics``, ``fetch.refused``).
REASONS: Final = ("forged", "stale", "replayed", "malformed", "rate_limited", "unavailable")
#: The highest number a request may name (the contract's range of ``table_seq``).
MAX_NUMBER: Final = 2**53 - 1
#: Requests the table serves at once, beyond its steady rate (the token bucket's size).
BURST: Final = 10
#: A reply message holds at most this many messages, and at most this many bytes of them as
#: JSON strings (escaped): a reply stays under 64 KiB.
PART_MESSAGES: Final = 100
PART_BYTES: Final = 60_000
#: The nonces remembered to refuse replays, at most (each for twice ``max_skew``).
MAX_NONCES: Final = 100_000
REQUESTER: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


class FetchRefused(DaemonError):
    """A request refused: ``reason`` (one of :data:`REASONS`) and ``detail``; ``nonce`` and
    ``reply_to``, where the request had them in a usable form (where to say so), and whether
    it was ``authenticated`` (its MAC was right)."""

    def __init__(self, reason: str, detail: str, *, nonce: str | None = None,
                 reply_to: str | None = None, authenticated: bool = False) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.nonce = nonce
        self.reply_to = reply_to
        self.authenticated = authenticated

    def reply(self) -> dict[str, Any]:
        """The refusal as the reply the pit reads."""
        return {"type": "fetch_reply", "nonce": self.nonce, "ok": False, "error": self.reason,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A request that passed every check: ``stream``'s numbers ``first`` to ``last`` (clipped
    to the most one request is served; ``asked`` is the ``to`` it named)."""

    stream: str
    first: int
    last: int
    asked: int
    requester: str
    reply_to: str
    nonce: str


@dataclass(frozen=True, slots=True)
class _Said:
    """What a request said that a refusal may use: its nonce and a reply topic of ours."""

    nonce: str | None
    reply_to: str | None

    def refused(self, reason: str, detail: str, *, authenticated: bool = True) -> FetchRefused:
        return FetchRefused(reason, detail, nonce=self.nonce, reply_to=self.reply_to,
                            authenticated=authenticated)


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class FetchGate:
    """Checks the requests to one table (whose topics start ``base``) against the shared key,
    the clock, the nonces seen and the rate."""

    def __init__(self, key: bytes, base: str, *, max_messages: int, rate: float,
                 max_skew: float, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._key = key
        self.reply_prefix = f"{base}/fetch/reply/"
        self.max_messages = max_messages
        self.max_skew = max_skew
        self._clock = clock
        self._monotonic = monotonic
        self.bucket = TokenBucket(rate, BURST, monotonic)
        #: What answering requests that were not the pit's may cost: their refusals are said
        #: at the same rate, the rest only counted and logged.
        self.refusals = TokenBucket(rate, BURST, monotonic)
        self._nonces: OrderedDict[str, float] = OrderedDict()  # nonce -> forgotten at

    def check(self, payload: bytes) -> FetchRequest:
        """The request, or :class:`FetchRefused` saying why not."""
        try:
            body = json.loads(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise FetchRefused("malformed", "not JSON") from None
        if not isinstance(body, dict):
            raise FetchRefused("malformed", "not a JSON object")
        nonce = body.get("nonce")
        said = _Said(nonce if isinstance(nonce, str) and len(nonce) <= 128 else None,
                     self._reply_topic(body.get("reply_to")))
        if not verify(body, self._key):
            raise said.refused("forged", "the mac does not match the content",
                               authenticated=False)
        # From here on the content is the pit's own words.
        try:
            ts = parse_ts(body.get("ts"))
        except CommandRejected as exc:
            raise said.refused("malformed", exc.detail) from None
        skew = abs(self._clock() - ts)
        if skew > self.max_skew:
            raise said.refused("stale", f"timestamp is {skew:.1f} s from our clock (limit "
                                        f"{self.max_skew:g} s)")
        if not isinstance(nonce, str) or not 16 <= len(nonce) <= 128:
            raise said.refused("malformed", "nonce must be a string of 16 to 128 characters")
        self._forget_old()
        if nonce in self._nonces:
            raise said.refused("replayed", f"nonce {nonce} was already used")
        self._nonces[nonce] = self._monotonic() + 2 * self.max_skew
        while len(self._nonces) > MAX_NONCES:
            self._nonces.popitem(last=False)
        request = self._request(body, nonce, said)
        if not self.bucket.take():
            raise said.refused("rate_limited", f"more than {self.bucket.rate:g} requests a "
                                               f"second (burst {BURST})")
        return request

    def _request(self, body: dict[str, Any], nonce: str, said: _Said) -> FetchRequest:
        def refuse(detail: str) -> FetchRefused:
            return said.refused("malformed", detail)

        stream = body.get("stream")
        if stream not in DURABLE_TOPICS:
            raise refuse(f"stream {stream!r} is not one of {', '.join(DURABLE_TOPICS)}")
        first, asked = body.get("from"), body.get("to")
        for name, value in (("from", first), ("to", asked)):
            if not isinstance(value, int) or isinstance(value, bool) \
                    or not 0 <= value <= MAX_NUMBER:
                raise refuse(f"{name} {value!r} is not an integer from 0 to 2^53-1")
        assert isinstance(first, int) and isinstance(asked, int)
        if first > asked:
            raise refuse(f"from {first} is after to {asked}")
        requester = body.get("requester")
        if not isinstance(requester, str) or not REQUESTER.fullmatch(requester):
            raise refuse("requester must be 1 to 64 of A-Z a-z 0-9 _ -")
        reply_to = body.get("reply_to")
        if reply_to != self.reply_prefix + requester:
            raise refuse(f"reply_to must be {self.reply_prefix}{requester}")
        return FetchRequest(stream, first, min(asked, first + self.max_messages - 1), asked,
                            requester, reply_to, nonce)

    def _reply_topic(self, value: Any) -> str | None:
        """``value`` if it is a reply topic of this table's (where a refusal may be said)."""
        if isinstance(value, str) and value.startswith(self.reply_prefix) \
                and REQUESTER.fullmatch(value[len(self.reply_prefix):]):
            return value
        return None

    def _forget_old(self) -> None:
        now = self._monotonic()
        nonces = self._nonces
        while nonces and next(iter(nonces.values())) <= now:
            nonces.popitem(last=False)


def escaped_size(payload: str) -> int:
    """The bytes ``payload`` takes in a reply: as a JSON string, UTF-8."""
    return len(json.dumps(payload, ensure_ascii=False).encode())


def part_count(sizes: Sequence[int]) -> int:
    """How many messages of these :func:`escaped_size` go into one reply message (at least
    one, if any): at most :data:`PART_MESSAGES`, and at most :data:`PART_BYTES` of them."""
    total = 0
    for count, size in enumerate(sizes[:PART_MESSAGES]):
        total += size
        if total > PART_BYTES and count > 0:
            return count
    return min(len(sizes), PART_MESSAGES)


def part_size(payloads: Sequence[str]) -> int:
    """How many of ``payloads`` go into one reply message (:func:`part_count`)."""
    return part_count([escaped_size(payload) for payload in payloads])
