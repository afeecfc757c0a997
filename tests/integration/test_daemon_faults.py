"""The daemon through faults, end to end: a broker outage, a shoe unplugged and replugged (back
in time: the hand continues; too late: the hand is void, baccarat.art10), and kill -9 in the
middle of a round. Every case ends by checking what a subscriber received: every outcome, in
order, no gap, nothing duplicated under a new number, and equal to replay of the events."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import Journal
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)


def shoe(tmp_path: Path, *args: str) -> tuple[Simulator, str]:
    # --forever: the shoe stays plugged in once its hands are dealt (an ending simulator is
    # an unplug of its own)
    sim = Simulator(["shoe", "--link", str(tmp_path / "shoe"), "--forever", *args],
                    tmp_path / "sim.log")
    return sim, sim.start()


def config_for(tmp_path: Path, broker: Mosquitto, url: str, **device: object) -> Path:
    return write_config(tmp_path / "tabled.toml", game="baccarat",
                        journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                        devices=[{"id": "shoe-1", "family": "shoe", "url": url,
                                  "reconnect_min": 0.1, "reconnect_max": 0.5, **device}])


def unique_by_seq(messages: list[dict]) -> list[dict]:
    """Drop QoS 1 re-deliveries (same table_seq), checking each is byte-for-byte the same."""
    seen: dict[int, dict] = {}
    for message in messages:
        first = seen.setdefault(message["table_seq"], message)
        assert first == message, "a number was reused for a different message"
    return [seen[k] for k in sorted(seen)]


def lost_mid_hand(events: list[dict]) -> bool:
    """Whether the shoe's device_lost fault came while a hand had some of its cards."""
    index = next(i for i, e in enumerate(events) if e.get("code") == "device_lost")
    before = [strip_envelope(e) for e in unique_by_seq(events[:index])]
    settled = replay("baccarat", before)
    cards = sum(1 for e in before if e["type"] == "card")
    dealt = sum(len(o["result"]["player_cards"]) + len(o["result"]["banker_cards"])
                for o in settled)
    return cards > dealt


def check_stream(outcomes: list[dict], events: list[dict], count: int) -> list[dict]:
    assert_contiguous(outcomes)
    assert_contiguous(events)
    outcomes, events = unique_by_seq(outcomes), unique_by_seq(events)
    assert [o["round"] for o in outcomes] == list(range(1, count + 1))
    replayed = replay("baccarat", [strip_envelope(e) for e in events])
    assert [strip_envelope(o) for o in outcomes] == replayed
    return outcomes


async def test_a_broker_outage_delays_but_loses_nothing(tmp_path: Path) -> None:
    hands = 60
    broker = Mosquitto(workdir=tmp_path / "broker", persistence=True)
    broker.start()
    sim, url = shoe(tmp_path, "--seed", "21", "--hands", str(hands), "--pace", "0.01")
    daemon = Daemon(config_for(tmp_path, broker, url), tmp_path / "daemon.log")
    # a consumer with a persistent session: the broker queues for it while it is away
    sub = Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#", identifier="floor-1",
                     clean_session=False)
    try:
        async with sub:
            daemon.start()
            await sub.wait_for("/outcome", 10, alive=daemon)
            broker.stop()  # the broker goes away in the middle of the shoe...
            await asyncio.sleep(2.0)  # ...the shoe keeps dealing: outcomes wait in the journal
            broker.start()
            outcomes = await sub.wait_for("/outcome", hands, alive=daemon, timeout=90)
            events = sub.on("/event")
            before = sub.distinct("/metrics")
            await sub.wait_for("/metrics", before + 1, alive=daemon)
            metrics = sub.on("/metrics")
    finally:
        sim.stop()
        assert daemon.stop() == 0
        broker.cleanup()
    check_stream(outcomes, events, hands)
    assert metrics[-1]["broker_connects"] == 2 and metrics[-1]["queue_depth"] == 0


async def test_a_shoe_replugged_in_time_continues_the_hand(tmp_path: Path,
                                                           broker: Mosquitto) -> None:
    hands = 12
    # unplugged for 1 s at the 20th data frame: in the first hand (checked below)
    sim, url = shoe(tmp_path, "--seed", "4", "--hands", str(hands), "--pace", "0.02",
                    "--fault", "disconnect@20:1.0")
    daemon = Daemon(config_for(tmp_path, broker, url, lost_void_after=10.0),
                    tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            outcomes = await sub.wait_for("/outcome", hands, alive=daemon, timeout=60)
            events, faults = sub.on("/event"), sub.on("/fault")
            statuses = [p for t, p, _ in sub.messages if "/device/shoe-1/status" in t]
    finally:
        sim.stop()
        assert daemon.stop() == 0
    outcomes = check_stream(outcomes, events, hands)
    assert lost_mid_hand(events), " ".join(str(e.get("card") or e.get("code") or e["type"])
                                           for e in events)
    assert all(o["status"] == "complete" for o in outcomes)
    assert [f["code"] for f in faults if f.get("type") == "fault"] == ["device_lost"]
    states = [s["state"] for s in statuses]
    assert "lost" in states and states[-1] == "connected"


async def test_a_shoe_gone_too_long_voids_the_hand(tmp_path: Path, broker: Mosquitto) -> None:
    hands = 6
    sim, url = shoe(tmp_path, "--seed", "4", "--hands", str(hands), "--pace", "0.02",
                    "--fault", "disconnect@20:3.0")
    daemon = Daemon(config_for(tmp_path, broker, url, lost_void_after=1.0),
                    tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await sub.wait_for("/outcome", hands, alive=daemon, timeout=60)
            outcomes, events = sub.on("/outcome"), sub.on("/event")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert lost_mid_hand(events)
    voids = [o for o in outcomes if o["status"] == "void"]
    assert len(voids) == 1
    assert voids[0]["article"] == "baccarat.art10"
    assert "device_lost" in voids[0]["void_reason"]
    # the void is in the event stream too, so replay agrees
    assert [strip_envelope(o) for o in outcomes] == replay(
        "baccarat", [strip_envelope(e) for e in events])


async def test_kill_9_mid_round_recovers_state_and_loses_nothing(tmp_path: Path,
                                                                 broker: Mosquitto) -> None:
    # the shoe deals on while the daemon is down (~50 cards in the second a restart takes),
    # and the daemon catches up when it is back: 60 hands leave room for three kills
    hands = 60
    sim, url = shoe(tmp_path, "--seed", "8", "--hands", str(hands), "--pace", "0.02")
    config = config_for(tmp_path, broker, url)
    daemon = Daemon(config, tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:

            async def start() -> None:
                # up means connected and announced online; a SIGTERM before then would find
                # Python still starting, with no handler yet to shut down by
                daemon.start()
                await sub.wait_for("/t1/status", sub.distinct("/t1/status") + 1, alive=daemon)
                assert sub.on("/t1/status")[-1]["state"] == "online"

            async def mid_hand() -> None:
                # a card of the next hand is out (published, so journaled) and its outcome is
                # not: a kill now finds the hand open. While the daemon catches up on what the
                # shoe dealt in its absence hands go by in milliseconds, so look on each message
                async with asyncio.timeout(30):
                    while True:
                        last = max(i for i, (t, _, _) in enumerate(sub.messages)
                                   if t.endswith("/outcome"))
                        if any(t.endswith("/event") and p["type"] == "card"
                               for t, p, _ in sub.messages[last + 1:]):
                            return
                        sub.changed.clear()
                        await sub.changed.wait()

            await start()
            for _ in range(3):
                # two hands through this run of the daemon, then into the next one
                await sub.wait_for("/outcome", sub.distinct("/outcome") + 2, alive=daemon)
                await mid_hand()
                daemon.kill9()
                # the broker publishes the last will: the table is offline
                await sub.wait_for("/t1/status", sub.distinct("/t1/status") + 1)
                assert sub.on("/t1/status")[-1]["state"] == "offline"
                await start()
            outcomes = await sub.wait_for("/outcome", hands, alive=daemon, timeout=90)
            events = sub.on("/event")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    check_stream(outcomes, events, hands)
    journal = Journal(tmp_path / "journal.sqlite", create=False)
    assert journal.verify().ok
    starts = journal._db.execute("SELECT body FROM journal WHERE kind = 'start'").fetchall()
    assert len(starts) == 4
    assert any(json.loads(b)["round_open"] for (b,) in starts[1:])  # some kill was mid-hand
    journal.close()
