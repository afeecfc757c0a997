"""What serving a stretch of a stream from a big journal costs (issue 27, ``…/fetch``).

``python -m bench.fetch_range [--rows N] [--dir DIR]``.

Builds a journal of N rows (default 10^6: four in five an event published as itself, the rest
outcomes, faults and unpublished inputs, written 2,000 rows a transaction), then times, over
random starting numbers: the binary search for the event stream's first row
(:meth:`~tabled.daemon.journal.Journal._first_row_numbered`), a read of 101 messages of each
stream (:meth:`~tabled.daemon.journal.Journal.published_range`, what one reply part reads), a
step of 25 (what the fetch server reads between two turns of the event loop), and, once, the
plain scan of the event stream's numbers that the binary search replaces. Prints the figures;
writes nothing but the journal, in a temporary directory (or ``--dir``).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tabled.daemon.journal import InputEntry, Journal, OutputEntry

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path)
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
        journal.close()


if __name__ == "__main__":
    main()
