"""Each message judged alone (issue 27, items 1, 4 and 6), for real: a burst through a real
Mosquitto with one poison message in the middle, recorded by a pit on a SQLite file and on a
real PostgreSQL; the stores telling a refused message (a data error) from an outage; the
metrics that count both; a property over random sequences with poison mixed in.

Every valid message is recorded exactly once, the poison one is in ``malformed`` with its
reason, and nothing else is lost or held up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import aiomqtt
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabled.daemon.broker import Mosquitto
from tabled.pit.config import PitConfig, parse_config
from tabled.pit.messages import Message, Topic
from tabled.pit.service import PitService
from tabled.pit.store import Store, StoreDataError, StoreError
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import PgServer, all_bets, running
from tests.waiting import until

PREFIX = "tabled"
EVENTS = 200  # t1's events in the burst
OUTCOMES = 50  # t2's outcomes, interleaved: another table's real outcomes


def card(seq: int, **extra: Any) -> dict[str, Any]:
    return {"v": 1, "type": "card", "card": "AS", "device": "shoe-1", "seq": seq,
            "table_seq": seq, **extra}


def craps(round_no: int, seq: int) -> dict[str, Any]:
    return {"v": 1, "type": "outcome", "game": "craps", "round": round_no, "status": "complete",
            "result": {"dice": [3, 4], "total": 7, "point_before": None, "point_after": None},
            "bets": all_bets("craps"), "table_seq": seq, "ts": "2026-12-01T10:00:00.000Z"}


def fault(seq: int, **extra: Any) -> dict[str, Any]:
    return {"v": 1, "type": "fault", "code": "shoe_empty", "detail": "test",
            "device": "shoe-1", "source": "device:shoe-1", "table_seq": seq, **extra}


def dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


#: (topic under tabled/lab/, the poison payload, its code). The table_seq poisons are
#: what made a SQLite batch fail (OverflowError) and PostgreSQL retry for ever (bigint out of
#: range); the NUL is what PostgreSQL's TEXT refuses; the depth what raised RecursionError.
POISON: list[tuple[str, bytes, str]] = [
    ("t1/event", dumps(card(0, table_seq=2**63)), "out_of_range"),
    ("t1/event", dumps(card(0, table_seq=10**30)), "out_of_range"),
    ("t1/event", dumps(card(0, table_seq=-1)), "out_of_range"),
    ("t1/fault", dumps(fault(7, code="shoe\u0000empty")), "bad_text"),
    ("t1/event", b'{"v":1,"type":"card","table_seq":7,"x":' + b"[" * 10_000 + b"]" * 10_000
     + b"}", "too_deep"),
    ("../event", dumps(card(0)), "bad_id"),
    ("<img src=x>/event", dumps(card(0)), "bad_id"),
    ("t1/fault", dumps(fault(7, detail=5)), "wrong_type"),
    ("t1/device/shoe-1/status", dumps({"state": "lost", "family": ["shoe"], "table_seq": 9}),
     "wrong_type"),
]


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if request.param == "sqlite":
        return {"sqlite": str(tmp_path / "pit.sqlite")}
    server: PgServer = request.getfixturevalue("postgres")
    return {"postgres": {"conninfo": server.conninfo(server.new_database())}}


def pit_config(store: dict[str, Any], broker_url: str = "mqtt://127.0.0.1:1",
               **alerts: Any) -> PitConfig:
    return parse_config({"pit": {"id": "pit-j"},
                         "mqtt": {"url": broker_url, "reconnect_min": 0.1,
                                  "reconnect_max": 1.0},
                         "store": store,
                         "alerts": {"gap_grace": 1.0, "silence_after": 600, **alerts}})


def query(store: dict[str, Any], sql: str) -> list[tuple[Any, ...]]:
    """The record as another process reads it (not through the pit)."""
    if "sqlite" in store:
        with contextlib.closing(sqlite3.connect(store["sqlite"])) as db:
            return db.execute(sql).fetchall()
    with psycopg.connect(store["postgres"]["conninfo"]) as conn:
        return conn.execute(sql).fetchall()


def numbers(store: dict[str, Any], table: str, topic: str) -> list[int]:
    return sorted(r[0] for r in query(
        store, f"SELECT table_seq FROM messages WHERE table_id = '{table}' AND "
        f"topic = '{topic}'"))


def metric(service: PitService, line: str) -> float:
    for text in service.metrics.text().decode().splitlines():
        if text.startswith(line + " "):
            return float(text.split()[-1])
    raise AssertionError(f"{line} not in /metrics")


# -- a burst through a real broker ------------------------------------------------------------


@pytest.mark.parametrize(("where", "poison", "code"), POISON,
                         ids=[f"{code}-{i}" for i, (_, _, code) in enumerate(POISON)])
async def test_one_poison_message_in_a_burst_costs_only_itself(
        broker: Mosquitto, store_settings: dict[str, Any], where: str, poison: bytes,
        code: str) -> None:
    """As ``mosquitto_pub -l`` sends a file: back to back, QoS 1, the pit's batches full. The
    poison sits in the middle of the burst; t1's events and faults and t2's outcomes around
    it must all be recorded, each once."""
    service = PitService(pit_config(store_settings, broker.url))
    burst: list[tuple[str, bytes]] = []
    for n in range(EVENTS):
        burst.append(("t1/event", dumps(card(n))))
        if n % 4 == 0:
            burst.append(("t2/outcome", dumps(craps(n // 4 + 1, n // 4))))
        if n % 20 == 0:
            burst.append(("t1/fault", dumps(fault(n // 20))))
    burst.insert(len(burst) // 2, (where, poison))
    async with running(service), aiomqtt.Client("127.0.0.1", broker.port,
                                                max_inflight_messages=1000) as table:
        await asyncio.gather(*(table.publish(f"{PREFIX}/lab/{topic}", payload, qos=1)
                               for topic, payload in burst))

        def complete() -> bool:
            return (len(numbers(store_settings, "t1", "event")) >= EVENTS
                    and len(numbers(store_settings, "t2", "outcome")) >= OUTCOMES
                    and len(numbers(store_settings, "t1", "fault")) >= EVENTS // 20
                    and query(store_settings, "SELECT COUNT(*) FROM malformed")[0][0] >= 1)

        async with asyncio.timeout(40):
            while not await asyncio.to_thread(complete):  # noqa: ASYNC110 - another process's view
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # anything late, recorded twice, would show now
        assert numbers(store_settings, "t1", "event") == list(range(EVENTS))
        assert numbers(store_settings, "t2", "outcome") == list(range(OUTCOMES))
        assert numbers(store_settings, "t1", "fault") == list(range(EVENTS // 20))
        assert numbers(store_settings, "t1", "device/shoe-1/status") == []
        rows = query(store_settings, "SELECT topic, reason FROM malformed")
        assert len(rows) == 1 and rows[0][0] == f"{PREFIX}/lab/{where}", rows
        assert metric(service, f'pit_malformed_total{{reason="{code}"}}') == 1
        assert metric(service, "pit_messages_malformed_total") == 1
        assert metric(service, 'pit_store_failures_total{cause="data"}') == 0
        assert service.store_failure is None and service.handler_errors == 0


# -- the stores: refused content is not an outage ----------------------------------------------


def raw(stream: str, seq: int | None, table: str = "t1", **body: Any) -> Message:
    """A message as a parser more lenient than the pit's might pass it: the store's own
    judgement is what is tested (parse_message refuses all of these first)."""
    payload = {"v": 1, "type": "fault", "code": "shoe_empty", **body, "table_seq": seq}
    text = json.dumps(payload)
    return Message(Topic("lab", table, stream), seq, payload, text, 1.0)


#: What both stores refuse (a NUL only PostgreSQL's TEXT refuses: SQLite keeps it).
STORE_POISON = [
    raw("fault", 2**63),
    raw("fault", 10**30),
    raw("fault", 5, code="shoe\ud800"),  # UTF-8 cannot carry a lone surrogate
]
NUL = raw("fault", 5, code="shoe\u0000empty")


@pytest.mark.parametrize("poison", [*STORE_POISON, NUL],
                         ids=["2^63", "10^30", "surrogate", "nul"])
async def test_a_store_refuses_content_as_a_data_error_and_goes_on(
        store: Store, poison: Message) -> None:
    if poison is NUL and isinstance(store, SqliteStore):
        pytest.skip("SQLite keeps U+0000 in text (the pit's parser refuses it for both)")
    with pytest.raises(StoreDataError):
        await store.record_many([raw("fault", 0), poison, raw("fault", 1)], "me")
    with pytest.raises(StoreDataError):
        await store.record(poison, "me")
    # the batch was rolled back whole, and the store works: nothing of it is there yet
    assert await store.high_water() == {}
    done = await store.record_many([raw("fault", 0), raw("fault", 1)], "me")
    assert [r.status for r in done] == ["new", "new"]
    # a malformed row keeps any text it is given
    await store.record_malformed("tabled/lab/t1/fault", "store refused: NUL \u0000",
                                 b'{"code":"a\x00b\xff"}', 1.0, "me")
    assert await store.malformed_count() == 1


async def test_a_sqlite_outage_is_not_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "pit.sqlite"
    writer = SqliteStore(path)
    await writer.open()
    await writer.close()
    reader = SqliteStore(path, readonly=True)  # "attempt to write a readonly database"
    await reader.open()
    try:
        with pytest.raises(StoreError) as failed:
            await reader.record_many([raw("fault", 0)], "me")
        assert not isinstance(failed.value, StoreDataError)
    finally:
        await reader.close()


async def test_a_postgres_outage_is_not_a_data_error(postgres: PgServer) -> None:
    from tabled.pit.config import PostgresSettings
    from tabled.pit.store_postgres import PostgresStore

    name = postgres.new_database()
    store = PostgresStore(PostgresSettings(conninfo=postgres.conninfo(name), pool_min=1,
                                           pool_max=1))
    await store.open()
    try:
        with psycopg.connect(postgres.conninfo(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = %s", (name,))
        with pytest.raises(StoreError) as failed:
            await store.record_many([raw("fault", 0)], "me")
        assert not isinstance(failed.value, StoreDataError)
        # the pool connects again: the retry records it
        async with asyncio.timeout(20):
            while True:
                try:
                    (done,) = await store.record_many([raw("fault", 0)], "me")
                    break
                except StoreError:
                    await asyncio.sleep(0.2)
        assert done.new
    finally:
        await store.close()


# -- the pipeline: a batch the store refuses is recorded one by one ----------------------------


async def test_a_batch_refused_for_one_message_is_recorded_without_it(
        store_settings: dict[str, Any]) -> None:
    service = PitService(pit_config(store_settings))
    await service.start()
    try:
        batch = [raw("fault", n) for n in range(10)]
        batch[4:4] = [raw("fault", 2**63)]
        text = "x\u0000y" if "postgres" in store_settings else "x\ud800y"
        batch[8:8] = [raw("fault", 3, table="t2", code=text)]
        results = await service.record_batch(batch)
        assert [r is None for r in results] == [m in (batch[4], batch[8]) for m in batch]
        assert numbers(store_settings, "t1", "fault") == list(range(10))
        reasons = sorted(r[0] for r in query(store_settings, "SELECT reason FROM malformed"))
        assert len(reasons) == 2 and all(r.startswith("store refused: ") for r in reasons)
        assert metric(service, 'pit_malformed_total{reason="store_refused"}') == 2
        # the batch, then each of the two alone
        assert metric(service, 'pit_store_failures_total{cause="data"}') == 3
        assert metric(service, 'pit_store_failures_total{cause="outage"}') == 0
        assert service.store_failure is None
        # a message alone is refused once, not twice
        assert await service.record_batch([raw("fault", 10**30, table="t3")]) == [None]
        assert metric(service, 'pit_store_failures_total{cause="data"}') == 4
        assert metric(service, 'pit_malformed_total{reason="store_refused"}') == 3
    finally:
        await service.store.close()


async def test_a_check_that_fails_files_the_message_as_malformed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever escapes the checks (a bug) costs its own message, which is kept."""
    store = {"sqlite": str(tmp_path / "pit.sqlite")}
    service = PitService(pit_config(store))
    await service.start()
    real = service._parse

    async def parse(topic: str, payload: bytes, retained: bool,
                    backfill: bool = False) -> Message | None:
        if b'"boom"' in payload:
            raise KeyError("boom")
        return await real(topic, payload, retained, backfill)

    monkeypatch.setattr(service, "_parse", parse)
    try:
        await service.received_batch([
            ("tabled/lab/t1/event", dumps(card(0)), False),
            ("tabled/lab/t1/event", dumps(card(1, note="boom")), False),
            ("tabled/lab/t1/event", dumps(card(2)), False)])
        assert numbers(store, "t1", "event") == [0, 2]
        (row,) = query(store, "SELECT reason, payload FROM malformed")
        assert row[0].startswith("not checked: KeyError") and '"boom"' in row[1]
        assert metric(service, 'pit_malformed_total{reason="unchecked"}') == 1
    finally:
        await service.store.close()


# -- metrics that move --------------------------------------------------------------------------


async def test_an_outage_is_retried_counted_and_shown_by_healthz(tmp_path: Path) -> None:
    """SQLite locked by another process: the batch waits (not malformed), the failures count
    as an outage, /healthz says 503 while it lasts, and the message is recorded once after."""
    from tests.pit.test_web_app import config as web_config

    cfg = web_config(tmp_path)
    service = PitService(cfg)
    await service.start()
    import secrets

    import httpx

    from tabled.pit.web.app import PitWeb

    app = PitWeb(service.web_port(), cfg.web, secrets.token_urlsafe(48))
    lock = sqlite3.connect(cfg.store.sqlite_path, isolation_level=None)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app),
                                     base_url="http://pit.test") as client:
            assert (await client.get("/healthz")).status_code == 200
            lock.execute("BEGIN EXCLUSIVE")
            task = asyncio.create_task(service.received_batch(
                [("tabled/lab/t1/event", dumps(card(0)), False)]))
            async with asyncio.timeout(30):
                await until(lambda: service.store_failure is not None)
            assert (await client.get("/healthz")).status_code == 503
            assert metric(service, 'pit_store_failures_total{cause="outage"}') >= 1
            lock.execute("ROLLBACK")
            async with asyncio.timeout(30):
                await task
            assert (await client.get("/healthz")).status_code == 200
            text = (await client.get("/metrics")).text
            assert 'pit_store_failures_total{cause="data"} 0.0' in text
    finally:
        lock.close()
        await service.store.close()
    assert numbers({"sqlite": str(cfg.store.sqlite_path)}, "t1", "event") == [0]
    assert query({"sqlite": str(cfg.store.sqlite_path)},
                 "SELECT COUNT(*) FROM malformed") == [(0,)]


async def test_seq_gaps_and_backfilled_are_on_metrics_and_gaps_move(tmp_path: Path) -> None:
    service = PitService(pit_config({"sqlite": str(tmp_path / "pit.sqlite")}, gap_grace=0.05))
    await service.start()
    try:
        for stream in ("event", "outcome", "fault"):
            assert metric(service, f'pit_backfilled_total{{stream="{stream}"}}') == 0
        service.metrics.backfilled.labels("event").inc()  # what reconciliation will call
        assert metric(service, 'pit_backfilled_total{stream="event"}') == 1
        assert metric(service, "pit_seq_gaps_total") == 0
        await service.received_batch([("tabled/lab/t1/event", dumps(card(n)), False)
                                      for n in (0, 1, 5, 6, 9)])
        await asyncio.sleep(0.1)
        await service.engine.tick()
        gaps = await service.store.alerts(kind="seq_gap")
        assert len(gaps) == 2
        assert metric(service, "pit_seq_gaps_total") == 2
        # a repeat of an open gap is no new gap; the late numbers clear them
        await service.received_batch([("tabled/lab/t1/event", dumps(card(n)), False)
                                      for n in (2, 3, 4, 7, 8)])
        assert await service.store.alerts(kind="seq_gap", states=("open",)) == []
        assert metric(service, "pit_seq_gaps_total") == 2
    finally:
        await service.store.close()


# -- a property: the record is the valid messages, each once ------------------------------------


_VALID = st.tuples(st.sampled_from(["t1", "t2"]), st.integers(0, 30))
_POISON_MESSAGES = st.sampled_from([(where, p) for where, p, _ in POISON] + [
    ("t1/event", b"{not json"), ("t1/event", b"\xff"), ("t1/event", dumps(card(0, table_seq=None))),
    ("t1/event", dumps(card(0, table_seq=2**53)))])
_ITEMS = st.lists(st.one_of(_VALID.map(lambda v: ("valid", v)),
                            _POISON_MESSAGES.map(lambda p: ("poison", p))),
                  min_size=1, max_size=40)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=_ITEMS, cuts=st.lists(st.integers(1, 8), min_size=1, max_size=10))
def test_the_record_is_the_valid_messages_each_once(
        items: list[tuple[str, Any]], cuts: list[int]) -> None:
    """Random valid events (re-deliveries included) with poison mixed in, in random batches:
    the record holds each valid (table, table_seq) once, and ``malformed`` each poison."""
    poison = [p for kind, p in items if kind == "poison"]
    valid = {v for kind, v in items if kind == "valid"}

    def payload(kind: str, value: Any) -> tuple[str, bytes, bool]:
        if kind == "poison":
            where, body = value
            return (f"{PREFIX}/lab/{where}", body, False)
        table, seq = value
        return (f"{PREFIX}/lab/{table}/event", dumps(card(seq)), False)

    stream = [payload(kind, value) for kind, value in items]

    async def run(path: Path) -> None:
        service = PitService(pit_config({"sqlite": str(path)}))
        await service.start()
        try:
            at, i = 0, 0
            while at < len(stream):
                size = cuts[i % len(cuts)]
                await service.received_batch(stream[at:at + size])
                at, i = at + size, i + 1
            assert service.handler_errors == 0
        finally:
            await service.store.close()

    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "pit.sqlite"
        asyncio.run(run(path))
        store = {"sqlite": str(path)}
        rows = query(store, "SELECT table_id, table_seq FROM messages WHERE topic = 'event'")
        assert sorted(rows) == sorted(valid)  # each once: the unique index would not say
        assert query(store, "SELECT COUNT(*) FROM malformed") == [(len(poison),)]


@settings(max_examples=20, deadline=None)
@given(picks=st.lists(st.one_of(st.integers(0, 20), st.sampled_from(range(len(STORE_POISON)))
                                .map(lambda i: -1 - i)), min_size=1, max_size=30))
def test_the_store_path_records_the_valid_messages_each_once(picks: list[int]) -> None:
    """The same through the store's own judgement: messages the store refuses (data errors)
    mixed with valid ones (and re-deliveries) in one batch."""
    batch = [raw("fault", p) if p >= 0 else STORE_POISON[-1 - p] for p in picks]

    async def run(path: Path) -> None:
        service = PitService(pit_config({"sqlite": str(path)}))
        await service.start()
        try:
            results = await service.record_batch(batch)
            assert [r is None for r in results] == [p < 0 for p in picks]
        finally:
            await service.store.close()

    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "pit.sqlite"
        asyncio.run(run(path))
        store = {"sqlite": str(path)}
        assert numbers(store, "t1", "fault") == sorted({p for p in picks if p >= 0})
        assert query(store, "SELECT COUNT(*) FROM malformed") == [
            (sum(1 for p in picks if p < 0),)]



async def test_a_busy_event_loop_shows_on_metrics_and_a_stall_is_logged(tmp_path: Path) -> None:
    """pit_event_loop_lag_seconds: how late the loop ran its 0.1 s timer; a stall of a second
    or more is also logged (event_loop_stalled)."""
    import time

    import structlog

    service = PitService(pit_config({"sqlite": str(tmp_path / "pit.sqlite")}))
    await service.start()
    lagging = asyncio.create_task(service._loop_lag())
    try:
        await asyncio.sleep(0.35)
        assert metric(service, "pit_event_loop_lag_seconds_count") >= 2
        assert metric(service, 'pit_event_loop_lag_seconds_bucket{le="1.0"}') == \
            metric(service, "pit_event_loop_lag_seconds_count")  # nothing late yet
        with structlog.testing.capture_logs() as logs:
            await asyncio.sleep(0.05)
            time.sleep(1.2)  # noqa: ASYNC251 - on purpose: something holds the loop
            await asyncio.sleep(0.15)
        count = metric(service, "pit_event_loop_lag_seconds_count")
        assert count - metric(service, 'pit_event_loop_lag_seconds_bucket{le="1.0"}') == 1
        stalls = [e for e in logs if e["event"] == "event_loop_stalled"]
        assert len(stalls) == 1 and 1.0 <= stalls[0]["seconds"] < 1.3
    finally:
        lagging.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lagging
        await service.store.close()


def test_garbage_collections_are_timed_while_the_pit_runs_and_not_after() -> None:
    """pit_gc_pause_seconds{generation}: every collection while gc_watched is open."""
    import gc

    from tabled.pit.metrics import PitMetrics

    metrics = PitMetrics()

    def count(generation: str) -> float:
        for text in metrics.text().decode().splitlines():
            if text.startswith(f'pit_gc_pause_seconds_count{{generation="{generation}"}} '):
                return float(text.split()[-1])
        raise AssertionError(generation)

    before = len(gc.callbacks)
    with metrics.gc_watched():
        assert count("2") == 0
        gc.collect()
        gc.collect(0)
        assert count("2") == 1 and count("0") >= 1
    assert len(gc.callbacks) == before
    gc.collect()
    assert count("2") == 1


async def test_what_survives_a_full_collection_is_frozen_and_thawed_in_time(
        tmp_path: Path, monkeypatch: Any) -> None:
    """PitService._collector: start-up's objects and each full collection's survivors are
    frozen out of the collector's sight; every T_GC_THAW they are all thawed; when the pit
    stops nothing stays frozen."""
    import gc

    import tabled.pit.service as service_module

    monkeypatch.setattr(service_module, "T_GC_THAW", 0.6)
    service = PitService(pit_config({"sqlite": str(tmp_path / "pit.sqlite")}))
    callbacks = len(gc.callbacks)
    collector = asyncio.create_task(service._collector())
    try:
        await asyncio.sleep(0.1)
        assert gc.get_freeze_count() > 0  # start-up's
        async with asyncio.timeout(3.0):
            await until(lambda: gc.get_freeze_count() == 0)  # thawed
        garbage: list[Any] = []
        garbage.append(garbage)  # a cycle, unreachable once dropped
        del garbage
        gc.collect()  # a full collection: its survivors are frozen, the cycle is gone
        async with asyncio.timeout(1.0):
            await until(lambda: gc.get_freeze_count() > 0)
        assert len(gc.callbacks) == callbacks + 1
    finally:
        collector.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await collector
    assert gc.get_freeze_count() == 0 and len(gc.callbacks) == callbacks
