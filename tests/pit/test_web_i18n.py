"""The pit's page in 繁體中文, Português and English, in a real browser against a real floor
(tests/pit/webfloor.py): the floor, a table, recall and the alerts in each language; the
choice (``?lang=``, the header's links) remembered across pages in its cookie; the browser's
``Accept-Language`` when nothing was chosen, else ``[web] language``; the live stream's
fragments in the page's language; no English msgid left in the 繁體中文 pages' visible text.

With ``TABLED_SCREENSHOTS=1``: docs/images/pit-zh_Hant-floor.png and pit-pt-floor.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tabled.pit import i18n
from tests.pit.test_i18n import catalogue, extracted
from tests.pit.webfloor import (
    PASSWORDS,
    WEB_MARKS,
    Floor,
    _wait,
    browser,
    floor,
    live,
    screenshot,
)

pytestmark = WEB_MARKS
__all__ = ["browser", "floor"]  # fixtures this module uses

ROOT = Path(__file__).resolve().parents[2]
#: Two displays, each in its own language (a display takes the config's, never the viewer's).
DISPLAY_TOKENS = {"bac-1": "z" * 40, "bac-2": "p" * 40}
PIT_CONFIG_EXTRA = ["[[displays]]", 'table = "lab/bac-1"', f'token = "{DISPLAY_TOKENS["bac-1"]}"',
                    'language = "zh_Hant"', "", "[[displays]]", 'table = "lab/bac-2"',
                    f'token = "{DISPLAY_TOKENS["bac-2"]}"', 'language = "pt"']
#: What a page shows as the record has it (alert messages, notes, the tile's outcome line,
#: the daemon's option names), left out of the "no English" check.
RECORD = ".pa-msg, .msg, .note, pre, .line, .options dt, .languages, .brand, [data-device]"


def english_left(page: Any, language: str = "zh_Hant") -> list[str]:
    """The converted strings (the catalogue's msgids whose translation differs: a phrase or a
    capitalised word) still in the page's visible text, the record's own text left out."""
    text = page.evaluate("""sel => {
        const body = document.body.cloneNode(true);
        body.querySelectorAll(sel).forEach(e => e.remove());
        body.querySelectorAll('title, script, style').forEach(e => e.remove());
        return body.innerText; }""", RECORD)
    translated = catalogue(language)
    left = []
    for msgid in ENGLISH:
        if translated.get(msgid) in (msgid, None):
            continue
        literal = [p.strip() for p in re.split(r"%\(\w+\)s", msgid) if len(p.strip()) > 3]
        for part in literal or ([msgid] if "%" not in msgid else []):
            if part in translated[msgid]:
                continue  # the translation keeps the word (Portuguese "natural")
            if re.search(rf"(?<![A-Za-z]){re.escape(part)}(?![A-Za-z])", text):
                left.append(part)
    return left


ENGLISH = sorted(m for m in extracted(ROOT)
                 if len(m) > 3 and (" " in m or m[0].isupper()))


def signed_in(browser: Any, floor: Floor, locale: str, first: str) -> Any:
    """A new browser (its ``Accept-Language`` from ``locale``) signed in as the supervisor
    through the sign-in page at ``first``."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, locale=locale)
    page = context.new_page()
    page.goto(floor.base_url + first)
    page.fill("input[name=name]", "sam")
    page.fill("input[name=password]", PASSWORDS["sam"])
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(re.escape(floor.base_url) + r"/(\?.*)?$"))
    return page


def lang(page: Any) -> str:
    return str(page.locator("html").get_attribute("lang"))


def test_the_floor_a_table_recall_and_the_alerts_in_chinese(browser: Any, floor: Floor) -> None:
    page = signed_in(browser, floor, "en-US", "/login?lang=zh_Hant")
    assert lang(page) == "zh-Hant"
    live(page)
    for table in ("bac-1", "craps-1", "qp-1"):
        page.wait_for_selector(f'article.tile[data-table="{table}"][data-state="online"] .last '
                               ".line", timeout=30_000)
    assert page.locator("#live").text_content() == "即時"  # the page script's label too
    assert "百家樂" in page.locator('article.tile[data-table="bac-1"] .game').text_content()
    header = page.locator("header.top").text_content()
    assert "樓面" in header and "警報" in header and "登出" in header and "主管" in header
    assert "張賭枱" in page.locator("#summary").text_content()
    tile = page.locator('article.tile[data-table="craps-1"]')
    # the rate of rounds: "n 局（m 分鐘內）" in a table's first hour, then per hour
    assert "在線" in tile.inner_text() and "分鐘內" in tile.inner_text()
    # how long ago, written by the server and kept current by the page's script, in Chinese
    since = page.locator('article.tile[data-table="craps-1"] [data-ago]').first
    assert re.fullmatch(r"\d+秒|\d+分\d\d秒", since.inner_text()), since.inner_text()
    page.wait_for_timeout(1_100)  # a tick of the script
    assert re.fullmatch(r"\d+秒|\d+分\d\d秒", since.inner_text()), since.inner_text()
    # a live update arrives in the page's language (the stream's fragments are rendered in it)
    before = tile.get_attribute("data-last-round")
    _wait(lambda: page.locator('article.tile[data-table="craps-1"]')
          .get_attribute("data-last-round") != before, 20, "a new roll on the tile")
    swapped = page.locator('article.tile[data-table="craps-1"]').inner_text()
    assert "在線" in swapped and "分鐘內" in swapped and "rounds in" not in swapped
    assert re.search(r"#\d+ (\d-\d = \d+，點數 (關|\d+)|無效擲骰)", swapped), swapped
    assert re.search(r"#\d+ (莊贏|閒贏|和) \d-\d|示範局|無效", page.locator(
        'article.tile[data-table="bac-1"] .line').inner_text())
    assert english_left(page) == []
    screenshot(page, "zh_Hant-floor")

    page.goto(floor.base_url + "/table/lab/bac-1")  # no ?lang=: the cookie remembers
    assert lang(page) == "zh-Hant"
    page.wait_for_selector("section.baccarat figure.road-big_road")
    text = page.locator("main").text_content()
    for word in ("大路", "珠盤路", "大眼仔", "小路", "曱甴路", "莊對", "閒對", "法定選項"):
        assert word in text, word
    assert english_left(page) == []

    page.goto(floor.base_url + "/table/lab/craps-1")
    page.wait_for_selector("section.craps")
    assert "最近" in page.locator("main").text_content()
    assert english_left(page) == []

    page.goto(floor.base_url + "/table/lab/qp-1/recall")
    page.wait_for_selector("article.recall-round")
    text = page.locator("main").text_content()
    assert "牌局重溫" in text and "結算" in text and "莊荷" in text
    assert english_left(page) == []

    page.goto(floor.base_url + "/alerts?state=all")
    text = page.locator("main").text_content()
    assert "警報" in text and "最新操作" in text
    assert english_left(page) == []
    cookie = {c["name"]: c for c in page.context.cookies()}["pit_lang"]
    assert cookie["value"] == "zh_Hant" and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    page.context.close()


def test_the_language_links_and_portuguese_then_english(browser: Any, floor: Floor) -> None:
    page = signed_in(browser, floor, "en-US", "/login?lang=zh_Hant")
    page.click('nav.languages a[data-lang="pt"]')
    page.wait_for_url(re.compile(r"[?&]lang=pt"))
    assert lang(page) == "pt"
    assert page.locator('nav.languages a.here').get_attribute("data-lang") == "pt"
    page.goto(floor.base_url + "/")
    live(page)
    page.wait_for_selector('article.tile[data-table="bac-1"] .last .line', timeout=30_000)
    assert "mesas" in page.locator("#summary").text_content()
    assert "Alertas" in page.locator("header.top").text_content()
    screenshot(page, "pt-floor")
    page.goto(floor.base_url + "/table/lab/bac-1")
    page.wait_for_selector("section.baccarat")
    text = page.locator("main").text_content()
    assert "Estrada grande" in text and "Banca" in text and "Opções regulamentadas" in text
    page.goto(floor.base_url + "/table/lab/bac-1/recall")
    page.wait_for_selector("article.recall-round")
    assert "Liquidação" in page.locator("main").text_content()
    page.goto(floor.base_url + "/alerts")
    assert "Últimas ações" in page.locator("main").text_content()

    page.click('nav.languages a[data-lang="en"]')  # the same page, in English
    page.wait_for_url(re.compile(r"/alerts\?(.*&)?lang=en"))
    assert lang(page) == "en" and "Latest actions" in page.locator("main").text_content()
    page.goto(floor.base_url + "/table/lab/bac-1")
    page.wait_for_selector("section.baccarat")
    assert "Big road" in page.locator("main").text_content()
    page.goto(floor.base_url + "/table/lab/bac-1/recall")
    assert "Settlement" in page.locator("main").text_content()
    page.goto(floor.base_url + "/")
    assert lang(page) == "en" and "tables" in page.locator("#summary").text_content()
    assert "Baccarat" in page.locator('article.tile[data-table="bac-1"] .game').text_content()
    page.context.close()


def test_without_a_choice_the_browsers_language_then_the_configs(browser: Any,
                                                                floor: Floor) -> None:
    for locale, word, tag in (("pt-PT", "Entrar", "pt"), ("zh-TW", "登入", "zh-Hant"),
                              ("en-GB", "Sign in", "en"), ("de-DE", "登入", "zh-Hant")):
        context = browser.new_context(locale=locale)
        page = context.new_page()
        page.goto(floor.base_url + "/")  # to sign-in
        assert "/login" in page.url
        assert lang(page) == tag, locale
        assert word in page.locator("main h1").inner_text(), locale
        assert not [c for c in context.cookies() if c["name"] == "pit_lang"]  # nothing chosen
        context.close()
    assert i18n.DEFAULT == "zh_Hant"  # [web] language's default, which de-DE got


def test_every_view_the_shift_added_in_each_language(browser: Any, floor: Floor) -> None:
    """History (a table's rounds, its shoes, one shoe's roads, craps by shooter), reports (the
    form and a report), the incidents and the handover: each in 繁體中文, Português and
    English, with no converted English string left in the two translations; and each display
    in its configured language, whatever the viewer's browser says."""
    page = signed_in(browser, floor, "en-US", "/login?lang=en")
    _wait(lambda: page.request.get(floor.base_url + "/table/lab/bac-1/history/segments/1"
                                   ).status == 200, 60, "bac-1's first shoe in the record")
    views = ["/table/lab/bac-1/history", "/table/lab/bac-1/history/segments",
             "/table/lab/bac-1/history/segments/1", "/table/lab/craps-1/history",
             "/table/lab/qp-1/history", "/reports", "/reports/view?from=2026-01-01T00:00:00",
             "/alerts?state=all", "/handover"]
    for language, tag in (("zh_Hant", "zh-Hant"), ("pt", "pt"), ("en", "en")):
        for view in views:
            page.goto(floor.base_url + view + ("&" if "?" in view else "?") + f"lang={language}")
            assert page.locator("main, body").first.inner_text().strip(), view
            assert lang(page) == tag, (view, language, lang(page))
            if language != "en":
                assert english_left(page, language) == [], (view, language)
    viewer = browser.new_context(viewport={"width": 1920, "height": 1080}, locale="en-US")
    board = viewer.new_page()
    for table, language, tag in (("bac-1", "zh_Hant", "zh-Hant"), ("bac-2", "pt", "pt")):
        board.goto(f"{floor.base_url}/display/lab/{table}?token={DISPLAY_TOKENS[table]}")
        assert lang(board) == tag, (table, lang(board))
        assert english_left(board, language) == [], (table, language)
    viewer.close()
    page.context.close()
