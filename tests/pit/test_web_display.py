"""The tables' scoreboard displays in a real browser, against a real floor (tests/pit/webfloor.py):
the display of the known shoe draws exactly the cells, counts and ask road that ``tabled roads``
computes from the same stream; a display updates live without sign-in; a wrong token is 403;
nothing of the supervisor's page (alerts, other tables, links) is on a display; the supervisor's
tile links to its table's display.

With ``TABLED_SCREENSHOTS=1`` it saves ``docs/images/pit-display-baccarat.png`` (English),
``pit-display-baccarat-zh_Hant.png`` and ``pit-display-craps.png`` at 1920x1080, the screen
beside a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.pit.webfloor import (
    ENVELOPE,
    IMAGES,
    READ_BOARD,
    SHOE_HANDS,
    SITE,
    WEB_MARKS,
    Floor,
    _wait,
    browser,
    floor,
    live,
    supervisor,
)

pytestmark = WEB_MARKS
__all__ = ["browser", "floor", "supervisor"]  # fixtures this module uses

TOKENS = {"bac-1": "bac1-display-" + "k" * 40, "bac-2": "bac2-display-" + "q" * 40,
          "craps-1": "craps1-display-" + "d" * 40}
PIT_CONFIG_EXTRA = [
    "[[displays]]", f'table = "{SITE}/bac-1"', f'token = "{TOKENS["bac-1"]}"', 'language = "en"',
    "", "[[displays]]", f'table = "{SITE}/bac-2"', f'token = "{TOKENS["bac-2"]}"',
    "", "[[displays]]", f'table = "{SITE}/craps-1"', f'token = "{TOKENS["craps-1"]}"',
    'language = "en"',
]
SCREEN = {"width": 1920, "height": 1080}


def url(floor: Floor, table: str, token: str | None = None) -> str:
    given = TOKENS[table] if token is None else token
    return f"{floor.base_url}/display/{SITE}/{table}?token={given}"


def screen(browser: Any) -> Any:
    """A page in a context of its own: no cookie, no sign-in, the size of the screen."""
    page = browser.new_context(viewport=SCREEN).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    return page


def hands_shown(page: Any) -> int:
    return int(page.locator('[data-fact="hands"] b').inner_text())


def test_the_display_draws_exactly_what_tabled_roads_computes(floor: Floor,
                                                               browser: Any) -> None:
    _wait(lambda: len(floor.collector.on("bac-1", "outcome")) >= SHOE_HANDS, 90,
          f"the shoe's {SHOE_HANDS} hands")
    events = [{k: v for k, v in body.items() if k not in ENVELOPE}
              for _, body in floor.collector.on("bac-1", "event")]
    roads = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "roads", "-"],
                           input="".join(json.dumps(e) + "\n" for e in events),
                           capture_output=True, text=True, check=True, timeout=60)
    expected = json.loads(roads.stdout.splitlines()[-1])  # the shoe on the table now
    hands = sum(expected["counts"][k] for k in ("banker", "player", "tie"))
    assert hands >= SHOE_HANDS - 5 and expected["cockroach_pig"], expected["counts"]

    page = screen(browser)
    response = page.goto(url(floor, "bac-1"))
    assert response.status == 200 and "/login" not in page.url  # no sign-in
    live(page)
    page.wait_for_selector(f'[data-fact="hands"] b:text-is("{hands}")', timeout=10_000)
    drawn = page.evaluate(READ_BOARD)
    for road in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        first = drawn["roads"][road]["first"]
        want = sorted((c for c in expected[road] if c["col"] >= first),
                      key=lambda c: (c["col"], c["row"]))
        got = sorted(drawn["roads"][road]["cells"], key=lambda c: (c["col"], c["row"]))
        assert got == want, road
        assert first == 0 or len(want) < len(expected[road])
    assert drawn["counts"] == expected["counts"]
    assert drawn["ask"] == expected["ask"]
    # the board fills the screen and no more: legible from three metres, nothing scrolls
    size = page.evaluate("() => [document.documentElement.scrollWidth, "
                         "document.documentElement.scrollHeight, "
                         "document.querySelector('td[data-road=big_road]').offsetWidth]")
    assert size[0] <= SCREEN["width"] and size[1] <= SCREEN["height"], size
    assert size[2] >= 48, size  # a big-road cell, px
    assert page.errors == []
    if os.environ.get("TABLED_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(300)
        page.screenshot(path=str(IMAGES / "pit-display-baccarat.png"))
    page.context.close()


def test_a_display_updates_live_and_shows_nothing_of_the_supervisors_page(
        floor: Floor, browser: Any) -> None:
    page = screen(browser)
    page.goto(url(floor, "bac-2"))
    live(page)
    assert page.locator("html").get_attribute("lang") == "zh-Hant"  # its config's language
    page.wait_for_selector('[data-fact="hands"]', timeout=30_000)
    before = hands_shown(page)
    # the table plays on: the board follows without a reload
    _wait(lambda: hands_shown(page) >= before + 2, 30, "two more hands on the display")
    assert page.evaluate("() => document.documentElement.hasAttribute('data-last-update')")
    html = page.content()
    for absent in ("alerts-panel", "alert", "bac-1", "bac-3", "qp-1", "craps-1", "/table/",
                   "/login", "csrftoken", "shoe-1"):
        assert absent not in html, absent
    assert page.locator("a").count() == 0  # a display links nowhere
    assert page.errors == []
    if os.environ.get("TABLED_SCREENSHOTS") == "1":
        page.screenshot(path=str(IMAGES / "pit-display-baccarat-zh_Hant.png"))
    page.context.close()


def test_the_craps_display_shows_the_tables_last_rolls_live(floor: Floor,
                                                            browser: Any) -> None:
    page = screen(browser)
    page.goto(url(floor, "craps-1"))
    live(page)
    page.wait_for_selector(".throw[data-dice]", timeout=30_000)
    first = page.locator(".throw.newest").get_attribute("data-dice")

    def drawn() -> list[str]:
        return [str(d) for d in page.evaluate(
            "() => [...document.querySelectorAll('.throw[data-dice]')].map(e => e.dataset.dice)")]

    # the dice roll on: the newest roll changes without a reload
    _wait(lambda: page.locator(".throw.newest").get_attribute("data-dice") != first
          or (len(drawn()) >= 20 and drawn()[0] != first), 30, "a new roll on the display")
    shown = drawn()
    thrown = [f"{b['result']['dice'][0]}-{b['result']['dice'][1]}"
              for _, b in floor.collector.on("craps-1", "outcome")
              if b.get("status") == "complete" and not b.get("no_roll")
              and (b.get("result") or {}).get("dice")]
    newest_first = list(reversed(thrown))
    # the display's rolls are a run of the table's rolls, newest first
    assert any(newest_first[i:i + len(shown)] == shown for i in range(len(newest_first))), (
        shown, newest_first[:25])
    for total in page.locator(".num[data-mark=hot]").all():
        assert int(total.get_attribute("data-count")) > 0
    assert page.errors == []
    if os.environ.get("TABLED_SCREENSHOTS") == "1":
        _wait(lambda: len(drawn()) >= 14, 30, "rolls enough for the picture")
        page.screenshot(path=str(IMAGES / "pit-display-craps.png"))
    page.context.close()


def test_a_wrong_token_is_403_for_any_table(floor: Floor, browser: Any) -> None:
    page = screen(browser)
    for table, token in (("bac-1", TOKENS["bac-2"]), ("bac-1", ""), ("bac-1", "x" * 40)):
        response = page.goto(url(floor, table, token))
        assert response.status == 403 and "bac-" not in page.content()
    nowhere = page.goto(f"{floor.base_url}/display/{SITE}/nowhere?token={TOKENS['bac-1']}")
    assert nowhere.status == 403
    events = page.goto(f"{floor.base_url}/display/{SITE}/bac-2/events?token=nope")
    assert events.status == 403
    page.context.close()
    assert '"display_refused"' in floor.pit_log() or "display_refused" in (
        floor.work / "pit.log").read_text(errors="replace")


def test_the_supervisors_tile_links_its_tables_display(floor: Floor, supervisor: Any) -> None:
    page = supervisor
    page.goto(floor.base_url + "/")
    live(page)
    link = page.locator('article.tile[data-table="bac-1"] a.display-link')
    link.wait_for(timeout=30_000)
    assert link.get_attribute("href") == f"/display/{SITE}/bac-1?token={TOKENS['bac-1']}"
    assert page.locator('article.tile[data-table="qp-1"] a.display-link').count() == 0
    assert page.locator('article.tile[data-table="bac-3"] a.display-link').count() == 0
