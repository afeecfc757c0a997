"""A dealer's command that arrives late, end to end: real daemon, real Mosquitto, the real
shuffler simulator, signed commands over MQTT.

The defect (docs/reliability.md, "What the audit against the ledgers found"): the broker
campaign, Q Poker, seed 2, ``exposed@dealer:16``. The console decided and revealed on round 16,
which its exposed dealer's card had voided at once (qpoker.art11.3); the machine began round 17
before the commands reached the daemon, and the reveal, naming no round, voided round 17 under
qpoker.art11.1. Here round 1's dealer hand comes out exposed; the console's decisions and
reveal for it reach the daemon only once round 2 is being dealt. They name round 1, so they are
declined (``for_another_round``) and round 2 is dealt, decided and settled as it was played.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.daemon.broker import Mosquitto
from tabled.tools.console import command_body
from tests.integration.harness import Subscriber, replay, strip_envelope
from tests.integration.test_daemon_qpoker import setup

BASE = "tabled/lab/t1"
SEATS = (4, 5, 6)


async def test_a_late_reveal_for_a_voided_round_does_not_void_the_next_one(
        tmp_path: Path, broker: Mosquitto) -> None:
    # a slow machine (0.3 s a message), so that round 2 is still being dealt when the late
    # commands arrive, as in the campaign
    sim, daemon, key = setup(tmp_path, broker, "--seed", "2", "--rounds", "2", "--seats",
                             ",".join(map(str, SEATS)), "--pace", "0.3",
                             "--fault", "exposed@dealer:1")
    replies: list[dict[str, Any]] = []
    try:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub, \
                aiomqtt.Client("127.0.0.1", broker.port) as console:
            await console.subscribe(f"{BASE}/cmd/+/reply", qos=1)

            async def send(name: str, args: dict[str, Any]) -> dict[str, Any]:
                body = command_body(name, args, "pit-1", key)
                await console.publish(f"{BASE}/cmd/{name}", json.dumps(body), qos=1)
                async with asyncio.timeout(10):
                    async for message in console.messages:
                        reply: dict[str, Any] = json.loads(message.payload)  # type: ignore[arg-type]
                        if reply.get("nonce") == body["nonce"]:
                            replies.append(reply)
                            return reply
                raise AssertionError("no reply")

            def seen(kind: str, seat: Any = None) -> int:
                return sum(e["type"] == kind and (seat is None or e.get("seat") == seat)
                           for e in sub.on("/event"))
            # (round 1's dealer hand came out face up: published as it is, not withheld)

            daemon.start()
            (void,) = await sub.wait_for("/outcome", 1, alive=daemon)
            assert (void["round"], void["status"], void["article"]) == (1, "void",
                                                                        "qpoker.art11.3")
            assert sim.proc is not None and sim.proc.stdin is not None
            sim.proc.stdin.write("deal\n")  # the dealer presses "deal": round 2
            sim.proc.stdin.flush()
            async with asyncio.timeout(20):
                while seen("round_start") < 2:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            # the console's commands for round 1, late: round 2 is being dealt
            late = [await send("decision", {"seat": seat, "play": True, "round": 1})
                    for seat in SEATS]
            late.append(await send("reveal", {"round": 1}))
            async with asyncio.timeout(20):  # the deal of round 2 completes
                while seen("withheld", "dealer") < 1 and sub.distinct("/outcome") < 2:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
            assert sub.distinct("/outcome") == 1, "a late command ended round 2"
            # round 2's own commands: seat 4 folds, the others play
            own = [await send("decision", {"seat": seat, "play": seat != 4, "round": 2})
                   for seat in SEATS]
            own.append(await send("reveal", {"round": 2}))
            outcomes = await sub.wait_for("/outcome", 2, alive=daemon)
            events, faults = sub.on("/event"), sub.on("/fault")
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert [(o["round"], o["status"]) for o in outcomes] == [(1, "void"), (2, "complete")]
    bets = outcomes[1]["bets"]
    assert bets["4"]["play"]["result"] == "fold"  # round 2's decisions, not round 1's
    assert all(bets[str(s)]["play"]["result"] != "fold" for s in (5, 6))
    for reply in late:
        assert reply["ok"] is True and reply["rounds"] == []
        assert [n["code"] for n in reply["notices"]] == ["for_another_round"]
    assert all(r["ok"] and not r["notices"] for r in own) and own[-1]["rounds"] == [2]
    notices = [f for f in faults if f.get("type") == "notice"]
    assert [n["code"] for n in notices] == ["for_another_round"] * 4
    assert [n["article"] for n in notices] == ["qpoker.art9.2"] * 3 + ["qpoker.art9"]
    # the late reveal landed in the middle of round 2's deal, as in the campaign
    where = [(e["type"], e.get("seat"), e.get("round")) for e in events]
    assert where.index(("reveal", None, 1)) < where.index(("withheld", "dealer", 2))
    # every published event names its round (a command the one it named), and the published
    # stream replays to the published outcomes
    assert [e["round"] for e in events if e["type"] == "round_start"] == [1, 2]
    assert all(isinstance(e.get("round"), int) for e in events)
    assert [strip_envelope(o) for o in outcomes] == replay(
        "qpoker", [strip_envelope(e) for e in events])
