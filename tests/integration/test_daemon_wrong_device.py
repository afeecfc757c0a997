"""Issue 16, item 6, end to end: a table pointed at the wrong device refuses it.

The bench of the issue: a Q Poker daemon whose shuffler port is a card-reading shoe's pty (a
stale ``--link`` to a reused pty). It must not say ``connected``: the device is ``unavailable``
with reason ``wrong_device``, one ``wrong_device`` fault is published (not one per reconnect
attempt), and none of the shoe's frames is acknowledged, so the shoe's own daemon, connecting
afterwards, receives every one of them. The same for a pinned serial number (a shuffler-dealer
of another table) and for a dice sensor. Real processes: ``tabled run``, ``tabled-sim``,
Mosquitto.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tabled.contract.events import event_to_dict
from tabled.daemon.broker import Mosquitto
from tabled.drivers.shoe.driver import normalize
from tabled.simulators import shoe as shoe_sim
from tabled.simulators.shoe import ShoeReader
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)

SHOE_ARGS = ["--seed", "3", "--hands", "4", "--pace", "0"]


def device_statuses(sub: Subscriber, device: str) -> list[dict[str, Any]]:
    return [p for t, p, _ in sub.messages if t.endswith(f"/device/{device}/status")]


async def refused_for_a_while(sub: Subscriber, daemon: Daemon, device: str,
                              attempts: int = 4) -> list[dict[str, Any]]:
    """Wait until the device has been refused ``attempts`` times; its statuses."""
    deadline = time.monotonic() + 30
    while sum(s["state"] == "connecting" for s in device_statuses(sub, device)) < attempts + 1:
        assert daemon.alive(), daemon.log_lines()[-20:]
        assert time.monotonic() < deadline, device_statuses(sub, device)
        await asyncio.sleep(0.05)
    return device_statuses(sub, device)


def assert_refused(statuses: list[dict[str, Any]], faults: list[dict[str, Any]],
                   device: str, family: str, says: str) -> None:
    assert statuses and all(s["state"] != "connected" for s in statuses), statuses
    unavailable = [s for s in statuses if s["state"] == "unavailable"]
    assert len(unavailable) >= 4
    assert all(s["reason"] == "wrong_device" and says in s["error"] for s in unavailable)
    wrong = [f for f in faults if f.get("code") == "wrong_device"]
    assert len(wrong) == 1, wrong  # one per change of situation, not one per attempt
    assert wrong[0]["device"] == device and wrong[0]["family"] == family
    assert wrong[0]["source"] == "daemon" and says in wrong[0]["detail"]
    assert not [f for f in faults if f.get("code") == "device_lost"]  # it never came up


def expected_shoe_events() -> list[dict[str, Any]]:
    """The events the shoe simulator's reports stand for (its script, made again here)."""
    parser = argparse.ArgumentParser()
    shoe_sim.add_arguments(parser)
    dealer = shoe_sim.dealer_from_args(parser.parse_args(SHOE_ARGS), ShoeReader())
    return [event_to_dict(e) for e in map(normalize, dealer.reports()) if e is not None]


async def test_a_qpoker_table_pointed_at_a_shoe_refuses_it_and_the_shoe_keeps_its_frames(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim = Simulator(["shoe", "--link", str(tmp_path / "shoe"), "--forever", *SHOE_ARGS],
                    tmp_path / "sim.log")
    url = sim.start()
    qpoker = Daemon(write_config(
        tmp_path / "qpoker.toml", game="qpoker", journal=tmp_path / "qpoker.sqlite",
        broker_url=broker.url, table="q1",
        devices=[{"id": "shuffler-1", "family": "shuffler", "url": url,
                  "reconnect_min": 0.1, "reconnect_max": 0.2}]), tmp_path / "qpoker.log")
    baccarat = Daemon(write_config(
        tmp_path / "baccarat.toml", game="baccarat", journal=tmp_path / "baccarat.sqlite",
        broker_url=broker.url, table="b1",
        devices=[{"id": "shoe-1", "family": "shoe", "url": url}]), tmp_path / "baccarat.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/#") as sub:
            qpoker.start()
            statuses = await refused_for_a_while(sub, qpoker, "shuffler-1")
            metrics = await sub.wait_for("/q1/metrics", 1, alive=qpoker)
            assert qpoker.stop() == 0
            q_events, q_faults = sub.on("/q1/event"), sub.on("/q1/fault")
            baccarat.start()  # the shoe's own daemon, afterwards
            outcomes = await sub.wait_for("/b1/outcome", 4, alive=baccarat)
            b_events = sub.on("/b1/event")
    finally:
        sim.stop()
        qpoker.stop()
        assert baccarat.stop() == 0
    assert_refused(statuses, q_faults, "shuffler-1", "shuffler",
                   "its identity is not a shuffler-dealer's")
    # nothing of the shoe's went into the Q Poker table's stream (only the daemon's fault)
    assert [e["code"] for e in q_events] == ["wrong_device"]
    counters = metrics[-1]["devices"]["shuffler-1"]
    assert counters["refused"] >= 1 and counters.get("bad_message", 0) == 0
    # the shoe's daemon got every report the shoe made, from the first (none acknowledged)
    shoe_events = [{k: v for k, v in strip_envelope(e).items()
                    if k not in ("device", "seq", "device_boot", "device_msg", "round")}
                   for e in b_events if e.get("device") == "shoe-1"]
    assert shoe_events == expected_shoe_events()
    assert next(e["device_msg"] for e in b_events if e.get("device") == "shoe-1") == 0
    assert_contiguous(outcomes)
    assert [strip_envelope(o) for o in outcomes] == replay(
        "baccarat", [strip_envelope(e) for e in b_events])


@pytest.mark.parametrize("family", ["shuffler", "dice"])
async def test_a_device_with_another_serial_number_is_refused(
        family: str, tmp_path: Path, broker: Mosquitto) -> None:
    """``devices[].serial`` pins the device's own serial number: the same family's other unit
    (another table's) is refused the same way."""
    if family == "shuffler":
        sim = Simulator(["shuffler", "--link", str(tmp_path / "shuffler"), "--forever",
                         "--serial", "SD7-000001", "--seed", "1", "--rounds", "1"],
                        tmp_path / "sim.log")
        url = sim.start()
        game, pinned, says = "qpoker", "SD7-004217", (
            "a shuffler-dealer with serial number 'SD7-000001', not the configured "
            "'SD7-004217'")
    else:
        sim = Simulator(["dice", "--socket", str(tmp_path / "dice.sock"), "--forever",
                         "--serial", "DS-0002", "--count", "3", "--pace", "0.05"],
                        tmp_path / "sim.log")
        sim.start()
        url = f"usb://1209:0001?backend=sim:{tmp_path / 'dice.sock'}"
        game, pinned, says = "craps", "DS-0001", (
            "a dice sensor with serial number 'DS-0002', not the configured 'DS-0001'")
    daemon = Daemon(write_config(
        tmp_path / "tabled.toml", game=game, journal=tmp_path / "journal.sqlite",
        broker_url=broker.url,
        devices=[{"id": f"{family}-1", "family": family, "url": url, "serial": pinned,
                  "reconnect_min": 0.1, "reconnect_max": 0.2}]), tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            statuses = await refused_for_a_while(sub, daemon, f"{family}-1")
            faults, events = sub.on("/fault"), sub.on("/event")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert_refused(statuses, faults, f"{family}-1", family, says)
    assert [e["code"] for e in events] == ["wrong_device"]
