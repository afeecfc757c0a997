"""Sign-in without a browser: sessions kept in the record, the throttle per user name and
address, the sign-in audit.

The app runs in-process over a real :class:`~tabled.pit.service.PitService` and its real record
(SQLite, and PostgreSQL for two pit servers sharing their sessions); "a restart" is a new
service and app over the same record and the same session secret, as ``tabled pit`` restarted
with a new config is. httpx talks to the app as a browser would (cookies, CSRF token); a request
"from another address" is a transport with another client address.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog

from tabled.daemon.broker import free_port
from tabled.pit.auth import hash_password
from tabled.pit.config import PitConfig, parse_config
from tabled.pit.service import PitService
from tabled.pit.store import Store
from tabled.pit.store_sqlite import SqliteStore
from tabled.pit.web.app import PitWeb
from tabled.pit.web.sessions import T_CACHE, id_hash
from tests.pit.conftest import PgServer
from tests.pit.test_web_app import PASSWORD, sign_in, token

HASHES = {name: hash_password(p) for name, p in PASSWORD.items()}
NEW_PASSWORD = "a new supervisor password"


def a_config(store: dict[str, Any], hashes: dict[str, str] | None = None, pit: str = "pit-a",
             **web: Any) -> PitConfig:
    hashes = hashes or HASHES
    return parse_config({
        "pit": {"id": pit},
        "mqtt": {"url": f"mqtt://127.0.0.1:{free_port()}"},
        "store": store,
        "web": {"port": free_port(), "language": "en", **web},
        "users": [{"name": "sam", "role": "supervisor", "password_hash": hashes["sam"]},
                  {"name": "vic", "role": "viewer", "password_hash": hashes["vic"]}]})


def sqlite(tmp_path: Path) -> dict[str, Any]:
    return {"sqlite": str(tmp_path / "pit.sqlite")}


@contextlib.asynccontextmanager
async def running(cfg: PitConfig, secret: str) -> AsyncIterator[tuple[PitService, PitWeb]]:
    service = PitService(cfg)
    await service.start()
    assert cfg.web is not None
    app = PitWeb(service.web_port(), cfg.web, secret)
    try:
        yield service, app
    finally:
        app.stopping.set()
        await service.store.close()


def browser(app: PitWeb, address: str = "127.0.0.1",
            cookies: dict[str, str] | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app, client=(address, 4242)),
                             base_url="http://pit.test", cookies=cookies)


async def signed_in_cookie(app: PitWeb, name: str, password: str | None = None) -> str:
    async with browser(app) as client:
        response = await sign_in(client, name, password)
        assert response.status_code == 303, response.text
        return str(client.cookies["pit_session"])


async def is_signed_in(app: PitWeb, cookie: str) -> bool:
    async with browser(app, cookies={"pit_session": cookie}) as client:
        page = await client.get("/")
        if page.status_code == 200:
            return True
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
        return False


def session_id(cookie: str) -> str:
    """The random id in a session cookie (signed, not encrypted: base64 JSON)."""
    return str(json.loads(base64.b64decode(cookie.split(".")[0] + "=="))["sid"])


async def actions(store: Store, user: str | None = None) -> list[tuple[str, str, str | None]]:
    """The sign-in audit, oldest first: (user, action, reason)."""
    return [(e.user, e.action, e.reason)
            for e in reversed(await store.sign_in_audit(user=user, limit=1000))]


async def test_a_cookie_saved_before_sign_out_is_refused_after_it(tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(48)
    async with running(a_config(sqlite(tmp_path)), secret) as (service, app):
        async with browser(app) as client:
            with structlog.testing.capture_logs() as logs:
                await sign_in(client, "sam")
                saved = str(client.cookies["pit_session"])
                assert (await client.get("/")).status_code == 200
                out = await client.post("/logout", data={"csrftoken": token(client)})
            assert out.status_code == 303 and out.headers["location"] == "/login"
        # the saved cookie, replayed: the session is over on the server
        async with browser(app, cookies={"pit_session": saved}) as replay:
            page = await replay.get("/")
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
            cleared = page.headers.get("set-cookie", "")
            assert cleared.startswith("pit_session=null") or "expires=thu, 01 jan 1970" in (
                cleared.lower())
        async with browser(app, cookies={"pit_session": saved}) as replay:
            assert (await replay.get("/events")).status_code == 401
            assert (await replay.get("/alerts")).status_code == 303
        assert await actions(service.store) == [("sam", "signed_in", None),
                                                ("sam", "signed_out", None)]
        events = [e["event"] for e in logs]
        assert "signed_in" in events and "signed_out" in events
        assert await service.store.live_sessions() == []


async def test_the_record_never_holds_the_session_id(tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(48)
    async with running(a_config(sqlite(tmp_path)), secret) as (service, app):
        async with browser(app) as client:
            await sign_in(client, "vic")
            sid = client.cookies["pit_session"]
        store = service.store
        assert isinstance(store, SqliteStore)
        rows = await store.call(lambda db: db.execute("SELECT * FROM web_sessions").fetchall())
        assert len(rows) == 1 and rows[0][1] == "vic"
        dump = (tmp_path / "pit.sqlite").read_bytes() + b"".join(
            p.read_bytes() for p in tmp_path.glob("pit.sqlite-wal"))
        assert session_id(sid).encode() not in dump
        assert rows[0][0] == id_hash(session_id(sid))


async def test_one_users_typos_lock_only_that_user_at_that_address(tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(48)
    cfg = a_config(sqlite(tmp_path), sign_in_failures=5, sign_in_window=120)
    async with running(cfg, secret) as (service, app):
        async with browser(app) as sam, browser(app) as vic:
            with structlog.testing.capture_logs() as logs:
                for _ in range(5):
                    assert (await sign_in(sam, "sam", "typo")).status_code == 401
                # another user behind the same address signs in
                welcome = await sign_in(vic, "vic")
                assert welcome.status_code == 303 and welcome.headers["location"] == "/"
                assert (await vic.get("/")).status_code == 200
                # sam, even with the right password, waits: 429 and how long
                for _ in range(3):
                    locked = await sign_in(sam, "sam")
                    assert locked.status_code == 429
            wait = int(locked.headers["retry-after"])
            assert 100 <= wait <= 120
            assert "Too many failed sign-ins for this name from your address" in locked.text
            assert "try again in 1 min" in locked.text or "try again in 2 min" in locked.text
            assert f'data-retry-after="{wait}"' in locked.text
            assert "pit_session" not in sam.cookies
        # sam from another address is not locked
        async with browser(app, "10.1.2.3") as elsewhere:
            assert (await sign_in(elsewhere, "sam")).status_code == 303
        assert "typo" not in json.dumps(logs)  # never a password
        throttled = [e for e in logs if e["event"] == "sign_in_throttled"]
        assert len(throttled) == 3 and throttled[0]["retry_after"] >= 100
        audit = await actions(service.store)
        assert audit == [*[("sam", "failed", "bad_password")] * 5, ("vic", "signed_in", None),
                         ("sam", "throttled", "user"), ("sam", "signed_in", None)]
        assert "typo" not in json.dumps([e.to_dict() for e in
                                         await service.store.sign_in_audit()])


async def test_the_right_password_forgives_earlier_typos(tmp_path: Path) -> None:
    cfg = a_config(sqlite(tmp_path), sign_in_failures=3, sign_in_window=120)
    async with running(cfg, secrets.token_urlsafe(48)) as (_, app), browser(app) as client:
        for _ in range(2):
            assert (await sign_in(client, "sam", "typo")).status_code == 401
        assert (await sign_in(client, "sam")).status_code == 303
        for _ in range(2):  # counted from zero again
            assert (await sign_in(client, "sam", "typo")).status_code == 401
        assert (await sign_in(client, "sam")).status_code == 303


async def test_the_address_limit_stops_one_password_tried_on_many_names(
        tmp_path: Path) -> None:
    cfg = a_config(sqlite(tmp_path), sign_in_failures=3, sign_in_address_failures=6,
                   sign_in_window=60)
    async with running(cfg, secrets.token_urlsafe(48)) as (service, app):
        async with browser(app, "10.9.9.9") as spray:
            for n in range(6):
                await spray.get("/login")
                answer = await spray.post("/login", data={
                    "csrftoken": token(spray), "name": f"user{n}", "password": "Summer2026"})
                assert answer.status_code == 401
            await spray.get("/login")
            refused = await spray.post("/login", data={
                "csrftoken": token(spray), "name": "vic", "password": PASSWORD["vic"]})
            assert refused.status_code == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
            assert "for any name from your address" in refused.text
        async with browser(app) as here:  # another address is not concerned
            assert (await sign_in(here, "vic")).status_code == 303
        audit = await actions(service.store)
        assert audit[:6] == [(f"user{n}", "failed", "unknown_user") for n in range(6)]
        assert audit[6:] == [("vic", "throttled", "address"), ("vic", "signed_in", None)]


async def test_a_changed_password_ends_every_session_of_that_user(tmp_path: Path) -> None:
    secret = secrets.token_urlsafe(48)
    async with running(a_config(sqlite(tmp_path)), secret) as (_, app):
        sam_1 = await signed_in_cookie(app, "sam")
        sam_2 = await signed_in_cookie(app, "sam")
        vic = await signed_in_cookie(app, "vic")
        assert await is_signed_in(app, sam_1) and await is_signed_in(app, sam_2)
    # the pit restarts with a new hash for sam (same record, same secret)
    changed = {**HASHES, "sam": hash_password(NEW_PASSWORD)}
    async with running(a_config(sqlite(tmp_path), changed), secret) as (service, app):
        with structlog.testing.capture_logs() as logs:
            await app.sessions.sweep()  # what the server does at start
        ended = [e for e in logs if e["event"] == "session_ended"]
        assert [(e["user"], e["reason"]) for e in ended] == [("sam", "password_changed")] * 2
        assert not await is_signed_in(app, sam_1) and not await is_signed_in(app, sam_2)
        assert await is_signed_in(app, vic)  # another user's session goes on
        async with browser(app) as client:
            assert (await sign_in(client, "sam")).status_code == 401  # the old password
            assert (await sign_in(client, "sam", NEW_PASSWORD)).status_code == 303
        audit = await actions(service.store, "sam")
        assert audit[-4:] == [("sam", "session_ended", "password_changed")] * 2 + [
            ("sam", "failed", "bad_password"), ("sam", "signed_in", None)]


async def test_a_changed_password_is_noticed_by_the_first_request(tmp_path: Path) -> None:
    """No sweep (it runs every minute): the request itself ends the session."""
    secret = secrets.token_urlsafe(48)
    async with running(a_config(sqlite(tmp_path)), secret) as (_, app):
        sam = await signed_in_cookie(app, "sam")
    changed = {**HASHES, "sam": hash_password(NEW_PASSWORD)}
    async with running(a_config(sqlite(tmp_path), changed), secret) as (service, app):
        assert not await is_signed_in(app, sam)
        assert (await actions(service.store, "sam"))[-1] == (
            "sam", "session_ended", "password_changed")


async def test_idle_and_absolute_lifetimes_end_a_session(tmp_path: Path) -> None:
    cfg = a_config(sqlite(tmp_path), session_idle=600, session_max_age=3600)
    async with running(cfg, secrets.token_urlsafe(48)) as (service, app):
        store = service.store
        assert isinstance(store, SqliteStore)
        idle = await signed_in_cookie(app, "sam")
        busy = await signed_in_cookie(app, "vic")
        now = time.time()
        # sam's last request was 11 minutes ago; vic signed in 61 minutes ago, busy since
        await store.call(lambda db: db.execute(
            "UPDATE web_sessions SET last_seen = ? WHERE user_name = 'sam'", (now - 660,)))
        await store.call(lambda db: db.execute(
            "UPDATE web_sessions SET created_at = ? WHERE user_name = 'vic'", (now - 3660,)))
        await asyncio.sleep(T_CACHE)  # past this server's cache
        assert not await is_signed_in(app, idle)
        assert not await is_signed_in(app, busy)
        audit = await actions(store)
        assert ("sam", "session_ended", "idle") in audit
        assert ("vic", "session_ended", "expired") in audit
        # within the limits, requests keep a session alive
        fresh = await signed_in_cookie(app, "sam")
        await store.call(lambda db: db.execute(
            "UPDATE web_sessions SET last_seen = ? WHERE ended_at IS NULL", (now - 500,)))
        await asyncio.sleep(T_CACHE)
        assert await is_signed_in(app, fresh)
        live = await store.live_sessions()
        assert len(live) == 1 and live[0].last_seen >= now  # the request was noted


async def test_pit_servers_on_one_postgres_share_their_sessions(postgres: PgServer) -> None:
    conninfo = postgres.conninfo(postgres.new_database())
    secret = secrets.token_urlsafe(48)  # one secret for the floor's servers, as deployed
    store = {"postgres": {"conninfo": conninfo}}
    async with running(a_config(store, pit="pit-a"), secret) as (service, a), \
            running(a_config(store, pit="pit-b"), secret) as (_, b):
        cookie = await signed_in_cookie(a, "sam")
        assert await is_signed_in(b, cookie)  # signed in on a, known on b
        async with browser(b, cookies={"pit_session": cookie}) as client:
            await client.get("/login")
            out = await client.post("/logout", data={"csrftoken": token(client)})
            assert out.status_code == 303
        assert not await is_signed_in(b, cookie)  # at once where it was signed out
        deadline = time.monotonic() + T_CACHE + 2
        while await is_signed_in(a, cookie):  # and within the cache's second on the other
            assert time.monotonic() < deadline, "still signed in on the other pit server"
            await asyncio.sleep(0.1)
        lines = await service.store.sign_in_audit()
        assert [(e.action, e.pit) for e in reversed(lines)] == [
            ("signed_in", "pit-a"), ("signed_out", "pit-b")]


async def test_an_open_live_stream_ends_when_its_session_ends(tmp_path: Path) -> None:
    async with running(a_config(sqlite(tmp_path)), secrets.token_urlsafe(48)) as (_, app):
        cookie = await signed_in_cookie(app, "sam")
        async with browser(app, cookies={"pit_session": cookie}) as client:
            assert (await client.get("/")).status_code == 200
        session = await app.sessions.resolve(session_id(cookie))
        assert session is not None
        ended, stopping = asyncio.Event(), asyncio.Event()
        guard = asyncio.create_task(app.sessions.guard(session, ended, stopping))
        await asyncio.sleep(0.2)
        assert not ended.is_set()
        async with browser(app, cookies={"pit_session": cookie}) as client:
            await client.get("/login")
            await client.post("/logout", data={"csrftoken": token(client)})
        async with asyncio.timeout(1):  # at once, not at the next check
            await ended.wait()
        await guard


async def test_a_supervisor_sees_the_sign_in_audit_and_a_viewer_does_not(
        tmp_path: Path) -> None:
    async with running(a_config(sqlite(tmp_path)), secrets.token_urlsafe(48)) as (_, app):
        async with browser(app, "10.0.0.66") as mallory:
            assert (await sign_in(mallory, "sam", "guess")).status_code == 401
        async with browser(app) as vic:
            await sign_in(vic, "vic")
            page = await vic.get("/alerts")
            assert page.status_code == 200 and "sign-ins" not in page.text
        async with browser(app) as sam:
            await sign_in(sam, "sam")
            page = await sam.get("/alerts")
        assert 'class="list sign-ins"' in page.text
        assert 'data-action="failed" data-user="sam"' in page.text and "10.0.0.66" in page.text
        assert 'data-action="signed_in" data-user="vic"' in page.text
        assert "guess" not in page.text


def test_the_throttle_settings_are_checked() -> None:
    from tabled.pit.config import ConfigError

    with pytest.raises(ConfigError, match="sign_in_address_failures is below"):
        a_config({"sqlite": "/tmp/x.sqlite"}, sign_in_failures=10, sign_in_address_failures=5)
    with pytest.raises(ConfigError, match="session_idle"):
        a_config({"sqlite": "/tmp/x.sqlite"}, session_idle=5)
    web = a_config({"sqlite": "/tmp/x.sqlite"}).web
    assert web is not None and (web.session_idle, web.session_max_age) == (1800, 8 * 3600)
    assert (web.sign_in_failures, web.sign_in_address_failures, web.sign_in_window) == (
        5, 50, 300)
