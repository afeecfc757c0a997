"""``tabled-sim`` + ``tabled listen``: the engineer's first tool at a new table, and the
simulators' proof. For each family, a simulator process and a ``tabled listen`` process: a seeded
shoe, a dealt Q Poker round and a dice sequence arrive intact as CONTRACT events (JSON lines),
and every injected fault arrives as its fault event."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from tabled.simulators.shoe import shuffled_shoe
from tests.integration.harness import Simulator


def listen(driver: str, url: str, count: int) -> tuple[list[dict], dict]:
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli",
                           "listen", "--driver", driver, url,
                           "--count", str(count), "--duration", "30"],
                          capture_output=True, text=True, timeout=60, check=False)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    summary = json.loads(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr
    return events, summary


def test_a_seeded_shoe_arrives_card_for_card(tmp_path: Path) -> None:
    sim = Simulator(["shoe", "--seed", "17", "--decks", "6", "--hands", "12", "--forever",
                     "--fault", "unreadable@30", "--fault", "corrupt@7",
                     "--link", str(tmp_path / "shoe")], tmp_path / "sim.log")
    try:
        events, summary = listen("shoe", sim.start(), 60)
    finally:
        sim.stop()
    assert events[0]["type"] == "shoe_start" and events[0]["decks"] == 6
    pulled = [e for e in events if e["type"] in ("card", "burn")]
    # every card out of the shoe, in the order the simulator shuffled it (the unreadable one
    # leaves a hole that the fault event names)
    shoe = shuffled_shoe(random.Random(17), 6)
    faults = [e for e in events if e["type"] == "fault"]
    assert [f["code"] for f in faults] == ["unreadable_card"]
    readable = [i for i in range(len(pulled) + 1) if i != 29][: len(pulled)]
    assert [e.get("card") for e in pulled] == [shoe[i] for i in readable]
    assert [e["seq"] for e in events] == list(range(len(events)))  # the driver's own numbers
    assert summary["counters"].get("naks_sent", 0) + summary["counters"].get("bad_crc", 0) >= 1


def test_a_dealt_qpoker_round_arrives_dealer_last(tmp_path: Path) -> None:
    sim = Simulator(["shuffler", "--game", "qpoker", "--seed", "5", "--rounds", "2",
                     "--seats", "2,4,6", "--fault", "jam@7", "--fault", "exposed@2",
                     "--link", str(tmp_path / "shuffler"), "--forever"], tmp_path / "sim.log")
    try:
        events, summary = listen("shuffler", sim.start(), 10)
    finally:
        sim.stop()
    first = events[: events.index(next(e for e in events if e["type"] == "round_start")) + 1]
    assert first[-1]["seats"] == [2, 4, 6]
    hands = [e for e in events if e["type"] == "hand"]
    assert [h["seat"] for h in hands[:4]] == [2, 4, 6, "dealer"]  # Art. 7(2): dealer last
    cards = [c for h in hands[:4] for c in h["cards"]]
    assert all(len(h["cards"]) == 3 for h in hands) and len(set(cards)) == 12  # one deck
    # seat 4's one exposed card (item 4 of issue 16: that card, not the hand, is face up)
    assert hands[1]["face_up"] is False and len(hands[1]["exposed"]) == 1
    assert hands[1]["exposed"][0] in hands[1]["cards"]
    codes = [e["code"] for e in events if e["type"] == "fault"]
    assert codes == ["card_exposed", "shuffler_jam"]
    assert summary["info"]["serial"]


def test_a_dice_sequence_arrives_with_its_faults(tmp_path: Path) -> None:
    sim = Simulator(["dice", "--rolls", "3-4,6-6,1-2,5-5,2-3", "--pace", "0.02",
                     "--fault", "cocked@2", "--fault", "off_table@4", "--fault", "drop@3",
                     "--socket", str(tmp_path / "dice.sock"), "--forever"], tmp_path / "sim.log")
    try:
        sim.start()
        assert sim.proc is not None and sim.proc.stdout is not None
        url = sim.proc.stdout.readline().split(":", 1)[1].strip()
        events, summary = listen("dice", url, 7)
    finally:
        sim.stop()
    rolls = [e["dice"] for e in events if e["type"] == "roll"]
    assert rolls == [[3, 4], [6, 6], [1, 2], [5, 5], [2, 3]]  # the dropped report was resent
    assert [e["reason"] for e in events if e["type"] == "no_roll"] == ["off_table"]
    assert [e["code"] for e in events if e["type"] == "fault"] == ["cocked_die"]
    assert next(e for e in events if e["type"] == "roll" and e["dice"] == [6, 6])["cocked"]
    assert summary["counters"].get("resend_requests", 0) + summary["counters"].get(
        "gaps", 0) >= 1
