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
from tests.integration.harness import Daemon, NotifySocket, Simulator, Subscriber, write_config


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


# -- item 4: what is missing, and why --------------------------------------------------------


async def test_a_device_that_is_not_there_is_named_with_why_in_the_log_and_the_status(
        tmp_path: Path) -> None:
    """``url = "/nonexistent"`` and no broker: the log says why the device is unavailable
    (once, at warning, though the daemon tries again every 0.1-0.2 s) and why the broker is
    down; READY's and STATUS's line names both."""
    notify = NotifySocket(tmp_path / "notify.sock")
    config = at_info(write_config(
        tmp_path / "tabled.toml", game="baccarat", journal=tmp_path / "journal.sqlite",
        broker_url="mqtt://127.0.0.1:1", devices=[{
            "id": "shoe-1", "family": "shoe", "url": "/nonexistent",
            "reconnect_min": 0.1, "reconnect_max": 0.2}]))
    daemon = Daemon(config, tmp_path / "daemon.log", env={"NOTIFY_SOCKET": str(notify.path)})
    try:
        daemon.start()
        await notify.wait_for("READY=1")
        await asyncio.sleep(3.0)  # a dozen attempts or more
    finally:
        assert daemon.stop() == 0
    messages = notify.drain()
    notify.close()
    ready = next(m for m in messages if "READY=1" in m)
    assert ("STATUS=baccarat ok; devices 0/1 (shoe-1: cannot open /nonexistent: No such file "
            "or directory); broker down (mqtt://127.0.0.1:1: [Errno 111] Connection refused)"
            ) in ready
    lines = records(daemon)
    (unavailable,) = [r for r in lines if r["event"] == "device_unavailable"]
    assert unavailable["level"] == "warning" and unavailable["device"] == "shoe-1"
    assert unavailable["error"] == "cannot open /nonexistent: No such file or directory"
    unreachable = [r for r in lines if r["event"] == "broker_unreachable"]
    assert len(unreachable) == 1 and unreachable[0]["level"] == "warning"
    assert len(lines) < 12, [r["event"] for r in lines]


# -- item 6: retained device statuses that tell the truth --------------------------------------


def device_states(sub: Subscriber) -> list[dict[str, Any]]:
    return sub.on("/device/shoe-1/status")


async def retained_status(broker: Mosquitto, topic: str) -> dict[str, Any]:
    """What a subscriber arriving now gets on ``topic`` (the retained message)."""
    async with Subscriber("127.0.0.1", broker.port, topic) as late:
        await late.wait_for(topic, 1, timeout=5)
    ((_, payload, retained),) = late.messages
    assert retained
    return payload


async def test_device_statuses_are_fresh_at_every_start_and_a_clean_stop_is_no_fault(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim = Simulator(["shoe", "--seed", "5", "--hands", "2", "--pace", "0.01", "--forever",
                     "--serial", "SHOE-0042", "--link", str(tmp_path / "shoe")],
                    tmp_path / "sim.log")
    config = at_info(write_config(
        tmp_path / "tabled.toml", game="baccarat", journal=tmp_path / "journal.sqlite",
        broker_url=broker.url, devices=[{"id": "shoe-1", "family": "shoe", "url": sim.start(),
                                         "reconnect_min": 0.1, "reconnect_max": 0.2}]))
    daemon = Daemon(config, tmp_path / "daemon.log")
    topic = "tabled/lab/t1/device/shoe-1/status"
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            # a clean stop while the shoe is connected: "stopped", and no fault
            daemon.start()
            await sub.wait_for("/outcome", 2, alive=daemon)
            assert daemon.stop() == 0
            await wait_until(lambda: device_states(sub)[-1]["state"] == "stopped", "stopped")
            first = device_states(sub)
            assert (await retained_status(broker, topic))["state"] == "stopped"

            # kill -9 while connected leaves "connected" retained, until the next start
            daemon.start()
            await wait_until(lambda: len(device_states(sub)) > len(first) and
                             device_states(sub)[-1]["state"] == "connected", "connected",
                             alive=daemon)
            daemon.kill9()
            sim.stop()  # the shoe goes away while the daemon is down
            assert (await retained_status(broker, topic))["state"] == "connected"
            before = len(device_states(sub))
            daemon.start()
            await wait_until(lambda: any(s["state"] == "unavailable"
                                         for s in device_states(sub)[before:]),
                             "the restarted daemon to say the shoe is unavailable",
                             alive=daemon)
            await asyncio.sleep(1.5)  # retries: no more messages
            restarted = device_states(sub)[before:]
            retained = await retained_status(broker, topic)
            assert daemon.stop() == 0
            faults = sub.on("/fault")
    finally:
        sim.stop()
        daemon.stop()
    states = [s["state"] for s in first]
    assert states[-2:] == ["connected", "stopped"] and "lost" not in states
    connected = next(s for s in first if s["state"] == "connected")
    assert connected["info"] == {"firmware": "shoe-sim 1.0", "serial": "SHOE-0042"}
    assert first[-1]["reason"] == "daemon stopping"
    # fresh from the first connection on: nothing from before the crash stays "connected"
    assert [s["state"] for s in restarted] in (["connecting", "unavailable"],
                                               ["starting", "connecting", "unavailable"],
                                               ["unavailable"])
    assert retained["state"] == "unavailable"
    assert retained["error"].endswith("No such file or directory")
    # a clean stop is a status, never a fault: the floor is paged for nothing here
    assert [f for f in faults if f.get("code") == "device_lost"] == []
