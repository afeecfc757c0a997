"""The hand in progress and the shoe on the pit's page, in a real browser against the real floor
(tests/pit/webfloor.py), and the page's smaller fixes of issue 29.

In order:

1. a baccarat tile shows the cards of the hand being dealt as they arrive, in the order the
   table published them, and drops them when the hand's outcome arrives; its penetration bar
   moves with the shoe's own card count; the round count says over how many minutes;
2. the table page shows the same hand, larger;
3. while a Q Poker round is open, neither its tile nor its table page shows a card of it;
4. the header at 768 px does not overflow;
5. a long table id ends in an ellipsis inside its tile, its game badge stays in the tile, and
   a round of one seat says "1 seat";
6. the cut card, once out, shows where it came out (bac-2 deals short shoes here: its cut card
   330 cards from the end comes out every ~80 cards, ~10 s, instead of once in ~50 s).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import Any

from tests.pit.webfloor import (
    IMAGES,
    SITE,
    WEB_MARKS,
    Floor,
    _wait,
    browser,
    floor,
    live,
    screenshot,
    sign_in,
    supervisor,
)

pytestmark = WEB_MARKS
__all__ = ["browser", "floor", "supervisor"]  # fixtures this module uses
#: bac-2's shoe with its cut card early (the rules and the tile are the same wherever it lies)
SIM_EXTRA = {"bac-2": ["--cut-card", "330"]}

LONG_ID = "vip-salon-macau-east-wing-baccarat-table-0042"
SHOWN = """sel => { const t = document.querySelector(sel); if (!t) return null;
  const ip = t.querySelector('[data-in-play]'), pen = t.querySelector('.shoe-pen');
  const fill = t.querySelector('.pen-fill');
  return {round: ip ? ip.dataset.inPlay : null, order: ip ? ip.dataset.order : null,
          missing: ip ? ip.dataset.missing : null,
          out: pen ? +pen.dataset.out : null, percent: pen ? pen.dataset.percent : null,
          cards: pen ? pen.dataset.cards : null,
          fill: fill ? fill.getAttribute('width') : null}; }"""


def cards_of(floor: Floor, table: str) -> dict[int, list[str]]:
    """Each round's cards as the table published them, in its order."""
    rounds: dict[int, list[str]] = {}
    for _, body in floor.collector.on(table, "event"):
        if body.get("type") == "card" and isinstance(body.get("round"), int):
            rounds.setdefault(body["round"], []).append(body["card"])
    return rounds


def test_a_tile_shows_the_hand_being_dealt_card_by_card(floor: Floor, supervisor: Any) -> None:
    page = supervisor
    page.goto(floor.base_url + "/")
    live(page)
    sel = 'article.tile[data-table="bac-3"]'
    page.wait_for_selector(f"{sel} .shoe-pen", timeout=30_000)
    page.evaluate("sel => document.querySelector(sel).scrollIntoView()", sel)
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 9
    while time.monotonic() < deadline:
        shown = page.evaluate(SHOWN, sel)
        if shown:
            shown["t"] = round(time.time(), 3)
        if shown and (not seen or {**shown, "t": 0} != {**seen[-1], "t": 0}):
            seen.append(shown)
        time.sleep(0.03)
    published = cards_of(floor, "bac-3")
    settled = {b["round"] for _, b in floor.collector.on("bac-3", "outcome")}
    by_round: dict[int, list[list[str]]] = {}
    # a hand a card of which did not reach the pit live (a loaded machine's broker: the pit
    # fetches it from the table's journal) says so, and shows no sides: not compared here
    flagged = {int(s["round"]) for s in seen if s["round"] and s["missing"] == "1"}
    for s in seen:
        if s["round"] and int(s["round"]) not in flagged:
            by_round.setdefault(int(s["round"]), []).append(s["order"].split())
    # every hand shown is the table's own cards so far, in the order dealt; hands grew one
    # card at a time on the page
    for rnd, orders in by_round.items():
        for order in orders:
            assert order == published[rnd][:len(order)], (rnd, order, published.get(rnd),
                                                          orders)
    grown = [rnd for rnd, orders in by_round.items()
             if any(len(b) == len(a) + 1 for a, b in itertools.pairwise(orders))]
    assert len(grown) >= 2, by_round
    # a settled hand left the tile: the next one, or nothing, took its place
    done = [rnd for rnd in by_round if rnd in settled]
    assert done, (by_round, settled)
    last = seen[-1]
    assert not last["round"] or int(last["round"]) not in settled or \
        int(last["round"]) == max(by_round)
    # the penetration moved with the shoe, and the bar is as long as the percentage says
    outs = [s["out"] for s in seen]
    assert outs == sorted(outs) and outs[-1] > outs[0]
    for s in seen:
        assert s["cards"] == "416"
        assert s["percent"] == str(round(s["out"] * 100 / 416)) == s["fill"]
    numbers = [b["card_no"] for _, b in floor.collector.on("bac-3", "event")
               if isinstance(b.get("card_no"), int)]
    out = page.evaluate(SHOWN, sel)["out"]
    assert 0 <= max(numbers) - out <= 3  # the shoe's own count, a card or two behind at most
    rph = page.locator(f"{sel} .rph")
    assert int(rph.get_attribute("data-minutes")) < 60 and " in " in rph.inner_text()
    screenshot(page, "inplay-tile")
    assert not page.errors, page.errors


def test_the_table_page_shows_the_hand_larger(floor: Floor, supervisor: Any) -> None:
    page = supervisor
    page.goto(f"{floor.base_url}/table/{SITE}/bac-3")
    live(page)
    # read in one step: the live page swaps the panel as each card comes
    shown = _wait(lambda: page.evaluate("""() => {
        const ip = document.querySelector('.bac-live.big [data-in-play]');
        return ip && ip.dataset.inPlay ? [+ip.dataset.inPlay, ip.dataset.order] : null; }"""),
                  10, "a hand in progress on the table page")
    rnd, order = shown[0], shown[1].split()
    assert order and order == cards_of(floor, "bac-3")[rnd][:len(order)]
    assert page.locator(".bac-live.big .shoe-pen .pen-fill").count() == 1
    screenshot(page, "inplay-table", height=900)


def test_no_card_of_an_open_qpoker_round_is_on_the_page(floor: Floor, browser: Any) -> None:
    console = floor.console
    _wait(lambda: len(floor.collector.on("qp-1", "outcome")) >= 2, 60, "two Q Poker rounds")
    page = sign_in(browser, floor, "sam")
    page.goto(f"{floor.base_url}/")
    live(page)
    console.hold.set()
    try:
        _wait(console.holding.is_set, 30, "a Q Poker round dealt and held open")
        time.sleep(0.5)  # what the table published of the open round has reached the page
        settled = {b["round"] for _, b in floor.collector.on("qp-1", "outcome")}
        open_round = max(settled) + 1
        published = [b for _, b in floor.collector.on("qp-1", "event")
                     if b.get("round") == open_round]
        tile = page.locator('article.tile[data-table="qp-1"]')
        tile_cards = tile.evaluate("t => t.querySelectorAll('[data-card]').length")
        tile_inplay = tile.evaluate("t => t.querySelectorAll('[data-in-play]').length")
        page.goto(f"{floor.base_url}/table/{SITE}/qp-1")
        live(page)
        time.sleep(0.3)
        rounds_shown = page.evaluate(
            "() => [...document.querySelectorAll('[data-round]')].map(e => +e.dataset.round)")
        inplay = page.locator("[data-in-play]").count()
    finally:
        console.release()
    assert published  # the open round's deal was on the table's stream meanwhile
    assert (tile_cards, tile_inplay, inplay) == (0, 0, 0)
    assert rounds_shown and all(r in settled for r in rounds_shown), (open_round, rounds_shown)
    page.context.close()


def test_the_header_at_768_px_does_not_overflow(floor: Floor, browser: Any) -> None:
    page = sign_in(browser, floor, "sam")
    try:
        page.set_viewport_size({"width": 768, "height": 900})
        for path in ("/", f"/table/{SITE}/bac-2", "/alerts"):
            page.goto(floor.base_url + path, wait_until="domcontentloaded")
            page.wait_for_selector("header.top #summary")
            sizes = page.evaluate("""() => { const h = document.querySelector('header.top');
                // an item whose words wrap onto two lines is cramped: a box of its text
                // starts below the bottom of the line before (boxes of one line overlap)
                const lines = e => { const r = document.createRange(); r.selectNodeContents(e);
                  const boxes = [...r.getClientRects()].filter(b => b.width > 0)
                    .sort((a, b) => a.top - b.top);
                  let n = boxes.length ? 1 : 0, bottom = boxes.length ? boxes[0].bottom : 0;
                  for (const b of boxes) {
                    if (b.top >= bottom - 1) { n += 1; bottom = b.bottom; }
                    else { bottom = Math.max(bottom, b.bottom); } }
                  return n; };
                const items = [...h.querySelectorAll(
                  '.brand, nav a, .summary > span, #live, .who .user, .who button')];
                return {scroll: h.scrollWidth, client: h.clientWidth,
                        right: Math.max(...[...h.children].map(
                            c => c.getBoundingClientRect().right)),
                        page: document.documentElement.clientWidth,
                        wrapped: items.filter(e => lines(e) > 1).map(e => e.textContent)}; }""")
            assert sizes["client"] <= 768
            assert sizes["scroll"] <= sizes["client"], (path, sizes)
            assert sizes["right"] <= sizes["page"], (path, sizes)
            assert sizes["wrapped"] == [], (path, sizes)
    finally:
        page.context.close()


def test_a_long_table_id_stays_in_its_tile_and_one_seat_is_singular(floor: Floor,
                                                                   supervisor: Any) -> None:
    import paho.mqtt.client as mqtt

    base = f"tabled/{SITE}/{LONG_ID}"
    birth = {"version": "0.1.0", "site": SITE, "table": LONG_ID, "game": "qpoker",
             "options": {}, "started_at": "2026-12-04T10:00:00.000Z", "pid": 1,
             "commands": False, "state": "online", "ts": "2026-12-04T10:00:00.000Z",
             "devices": [{"id": "shuffler-1", "family": "shuffler"}], "table_seq": 0}
    outcome = {"v": 2, "type": "outcome", "game": "qpoker", "round": 1, "status": "complete",
               "result": {"dealer": {"cards": ["KS", "KH", "4D"], "hand": "pair",
                                     "qualifies": True},
                          "seats": {"1": {"cards": ["2S", "2H", "9C"], "hand": "pair",
                                          "status": "active"}}},
               "bets": {"1": {"dobo": {"result": "lose"}, "play": {"result": "lose"}}},
               "ts": "2026-12-04T10:00:05.000Z", "table_seq": 0}
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="web-inplay-long")
    client.connect("127.0.0.1", floor.broker.port)
    client.loop_start()
    try:
        client.publish(f"{base}/status", json.dumps(birth), qos=1, retain=True).wait_for_publish(5)
        client.publish(f"{base}/outcome", json.dumps(outcome), qos=1).wait_for_publish(5)
    finally:
        client.loop_stop()
        client.disconnect()
    page = supervisor
    page.goto(floor.base_url + "/")
    live(page)
    sel = f'article.tile[data-table="{LONG_ID}"]'
    page.wait_for_selector(f'{sel}[data-last-round="1"]', timeout=10_000)
    page.evaluate("sel => document.querySelector(sel).scrollIntoView()", sel)
    box = page.evaluate("""sel => { const t = document.querySelector(sel);
        const r = e => t.querySelector(e).getBoundingClientRect();
        const name = t.querySelector('.name');
        return {tile: t.getBoundingClientRect().right, game: r('.game').right,
                gameLeft: r('.game').left, tileLeft: t.getBoundingClientRect().left,
                cut: name.scrollWidth > name.clientWidth, title: name.title}; }""", sel)
    assert box["tileLeft"] < box["gameLeft"] and box["game"] <= box["tile"], box
    assert box["cut"] and box["title"] == LONG_ID, box
    line = page.locator(f"{sel} .last .line").inner_text()
    assert line.endswith(", 1 seat"), line


def test_the_cut_card_shows_where_it_came_out(floor: Floor, supervisor: Any) -> None:
    """The cut card is out for the shoe's last hand (Art. 3): the tile shows it then, with
    the card it came out after; the next shoe starts a new count."""
    page = supervisor
    page.goto(floor.base_url + "/")
    live(page)
    sel = 'article.tile[data-table="bac-2"]'
    page.evaluate("sel => document.querySelector(sel).scrollIntoView()", sel)
    shown = _wait(lambda: page.evaluate("""sel => { const t = document.querySelector(sel);
        const out = t && t.querySelector('.cut.out');
        const r = t && t.getBoundingClientRect();
        return out ? {at: t.querySelector('.shoe-pen').dataset.cutAt, text: out.textContent,
                      mark: t.querySelectorAll('.pen-cut').length,
                      box: {x: r.x, y: r.y, width: r.width, height: r.height}} : null; }""",
                                        sel),
                  80, "bac-2's cut card on its tile", interval=0.03)
    if os.environ.get("TABLED_SCREENSHOTS") == "1":  # at once: the cut card is out one hand
        # the page as it is (an element's screenshot waits for it to stand still: the live
        # tile is swapped at every card)
        page.screenshot(path=str(IMAGES / "pit-inplay-cut.png"), clip=shown["box"])
    # the latest cut card the table published (under load, the page may be seen in its
    # second shoe)
    cut = [b for _, b in floor.collector.on("bac-2", "event") if b.get("type") == "cut_card"][-1]
    assert shown["at"] == str(cut["card_no"]) and str(cut["card_no"]) in shown["text"]
    assert shown["mark"] == 1
