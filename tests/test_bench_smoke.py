"""The benchmark harness runs (issue 6): ``python -m bench --quick`` end to end, as documented.

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

ROOT = Path(__file__).resolve().parent.parent


def _latency_is_sane(figures: dict[str, Any], count: int) -> None:
    assert figures["count"] == count and figures["lost"] == 0
    assert 0 < figures["p50"] <= figures["p99"] <= figures["p999"] <= figures["max"]


def test_quick_run_writes_the_report_with_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "performance.md"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out),
                           "--workdir", str(tmp_path / "work")],
                          cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
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

    report = out.read_text()
    for heading in ("## Goals", "## Latency", "## Throughput", "## Footprint", "## Replay",
                    "## Floor scale"):
        assert heading in report
    assert "nan" not in report
