"""A floor of tables for the pit benchmarks: what 200 table daemons publish, from one process.

The pit only sees MQTT, so a load is faithful if every message is what a table daemon
publishes. Each table here is a daemon's own :class:`~tabled.daemon.runtime.TableRuntime`
over its own :class:`~tabled.daemon.journal.Journal` (on tmpfs, so the fsyncs cost nothing),
fed by the simulators' own generation code (the shoe simulator's dealer, the dice sensor's
rolls, the shuffler's Q Poker rounds with the console's decisions and reveal; the seeded
streams of ``tests.oracle.integrity``), with each device event stamped as the drivers stamp it
(device, its sequence number, time, boot and message numbers). What goes out on ``…/event``,
``…/outcome`` and ``…/fault`` is read back from the journal after each commit and published
byte for byte, as the daemon's publisher does; the non-durable messages are numbered by the
daemon's own :class:`~tabled.daemon.mqtt.numbers.StatusNumbers` and
:class:`~tabled.daemon.mqtt.numbers.Sequences` over the same journal and built as the daemon
builds them (the birth record of :class:`~tabled.daemon.health.TableHealth`, the device
statuses of the supervisor, the metrics body). What is not a daemon here: the device links and
drivers (events are made, not read from a pty), and the broker connections (a few shared
connections instead of one per table; each table's messages go over one of them, in order,
QoS 1, as they would over its own).

Two ways to deal (``python -m bench.pitload``, driven over standard input by bench/pit.py):

- ``paced``: every table at ten times a real table's pace (a baccarat card every 0.6 s, a craps
  roll every 3 s, a Q Poker round every 6 s), table clocks on the wall clock, metrics every 5 s
  of wall time as the daemon sends them; the publish time of every outcome is written down,
  for the browser's publish → DOM latency (on CLOCK_MONOTONIC).
- ``day``: a day of table time (``--hours``) for every table at full speed, table clocks in
  the past day (what ``ts`` says), metrics every 5 s of table time; at most ``--window``
  messages ahead of what the pit has taken (its ``pit_messages_received_total``), so what is
  measured is the pit after a day, not a backlog in its queue.

Protocol on standard input/output: prints ``ready`` once connected; ``born`` → every table's
birth and device statuses, then ``born``; ``go`` → deals, then prints ``done``; ``stop`` →
writes the summary (``--out``) and exits.
"""

from __future__ import annotations

import argparse
import heapq
import io
import json
import os
import random
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from tests.pit.tablefeed import (
    CLOCK,
    SECONDS_PER_EVENT,
    Out,
    TableFeed,
)

SPEEDUP: Final = 10.0
#: The daemon's default metrics interval, seconds (config/tabled.example.toml).
METRICS_EVERY: Final = 5.0
CONNECTIONS: Final = 4


class Publisher:
    """A few paho connections; each table's messages always go over the same one."""

    def __init__(self, port: int, connections: int = CONNECTIONS) -> None:
        self.clients: list[paho.Client] = []
        self.sent = 0
        self._acked = 0
        self._lock = threading.Lock()
        for k in range(connections):
            client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"floor-load-{k}",
                                 protocol=paho.MQTTv311)
            client.max_inflight_messages_set(2000)
            client.max_queued_messages_set(0)
            client.on_publish = self._on_publish
            client.connect("127.0.0.1", port, keepalive=60)
            client.loop_start()
            self.clients.append(client)
        deadline = time.monotonic() + 10
        while not all(c.is_connected() for c in self.clients):
            if time.monotonic() > deadline:
                raise RuntimeError("the load could not connect to the broker")
            time.sleep(0.01)

    def _on_publish(self, *_: Any) -> None:
        with self._lock:
            self._acked += 1

    def publish(self, connection: int, out: Out) -> None:
        client = self.clients[connection % len(self.clients)]
        info = client.publish(out.topic, out.payload, qos=out.qos, retain=out.retain)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise RuntimeError(f"publish failed: {paho.error_string(info.rc)}")
        self.sent += 1

    def settled(self, timeout: float = 60.0) -> bool:
        """Wait until the broker acknowledged every QoS 1 publish (QoS 0 count at once)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._acked >= self.sent:
                    return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        for client in self.clients:
            client.disconnect()
            client.loop_stop()


def pit_received(url: str) -> int:
    """The pit's ``pit_messages_received_total``, all topics (from its /metrics)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("pit_messages_received_total{")))


# -- dealing ---------------------------------------------------------------------------------


def deal_paced(tables: list[TableFeed], pub: Publisher, seconds: float,
               times: list[tuple[str, int, float]]) -> None:
    """Every table at ten times a real pace for ``seconds``; outcomes' publish times in
    ``times`` (table, round, CLOCK_MONOTONIC seconds just before the publish call)."""
    rng = random.Random(7)
    start = time.monotonic()
    end = start + seconds
    heap: list[tuple[float, int, str]] = []
    for i, t in enumerate(tables):
        every = SECONDS_PER_EVENT[t.game] / SPEEDUP
        heap.append((start + rng.uniform(0, every), i, "event"))
        heap.append((start + rng.uniform(0, METRICS_EVERY), i, "metrics"))
    heapq.heapify(heap)
    while heap:
        due, i, kind = heapq.heappop(heap)
        if due >= end:
            continue
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        t = tables[i]
        if kind == "metrics":
            out = t.metrics()
            heapq.heappush(heap, (due + METRICS_EVERY, i, kind))
        else:
            out = t.step()
            every = SECONDS_PER_EVENT[t.game] / SPEEDUP
            heapq.heappush(heap, (due + every * rng.uniform(0.5, 1.5), i, kind))
        for o in out:
            if o.round is not None:
                times.append((t.name, o.round, time.monotonic()))
            pub.publish(t.connection, o)


def deal_day(tables: list[TableFeed], pub: Publisher, hours: float, window: int,
             pit_metrics: str | None, progress: Any) -> dict[str, Any]:
    """``hours`` of table time for every table, in table-time order, at full speed, at most
    ``window`` messages ahead of the pit."""
    import tabled.daemon.runtime as runtime_module

    rng = random.Random(11)
    day_end = time.time()
    day_start = day_end - hours * 3600
    runtime_module.rfc3339_now = CLOCK.rfc3339  # type: ignore[assignment]
    heap: list[tuple[float, int, str]] = []
    for i, t in enumerate(tables):
        heap.append((day_start + rng.uniform(0, SECONDS_PER_EVENT[t.game]), i, "event"))
        heap.append((day_start + rng.uniform(0, METRICS_EVERY), i, "metrics"))
    heapq.heapify(heap)
    started = time.monotonic()
    taken = pit_received(pit_metrics) if pit_metrics else 0
    base = pub.sent - taken
    waited = 0.0
    last_report = started
    while heap:
        due, i, kind = heapq.heappop(heap)
        if due >= day_end:
            continue
        CLOCK.now = due
        t = tables[i]
        if kind == "metrics":
            out = t.metrics()
            heapq.heappush(heap, (due + METRICS_EVERY, i, kind))
        else:
            out = t.step()
            heapq.heappush(heap, (due + SECONDS_PER_EVENT[t.game] * rng.uniform(0.5, 1.5), i,
                                  kind))
        for o in out:
            pub.publish(t.connection, o)
        if pit_metrics and pub.sent - base - taken > window:
            w0 = time.monotonic()
            while pub.sent - base - taken > window // 2:
                time.sleep(0.05)
                taken = pit_received(pit_metrics)
            waited += time.monotonic() - w0
        now = time.monotonic()
        if now - last_report > 30:
            last_report = now
            progress(f"table time {(due - day_start) / 3600:.1f} h of {hours:g}, "
                     f"{pub.sent:,} sent, {(now - started):.0f} s")
    CLOCK.now = None
    return {"hours": hours, "seconds": time.monotonic() - started, "waited_s": waited,
            "table_time_from": day_start, "table_time_to": day_end}


def serve(tables: list[TableFeed], pub: Publisher, summary: dict[str, Any],
          deal: Callable[[], None], out: Path) -> None:
    """The load process's side of the protocol (bench/pit.py and bench/scale.py drive it):
    ``ready``; on standard input ``born`` → every table's birth → ``born``; ``go`` →
    ``deal()`` → ``done``; ``stop`` (or the end) → ``summary``, with what was sent and
    published, written to ``out``."""
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "born":
            for t in tables:
                for o in t.birth():
                    pub.publish(t.connection, o)
            pub.settled()
            print("born", flush=True)
        elif command == "go":
            started = time.monotonic()
            deal()
            summary["settled"] = pub.settled()
            summary["deal_seconds"] = time.monotonic() - started
            print("done", flush=True)
        elif command == "stop":
            break
    summary["sent"] = pub.sent
    summary["published"] = {t.name: t.published for t in tables}
    pub.close()
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pitload")
    parser.add_argument("--port", type=int, required=True, help="the broker's port")
    parser.add_argument("--tables", type=int, required=True)
    parser.add_argument("--first", type=int, default=0, help="index of the first table")
    parser.add_argument("--journals", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mode", choices=("paced", "day"), required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--window", type=int, default=5000)
    parser.add_argument("--pit-metrics", help="the pit's /metrics URL (day mode)")
    args = parser.parse_args(argv)

    from tabled.contract.logs import configure

    configure("warning", "json", stream=io.StringIO())  # the runtime logs every outcome
    if args.mode == "day":  # births and statuses in the table time of the day's start
        CLOCK.now = time.time() - args.hours * 3600
    args.journals.mkdir(parents=True, exist_ok=True)
    tables = [TableFeed(i, args.journals, connection=i) for i in
              range(args.first, args.first + args.tables)]
    pub = Publisher(args.port)
    def say(text: str) -> None:
        print(f"[pitload] {text}", file=sys.stderr, flush=True)

    times: list[tuple[str, int, float]] = []
    summary: dict[str, Any] = {"mode": args.mode, "tables": len(tables),
                               "games": {t.name: t.game for t in tables},
                               "outcome_times": times}

    def go() -> None:
        if args.mode == "paced":
            deal_paced(tables, pub, args.seconds, times)
        else:
            summary["day"] = deal_day(tables, pub, args.hours, args.window,
                                      args.pit_metrics, say)

    serve(tables, pub, summary, go, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
