"""The page behind HAProxy outlives the server that serves it: two ``tabled pit`` processes on
one PostgreSQL record behind HAProxy, Chromium (Playwright, ``/usr/bin/chromium``) signed in
through the balancer; the server holding the page's live stream is killed with SIGKILL, the
stream reconnects through the balancer to the other one (the same session: one secret, one
record), and the page shows the next change, a table going offline."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tabled.daemon.broker import Mosquitto, free_port
from tests.pit.conftest import PgServer
from tests.pit.hafloor import PASSWORD, Pit, pit_config
from tests.pit.haproxy import haproxy_binary, running_haproxy
from tests.pit.pitproc import stop
from tests.pit.webfloor import BROWSER_ARGS, CHROMIUM, WEB_MARKS

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = [*WEB_MARKS, pytest.mark.skipif(
    haproxy_binary() is None, reason="haproxy is not installed (make system-deps)")]

BASE = "tabled/lab/t1"


def publish(port: int, items: list[tuple[str, dict[str, Any], bool]]) -> None:
    """Publish on a thread of its own (Playwright's sync API runs an event loop in this one)."""
    async def send() -> None:
        async with aiomqtt.Client("127.0.0.1", port) as client:
            for topic, body, retain in items:
                await client.publish(topic, json.dumps(body), qos=1, retain=retain)

    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(send())).result(timeout=30)


def until(check: Any, timeout: float, what: str, page: Any = None) -> Any:
    """``check()`` true within ``timeout``; with a ``page``, its events are handled meanwhile
    (Playwright's sync API handles them only inside its own calls)."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < deadline, what
        if page is not None:
            page.wait_for_timeout(100)
        else:
            time.sleep(0.1)
    return got


def shows(pit: Pit, table: str, state: str) -> bool:
    try:
        with urllib.request.urlopen(f"{pit.url}/healthz", timeout=5) as r:
            return bool(json.loads(r.read())["tables"].get(state, 0) >= 1)
    except OSError:
        return False


def test_the_live_page_moves_to_the_surviving_server(
        broker: Mosquitto, postgres: PgServer, tmp_path: Path) -> None:
    conninfo = postgres.conninfo(postgres.new_database())
    secret = tmp_path / "session.key"
    secret.write_text(secrets.token_urlsafe(48) + "\n")
    os.chmod(secret, 0o600)
    pits = []
    for name in ("pit-a", "pit-b"):
        port = free_port()
        pits.append(Pit(name, pit_config(tmp_path, name, broker, conninfo, None, secret, port),
                        tmp_path / f"{name}.log", port))
    for pit in pits:
        pit.start()
    try:
        for pit in pits:
            until(pit.healthy, 30, f"{pit.name} is not healthy")
        birth = {"version": "0.1.0", "site": "lab", "table": "t1", "game": "craps",
                 "options": {}, "devices": [{"id": "dice-1", "family": "dice"}],
                 "started_at": "2026-12-01T10:00:00.000Z", "pid": 1, "commands": False,
                 "state": "online", "table_seq": 1}
        publish(broker.port, [(f"{BASE}/status", birth, True)])
        for pit in pits:
            until(lambda p=pit: shows(p, "t1", "online"), 30, f"{pit.name}: no table")
        with running_haproxy(tmp_path, {p.name: p.port for p in pits}) as lb, \
                playwright_sync.sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            try:
                page = chromium.new_page()
                streams: list[str] = []  # the server of each live stream the page opened
                page.on("response", lambda r: streams.append(r.headers.get("x-pit-server", "?"))
                        if "/events" in r.url else None)
                page.goto(lb.url + "/")
                assert "/login" in page.url
                page.fill("input[name=name]", "sam")
                page.fill("input[name=password]", PASSWORD)
                page.click("form button[type=submit]")
                page.wait_for_url(lb.url + "/")
                page.wait_for_selector("#live.on", timeout=15_000)
                tile = 'article.tile[data-table="t1"]'
                page.wait_for_selector(f'{tile}[data-state="online"]', timeout=10_000)
                until(lambda: streams, 10, "no live stream seen", page)
                serving = next(p for p in pits if p.name == streams[-1])
                survivor = pits[1 - pits.index(serving)]
                killed = time.monotonic()
                serving.kill()
                # the stream ends, and the page opens it again through the balancer
                until(lambda: len(streams) >= 2 and streams[-1] == survivor.name, 20,
                      f"the live stream did not move to {survivor.name}: {streams}", page)
                page.wait_for_selector("#live.on", timeout=15_000)
                moved = time.monotonic() - killed
                will = {"state": "offline", "reason": "connection_lost", "table_seq": 2}
                publish(broker.port, [(f"{BASE}/status", will, True)])
                page.wait_for_selector(f'{tile}[data-state="offline"]', timeout=10_000)
                assert "/login" not in page.url  # the same session, on the other server
                print(f"the live stream was back {moved:.2f} s after the kill")
            finally:
                chromium.close()
    finally:
        for pit in pits:
            if pit.proc is not None:
                stop(pit.proc)
