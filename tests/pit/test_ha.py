"""Two pit servers, one floor, for real: two ``tabled pit`` processes on one PostgreSQL record
and one Mosquitto (a shared subscription, persistent sessions, reconciliation with the floor's
fetch key), behind HAProxy, while 20 tables play (the protocol tables of
``tests.pit.fetchtable``: the daemon's runtime and journal numbering, without devices). One pit
is killed with SIGKILL at random moments and started again a few seconds later, as a supervisor
would; the first kill is the leader's, and the survivor's takeover is timed.

At the end: every number of every table's journal once in the record with the journal's bytes,
nothing invented, no ``seq_gap`` left open; the table that went offline has one ``offline``
alert, and every alert change was published on ``…/pit/alert``, never twice by one server
(a second copy only when a leader was killed between publishing a change and marking it
published: none in three kills, at most one in five kills); the page answered through HAProxy
every ~100 ms throughout (no failure longer than the takeover bound); one signed-in session is
good on both servers. Three kills here (66-98 s on the shared 2-core machine); twenty with
``TABLED_SLOW=1`` (marked ``slow``)."""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import os
import random
import re
import secrets
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import psycopg
import pytest

from tabled.daemon.broker import Mosquitto, free_port
from tests.pit.conftest import PgServer
from tests.pit.fetchtable import STREAMS, ServingTable
from tests.pit.hafloor import PASSWORD, T_ANSWER, Pit, pit_config
from tests.pit.haproxy import haproxy_binary, running_haproxy
from tests.pit.pitproc import stop

TABLES = 20
#: The takeover this layout promises (docs/pit.md): a killed leader's lock is released when
#: PostgreSQL sees its socket close; a follower takes it at its next look (``[ha]``
#: poll_interval 1 s) — with room for a loaded CI machine.
TAKEOVER = 3.0

pytestmark = pytest.mark.skipif(haproxy_binary() is None,
                                reason="haproxy is not installed (make system-deps)")


async def wait_for(check: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await asyncio.to_thread(check)
        if got:
            return got
        assert time.monotonic() < deadline, what
        await asyncio.sleep(interval)


def signed_in(base: str) -> urllib.request.OpenerDirector:
    """An HTTP client signed in as ``sam`` through ``base`` (its cookie jar holds the
    session)."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(base + "/login", timeout=5) as r:
        form = r.read().decode()
    token = re.search(r'name="csrftoken" value="([^"]+)"', form)
    assert token is not None, form[:500]
    body = urllib.parse.urlencode({"name": "sam", "password": PASSWORD,
                                   "csrftoken": token.group(1)}).encode()
    with opener.open(base + "/login", data=body, timeout=5) as r:
        assert not urllib.parse.urlsplit(r.url).path.startswith("/login"), r.url
    return opener


def floor_page(opener: urllib.request.OpenerDirector, url: str) -> bool:
    """The floor page, signed in (not the sign-in form)."""
    with opener.open(url + "/", timeout=T_ANSWER) as r:
        return r.status == 200 and not urllib.parse.urlsplit(r.url).path.startswith("/login")


@dataclass
class Poller:
    """GET the floor page through the load balancer every ~100 ms, on a thread."""

    opener: urllib.request.OpenerDirector
    url: str
    results: list[tuple[float, bool]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            at = time.monotonic()
            try:
                ok = floor_page(self.opener, self.url)
            except OSError as exc:
                ok = False
                self.failures.append(f"{at:.1f} {time.monotonic() - at:.2f}s {exc}")
            self.results.append((at, ok))
            self._stop.wait(max(0.0, 0.1 - (time.monotonic() - at)))

    def longest_failure(self) -> float:
        longest, since = 0.0, None
        for at, ok in self.results:
            if not ok and since is None:
                since = at
            elif ok and since is not None:
                longest, since = max(longest, at - since), None
        if since is not None:
            longest = max(longest, time.monotonic() - since)
        return longest


def record(conninfo: str) -> dict[tuple[str, str, str], list[tuple[int, str]]]:
    out: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    with psycopg.connect(conninfo) as db:
        for site, table, topic, seq, payload in db.execute(
                "SELECT site, table_id, topic, table_seq, payload FROM messages WHERE topic = "
                "ANY(%s) ORDER BY site, table_id, topic, table_seq", (list(STREAMS),)):
            out.setdefault((site, table, topic), []).append((seq, payload))
    return out


def offline_status(table: ServingTable) -> str:
    """The table's last will, as the broker publishes it when the table's connection dies."""
    will = table.feed.status_numbers.will
    assert will is not None
    return json.dumps({"state": "offline", "reason": "connection_lost", "table_seq": will})


async def two_pits_one_floor(broker: Mosquitto, postgres: PgServer, tmp_path: Path,
                             kills: int) -> None:
    conninfo = postgres.conninfo(postgres.new_database())
    key_path, secret = tmp_path / "fetch.key", tmp_path / "session.key"
    key = secrets.token_hex(32)
    key_path.write_text(key + "\n")
    secret.write_text(secrets.token_urlsafe(48) + "\n")
    for path in (key_path, secret):
        os.chmod(path, 0o600)
    pits = []
    for name in ("pit-a", "pit-b"):
        port = free_port()
        pits.append(Pit(name, pit_config(tmp_path, name, broker, conninfo, key_path, secret,
                                         port), tmp_path / f"{name}.log", port))
    rng = random.Random(int.from_bytes(secrets.token_bytes(4), "big"))
    tables = [ServingTable(broker.port, key.encode(), index=i, journals=tmp_path)
              for i in range(TABLES)]
    gone = tables[7]  # goes offline halfway: one alert, published once per change
    published: list[dict[str, Any]] = []
    playing = True

    async def play(table: ServingTable) -> None:
        beat = 0
        while playing and not (table is gone and gone_offline.is_set()):
            await table.play(1)
            beat += 1
            if beat % 10 == 0:
                await table.metrics()  # the high-water marks, as a daemon's metrics say
            await asyncio.sleep(rng.uniform(0.2, 0.4))

    async def listen(client: aiomqtt.Client) -> None:
        async for message in client.messages:
            assert isinstance(message.payload, bytes)
            published.append(json.loads(message.payload))

    async def listening(client: aiomqtt.Client) -> None:
        with contextlib.suppress(aiomqtt.MqttError):
            await listen(client)

    gone_offline = asyncio.Event()
    for pit in pits:
        pit.start()
    players: list[asyncio.Task[None]] = []
    listener: asyncio.Task[None] | None = None
    poller: Poller | None = None
    thread: threading.Thread | None = None
    try:
        for pit in pits:
            await wait_for(pit.healthy, 30, f"{pit.name} is not healthy")
        with running_haproxy(tmp_path, {p.name: p.port for p in pits}) as lb:
            opener = await asyncio.to_thread(signed_in, lb.url)
            for pit in pits:  # one session, good on every server (one secret, one record)
                assert await asyncio.to_thread(floor_page, opener, pit.url), pit.name
            async with aiomqtt.Client("127.0.0.1", broker.port) as watcher:
                await watcher.subscribe("tabled/+/pit/alert", qos=1)
                listener = asyncio.create_task(listening(watcher))
                for table in tables:
                    await table.start()
                    await table.birth()
                players = [asyncio.create_task(play(t)) for t in tables]
                # the floor is up on both servers (a game's first table costs its monitors'
                # thresholds, a second of CPU) before the page is timed
                for pit in pits:
                    await wait_for(lambda p=pit: p.floor_shows(TABLES), 60,
                                   f"{pit.name} does not show the floor")
                poller = Poller(opener, lb.url)
                thread = threading.Thread(target=poller.run, daemon=True)
                thread.start()
                takeovers: list[float] = []
                kill_times: list[str] = []
                for n in range(kills):
                    await asyncio.sleep(rng.uniform(0.5, 2.5))
                    if n == kills // 2 and not gone_offline.is_set():
                        gone_offline.set()
                        assert gone._client is not None
                        await gone._client.publish(f"{gone.base}/status", offline_status(gone),
                                                   qos=1, retain=True)
                        await asyncio.sleep(rng.uniform(0.0, 1.0))
                    leader = await wait_for(lambda: next((p for p in pits if p.leads()), None),
                                            15, "no leader")
                    victim = leader if n == 0 else rng.choice(pits)
                    other = pits[1 - pits.index(victim)]
                    killed = time.monotonic()
                    kill_times.append(f"{killed:.1f} {victim.name}")
                    victim.kill()
                    if victim is leader:
                        await wait_for(other.leads, 15, f"{other.name} did not take over",
                                       interval=0.05)
                        takeovers.append(time.monotonic() - killed)
                    await asyncio.sleep(rng.uniform(1.5, 3.0))  # a supervisor's restart delay
                    victim.start()
                    # a restart replays each table's recent record into its monitors first: 22 s for
                    # 30,000 messages at a load of 13
                    await wait_for(victim.healthy, 120, f"{victim.name} did not come back")
                assert max(takeovers) <= TAKEOVER, takeovers
                print(f"takeovers after kill -9 of the leader: {takeovers} s")
                await asyncio.sleep(1.0)
                playing = False
                await asyncio.gather(*players)
                assert gone_offline.is_set()
                for table in tables:
                    if table is not gone:
                        await table.metrics()
                # the record catches up with every journal (reconciliation fetches what the
                # killed server's session lost)
                deadline = time.monotonic() + 60
                while True:
                    got = await asyncio.to_thread(record, conninfo)
                    behind = {t.name: {s: (len(got.get((t.site, t.name, s), [])),
                                           len(t.journal[s])) for s in STREAMS}
                              for t in tables
                              if any([p for _, p in got.get((t.site, t.name, s), [])]
                                     != t.journal[s] for s in STREAMS)}
                    if not behind:
                        break
                    assert time.monotonic() < deadline, f"the record is not the journal: {behind}"
                    await asyncio.sleep(0.5)
                    for table in tables:
                        await table.metrics()
                assert poller.longest_failure() <= TAKEOVER, (poller.longest_failure(),
                                                              poller.failures, kill_times)
                assert sum(ok for _, ok in poller.results) > 50
                # every alert change published once (pending ones go out within a second)
                await asyncio.sleep(1.5)
                listener.cancel()
        for table in tables:  # each number once, in order, nothing invented
            assert sum(len(table.journal[s]) for s in STREAMS) > 20
            for s in STREAMS:
                assert [n for n, _ in got.get((table.site, table.name, s), [])] == list(
                    range(len(table.journal[s])))
        with psycopg.connect(conninfo) as db:
            gaps = db.execute("SELECT subject, message FROM alerts WHERE kind = 'seq_gap' AND "
                              "state <> 'closed'").fetchall()
            offline = db.execute("SELECT id FROM alerts WHERE kind = 'offline' AND "
                                 "table_id = %s", (gone.name,)).fetchall()
            pending = db.execute("SELECT count(*) FROM alert_audit WHERE pending = 1"
                                 ).fetchone()
            sent = db.execute("SELECT id, alert_id FROM alert_audit WHERE published_at IS NOT "
                              "NULL").fetchall()
        assert gaps == []
        assert len(offline) == 1
        assert pending == (0,)
        times = Counter(body["change"]["audit_id"] for body in published)
        by = Counter((body["change"]["audit_id"], body["pit"]) for body in published)
        # every change published, once by each server that published it: a second copy comes
        # only from a leader killed between publishing and marking it published (its claim
        # then runs out and the next leader publishes it again; docs/pit.md says so)
        assert {k: n for k, n in by.items() if n > 1} == {}
        assert set(times) == {audit_id for audit_id, _ in sent}
        twice = {k: n for k, n in times.items() if n > 1}
        assert len(twice) <= kills // 5, twice  # rare: the window is a publish's round trip
        assert offline[0][0] in {alert_id for _, alert_id in sent}
        assert [b["kind"] for b in published if b["table"] == gone.name].count("offline") >= 1
    finally:
        playing = False
        if poller is not None:
            poller._stop.set()
        if thread is not None:
            thread.join(timeout=5)
        for task in [*players, *([listener] if listener is not None else [])]:
            task.cancel()
        for pit in pits:
            if pit.proc is not None:
                stop(pit.proc)
        for table in tables:
            await table.stop()


async def test_two_pits_one_floor_survive_kills_with_every_round_and_alert_once(
        broker: Mosquitto, postgres: PgServer, tmp_path: Path) -> None:
    await two_pits_one_floor(broker, postgres, tmp_path, kills=3)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not os.environ.get("TABLED_SLOW"), reason="TABLED_SLOW=1 runs the 20 kills")
async def test_two_pits_one_floor_survive_20_kills(
        broker: Mosquitto, postgres: PgServer, tmp_path: Path) -> None:
    await two_pits_one_floor(broker, postgres, tmp_path, kills=20)
