"""Reconciliation end to end, all real: Mosquitto, ``tabled run`` daemons with simulated devices
and a ``[fetch]`` key, the pit recording into SQLite, the journals read back with
``tabled.daemon.journal``.

- The pit started after the tables played (as the floor demo starts it): every round and event
  of every table's journal ends in the record exactly once, byte for byte, no ``seq_gap`` open.
- A pit killed with SIGKILL at random moments while a baccarat table plays (persistent session):
  at the end the record is the journal, exactly once, nothing invented.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import DURABLE_TOPICS, Journal
from tests.fetching import fetch_key
from tests.integration.harness import Daemon, Simulator, Subscriber, write_config
from tests.pit.pitproc import reconcile_config, start_pit, stop

STREAMS = tuple(DURABLE_TOPICS)


def journal_texts(path: Path) -> dict[str, list[str]]:
    """Each durable stream of a journal as it was published, in number order."""
    journal = Journal(path, create=False)
    try:
        return {s: [o.payload for o in journal.published_range(s, 0, 2**53 - 1, 10**7)]
                for s in STREAMS}
    finally:
        journal.close()


def record_texts(store: Path, site: str, table: str) -> dict[str, list[tuple[int, str]]]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
        return {s: db.execute(
            "SELECT table_seq, payload FROM messages WHERE site = ? AND table_id = ? AND "
            "topic = ? ORDER BY table_seq", (site, table, s)).fetchall() for s in STREAMS}


def same(store: Path, site: str, table: str, journal: dict[str, list[str]]) -> bool:
    try:
        got = record_texts(store, site, table)
    except sqlite3.OperationalError:
        return False  # the pit has not made its schema yet
    return all([t for _, t in got[s]] == journal[s] for s in STREAMS)


def open_gaps(store: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
        return db.execute("SELECT table_id, subject, message FROM alerts WHERE kind = 'seq_gap' "
                          "AND state <> 'closed'").fetchall()


def shoe_daemon(tmp_path: Path, broker: Mosquitto, name: str, seed: int, hands: int,
                pace: str, key: Path, *extra: str) -> tuple[Simulator, Daemon, Path]:
    sim = Simulator(["shoe", "--seed", str(seed), "--hands", str(hands), "--pace", pace,
                     "--forever", *extra, "--link", str(tmp_path / f"{name}.link")],
                    tmp_path / f"{name}.sim")
    url = sim.start()
    journal = tmp_path / f"{name}.sqlite"
    config = write_config(tmp_path / f"{name}.toml", game="baccarat", table=name,
                          journal=journal, broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe", "url": url}],
                          fetch={"hmac_key_file": key})
    return sim, Daemon(config, tmp_path / f"{name}.log"), journal


def dice_daemon(tmp_path: Path, broker: Mosquitto, name: str, rolls: int,
                key: Path) -> tuple[Simulator, Daemon, Path]:
    sim = Simulator(["dice", "--seed", "4", "--count", str(rolls), "--pace", "0.01",
                     "--forever", "--socket", str(tmp_path / f"{name}.sock")],
                    tmp_path / f"{name}.sim")
    sim.start()  # prints the socket first, then the URL
    assert sim.proc is not None and sim.proc.stdout is not None
    url = sim.proc.stdout.readline().split(":", 1)[1].strip()
    journal = tmp_path / f"{name}.sqlite"
    config = write_config(tmp_path / f"{name}.toml", game="craps", table=name,
                          journal=journal, broker_url=broker.url,
                          devices=[{"id": "dice-1", "family": "dice", "url": url}],
                          fetch={"hmac_key_file": key})
    return sim, Daemon(config, tmp_path / f"{name}.log"), journal


async def until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def test_a_pit_started_after_the_tables_ends_with_every_round_and_event(
        tmp_path: Path, broker: Mosquitto) -> None:
    key = tmp_path / "fetch.key"
    fetch_key(key)
    tables = [shoe_daemon(tmp_path, broker, "bac-1", 7, 40, "0.002", key),
              shoe_daemon(tmp_path, broker, "bac-2", 8, 30, "0.002", key),
              dice_daemon(tmp_path, broker, "craps-1", 40, key)]
    store = tmp_path / "pit.sqlite"
    pit = None
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/+/outcome") as sub:
            for _, daemon, _ in tables:
                daemon.start()
            # the tables play their rounds with no pit listening
            await sub.wait_for("bac-1/outcome", 40, timeout=60)
            await sub.wait_for("bac-2/outcome", 30, timeout=60)
            await sub.wait_for("craps-1/outcome", 40, timeout=60)
        pit = start_pit(pit_config(tmp_path / "pit.toml", broker, store, key),
                        tmp_path / "pit.log")
        paths = {name: path for name, (_, _, path) in
                 zip(("bac-1", "bac-2", "craps-1"), tables, strict=True)}
        await until(lambda: store.exists() and all(
            same(store, "lab", name, journal_texts(path)) for name, path in paths.items()), 60,
            "every table's journal in the record")
        journals = {name: journal_texts(path) for name, path in paths.items()}
        assert all(len(j["outcome"]) >= 30 and len(j["event"]) >= len(j["outcome"])
                   for j in journals.values())
        await asyncio.sleep(6)  # past the deadline: nothing is reported missing
        assert open_gaps(store) == []
        for name, j in journals.items():  # once each, and nothing the journal does not have
            got = record_texts(store, "lab", name)
            for s in STREAMS:
                assert [n for n, _ in got[s]] == list(range(len(j[s])))
    finally:
        if pit is not None:
            stop(pit)
        for sim, daemon, _ in tables:
            daemon.stop()
            sim.stop()


async def crash_loop(tmp_path: Path, broker: Mosquitto, kills: int) -> None:
    key = tmp_path / "fetch.key"
    fetch_key(key)
    hands = 60 + 12 * kills
    sim, daemon, journal = shoe_daemon(tmp_path, broker, "bac-1", 21, hands, "0.05", key)
    store = tmp_path / "pit.sqlite"
    config = pit_config(tmp_path / "pit.toml", broker, store, key)
    log = tmp_path / "pit.log"
    rng = random.Random(int.from_bytes(secrets.token_bytes(4), "big"))
    pit = start_pit(config, log)
    try:
        await asyncio.sleep(1.0)
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/+/outcome") as sub:
            daemon.start()
            for _ in range(kills):
                await asyncio.sleep(rng.uniform(0.3, 2.5))
                pit.send_signal(signal.SIGKILL)
                pit.wait(timeout=10)
                await asyncio.sleep(rng.uniform(0.0, 0.5))
                pit = start_pit(config, log)
            await sub.wait_for("bac-1/outcome", hands, timeout=120, alive=daemon)
        await until(lambda: same(store, "lab", "bac-1", journal_texts(journal)), 60,
                    "the journal in the record")
        expected = journal_texts(journal)
        got = record_texts(store, "lab", "bac-1")
        for s in STREAMS:
            assert [n for n, _ in got[s]] == list(range(len(expected[s])))
        assert len(expected["outcome"]) >= hands
        await asyncio.sleep(1.0)
        assert open_gaps(store) == []
    finally:
        stop(pit)
        daemon.stop()
        sim.stop()


async def test_a_pit_killed_at_random_while_a_table_plays_loses_nothing(
        tmp_path: Path, broker: Mosquitto) -> None:
    await crash_loop(tmp_path, broker, kills=6)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TABLED_SLOW"), reason="TABLED_SLOW=1 runs the 25 kills")
async def test_a_pit_killed_25_times_while_a_table_plays_loses_nothing(
        tmp_path: Path, broker: Mosquitto) -> None:
    await crash_loop(tmp_path, broker, kills=25)


async def test_what_a_broker_lost_with_its_sessions_is_fetched(
        tmp_path: Path, broker: Mosquitto) -> None:
    """The pit stopped while a table plays: the broker queues for its persistent session, then
    dies without persistence (the queue is gone) and comes back; the pit returns to an empty
    session and fetches what the queue held."""
    key = tmp_path / "fetch.key"
    fetch_key(key)
    sim, daemon, journal = shoe_daemon(tmp_path, broker, "bac-1", 31, 200, "0.01", key)
    store = tmp_path / "pit.sqlite"
    config = pit_config(tmp_path / "pit.toml", broker, store, key)
    pit = start_pit(config, tmp_path / "pit.log")
    try:
        daemon.start()
        await until(lambda: same_now(store, journal) is not None
                    and len(record_texts(store, "lab", "bac-1")["outcome"]) >= 20, 60,
                    "the first rounds recorded live")
        stop(pit)  # the broker queues the table's messages for the pit's session
        await asyncio.sleep(2.0)
        broker.kill()  # ... and loses them: no persistence
        broker.start()
        pit = start_pit(config, tmp_path / "pit.log")
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/+/outcome") as sub:
            await sub.wait_for("bac-1/outcome", 1, timeout=60, alive=daemon)
        await until(lambda: same_now(store, journal), 90, "the journal in the record")
        assert len(journal_texts(journal)["outcome"]) > 20
        await asyncio.sleep(1.0)
        assert open_gaps(store) == []
    finally:
        stop(pit)
        daemon.stop()
        sim.stop()


def pit_config(path: Path, broker: Mosquitto, store: Path, key: Path) -> Path:
    return reconcile_config(path, broker, store, key, pit_id="pit-e2e", gap_deadline=5.0,
                            grace=1.0, request_timeout=3.0)


def same_now(store: Path, journal: Path) -> bool | None:
    """Whether the record holds the journal as it is now (None: no record yet)."""
    if not store.exists():
        return None
    try:
        return same(store, "lab", "bac-1", journal_texts(journal))
    except sqlite3.OperationalError:  # the pit has made the file, not yet its tables
        return None
