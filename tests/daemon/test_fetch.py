"""The fetch gate and the fetch server on their own (docs/mqtt.md "Reconciliation"): each check
with its clock injected, the rate, the clipping, and a reply cut into parts by count and by
bytes, over a real journal file. The whole, against a real Mosquitto and ``tabled run``, is
tests/integration/test_fetch.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import MQTTSettings
from tabled.daemon.fetch import PART_BYTES, FetchGate, FetchRefused, TokenBucket, part_size
from tabled.daemon.journal import InputEntry, Journal, OutputEntry
from tabled.daemon.mqtt.fetch import FetchServer
from tabled.daemon.mqtt.numbers import StatusNumbers
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.topics import Topics
from tests.fetching import signed_fetch
from tests.waiting import until

KEY = b"ab" * 32
TOPICS = Topics("tabled", "lab", "t1")
BASE = TOPICS.base


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def gate(wall: Clock | None = None, mono: Clock | None = None, **over: Any) -> FetchGate:
    settings: dict[str, Any] = {"max_messages": 500, "rate": 5.0, "max_skew": 30.0, **over}
    return FetchGate(KEY, BASE, clock=wall if wall is not None else time.time,
                     monotonic=mono if mono is not None else Clock(0), **settings)


def payload(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def refusal(check: FetchGate, body: dict[str, Any] | bytes) -> FetchRefused:
    with pytest.raises(FetchRefused) as info:
        check.check(body if isinstance(body, bytes) else payload(body))
    return info.value


def test_a_signed_request_is_clipped_to_the_most_a_request_is_served() -> None:
    check = gate(max_messages=50)
    request = check.check(payload(signed_fetch(KEY, BASE, "event", 10, 10**9)))
    assert (request.stream, request.first, request.last, request.asked) == (
        "event", 10, 59, 10**9)
    assert request.reply_to == f"{BASE}/fetch/reply/pit-a"


def test_each_refusal_says_why_and_where_it_may_be_said() -> None:
    mono = Clock(0)
    check = gate(mono=mono)
    forged = refusal(check, signed_fetch(b"cd" * 32, BASE, "event", 0, 1, nonce="n" * 32))
    assert (forged.reason, forged.authenticated, forged.nonce) == ("forged", False, "n" * 32)
    assert forged.reply_to == f"{BASE}/fetch/reply/pit-a"
    # a reply topic that is not this table's is nowhere to say anything
    elsewhere = refusal(check, signed_fetch(b"cd" * 32, BASE, "event", 0, 1,
                                            over={"reply_to": "tabled/lab/t2/cmd/void"}))
    assert elsewhere.reply_to is None
    assert refusal(check, b"\xff{").reason == "malformed"
    assert refusal(check, b"[1]").reply().keys() == {"type", "nonce", "ok", "error", "detail"}
    body = signed_fetch(KEY, BASE, "outcome", 0, 1)
    check.check(payload(body))
    assert refusal(check, body).reason == "replayed"
    stale = refusal(check, signed_fetch(KEY, BASE, "outcome", 0, 1, ts="2026-01-01T00:00:00Z"))
    assert (stale.reason, stale.authenticated) == ("stale", True)
    mono.now += 61  # twice the skew later the nonce is forgotten: its timestamp is stale by then
    check._forget_old()
    assert not check._nonces


def test_the_rate_is_a_token_bucket_with_a_burst_of_ten() -> None:
    mono = Clock(100)
    bucket = TokenBucket(5, 10, mono)
    assert sum(bucket.take() for _ in range(20)) == 10
    mono.now += 1
    assert sum(bucket.take() for _ in range(20)) == 5
    check = gate(mono=mono, rate=1.0)
    reasons = []
    for _ in range(12):
        try:
            check.check(payload(signed_fetch(KEY, BASE, "fault", 0, 0)))
            reasons.append("served")
        except FetchRefused as exc:
            reasons.append(exc.reason)
    assert reasons == ["served"] * 10 + ["rate_limited"] * 2


def test_a_part_holds_at_most_100_messages_or_60000_bytes_and_at_least_one() -> None:
    assert part_size(["{}"] * 250) == 100
    big = '{"text":"' + "x" * 9_990 + '"}'
    assert part_size([big] * 10) == 5  # 5 x 10,004 escaped bytes: the 6th would pass 60,000
    huge = "y" * (PART_BYTES * 2)
    assert part_size([huge, "{}"]) == 1
    assert part_size([]) == 0


class RecordingClient:
    """Takes publishes like aiomqtt's client, each acknowledged after a turn of the loop."""

    def __init__(self) -> None:
        self.published: list[tuple[str, str]] = []

    async def publish(self, topic: str, payload: str, *, qos: int = 0, retain: bool = False,
                      timeout: float | None = None) -> None:
        assert qos == 1 and not retain
        await asyncio.sleep(0)
        self.published.append((topic, payload))


async def test_a_large_range_goes_in_parts_each_read_just_before_it_is_sent(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    for n in range(300):  # 2 KiB events: 29 to a part; every tenth row is withheld
        journal.events.write([InputEntry("device:shoe-1", {"type": "card", "pad": "p" * 2000,
                                                           "n": n}, published=n % 10 != 0),
                              OutputEntry("outcome", {"n": n}, round=n + 1)], rfc3339_now())
    session = BrokerSession(MQTTSettings(), "mqtt://127.0.0.1:1", TOPICS,
                            StatusNumbers(journal.delivery), client_id="t", birth=dict)
    server = FetchServer(session, journal, gate(), puback_timeout=1)
    assert [topic for topic, _ in session._subscriptions] == [f"{BASE}/fetch"]
    client = RecordingClient()
    serving = asyncio.create_task(server.serve(client))  # type: ignore[arg-type]
    body = signed_fetch(KEY, BASE, "event", 5, 500)
    await server._message(f"{BASE}/fetch", payload(body))
    async with asyncio.timeout(5):
        await until(lambda: bool(client.published)
                    and json.loads(client.published[-1][1])["last"])
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    parts = [json.loads(text) for _, text in client.published]
    assert all(len(text.encode()) < 64 * 1024 for _, text in client.published)
    assert [p["part"] for p in parts] == list(range(1, len(parts) + 1)) and len(parts) == 10
    assert [p["last"] for p in parts] == [False] * 9 + [True]
    served = [m for p in parts for m in p["messages"]]
    assert served == [row.payload for row in journal._outputs_after(0, 10_000)
                      if row.topic == "event" and 5 <= row.stream_seq <= 269]
    assert parts[0]["next"] == 501 and parts[0]["to"] == 500  # clipped at 500 numbers
    assert parts[0]["high_water"] == 269 and parts[0]["journal"]["id"] == journal.id
    assert server.counters() == {"requests": 1, "served": 1, "messages": 265,
                                 "refused": {"forged": 0, "stale": 0, "replayed": 0,
                                             "malformed": 0, "rate_limited": 0,
                                             "unavailable": 0}}
    journal.close()
