"""What serving a stretch of a stream from a big journal costs (issue 27, ``…/fetch``).

``python -m bench.fetch_range [--rows N] [--dir DIR] [--lag]``.

Builds a journal of N rows (default 10^6: four in five an event published as itself, the rest
outcomes, faults and unpublished inputs, written 2,000 rows a transaction), then times, over
random starting numbers: the binary search for the event stream's first row
(:meth:`~tabled.daemon.journal.Journal._first_row_numbered`), a read of 101 messages of each
stream (:meth:`~tabled.daemon.journal.Journal.published_range`, what one reply part reads), a
step of 25 (what the fetch server reads between two turns of the event loop), and, once, the
plain scan of the event stream's numbers that the binary search replaces. With ``--lag``, the
event loop's lag (a 2 ms sleep's overshoot: what a card arriving would wait) while the fetch
server answers five requests of 500 events a second over a real Mosquitto, against the same
without requests. Prints the figures; writes nothing but the journal, in a temporary directory
(or ``--dir``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from tabled.contract.signing import sign
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.broker import Mosquitto
from tabled.daemon.config import MQTTSettings
from tabled.daemon.fetch import FetchGate
from tabled.daemon.journal import InputEntry, Journal, OutputEntry
from tabled.daemon.mqtt.fetch import FetchServer
from tabled.daemon.mqtt.numbers import StatusNumbers
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.topics import Topics

TS = "2026-12-03T00:00:00.000Z"


def build(path: Path, rows: int) -> None:
    journal = Journal(path)
    rng = random.Random(1)
    batch: list[InputEntry | OutputEntry] = []
    for n in range(rows):
        draw = rng.random()
        if draw < 0.8:
            batch.append(InputEntry("device:shoe-1", {"type": "card", "card": "AS", "n": n},
                                    published=True, round=n // 10))
        elif draw < 0.9:
            batch.append(OutputEntry("outcome", {"type": "outcome", "n": n}, round=n // 10))
        elif draw < 0.92:
            batch.append(OutputEntry("fault", {"code": "x", "n": n}))
        else:
            batch.append(InputEntry("console:c", {"type": "decision", "n": n}))
        if len(batch) == 2000:
            journal.events.write(batch, TS)
            batch = []
    if batch:
        journal.events.write(batch, TS)
    journal.close()


def timed(runs: int, action: Callable[[], object]) -> str:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return (f"p50 {samples[len(samples) // 2] * 1000:.3f} ms, "
            f"p99 {samples[int(len(samples) * 0.99)] * 1000:.3f} ms")


async def loop_lag(journal: Journal, seconds: float = 5.0) -> None:
    """The event loop's lag, idle and while serving requests, alternately, twice each."""
    key, topics = secrets.token_hex(32).encode(), Topics("tabled", "lab", "t1")
    high = journal.high_water()["event"]
    with Mosquitto() as broker:
        session = BrokerSession(MQTTSettings(), broker.url, topics,
                                StatusNumbers(journal.delivery), client_id="bench", birth=dict)
        gate = FetchGate(key, topics.base, max_messages=500, rate=100.0, max_skew=30.0)
        server = FetchServer(session, journal, gate, puback_timeout=10.0)
        async with aiomqtt.Client("127.0.0.1", broker.port) as client:
            serving = asyncio.create_task(server.serve(client))
            for load in (False, True, False, True):
                samples: list[float] = []
                start = time.perf_counter()
                next_batch = start
                while time.perf_counter() - start < seconds:
                    if load and time.perf_counter() >= next_batch:
                        next_batch += 1.0
                        for _ in range(5):
                            first = random.randrange(max(high - 499, 1))
                            body = {"stream": "event", "from": first, "to": first + 499,
                                    "requester": "bench", "ts": rfc3339_now(),
                                    "reply_to": f"{topics.base}/fetch/reply/bench",
                                    "nonce": secrets.token_hex(16)}
                            await server._message(topics.fetch, json.dumps(
                                {**body, "mac": sign(body, key)}).encode())
                    before = time.perf_counter()
                    await asyncio.sleep(0.002)
                    samples.append(time.perf_counter() - before - 0.002)
                samples.sort()
                print(f"loop lag, {'5 requests/s' if load else 'idle'}:".ljust(24),
                      f"p50 {samples[len(samples) // 2] * 1000:.3f} ms, "
                      f"p99 {samples[int(len(samples) * 0.99)] * 1000:.3f} ms, "
                      f"max {samples[-1] * 1000:.3f} ms (served {server.messages} so far)")
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--lag", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "journal.sqlite"
        build(path, args.rows)
        journal = Journal(path, create=False)
        high = journal.high_water()
        rng = random.Random(2)
        print(f"{journal.last_id} rows; last numbers {high}")
        print("event: binary search   ", timed(300, lambda: journal._first_row_numbered(
            "event", rng.randrange(high["event"] + 1))))
        for topic in ("event", "outcome", "fault"):
            for limit in (101, 25):
                print(f"{topic}: {limit} messages".ljust(24), timed(300, lambda t=topic, n=limit:
                      journal.published_range(t, (f := rng.randrange(high[t] + 1)),
                                              f + 499, n)))
        db = sqlite3.connect(path)
        start = time.perf_counter()
        db.execute("SELECT id FROM journal WHERE topic = 'event' AND stream_seq BETWEEN ? "
                   "AND ?", (high["event"] // 2, high["event"] // 2 + 100)).fetchall()
        print(f"event: a scan instead   {(time.perf_counter() - start) * 1000:.1f} ms")
        db.close()
        if args.lag:
            asyncio.run(loop_lag(journal))
        journal.close()


if __name__ == "__main__":
    main()
