"""A floor of tables for the pit benchmarks: what 200 table daemons publish, from one process.

The pit only sees MQTT, so a load is faithful if every message is what a table daemon
publishes. Each table here is a daemon's own :class:`~tabled.daemon.runtime.TableRuntime`
over its own :class:`~tabled.daemon.journal.Journal` (on tmpfs, so the fsyncs cost nothing),
fed by the simulators' own generation code (the shoe simulator's dealer, the dice sensor's
rolls, the shuffler's Q Poker rounds with the console's decisions and reveal; the seeded
streams of ``bench.integrity``), with each device event stamped as the drivers stamp it
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
import secrets
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as paho
from msgspec.structs import replace
from paho.mqtt.enums import CallbackAPIVersion

from tabled.contract.events import Decision, Event, Meta, Reveal

SITE: Final = "floor"
PREFIX: Final = "tabled"
#: A real table's pace: seconds of table time per event (a baccarat card every 6 s, as in
#: bench/footprint.py; a craps roll every 30 s, 120 an hour; a Q Poker round a minute, about
#: eleven events).
SECONDS_PER_EVENT: Final = {"baccarat": 6.0, "craps": 30.0, "qpoker": 5.5}
SPEEDUP: Final = 10.0
#: The daemon's default metrics interval, seconds (config/tabled.example.toml).
METRICS_EVERY: Final = 5.0
DEVICES: Final = {"baccarat": ("shoe-1", "shoe", "/dev/serial/by-id/usb-tabled_shoe-if00"),
                  "craps": ("dice-1", "dice", "usb://1209:7ab1"),
                  "qpoker": ("shuffler-1", "shuffler",
                             "/dev/serial/by-id/usb-tabled_shuffler-if00")}
CONNECTIONS: Final = 4
VERSION: Final = "0.1.0"


def game_of(index: int) -> str:
    """A Macau floor: three baccarat tables in five, one craps, one Q Poker."""
    return ("baccarat", "qpoker", "baccarat", "craps", "baccarat")[index % 5]


def table_name(index: int) -> str:
    return f"t{index:03d}"


def stamp(at: float) -> str:
    """RFC 3339 with milliseconds, as ``tabled.contract.timeutil.rfc3339_now`` writes."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


class Clock:
    """The table time every daemon part reads while one table is stepped (``rfc3339_now`` of
    the runtime is this clock's in ``day`` mode)."""

    def __init__(self) -> None:
        self.now: float | None = None  # None: the wall clock

    def time(self) -> float:
        return time.time() if self.now is None else self.now

    def rfc3339(self) -> str:
        return stamp(self.time())


CLOCK = Clock()


def _events(game: str, seed: int, faults_at: list[int]) -> Iterator[Event]:
    """The simulators' stream of a table (endless), as in bench/integrity.py; a baccarat shoe
    reports a dirty sensor now and then (the shoe simulator's family fault)."""
    from bench.integrity import craps_events, qpoker_events
    from tabled.drivers.shoe.driver import normalize
    from tabled.simulators.shoe import Dealer, ShoeFault, ShoeReader

    rng = random.Random(seed)
    if game == "craps":
        return craps_events(rng, 10**8)
    if game == "qpoker":
        return qpoker_events(rng, 10**8)
    dealer = Dealer(ShoeReader(), rng=rng, decks=8, shoes=None,
                    faults=[ShoeFault("dirty", at) for at in faults_at])
    return (e for e in map(normalize, dealer.reports()) if e is not None)


@dataclass
class Out:
    topic: str
    payload: str
    qos: int = 1
    retain: bool = False
    #: its table_seq (None: metrics, not counted)
    seq: int | None = None
    #: for an outcome: its round (the browser's latency is joined on it)
    round: int | None = None


class MemoryLog:
    """The journal's part the runtime and the MQTT numbering use, in memory: each message
    numbered per topic and encoded by the journal's own :func:`~tabled.daemon.journal.
    encode_entry`, rows hash-chained as the journal chains them (the birth record's
    ``journal`` head). The disk write is what is left out: at a daemon's pace it costs the pit
    nothing, and here it would cost the load generator most of its time."""

    def __init__(self) -> None:
        from tabled.daemon.journal import DURABLE_TOPICS, GENESIS

        self.rows = 0
        self.hash = GENESIS
        self.next_seq: dict[str, int] = dict.fromkeys(DURABLE_TOPICS, 0)
        self.numbers: dict[str, int] = {}
        #: the messages of the last write, each with its round (an outcome's or an event's
        #: own, in its body before encoding; an input published as itself, its entry's)
        self.last: list[tuple[Any, dict[str, Any]]] = []

    # EventLog
    def write(self, entries: Any, ts: str) -> list[Any]:
        from tabled.daemon.journal import InputEntry, OutputEntry, _row_hash, encode_entry

        out = []
        for entry in entries:
            if not isinstance(entry, InputEntry | OutputEntry):
                continue
            self.rows += 1
            row, stored = encode_entry(entry, self.rows, self.next_seq, ts)
            if stored is not None:
                out.append(stored)
                self.last.append((stored, entry.body if isinstance(entry, OutputEntry)
                                  else {"round": entry.round}))
            self.hash = _row_hash(self.hash, row)
        return out

    def inputs(self, after_id: int = 0) -> Iterator[Any]:
        return iter(())

    def probe(self) -> None:
        pass

    # DeliveryLog (the numbers of non-durable messages)
    def last_number(self, kind: str) -> int:
        return self.numbers.get(kind, -1)

    def save_number(self, kind: str, number: int) -> None:
        self.numbers[kind] = number


@dataclass
class TableFeed:
    """One table daemon's publishing, without its devices' I/O."""

    index: int
    journals: Path
    connection: int = 0

    def __post_init__(self) -> None:
        from tabled.daemon.config import parse_config
        from tabled.daemon.mqtt.numbers import Sequences, StatusNumbers
        from tabled.daemon.runtime import TableRuntime

        self.name = table_name(self.index)
        self.game = game_of(self.index)
        device, family, url = DEVICES[self.game]
        self.device, self.family, self.url = device, family, url
        self.base = f"{PREFIX}/{SITE}/{self.name}"
        self.config = parse_config({
            "table": {"site": SITE, "id": self.name, "game": self.game},
            "devices": [{"id": device, "family": family, "url": url}],
            "mqtt": {"url": "mqtt://127.0.0.1:1883"},
            "journal": {"path": str(self.journals / f"{self.name}.sqlite")}})
        self.log = MemoryLog()
        self.runtime = TableRuntime(self.config, self.log)  # type: ignore[arg-type]
        self.status_numbers = StatusNumbers(self.log)  # type: ignore[arg-type]
        self.sequences = Sequences(self.log)  # type: ignore[arg-type]
        rng = random.Random(self.index)
        per_day = 86400 / SECONDS_PER_EVENT["baccarat"]
        self.stream = _events(self.game, 1000 + self.index,
                              sorted(rng.randrange(1, int(per_day)) for _ in range(2)))
        self.device_seq = 0
        self.boot = rng.randrange(1, 2**31)
        self.round = 1
        self.started_at = CLOCK.rfc3339()
        self.published: dict[str, list[int]] = {}

    # -- what the daemon's parts would publish ------------------------------------------------

    def _volatile(self, topic: str, body: dict[str, Any], kind: str, *, retain: bool = False,
                  qos: int = 1) -> Out:
        from tabled.daemon.mqtt.topics import dumps

        seq = self.sequences.next(kind)
        return Out(topic, dumps({**body, "table_seq": seq, "ts": CLOCK.rfc3339()}), qos, retain,
                   None if kind == "metrics" else seq)

    def birth(self) -> list[Out]:
        """The connection's birth (daemon/mqtt/session.py) and the device's statuses as the
        supervisor reports a device coming up (daemon/supervisor.py)."""
        from tabled.daemon.mqtt.topics import dumps
        from tabled.games.options import declare

        birth_seq, will_seq = self.status_numbers.for_connection()
        self.status_numbers.accepted(will_seq)
        head = self.log.hash.hex()
        body = {"version": VERSION, "site": SITE, "table": self.name, "game": self.game,
                "options": declare(self.runtime.options),
                "devices": [{"id": self.device, "family": self.family}],
                "started_at": self.started_at, "pid": 10_000 + self.index,
                "commands": self.game == "qpoker",
                "journal": {"rows": self.log.rows, "head": head,
                            "witness": f"{head}@{self.log.rows}"},
                "state": "online", "table_seq": birth_seq, "ts": CLOCK.rfc3339()}
        self.status_numbers.sent = birth_seq
        out = [Out(f"{self.base}/status", dumps(body), 1, True, birth_seq)]
        since = CLOCK.rfc3339()
        status = f"{self.base}/device/{self.device}/status"
        base = {"device": self.device, "family": self.family}
        out.append(self._volatile(status, {"state": "connecting", **base, "since": since,
                                           "url": self.url}, "device", retain=True))
        out.append(self._volatile(status, {
            "state": "connected", **base, "since": since, "url": self.url,
            "info": {"firmware": f"{self.family}-sim 1.0",
                     "serial": f"{self.family.upper()}-{self.index:04d}"}},
            "device", retain=True))
        self._count(out)
        return out

    def metrics(self) -> list[Out]:
        """``…/metrics`` as daemon/health.py makes it, QoS 0."""
        r = self.runtime
        body = {"uptime_s": 0.0, "events": r.counters["events"],
                "outcomes": r.counters["outcomes"], "notices": r.counters["notices"],
                "commits": r.counters["commits"],
                "journal_failures": r.counters["journal_failures"], "degraded": False,
                "queue_depth": 0, "journal_bytes": 0, "journal": None, "broker_connects": 1,
                "published": r.counters["commits"],
                "commit_latency": {"p50": 0.0006, "p99": 0.0011, "max": 0.0012},
                "publish_latency": {"p50": 0.0004, "p99": 0.0009, "max": 0.001},
                "devices": {self.device: {"state": "connected", "frames_in": r.counters[
                    "events"], "naks": 0, "retransmits": 0, "reconnects": 0, "losses": 0}}}
        return [self._volatile(f"{self.base}/metrics", body, "metrics", qos=0)]

    def step(self) -> list[Out]:
        """The table's next event, through the runtime and the journal, and what the publisher
        would send of it (read back from the journal, as daemon/mqtt/publisher.py does)."""
        event = next(self.stream)
        console = isinstance(event, (Decision, Reveal))
        if console:
            event = replace(event, round=self.round, extra={
                "source": "console:dealer-1", "nonce": secrets.token_hex(8),
                "command_ts": CLOCK.rfc3339()})
            source = "console:dealer-1"
        else:
            event = replace(event, meta=Meta(device=self.device, seq=self.device_seq,
                                             ts=CLOCK.rfc3339(), boot=self.boot,
                                             msg=self.device_seq + 1))
            self.device_seq += 1
            source = f"device:{self.device}"
        self.log.last = []
        self.runtime.stage(event, source)
        self.runtime.commit()
        out = []
        for row, body in self.log.last:
            found = body.get("round")
            round_no = found if isinstance(found, int) else None
            if row.topic == "event" and round_no is not None:
                self.round = round_no
            out.append(Out(f"{self.base}/{row.topic}", row.payload, 1, False, row.stream_seq,
                           round_no if row.topic == "outcome" else None))
        self._count(out)
        return out

    def _count(self, out: list[Out]) -> None:
        for o in out:
            if o.seq is not None:
                self.published.setdefault(o.topic[len(self.base) + 1:], []).append(o.seq)

# -- the publisher ---------------------------------------------------------------------------


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
    print("ready", flush=True)

    def say(text: str) -> None:
        print(f"[pitload] {text}", file=sys.stderr, flush=True)

    times: list[tuple[str, int, float]] = []
    summary: dict[str, Any] = {"mode": args.mode, "tables": len(tables)}
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
            if args.mode == "paced":
                deal_paced(tables, pub, args.seconds, times)
            else:
                summary["day"] = deal_day(tables, pub, args.hours, args.window,
                                          args.pit_metrics, say)
            summary["settled"] = pub.settled()
            summary["deal_seconds"] = time.monotonic() - started
            print("done", flush=True)
        elif command == "stop":
            break
    summary["sent"] = pub.sent
    summary["published"] = {t.name: t.published for t in tables}
    summary["games"] = {t.name: t.game for t in tables}
    summary["outcome_times"] = times
    pub.close()
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
