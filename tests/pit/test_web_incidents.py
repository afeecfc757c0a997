"""Incidents in the browser, on the shared real floor: a void, the fault that caused it and the
fault's repeat are one incident showing its latest message, count and timeline; a table killed
with nobody acknowledging is escalated (shown, published on ``…/pit/alert``, sounded unless the
supervisor muted the page, the mute remembered); a bulk acknowledgement of a selection (CSRF,
role-checked, each alert audited); the shift handover; a closed alert's page tells its
supervisor nothing about roles."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.pit.conftest import fault, void_outcome
from tests.pit.webfloor import (
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
__all__ = ["browser", "floor", "supervisor"]

#: critical incidents escalate after 3 s, again after 6 s (level 2, the highest)
PIT_ALERTS_EXTRA = ["group_window = 120", "escalate_after = { critical = 3 }",
                    "escalate_levels = 2"]
FAKE = "qp-9"  # a table that publishes only what this test sends on its behalf


def publish(floor: Floor, stream: str, m: Any, detail: str | None = None) -> None:
    """``m`` (a message as the tables publish it) on ``FAKE``'s ``stream``, its fault's detail
    set to ``detail``."""
    body = json.loads(m.text)
    if detail is not None:
        body["detail"] = detail
    info = floor.collector.client.publish(f"tabled/{SITE}/{FAKE}/{stream}",
                                          json.dumps(body, separators=(",", ":")), qos=1)
    info.wait_for_publish(5)


def alerts_published(floor: Floor) -> list[dict[str, Any]]:
    with floor.collector.lock:
        return [body for _, topic, body in floor.collector.messages
                if topic == f"tabled/{SITE}/pit/alert"]


def test_a_void_and_its_fault_are_one_incident_with_its_latest_message(
        floor: Floor, supervisor: Any) -> None:
    page = supervisor
    publish(floor, "fault", fault("shuffler_failure", 0, table=FAKE), "jammed at card 3")
    publish(floor, "outcome", void_outcome(12, 0, table=FAKE))
    publish(floor, "fault", fault("shuffler_failure", 1, table=FAKE), "jammed again")
    page.goto(floor.base_url + "/alerts")
    live(page)
    row = page.locator(f'tr.incident[data-table="{SITE}/{FAKE}"]')
    _wait(lambda: row.count() == 1 and row.get_attribute("data-count") == "3", 10,
          "one incident of three reports")
    assert row.get_attribute("data-alerts") == "2"  # the fault (twice) and the void
    assert "jammed again" in row.locator("td.msg").inner_text()  # the latest, not the first
    assert "qpoker.art11.5" in row.inner_text()  # the void's article
    row.locator("details.timeline summary").click()
    assert sorted(row.locator("details.timeline li").evaluate_all(
        "els => els.map(e => e.dataset.kind)")) == ["fault", "void"]
    # its page: the timeline of every report, in order
    row.locator("a", has_text="#").first.click()
    page.wait_for_selector("table.timeline")
    actions = page.locator("table.timeline tr[data-action]").evaluate_all(
        "els => els.map(e => e.dataset.kind + ':' + e.dataset.action)")
    assert actions == ["fault:raised", "void:raised", "fault:repeated"]
    screenshot(page, "incidents-alert", 900)


def test_a_critical_incident_nobody_acknowledges_is_escalated_and_sounded_unless_muted(
        floor: Floor, supervisor: Any) -> None:
    page = supervisor
    page.goto(floor.base_url + "/alerts")
    live(page)
    page.evaluate("() => localStorage.removeItem('tabled.pit.mute')")
    before = int(page.evaluate("() => document.documentElement.dataset.alarms || '0'"))
    floor.daemons["craps-2"].kill9()
    row = page.locator(f'tr.incident[data-kind="offline"][data-table="{SITE}/craps-2"]')
    row.wait_for(timeout=10_000)
    page.wait_for_selector(f'tr.incident[data-table="{SITE}/craps-2"][data-escalation="1"]',
                           timeout=10_000)
    assert "escalated" in row.inner_text().lower()
    _wait(lambda: int(page.evaluate("() => document.documentElement.dataset.alarms || '0'"))
          == before + 1, 5, "the page's sound")
    assert page.locator(f'#alerts-panel li.pa.escalated[data-table="{SITE}/craps-2"]').count() == 1
    # the supervisor mutes the page: the next level is shown, not sounded
    page.click("#mute")
    assert page.locator("#mute").get_attribute("aria-pressed") == "true"
    assert page.evaluate("() => localStorage.getItem('tabled.pit.mute')") == "1"
    page.wait_for_selector(f'tr.incident[data-table="{SITE}/craps-2"][data-escalation="2"]',
                           timeout=10_000)
    page.wait_for_timeout(500)
    assert int(page.evaluate("() => document.documentElement.dataset.alarms")) == before + 1
    # published on …/pit/alert with its new level
    _wait(lambda: [b for b in alerts_published(floor) if b["table"] == "craps-2"
                   and b["change"]["action"] == "escalated" and b["escalation"] == 2], 5,
          "the escalation on …/pit/alert")
    # remembered: a page loaded again is still muted
    page.reload()
    live(page)
    assert page.locator("#mute").get_attribute("aria-pressed") == "true"
    assert page.evaluate("() => document.documentElement.dataset.muted") == "1"
    screenshot(page, "incidents-alerts", 700)
    page.click("#mute")  # sound on again for whoever comes next
    assert page.evaluate("() => localStorage.getItem('tabled.pit.mute')") == "0"
    assert page.errors == []


def test_bulk_acknowledge_of_a_selection_is_audited_for_each_alert(
        floor: Floor, browser: Any, supervisor: Any) -> None:
    viewer = sign_in(browser, floor, "vic")
    viewer.goto(floor.base_url + "/alerts")
    assert viewer.locator("form#bulk, input[name=incident]").count() == 0
    token = next(c["value"] for c in viewer.context.cookies() if c["name"] == "csrftoken")
    page = supervisor
    page.goto(floor.base_url + "/alerts")
    live(page)
    ids = [page.locator(f'tr.incident[data-table="{SITE}/{table}"]').first.get_attribute(
        "data-incident") for table in (FAKE, "craps-2")]
    refused = viewer.request.post(floor.base_url + "/incidents/acknowledge",
                                  form={"csrftoken": token, "incident": ids[0]},
                                  max_redirects=0)
    assert refused.status == 403
    viewer.context.close()
    no_token = page.request.post(floor.base_url + "/incidents/acknowledge",
                                 form={"incident": ids[0]}, max_redirects=0)
    assert no_token.status == 403
    waiting = int(page.locator("#summary .sum-alerts b").inner_text())
    for incident in ids:
        page.check(f'input[name=incident][value="{incident}"]')
    page.wait_for_timeout(300)  # a live swap of the table keeps the selection
    page.fill("form#bulk input[name=note]", "start of shift: seen both")
    page.click("form#bulk button[type=submit]")
    page.wait_for_url(floor.base_url + "/alerts?state=live")
    for incident in ids:
        row = page.locator(f'tr.incident[data-incident="{incident}"]')
        if row.count():
            assert row.locator("input[name=incident]").count() == 0  # nothing left to do
    _wait(lambda: int(page.locator("#summary .sum-alerts b").inner_text()) <= waiting - 2, 5,
          "to acknowledge: two fewer")
    page.goto(f"{floor.base_url}/alerts/{ids[0]}")
    rows = page.locator('table.timeline tr[data-action="acknowledged"]')
    assert rows.count() == 2  # the fault and the void, each audited
    assert all("start of shift: seen both" in t for t in rows.all_inner_texts())
    refusal = page.locator('table.timeline tr[data-action="refused:acknowledge"]')
    assert "vic" in refusal.inner_text()
    # closed by its supervisor: no word about who may act
    assert page.locator(".role-note").count() == 0


def test_the_shift_handover(floor: Floor, supervisor: Any) -> None:
    page = supervisor
    page.goto(floor.base_url + "/handover")
    assert page.locator("a.here", has_text="8").count() == 1  # the last 8 hours by default
    open_now = page.locator(f'table.handover-open tr[data-table="{SITE}/craps-2"]')
    assert open_now.count() == 1  # acknowledged, the table still offline
    happened = page.locator(f'table.handover-happened tr[data-table="{SITE}/{FAKE}"]')
    assert happened.count() == 1 and happened.get_attribute("data-state") == "closed"
    people = page.locator('table.handover-people tr[data-actor="sam"][data-action="acknowledged"]')
    assert people.count() >= 3
    assert page.locator('table.handover-people tr[data-actor="vic"]'
                        '[data-action="refused:acknowledge"]').count() == 1
    screenshot(page, "incidents-handover", 900)
    # an hour later than now: nothing happened since
    page.goto(floor.base_url + "/handover?since=" + time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3600)))
    assert page.locator("table.handover-happened").count() == 0
    page.goto(floor.base_url + "/handover?hours=nonsense")
    assert page.locator('[data-problem="hours"]').count() == 1
    assert page.errors == []
