"""The benchmark harness runs (issues 6 and 14): ``python -m bench --quick`` end to end, as
documented.

A smoke test, not a timed one: it checks that every benchmark ran and wrote figures that make
sense (counts, orderings, nothing lost), never how fast anything was, so a slow CI machine
cannot fail it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _latency_is_sane(figures: dict[str, Any], count: int) -> None:
    assert figures["count"] == count and figures["lost"] == 0
    assert 0 < figures["p50"] <= figures["p99"] <= figures["p999"] <= figures["max"]


def _record_is_whole(record: dict[str, Any]) -> None:
    assert record["published"] > 0
    assert record["lost"] == record["duplicated"] == record["unexpected"] == 0


def _pit_is_sane(figures: dict[str, Any]) -> None:
    """Both stores measured (the machine has PostgreSQL: make system-deps), the browser on the
    pages, every outcome of the window seen in the floor page's DOM, nothing lost."""
    floor = figures["pit"]
    assert floor["browser"] == "chromium"
    assert set(floor["stores"]) == set(figures["pit_day"]["stores"]) == {"sqlite", "postgres"}
    for store, out in floor["stores"].items():
        run = out["floor"]
        _record_is_whole(run["record"])
        assert run["pit_exit"] == 0 and run["handler_errors"] == 0, store
        dom = run["dom"]["floor"]
        assert dom["count"] == dom["published"] > 0 and dom["negative"] == 0, store
        assert 0 < dom["p50"] <= dom["p99"], store
        relay = run["dom"]["relay"]
        assert relay["count"] == relay["published"] == dom["published"], store
        assert run["paint"] and all(p["tiles"] == run["tables"] for p in run["paint"])
        assert out["simplest_recorder"]["per_s"] > 0
        day = figures["pit_day"]["stores"][store]["day"]
        _record_is_whole(day["record"])
        assert day["pit_exit"] == 0 and day["handler_errors"] == 0, store
        assert day["taken"] >= day["messages"] * 0.99  # metrics are QoS 0
        assert day["idle_memory_mb"]["VmRSS"] > 10 and day["memory_mb"]["VmRSS"] < 1000
        assert day["record_size"]["messages"] == day["record"]["published"]
    monitors = figures["pit_monitors"]["monitors"]
    assert set(monitors["pit"]) == {"baccarat", "craps", "qpoker"}
    assert all(m["events"] > 0 and m["events_per_s"] > 0 for m in monitors["pit"].values())


def test_quick_run_writes_the_report_with_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out),
                           "--workdir", str(tmp_path / "work")],
                          cwd=ROOT, capture_output=True, text=True, timeout=480, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    figures = json.loads(out.with_suffix(".json").read_text())

    count = figures["latency"]["plan"]["count"]
    for family in ("shoe", "shuffler", "dice"):
        for pipeline in ("tabled", "baseline_a", "baseline_b"):
            _latency_is_sane(figures["latency"][family][pipeline], count)
        assert figures["latency"][family]["ratios"]["p50_vs_b"] > 0
        tput = figures["throughput"][family]
        assert tput["lost"] == 0 and tput["duplicates"] == 0 and tput["events_per_s"] > 0

    foot = figures["footprint"]
    assert 0 < foot["ready_s"]["max"] < 30
    assert 10 < foot["idle"]["rss_mb"] <= foot["peak_rss_mb"] < 1000
    assert foot["idle"]["cpu_percent"] >= 0

    for game, replay in figures["replay"].items():
        assert replay["tabled"]["outcomes"] == replay["rounds"], game
        assert replay["reference"]["outcomes"] == replay["rounds"], game
        assert replay["tabled"]["rounds_per_s"] > 0

    for run in figures["floor"]["runs"]:
        assert run["lost"] == 0 and run["events"] > 0
        assert run["latency"]["count"] == run["events"]

    _pit_is_sane(figures)

    report = out.read_text()
    for heading in ("## Goals", "## Latency", "## Throughput", "## Footprint", "## Replay",
                    "## Floor scale", "## The pit keeps up", "## The pit after a simulated day",
                    "## The pit's integrity monitors"):
        assert heading in report
    assert "nan" not in report


def test_journal_cost_measures_every_variant_of_the_file() -> None:
    """``python -m bench.journal_cost`` (docs/performance.md quotes it) runs, times every
    variant, and makes each file as it says: WAL bytes per commit follow the page size (a
    commit writes whole pages), which no timing decides."""
    out = subprocess.run([sys.executable, "-m", "bench.journal_cost", "--events", "40",
                          "--rounds", "1"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    wal: dict[str, float] = {}
    section = ""
    for line in out.splitlines():
        if line.endswith("WAL bytes per commit"):
            section = line.split(":")[0]
        elif " p50 " in line and section.startswith("durable"):
            name = line.split(" p50 ")[0].strip()
            wal[name] = float(line.rsplit("WAL", 1)[1].split()[0])
    format_3 = "journal, format 3 (the published copy a row of its own)"
    format_2 = "journal, format 2 (every stream's numbers indexed too)"
    format_2_4k = "journal, format 2 at 4 KiB pages (journals until 2026-12-02)"
    assert set(wal) == {
        "(b) one bare row", "journal, the input row only", "journal, as staged",
        "journal, as staged, 4 KiB pages (SQLite's default)", "journal, as staged, 512 B pages",
        format_3, format_2, format_2_4k, "journal, as staged, no index"}, out
    assert (wal["journal, as staged, 512 B pages"] < wal["journal, as staged"]
            < wal["journal, as staged, 4 KiB pages (SQLite's default)"]), out
    # each format before wrote more: the published copy's row (3), and the event stream's
    # index entries (2), a page more in most commits
    assert wal["journal, as staged"] < wal[format_3] < wal[format_2] < wal[format_2_4k], out
    assert "CPU only" in out and "hash-chain links" in out
