"""Measuring instruments of the benchmarks: latency summaries, a process's RSS and CPU from
/proc, and what the machine is (CPU, disk, fsync cost), so every figure says where it was taken.

Owns arithmetic and reading /proc; it starts nothing and never decides what a figure means.
Times are ``time.monotonic()`` seconds: on Linux that is CLOCK_MONOTONIC, one clock for every
process on the machine, so a stamp taken in a device process and one taken in a subscriber
process can be subtracted.
"""

from __future__ import annotations

import math
import os
import platform
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of already sorted values, by the nearest-rank method (the value
    of a real sample, never an interpolation between two)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True, slots=True)
class Latency:
    """A latency distribution in milliseconds, over ``count`` samples."""

    count: int
    p50: float
    p99: float
    p999: float
    max: float
    mean: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        values = sorted(seconds)
        ms = 1000.0
        mean = sum(values) / len(values) if values else math.nan
        return cls(len(values), percentile(values, 0.50) * ms, percentile(values, 0.99) * ms,
                   percentile(values, 0.999) * ms, (values[-1] if values else math.nan) * ms,
                   mean * ms)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Usage:
    """One process's CPU time (user + system, seconds) and resident memory (bytes) now."""

    cpu: float
    rss: int


def usage(pid: int) -> Usage:
    """Read ``/proc/<pid>``: CPU time so far and the resident set size."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the command name: state is field 3, utime 14, stime 15 (proc(5)), counted from 1
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return Usage(cpu, rss_pages * PAGE_SIZE)


class CpuMeter:
    """CPU share of a set of processes over an interval: ``start()``, wait, ``percent()``
    (100 = one core busy all the time)."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)
        self._cpu0 = 0.0
        self._t0 = 0.0

    def _cpu(self) -> float:
        return sum(usage(pid).cpu for pid in self.pids)

    def start(self) -> None:
        self._cpu0, self._t0 = self._cpu(), time.monotonic()

    def percent(self) -> float:
        elapsed = time.monotonic() - self._t0
        return 100.0 * (self._cpu() - self._cpu0) / elapsed if elapsed > 0 else math.nan


def fsync_cost(directory: Path, commits: int = 200) -> Latency:
    """What one durable SQLite commit costs in ``directory`` (WAL, ``synchronous=FULL``, one
    small row): the floor under every durable figure of this machine."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        db = sqlite3.connect(Path(tmp) / "probe.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
        samples = []
        for _ in range(commits):
            started = time.monotonic()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (body) VALUES (?)", (b"x" * 160,))
            db.execute("COMMIT")
            samples.append(time.monotonic() - started)
        db.close()
    return Latency.of(samples)


def _filesystem(path: Path) -> str:
    best = ("?", "?")
    target = str(path.resolve())
    for line in Path("/proc/mounts").read_text().splitlines():
        device, mount, fstype = line.split()[:3]
        if target.startswith(mount) and len(mount) >= len(best[0]):
            best = (mount, f"{fstype} on {device}")
    return best[1]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _mosquitto_version() -> str:
    from tabled.daemon.broker import find_mosquitto

    try:
        out = subprocess.run([find_mosquitto(), "-h"], capture_output=True, text=True,
                             timeout=5, check=False).stdout
    except Exception as exc:  # a description must not stop a benchmark run
        return f"unknown ({exc})"
    return out.splitlines()[0].strip() if out else "unknown"


def load_average() -> float:
    """The machine's 1-minute load average: how much else was running (2.0 on 2 cores = full)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def machine(workdir: Path) -> dict[str, Any]:
    """Where the figures come from: CPU, cores, memory, Python, Mosquitto, and the filesystem
    and fsync cost of the directory the journals live in."""
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "mosquitto": _mosquitto_version(),
        "journal_fs": _filesystem(workdir),
        "durable_commit": fsync_cost(workdir).to_dict(),
        "load_at_start": load_average(),
    }
