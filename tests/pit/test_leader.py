"""The floor's leader (pit/leader.py) on a real PostgreSQL server: of several pit servers one
leads; its session ended (a killed process's socket closed, a terminated backend) hands the
lead to another within a poll; a pit that cannot reach the database does not lead; with
SQLite the one pit leads; ``[ha]`` refuses settings that could make two leaders."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from tabled.daemon.broker import Mosquitto
from tabled.pit.config import ConfigError, HASettings, PostgresSettings, parse_config
from tabled.pit.leader import Leadership
from tabled.pit.service import PitService
from tests.pit.conftest import PgServer, running

FAST = HASettings(poll_interval=0.2, poll_timeout=1.0)


@contextlib.asynccontextmanager
async def leading(*leaders: Leadership) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks = [asyncio.create_task(leader.run()) for leader in leaders]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def until(check: object, timeout: float = 10.0) -> float:
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - started < timeout
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_one_of_two_leads_and_the_other_takes_over_when_its_session_ends(
        postgres: PgServer) -> None:
    settings = PostgresSettings(conninfo=postgres.conninfo(postgres.new_database()))
    changes: list[tuple[str, bool]] = []
    a = Leadership(FAST, settings, "pit-a", lambda on: changes.append(("pit-a", on)))
    b = Leadership(FAST, settings, "pit-b", lambda on: changes.append(("pit-b", on)))
    async with leading(a) as (task_a,):
        await until(lambda: a.is_leader)
        async with leading(b):
            await asyncio.sleep(1.0)  # b looked five times: the lock is a's
            assert (a.is_leader, b.is_leader) == (True, False)
            assert b.role == "follower" and a.role == "leader"
            # the leader's process gone: its connection closes, the lock goes with it
            task_a.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task_a
            took = await until(lambda: b.is_leader)
            assert took < 1.0  # within a poll (0.2 s) and a round trip
            # the leader's session ended by the database (an administrator, a lost host's
            # keepalives): the leader steps down, the other one takes over
            async with leading(a):
                await asyncio.sleep(0.5)
                assert not a.is_leader
                with psycopg.connect(postgres.conninfo(), autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE application_name = 'tabled-pit-leader:pit-b'")
                await until(lambda: not b.is_leader, 2.0)
                await until(lambda: a.is_leader or b.is_leader, 2.0)
                assert a.is_leader != b.is_leader
    assert changes[:3] == [("pit-a", True), ("pit-a", False), ("pit-b", True)]


async def test_a_pit_without_its_database_does_not_lead(postgres: PgServer) -> None:
    nowhere = PostgresSettings(conninfo=f"host=127.0.0.1 port={postgres.port + 1} user=x "
                                        "dbname=x")
    leader = Leadership(FAST, nowhere, "pit-x")
    async with leading(leader):
        await asyncio.sleep(1.0)
        assert not leader.is_leader


async def test_with_sqlite_the_one_pit_leads() -> None:
    leader = Leadership(FAST, None, "pit-1")
    async with leading(leader):
        await until(lambda: leader.is_leader, 1.0)


def test_settings_that_could_make_two_leaders_are_refused() -> None:
    with pytest.raises(ConfigError) as found:
        parse_config({"mqtt": {"url": "mqtt://127.0.0.1"},
                      "ha": {"poll_interval": 5, "poll_timeout": 5, "keepalive_idle": 5}})
    assert "ha" in str(found.value) and "must be below" in str(found.value)


async def test_two_pit_services_one_leader_said_in_status_and_metrics(
        broker: Mosquitto, postgres: PgServer) -> None:
    conninfo = postgres.conninfo(postgres.new_database())

    def config(name: str) -> Any:
        return parse_config({
            "pit": {"id": name},
            "mqtt": {"url": broker.url, "share_group": "pit", "reconnect_min": 0.1},
            "store": {"postgres": {"conninfo": conninfo}},
            "ha": {"poll_interval": 0.2, "poll_timeout": 1.0}})

    a, b = PitService(config("pit-a")), PitService(config("pit-b"))
    async with running(a), running(b):
        await until(lambda: a.leader.is_leader or b.leader.is_leader)
        await asyncio.sleep(0.6)
        leader, follower = (a, b) if a.leader.is_leader else (b, a)
        assert not follower.leader.is_leader
        assert leader.status_line().startswith("leader; ")
        assert follower.status_line().startswith("follower; ")
        assert b"pit_leader 1.0" in leader.metrics.text()
        assert b"pit_leader 0.0" in follower.metrics.text()
    assert b"pit_leader 0.0" in leader.metrics.text()  # stopped: not leader any more
