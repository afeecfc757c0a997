"""Two pit servers splitting one floor, for real: Mosquitto's shared subscription hands each
recorded message to one of them, both write one PostgreSQL record, each message is stored once,
the split raises no false ``seq_gap``, each server's live model still shows every outcome, and a
malformed message is recorded as such without stopping anything."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiomqtt
import psycopg

from tabled.daemon.broker import Mosquitto
from tabled.pit.config import parse_config
from tabled.pit.service import PitService
from tests.pit.conftest import PgServer, all_bets, running

ROUNDS = 60


def outcome(round_no: int) -> dict[str, Any]:
    return {"v": 2, "type": "outcome", "game": "craps", "round": round_no, "status": "complete",
            "result": {"dice": [3, 4], "total": 7, "point_before": None, "point_after": None},
            "bets": all_bets("craps"), "table_seq": round_no - 1,
            "ts": "2026-12-01T10:00:00.000Z"}


async def test_two_pit_servers_split_a_floor_through_a_shared_subscription(
        broker: Mosquitto, postgres: PgServer) -> None:
    conninfo = postgres.conninfo(postgres.new_database())

    def config(name: str) -> Any:
        return parse_config({
            "pit": {"id": name},
            "mqtt": {"url": broker.url, "share_group": "pit", "reconnect_min": 0.1,
                     "reconnect_max": 1.0},
            "store": {"postgres": {"conninfo": conninfo}},
            "alerts": {"gap_grace": 1.0, "silence_after": 60}})

    a, b = PitService(config("pit-a")), PitService(config("pit-b"))
    async with running(a), running(b), aiomqtt.Client("127.0.0.1", broker.port) as table:
        birth = {"version": "0.1.0", "site": "lab", "table": "t1", "game": "craps",
                 "options": {}, "devices": [{"id": "dice-1", "family": "dice"}],
                 "started_at": "2026-12-01T10:00:00.000Z", "pid": 1, "commands": False,
                 "state": "online", "table_seq": 0}
        await table.publish("tabled/lab/t1/status", json.dumps(birth), qos=1, retain=True)
        for n in range(1, ROUNDS + 1):
            await table.publish("tabled/lab/t1/outcome", json.dumps(outcome(n)), qos=1)
        await table.publish("tabled/lab/t1/outcome", b"{not json", qos=1)

        def tiles_done() -> bool:
            return all((s.floor.tile("lab", "t1") or {}).get("rounds_last_hour") == ROUNDS
                       for s in (a, b))

        deadline = time.monotonic() + 15
        while not tiles_done():
            assert time.monotonic() < deadline, [s.floor.tile("lab", "t1") for s in (a, b)]
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # past the gap grace: the timers have looked

        with psycopg.connect(conninfo) as conn:
            rows = conn.execute(
                "SELECT table_seq, recorded_by FROM messages WHERE topic = 'outcome'"
            ).fetchall()
            malformed = conn.execute("SELECT reason FROM malformed").fetchall()
        assert sorted(seq for seq, _ in rows) == list(range(ROUNDS))  # each once
        by = {who for _, who in rows}
        assert by == {"pit:pit-a", "pit:pit-b"}  # the broker split them
        assert len(malformed) == 1 and "not JSON" in malformed[0][0]
        for service in (a, b):
            assert await service.store.alerts(kind="seq_gap") == []
            tile = service.floor.tile("lab", "t1")
            assert tile is not None and tile["state"] == "online"
            assert tile["last_outcome"] is not None
            panel = service.floor.panel("lab", "t1")
            assert panel is not None and panel["session"]["rolls"] == ROUNDS
        received = sum(s.metrics.received.labels("outcome")._value.get() for s in (a, b))
        assert received == ROUNDS
        assert a.handler_errors == b.handler_errors == 0


async def test_a_persistent_session_records_what_was_published_while_the_pit_was_away(
        broker: Mosquitto, tmp_path: Any) -> None:
    cfg = parse_config({"pit": {"id": "pit-p"},
                        "mqtt": {"url": broker.url, "persistent_session": True,
                                 "reconnect_min": 0.1, "reconnect_max": 1.0},
                        "store": {"sqlite": str(tmp_path / "pit.sqlite")}})
    async with running(PitService(cfg)):
        pass  # the broker now knows the session and its subscriptions
    async with aiomqtt.Client("127.0.0.1", broker.port) as table:
        for n in range(1, 11):
            await table.publish("tabled/lab/t1/outcome", json.dumps(outcome(n)), qos=1)
    service = PitService(cfg)
    async with running(service):
        deadline = time.monotonic() + 10
        while len(await service.store.recent_outcomes("lab", "t1", 100)) < 10:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert await service.store.alerts(kind="seq_gap") == []


async def test_a_partners_commit_wakes_the_follower_and_its_own_does_not(
        postgres: PgServer) -> None:
    """PostgresStore.others_recorded: PostgreSQL's LISTEN/NOTIFY. A commit of messages by
    another pit server wakes the follower at once; its own commits do not; a listening
    connection that is cut is opened again."""
    from tabled.pit.config import PostgresSettings
    from tabled.pit.messages import parse_message
    from tabled.pit.store_postgres import T_LISTEN_RETRY, PostgresStore

    settings = PostgresSettings(conninfo=postgres.conninfo(postgres.new_database()))
    mine, theirs = PostgresStore(settings), PostgresStore(settings)
    await mine.open()
    await theirs.open()

    def message(n: int) -> Any:
        return parse_message("tabled", "tabled/lab/t1/outcome",
                             json.dumps(outcome(n)).encode(), time.time())

    try:
        assert not await mine.others_recorded("pit:a", 0.3)  # listening now; nothing yet
        await mine.record_many([message(1)], "pit:a")
        assert not await mine.others_recorded("pit:a", 0.5)  # its own commit
        waiting = asyncio.create_task(mine.others_recorded("pit:a", 30.0))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await theirs.record_many([message(2)], "pit:b")
        assert await waiting  # woken, long before its 30 s
        assert time.monotonic() - started < 5.0
        # the listening connection is cut: it is opened again, and wakes the follower again
        with psycopg.connect(postgres.conninfo(), autocommit=True) as admin:
            cut = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE query LIKE 'LISTEN %'").fetchall()
        assert cut == [(True,)]
        await asyncio.sleep(T_LISTEN_RETRY + 1.0)
        waiting = asyncio.create_task(mine.others_recorded("pit:a", 30.0))
        await asyncio.sleep(0.1)
        await theirs.record_many([message(3)], "pit:b")
        assert await waiting
    finally:
        await mine.close()
        await theirs.close()


async def test_a_pit_follows_its_partners_outcome_when_told_not_when_it_polls(
        broker: Mosquitto, postgres: PgServer, monkeypatch: Any) -> None:
    """With the poll made 60 s, an outcome the partner recorded still reaches this server's
    live model within seconds: the partner's commit woke it."""
    import tabled.pit.service as service_module

    monkeypatch.setattr(service_module, "T_FOLLOW", 60.0)
    conninfo = postgres.conninfo(postgres.new_database())
    follower = PitService(parse_config({
        "pit": {"id": "pit-a"},
        "mqtt": {"url": broker.url, "share_group": "pit", "reconnect_min": 0.1,
                 "reconnect_max": 1.0},
        "store": {"postgres": {"conninfo": conninfo}}}))
    from tabled.pit.messages import parse_message
    from tabled.pit.store_postgres import PostgresStore

    partner = PostgresStore(follower.config.store.postgres)  # type: ignore[arg-type]
    await partner.open()
    try:
        async with running(follower):
            await asyncio.sleep(0.5)  # its follower is listening
            for n in (1, 2):
                body = {**outcome(n), "table_seq": n - 1}
                await partner.record_many([parse_message(
                    "tabled", "tabled/lab/t9/outcome", json.dumps(body).encode(),
                    time.time())], "pit:pit-b")
            deadline = time.monotonic() + 5
            while (follower.floor.tile("lab", "t9") or {}).get("rounds_last_hour") != 2:
                assert time.monotonic() < deadline, follower.floor.tile("lab", "t9")
                await asyncio.sleep(0.05)
    finally:
        await partner.close()
