"""What a device's supervisor says of it (issue 10, items 4 and 6): a status from the start,
each change once (a retry that fails the same way is no news), its reason in words, the
device's identity when it connects, a log line per change at warning when it is missing (the
same again at most every T_REPEAT seconds, with a count), and at a clean stop ``stopped`` —
never a ``device_lost`` fault: an open round is not lost, it resumes after the restart.
Real ptys, real journal, real runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tabled.daemon import supervisor as supervisor_module
from tabled.daemon.config import Config, parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor
from tabled.simulators.shoe import FIRMWARE, SERIAL, ShoeDevice


def baccarat(tmp_path: Path, url: str, **device: Any) -> Config:
    return parse_config({
        "table": {"site": "s", "id": "t", "game": "baccarat"},
        "devices": [{"id": "shoe-1", "family": "shoe", "url": url,
                     "reconnect_min": 0.01, "reconnect_max": 0.02, **device}],
        "journal": {"path": str(tmp_path / "j.sqlite")}})


def journaled(runtime: TableRuntime, topic: str) -> list[dict[str, Any]]:
    return [json.loads(o.payload) for o in runtime.events.outputs_after(0, 10_000)
            if o.topic == topic]


async def test_a_device_that_cannot_be_opened_is_said_once_with_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor_module, "T_REPEAT", 0.25)
    config = baccarat(tmp_path, str(tmp_path / "no-such-port"))
    runtime = TableRuntime(config, Journal(tmp_path / "j.sqlite").events)
    statuses: list[dict[str, Any]] = []
    with capture_logs() as logs:
        supervisor = DeviceSupervisor(config.devices[0], runtime,
                                      on_status=lambda _, body: statuses.append(body))
        task = asyncio.create_task(supervisor.run())
        await asyncio.sleep(1.2)
        problem = supervisor.problem  # what the STATUS line says of it
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await supervisor.stop()
    runtime.events.owner.close()
    assert supervisor.attempts >= 20  # it kept trying: every 10-20 ms
    # …and said so once: no "connecting" and "unavailable" at every attempt
    assert [s["state"] for s in statuses] == ["starting", "connecting", "unavailable", "stopped"]
    why = f"cannot open {tmp_path / 'no-such-port'}: No such file or directory"
    assert statuses[2]["error"] == why and problem == why
    unavailable = [e for e in logs if e["event"] == "device_unavailable"
                   and e["log_level"] != "debug"]  # (at debug: every attempt)
    assert unavailable[0]["log_level"] == "warning" and unavailable[0]["error"] == why
    assert "repeats" not in unavailable[0]
    # then again at most every T_REPEAT seconds, with how many attempts it stands for
    again = unavailable[1:]
    assert 2 <= len(again) <= 5, again
    assert all(e["repeats"] >= 5 for e in again)
    assert sum(e["repeats"] for e in again) < supervisor.attempts


async def test_connected_carries_the_identity_and_a_clean_stop_is_no_loss(
        tmp_path: Path) -> None:
    """A shoe dealing hand 1 when the daemon stops cleanly: ``stopped``, no ``device_lost``
    fault journaled (it would page the floor, and for a Q Poker shuffler void the round);
    the hand is still open in the journal, and after the restart it goes on."""
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    config = baccarat(tmp_path, device.path)
    journal = Journal(tmp_path / "j.sqlite")
    runtime = TableRuntime(config, journal.events)
    statuses: list[dict[str, Any]] = []
    supervisor = DeviceSupervisor(config.devices[0], runtime,
                                  on_status=lambda _, body: statuses.append(body))
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(10):
            await supervisor.connected.wait()
            device.report(device.reader.load(8))
            for card in ("2S", "3H"):
                device.report(device.reader.card_out(card))
            while not runtime.table.round_open:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        with capture_logs() as logs:
            await supervisor.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        runtime.commit()
        journal.close()

        connected = next(s for s in statuses if s["state"] == "connected")
        assert connected["info"] == {"firmware": FIRMWARE, "serial": SERIAL}
        assert statuses[-1]["state"] == "stopped" and statuses[-1]["reason"] == "daemon stopping"
        assert [s["state"] for s in statuses].count("lost") == 0
        assert [e["event"] for e in logs] == ["device_stopped"]
        assert logs[0]["log_level"] == "info"

        # the restart: the hand is open, nothing says the shoe was lost, and the hand goes on
        journal = Journal(tmp_path / "j.sqlite")
        runtime = TableRuntime(config, journal.events)
        assert journaled(runtime, "fault") == []
        assert runtime.table.round_open and runtime.table.next_round == 1
        supervisor = DeviceSupervisor(config.devices[0], runtime, on_status=lambda *_: None)
        task = asyncio.create_task(supervisor.run())
        async with asyncio.timeout(10):
            await supervisor.connected.wait()
            for card in ("4D", "5C"):  # P 2+4 = 6, B 3+5 = 8: a natural, the hand is decided
                device.report(device.reader.card_out(card))
            while runtime.table.round_open:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        (outcome,) = journaled(runtime, "outcome")
        assert (outcome["round"], outcome["status"]) == (1, "complete")
        assert journaled(runtime, "fault") == []
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await supervisor.stop()
        await device.stop()
        journal.close()
