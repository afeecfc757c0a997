"""Issue 16, item 4, end to end: a shuffler-dealer that saw one card of a player's hand turned
face up (``tabled-sim shuffler --fault exposed@2``). Only that card is public before the deal is
complete (qpoker.art11.2: the round stands); the hand's other two cards stay withheld like any
face-down card, and the outcome record lists that one card as exposed, not the whole hand."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tabled.drivers.shuffler import protocol as p
from tabled.simulators.shuffler import parse_fault, qpoker_script
from tests.integration.harness import Subscriber, replay, strip_envelope
from tests.integration.test_daemon_qpoker import play, setup

SEED = 11


async def test_one_exposed_player_card_is_all_that_is_public_before_the_deal_ends(
        tmp_path: Path, broker: Mosquitto) -> None:
    # the 2nd hand of the session is seat 3's: one of its cards is seen face up
    script = qpoker_script(random.Random(SEED), rounds=1, seats=(1, 3, 5),
                           faults=[parse_fault("exposed@2")])
    hands = [m for m in script if isinstance(m, p.Hand)]
    seat3 = next(h for h in hands if h.seat == 3)
    (exposed,) = seat3.exposed_cards
    hidden = [c for c in seat3.cards if c != exposed]
    sim, daemon, key = setup(tmp_path, broker, "--seed", str(SEED), "--rounds", "1",
                             "--seats", "1,3,5", "--pace", "0.005", "--fault", "exposed@2")
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            await play(sim, daemon, broker, key, 1, sub)
            messages = list(sub.messages)
            outcomes, events = sub.on("/outcome"), sub.on("/event")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    (outcome,) = outcomes
    assert outcome["status"] == "complete"
    # the record: seat 3's one exposed card, not its hand
    assert outcome["result"]["seats"]["3"]["exposed"] == [exposed]
    assert sorted(outcome["result"]["seats"]["3"]["cards"]) == sorted(seat3.cards)
    # what went out while seat 3's hand was in the deal: at its place, a placeholder that shows
    # the exposed card alone; its other cards nowhere until the dealer's hand completed the deal
    dealing = [e for e in events if e["type"] in ("hand", "withheld", "card")]
    assert dealing[1] == {**dealing[1], "type": "withheld", "seat": 3, "count": 3,
                          "exposed": [exposed]}
    dealer_placeholder = next(i for i, (t, m, _) in enumerate(messages)
                              if t.endswith("/event") and m["type"] == "withheld"
                              and m["seat"] == "dealer")
    for topic, payload, _ in messages[:dealer_placeholder]:
        text = json.dumps(payload)
        assert not any(card in text for card in hidden), (topic, payload)
    # the published stream still replays to the same record
    assert [strip_envelope(o) for o in outcomes] == replay(
        "qpoker", [strip_envelope(e) for e in events])
