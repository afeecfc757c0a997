"""The web page's sessions and the sign-in audit in the record (schema version 2), against a
real SQLite file and a real PostgreSQL server: a session row ends once (audited once, whoever
ends it, even two pit servers at the same moment), the migration from version 1, retention."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tabled.pit.config import PostgresSettings
from tabled.pit.store import SCHEMA_VERSION, Store, WebSession
from tabled.pit.store_postgres import PostgresStore
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import PgServer, baccarat_outcome

PIT = "pit-test"


def a_session(key: str = "h1", user: str = "sam", at: float | None = None,
              mark: str = "m1") -> WebSession:
    now = time.time() if at is None else at
    return WebSession(key, user, mark, now, now, None, None, "10.0.0.7", PIT)


async def test_a_session_is_kept_touched_and_ended_once(store: Store) -> None:
    started = await store.start_session(a_session(at=1000.0))
    assert (started.user, started.client, started.action, started.pit) == (
        "sam", "10.0.0.7", "signed_in", PIT)
    got = await store.web_session("h1")
    assert got is not None and got.user == "sam" and got.password_mark == "m1"
    assert got.ended_at is None and got.created_at == 1000.0
    assert await store.web_session("nope") is None
    assert await store.touch_session("h1", 1500.0)
    assert await store.touch_session("h1", 1200.0)  # never backwards
    got = await store.web_session("h1")
    assert got is not None and got.last_seen == 1500.0
    assert [s.id_hash for s in await store.live_sessions()] == ["h1"]

    ended = await store.end_session("h1", "signed_out", 1600.0, client="10.0.0.8", pit=PIT)
    assert ended is not None and (ended.action, ended.reason, ended.client) == (
        "signed_out", None, "10.0.0.8")
    assert await store.end_session("h1", "idle", 1700.0) is None  # once
    assert not await store.touch_session("h1", 1800.0)
    got = await store.web_session("h1")
    assert got is not None and (got.ended_at, got.end_reason) == (1600.0, "signed_out")
    assert await store.live_sessions() == []

    await store.start_session(a_session("h2", "vic", at=2000.0))
    ended = await store.end_session("h2", "password_changed", 2100.0, pit=PIT)
    assert ended is not None and (ended.action, ended.reason, ended.client) == (
        "session_ended", "password_changed", "10.0.0.7")
    await store.record_sign_in(2200.0, "mallory" * 40, "10.0.0.9", "failed", "unknown_user",
                               PIT)
    lines = await store.sign_in_audit()
    assert [(e.user[:7], e.action, e.reason) for e in lines] == [
        ("mallory", "failed", "unknown_user"), ("vic", "session_ended", "password_changed"),
        ("vic", "signed_in", None), ("sam", "signed_out", None), ("sam", "signed_in", None)]
    assert len(lines[0].user) == 128  # a name as typed, cut
    assert [e.action for e in await store.sign_in_audit(user="sam", limit=1)] == ["signed_out"]
    assert lines[0].to_dict()["client"] == "10.0.0.9"


async def test_sign_in_retention(store: Store) -> None:
    await store.start_session(a_session("old", at=100.0))
    await store.end_session("old", "signed_out", 200.0)
    await store.start_session(a_session("live", at=100.0))  # not ended: kept, whatever its age
    await store.record_sign_in(5000.0, "sam", "10.0.0.7", "failed", "bad_password", PIT)
    gone = await store.purge_sign_in(sessions_before=1000.0, audit_before=1000.0)
    assert gone == {"sessions": 1, "sign_in_audit": 3}
    assert await store.web_session("old") is None
    assert await store.web_session("live") is not None
    assert [e.at for e in await store.sign_in_audit()] == [5000.0]


async def test_a_version_1_record_is_migrated_to_version_2(tmp_path: Path) -> None:
    class Version1(SqliteStore):
        def migrations(self) -> list[list[str]]:
            return super().migrations()[:1]

    path = tmp_path / "pit.sqlite"
    old = Version1(path)
    await old.open()
    await old.record(baccarat_outcome(1, 0), PIT)
    await old.close()
    s = SqliteStore(path)
    await s.open()
    try:
        versions = await s.call(lambda db: [r[0] for r in db.execute(
            "SELECT version FROM pit_schema ORDER BY version")])
        assert versions == [1, 2, 3] and SCHEMA_VERSION == 3
        assert len(await s.messages("lab", "t1")) == 1  # nothing lost
        await s.start_session(a_session())
        assert await s.web_session("h1") is not None
    finally:
        await s.close()


async def test_two_pit_servers_ending_one_session_audit_it_once(postgres: PgServer) -> None:
    conninfo = postgres.conninfo(postgres.new_database())
    a = PostgresStore(PostgresSettings(conninfo=conninfo, pool_max=8))
    b = PostgresStore(PostgresSettings(conninfo=conninfo, pool_max=8))
    await a.open()
    await b.open()
    try:
        for n in range(20):
            await a.start_session(a_session(f"s{n}", at=1000.0 + n))
        ends = await asyncio.gather(*(
            store.end_session(f"s{n}", reason, 2000.0, pit=pit)
            for n in range(20)
            for store, reason, pit in ((a, "signed_out", "pit-a"), (b, "idle", "pit-b"))))
        done = [e for e in ends if e is not None]
        assert len(done) == 20  # each session ended by exactly one of the two
        assert {e.user for e in done} == {"sam"}
        lines = await b.sign_in_audit(limit=100)
        assert sum(e.action in ("signed_out", "session_ended") for e in lines) == 20
        assert await a.live_sessions() == []
    finally:
        await a.close()
        await b.close()
