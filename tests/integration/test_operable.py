"""Issue 10, "operable by the people who install and run it", end to end: what the log, the
notify socket's STATUS line and the retained topics tell an installer and a pit engineer.

Real processes: ``tabled run`` (JSON log lines at info unless said), ``tabled-sim``, Mosquitto.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import Daemon, NotifySocket, Subscriber, write_config


def records(daemon: Daemon) -> list[dict[str, Any]]:
    """The daemon's JSON log lines, without their journal priority prefix."""
    out = []
    for line in daemon.log_lines():
        if line.startswith("<") and ">" in line[:4]:
            out.append(json.loads(line.split(">", 1)[1]))
    return out


def at_info(config: Path) -> Path:
    config.write_text(config.read_text().replace('level = "debug"', 'level = "info"'))
    return config


async def wait_until(predicate: Any, what: str, timeout: float = 30.0,
                     alive: Daemon | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if alive is not None and not alive.alive():
            raise AssertionError(f"the daemon exited: {alive.log_lines()[-20:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


# -- item 2: two tables with one client id ---------------------------------------------------


async def test_two_tables_with_one_client_id_say_so_once_each(tmp_path: Path,
                                                              broker: Mosquitto) -> None:
    """Two daemons configured with the same ``[mqtt] client_id`` (a copied example): Mosquitto
    closes the older connection each time the other connects. Each daemon says so once, as an
    error naming the likely cause; no line is long (no traceback), and the flapping does not
    flood the log. Once one stops, the other's connection lasts and it says that too."""
    daemons = []
    for table in ("bac-07", "bac-08"):
        work = tmp_path / table
        work.mkdir()
        config = at_info(write_config(work / "tabled.toml", game="craps", table=table,
                                      journal=work / "journal.sqlite", broker_url=broker.url,
                                      mqtt={"client_id": "tabled-macau-01-bac-07"}))
        daemons.append(Daemon(config, work / "daemon.log"))
    first, second = daemons
    try:
        for daemon in daemons:
            daemon.start()

        def both_said_it() -> bool:
            return all(any(r["event"] == "broker_session_taken_over" for r in records(d))
                       for d in daemons)

        await wait_until(both_said_it, "both daemons to name the taken-over session")
        await asyncio.sleep(3.0)  # flapping on (every 0.1 s: reconnect_min)
        flapped = [records(d) for d in daemons]
        assert second.stop() == 0

        def lasts() -> bool:
            return any(r["event"] == "broker_connection_lasts" for r in records(first))

        await wait_until(lasts, "the remaining daemon's connection to last", alive=first)
    finally:
        for daemon in daemons:
            daemon.stop()
    for daemon, lines in zip(daemons, flapped, strict=True):
        taken = [r for r in lines if r["event"] == "broker_session_taken_over"]
        assert len(taken) == 1, taken  # once, however long it flaps
        assert taken[0]["level"] == "error"
        assert taken[0]["likely_cause"] == ("another client uses client id "
                                            "'tabled-macau-01-bac-07': two tables with the "
                                            "same [mqtt] client_id?")
        assert len(lines) < 15, [r["event"] for r in lines]  # dozens of reconnects, few lines
        for line in daemon.log_lines():
            assert len(line) < 600 and "Traceback" not in line, line


async def test_the_client_id_is_the_tables_unless_set(tmp_path: Path, broker: Mosquitto) -> None:
    """Without ``client_id`` two tables never share one: ``tabled-<site>-<table>``."""
    daemons = []
    for table in ("bac-07", "bac-08"):
        work = tmp_path / table
        work.mkdir()
        config = at_info(write_config(work / "tabled.toml", game="craps", table=table,
                                      journal=work / "journal.sqlite", broker_url=broker.url))
        daemons.append(Daemon(config, work / "daemon.log"))
    try:
        for daemon in daemons:
            daemon.start()
        await wait_until(lambda: all(any(r["event"] == "ready" for r in records(d))
                                     for d in daemons), "both daemons ready")
        await asyncio.sleep(2.0)
    finally:
        for daemon in daemons:
            assert daemon.stop() == 0
    for daemon in daemons:
        events = [r["event"] for r in records(daemon)]
        assert events.count("broker_connected") == 1, events
        assert "broker_lost" not in events and "broker_session_taken_over" not in events
