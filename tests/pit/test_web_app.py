"""The pit's web layer without a browser: routes, sign-in, sessions, CSRF, roles, headers,
every page rendered over a real SQLite record, the live stream, and TLS with a trustme CA.

The app runs in-process over a real :class:`~tabled.pit.service.PitService` (its store, model,
alert engine and desk), fed messages as the tables publish them; the TLS test runs the whole
service with its uvicorn server on a free port."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import secrets
import ssl
import time
import tokenize
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog

from tabled.contract.secrets import SecretError
from tabled.daemon.broker import free_port
from tabled.daemon.errors import DaemonError
from tabled.games import registry
from tabled.games.parts import pit as parts_pit
from tabled.games.parts.pit import PitPart
from tabled.pit.auth import hash_password
from tabled.pit.config import parse_config
from tabled.pit.errors import PitError
from tabled.pit.service import PitService
from tabled.pit.web import app as web_app
from tabled.pit.web import present
from tabled.pit.web.app import PitWeb
from tabled.pit.web.server import WebServer
from tests.pit.conftest import NOTHING_DEALT, all_bets

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "pit" / "web" / "static" / "vendor"
PASSWORD = {"sam": "supervisor password", "vic": "viewer password"}
HASHES = {name: hash_password(p) for name, p in PASSWORD.items()}


def config(tmp_path: Path, **web: Any) -> Any:
    return parse_config({
        "pit": {"id": "pit-test"},
        "mqtt": {"url": f"mqtt://127.0.0.1:{free_port()}", "reconnect_min": 0.1,
                 "reconnect_max": 0.5},
        "store": {"sqlite": str(tmp_path / "pit.sqlite")},
        "web": {"port": free_port(), "language": "en", **web},
        "users": [{"name": "sam", "role": "supervisor", "password_hash": HASHES["sam"]},
                  {"name": "vic", "role": "viewer", "password_hash": HASHES["vic"]}]})


class Table:
    """One table's messages, numbered as a daemon numbers them."""

    def __init__(self, service: PitService, table: str, game: str, device: str) -> None:
        self.service, self.table, self.game, self.device = service, table, game, device
        self.seq: dict[str, int] = {}

    async def send(self, stream: str, body: dict[str, Any]) -> None:
        family = "device" if stream.startswith("device/") else stream
        n = self.seq.get(family, 0)
        self.seq[family] = n + 1
        payload = {**body, "table_seq": n, "ts": "2026-12-01T10:00:00.000Z"}
        await self.service.received(f"tabled/lab/{self.table}/{stream}",
                                    json.dumps(payload).encode(), False)

    async def birth(self) -> None:
        family = self.device.split("-")[0]
        await self.send("status", {
            "version": "0.1.0", "site": "lab", "table": self.table, "game": self.game,
            "options": {"commission": "five_percent"} if self.game == "baccarat" else {},
            "devices": [{"id": self.device, "family": family}],
            "started_at": "2026-12-01T10:00:00.000Z", "pid": 1, "commands": False,
            "state": "online"})
        await self.send(f"device/{self.device}/status",
                        {"state": "connected", "device": self.device, "family": family,
                         "since": "2026-12-01T10:00:00.000Z"})

    async def outcome(self, round_no: int, **body: Any) -> None:
        body["bets"] = all_bets(self.game, **body.get("bets", {}))
        await self.send("outcome", {"v": 2, "type": "outcome", "game": self.game,
                                    "round": round_no, "status": "complete", **body})


async def a_floor(service: PitService) -> dict[str, Table]:
    bac = Table(service, "bac-1", "baccarat", "shoe-1")
    craps = Table(service, "craps-1", "craps", "dice-1")
    qp = Table(service, "qp-1", "qpoker", "shuffler-1")
    for t in (bac, craps, qp):
        await t.birth()
    await bac.send("event", {"v": 1, "type": "shoe_start", "decks": 8})
    for r, (winner, p, b) in enumerate([("banker", ["2S", "3H"], ["9D", "KC"]),
                                        ("player", ["8S", "KH"], ["3D", "2C"]),
                                        ("tie", ["4S", "4H"], ["5D", "3C"])], start=1):
        await bac.send("event", {"v": 1, "type": "card", "card": p[0]})
        await bac.outcome(r, result={"player_cards": p, "banker_cards": b,
                                     "player_total": 5, "banker_total": 9, "winner": winner,
                                     "natural": True},
                          bets={"banker": {"result": "win", "pays": "19:20"}})
    for r, dice in enumerate([[3, 4], [2, 2], [6, 5]], start=1):
        await craps.outcome(r, result={"dice": dice, "total": sum(dice), "point_before": None,
                                       "point_after": None}, bets={})
    await qp.outcome(1, result={"dealer": {"cards": ["AS", "KS", "QS"], "hand": "straight",
                                           "qualifies": True},
                                "seats": {"3": {"cards": ["2H", "2D", "9C"], "hand": "pair",
                                                "status": "active"}}},
                     bets={"3": {"dobo": {"result": "win", "pays": "1:1"},
                                 "play": {"result": "lose"}}})
    await qp.send("outcome", {"v": 2, "type": "outcome", "game": "qpoker", "round": 2,
                              "status": "void", "void_reason": "shuffler_failure",
                              "article": "qpoker.art11.5", "result": NOTHING_DEALT["qpoker"],
                              "bets": {}})
    await craps.send("status", {"state": "offline", "reason": "connection_lost"})
    return {"bac": bac, "craps": craps, "qp": qp}


@contextlib.asynccontextmanager
async def web(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[PitService, PitWeb,
                                                                      httpx.AsyncClient]]:
    cfg = config(tmp_path, **settings)
    service = PitService(cfg)
    await service.start()
    app = PitWeb(service.web_port(), cfg.web, secrets.token_urlsafe(48))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app),
                                     base_url="http://pit.test") as client:
            yield service, app, client
    finally:
        await service.store.close()


def token(client: httpx.AsyncClient) -> str:
    return str(client.cookies["csrftoken"])


async def sign_in(client: httpx.AsyncClient, name: str, password: str | None = None,
                  next_url: str = "") -> httpx.Response:
    await client.get("/login")
    return await client.post("/login", data={
        "csrftoken": token(client), "name": name,
        "password": PASSWORD[name] if password is None else password, "next": next_url})


async def test_nothing_of_the_floor_before_sign_in(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        for path in ("/", "/table/lab/bac-1", "/table/lab/bac-1/recall", "/alerts",
                     "/alerts/1"):
            response = await client.get(path)
            assert response.status_code == 303, path
            assert response.headers["location"].startswith("/login?next=")
        login = await client.get("/login")
        assert login.status_code == 200
        assert "bac-1" not in login.text and "alerts-panel" not in login.text
        assert (await client.get("/events")).status_code == 401


async def test_anonymous_view_shows_the_page_but_acting_needs_a_supervisor(
        tmp_path: Path) -> None:
    async with web(tmp_path, anonymous_view=True) as (service, _, client):
        await a_floor(service)
        floor = await client.get("/")
        assert floor.status_code == 200 and 'data-table="bac-1"' in floor.text
        alert_id = service.floor.alerts()[0].id
        await client.get(f"/alerts/{alert_id}")
        refused = await client.post(f"/alerts/{alert_id}/acknowledge",
                                    data={"csrftoken": token(client)})
        assert refused.status_code == 303 and "/login" in refused.headers["location"]


async def test_sign_in_sets_a_strict_httponly_session_and_redirects_only_here(
        tmp_path: Path) -> None:
    async with web(tmp_path) as (_, _, client):
        response = await sign_in(client, "sam", next_url="//evil.example/x")
        assert response.status_code == 303 and response.headers["location"] == "/"
        cookie = next(v for v in response.headers.get_list("set-cookie")
                      if v.startswith("pit_session="))
        flags = cookie.lower()
        assert "httponly" in flags and "samesite=strict" in flags and "secure" not in flags
        assert "max-age=28800" in flags
        page = await client.get("/")
        assert page.status_code == 200 and 'data-user="sam"' in page.text
        # sign out (with the token) ends the session
        out = await client.post("/logout", data={"csrftoken": token(client)})
        assert out.status_code == 303
        assert (await client.get("/")).status_code == 303
        again = await sign_in(client, "vic", next_url="/alerts?state=all")
        assert again.headers["location"] == "/alerts?state=all"


async def test_failed_sign_ins_are_logged_and_throttled(tmp_path: Path) -> None:
    async with web(tmp_path, sign_in_failures=3, sign_in_window=60) as (_, _, client):
        with structlog.testing.capture_logs() as logs:
            for _ in range(3):
                assert (await sign_in(client, "sam", "wrong")).status_code == 401
            throttled = await sign_in(client, "sam")  # even the right password, for now
        assert throttled.status_code == 429 and "Too many failed sign-ins" in throttled.text
        failed = [e for e in logs if e["event"] == "sign_in_failed"]
        assert len(failed) == 3 and failed[0]["user"] == "sam" and failed[0]["client"]
        assert "wrong" not in json.dumps(logs)  # never the password
        assert any(e["event"] == "sign_in_throttled" for e in logs)


async def test_every_state_changing_request_needs_the_csrf_token(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        await client.get("/login")
        # even sign-in, even without any cookie
        bare = httpx.AsyncClient(transport=client._transport, base_url="http://pit.test")
        async with bare:
            assert (await bare.post("/login", data={"name": "sam", "password": PASSWORD[
                "sam"]})).status_code == 403
        assert (await client.post("/login", data={"name": "sam", "password": PASSWORD[
            "sam"]})).status_code == 403
        await sign_in(client, "sam")
        alert_id = service.floor.alerts()[0].id
        with structlog.testing.capture_logs() as logs:
            for data in ({}, {"csrftoken": "forged"}):
                refused = await client.post(f"/alerts/{alert_id}/acknowledge", data=data)
                assert refused.status_code == 403 and "Refused" in refused.text
        assert [e["event"] for e in logs].count("csrf_refused") == 2
        alert = await service.store.alert(alert_id)
        assert alert is not None and alert.state == "open"
        done = await client.post(f"/alerts/{alert_id}/acknowledge",
                                 data={"csrftoken": token(client), "note": "seen"})
        assert done.status_code == 303
        alert = await service.store.alert(alert_id)
        assert alert is not None and alert.acked_by == "sam" and alert.ack_note == "seen"


async def test_a_viewer_sees_no_action_and_is_refused_and_audited(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        await sign_in(client, "vic")
        alert_id = service.floor.alerts()[0].id
        page = await client.get(f"/alerts/{alert_id}")
        assert 'id="acknowledge"' not in page.text and 'id="close"' not in page.text
        refused = await client.post(f"/alerts/{alert_id}/acknowledge",
                                    data={"csrftoken": token(client), "note": "me too"})
        assert refused.status_code == 403 and "vic (viewer) may not acknowledge" in refused.text
        trail = await service.store.audit(alert_id)
        assert (trail[-1].actor, trail[-1].action) == ("vic", "refused:acknowledge")
        nope = await client.post("/alerts/99999/close", data={"csrftoken": token(client)})
        assert nope.status_code == 403  # the role is checked before the alert is looked up
        await client.post("/logout", data={"csrftoken": token(client)})
        await sign_in(client, "sam")
        gone = await client.post("/alerts/99999/close", data={"csrftoken": token(client)})
        assert gone.status_code == 409


async def test_while_the_record_fails_its_pages_answer_503_and_the_floor_stays(
        tmp_path: Path) -> None:
    """Every route that reads or writes the record answers the same 503 page while the store
    does not answer (here: it is closed); the pages of the model still render."""
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        await sign_in(client, "sam")
        alert_id = service.floor.alerts()[0].id
        await service.store.close()
        for method, path in (("GET", "/table/lab/bac-1/recall"), ("GET", "/alerts"),
                             ("GET", f"/alerts/{alert_id}"),
                             ("POST", f"/alerts/{alert_id}/acknowledge")):
            data = {"csrftoken": token(client)} if method == "POST" else None
            response = await client.request(method, path, data=data)
            assert response.status_code == 503, path
            assert "The record is not answering" in response.text, path
            assert "not open" in response.text, path  # the store's own reason
        for path in ("/", "/table/lab/bac-1"):
            assert (await client.get(path)).status_code == 200, path


async def test_the_pits_own_secret_refusals_are_pit_errors_not_daemon_errors(
        tmp_path: Path) -> None:
    """A session secret too short is refused by the pit as a pit error that the shared
    ground's ``SecretError`` still catches (``tabled pit run`` exits 2 on it), never as an
    error of the table service; the message is the same."""
    short = tmp_path / "session.secret"
    short.write_text("too short")
    os.chmod(short, 0o600)
    cfg = config(tmp_path, session_secret_file=str(short))
    with pytest.raises(SecretError) as info:
        WebServer(PitService(cfg).web_port(), cfg.web)
    assert isinstance(info.value, PitError) and not isinstance(info.value, DaemonError)
    assert str(info.value) == (f"{short}: shorter than 32 bytes "
                               "(make one with: head -c 48 /dev/urandom | base64)")


async def test_every_page_renders_from_the_model_and_the_record(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        await sign_in(client, "sam")
        floor = await client.get("/")
        assert floor.text.count('class="tile st-') == 3
        assert 'data-state="offline"' in floor.text and "last known" in floor.text
        bac = await client.get("/table/lab/bac-1")
        assert 'data-road="big_road"' in bac.text and 'data-option="commission"' in bac.text
        assert bac.text.count('data-road="bead_plate"') == 3
        craps = await client.get("/table/lab/craps-1")
        assert 'data-dice="6-5"' in craps.text and 'data-face="7" data-count="1"' in craps.text
        qp = await client.get("/table/lab/qp-1")
        assert 'data-dealer-cards="AS KS QS"' in qp.text and "qpoker.art11.5" in qp.text
        recall = await client.get("/table/lab/bac-1/recall")
        assert recall.text.count('class="recall-round"') == 3
        assert 'data-type="card"' in recall.text
        for state in ("live", "open", "acknowledged", "cleared", "closed", "all", "bogus"):
            assert (await client.get(f"/alerts?state={state}")).status_code == 200
        alert_id = service.floor.alerts()[0].id
        detail = await client.get(f"/alerts/{alert_id}")
        assert 'id="acknowledge"' in detail.text and "Audit trail" in detail.text
        assert (await client.get("/table/lab/nope")).status_code == 404
        assert (await client.get("/alerts/4242")).status_code == 404
        for response in (floor, bac, craps, qp, recall, detail):
            assert ' style="' not in response.text  # the CSP forbids inline styles
            assert "<script>" not in response.text


async def test_headers_health_metrics_and_the_vendored_files(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        login = await client.get("/login")
        h = login.headers
        assert h["content-security-policy"].startswith("default-src 'self'; script-src 'self'")
        assert "'unsafe-inline'" not in h["content-security-policy"]
        assert "frame-ancestors 'none'" in h["content-security-policy"]
        assert h["x-frame-options"] == "DENY" and h["referrer-policy"] == "same-origin"
        assert h["x-content-type-options"] == "nosniff" and h["cache-control"] == "no-store"
        assert "strict-transport-security" not in h
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json()["tables"]["offline"] == 1
        metrics = await client.get("/metrics")
        assert metrics.status_code == 200 and 'pit_tables{state="online"} 2.0' in metrics.text
        readme = (VENDOR / "README.md").read_text()
        for name in ("htmx.min.js", "htmx-ext-sse.min.js"):
            digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
            assert f"`{name}`" in readme and digest in readme, name
            served = await client.get(f"/static/vendor/{name}")
            assert served.status_code == 200 and "no-store" not in served.headers.get(
                "cache-control", "")


def test_a_road_shows_its_latest_columns() -> None:
    entries = [{"col": c, "row": c % 6, "color": "red"} for c in range(50)]
    grid = parts_pit.grid("big_eye_boy", entries, width=30)
    assert grid.first == 20 and grid.columns == range(20, 50)
    assert grid.rows[49 % 6][29] == entries[49] and grid.rows[20 % 6][0] == entries[20]
    assert sum(1 for row in grid.rows for cell in row if cell) == 30
    empty = parts_pit.grid("big_road", [], width=36)
    assert empty.first == 0 and all(cell is None for row in empty.rows for cell in row)
    assert present.card("TD") == present.Card("TD", "10", "♦", True)
    assert present.card("AS").red is False


# -- the running service: live stream, shutdown, TLS ------------------------------------------


async def read_events(lines: AsyncIterator[str], want: str, timeout: float) -> float:
    """Seconds until an SSE event named ``want`` arrives."""
    start = time.monotonic()
    async with asyncio.timeout(timeout):
        async for line in lines:
            if line.strip() == f"event: {want}":
                return time.monotonic() - start
    raise AssertionError(f"the stream ended before {want}")


async def test_the_live_stream_over_tls_and_a_clean_stop(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "web.pem", tmp_path / "web.key"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    for pem in cert.cert_chain_pems[1:]:
        pem.write_to_path(str(cert_file), append=True)
    cert.private_key_pem.write_to_path(str(key_file))
    os.chmod(key_file, 0o600)
    secret = tmp_path / "session.secret"
    secret.write_text(secrets.token_urlsafe(48))
    os.chmod(secret, 0o600)
    cfg = config(tmp_path, tls_cert_file=str(cert_file), tls_key_file=str(key_file),
                 session_secret_file=str(secret))
    service = PitService(cfg)
    task = asyncio.create_task(service.run())
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    base = f"https://127.0.0.1:{cfg.web.port}"
    try:
        async with asyncio.timeout(15):
            await asyncio.sleep(0)  # run() makes its WebServer before its first await
            assert service.web is not None
            await service.web.serving.wait()
        floor = await a_floor(service)
        async with httpx.AsyncClient(timeout=3) as plain:  # no plain HTTP on a TLS port
            with pytest.raises(httpx.HTTPError):
                await plain.get(base.replace("https://", "http://") + "/healthz")
        async with httpx.AsyncClient(base_url=base, verify=trusted) as client:
            login = await client.get("/login")
            assert login.status_code == 200
            assert login.headers["strict-transport-security"].startswith("max-age=")
            csrf = next(v for v in login.headers.get_list("set-cookie")
                        if v.startswith("csrftoken="))
            assert "Secure" in csrf and "SameSite=Strict" in csrf
            signed = await client.post("/login", data={
                "csrftoken": client.cookies["csrftoken"], "name": "sam",
                "password": PASSWORD["sam"]})
            session = next(v for v in signed.headers.get_list("set-cookie")
                           if v.startswith("pit_session="))
            assert "secure" in session.lower() and "httponly" in session.lower()
            # the floor's live stream: everything first, then a tile per change
            async with client.stream("GET", "/events?view=floor") as events:
                assert events.headers["content-type"].startswith("text/event-stream")
                lines = events.aiter_lines()
                await read_events(lines, "floor", 5)
                await floor["bac"].outcome(9, result={
                    "player_cards": ["2S", "3H"], "banker_cards": ["9D", "KC"],
                    "player_total": 5, "banker_total": 9, "winner": "banker",
                    "natural": True}, bets={})
                delay = await read_events(lines, "tile:lab/bac-1", 5)
                print(f"outcome -> SSE event {delay * 1000:.1f} ms")
                assert delay < 1.0
                # a stop ends the open stream and the server promptly
                stopped = time.monotonic()
                service.request_stop()
                async with asyncio.timeout(10):
                    assert await task == 0
                assert time.monotonic() - stopped < 5.0
        with pytest.raises(httpx.HTTPError):  # the server is gone with the service
            async with httpx.AsyncClient(base_url=base, verify=trusted, timeout=2) as client:
                await client.get("/healthz")
    finally:
        if not task.done():
            service.request_stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10)


async def test_the_live_stream_sends_only_what_the_page_does_not_show(tmp_path: Path) -> None:
    """A change to a table's model that leaves its tile as it is (a second new shoe with no card
    dealt from the first: the tile shows the same empty count) and a summary that did not
    change are not sent again: the browser swaps only what changed."""
    secret = tmp_path / "session.secret"
    secret.write_text(secrets.token_urlsafe(48))
    os.chmod(secret, 0o600)
    cfg = config(tmp_path, session_secret_file=str(secret))
    service = PitService(cfg)
    task = asyncio.create_task(service.run())
    base = f"http://127.0.0.1:{cfg.web.port}"
    try:
        async with asyncio.timeout(15):
            await asyncio.sleep(0)
            assert service.web is not None
            await service.web.serving.wait()
        floor = await a_floor(service)
        async with httpx.AsyncClient(base_url=base, timeout=5) as client:
            await sign_in(client, "vic")
            async with client.stream("GET", "/events?view=floor") as events:
                lines = events.aiter_lines()
                await read_events(lines, "floor", 5)
                await floor["bac"].send("event", {"v": 1, "type": "shoe_start", "decks": 8})
                # a new shoe's count shows on the tile: sent once
                async with asyncio.timeout(5):
                    async for line in lines:
                        if line.startswith("event: tile:lab/bac-1"):
                            break
                await floor["bac"].send("event", {"v": 1, "type": "shoe_start", "decks": 8})
                assert service.floor.panel("lab", "bac-1")["shoe"] == 3  # type: ignore[index]
                await floor["qp"].outcome(3, result={
                    "dealer": {"cards": ["AS", "KS", "QS"], "hand": "straight",
                               "qualifies": True},
                    "seats": {"3": {"cards": ["2H", "2D", "9C"], "hand": "pair",
                                    "status": "active"}}}, bets={})
                sent: list[tuple[str, str]] = []
                async with asyncio.timeout(5):
                    name = ""
                    async for line in lines:
                        if line.startswith("event: "):
                            name = line.removeprefix("event: ").strip()
                        elif line.startswith("data: ") and name:
                            sent.append((name, line))
                            name = ""
                        if sent and sent[-1][0] == "tile:lab/qp-1":
                            break
                # the new shoe's batch sent nothing (or, taken together with the outcome, only
                # the tile that changed); the summary is as it was
                assert [n for n, _ in sent] == ["tile:lab/qp-1"]
                assert 'data-last-round="3"' in sent[0][1]
        service.request_stop()
        async with asyncio.timeout(10):
            assert await task == 0
    finally:
        if not task.done():
            service.request_stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10)


# -- a game is a unit: the pit asks each game's pit part (games/parts/pit.py) -------------------


def test_every_built_in_game_declares_a_pit_part_whose_templates_load() -> None:
    env = web_app._environment()
    for name in registry.games():
        part = registry.part(name, "pit")
        assert isinstance(part, PitPart), name
        env.get_template(f"{name}/{part.panel_template}")
        assert part.recall_template is not None
        env.get_template(f"{name}/{part.recall_template}")
        panel = part.panel()
        assert panel.to_dict()["game"] == name and isinstance(part.view(panel.to_dict()), dict)


async def test_a_game_without_a_pit_part_shows_on_the_floor_with_its_outcomes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin that declares no pit part: a tile like any other (its title, its last outcome
    by round and status), and a table page listing its outcomes by round, status and article."""
    declared = dict(registry.games())
    declared["craps"] = dataclasses.replace(declared["craps"], parts={})
    monkeypatch.setattr(registry, "games", lambda: declared)
    monkeypatch.setattr(registry, "game", lambda name: declared[name])
    assert registry.part("craps", "pit") is None
    async with web(tmp_path, anonymous_view=True) as (service, _, client):
        craps = Table(service, "craps-1", "craps", "dice-1")
        await craps.birth()
        for r, dice in enumerate([[3, 4], [2, 2]], start=1):
            await craps.outcome(r, result={"dice": dice, "total": sum(dice),
                                           "point_before": None, "point_after": None}, bets={})
        floor = (await client.get("/")).text
        tile = floor[floor.index('data-table="craps-1"'):]
        assert '<span class="game g-craps">Craps</span>' in tile
        assert '<span class="line">#2 complete</span>' in tile
        await craps.send("outcome", {"v": 2, "type": "outcome", "game": "craps", "round": 3,
                                     "status": "void", "void_reason": "dice_not_read",
                                     "article": "craps.art5", "result": NOTHING_DEALT["craps"],
                                     "bets": all_bets("craps")})
        floor = (await client.get("/")).text
        assert '<span class="line void">#3 void (Art. 5): dice not read</span>' in floor
        page = await client.get("/table/lab/craps-1")
        assert page.status_code == 200
        assert '<section class="outcomes">' in page.text and "craps-head" not in page.text
        rows = re.findall(r'<tr class="(void)?" data-round="(\d+)"><td>#\d+</td><td>(\w+)</td>'
                          r'<td>([^<]*)', page.text)
        assert rows == [("void", "3", "void", "Art. 5 "), ("", "2", "complete", ""),
                        ("", "1", "complete", "")]
        recall = await client.get("/table/lab/craps-1/recall")
        assert recall.status_code == 200 and 'class="die"' not in recall.text
        assert recall.text.count('class="recall-round"') == 3
        assert service.floor.snapshot()["tables"][0]["panel"] == {
            "game": "craps", "outcomes": [
                {"round": 1, "status": "complete", "article": None, "void_reason": None},
                {"round": 2, "status": "complete", "article": None, "void_reason": None},
                {"round": 3, "status": "void", "article": "craps.art5",
                 "void_reason": "dice_not_read"}]}


def test_the_pit_outside_its_integrity_monitors_names_no_game() -> None:
    """What the pit shows of a game is the game's (games/<game>/pit.py and its templates): no
    game's name in the pit's code (its docstrings and comments aside) or templates."""
    names = re.compile(r"baccarat|craps|qpoker|q poker|sicbo", re.IGNORECASE)
    owned_elsewhere = {"config.py", "store.py", "store_sqlite.py", "store_postgres.py"}
    found = []
    for path in [*(ROOT / "pit").glob("*.py"), *(ROOT / "pit" / "web").glob("*.py")]:
        if path.name in owned_elsewhere:
            continue
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        previous = tokenize.NEWLINE
        for tok in tokens:
            docstring = tok.type == tokenize.STRING and previous in (
                tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
            if tok.type not in (tokenize.COMMENT, tokenize.NL) and not docstring \
                    and names.search(tok.string) and "pace(config." not in tok.line:
                found.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.string}")
            if tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.type
    for path in [*(ROOT / "pit" / "web" / "templates").glob("*.html"),
                 *(ROOT / "pit" / "web" / "static").glob("*.css"),
                 *(ROOT / "pit" / "web" / "static").glob("*.js")]:
        found += [f"{path.relative_to(ROOT)}: {m.group()}" for m in names.finditer(
            path.read_text())]
    assert found == []


async def test_the_stylesheet_is_the_pits_then_each_games(tmp_path: Path) -> None:
    async with web(tmp_path) as (_, _, client):
        served = await client.get("/static/pit.css")
        assert served.status_code == 200
        assert served.headers["content-type"].startswith("text/css")
        css = served.text
        own = (ROOT / "pit" / "web" / "static" / "pit.css").read_text()
        assert css.startswith(own)
        at = len(own)
        for name in registry.games():  # each game's classes, after the pit's own
            part = registry.part(name, "pit")
            if part is None or part.stylesheet is None:
                continue
            sheet = (resources.files(part.package) / "templates" / part.stylesheet).read_text(
                encoding="utf-8")
            assert css.index(sheet, at) >= at
            at = css.index(sheet, at) + len(sheet)
        assert ".g-craps" in css and ".qround" in css and "--banker" in css
        again = await client.get("/static/pit.css",
                                 headers={"if-none-match": served.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        assert (await client.get("/static/pit.js")).status_code == 200


async def test_live_pages_share_one_rendering_of_a_tile_until_its_table_changes(
        tmp_path: Path) -> None:
    """Every live page of a language gets the same rendering of a tile while its table is
    unchanged in the same second; a change of the table (its version) renders it anew, and
    another language has its own."""
    async with web(tmp_path) as (service, app, _):
        tables = await a_floor(service)
        first = app.tile_html("lab", "bac-1", "en")
        assert first is not None and 'data-table="bac-1"' in first
        second = app.tile_html("lab", "bac-1", "en")
        assert second is first  # the same rendering, not made again
        chinese = app.tile_html("lab", "bac-1", "zh_Hant")
        assert chinese is not None and chinese != first
        assert app.tile_html("lab", "bac-1", "zh_Hant") is chinese
        model = service.floor.table("lab", "bac-1")
        assert model is not None
        version = model.version
        await tables["bac"].outcome(4, result={"player_cards": ["8S", "KH"],
                                               "banker_cards": ["3D", "2C"],
                                               "player_total": 8, "banker_total": 5,
                                               "winner": "player", "natural": True},
                                    bets={"player": {"result": "win", "pays": "1:1"}})
        assert model.version != version
        changed = app.tile_html("lab", "bac-1", "en")
        assert changed is not None and changed is not first
        assert 'data-last-round="4"' in changed
        assert app.tile_html("lab", "nowhere", "en") is None


async def test_a_batch_of_fragments_goes_to_the_browser_in_one_write() -> None:
    """pit.web.live: a page's stream sends its retry time, then everything in one chunk, then
    each batch of changes as one chunk of SSE events in the order they were made."""
    from tabled.pit.model import Change, ChangeFeed
    from tabled.pit.web.live import stream

    feed = ChangeFeed()
    stopping = asyncio.Event()

    async def fragments(batch: set[Change] | None) -> AsyncIterator[tuple[str, str]]:
        if batch is None:
            yield "summary", "all <b>3</b>"
            yield "floor", "tiles"
            return
        for change in sorted(batch, key=lambda c: str(c.table)):
            yield f"tile:lab/{change.table}", f"<article>{change.table}\nnext line</article>"
        if any(c.table == "quiet" for c in batch):
            return

    events = stream(feed.subscribe(), fragments, stopping)
    retry = await anext(events)
    assert b"retry: 500" in retry.encode()  # type: ignore[union-attr]
    first = await anext(events)
    assert first == (b"event: summary\r\ndata: all <b>3</b>\r\n\r\n"
                     b"event: floor\r\ndata: tiles\r\n\r\n")
    feed.publish(Change("table", "lab", "t1"))
    feed.publish(Change("table", "lab", "t2"))
    chunk = await anext(events)
    assert isinstance(chunk, bytes)
    assert chunk.split(b"\r\n\r\n")[:2] == [
        b"event: tile:lab/t1\r\ndata: <article>t1\r\ndata: next line</article>",
        b"event: tile:lab/t2\r\ndata: <article>t2\r\ndata: next line</article>"]
    stopping.set()
    with pytest.raises(StopAsyncIteration):
        await anext(events)
