"""What one event's journal transaction costs, part by part (issue 14).

``python -m bench.journal_cost [--events N] [--rounds R] [--dir DISK]``.

The latency benchmark's baseline (b) commits one small row per frame; tabled commits an event
with everything it caused. Before the journal's format is changed, this measures where the
difference is, in the daemon's own code and on the journal's disk:

- **commit**: one durable transaction (WAL, ``synchronous=FULL``) of (b)'s one row, of the
  journal's rows for real shoe events (the input, which is also its published message, and
  at a hand's end the outcome), and variants of the journal's file (the formats before, with
  the published copy a row of its own; without its indexes; pages of another size than the
  journal's :data:`~tabled.daemon.journal.PAGE_SIZE`);
- **WAL bytes**: how much each commit appends to the write-ahead log (pages of 4 KiB plus a
  24-byte header per page, plus the commit's fsync): what the disk is asked to write;
- **CPU**: the same writes with ``synchronous=OFF`` on a RAM disk (no fsync, no disk), and the
  row's parts in isolation (JSON encoding, the hash-chain link, the INSERTs).

Each variant is timed on the same events, interleaved commit by commit so a drift of the disk
falls on all of them alike. It prints a table and writes nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from tabled.contract.events import Event, Meta
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import parse_config
from tabled.daemon.journal import InputEntry, Journal, OutputEntry, _dumps, _row_hash
from tabled.daemon.runtime import TableRuntime
from tabled.drivers.shoe import driver as shoe_driver
from tabled.simulators.shoe import Dealer, ShoeReader

Entries = list[InputEntry | OutputEntry]


def shoe_events(count: int, seed: int = 6) -> list[Event]:
    """``count`` events as the shoe driver emits them (stamped like the driver stamps them)."""
    dealer = Dealer(ShoeReader(), rng=random.Random(seed), hands=None, shoes=None)
    out: list[Event] = []
    for report in dealer.reports():
        event = shoe_driver.normalize(report)
        if event is None:
            continue
        n = len(out)
        meta = Meta(device="shoe-1", seq=n, ts=rfc3339_now(), boot=0x1234, msg=n)
        out.append(replace(event, meta=meta))
        if len(out) == count:
            return out
    return out


def staged(events: list[Event], workdir: Path) -> list[Entries]:
    """Each event's journal entries, as the runtime stages them (one list per event)."""
    config = parse_config({"table": {"site": "s", "id": "t", "game": "baccarat"},
                           "journal": {"path": str(workdir / "stage.sqlite")}})
    runtime = TableRuntime(config, Journal(workdir / "stage.sqlite").events)
    out: list[Entries] = []
    for event in events:
        runtime.stage(event, "device:shoe-1")
        out.append(list(runtime._staged))
        runtime._staged.clear()
        runtime._staged_at = None
    runtime.events.owner.close()
    return out


class Bare:
    """Baseline (b)'s commit: one small row, one table."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.execute("PRAGMA wal_autocheckpoint=0")
        self.db.execute("CREATE TABLE frames (id INTEGER PRIMARY KEY, at REAL, body BLOB)")

    def write(self, entries: Entries) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO frames (at, body) VALUES (?, ?)",
                        (time.time(), b"\x01" * 12))
        self.db.execute("COMMIT")


#: Format 2's index of every stream's numbers, the event stream's included (format 3 leaves
#: it out: daemon/journal.py, ``UNINDEXED_TOPIC``).
EVERY_STREAM_INDEXED = ("CREATE UNIQUE INDEX journal_stream ON journal (topic, stream_seq) "
                        "WHERE kind = 'output'")


class Tabled:
    """The journal as it is, optionally with some of its indexes dropped or others made, or
    in a file made beforehand with another page size (a journal keeps the size of its
    file)."""

    def __init__(self, path: Path, synchronous: str, drop: tuple[str, ...] = (),
                 page_size: int | None = None, create: tuple[str, ...] = ()) -> None:
        if page_size is not None:
            db = sqlite3.connect(path)
            db.execute(f"PRAGMA page_size={page_size}")
            db.execute("CREATE TABLE made (a)")  # the first write fixes the page size
            db.execute("DROP TABLE made")
            db.close()
        self.journal = Journal(path)
        db = self.journal._db
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA wal_autocheckpoint=0")
        for index in drop:
            db.execute(f"DROP INDEX {index}")
        for statement in create:
            db.execute(statement)

    def write(self, entries: Entries) -> None:
        self.journal._write(entries, rfc3339_now())


def wal_size(path: Path) -> int:
    try:
        return os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        return 0


def measure(variants: dict[str, Callable[[Path], Any]], events: list[Entries], where: Path,
            rounds: int) -> dict[str, dict[str, float]]:
    """Every variant on the same events, interleaved commit by commit (each event goes to
    every variant in turn, the order rotated from one event to the next), ``rounds`` times
    with new files: per-commit times (ms) and WAL bytes per commit. One variant's whole run
    after another's measured the disk's drift between them as much as the variants (a
    difference of 0.09 ms one run, reversed the next)."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    wal: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(rounds):
        writers: dict[str, tuple[Path, Any]] = {}
        for name, make in variants.items():
            path = where / f"{name.replace(' ', '_')}-{r}.sqlite"
            writer = make(path)
            writer.write(events[0])  # the file's first pages, not counted
            writers[name] = (path, writer)
        before = {name: wal_size(path) for name, (path, _) in writers.items()}
        for i, entries in enumerate(events):
            turn = i % len(names)
            for name in names[turn:] + names[:turn]:
                writer = writers[name][1]
                started = time.perf_counter()
                writer.write(entries)
                times[name].append((time.perf_counter() - started) * 1000)
        for name, (path, _) in writers.items():
            wal[name].append((wal_size(path) - before[name]) / len(events))
    return {name: {"p50": statistics.median(t), "mean": statistics.fmean(t),
                   "p99": sorted(t)[int(len(t) * 0.99)],
                   "wal_bytes": statistics.fmean(wal[name])} for name, t in times.items()}


def parts(events: list[Entries], repeat: int = 20) -> dict[str, float]:
    """The CPU of a row's parts, µs per event (averaged over every event, ``repeat`` times)."""
    ts = rfc3339_now()
    rows = []
    for entries in events:
        for entry in entries:
            body = entry.body if isinstance(entry, InputEntry) else {**entry.body, "table_seq": 1}
            rows.append((1, "output", "event", 1, None, None, ts, _dumps(body)))
    n = len(events) * repeat

    def timed(fn: Callable[[], None]) -> float:
        started = time.perf_counter()
        for _ in range(repeat):
            fn()
        return (time.perf_counter() - started) / n * 1e6

    bodies = [e.body for entries in events for e in entries]
    encoded = [json.dumps(b) for b in bodies]
    return {
        "JSON encoding of the rows' bodies": timed(lambda: [_dumps(b) for b in bodies] and None),
        "hash-chain links (SHA-256 of each row)": timed(
            lambda: [_row_hash(b"\x00" * 32, row) for row in rows] and None),
        "sha256 over the body alone": timed(
            lambda: [hashlib.sha256(s.encode()).digest() for s in encoded] and None),
        "rows per event": len(rows) / len(events),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.journal_cost", description=__doc__)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="the disk to measure (default: /tmp's)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="journal-cost-", dir=args.dir) as tmp:
        work = Path(tmp)
        events = staged(shoe_events(args.events), work)
        outcomes = sum(any(isinstance(e, OutputEntry) and e.topic == "outcome" for e in entries)
                       for entries in events)
        print(f"{len(events)} shoe events; entries per event: "
              f"{statistics.fmean(len(entries) for entries in events):.2f} "
              f"({outcomes} with an outcome)")
        for sync, where in (("FULL", work), ("OFF", Path("/dev/shm"))):
            with tempfile.TemporaryDirectory(prefix="journal-cost-", dir=where) as sub:
                variants: dict[str, Callable[[Path], Any]] = {
                    "(b) one bare row": lambda p, s=sync: Bare(p, s),
                    "journal, the input row only": lambda p, s=sync: _Only(Tabled(p, s)),
                    "journal, as staged": lambda p, s=sync: Tabled(p, s),
                    "journal, as staged, 4 KiB pages (SQLite's default)": lambda p, s=sync:
                        Tabled(p, s, page_size=4096),
                    "journal, as staged, 512 B pages": lambda p, s=sync: Tabled(
                        p, s, page_size=512),
                    "journal, format 3 (the published copy a row of its own)":
                        lambda p, s=sync: _Format3(Tabled(p, s)),
                    "journal, format 2 (every stream's numbers indexed too)":
                        lambda p, s=sync: _Format3(Tabled(p, s, ("journal_numbers",),
                                                          create=(EVERY_STREAM_INDEXED,))),
                    "journal, format 2 at 4 KiB pages (journals until 2026-12-02)":
                        lambda p, s=sync: _Format3(Tabled(p, s, ("journal_numbers",),
                                                          page_size=4096,
                                                          create=(EVERY_STREAM_INDEXED,))),
                    "journal, as staged, no index": lambda p, s=sync: Tabled(
                        p, s, ("journal_numbers", "journal_output_round")),
                }
                what = "durable (fsync'd), on the disk" if sync == "FULL" else \
                    "CPU only (synchronous=OFF, RAM disk)"
                print(f"\n{what}: ms per commit, WAL bytes per commit")
                res = measure(variants, events, Path(sub), args.rounds)
                for name, r in res.items():
                    print(f"  {name:66s} p50 {r['p50']:.3f}  mean {r['mean']:.3f}  "
                          f"p99 {r['p99']:.3f}  WAL {r['wal_bytes']:7.0f} B")
        print("\nparts, µs per event:")
        for name, value in parts(events).items():
            print(f"  {name:66s} {value:8.2f}")
    return 0


class _Only:
    """A writer that journals only each event's input, as an input alone (not published)."""

    def __init__(self, inner: Tabled) -> None:
        self.inner = inner

    def write(self, entries: Entries) -> None:
        first = entries[0]
        assert isinstance(first, InputEntry)
        self.inner.write([InputEntry(first.source, first.body)])


class _Format3:
    """A writer that journals an input published as itself as the formats before 4 did: the
    input, then its published copy, a row of its own."""

    def __init__(self, inner: Tabled) -> None:
        self.inner = inner

    def write(self, entries: Entries) -> None:
        rows: Entries = []
        for entry in entries:
            if isinstance(entry, InputEntry) and entry.published:
                rows.append(InputEntry(entry.source, entry.body))
                rows.append(OutputEntry("event", entry.body if entry.round is None
                                        else {**entry.body, "round": entry.round}))
            else:
                rows.append(entry)
        self.inner.write(rows)


if __name__ == "__main__":
    raise SystemExit(main())
