"""A table daemon's messages without the daemon: :class:`TableFeed`, what one table publishes.

Each table is a daemon's own :class:`~tabled.daemon.runtime.TableRuntime` over its own
:class:`~tabled.daemon.journal.Journal`, fed by the simulators' own generation code (the seeded
streams of :mod:`tests.oracle.integrity`), with each device event stamped as the drivers stamp
it; what goes out on ``…/event``, ``…/outcome`` and ``…/fault`` is read back from the journal
after each commit, byte for byte, as the daemon's publisher does, and the non-durable messages
are numbered and built as the daemon builds them. The pit's tests (tests/pit/fetchtable.py)
and its load benchmark (bench/pitload.py) play tables with it.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from msgspec.structs import replace

from tabled.contract.events import Decision, Event, Meta, Reveal

SITE: Final = "floor"
PREFIX: Final = "tabled"
#: A real table's pace: seconds of table time per event (a baccarat card every 6 s, as in
#: bench/footprint.py; a craps roll every 30 s, 120 an hour; a Q Poker round a minute, about
#: eleven events).
SECONDS_PER_EVENT: Final = {"baccarat": 6.0, "craps": 30.0, "qpoker": 5.5}
DEVICES: Final = {"baccarat": ("shoe-1", "shoe", "/dev/serial/by-id/usb-tabled_shoe-if00"),
                  "craps": ("dice-1", "dice", "usb://1209:7ab1"),
                  "qpoker": ("shuffler-1", "shuffler",
                             "/dev/serial/by-id/usb-tabled_shuffler-if00")}
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
    """The simulators' stream of a table (endless), as in tests/oracle/integrity.py; a baccarat shoe
    reports a dirty sensor now and then (the shoe simulator's family fault)."""
    from tabled.drivers.shoe.driver import normalize
    from tabled.simulators.shoe import Dealer, ShoeFault, ShoeReader
    from tests.oracle.integrity import craps_events, qpoker_events

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
    #: the site it stands in (a topic level)
    site: str = SITE

    def __post_init__(self) -> None:
        from tabled.daemon.config import parse_config
        from tabled.daemon.mqtt.numbers import Sequences, StatusNumbers
        from tabled.daemon.runtime import TableRuntime

        self.name = table_name(self.index)
        self.game = game_of(self.index)
        device, family, url = DEVICES[self.game]
        self.device, self.family, self.url = device, family, url
        self.base = f"{PREFIX}/{self.site}/{self.name}"
        self.config = parse_config({
            "table": {"site": self.site, "id": self.name, "game": self.game},
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
        body = {"version": VERSION, "site": self.site, "table": self.name, "game": self.game,
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
