"""Fixtures of the pit's tests: a real PostgreSQL server (the Debian package's initdb/pg_ctl on a
free port, one per test session, a fresh database per test), real SQLite files, and messages as
the tables publish them."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tabled.contract import CONTRACT_VERSION
from tabled.daemon.broker import free_port
from tabled.games.baccarat.record import BACCARAT_BETS
from tabled.games.craps.record import CRAPS_BETS
from tabled.pit.config import PostgresSettings
from tabled.pit.messages import Message, parse_message
from tabled.pit.service import PitService
from tabled.pit.store import Store
from tabled.pit.store_postgres import PostgresStore
from tabled.pit.store_sqlite import SqliteStore
from tests.integration.conftest import broker  # noqa: F401 - the real Mosquitto fixture, reused

PREFIX = "tabled"


@dataclass
class PgServer:
    port: int
    dir: Path
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user=tabled dbname={dbname}"

    def new_database(self) -> str:
        import psycopg

        name = f"pit_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.conninfo(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return found[-1] if found else None


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """A PostgreSQL server for the session. The server refuses to run as root: as root it runs
    as the package's ``postgres`` user, in a directory that user owns."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (make system-deps installs it)")
    as_user: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="tabled-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(work, "postgres", "postgres")
    data = work / "data"
    port = free_port()
    subprocess.run([*as_user, initdb, "-D", str(data), "-A", "trust", "-U", "tabled",
                    "--no-sync", "-E", "UTF8"], check=True, capture_output=True, timeout=120)
    start = subprocess.run(
        [*as_user, pg_ctl, "-D", str(data), "-l", str(work / "server.log"), "-w", "-t", "60",
         "-o", f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off "
               "-c max_connections=50", "start"],
        capture_output=True, text=True, timeout=90, check=False)
    if start.returncode != 0:
        log = (work / "server.log").read_text(errors="replace") if (
            work / "server.log").exists() else ""
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {start.stderr}{log[-2000:]}")
    try:
        yield PgServer(port, work)
    finally:
        # immediate: a throwaway server needs no shutdown checkpoint
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60, check=False)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """The store contract runs against both databases, for real."""
    s: Store
    if request.param == "sqlite":
        s = SqliteStore(tmp_path / "pit.sqlite")
    else:
        server: PgServer = request.getfixturevalue("postgres")
        s = PostgresStore(PostgresSettings(conninfo=server.conninfo(server.new_database())))
    await s.open()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "pit.sqlite")
    await s.open()
    try:
        yield s
    finally:
        await s.close()


# -- messages as the tables publish them ----------------------------------------------------------


def msg(stream: str, body: dict[str, Any], seq: int | None, *, site: str = "lab",
        table: str = "t1", at: float | None = None) -> Message:
    payload = dict(body)
    payload["table_seq"] = seq
    return parse_message(PREFIX, f"{PREFIX}/{site}/{table}/{stream}",
                         json.dumps(payload, separators=(",", ":")).encode(),
                         time.time() if at is None else at)


def birth(game: str = "baccarat", seq: int = 0, devices: list[dict[str, str]] | None = None,
          started_at: str = "2026-12-01T10:00:00.000Z", **kw: Any) -> Message:
    body = {"version": "0.1.0", "site": kw.pop("site", "lab"), "table": kw.get("table", "t1"),
            "game": game, "options": {}, "started_at": started_at, "pid": 1, "commands": False,
            "state": "online", "ts": started_at,
            "devices": devices if devices is not None else [{"id": "shoe-1", "family": "shoe"}]}
    return msg("status", body, seq, **kw)


def will(seq: int, reason: str = "connection_lost", **kw: Any) -> Message:
    return msg("status", {"state": "offline", "reason": reason}, seq, **kw)


def device(device_id: str, state: str, seq: int, family: str = "shoe", **kw: Any) -> Message:
    return msg(f"device/{device_id}/status",
               {"state": state, "device": device_id, "family": family,
                "since": "2026-12-01T10:00:01.000Z", "reason": "unplugged"}, seq, **kw)


def event(body: dict[str, Any], seq: int, **kw: Any) -> Message:
    return msg("event", {"v": CONTRACT_VERSION, **body}, seq, **kw)


def all_bets(game: str, **bets: Any) -> dict[str, Any]:
    """Every bet a record of ``game`` carries (lost), and ``bets`` over them."""
    names = {"baccarat": BACCARAT_BETS, "craps": CRAPS_BETS}.get(game, ())
    return {**{name: {"result": "lose"} for name in names}, **bets}


#: The ``result`` of a record with nothing dealt or thrown: a void round cut short, a no-roll.
NOTHING_DEALT: dict[str, dict[str, Any]] = {
    "baccarat": {"player_cards": [], "banker_cards": [], "player_total": 0, "banker_total": 0,
                 "winner": None, "natural": False},
    "craps": {"dice": None, "total": None, "point_before": None, "point_after": None},
    "qpoker": {"dealer": {"cards": [], "hand": None, "qualifies": None}, "seats": {}},
}


def baccarat_outcome(round_no: int, seq: int, winner: str = "banker", **kw: Any) -> Message:
    body = {"v": CONTRACT_VERSION, "type": "outcome", "game": "baccarat", "round": round_no,
            "status": "complete",
            "result": {"player_cards": ["2S", "3H"], "banker_cards": ["9D", "KC"],
                       "player_total": 5, "banker_total": 9, "winner": winner,
                       "natural": True},
            "bets": {"player": {"result": "lose"}, "banker": {"result": "win", "pays": "19:20"},
                     "tie": {"result": "lose"}, "player_pair": {"result": "lose"},
                     "banker_pair": {"result": "lose"}},
            "ts": "2026-12-01T10:00:02.000Z"}
    return msg("outcome", body, seq, **kw)


def void_outcome(round_no: int, seq: int, game: str = "qpoker", **kw: Any) -> Message:
    body = {"v": CONTRACT_VERSION, "type": "outcome", "game": game, "round": round_no,
            "status": "void", "void_reason": "shuffler_failure while dealing",
            "article": "qpoker.art11.5", "result": NOTHING_DEALT[game],
            "bets": all_bets(game)}
    return msg("outcome", body, seq, **kw)


def fault(code: str, seq: int | None, device_id: str | None = "shuffler-1", **kw: Any) -> Message:
    body: dict[str, Any] = {"v": CONTRACT_VERSION, "type": "fault", "code": code, "detail": "test",
                            "source": f"device:{device_id}" if device_id else "daemon"}
    if device_id:
        body["device"] = device_id
    if seq is None:
        body["durable"] = False
    return msg("fault", body, seq, **kw)


@contextlib.asynccontextmanager
async def running(service: PitService) -> AsyncIterator[PitService]:
    """A pit service running in this loop, connected to its broker, stopped cleanly after."""
    task = asyncio.create_task(service.run())
    try:
        async with asyncio.timeout(15):
            await service.ingest.connected.wait()
        yield service
    finally:
        service.request_stop()
        async with asyncio.timeout(30):
            assert await task == 0
