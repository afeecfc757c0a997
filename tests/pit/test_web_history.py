"""The pit's history pages in a real browser, against a real floor (tests/pit/webfloor.py):

1. a table's history pages back past the last 10 rounds, every round from the record;
2. an earlier shoe of a baccarat table draws exactly what ``tabled roads`` computes from that
   shoe's events;
3. a craps table's rolls come by shooter, each turn ending in its seven-out, with the settled
   bets only (the open ones counted) and "Don't Pass" spelled so;
4. while a Q Poker round is open, the history shows no round without its outcome, and each
   round's dealer cards are those its outcome names;
5. a round a device fault came in shows it (and a void's article).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tabled.pit import i18n
from tests.integration.harness import Daemon, Simulator, write_config
from tests.pit.webfloor import (
    ENVELOPE,
    SITE,
    WEB_MARKS,
    Floor,
    _wait,
    browser,
    floor,
    screenshot,
    supervisor,
)

pytestmark = WEB_MARKS
__all__ = ["browser", "floor", "supervisor"]  # fixtures this module uses

#: A table of this module's own beside the floor's: a shoe dealing three whole shoes quickly
#: (the floor's tables deal one, or a shoe a minute), with a dirty sensor and an unreadable
#: card along the way (device faults mid-hand).
SHOES_TABLE = "bac-9"
SHOE_FAULTS = ("dirty@20", "unreadable@45")


@pytest.fixture(scope="module")
def shoes_table(floor: Floor) -> Iterator[str]:
    work = floor.work
    sim = Simulator(["shoe", "--seed", "21", "--decks", "6", "--shoes", "3", "--pace", "0.001",
                     *(x for f in SHOE_FAULTS for x in ("--fault", f)),
                     "--link", str(work / "shoe9"), "--forever"], work / "shoe9.log")
    daemon = None
    try:
        url = sim.start()
        daemon = Daemon(write_config(
            work / "bac9.toml", game="baccarat", table=SHOES_TABLE, site=SITE,
            journal=work / "bac9.sqlite", broker_url=floor.broker.url,
            devices=[{"id": "shoe-1", "family": "shoe", "url": url}]), work / "bac9.log")
        daemon.start()
        yield SHOES_TABLE
    finally:
        if daemon is not None and daemon.alive():
            daemon.stop()
        sim.stop()


def _rounds_shown(page: Any) -> list[int]:
    return [int(x) for x in page.eval_on_selector_all(
        "article.recall-round", "els => els.map(e => e.dataset.round)")]


def test_history_pages_back_past_the_last_ten_rounds(floor: Floor, supervisor: Any) -> None:
    _wait(lambda: len(floor.collector.on("bac-1", "outcome")) >= 35, 60, "35 hands at bac-1")
    page = supervisor
    page.goto(f"{floor.base_url}/table/{SITE}/bac-1")
    page.click("a.history-link")
    page.wait_for_selector("section.history")
    page.goto(f"{floor.base_url}/table/{SITE}/bac-1/history?size=10")
    top = _rounds_shown(page)
    assert len(top) == 10
    page.click("nav.pager a.older >> nth=0")
    page.wait_for_url("**before=*")
    page.click("nav.pager a.older >> nth=0")
    page.wait_for_url("**before=*")
    third = _rounds_shown(page)
    order = [b["round"] for _, b in floor.collector.on("bac-1", "outcome")]
    at = order.index(top[0])
    assert third == order[at - 29:at - 19][::-1]  # rounds 21 to 30 back, newest first
    first = page.locator("article.recall-round").first
    assert first.locator("tr[data-type='card'] .card").count() >= 4
    assert first.locator("table.settle tr").count() == 5
    page.click("nav.pager a.newer >> nth=0")
    page.wait_for_url("**after=*")
    assert _rounds_shown(page) == order[at - 19:at - 9][::-1]
    # straight to a round by number, and a query it cannot read is a clear 400
    page.goto(f"{floor.base_url}/table/{SITE}/bac-1/history?round={order[3]}&size=3")
    assert _rounds_shown(page) == order[1:4][::-1]
    response = page.goto(f"{floor.base_url}/table/{SITE}/bac-1/history?size=lots")
    assert response is not None and response.status == 400
    assert "size" in page.inner_text("main")


def _cells(page: Any) -> dict[str, Any]:
    return page.evaluate("""() => {
        const out = {};
        for (const td of document.querySelectorAll('.bac-history td[data-road]')) {
            const d = td.dataset;
            const cell = {col: +d.col, row: +d.row};
            if (d.winner !== undefined) { cell.winner = d.winner; cell.banker_pair = d.bp === '1';
                                          cell.player_pair = d.pp === '1'; }
            if (d.ties !== undefined) cell.ties = +d.ties;
            if (d.color !== undefined) cell.color = d.color;
            (out[d.road] = out[d.road] || []).push(cell);
        }
        const counts = {};
        for (const li of document.querySelectorAll('.bac-history [data-count]')) {
            counts[li.dataset.count] = +li.querySelector('b').textContent;
        }
        return {roads: out, counts};
    }""")


def test_an_earlier_shoe_draws_what_tabled_roads_computes(floor: Floor, supervisor: Any,
                                                          shoes_table: str) -> None:
    def shoes() -> list[str]:
        events = [{k: v for k, v in b.items() if k not in ENVELOPE}
                  for _, b in floor.collector.on(shoes_table, "event")]
        done = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "roads", "-"],
                              input="".join(json.dumps(e) + "\n" for e in events),
                              capture_output=True, text=True, check=True, timeout=60)
        return done.stdout.splitlines()

    lines = _wait(lambda: (found := shoes()) and len(found) >= 3 and found, 90,
                  "two whole shoes")
    expected = json.loads(lines[1])  # the second shoe: ended, and not the first one
    page = supervisor
    def listed() -> bool:
        page.goto(f"{floor.base_url}/table/{SITE}/{shoes_table}/history/segments")
        return bool(page.locator('tr[data-segment="3"]').count() == 1)

    _wait(listed, 30, "the pit's record of three shoes", interval=0.5)
    page.click('tr[data-segment="2"] a')
    page.wait_for_selector('section.segment[data-segment="2"]')
    drawn = _cells(page)

    def key(cell: dict[str, Any]) -> tuple[int, int]:
        return cell["col"], cell["row"]

    for road in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        assert sorted(drawn["roads"].get(road, []), key=key) \
            == sorted(expected[road], key=key), road
    assert {k: drawn["counts"][k] for k in expected["counts"]} == expected["counts"]
    assert page.locator("a.newer").count() == 1  # a later shoe exists
    screenshot(page, "history-shoe")


def test_craps_rolls_come_by_shooter_with_the_settled_bets(floor: Floor,
                                                           supervisor: Any) -> None:
    table = "craps-1"
    _wait(lambda: sum(1 for _, b in floor.collector.on(table, "outcome")
                      if b["status"] == "complete" and b["result"]["total"] == 7
                      and b["result"]["point_before"] is not None) >= 2, 60, "two seven-outs")
    page = supervisor
    page.goto(f"{floor.base_url}/table/{SITE}/{table}/history?size=100")
    shooters = page.locator(".craps-history .shooter")
    assert shooters.count() >= 2
    rolls = {b["round"]: b for _, b in floor.collector.on(table, "outcome")}
    ended = page.locator('.craps-history .shooter[data-ended="1"]')
    assert ended.count() >= 1
    for i in range(ended.count()):
        last = int(ended.nth(i).get_attribute("data-last"))
        assert rolls[last]["result"]["total"] == 7 and rolls[last]["result"]["point_before"]
    assert page.locator('.craps-history .r-open').count() == 0
    assert page.locator("article.recall-round table.settle .r-open").count() == 0
    assert page.locator("article.recall-round tr.open-bets").count() >= 1
    assert "Don't Pass" in page.inner_text("main")
    assert "dont pass" not in page.inner_text("main").lower()
    screenshot(page, "history-craps")


def test_no_qpoker_round_shows_before_its_outcome(floor: Floor, supervisor: Any) -> None:
    console = floor.console
    _wait(lambda: len(floor.collector.on("qp-1", "outcome")) >= 3, 60, "three Q Poker rounds")
    page = supervisor
    console.hold.set()
    try:
        _wait(console.holding.is_set, 30, "a Q Poker round dealt and held open")
        time.sleep(0.5)
        settled = {b["round"]: b for _, b in floor.collector.on("qp-1", "outcome")}
        open_round = max(settled) + 1
        page.goto(f"{floor.base_url}/table/{SITE}/qp-1/history?size=50")
        html = page.content()
        shown = page.eval_on_selector_all(
            ".qhist", "els => els.map(e => [+e.dataset.round, "
                      "e.querySelector('.dealer').dataset.dealerCards])")
    finally:
        console.release()
    assert shown and f'data-round="{open_round}"' not in html
    for number, dealer in shown:
        assert number < open_round
        assert dealer == " ".join(settled[number]["result"]["dealer"]["cards"])


def test_a_round_shows_the_fault_that_touched_it(floor: Floor, supervisor: Any,
                                                  shoes_table: str) -> None:
    faults = _wait(lambda: len(found := floor.collector.on(shoes_table, "fault")) >= 2
                   and found, 30, "the shoe's two faults")
    outcomes = floor.collector.on(shoes_table, "outcome")
    page = supervisor
    for at, fault in faults[:2]:
        # the round it touched: the first whose outcome came after it
        touched = next(b for t, b in outcomes if t >= at)
        page.goto(f"{floor.base_url}/table/{SITE}/{shoes_table}/history"
                  f"?round={touched['round']}&size=2")
        article = page.locator(f'article.recall-round[data-round="{touched["round"]}"]')
        assert int(article.get_attribute("data-faults")) >= 1, fault
        assert article.locator(f'li.fault[data-code="{fault["code"]}"]').count() == 1
        if touched["status"] == "void":  # its article, as the page names it (English here)
            assert i18n.article(touched["article"], "en") in article.inner_text()
    screenshot(page, "history-fault")
