"""The daemon end to end with the dice sensor over the simulated USB backend: N rolls → N
outcomes on MQTT, identical to ``tabled replay`` of the published event stream."""

from __future__ import annotations

from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)

ROLLS = 60


async def test_rolls_arrive_as_outcomes_equal_to_replay(tmp_path: Path, broker: Mosquitto) -> None:
    sim = Simulator(["dice", "--seed", "5", "--count", str(ROLLS), "--pace", "0.005",
                     "--fault", "off_table@10", "--fault", "cocked@20", "--forever",
                     "--socket", str(tmp_path / "dice.sock")], tmp_path / "sim.log")
    sim.start()  # prints the socket first, then the URL
    assert sim.proc is not None and sim.proc.stdout is not None
    url = sim.proc.stdout.readline().split(":", 1)[1].strip()
    config = write_config(tmp_path / "tabled.toml", game="craps",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "dice-1", "family": "dice", "url": url}],
                          rules={"big_bets_on_come_out": False})
    daemon = Daemon(config, tmp_path / "daemon.log")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            # the no-roll is an outcome of its own (docs/contract.md)
            outcomes = await sub.wait_for("/outcome", ROLLS + 1, alive=daemon)
            await sub.wait_for("/fault", 1, alive=daemon)
            events = sub.on("/event")
            faults = sub.on("/fault")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert [o["round"] for o in outcomes] == list(range(1, ROLLS + 2))
    assert sum(1 for o in outcomes if o.get("no_roll")) == 1
    assert_contiguous(outcomes)
    assert any(f["code"] == "cocked_die" for f in faults)
    cocked = [e for e in events if e["type"] == "roll" and e.get("cocked")]
    assert len(cocked) == 1  # read by the face most clearly up (Art. 1) and still a roll
    replayed = replay("craps", [strip_envelope(e) for e in events],
                      {"big_bets_on_come_out": False})
    assert [strip_envelope(o) for o in outcomes] == replayed
