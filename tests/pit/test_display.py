"""The tables' scoreboard displays without a browser: baccarat's board view and its ask road
(pure, against the roads of ``tabled roads``), the ``[[displays]]`` config, and the display's
routes in-process over a real pit service and SQLite record: the token (403 alike for a wrong
token, a missing one and a table that does not exist; logged without the token; counted), the
page's headers, and nothing of the supervisor's page on it.

The browser test (tests/pit/test_web_display.py) checks the board against ``tabled roads`` on a
real floor and its live updates."""

from __future__ import annotations

import contextlib
import gettext
import json
import os
import random
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.daemon.broker import free_port
from tabled.games.baccarat import display
from tabled.games.baccarat.roads import DERIVED_ROADS, Hand, Roads
from tabled.pit.config import ConfigError, check_secrets, parse_config
from tabled.pit.i18n import translations
from tabled.pit.service import PitService
from tabled.pit.web.app import PitWeb
from tabled.pit.web.display import DisplayTokenError, load_displays
from tests.pit.test_web_app import HASHES, a_floor, sign_in

TOKEN = "display-token-" + "a" * 32
OTHER = "display-token-" + "b" * 32

WINNERS = st.sampled_from(["banker", "player", "tie"])
HANDS = st.lists(st.builds(Hand, WINNERS, st.booleans(), st.booleans(), st.booleans()),
                 max_size=90)


# -- the board's view and the ask road (pure) ------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(HANDS)
def test_the_ask_road_is_what_each_derived_road_marks_when_that_side_wins_next(
        hands: list[Hand]) -> None:
    roads = Roads(hands)
    for side in ("banker", "player"):
        asked = display.view({"roads": roads.to_dict(), "shoe": 1})["ask"][side]
        after = Roads(hands)
        update = after.add(Hand(side))
        marks = {name: getattr(update, name) for name in DERIVED_ROADS}
        assert asked == {name: None if mark is None else mark.color
                         for name, mark in marks.items()}, side


def _panel(hands: list[Hand], shoe: int = 2, extra: list[dict[str, Any]] = (),  # type: ignore[assignment]
           **more: Any) -> dict[str, Any]:
    listed = [{"round": i, "status": "complete", "demo": False, "winner": h.winner,
               "player_total": 3, "banker_total": 7, "natural": h.natural, "shoe": shoe,
               "article": None, "player_cards": ["2S", "AH"], "banker_cards": ["7D", "KC"],
               "player_pair": h.player_pair, "banker_pair": h.banker_pair}
              for i, h in enumerate(hands, 1)]
    return {"game": "baccarat", "shoe": shoe, "hands": listed + list(extra),
            "roads": Roads(hands).to_dict(), **more}


def test_the_board_shows_the_shoes_latest_columns_counts_and_last_hand() -> None:
    rng = random.Random(3)
    hands = [Hand(rng.choice(["banker", "banker", "player", "player", "tie"]),
                  rng.random() < 0.1, rng.random() < 0.1, rng.random() < 0.3)
             for _ in range(80)]
    roads = Roads(hands)
    expected = roads.to_dict()
    view = display.view(_panel(hands))
    grids = {"bead_plate": view["bead_plate"], "big_road": view["big_road"],
             **{g.name: g for g in view["derived"]}}
    widths = {"bead_plate": display.BEAD_COLUMNS, "big_road": display.BIG_ROAD_COLUMNS,
              **dict.fromkeys(DERIVED_ROADS, display.DERIVED_COLUMNS)}
    for name, grid in grids.items():
        drawn = sorted((dict(c) for row in grid.rows for c in row if c),
                       key=lambda c: (c["col"], c["row"]))
        last = max(c["col"] for c in expected[name])
        want = sorted((c for c in expected[name] if c["col"] > last - widths[name]),
                      key=lambda c: (c["col"], c["row"]))
        assert drawn == want, name
        assert grid.width == widths[name] and len(grid.rows) == 6
    c = roads.counts
    assert view["counts"] == {**c.to_dict(), "hands": c.banker + c.player + c.tie}
    assert view["shoe"] == 2 and view["cut_card"] is False
    assert view["last"] == {"winner": hands[-1].winner, "player_total": 3, "banker_total": 7,
                            "natural": hands[-1].natural, "round": 80}


def test_the_board_skips_voids_demonstrations_and_earlier_shoes_and_shows_no_article() -> None:
    void = {"round": 9, "status": "void", "demo": False, "winner": None, "shoe": 2,
            "article": "baccarat.art7.3", "player_cards": [], "banker_cards": []}
    demo = {"round": 10, "status": "complete", "demo": True, "winner": "player", "shoe": 2,
            "article": None, "player_cards": ["9S", "KH"], "banker_cards": ["2D", "3C"]}
    view = display.view(_panel([Hand("banker"), Hand("player")], extra=[void, demo]))
    assert view["last"] is not None and view["last"]["winner"] == "player"
    assert view["last"]["round"] == 2
    assert "art7" not in json.dumps(view, default=repr)  # a void's article is not the players'
    # a new shoe with no hand yet: nothing of the shoe before
    fresh = _panel([Hand("banker")], shoe=2)
    fresh["shoe"], fresh["roads"] = 3, Roads().to_dict()
    empty = display.view(fresh)
    assert empty["last"] is None and empty["counts"]["hands"] == 0 and empty["shoe"] == 3
    assert empty["ask"] == {side: dict.fromkeys(DERIVED_ROADS) for side in ("banker", "player")}


def test_the_cut_card_is_read_from_the_panels_shoe_count() -> None:
    assert display.view(_panel([], shoe_count={"cut_out": True, "cut_at": 380}))["cut_card"]
    assert not display.view(_panel([], shoe_count={"cut_out": False}))["cut_card"]
    assert not display.view(_panel([]))["cut_card"]  # a panel that counts no shoe


def test_the_craps_display_says_what_each_roll_did_and_marks_hot_and_cold_numbers() -> None:
    from tabled.games.craps import display as craps

    def roll(a: int, b: int, before: int | None) -> dict[str, Any]:
        return {"round": 1, "dice": [a, b], "total": a + b, "point_before": before,
                "point_after": None}

    assert [craps.kind(r) for r in (roll(3, 4, None), roll(5, 6, None), roll(1, 1, None),
                                    roll(2, 2, None), roll(2, 2, 4), roll(3, 4, 4),
                                    roll(5, 5, 4))] == [
        "natural", "natural", "craps", "point", "made", "seven-out", "roll"]
    # 40 rolls: twelve 4s (fair: 3.3) and no 7 (fair: 6.7); a no-roll and a void are not rolls
    rolls = [roll(2, 2, None)] * 12 + [roll(3, 3, None)] * 6 + [roll(4, 4, None)] * 6 + \
        [roll(4, 5, None)] * 8 + [roll(5, 5, None)] * 8
    rolls += [{"round": 99, "no_roll": True}, {"round": 100, "void": True,
                                               "article": "craps.art1"}]
    view = craps.view({"game": "craps", "point": 9, "rolls": rolls})
    marks = {t["total"]: t["mark"] for t in view["totals"]}
    assert view["window"] == 40 and view["point"] == 9
    assert marks[4] == "hot" and marks[7] == "cold"
    assert {t for t, m in marks.items() if m == "hot"} == {4, 9, 10}
    assert len(view["rolls"]) == craps.LAST_ROLLS and view["rolls"][0]["total"] == 10
    assert "art1" not in json.dumps(view)
    assert sum(t["count"] for t in view["totals"]) == 40
    empty = craps.view({"game": "craps", "point": None, "rolls": []})
    assert empty["rolls"] == [] and not any(t["mark"] for t in empty["totals"])


def test_the_cut_card_shows_from_the_shoes_cut_card_event_until_the_next_shoe() -> None:
    from tabled.games.baccarat.pit import BaccaratPanel

    panel = BaccaratPanel()
    if "shoe_count" not in panel.to_dict():
        pytest.skip("the panel counts no shoe yet (issue 29, the shoe's penetration)")
    panel.event({"type": "shoe_start", "decks": 8})
    assert display.view(panel.to_dict())["cut_card"] is False
    assert panel.event({"type": "cut_card"})
    assert display.view(panel.to_dict())["cut_card"] is True
    panel.event({"type": "shoe_start", "decks": 8})
    assert display.view(panel.to_dict())["cut_card"] is False


# -- the config ------------------------------------------------------------------------------------


def _config(tmp_path: Path, displays: list[dict[str, Any]], **web: Any) -> Any:
    return parse_config({
        "pit": {"id": "pit-test"},
        "mqtt": {"url": f"mqtt://127.0.0.1:{free_port()}", "reconnect_min": 0.1,
                 "reconnect_max": 0.5},
        "store": {"sqlite": str(tmp_path / "pit.sqlite")},
        "web": {"port": free_port(), **web},
        "users": [{"name": "sam", "role": "supervisor", "password_hash": HASHES["sam"]},
                  {"name": "vic", "role": "viewer", "password_hash": HASHES["vic"]}],
        "displays": displays})


@pytest.mark.parametrize(("entry", "key", "reason"), [
    ({"table": "lab/bac-1"}, "displays.0", "give token_file or token"),
    ({"table": "lab/bac-1", "token": TOKEN, "token_file": "/x"}, "displays.0", "one of them"),
    ({"table": "bac-1", "token": TOKEN}, "displays.0.table", "pattern"),
    ({"table": "lab/bac 1", "token": TOKEN}, "displays.0.table", "pattern"),
    ({"table": "lab/bac-1", "token": "short"}, "displays.0.token", "32 to 256"),
    ({"table": "lab/bac-1", "token": TOKEN + "/"}, "displays.0.token", "32 to 256"),
    ({"table": "lab/bac-1", "token": TOKEN, "language": "fr"}, "displays.0.language",
     "zh_Hant, en, pt"),
    ({"table": "lab/bac-1", "token": TOKEN, "colour": "red"}, "displays.0.colour", "Extra"),
])
def test_a_bad_display_is_named_by_its_key(tmp_path: Path, entry: dict[str, Any], key: str,
                                           reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, [entry])
    assert [k for k, _ in caught.value.errors] == [key]
    assert reason in caught.value.errors[0][1]
    assert TOKEN not in str(caught.value)  # a token is never repeated


def test_two_displays_never_share_a_token_and_a_token_is_not_in_the_repr(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, [{"table": "lab/bac-1", "token": TOKEN},
                           {"table": "lab/bac-2", "token": TOKEN}])
    assert caught.value.errors[0][0] == "displays"
    cfg = _config(tmp_path, [{"table": "lab/bac-1", "token": TOKEN},
                             {"table": "lab/bac-1", "token": OTHER, "language": "pt"}])
    assert [d.language for d in cfg.displays] == ["zh_Hant", "pt"]  # the floor's by default
    assert TOKEN not in repr(cfg)


def test_a_token_file_is_a_secret_checked_like_the_others(tmp_path: Path) -> None:
    path = tmp_path / "bac-1.token"
    path.write_text(TOKEN + "\n")
    os.chmod(path, 0o644)
    cfg = _config(tmp_path, [{"table": "lab/bac-1", "token_file": str(path)}])
    problems = check_secrets(cfg)
    assert [k for k, _ in problems] == ["displays.0.token_file"]
    with pytest.raises(DisplayTokenError, match=r"displays\.0\.token_file"):
        load_displays(cfg.displays)
    os.chmod(path, 0o600)
    assert check_secrets(cfg) == []
    assert load_displays(cfg.displays)[0].url == f"/display/lab/bac-1?token={TOKEN}"
    path.write_text("not a token\n")
    with pytest.raises(DisplayTokenError, match="does not hold a display token"):
        load_displays(cfg.displays)


# -- the routes ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def web(tmp_path: Path, displays: list[dict[str, Any]], **settings: Any
              ) -> AsyncIterator[tuple[PitService, httpx.AsyncClient]]:
    cfg = _config(tmp_path, displays, **settings)
    service = PitService(cfg)
    await service.start()
    app = PitWeb(service.web_port(), cfg.web, secrets.token_urlsafe(48))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app),
                                     base_url="http://pit.test") as client:
            await a_floor(service)
            yield service, client
    finally:
        await service.store.close()


THIRD = "display-token-" + "c" * 32
DISPLAYS = [{"table": "lab/bac-1", "token": TOKEN, "language": "en"},
            {"table": "lab/craps-1", "token": OTHER},
            {"table": "lab/qp-1", "token": THIRD, "language": "pt"}]


async def test_a_wrong_or_missing_token_is_403_alike_logged_and_counted(tmp_path: Path) -> None:
    async with web(tmp_path, DISPLAYS) as (_, client):
        with structlog.testing.capture_logs() as logs:
            answers = [await client.get(path) for path in (
                "/display/lab/bac-1", f"/display/lab/bac-1?token={OTHER}",  # craps-1's
                f"/display/lab/bac-1?token={TOKEN}x", f"/display/lab/nowhere?token={TOKEN}",
                "/display/lab/nowhere", f"/display/lab/bac-1/events?token={OTHER}")]
        assert [a.status_code for a in answers] == [403] * 6
        assert len({a.text for a in answers}) == 1  # the same, table or no table
        assert "bac-1" not in answers[0].text and "nowhere" not in answers[0].text
        refused = [e for e in logs if e["event"] == "display_refused"]
        assert [e["reason"] for e in refused] == ["no_token", "bad_token", "bad_token",
                                                  "bad_token", "no_token", "bad_token"]
        assert TOKEN not in json.dumps(logs) and OTHER not in json.dumps(logs)
        metrics = (await client.get("/metrics")).text
        assert 'pit_display_refused_total{reason="no_token"} 2.0' in metrics
        assert 'pit_display_refused_total{reason="bad_token"} 4.0' in metrics


async def test_the_display_shows_its_table_board_and_nothing_of_the_supervisors_page(
        tmp_path: Path) -> None:
    async with web(tmp_path, DISPLAYS) as (service, client):
        page = await client.get(f"/display/lab/bac-1?token={TOKEN}")
        assert page.status_code == 200
        html = page.text
        h = page.headers
        assert h["content-security-policy"].startswith("default-src 'self'; script-src 'self'")
        assert h["x-frame-options"] == "DENY" and h["cache-control"] == "no-store"
        assert 'lang="en"' in html and 'data-road-name="big_eye_boy"' in html
        assert 'data-count="banker"' in html and 'data-fact="hands"><i>Hands</i><b>3</b>' in html
        assert f'sse-connect="/display/lab/bac-1/events?token={TOKEN}"' in html
        # no inline style or script; nothing of the floor, the alerts, the other tables
        assert " style=" not in html and not re.search(r"<script(?![^>]*\bsrc=)", html)
        assert service.floor.alerts()  # the floor has alerts: none of them is here
        for absent in ("alert", "qp-1", "craps-1", "/table/", "/login", "logout", "csrf",
                       "shoe-1", "offline", "art11"):
            assert absent not in html, absent
        # a game with no display part (Q Poker): no board, nothing of its rounds
        other = await client.get(f"/display/lab/qp-1?token={THIRD}")
        assert other.status_code == 200 and 'lang="pt"' in other.text
        assert 'class="board-none"' in other.text and "qp-1" in other.text
        for absent in ("AS", "straight", "dealer", "art11", "void"):
            assert absent not in other.text.split("<body", 1)[1], absent
        # craps': the point and the rolls, newest first, in the floor's language by default
        dice = await client.get(f"/display/lab/craps-1?token={OTHER}")
        assert dice.status_code == 200 and 'lang="zh-Hant"' in dice.text
        thrown = re.findall(r'class="throw k-([a-z-]+)[^"]*" data-dice="(\d-\d)"', dice.text)
        assert thrown == [("natural", "6-5"), ("point", "2-2"), ("natural", "3-4")]
        assert 'class="puck off"' in dice.text  # the floor's rolls say no point after them
        css = await client.get("/static/display.css")
        assert css.status_code == 200 and ".board .bead" in css.text and "--u:" in css.text
        assert ".dice-board" in css.text


@pytest.mark.skipif(not isinstance(translations("zh_Hant"), gettext.GNUTranslations),
                    reason="the pit reads no catalogue yet (tabled.pit.i18n)")
async def test_a_display_speaks_its_configs_language(tmp_path: Path) -> None:
    async with web(tmp_path, DISPLAYS) as (_, client):
        dice = (await client.get(f"/display/lab/craps-1?token={OTHER}")).text
        assert "天然點" in dice and "最近 3 次擲骰" in dice  # zh_Hant, the floor's
        assert '<span class="display-game">花旗骰</span>' in dice  # the game's title too
        poker = (await client.get(f"/display/lab/qp-1?token={THIRD}")).text
        assert "Este jogo não tem marcador" in poker  # pt, as configured
        board = (await client.get(f"/display/lab/bac-1?token={TOKEN}")).text
        assert "Big road" in board and "大路" not in board  # en, whatever the browser


async def test_the_supervisors_tile_and_table_page_link_the_display(tmp_path: Path) -> None:
    async with web(tmp_path, DISPLAYS) as (_, client):
        await sign_in(client, "vic")
        link = f'href="/display/lab/bac-1?token={TOKEN}"'
        assert link in (await client.get("/")).text
        assert link in (await client.get("/table/lab/bac-1")).text
        assert "/display/" not in (await client.get("/table/lab/bac-2")).text
