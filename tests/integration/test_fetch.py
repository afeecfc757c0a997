"""A table serves its journal's published streams back on request, and announces how far they
reach (issue 27; docs/mqtt.md "Reconciliation: ``…/fetch``").

Real parts: Mosquitto on a free port, ``tabled run`` as a subprocess with a simulated shoe or
shuffler-dealer, a subscriber that keeps every payload as the broker delivered it (bytes), and
the pit's side of the protocol as the spec states it (tests/fetching.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tabled.contract.signing import sign
from tabled.daemon.broker import Mosquitto
from tests.fetching import FetchClient, fetch_key, signed_fetch
from tests.integration.harness import Daemon, Simulator, Subscriber, write_config
from tests.integration.test_daemon_qpoker import setup as qpoker_setup
from tests.integration.test_security import (
    DAEMON,
    FLOOR,
    Floor,
    cards_in,
    command,
    shifted,
    shoe,
)
from tests.integration.tls import Pki, example_acl, floor_broker, password_file

BASE = "tabled/lab/t1"
HANDS = 50


class RawStreams:
    """Every message on the table's durable streams, as the bytes the broker delivered, by
    topic and number (the first delivery of a number; a QoS 1 re-delivery is the same)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.by_topic: dict[str, dict[int, bytes]] = {"event": {}, "outcome": {}, "fault": {}}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[RawStreams]:
        async with aiomqtt.Client("127.0.0.1", self.port) as client:
            for topic in self.by_topic:
                await client.subscribe(f"{BASE}/{topic}", qos=1)
            task = asyncio.create_task(self._read(client))
            try:
                yield self
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                    await task

    async def _read(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            raw = message.payload
            assert isinstance(raw, bytes)
            stream = str(message.topic).rsplit("/", 1)[1]
            self.by_topic[stream].setdefault(json.loads(raw)["table_seq"], raw)


def shoe_table(tmp_path: Path, broker: Mosquitto, *, hands: int = HANDS,
               fetch: dict[str, Any] | None = None) -> tuple[Simulator, Daemon]:
    sim = Simulator(["shoe", "--seed", "5", "--hands", str(hands), "--pace", "0.002",
                     "--link", str(tmp_path / "shoe")], tmp_path / "sim.log")
    path = sim.start()
    config = write_config(tmp_path / "tabled.toml", game="baccarat",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "url": path}],
                          fetch=fetch)
    return sim, Daemon(config, tmp_path / "daemon.log")


async def until(condition: Any, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_a_fetch_returns_the_published_messages_byte_for_byte(
        tmp_path: Path, broker: Mosquitto) -> None:
    key = fetch_key(tmp_path / "fetch.key")
    sim, daemon = shoe_table(tmp_path, broker, fetch={
        "hmac_key_file": tmp_path / "fetch.key", "max_messages": 150})
    try:
        async with (Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub,
                    RawStreams(broker.port).running() as raw,
                    FetchClient("127.0.0.1", broker.port, BASE, key) as pit):
            daemon.start()
            await sub.wait_for("/outcome", HANDS, alive=daemon)
            events = raw.by_topic["event"]

            def caught_up() -> bool:  # what the table announces acknowledged has all come
                metrics = sub.on("/metrics")
                return bool(metrics) and metrics[-1]["high_water"] == {
                    t: max(raw.by_topic[t], default=-1) for t in raw.by_topic} and all(
                    len(r) == max(r, default=-1) + 1 for r in raw.by_topic.values())

            await until(caught_up)
            high = max(events)
            assert high > 200  # more than one request's worth, and parts of 100

            # the whole event stream, clipped at 150 a request, each asked again from "next"
            first = await pit.request("event", 0, 10**12)
            assert [p["part"] for p in first] == [1, 2]
            assert [len(p["messages"]) for p in first] == [100, 50]
            assert [p["last"] for p in first] == [False, True]
            for p in first:
                assert {k: v for k, v in p.items() if k not in ("messages", "part", "last")} == {
                    "type": "fetch_reply", "ok": True, "nonce": first[0]["nonce"],
                    "stream": "event", "from": 0, "to": 149, "next": 150, "high_water": high,
                    "journal": p["journal"], "_topic": f"{BASE}/fetch/reply/pit-a"}
            fetched = await pit.fetch_all("event", 0, high)
            assert [text.encode() for text in fetched] == [events[n] for n in range(high + 1)]
            outcomes = await pit.fetch_all("outcome", 0, HANDS - 1)
            assert [text.encode() for text in outcomes] == [
                raw.by_topic["outcome"][n] for n in range(HANDS)]

            # a range that starts inside and ends beyond the high-water mark, one wholly beyond
            (tail,) = await pit.request("outcome", HANDS - 2, HANDS + 5)
            assert [json.loads(m)["table_seq"] for m in tail["messages"]] == [HANDS - 2,
                                                                              HANDS - 1]
            assert (tail["next"], tail["high_water"], tail["last"]) == (HANDS + 6, HANDS - 1,
                                                                       True)
            (beyond,) = await pit.request("fault", 10**15, 2**53 - 1)
            assert beyond["ok"] and beyond["messages"] == [] and beyond["last"] is True
            faults = max(raw.by_topic["fault"], default=-1)
            assert beyond["to"] == 10**15 + 149 and beyond["high_water"] == faults

            # the birth and the metrics say how far each stream reaches, and whose journal
            birth = next(s for s in sub.on("/t1/status") if s["state"] == "online")
            journal = birth["journal"]
            assert re.fullmatch(r"[0-9a-f]{32}", journal["id"])
            assert journal["first"] == {"event": 0, "outcome": 0, "fault": 0}
            assert set(birth["high_water"]) == {"event", "outcome", "fault"}
            assert birth["fetch"] is True
            assert all(p["journal"] == {"id": journal["id"], "first": 0} for p in first)
            seen = len(sub.on("/metrics"))
            await sub.wait_for("/metrics", seen + 1, alive=daemon)
            metrics = sub.on("/metrics")[-1]
            assert metrics["high_water"] == {"event": high, "outcome": HANDS - 1,
                                             "fault": faults}
            assert metrics["journal"]["id"] == journal["id"]
            assert metrics["fetch"]["requests"] == metrics["fetch"]["served"] == 6
            assert metrics["fetch"]["refused"]["forged"] == 0
    finally:
        sim.stop()
        assert daemon.stop() == 0


async def test_each_bad_request_is_refused_and_counted(tmp_path: Path, broker: Mosquitto) -> None:
    key = fetch_key(tmp_path / "fetch.key")
    sim, daemon = shoe_table(tmp_path, broker, hands=2,
                             fetch={"hmac_key_file": tmp_path / "fetch.key", "rate": 1.0})
    try:
        # (not …/#: a request that is not JSON is one of the messages under it)
        async with (Subscriber("127.0.0.1", broker.port, f"{BASE}/metrics") as sub,
                    Subscriber("127.0.0.1", broker.port, f"{BASE}/outcome") as outcomes,
                    FetchClient("127.0.0.1", broker.port, BASE, key) as pit):
            daemon.start()
            await outcomes.wait_for("/outcome", 2, alive=daemon)

            async def refused(body: dict[str, Any]) -> dict[str, Any]:
                since = await pit.send(body)
                (reply,) = await pit.reply_to(body["nonce"], since=since)
                assert reply["ok"] is False and reply["type"] == "fetch_reply", reply
                assert reply["_topic"] == body["reply_to"]
                return reply

            forged = signed_fetch(secrets.token_hex(32).encode(), BASE, "event", 0, 5)
            assert (await refused(forged))["error"] == "forged"
            tampered = {**signed_fetch(key, BASE, "event", 0, 5), "to": 10**6}
            assert (await refused(tampered))["error"] == "forged"
            stale = signed_fetch(key, BASE, "event", 0, 5, ts=shifted(-120))
            assert (await refused(stale))["error"] == "stale"
            future = signed_fetch(key, BASE, "event", 0, 5, ts=shifted(120))
            assert (await refused(future))["error"] == "stale"
            good = signed_fetch(key, BASE, "event", 0, 5)
            (served,) = await pit.reply_to(good["nonce"], since=await pit.send(good))
            assert served["ok"] is True and len(served["messages"]) == 6
            assert (await refused(good))["error"] == "replayed"
            # a reply topic that is not the requester's own: refused there...
            other = signed_fetch(key, BASE, "event", 0, 5,
                                 over={"reply_to": f"{BASE}/fetch/reply/pit-b"})
            reply = await refused(other)
            assert reply["error"] == "malformed" and "reply_to must be" in reply["detail"]
            # ... and one outside this table's reply topics, or no JSON, gets no answer at all
            elsewhere = signed_fetch(key, BASE, "event", 0, 5,
                                     over={"reply_to": "tabled/lab/t2/cmd/void"})
            await pit.send(elsewhere)
            await pit.send(b"{not json")
            for bad in ({"stream": "metrics"}, {"from": -1}, {"from": 9, "to": 3},
                        {"to": 2**53}, {"from": True}, {"requester": "../x"},
                        {"nonce": "short"}):
                body = signed_fetch(key, BASE, "event", 0, 5, over=bad)
                if bad.get("requester"):  # a reply topic of this table's, with a bad requester
                    body = {**body, "reply_to": f"{BASE}/fetch/reply/pit-a"}
                    body["mac"] = sign(body, key)
                reply = await refused(body)
                assert reply["error"] == "malformed", (bad, reply)
            # more than the rate (1/s, burst 10): what the requests above left is soon spent
            bodies = [signed_fetch(key, BASE, "outcome", 0, 0) for _ in range(12)]
            since = len(pit.replies)
            for body in bodies:
                await pit.send(body)
            answers = [(await pit.reply_to(b["nonce"], since=since))[0] for b in bodies]
            limited = [a for a in answers if a.get("error") == "rate_limited"]
            assert limited and all(a["ok"] is False for a in limited)
            assert not [r for r in pit.replies if r.get("nonce") == elsewhere["nonce"]]

            seen = len(sub.on("/metrics"))
            await sub.wait_for("/metrics", seen + 1, alive=daemon)
            refusals = sub.on("/metrics")[-1]["fetch"]["refused"]
            assert refusals["forged"] == 2 and refusals["stale"] == 2
            assert refusals["replayed"] == 1 and refusals["rate_limited"] == len(limited)
            assert refusals["malformed"] == 1 + 1 + 1 + 7  # pit-b, elsewhere, not JSON, bad
    finally:
        sim.stop()
        assert daemon.stop() == 0
    warnings = [json.loads(line[3:] if line.startswith("<") else line)
                for line in daemon.log_lines() if '"fetch_refused"' in line]
    assert {w["reason"] for w in warnings} >= {"forged", "stale", "replayed", "malformed",
                                               "rate_limited"}
    assert all(w["level"] == "warning" for w in warnings)
    assert not any(key.decode() in line or '"mac"' in line for line in daemon.log_lines())


async def test_a_fetch_before_the_reveal_carries_no_dealer_card(
        tmp_path: Path, broker: Mosquitto) -> None:
    """Q Poker: the dealer's hand is journaled, withheld; a fetch of the whole event stream
    while the round waits for the dealer's reveal has no card of it. After the reveal, the
    same fetch has them (the test can see a card when there is one)."""
    sim, daemon, console_key = qpoker_setup(tmp_path, broker, "--seed", "7", "--rounds", "1",
                                            "--pace", "0.002")
    key = fetch_key(tmp_path / "fetch.key")
    with daemon.config.open("a") as config:
        config.write(f'\n[fetch]\nhmac_key_file = "{tmp_path / "fetch.key"}"\n')
    try:
        async with (Subscriber("127.0.0.1", broker.port, f"{BASE}/event") as sub,
                    Subscriber("127.0.0.1", broker.port, f"{BASE}/outcome") as outcomes,
                    FetchClient("127.0.0.1", broker.port, BASE, key) as pit,
                    aiomqtt.Client("127.0.0.1", broker.port) as console):
            daemon.start()
            await until(lambda: any(e["type"] == "withheld" and e["seat"] == "dealer"
                                    for e in sub.on("/event")))
            seats = next(e["seats"] for e in sub.on("/event") if e["type"] == "round_start")
            before = await pit.fetch_all("event", 0, 10_000)
            before += await pit.fetch_all("outcome", 0, 10_000)
            before += await pit.fetch_all("fault", 0, 10_000)
            assert any('"withheld"' in text for text in before)
            for seat in seats:
                await console.publish(f"{BASE}/cmd/decision", json.dumps(
                    command(console_key, "decision", {"seat": seat, "play": True})), qos=1)
            await console.publish(f"{BASE}/cmd/reveal", json.dumps(
                command(console_key, "reveal")), qos=1)
            (outcome,) = await outcomes.wait_for("/outcome", 1, alive=daemon)
            after = await pit.fetch_all("event", 0, 10_000)
    finally:
        sim.stop()
        assert daemon.stop() == 0
    dealer = set(outcome["result"]["dealer"]["cards"])
    assert len(dealer) == 3
    assert not cards_in([json.loads(text) for text in before]) & dealer
    assert cards_in([json.loads(text) for text in after]) >= dealer


async def test_without_a_fetch_key_the_table_does_not_listen(tmp_path: Path) -> None:
    key = fetch_key(tmp_path / "fetch.key")  # the pit has one; the table was given none
    with Mosquitto(workdir=tmp_path / "broker", extra_config=["log_type subscribe"]) as broker:
        sim, daemon = shoe_table(tmp_path, broker, hands=1)
        try:
            async with (Subscriber("127.0.0.1", broker.port, f"{BASE}/+") as sub,
                        FetchClient("127.0.0.1", broker.port, BASE, key) as pit):
                daemon.start()
                await sub.wait_for("/outcome", 1, alive=daemon)
                await sub.wait_for("/metrics", 1, alive=daemon)
                await pit.send(signed_fetch(key, BASE, "event", 0, 5))
                await asyncio.sleep(2.0)  # an answer takes milliseconds (the tests above)
                assert pit.replies == []
                birth = next(s for s in sub.on("/t1/status") if s["state"] == "online")
                assert birth["fetch"] is False
                metrics = sub.on("/metrics")[-1]
                assert metrics["fetch"] is None and "high_water" in metrics
                assert "high_water" in birth
        finally:
            sim.stop()
            assert daemon.stop() == 0
        subscriptions = broker.log_path.read_text().splitlines()
    # Mosquitto logs each SUBSCRIBE ("<client> <qos> <filter>"): the pit's is there, and the
    # table's client subscribed to no fetch topic
    assert any(f"{BASE}/fetch/reply/+" in line for line in subscriptions)
    assert not [line for line in subscriptions
                if "tabled-lab-t1" in line and f"{BASE}/fetch" in line]


async def test_the_journal_id_outlives_a_restart_and_a_new_journal_has_another(
        tmp_path: Path, broker: Mosquitto) -> None:
    config = write_config(tmp_path / "tabled.toml", game="baccarat",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url)
    daemon = Daemon(config, tmp_path / "daemon.log")

    async def birth_id() -> str:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/status") as sub:
            daemon.start()
            try:
                await until(lambda: any(s["state"] == "online" and s["pid"] == (
                    daemon.proc.pid if daemon.proc else 0) for s in sub.on("/status")))
            finally:
                assert daemon.stop() == 0
            births = [s for s in sub.on("/status") if s["state"] == "online"]
            journal_id: str = births[-1]["journal"]["id"]
            return journal_id

    first = await birth_id()
    assert await birth_id() == first
    for path in tmp_path.glob("journal.sqlite*"):
        path.unlink()
    assert await birth_id() not in (first, None)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


async def test_over_the_example_acl_the_pit_fetches_and_the_floor_cannot(
        tmp_path: Path, pki: Pki) -> None:
    """config/mosquitto/tabled.acl as shipped: the table reads its ``…/fetch`` and answers on
    ``…/fetch/reply/+``; the pit may ask; a floor reader (read-only) may not, and its request
    never reaches the table."""
    names = (DAEMON, "pit", FLOOR)
    passwords = {name: secrets.token_urlsafe(18) for name in names}
    with floor_broker(pki, tmp_path / "broker",
                      passwords=password_file(tmp_path / "passwd", passwords),
                      acl=example_acl(tmp_path / "tabled.acl")) as broker:
        floor = Floor(pki, broker, passwords, {name: pki.identity(name) for name in names})
        key = fetch_key(tmp_path / "fetch.key")
        sim = shoe(tmp_path)
        mqtt, tls = floor.daemon_settings(tmp_path)
        config = write_config(tmp_path / "tabled.toml", game="baccarat",
                              journal=tmp_path / "journal.sqlite", broker_url=floor.url,
                              mqtt=mqtt, tls=tls, fetch={"hmac_key_file": tmp_path / "fetch.key"},
                              devices=[{"id": "shoe-1", "family": "shoe", "url": sim.start()}])
        daemon = Daemon(config, tmp_path / "daemon.log")
        try:
            async with (floor.subscriber(f"{BASE}/+") as sub,
                        FetchClient("127.0.0.1", broker.port, BASE, key,
                                    **floor.login("pit")) as pit,
                        FetchClient("127.0.0.1", broker.port, BASE, key, requester="floor-1",
                                    **floor.login(FLOOR)) as reader):
                daemon.start()
                await sub.wait_for("/outcome", 2, alive=daemon)
                (reply,) = await pit.request("outcome", 0, 1)
                assert reply["ok"] and [json.loads(m)["round"] for m in reply["messages"]] == [
                    1, 2]
                await reader.send(signed_fetch(key, BASE, "outcome", 0, 1, requester="floor-1"))
                await asyncio.sleep(2.0)
                assert [r for r in reader.replies if r["_topic"].endswith("/floor-1")] == []
                seen = len(sub.on("/metrics"))
                await sub.wait_for("/metrics", seen + 1, alive=daemon)
                assert sub.on("/metrics")[-1]["fetch"]["requests"] == 1
        finally:
            sim.stop()
            assert daemon.stop() == 0
