"""Hot-plug: a device configured by udev match is connected when its add uevent arrives and
disconnected on remove — real uevents over netlink, through pyudev's real monitor, into the
daemon subprocess (root only: where it cannot run, the test says why and skips)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import Daemon, Simulator, Subscriber, write_config
from tests.uevents import UeventInjector, injection_unavailable


async def test_add_and_remove_uevents_connect_and_disconnect_the_shoe(
        tmp_path: Path, broker: Mosquitto) -> None:
    reason = injection_unavailable()
    if reason:
        pytest.skip(reason)
    injector = UeventInjector()
    sim = Simulator(["shoe", "--seed", "9", "--hands", "30", "--pace", "0.02",
                     "--link", str(tmp_path / "shoe")], tmp_path / "sim.log")
    node = os.path.realpath(sim.start())  # /dev/pts/N: what udev would name as DEVNAME
    config = write_config(tmp_path / "tabled.toml", game="baccarat",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "reconnect_min": 0.1}])
    # a [devices.match] table for the one device (write_config writes flat keys)
    text = config.read_text().replace(
        '[mqtt]', f'[devices.match]\nvendor_id = "0403"\nmodel_id = "6001"\n'
                  f'serial = "{injector.tag}"\n\n[mqtt]', 1)
    config.write_text(text)
    props = {"ID_VENDOR_ID": "0403", "ID_MODEL_ID": "6001", "ID_SERIAL_SHORT": injector.tag}
    name = node.removeprefix("/dev/")
    daemon = Daemon(config, tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await sub.wait_for("/t1/status", 1, alive=daemon)
            await asyncio.sleep(0.5)
            assert sub.on("/outcome") == []  # nothing until the device appears
            injector.send("add", name, **props)
            await sub.wait_for("/outcome", 3, alive=daemon)
            injector.send("remove", name, **props)
            await asyncio.sleep(1.0)
            held = sub.distinct("/outcome")
            await asyncio.sleep(1.0)
            assert sub.distinct("/outcome") == held  # removed: no more outcomes
            injector.send("add", name, **props)
            await sub.wait_for("/outcome", 30, alive=daemon, timeout=60)
            states = [p["state"] for t, p, _ in sub.messages if "/device/shoe-1/" in t]
    finally:
        injector.close()
        sim.stop()
        assert daemon.stop() == 0
    assert states[0] == "waiting"
    assert states.count("connected") == 2 and "lost" in states
    log = "\n".join(daemon.log_lines())
    assert '"event": "device_discovered"' in log
