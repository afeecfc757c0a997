"""Incidents and escalation over real SQLite and PostgreSQL stores and the real floor model, on a
clock the test moves by hand: a void and its fault are one incident, a repeated fault shows its
latest message, a device lost and found again is one incident, a critical incident nobody
acknowledges is escalated (and published), bulk acknowledgement is role-checked and audited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tabled.pit.alerts import Forbidden, incidents
from tabled.pit.auth import User
from tabled.pit.config import AlertSettings, ConfigError, parse_config
from tabled.pit.messages import Message
from tabled.pit.store import Store
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import CONTRACT_VERSION, birth, device, msg, void_outcome, will
from tests.pit.test_alerts import Pit

SUPERVISOR = User("sam", "supervisor")
VIEWER = User("vic", "viewer")
QPOKER = [{"id": "shuffler-1", "family": "shuffler"}, {"id": "shoe-1", "family": "shoe"}]


def fault(code: str, seq: int, detail: str = "test", device_id: str = "shuffler-1",
          **kw: Any) -> Message:
    return msg("fault", {"v": CONTRACT_VERSION, "type": "fault", "code": code, "detail": detail,
                         "device": device_id, "source": f"device:{device_id}"}, seq, **kw)


@pytest.fixture
async def pit(store: Store) -> AsyncIterator[Pit]:
    p = Pit(store, AlertSettings(silence_after=3600, group_window=120,
                                 escalate_after={"critical": 300, "major": 900}))
    await p.engine.start()
    yield p


async def test_a_void_and_the_fault_that_caused_it_are_one_incident(pit: Pit) -> None:
    await pit.feed(birth("qpoker", seq=0, devices=QPOKER))
    await pit.feed(fault("shuffler_failure", 0))
    pit.clock.now += 2
    await pit.feed(void_outcome(12, 0))
    (incident,) = incidents(await pit.live())
    assert sorted(incident.kinds) == ["fault", "void"] and incident.count == 2
    assert "round 12 void [qpoker.art11.5]" in incident.message  # the latest: the void
    assert incident.articles == ["qpoker.art11.5"]
    assert incident.severity == "major" and incident.needs_ack
    # the fault first or the void first: the same
    pit.clock.now += 1000
    await pit.feed(void_outcome(13, 1), fault("shuffler_failure", 1, detail="again"))
    assert len(incidents(await pit.live())) == 2
    # a void long after, whose reason names no fault of the table: an incident of its own
    pit.clock.now += 1000
    body = dict(void_outcome(14, 2).payload, void_reason="misdeal")
    await pit.feed(msg("outcome", body, 2))
    assert len(incidents(await pit.live())) == 3


async def test_a_repeated_fault_shows_its_latest_message_and_a_timeline(pit: Pit) -> None:
    await pit.feed(fault("shuffler_jam", 0, detail="first jam"))
    pit.clock.now += 5
    await pit.feed(fault("shuffler_jam", 1, detail="second jam"))
    (alert,) = await pit.live()
    assert alert.count == 2 and "second jam" in alert.message
    assert alert.last_seen == pit.clock.now
    trail = await pit.store.audit(alert.id)
    assert [(e.action, e.note and e.note.split("(")[-1]) for e in trail] == [
        ("raised", "first jam)"), ("repeated", "second jam)")]
    # acknowledged (a fact: closed), it jams again within the window: the same incident
    await pit.engine.desk.acknowledge(alert.id, SUPERVISOR, "cleared the jam")
    pit.clock.now += 30
    await pit.feed(fault("shuffler_jam", 2, detail="third jam"))
    (again,) = await pit.live()
    assert again.id != alert.id and again.incident_id == alert.id
    (incident,) = incidents(await pit.store.incident_alerts([alert.id]))
    assert incident.count == 3 and "third jam" in incident.message and incident.needs_ack
    # beyond the window: a new incident
    await pit.engine.desk.acknowledge(again.id, SUPERVISOR)
    pit.clock.now += 500
    await pit.feed(fault("shuffler_jam", 3, detail="next day"))
    (late,) = await pit.live()
    assert late.incident_id == late.id


async def test_a_device_lost_and_found_again_is_one_incident(pit: Pit) -> None:
    await pit.feed(birth(seq=0), device("shoe-1", "connected", 0))
    await pit.feed(device("shoe-1", "lost", 1))
    (lost,) = await pit.live()
    pit.clock.now += 10
    await pit.feed(device("shoe-1", "connected", 2))
    await pit.engine.desk.acknowledge(lost.id, SUPERVISOR, "reseated the cable")
    assert await pit.live() == []
    pit.clock.now += 20
    await pit.feed(device("shoe-1", "lost", 3), fault("unreadable_card", 0, device_id="shoe-1"))
    members = await pit.store.incident_alerts([lost.id])
    assert [a.kind for a in members] == ["device_lost", "device_lost", "fault"]
    (incident,) = incidents(members)
    assert incident.id == lost.id and incident.state == "open"
    timeline = [e.action for a in members for e in await pit.store.audit(a.id)]
    assert timeline == ["raised", "cleared", "acknowledged", "raised", "raised"]


async def test_a_critical_incident_nobody_acknowledges_is_escalated(pit: Pit) -> None:
    await pit.feed(birth(seq=0), will(1))
    (offline,) = await pit.live()
    assert offline.severity == "critical"
    pit.clock.now += 299
    await pit.engine.tick()
    assert (await pit.store.alert(offline.id)).escalation == 0  # type: ignore[union-attr]
    pit.clock.now += 2
    await pit.engine.tick()
    escalated = await pit.store.alert(offline.id)
    assert escalated is not None and escalated.escalation == 1
    assert escalated.escalated_at == pit.clock.now
    assert pit.floor.alerts()[0].escalation == 1  # the page sees it
    # published on …/pit/alert with its new level (the outbox)
    pending = [(e.action, a.escalation) for e, a in await pit.store.pending_publications()]
    assert ("escalated", 1) in pending
    await pit.engine.tick()  # the same period: not again
    pit.clock.now += 300
    await pit.engine.tick()
    pit.clock.now += 3000
    await pit.engine.tick()  # up to escalate_levels (3), no further
    trail = [(e.action, e.note) for e in await pit.store.audit(offline.id)]
    assert [n for a, n in trail if a == "escalated"] == [
        f"critical incident #{offline.id} not acknowledged for 301 s: level 1",
        f"critical incident #{offline.id} not acknowledged for 601 s: level 2",
        f"critical incident #{offline.id} not acknowledged for 3601 s: level 3"]
    (incident,) = incidents(await pit.live())
    assert incident.escalation == 3
    await pit.engine.desk.acknowledge(offline.id, SUPERVISOR, "on it")
    pit.clock.now += 3000
    await pit.engine.tick()
    (incident,) = incidents(await pit.live())
    assert incident.escalation == 0 and not incident.needs_ack


async def test_each_severity_has_its_own_escalation_time(pit: Pit) -> None:
    await pit.feed(fault("shuffler_jam", 0), fault("link_errors", 1, device_id="shoe-1"))
    pit.clock.now += 600
    await pit.engine.tick()
    assert {a.subject: a.escalation for a in await pit.live()} == {
        "shuffler_jam@shuffler-1": 0, "link_errors@shoe-1": 0}
    pit.clock.now += 301
    await pit.engine.tick()  # major after 900 s; minor never (no key)
    assert {a.subject: a.escalation for a in await pit.live()} == {
        "shuffler_jam@shuffler-1": 1, "link_errors@shoe-1": 0}


async def test_bulk_acknowledge_is_role_checked_and_each_alert_audited(pit: Pit) -> None:
    await pit.feed(birth("qpoker", seq=0, devices=QPOKER), fault("shuffler_failure", 0),
                   void_outcome(12, 0), will(1))
    groups = incidents(await pit.live())
    assert len(groups) == 2 and sum(len(i.alerts) for i in groups) == 3
    ids = [i.id for i in groups]
    with pytest.raises(Forbidden):
        await pit.engine.desk.acknowledge_incidents(ids, VIEWER, "me too")
    refused = [e for i in ids for e in await pit.store.audit(i)
               if e.action == "refused:acknowledge"]
    assert [e.actor for e in refused] == ["vic", "vic"]
    done = await pit.engine.desk.acknowledge_incidents(ids, SUPERVISOR, "shift start")
    assert len(done) == 3
    assert {a.state for a in done} == {"closed", "acknowledged"}  # the facts closed
    for alert in done:
        assert [(e.actor, e.note) for e in await pit.store.audit(alert.id)
                if e.action == "acknowledged"] == [("sam", "shift start")]
    assert not any(i.needs_ack for i in incidents(await pit.live()))
    # twice: nothing left to do, no error
    assert await pit.engine.desk.acknowledge_incidents(ids, SUPERVISOR) == []


async def test_the_handover_reads_what_happened_since(pit: Pit) -> None:
    await pit.feed(will(1))
    (old,) = await pit.live()
    await pit.engine.desk.close(old.id, SUPERVISOR, "done")
    pit.clock.now += 10_000
    since = pit.clock.now
    await pit.feed(fault("shuffler_jam", 0))
    assert [a.kind for a in await pit.store.alerts_since(since)] == ["fault"]
    assert [e.action for e in await pit.store.audit_since(since)] == ["raised"]


def test_escalation_settings_are_validated_by_key() -> None:
    base: dict[str, Any] = {"mqtt": {"url": "mqtt://localhost"}}
    one = parse_config({**base, "alerts": {"escalate_after": 120}})
    assert one.alerts.escalate_after == {"critical": 120}
    per = parse_config({**base, "alerts": {"escalate_after": {"major": 60, "critical": 30}}})
    assert per.alerts.escalate_after == {"major": 60, "critical": 30}
    assert parse_config(base).alerts.escalate_after == {"critical": 300}
    for bad, key in (({"escalate_after": {"urgent": 5}}, "alerts.escalate_after"),
                     ({"escalate_after": {"critical": 0}}, "alerts.escalate_after"),
                     ({"escalate_levels": 0}, "alerts.escalate_levels"),
                     ({"group_window": -1}, "alerts.group_window")):
        with pytest.raises(ConfigError) as caught:
            parse_config({**base, "alerts": bad})
        assert any(k.startswith(key) for k, _ in caught.value.errors), caught.value.errors


async def test_a_version_2_record_is_migrated_each_alert_its_own_incident(
        tmp_path: Path) -> None:
    class Version2(SqliteStore):
        def migrations(self) -> list[list[str]]:
            return super().migrations()[:2]

    path = tmp_path / "pit.sqlite"
    old = Version2(path)
    await old.open()
    try:
        await old.call(lambda db: db.execute(
            "INSERT INTO alerts (site, table_id, kind, subject, severity, state, message, detail,"
            " transient, count, opened_at, updated_at) VALUES ('lab', 't1', 'offline', '', "
            "'critical', 'open', 'table offline', '{}', 0, 4, 10.0, 20.0)"))
    finally:
        await old.close()
    s = SqliteStore(path)
    await s.open()
    try:
        (alert,) = await s.alerts()
        assert (alert.incident, alert.incident_id, alert.escalation, alert.last_seen) == (
            alert.id, alert.id, 0, 20.0)
        assert alert.count == 4 and alert.message == "table offline"  # nothing lost
    finally:
        await s.close()


async def test_the_floors_incidents_are_grouped_once_per_change_and_always_current(
        pit: Pit) -> None:
    """The page's panel, its header counts and the escalation read the floor's incidents on
    every render and tick; they are grouped again only when an alert changed (a busy floor
    spent a third of the pit's time regrouping), and are always what grouping the floor's
    alerts afresh gives."""
    from tabled.pit.alerts import floor_incidents

    def fresh() -> list[tuple[int, int, str]]:
        return [(i.id, i.count, i.state) for i in incidents(pit.floor.alerts("lab", None))]

    def cached() -> list[tuple[int, int, str]]:
        return [(i.id, i.count, i.state) for i in floor_incidents(pit.floor)]

    await pit.feed(birth("qpoker", seq=0, devices=QPOKER))
    assert cached() == fresh() == []
    steps = [fault("shuffler_failure", 0), void_outcome(12, 0), fault("shuffler_jam", 1),
             device("shoe-1", "lost", 1)]
    for step in steps:
        version = pit.floor.alerts_version
        await pit.feed(step)
        assert pit.floor.alerts_version > version  # the change is seen
        assert cached() == fresh() != []
        first = floor_incidents(pit.floor)
        assert floor_incidents(pit.floor) == first  # nothing changed: the same grouping
        assert pit.floor.derived("incidents", list) is pit.floor.derived("incidents", list)
    (jam,) = [a for a in await pit.live() if a.detail.get("code") == "shuffler_jam"]
    await pit.engine.desk.acknowledge(jam.id, SUPERVISOR, "cleared")
    assert cached() == fresh()
    pit.floor.set_alerts([])
    assert cached() == fresh() == []
