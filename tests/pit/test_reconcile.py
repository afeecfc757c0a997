"""Reconciliation, the pit side (pit/reconcile.py), against a real Mosquitto and a real SQLite
record: the pit started after a table played, a jump heard live, a table that does not answer
(``seq_gap`` after ``gap_deadline``, closed when the numbers come), numbers the table's journal
no longer has (``unrecoverable``), and no reconciliation without a key (as before).

The table is :class:`tests.pit.fetchtable.ServingTable`: the daemon's own runtime and encoding,
served back per the fetch protocol (the end-to-end tests with real daemons are elsewhere)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tabled.daemon.broker import Mosquitto
from tabled.pit.config import parse_config
from tabled.pit.service import PitService
from tabled.pit.store import Alert
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import PgServer, running
from tests.pit.fetchtable import STREAMS, ServingTable


def key_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "fetch.key"
    key = secrets.token_hex(32)
    path.write_text(key + "\n")
    os.chmod(path, 0o600)
    return path, key.encode()


def pit_config(broker: Mosquitto, tmp_path: Path, key: Path | None, **reconcile: Any) -> Any:
    data: dict[str, Any] = {
        "pit": {"id": "pit-r"},
        "mqtt": {"url": broker.url, "reconnect_min": 0.1, "reconnect_max": 1.0},
        "store": {"sqlite": str(tmp_path / "pit.sqlite")},
        "alerts": {"gap_grace": 1.0, "silence_after": 600}}
    if key is not None:
        data["reconcile"] = {"hmac_key_file": str(key), "gap_deadline": 2.0,
                             "high_water_grace": 0.5, "request_timeout": 1.0, **reconcile}
    return parse_config(data)


@contextlib.asynccontextmanager
async def serving(broker: Mosquitto, key: bytes, tmp_path: Path,
                  **kw: Any) -> AsyncIterator[ServingTable]:
    table = ServingTable(broker.port, key, journals=tmp_path, **kw)
    await table.start()
    try:
        yield table
    finally:
        await table.stop()


async def until(check: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def recorded(service: PitService, table: ServingTable) -> dict[str, list[Any]]:
    """Each stream's recorded payloads in number order."""
    out: dict[str, list[Any]] = {}
    for stream in STREAMS:
        rows = await service.store.messages(table.site, table.name, stream, limit=100_000)
        out[stream] = [r.payload for r in sorted(rows, key=lambda r: r.table_seq or 0)]
    return out


async def complete(service: PitService, table: ServingTable) -> bool:
    """The record holds every number of every stream of the table's journal, once, with the
    journal's exact bytes."""
    store = service.store
    assert isinstance(store, SqliteStore)
    for stream in STREAMS:
        texts = await store.call(lambda db, s=stream: db.execute(
            "SELECT table_seq, payload FROM messages WHERE site = ? AND table_id = ? AND "
            "topic = ? ORDER BY table_seq", (table.site, table.name, s)).fetchall())
        if [t for _, t in texts] != table.journal[stream]:
            return False
        assert [n for n, _ in texts] == list(range(len(table.journal[stream])))
    return True


def gaps(service: PitService, table: ServingTable) -> list[Alert]:
    return [a for a in service.floor.alerts(table.site, table.name) if a.kind == "seq_gap"]


async def test_a_pit_started_after_the_table_played_fetches_every_message(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path) as table:
        await table.play(1000)  # nobody listens: what a pit started late never heard
        await table.birth()    # the retained status, with its high-water marks
        assert table.rounds() > 20
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await until(lambda: complete(service, table), 30, "a complete record")
            backfilled = {s: service.metrics.backfilled.labels(s)._value.get() for s in STREAMS}
            assert backfilled["event"] == len(table.journal["event"])
            assert backfilled["outcome"] == table.rounds()
            await table.play(30)  # and the live stream goes on after it
            await until(lambda: complete(service, table), 15, "the live messages too")
            await asyncio.sleep(2.5)  # past the deadline: nothing reported missing
            assert gaps(service, table) == []
            assert service.handler_errors == 0
            assert all(r["requester"] == "pit-r" for r in table.requests)
            assert len(table.requests) <= 40  # bounded: 500 numbers a request at most
            # the live model shows the table's latest outcome and its shoes in the table's
            # order, not the fetched ones in the order they came
            tile = service.floor.tile(table.site, table.name)
            assert tile is not None and tile["last_outcome"] is not None
            assert tile["last_outcome"]["round"] == table.rounds()
            shoes = [json.loads(t) for t in table.journal["event"]]
            starts = [e["table_seq"] for e in shoes if e["type"] == "shoe_start"]
            assert len(starts) >= 2
            panel = service.floor.panel(table.site, table.name)
            assert panel is not None and panel["shoe"] == len(starts)
            this_shoe = [json.loads(t)["round"] for t in table.journal["outcome"]
                         if json.loads(t)["round"] > max(
                             e.get("round", 0) for e in shoes if e["table_seq"] < starts[-1])]
            assert [h["round"] for h in panel["hands"] if h["shoe"] == panel["shoe"]][
                -len(this_shoe):] == this_shoe


async def test_a_jump_heard_live_is_fetched_and_raises_nothing(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path) as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await until(lambda: asyncio.sleep(0, service.floor.tile(table.site, table.name)),
                        10, "the table")
            await table.play(50)
            lost = {("event", n) for n in range(len(table.journal["event"]),
                                                len(table.journal["event"]) + 12)}
            lost |= {("outcome", len(table.journal["outcome"]))}
            await table.play(60, drop=lost)
            await until(lambda: complete(service, table), 20, "the jump filled")
            await asyncio.sleep(2.5)
            assert gaps(service, table) == []
            assert service.metrics.backfilled.labels("event")._value.get() == 12


async def test_a_table_that_does_not_answer_is_reported_after_the_deadline_then_closed(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path, answering=False) as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await table.play(40)
            hole = len(table.journal["event"])
            await table.play(1, drop={("event", hole)})
            await table.play(20)
            started = time.monotonic()
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 15,
                                "a seq_gap")
            assert time.monotonic() - started >= 1.5  # not before the deadline (2 s)
            alert = found[0]
            assert alert.detail["stream"] == "event"
            assert alert.detail["numbers"] == [hole]
            assert alert.detail["unrecoverable"] is False
            assert "no answer" in alert.message
            table.answering = True  # the table answers again: the number arrives
            await until(lambda: complete(service, table), 20, "the hole filled")
            await until(lambda: asyncio.sleep(0, not gaps(service, table)), 10,
                        "the alert closed")
            closed = await service.store.alert(alert.id)
            assert closed is not None and closed.state == "closed"
            trail = await service.store.audit(alert.id)
            assert "arrived" in (trail[-1].note or "")


async def test_a_refused_fetch_is_reported_after_the_deadline(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path, refuse="rate_limited") as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await table.play(30)
            hole = len(table.journal["event"])
            await table.play(1, drop={("event", hole)})
            await table.play(10)
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 15,
                                "a seq_gap")
            assert "refused the fetch: rate_limited" in found[0].message
            table.refuse = None
            await until(lambda: asyncio.sleep(0, not gaps(service, table)), 40,
                        "the alert closed")
            assert await complete(service, table)


async def test_numbers_the_journal_no_longer_has_are_unrecoverable(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path) as table:
        await table.play(60)
        table.first["event"] = 10  # a journal that keeps numbers from 10 only
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 15,
                                "a seq_gap")
            alert = found[0]
            assert alert.detail["unrecoverable"] is True
            assert alert.detail["missing"] == [[0, 9]]
            assert "journal no longer has them" in alert.message
            # what the journal keeps is fetched (the alert may come before the fetch ends)
            kept = list(range(10, len(table.journal["event"])))

            async def fetched() -> bool:
                rows = await service.store.messages(table.site, table.name, "event",
                                                    limit=100_000)
                return sorted(r.table_seq or 0 for r in rows) == kept

            await until(fetched, 10, "the numbers the journal keeps")


async def test_a_replaced_journal_makes_the_old_holes_unrecoverable(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path, answering=False) as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path, gap_deadline=30.0))
        async with running(service):
            await table.play(30)
            hole = len(table.journal["event"])
            await table.play(1, drop={("event", hole)})
            await table.play(10)
            # the table comes back with a new journal: the old one's number is gone
            table.journal_id = secrets.token_hex(8)
            await table.birth()
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 10,
                                "a seq_gap")
            assert found[0].detail["unrecoverable"] is True
            assert found[0].detail["numbers"] == [hole]


async def test_without_a_key_the_pit_fetches_nothing_and_reports_the_gap(
        broker: Mosquitto, tmp_path: Path) -> None:
    async with serving(broker, b"k" * 64, tmp_path) as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, None))
        assert service.reconciler is None
        assert not any("fetch" in t for t in service.ingest.subscriptions())
        async with running(service):
            await table.play(30)
            hole = len(table.journal["event"])
            await table.play(1, drop={("event", hole)})
            await table.play(10)
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 10,
                                "a seq_gap")
            assert found[0].detail["numbers"] == [hole]
            assert table.requests == []


@pytest.mark.parametrize("bad", ["forged"])
async def test_a_wrong_key_is_refused_and_reported(broker: Mosquitto, tmp_path: Path,
                                                  bad: str) -> None:
    path, _ = key_file(tmp_path)
    async with serving(broker, b"another key", tmp_path) as table:
        await table.play(20)
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 15,
                                "a seq_gap")
            assert f"refused the fetch: {bad}" in found[0].message


async def test_what_retention_purged_is_not_fetched_again(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path) as table:
        await table.play(100)
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await until(lambda: complete(service, table), 30, "a complete record")
        # the record as 90 days later: the first 50 events were received 91 days ago (the
        # retention, 90 days, purges them), the rest 89.5 days ago
        store = SqliteStore(tmp_path / "pit.sqlite")
        await store.open()
        try:
            await store.call(lambda db: db.execute(
                "UPDATE messages SET received_at = received_at - (CASE WHEN topic = 'event' "
                "AND table_seq < 50 THEN 91 ELSE 89.5 END) * 86400"))
            now = time.time()
            gone = await store.purge(now - 90 * 86400, now - 365 * 86400)
            assert gone["messages"] == 50
        finally:
            await store.close()
        asked = len(table.requests)
        again = PitService(pit_config(broker, tmp_path, path))
        async with running(again):
            await table.metrics()
            await table.play(10)
            await until(lambda: asyncio.sleep(0, again.reconciler is not None and all(
                t.due is None for t in again.reconciler._tables.values())), 10, "the passes")
            await asyncio.sleep(3.0)
            assert [r for r in table.requests[asked:] if r["stream"] == "event"
                    and r["from"] < 50] == []
            assert gaps(again, table) == []
            rows = await again.store.messages(table.site, table.name, "event", limit=100_000)
            assert min(r.table_seq or 0 for r in rows) == 50


async def test_a_bad_served_message_is_filed_as_malformed_and_reported_missing(
        broker: Mosquitto, tmp_path: Path) -> None:
    path, key = key_file(tmp_path)
    async with serving(broker, key, tmp_path) as table:
        await table.birth()
        service = PitService(pit_config(broker, tmp_path, path))
        async with running(service):
            await table.play(30)
            hole = len(table.journal["event"])
            await table.play(1, drop={("event", hole)})
            table.journal["event"][hole] = '{"table_seq": 1e400'  # what it serves is broken
            await table.play(10)
            found = await until(lambda: asyncio.sleep(0, gaps(service, table)), 15,
                                "a seq_gap")
            assert found[0].detail["numbers"] == [hole]
            assert await service.store.malformed_count() >= 1
            assert service.handler_errors == 0
            rows = await service.store.messages(table.site, table.name, "event", limit=1000)
            assert sorted(r.table_seq or 0 for r in rows) == [
                n for n in range(len(table.journal["event"])) if n != hole]


async def test_a_pit_started_late_on_postgresql_fetches_every_message(
        broker: Mosquitto, tmp_path: Path, postgres: PgServer) -> None:
    path, key = key_file(tmp_path)
    conninfo = postgres.conninfo(postgres.new_database())
    async with serving(broker, key, tmp_path) as table:
        await table.play(300)
        await table.birth()
        config = pit_config(broker, tmp_path, path)
        config = config.model_copy(update={"store": parse_config({
            "mqtt": {"url": broker.url},
            "store": {"postgres": {"conninfo": conninfo}}}).store})
        service = PitService(config)

        async def done() -> bool:
            got = await recorded(service, table)
            return all([json.dumps(p, sort_keys=True) for p in got[s]] == [
                json.dumps(json.loads(t), sort_keys=True) for t in table.journal[s]]
                for s in STREAMS)

        async with running(service):
            await until(done, 30, "a complete record")
            await asyncio.sleep(2.5)
            assert gaps(service, table) == []
