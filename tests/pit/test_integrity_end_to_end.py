"""The integrity monitors end to end, all real (issue 13): Mosquitto, a craps daemon whose dice
sensor simulator rolls a loaded die (``tabled-sim dice --bias``), a baccarat daemon whose shoe
simulator deals a block in new-deck order (``tabled-sim shoe --preset sorted``) and takes a
dealer's signed ``declare`` command that contradicts the last hand, and ``tabled pit`` as a
subprocess: the ``integrity:dice``, ``integrity:shoe_runs`` and ``integrity:result_mismatch``
alerts are published on ``…/pit/alert`` and recorded in the pit's store."""

from __future__ import annotations

import json
import os
import secrets
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.daemon.broker import Mosquitto, free_port
from tabled.daemon.commands import sign
from tabled.pit.store_sqlite import SqliteStore
from tests.integration.harness import Daemon, NotifySocket, Simulator, Subscriber, write_config
from tests.pit.test_end_to_end import start_pit, stop_pit, wait_until, write_pit_config


async def test_loaded_dice_a_sorted_shoe_and_a_wrong_call_raise_integrity_alerts(
        tmp_path: Path, broker: Mosquitto) -> None:
    dice = Simulator(["dice", "--seed", "6", "--count", "500", "--pace", "0.004",
                      "--bias", "6:0.9", "--forever", "--socket", str(tmp_path / "dice.sock")],
                     tmp_path / "dice.log")
    shoe = Simulator(["shoe", "--seed", "8", "--hands", "40", "--pace", "0.002", "--forever",
                      "--preset", "sorted:30:52", "--link", str(tmp_path / "shoe")],
                     tmp_path / "shoe.log")
    dice.start()
    assert dice.proc is not None and dice.proc.stdout is not None
    dice_url = dice.proc.stdout.readline().split(":", 1)[1].strip()
    shoe_url = shoe.start()
    key = secrets.token_hex(32).encode()
    key_file = tmp_path / "console.key"
    key_file.write_bytes(key)
    os.chmod(key_file, 0o600)
    craps = Daemon(write_config(tmp_path / "craps.toml", game="craps", table="craps-1",
                                journal=tmp_path / "craps.sqlite", broker_url=broker.url,
                                devices=[{"id": "dice-1", "family": "dice", "url": dice_url}]),
                   tmp_path / "craps.log")
    bac = Daemon(write_config(tmp_path / "bac.toml", game="baccarat", table="bac-1",
                              journal=tmp_path / "bac.sqlite", broker_url=broker.url,
                              devices=[{"id": "shoe-1", "family": "shoe", "url": shoe_url}],
                              commands={"enabled": True, "hmac_key_file": str(key_file)}),
                 tmp_path / "bac.log")
    store_path = tmp_path / "pit" / "pit.sqlite"
    pit_config = write_pit_config(tmp_path / "pit.toml", broker.url, store_path, free_port())
    notify = NotifySocket(tmp_path / "notify.sock")
    pit = start_pit(pit_config, tmp_path / "pit.log", notify.path)
    try:
        await notify.wait_for("READY=1")
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/#") as seen:
            craps.start()
            bac.start()

            def alert(kind: str) -> dict[str, Any] | None:
                if pit.poll() is not None:
                    raise AssertionError((tmp_path / "pit.log").read_text()[-3000:])
                return next((a for a in seen.on("/pit/alert") if a["kind"] == kind), None)

            async def raised(kind: str) -> dict[str, Any] | None:
                return alert(kind)

            dice_alert = await wait_until(lambda: raised("integrity:dice"), 150,
                                          "the loaded die's alert")
            assert dice_alert["table"] == "craps-1" and dice_alert["severity"] == "critical"
            assert dice_alert["subject"] == "die 1 face 6"
            assert dice_alert["message"].startswith("die 1 shows 6 too often")
            assert dice_alert["detail"]["count"] > dice_alert["detail"]["expected"]

            runs = await wait_until(lambda: raised("integrity:shoe_runs"), 90,
                                    "the sorted block's alert")
            assert runs["table"] == "bac-1" and runs["detail"]["cards"][:3] == ["AS", "2S", "3S"]

            # the dealer calls the last hand wrong on the console
            async def a_hand() -> dict[str, Any] | None:
                outcomes = [p for t, p, _ in seen.messages
                            if t == "tabled/lab/bac-1/outcome" and p["status"] == "complete"]
                return outcomes[-1] if outcomes else None

            await wait_until(a_hand, 30, "a baccarat hand")
            async with aiomqtt.Client("127.0.0.1", broker.port) as console:
                for result in ("banker", "player", "tie"):
                    body = sign({"cmd": "declare", "args": {"result": result},
                                 "console": "pit-4", "nonce": uuid.uuid4().hex,
                                 "ts": datetime.now(UTC).isoformat().replace("+00:00", "Z")},
                                key)
                    await console.publish("tabled/lab/bac-1/cmd/declare", json.dumps(body),
                                          qos=1)
            replies = await wait_until(
                lambda: _async([p for p in seen.on("/cmd/declare/reply")]
                               if len(seen.on("/cmd/declare/reply")) >= 3 else None),
                20, "the daemon's replies")
            assert all(r["ok"] for r in replies), replies
            declared = [p for t, p, _ in seen.messages
                        if t == "tabled/lab/bac-1/event" and p["type"] == "declare"]
            assert len(declared) == 3 and declared[0]["source"] == "console:pit-4"
            mismatch = await wait_until(lambda: raised("integrity:result_mismatch"), 20,
                                        "the result_mismatch alert")
            assert mismatch["table"] == "bac-1" and mismatch["severity"] == "major"
            assert "the dealer declared" in mismatch["message"]
            assert mismatch["detail"]["decided"] in ("banker", "player", "tie")
            assert mismatch["detail"]["declared"] != mismatch["detail"]["decided"]

        store = SqliteStore(store_path, readonly=True)
        await store.open()
        try:
            kinds = {(a.table, a.kind) for a in await store.alerts()}
        finally:
            await store.close()
        assert {("craps-1", "integrity:dice"), ("bac-1", "integrity:shoe_runs"),
                ("bac-1", "integrity:result_mismatch")} <= kinds
        # a fair table would have raised none of the others
        assert not {k for _, k in kinds if k.startswith("integrity:")} - {
            "integrity:dice", "integrity:shoe_runs", "integrity:result_mismatch",
            "integrity:slug", "integrity:riffle"}
    finally:
        for proc in (craps, bac):
            if proc.alive():
                proc.stop()
        for sim in (dice, shoe):
            sim.stop()
        logged = stop_pit(pit, tmp_path / "pit.log")
        notify.close()
    assert pit.returncode == 0, (tmp_path / "pit.log").read_text()[-3000:]
    assert not [r for r in logged if r["event"] in ("message_failed", "task_failed",
                                                      "integrity_failed")]


async def _async(value: Any) -> Any:
    return value
