"""The incidents' routes without a browser, over a real PitService and SQLite record: the bulk
acknowledgement's refusals (nothing selected, not a number, a viewer, no sign-in), the
handover's reading of its time, and escalation on the service's own clock, moved by hand."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from tabled.pit.service import PitService
from tabled.pit.web.app import PitWeb
from tests.clock import Clock
from tests.pit.test_web_app import a_floor, config, sign_in, token


@contextlib.asynccontextmanager
async def web(tmp_path: Path, clock: Clock) -> AsyncIterator[tuple[PitService, httpx.AsyncClient]]:
    cfg = config(tmp_path)
    service = PitService(cfg, clock=clock)
    await service.start()
    app = PitWeb(service.web_port(), cfg.web, secrets.token_urlsafe(48))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app),
                                     base_url="http://pit.test") as client:
            yield service, client
    finally:
        await service.store.close()


async def test_bulk_acknowledge_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    async with web(tmp_path, Clock()) as (service, client):
        await a_floor(service)
        await client.get("/login")
        anonymous = await client.post("/incidents/acknowledge",
                                      data={"csrftoken": token(client), "incident": "1"})
        assert anonymous.status_code == 303 and "/login" in anonymous.headers["location"]
        await sign_in(client, "vic")
        waiting = [a.incident_id for a in service.floor.alerts()]
        refused = await client.post("/incidents/acknowledge",
                                    data={"csrftoken": token(client), "incident": waiting})
        assert refused.status_code == 403
        assert all(a.state == "open" for a in service.floor.alerts())
        await client.post("/logout", data={"csrftoken": token(client)})
        await sign_in(client, "sam")
        for data, why in (({}, "Nothing selected"), ({"incident": "1; drop"}, "Not an incident")):
            bad = await client.post("/incidents/acknowledge",
                                    data={"csrftoken": token(client), **data})
            assert bad.status_code == 400 and why in bad.text
        done = await client.post("/incidents/acknowledge", data={
            "csrftoken": token(client), "incident": waiting, "note": "all seen",
            "back": "https://elsewhere.example/"})
        assert done.status_code == 303 and done.headers["location"] == "/alerts"  # never away
        assert not any(a.state == "open" for a in service.floor.alerts())
        page = await client.get("/alerts")
        assert 'name="incident"' not in page.text  # nothing left to select


async def test_the_handover_reads_its_time_or_says_it_cannot(tmp_path: Path) -> None:
    async with web(tmp_path, Clock()) as (service, client):
        await a_floor(service)
        assert (await client.get("/handover")).status_code == 303  # sign in first
        await sign_in(client, "vic")
        page = await client.get("/handover")
        assert page.status_code == 200 and "craps-1" in page.text
        for query, problem in (("hours=0", "hours"), ("hours=200", "hours"),
                               ("hours=x", "hours"), ("since=yesterday", "since")):
            shown = await client.get(f"/handover?{query}")
            assert shown.status_code == 200 and f'data-problem="{problem}"' in shown.text
        fine = await client.get("/handover?since=2026-12-01T10:00:00%2B08:00")
        assert fine.status_code == 200 and "data-problem" not in fine.text


async def test_escalation_runs_on_the_services_clock(tmp_path: Path) -> None:
    clock = Clock()
    async with web(tmp_path, clock) as (service, client):
        await a_floor(service)  # craps-1 went offline: a critical incident
        await sign_in(client, "sam")
        await service.engine.tick()
        assert 'data-escalation="1"' not in (await client.get("/alerts")).text
        clock.now += service.config.alerts.escalate_after["critical"] + 1
        await service.engine.tick()
        page = await client.get("/alerts")
        assert 'data-escalation="1"' in page.text and "escalated 1" in page.text
        offline = next(a for a in service.floor.alerts() if a.kind == "offline")
        assert offline.escalation == 1
