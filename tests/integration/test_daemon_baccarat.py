"""The daemon end to end with a simulated shoe: N hands dealt → N outcomes on MQTT, identical to
``tabled replay`` of the published event stream; sequence numbers contiguous."""

from __future__ import annotations

from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tabled.games.registry import decode_outcome
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)

HANDS = 40


async def test_hands_from_a_shoe_arrive_as_outcomes_equal_to_replay(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim = Simulator(["shoe", "--seed", "11", "--hands", str(HANDS), "--demo", "1",
                     "--pace", "0.005", "--link", str(tmp_path / "shoe")],
                    tmp_path / "sim.log")
    path = sim.start()
    config = write_config(tmp_path / "tabled.toml", game="baccarat",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "url": path}],
                          rules={"method": 1, "commission": "five_percent"})
    daemon = Daemon(config, tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            outcomes = await sub.wait_for("/outcome", HANDS, alive=daemon)
            events = sub.on("/event")
            status = sub.on("/t1/status")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert len(outcomes) == HANDS
    assert [o["round"] for o in outcomes] == list(range(1, HANDS + 1))
    assert outcomes[0].get("demo") is True
    assert_contiguous(outcomes)
    assert_contiguous(events)
    replayed = replay("baccarat", [strip_envelope(e) for e in events],
                      {"method": 1, "commission": "five_percent"})
    assert [strip_envelope(o) for o in outcomes] == replayed
    birth = status[0]
    assert birth["state"] == "online" and birth["game"] == "baccarat"
    # contract version 2 on the wire: in the birth record (beside the package version), and
    # in every message's ``v``; every outcome is one the contract's decoder takes
    assert birth["contract"] == 2 and isinstance(birth["version"], str)
    assert {m["v"] for m in [*outcomes, *events]} == {2}
    assert all(decode_outcome(o).v == 2 for o in outcomes)
    assert birth["options"] == {"method": 1, "commission": "five_percent",
                                "last_hand": "this", "decks": 8}
