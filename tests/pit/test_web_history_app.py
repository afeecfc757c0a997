"""The history's routes without a browser (pit/web/history.py), over a real SQLite record fed
as the tables publish: sign-in first, every page, a query it cannot read answered 400 naming
the parameter, what does not exist 404."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tabled.games import registry
from tests.pit.conftest import all_bets
from tests.pit.test_web_app import Table, a_floor, sign_in, web


async def test_history_needs_sign_in_and_answers_every_page(tmp_path: Path) -> None:
    async with web(tmp_path) as (service, _, client):
        await a_floor(service)
        for path in ("/table/lab/bac-1/history", "/table/lab/bac-1/history/segments",
                     "/table/lab/bac-1/history/segments/1"):
            response = await client.get(path)
            assert response.status_code == 303 and "/login?next=" in response.headers["location"]
        await sign_in(client, "sam")
        page = await client.get("/table/lab/bac-1/history")
        assert page.status_code == 200 and page.text.count('class="recall-round"') == 3
        assert "/history/segments" in page.text  # baccarat's segments: its shoes
        two = await client.get("/table/lab/bac-1/history?size=2")
        assert two.text.count('class="recall-round"') == 2 and 'class="older"' in two.text
        shoes = await client.get("/table/lab/bac-1/history/segments")
        assert 'data-segment="1"' in shoes.text
        shoe = await client.get("/table/lab/bac-1/history/segments/1")
        assert shoe.status_code == 200
        assert shoe.text.count('data-road="bead_plate"') == 3 and 'data-count="hands"' in shoe.text
        craps = await client.get("/table/lab/craps-1/history")
        assert 'class="shooter"' in craps.text and "Rolls by shooter" in craps.text
        qp = await client.get("/table/lab/qp-1/history")
        assert 'data-dealer-cards="AS KS QS"' in qp.text and "qpoker.art11.5" in qp.text
        for response in (page, shoes, shoe, craps, qp):
            assert ' style="' not in response.text and "<script>" not in response.text
        for query, name in (("size=0", "size"), ("size=lots", "size"), ("round=-1", "round"),
                            ("from=yesterday", "from"),
                            ("from=2026-12-04T10:00&to=2026-12-04T09:00", "to")):
            bad = await client.get(f"/table/lab/bac-1/history?{query}")
            assert bad.status_code == 400 and f"{name}: " in bad.text, query
        assert (await client.get("/table/lab/bac-1/history/segments/2")).status_code == 404
        assert (await client.get("/table/lab/craps-1/history/segments")).status_code == 404
        assert (await client.get("/table/lab/nope/history")).status_code == 404


async def test_a_game_without_a_history_view_gets_the_list_of_rounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    declared = dict(registry.games())
    declared["craps"] = dataclasses.replace(declared["craps"], parts={})
    monkeypatch.setattr(registry, "games", lambda: declared)
    monkeypatch.setattr(registry, "game", lambda name: declared[name])
    async with web(tmp_path, anonymous_view=True) as (service, _, client):
        craps = Table(service, "craps-1", "craps", "dice-1")
        await craps.birth()
        for r, dice in enumerate([[3, 4], [2, 2]], start=1):
            await craps.outcome(r, result={"dice": dice, "total": sum(dice),
                                           "point_before": None, "point_after": None},
                                bets=all_bets("craps", dont_pass={"result": "lose"}))
        page = await client.get("/table/lab/craps-1/history")
        assert page.status_code == 200 and page.text.count('class="recall-round"') == 2
        assert "game-history" not in page.text and "segments" not in page.text
        assert "Don&#39;t Pass" in page.text or "Don't Pass" in page.text
        assert (await client.get("/table/lab/craps-1/history/segments")).status_code == 404
