"""The record's holes (``Store.holes``): one window-function query per stream, checked against a
brute-force model of random number sets, on a real SQLite file and a real PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabled.pit.config import PostgresSettings
from tabled.pit.store import Holdings, Store
from tabled.pit.store_postgres import PostgresStore
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import PgServer, fault

_tables = itertools.count(1)


def brute(numbers: set[int], after: int = -1) -> tuple[int, list[tuple[int, int]]]:
    """The holes of a set of numbers above ``after``, enumerated one by one."""
    if not numbers:
        return -1, []
    high = max(numbers)
    holes: list[tuple[int, int]] = []
    for n in range(after + 1, high + 1):
        if n in numbers:
            continue
        if holes and holes[-1][1] == n - 1:
            holes[-1] = (holes[-1][0], n)
        else:
            holes.append((n, n))
    return high, holes


numbers_sets = st.sets(st.integers(min_value=0, max_value=300), max_size=120) | st.sets(
    st.sampled_from([0, 1, 2, 5, 2**40, 2**40 + 1, 2**53 - 1]), max_size=7)


async def _check(store: Store, numbers: set[int], other: set[int], after: int) -> None:
    table = f"t{next(_tables)}"
    messages = [fault("sensor_fault", n, table=table) for n in sorted(numbers)]
    # the same numbers of another table and another stream must not count
    messages += [fault("sensor_fault", n, table=f"{table}x") for n in sorted(other)]
    if messages:
        await store.record_many(messages, "test")
    got = await store.holes("lab", table, "fault")
    if max(numbers, default=0) > 10_000:  # a brute force over 2^53 numbers is no model
        assert got.high == max(numbers)
        ordered = sorted(numbers)
        expect = ([(0, ordered[0] - 1)] if ordered[0] > 0 else []) + [
            (a + 1, b - 1) for a, b in itertools.pairwise(ordered) if b > a + 1]
        assert got.holes == expect
    else:
        assert (got.high, got.holes) == brute(numbers)
        above = await store.holes("lab", table, "fault", after=after)
        assert (above.high, above.holes) == brute(numbers, after)
    assert (got.low_at is None) == (not numbers)
    assert await store.holes("lab", table, "event") == Holdings(-1, [], None)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=numbers_sets, other=st.sets(st.integers(0, 300), max_size=30),
       after=st.integers(-1, 320))
def test_holes_match_brute_force_sqlite(tmp_path: Path, numbers: set[int],
                                        other: set[int], after: int) -> None:
    async def run() -> None:
        store = SqliteStore(tmp_path / "pit.sqlite")
        await store.open()
        try:
            await _check(store, numbers, other, after)
        finally:
            await store.close()

    asyncio.run(run())


@pytest.fixture(scope="module")
def pg_database(postgres: PgServer) -> str:
    return postgres.conninfo(postgres.new_database())


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=numbers_sets, other=st.sets(st.integers(0, 300), max_size=30),
       after=st.integers(-1, 320))
def test_holes_match_brute_force_postgres(pg_database: str, numbers: set[int],
                                          other: set[int], after: int) -> None:
    async def run() -> None:
        store = PostgresStore(PostgresSettings(conninfo=pg_database))
        await store.open()
        try:
            await _check(store, numbers, other, after)
        finally:
            await store.close()

    asyncio.run(run())


async def test_holes_limit(store: Store) -> None:
    await store.record_many([fault("sensor_fault", n) for n in range(0, 40, 2)], "test")
    got = await store.holes("lab", "t1", "fault", limit=3)
    assert got.high == 38
    assert got.holes == [(1, 1), (3, 3), (5, 5)]
