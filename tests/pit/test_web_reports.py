"""The page's reports in a real browser against the shared real floor: the form, the report
it makes (its figures checked against the record itself, read with sqlite3), and its CSV and
PDF downloads; a period that cannot be read is the form again with the reason."""

from __future__ import annotations

import csv
import io
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tests.pit.webfloor import (
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

ZONE = "Asia/Macau"
PIT_CONFIG_EXTRA = ["[reports]", f'timezone = "{ZONE}"', 'language = "en"']


def _field(t: float) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M:%S")


def _recorded_rounds(store: Path, since: float, until: float) -> dict[str, int]:
    """Outcomes the record holds per table in ``[since, until)``, read from the file itself."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT site, table_id, COUNT(*) FROM messages WHERE topic = "
                          "'outcome' AND received_at >= ? AND received_at < ? GROUP BY "
                          "site, table_id", (since, until)).fetchall()
    return {f"{site}/{table}": int(n) for site, table, n in rows}


def test_the_form_makes_the_report_and_its_files(floor: Floor, supervisor: Any,
                                                 tmp_path: Path) -> None:
    page = supervisor
    # a period already over, so that the record of it no longer changes, in which a baccarat
    # and a craps table have played (each game's frequencies, and the floor's)
    def played() -> bool:  # before the period's end below (the second before now)
        rounds = _recorded_rounds(floor.store, 0, time.time() - 2)
        return sum(rounds.values()) >= 6 and all(
            rounds.get(f"{SITE}/{table}", 0) >= 2 for table in ("bac-1", "craps-1"))

    _wait(played, 60, "rounds at a baccarat and a craps table")
    until = float(int(time.time()) - 1)
    since = until - 3600
    time.sleep(1.5)
    recorded = _recorded_rounds(floor.store, since, until)
    page.goto(floor.base_url + "/")
    page.click("header.top a[href='/reports']")
    page.wait_for_selector("form.report-form")

    def every_table() -> bool:  # the floor, and each of six tables once it has said hello
        if page.locator("select[name=table] option").count() == 7:
            return True
        page.reload()
        return False

    _wait(every_table, 30, "six tables in the form", interval=0.5)
    page.fill("input[name=from]", _field(since))
    page.fill("input[name=to]", _field(until))
    page.select_option("select[name=lang]", "en")
    page.click("form.report-form button[type=submit]")
    page.wait_for_selector("section.report")
    assert "/reports/view?" in page.url
    shown = {row.get_attribute("data-table"): int(row.locator(
        "[data-figure=rounds]").inner_text()) for row in page.locator(
        "table.report-tables tbody tr").all()}
    assert shown.pop("floor") == sum(recorded.values())
    # every table that played, and its rounds, as the record has them (a table with only a
    # status change or a fault in the period shows with none)
    assert {name: n for name, n in shown.items() if n} == recorded
    assert page.locator("table.report-frequencies").count() >= 3  # per table and the floor's
    assert page.locator(f"table.report-frequencies[data-table='{SITE}/bac-1'] "
                        "tr[data-rate=banker]").count() == 1
    screenshot(page, "report-page", height=1800)

    with page.expect_download() as caught:
        page.click("a.download[href*='format=csv']")
    rows = list(csv.DictReader(io.StringIO(Path(caught.value.path()).read_text())))
    from_csv = {r["table"]: int(r["count"]) for r in rows
                if (r["section"], r["item"]) == ("rounds", "rounds")}
    assert from_csv.pop("floor") == sum(recorded.values())
    assert {name: n for name, n in from_csv.items() if n} == recorded
    assert caught.value.suggested_filename.startswith("report-floor-")

    with page.expect_download() as caught:
        page.click("a.download[href*='format=pdf']")
    pdf = Path(caught.value.path()).read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 10_000
    assert caught.value.suggested_filename.endswith(".pdf")

    # one table's report
    page.goto(floor.base_url + "/reports")
    page.fill("input[name=from]", _field(since))
    page.fill("input[name=to]", _field(until))
    page.select_option("select[name=table]", f"{SITE}/craps-1")
    page.click("form.report-form button[type=submit]")
    page.wait_for_selector("section.report")
    rows_shown = page.locator("table.report-tables tbody tr")
    assert [r.get_attribute("data-table") for r in rows_shown.all()] == [
        f"{SITE}/craps-1", "floor"]

    assert not page.errors
    # a period that cannot be read: the form again, with the reason, and nothing lost
    response = page.goto(floor.base_url + "/reports/view?from=yesterday&to=2026-12-04"
                         f"&table={SITE}/bac-1&lang=en")
    assert response is not None and response.status == 400
    assert "from: not a date and time" in page.locator(".form-error").inner_text()
    assert page.locator("select[name=table]").input_value() == f"{SITE}/bac-1"
