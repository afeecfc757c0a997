"""The supervisor and a refused device (issue 16, item 6): the configured shoe, connected and
dealing, sends a frame its driver cannot decode. That frame is never acknowledged; the shoe is
lost (``device_lost``: the rules decide what that means for the hand) and refused
(``wrong_device``), once each; the reconnect attempts that follow are refused at the link
handshake (the shoe would send the same frame first again), so the device never comes up
again, raises nothing more, and the backoff grows. Real pty, real journal, real runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor
from tabled.drivers.shoe.protocol import InfoRequest, encode
from tabled.simulators.shoe import ShoeDevice


async def test_a_frame_the_driver_cannot_decode_refuses_the_shoe_once(tmp_path: Path) -> None:
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    config = parse_config({
        "table": {"site": "s", "id": "t", "game": "baccarat"},
        "devices": [{"id": "shoe-1", "family": "shoe", "url": device.path,
                     "reconnect_min": 0.05, "reconnect_max": 0.4}],
        "journal": {"path": str(tmp_path / "j.sqlite")}})
    runtime = TableRuntime(config, Journal(tmp_path / "j.sqlite").events)
    statuses: list[dict[str, Any]] = []
    supervisor = DeviceSupervisor(config.devices[0], runtime,
                                  on_status=lambda _, body: statuses.append(body))
    task = asyncio.create_task(supervisor.run())
    try:
        async with asyncio.timeout(10):
            await supervisor.connected.wait()
            device.report(device.reader.load(8))
            device.send(*encode(InfoRequest()))  # a host's request, from the shoe
            device.report(device.reader.card_out("AS"))
            while sum(s["state"] == "unavailable" for s in statuses) < 4:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await supervisor.stop()
        await device.stop()
    states = [s["state"] for s in statuses]
    assert states.count("connected") == 1  # the refused shoe never came up again
    refused = [s for s in statuses if s["state"] == "unavailable"]
    assert {s["reason"] for s in refused} == {"wrong_device"}
    assert all("it sent a frame that is not a card-reading shoe message (kind 0x20"
               in s["error"] for s in refused)
    faults = [json.loads(o.payload) for o in runtime.events.outputs_after(0, 1000)
              if o.topic == "fault"]
    assert [f["code"] for f in faults] == ["device_lost", "wrong_device"]
    events = [json.loads(o.payload) for o in runtime.events.outputs_after(0, 1000)
              if o.topic == "event" and json.loads(o.payload).get("device") == "shoe-1"]
    # the card after it was not taken; the daemon's fault names the device
    assert [e.get("code", e["type"]) for e in events] == ["shoe_start", "wrong_device"]
    counters = supervisor.counters()
    assert counters["refused"] >= 4 and counters["losses"] == 1
    assert device.backlog >= 2  # the refused frame and the card: kept by the shoe
