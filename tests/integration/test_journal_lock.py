"""One daemon per journal, and a daemon whose journal failed and healed (issue 16, item 5).

``tabled run --config bac.toml &`` then ``timeout 6 tabled run --config bac.toml``: both once
published the same outcomes; after the second exited the first failed every journal write
(``UNIQUE constraint failed: journal.id``), flapped degraded/online every 2 s, published nothing
and never recovered by itself. Real parts throughout: Mosquitto, the shoe simulator on a pty,
``tabled run`` subprocesses, ``tabled journal`` and ``tabled replay``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import _row_hash
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)

TS = "2026-12-01T00:00:00.000Z"


def tabled(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, check=False, timeout=timeout)


def shoe_table(tmp_path: Path, broker: Mosquitto, *, seed: int,
               hands: int) -> tuple[Simulator, Path, Path]:
    """A simulated shoe dealing ``hands`` hands, and a baccarat table's config for it."""
    sim = Simulator(["shoe", "--seed", str(seed), "--hands", str(hands), "--pace", "0.02",
                     "--link", str(tmp_path / "shoe")], tmp_path / "sim.log")
    path = sim.start()
    journal = tmp_path / "journal.sqlite"
    config = write_config(tmp_path / "bac.toml", game="baccarat", journal=journal,
                          broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "url": path}])
    return sim, journal, config


def check_everything_published(sub: Subscriber, journal: Path) -> None:
    """Every outcome round 1..N once, in order, numbered without a gap; the events replay to
    them; the journal's chain is intact."""
    outcomes = sub.on("/outcome")
    assert_contiguous(outcomes)
    assert_contiguous(sub.on("/event"))
    firsts = list({o["table_seq"]: o for o in outcomes}.values())
    assert [o["round"] for o in firsts] == list(range(1, len(firsts) + 1))
    events = list({e["table_seq"]: strip_envelope(e) for e in sub.on("/event")}.values())
    assert replay("baccarat", events) == [strip_envelope(o) for o in firsts]
    verify = tabled("journal", "verify", "--journal", str(journal))
    assert verify.returncode == 0, verify.stderr


async def test_a_second_daemon_on_the_same_journal_exits_and_the_first_never_notices(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim, journal, config = shoe_table(tmp_path, broker, seed=5, hands=400)
    first = Daemon(config, tmp_path / "first.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            first.start()
            await sub.wait_for("/outcome", 5, alive=first)
            assert first.proc is not None
            started = time.monotonic()
            second = await asyncio.to_thread(tabled, "run", "--config", str(config),
                                             timeout=30)
            assert second.returncode == 1, (second.stdout, second.stderr)
            assert second.stderr == (f"tabled run: journal {journal} is in use by PID "
                                     f"{first.proc.pid}\n")
            assert second.stdout == ""
            assert time.monotonic() - started < 10  # at once, not after a timeout
            # the readers of the live journal: no lock needed, nothing disturbed
            recall = tabled("journal", "recall", "--last", "3", "--json", "--config",
                            str(config))
            assert recall.returncode == 0 and len(recall.stdout.splitlines()) == 3
            verify = tabled("journal", "verify", "--config", str(config))
            assert verify.returncode == 0 and "hash chain intact" in verify.stdout
            # the first daemon goes on as if nothing had happened
            before = sub.distinct("/outcome")
            await sub.wait_for("/outcome", before + 15, alive=first)
            # stopped while the subscriber listens: the outcome of the last event it published
            # is not still on its way when the subscriber leaves (the test's own race)
            sim.stop()
            assert await asyncio.to_thread(first.stop) == 0
            await sub.until_offline("/t1/status")
    finally:
        sim.stop()
        assert first.stop() == 0
    records = [json.loads(line[3:]) for line in first.log_lines() if line.startswith("<")]
    assert not [r for r in records if r["event"] in ("journal_failure", "task_failed")]
    states = [s["state"] for s in sub.on("/t1/status")]
    assert "degraded" not in states
    assert not [f for f in sub.on("/fault") if f.get("code") == "journal_failure"]
    assert sum(1 for r in records if r["event"] == "starting") == 1
    check_everything_published(sub, journal)


def append_start_behind_its_back(journal: Path) -> None:
    """The first thing a second daemon on the file used to do: journal its start record."""
    db = sqlite3.connect(journal, timeout=10, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")  # the daemon writes meanwhile: read and append atomically
    last_id, last_hash = db.execute(
        "SELECT id, hash FROM journal ORDER BY id DESC LIMIT 1").fetchone()
    row = (last_id + 1, "start", None, None, "daemon", None, TS,
           json.dumps({"version": "0.1.0", "game": "baccarat", "by": "intruder"}))
    db.execute("INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
               (*row, _row_hash(bytes(last_hash), row)))
    db.execute("COMMIT")
    db.close()


async def test_a_journal_written_behind_the_daemons_back_heals_by_itself(
        tmp_path: Path, broker: Mosquitto) -> None:
    """The lock keeps other daemons out, not every writer (a sqlite3 shell ignores it). A write
    that finds the file moved on fails once; the daemon degrades, rebuilds its rules state from
    the file, reads its positions from it again, and is back within a probe or two: every hand
    is published, once, numbered without a gap, and replays to the same outcomes."""
    hands = 60
    sim, journal, config = shoe_table(tmp_path, broker, seed=6, hands=hands)
    daemon = Daemon(config, tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await sub.wait_for("/outcome", 10, alive=daemon)
            append_start_behind_its_back(journal)
            await sub.wait_for("/outcome", hands, alive=daemon, timeout=60)
            await asyncio.sleep(3)  # long enough for a flapping daemon to show it
    finally:
        sim.stop()
        assert daemon.stop() == 0
    records = [json.loads(line[3:]) for line in daemon.log_lines() if line.startswith("<")]
    failures = [r for r in records if r["event"] == "journal_failure"]
    assert len(failures) == 1 and "written behind" in failures[0]["reason"]
    assert len([r for r in records if r["event"] == "journal_recovered"]) == 1
    status = list({s["table_seq"]: s for s in sub.on("/t1/status")}.values())
    # the journal failed and recovered within one probe: still both said, each the birth of
    # its own connection, numbered one after the other (docs/mqtt.md)
    assert [s["state"] for s in status] == ["online", "degraded", "online"]
    assert [s["table_seq"] for s in status] == [0, 1, 2]
    assert "written behind" in status[1]["reason"]
    assert sub.distinct("/outcome") == hands
    check_everything_published(sub, journal)
