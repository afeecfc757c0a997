"""The daemon as a service: systemd notify (READY, STATUS, WATCHDOG), refusing a bad config,
JSON log lines that name the table and device, game recall and verify on its journal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import (
    Daemon,
    NotifySocket,
    Simulator,
    Subscriber,
    write_config,
)


async def test_ready_status_and_watchdog_reach_the_notify_socket(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim = Simulator(["shoe", "--seed", "2", "--hands", "5", "--pace", "0.01", "--forever",
                     "--link", str(tmp_path / "shoe")], tmp_path / "sim.log")
    path = sim.start()
    notify = NotifySocket(tmp_path / "notify.sock")
    config = write_config(tmp_path / "tabled.toml", game="baccarat",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "url": path}])
    # WATCHDOG_USEC of 0.4 s: pings every 0.2 s; WATCHDOG_PID is not set (it is ours then)
    daemon = Daemon(config, tmp_path / "daemon.log",
                    env={"NOTIFY_SOCKET": str(notify.path), "WATCHDOG_USEC": "400000"})
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await notify.wait_for("READY=1")
            await sub.wait_for("/outcome", 5, alive=daemon)
            await notify.wait_for("WATCHDOG=1")
            await sub.wait_for("/metrics", 1, alive=daemon)  # a second or more later
            pings = sum("WATCHDOG=1" in m for m in notify.drain())
    finally:
        sim.stop()
        assert daemon.stop() == 0
    messages = notify.drain()
    notify.close()
    ready = next(m for m in messages if "READY=1" in m)
    assert "STATUS=baccarat ok; devices 1/1; broker up" in ready
    assert f"MAINPID={daemon.proc.pid}" in ready  # type: ignore[union-attr]
    assert pings >= 2
    assert any("STOPPING=1" in m for m in messages)

    # every log line is JSON with a journal priority prefix, and names the table
    lines = [line for line in daemon.log_lines() if line.startswith("<")]
    records = [json.loads(line[3:]) for line in lines]
    assert records and all(r.get("table") == "lab/t1" for r in records)
    lost = [r for r in records if r["event"] == "device_lost"]
    assert all(r["device"] == "shoe-1" for r in lost)

    # game recall and verify on the journal the daemon left
    recall = subprocess.run([sys.executable, "-m", "tabled.tools.cli",
                             "journal", "recall", "--last",
                             "3", "--json", "--config", str(config)],
                            capture_output=True, text=True, check=True)
    rounds = [json.loads(line) for line in recall.stdout.splitlines()]
    assert [r["round"] for r in rounds] == [3, 4, 5]
    assert all(4 <= len(r["events"]) <= 6 for r in rounds)
    verify = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "journal", "verify",
                             "--config", str(config)], capture_output=True, text=True,
                            check=False)
    assert verify.returncode == 0 and "hash chain intact" in verify.stdout


def test_the_daemon_refuses_an_invalid_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[table]\nsite = "s"\nid = "t"\ngame = "baccarat"\n[rules]\nmethod = 7\n')
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "run", "-c", str(bad)],
                          capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 2
    assert "rules.method: 7 is not 1 or 2 (Art. 9)" in proc.stderr
