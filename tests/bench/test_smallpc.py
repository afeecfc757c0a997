"""The table PC is small (issue 30, item 4; bench/smallpc.py): the cgroup harness really limits,
and the daemon in a cage of 10 % of a core and 256 MB says READY and carries a dealt card to the
broker, nothing lost. The full measurement (both paces, the quotas, the baseline) is
``python -m bench.smallpc`` / ``make bench``.

Needs a cgroup it can make (root on cgroup v1 or v2, or systemd-run where systemd runs the
machine); skipped, with the reason, where it cannot.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.smallpc import LIMIT_CPU, LIMIT_MEMORY, Limit, Pace, open_cage, run_table, why_not
from tabled.daemon.broker import Mosquitto

REASON = why_not()
pytestmark = pytest.mark.skipif(REASON is not None,
                                reason=f"no cgroup can be made here: {REASON}")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    with Mosquitto(workdir=tmp_path / "broker") as mosquitto:
        yield mosquitto


def test_a_busy_loop_in_a_cage_of_10_percent_gets_10_percent_of_a_core() -> None:
    cage = open_cage(Limit(LIMIT_CPU, LIMIT_MEMORY))
    proc = subprocess.Popen(cage.wrap([sys.executable, "-c", "while True: pass"]))
    try:
        time.sleep(0.5)  # the interpreter has started and spins
        before, started = cage.stats(proc.pid), time.monotonic()
        time.sleep(2.0)
        after, took = cage.stats(proc.pid), time.monotonic() - started
        share = 100 * (after["cpu_s"] - before["cpu_s"]) / took
        # the quota is a ceiling (unlimited, the loop would take a whole core): a loaded
        # machine may give less, never more than a period's slack above it
        assert 2.0 <= share <= LIMIT_CPU * 1.2, share
        # in 20 periods the loop ran out of its quota again and again (fewer on a loaded
        # machine, where it may not get its 10 ms in a period at all)
        assert after["throttled"] - before["throttled"] >= 5
        assert after["throttled_s"] > before["throttled_s"]
    finally:
        proc.kill()
        proc.wait()
        cage.close()


def test_a_process_over_the_memory_limit_is_killed_in_its_cage() -> None:
    cage = open_cage(Limit(None, 64 * 2**20))
    try:
        proc = subprocess.run(cage.wrap([sys.executable, "-c", "b = b'x' * (160 << 20)"]),
                              timeout=60, check=False, capture_output=True)
        assert proc.returncode == -9, proc.stderr[-500:]
        stats = cage.stats()
        assert stats["oom_kills"] >= 1
        assert stats["memory_peak"] is None or stats["memory_peak"] <= 64 * 2**20
    finally:
        cage.close()


def test_the_daemon_in_a_cage_of_10_percent_says_ready_and_a_card_reaches_the_broker(
        broker: Mosquitto, tmp_path: Path) -> None:
    result = asyncio.run(run_table("shuffler", Pace("table", 0.3, 4),
                                   Limit(LIMIT_CPU, LIMIT_MEMORY), broker, tmp_path,
                                   check_config=False))
    assert result["sent"] == 4 and result["lost"] == 0 and result["duplicates"] == 0
    assert result["latency"]["count"] == 4
    for stream, record in result["record"].items():
        assert record["journaled"] >= 1 or stream == "outcome", stream
        assert record["lost"] == record["duplicated"] == record["wrong"] == 0, stream
        assert record["unexpected"] == 0, stream
    assert 0 < result["ready_s"] < 30 and result["cpu_s_to_ready"] > 0.1
    assert result["periods"] > 0  # the daemon ran under the quota
    assert result["oom_kills"] == 0 and 10 < result["memory_peak_mb"] < 256
    assert result["exit"] == 0
