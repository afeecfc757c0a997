"""Q Poker end to end: the shuffler-dealer deals, a dealer console (signed commands over MQTT)
decides and reveals; N rounds → N outcomes identical to replay of the published stream, no
dealer card published before its reveal, and a shuffler failure mid-deal voids the round
(qpoker.art11.5)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from pathlib import Path

import aiomqtt

from tabled.daemon.broker import Mosquitto
from tabled.simulators.ledger import read_ledger
from tabled.tools.demo import Console
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)


def setup(tmp_path: Path, broker: Mosquitto, *sim_args: str) -> tuple[Simulator, Daemon, bytes]:
    sim = Simulator(["shuffler", "--game", "qpoker", "--link", str(tmp_path / "shuffler"),
                     "--step", *sim_args], tmp_path / "sim.log")
    path = sim.start()
    key = secrets.token_hex(32).encode()
    key_file = tmp_path / "console.key"
    key_file.write_bytes(key)
    os.chmod(key_file, 0o600)
    config = write_config(tmp_path / "tabled.toml", game="qpoker",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shuffler-1", "family": "shuffler", "url": path}],
                          commands={"enabled": True, "hmac_key_file": str(key_file)})
    return sim, Daemon(config, tmp_path / "daemon.log"), key


async def play(sim: Simulator, daemon: Daemon, broker: Mosquitto, key: bytes, rounds: int,
               sub: Subscriber) -> None:
    """The dealer console: decide and reveal after each deal, press "deal" after each outcome."""
    base = "tabled/lab/t1"
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe(f"{base}/event", qos=1)
        await client.subscribe(f"{base}/outcome", qos=1)
        console = Console(client, base, key, seed=3)
        seen = 0
        async with asyncio.timeout(60):
            async for message in client.messages:
                body = json.loads(message.payload)  # type: ignore[arg-type]
                if str(message.topic).endswith("/event"):
                    await console.event(body)
                    continue
                seen += 1
                if seen >= rounds:
                    break
                assert sim.proc is not None and sim.proc.stdin is not None
                sim.proc.stdin.write("deal\n")
                sim.proc.stdin.flush()
    await sub.wait_for("/outcome", rounds, alive=daemon)


async def test_rounds_with_a_console_equal_replay_and_hide_the_dealer(
        tmp_path: Path, broker: Mosquitto) -> None:
    rounds = 12
    sim, daemon, key = setup(tmp_path, broker, "--seed", "7", "--rounds", str(rounds),
                             "--pace", "0.005")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await play(sim, daemon, broker, key, rounds, sub)
            messages = list(sub.messages)
            outcomes, events = sub.on("/outcome"), sub.on("/event")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert [o["round"] for o in outcomes] == list(range(1, rounds + 1))
    assert all(o["status"] == "complete" for o in outcomes)
    assert_contiguous(outcomes)
    assert [strip_envelope(o) for o in outcomes] == replay(
        "qpoker", [strip_envelope(e) for e in events])
    # no message before a round's outcome carries that round's dealer cards
    for outcome in outcomes:
        dealer = set(outcome["result"]["dealer"]["cards"])
        position = next(i for i, (t, p, _) in enumerate(messages)
                        if t.endswith("/outcome") and p["round"] == outcome["round"])
        reveal = max(i for i, (t, p, _) in enumerate(messages[:position])
                     if t.endswith("/event") and p["type"] == "reveal")
        start = max(i for i, (t, p, _) in enumerate(messages[:position])
                    if t.endswith("/event") and p["type"] == "round_start")
        for topic, payload, _ in messages[start:reveal - 1]:
            text = json.dumps(payload)
            assert not any(card in text for card in dealer), (topic, payload)
    commands = [e for e in events if e.get("source", "").startswith("console:")]
    assert commands and all(e["type"] in ("decision", "reveal") for e in commands)


async def test_a_shuffler_failure_mid_deal_voids_the_round(tmp_path: Path,
                                                           broker: Mosquitto) -> None:
    # 2 rounds of 3 seats: hands 1-4 are round 1; the jam stops the 6th hand (round 2, seat 2)
    sim, daemon, key = setup(tmp_path, broker, "--seed", "2", "--rounds", "2", "--seats",
                             "1,2,3", "--pace", "0.005", "--fault", "jam@6")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await play(sim, daemon, broker, key, 2, sub)
            outcomes, faults = sub.on("/outcome"), sub.on("/fault")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert outcomes[0]["status"] == "complete"
    void = outcomes[1]
    assert void["status"] == "void" and void["article"] == "qpoker.art11.5"
    assert all(b["dobo"]["result"] == "void" and b["play"]["result"] == "void"
               for b in void["bets"].values())
    assert any(f.get("code") == "shuffler_jam" for f in faults)


async def test_a_shuffler_failure_before_a_round_s_first_card_voids_that_round(
        tmp_path: Path, broker: Mosquitto) -> None:
    """Issue 16, item 3: failure@4 with rounds of seats 1,2 (three hands each): the machine
    announces round 2 and fails before its first card. Round 2 is void under qpoker.art11.5 (it
    used to get no outcome at all: round 3's round_start replaced it), and every round the
    machine dealt has its outcome, with the cards its ledger says it dealt."""
    ledger_path = tmp_path / "ledger.jsonl"
    sim, daemon, key = setup(tmp_path, broker, "--seed", "1", "--rounds", "3", "--seats", "1,2",
                             "--pace", "0.005", "--fault", "failure@4",
                             "--ledger", str(ledger_path))
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await play(sim, daemon, broker, key, 3, sub)
            outcomes = sub.on("/outcome")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    ledger = read_ledger(ledger_path)
    assert [(r["round"], r["halted"]) for r in ledger] == [(1, None), (2, "failure"), (3, None)]
    assert [(o["round"], o["status"], o.get("article")) for o in outcomes] == [
        (1, "complete", None), (2, "void", "qpoker.art11.5"), (3, "complete", None)]
    assert "shuffler_failure" in outcomes[1]["void_reason"]
    assert all(b["dobo"]["result"] == "void" for b in outcomes[1]["bets"].values())
    assert sorted(outcomes[1]["bets"]) == ["1", "2"]
    for outcome, dealt in zip(outcomes, ledger, strict=True):
        if outcome["status"] == "complete":
            result = outcome["result"]
            assert result["dealer"]["cards"] == dealt["hands"]["dealer"]
            assert {s: r["cards"] for s, r in result["seats"].items()} == {
                s: c for s, c in dealt["hands"].items() if s != "dealer"}
