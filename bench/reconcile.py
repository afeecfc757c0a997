"""A pit started an hour late: how long until its record holds every table's journal.

Six real table daemons (``tabled run``, a ``[fetch]`` key, a simulated shoe each on a pty) deal
an hour of a baccarat table's play each (``--rounds``, 720 by default: a round every five
seconds) with no pit listening, as fast as the simulators deal it (the journals are what an
hour at demo pace leaves; only the timestamps differ). Then ``tabled pit`` starts with an empty
SQLite record and ``[reconcile]`` on, and the time from its start to a record that holds every
number of every stream of every table (counted against the journals, read directly) is
measured, with the fetch requests it sent.

``python -m bench.reconcile [--tables 6] [--rounds 720] [--workdir DIR]``; docs/pit.md gives
the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tabled.daemon.broker import Mosquitto

STREAMS = ("event", "outcome", "fault")
SITE = "lab"


def _counts_journal(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
        rows = db.execute("SELECT topic, MAX(stream_seq) FROM journal WHERE topic IN "
                          "('event', 'outcome', 'fault') GROUP BY topic").fetchall()
    got = {topic: int(high) + 1 for topic, high in rows}
    return {s: got.get(s, 0) for s in STREAMS}


def _counts_record(path: Path, table: str) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            rows = db.execute(
                "SELECT topic, COUNT(*), MAX(table_seq) FROM messages WHERE site = ? AND "
                "table_id = ? AND topic IN ('event', 'outcome', 'fault') GROUP BY topic",
                (SITE, table)).fetchall()
    except sqlite3.OperationalError:
        return dict.fromkeys(STREAMS, 0)
    # complete only when contiguous: the count is the highest number + 1
    got = {topic: int(n) if int(n) == int(high) + 1 else -1 for topic, n, high in rows}
    return {s: got.get(s, 0) for s in STREAMS}


def _daemon_config(path: Path, table: str, journal: Path, broker: str, url: str,
                   key: Path) -> Path:
    path.write_text("\n".join([
        "[table]", f'site = "{SITE}"', f'id = "{table}"', 'game = "baccarat"', "", "[rules]",
        "", "[[devices]]", 'id = "shoe-1"', 'family = "shoe"', f'url = "{url}"', "",
        "[mqtt]", f'url = "{broker}"', "metrics_interval = 5.0", "",
        "[fetch]", f'hmac_key_file = "{key}"', "",
        "[journal]", f'path = "{journal}"', "", "[log]", 'format = "json"',
        'level = "warning"']) + "\n")
    return path


def _pit_config(path: Path, broker: str, store: Path, key: Path) -> Path:
    path.write_text("\n".join([
        "[pit]", 'id = "pit-bench"', "", "[mqtt]", f'url = "{broker}"', "",
        "[store]", f'sqlite = "{store}"', "", "[reconcile]", f'hmac_key_file = "{key}"', "",
        "[log]", 'format = "json"', 'level = "info"']) + "\n")
    return path


def _spawn(args: list[str], log: Path, *, stdout_pipe: bool = False) -> subprocess.Popen[str]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", *args], text=True,
                                stdout=subprocess.PIPE if stdout_pipe else out, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def run(tables: int, rounds: int, workdir: Path, say: Any = print) -> dict[str, Any]:
    key = workdir / "fetch.key"
    key.write_text(secrets.token_hex(32) + "\n")
    os.chmod(key, 0o600)
    names = [f"bac-{i + 1}" for i in range(tables)]
    procs: list[subprocess.Popen[str]] = []
    with Mosquitto(workdir=workdir / "broker") as broker:
        try:
            for name in names:
                sim = _spawn(["tabled.simulators.cli", "shoe", "--seed", str(len(procs) + 3),
                              "--hands", str(rounds), "--pace", "0.001", "--forever",
                              "--link", str(workdir / f"{name}.link")],
                             workdir / f"{name}.sim.log", stdout_pipe=True)
                procs.append(sim)
                assert sim.stdout is not None
                url = sim.stdout.readline().split(":", 1)[1].strip()
                config = _daemon_config(workdir / f"{name}.toml", name,
                                        workdir / f"{name}.sqlite", broker.url, url, key)
                procs.append(_spawn(["tabled.tools.cli", "run", "-c", str(config)],
                                    workdir / f"{name}.log"))
            started = time.monotonic()
            while True:  # the hour of play, dealt with no pit listening
                await asyncio.sleep(2.0)
                done = [_counts_journal(workdir / f"{n}.sqlite")["outcome"] >= rounds
                        for n in names if (workdir / f"{n}.sqlite").exists()]
                if len(done) == tables and all(done):
                    break
                if time.monotonic() - started > 1800:
                    raise RuntimeError("the tables did not deal their rounds in 30 minutes")
            await asyncio.sleep(6.0)  # the tables' last metrics: nothing more in flight
            dealt = time.monotonic() - started
            journals = {n: _counts_journal(workdir / f"{n}.sqlite") for n in names}
            say(f"dealt {rounds} rounds on {tables} tables in {dealt:.0f} s: "
                f"{sum(sum(j.values()) for j in journals.values())} messages")
            store = workdir / "pit.sqlite"
            pit_log = workdir / "pit.log"
            began = time.monotonic()
            pit = _spawn(["tabled.tools.cli", "pit", "--config",
                          str(_pit_config(workdir / "pit.toml", broker.url, store, key))],
                         pit_log)
            procs.append(pit)
            while True:
                await asyncio.sleep(0.1)
                if all(_counts_record(store, n) == journals[n] for n in names):
                    break
                if time.monotonic() - began > 600:
                    raise RuntimeError("no complete record within 10 minutes")
            complete = time.monotonic() - began
            lines = [json.loads(line[3:] if line.startswith("<") else line)
                     for line in pit_log.read_text().splitlines() if "{" in line]
            requests = sum(1 for r in lines if r.get("event") == "fetch_requested")
            ready = next((r for r in lines if r.get("event") == "ready"), None)
            result = {"tables": tables, "rounds": rounds,
                      "messages": sum(sum(j.values()) for j in journals.values()),
                      "requests": requests, "seconds_to_complete": round(complete, 2),
                      "ready_logged": ready is not None}
            say(json.dumps(result))
            return result
        finally:
            for proc in reversed(procs):
                with contextlib.suppress(Exception):
                    _stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reconcile", description=__doc__)
    parser.add_argument("--tables", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=720)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.workdir is None:
        with tempfile.TemporaryDirectory(prefix="tabled-reconcile-") as tmp:
            asyncio.run(run(args.tables, args.rounds, Path(tmp)))
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        asyncio.run(run(args.tables, args.rounds, args.workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
