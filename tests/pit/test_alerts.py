"""The alert engine over a real SQLite store and the real floor model: what raises, what clears,
de-duplication, seq_gap naming the missing numbers (and late arrivals), silence, and people's
actions with their role check and audit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from tabled.pit.alerts import AlertEngine, Forbidden, ranges
from tabled.pit.auth import User
from tabled.pit.config import AlertSettings
from tabled.pit.messages import Message
from tabled.pit.model import Floor
from tabled.pit.store import Alert, AlertActionError, AlertChange, Store
from tabled.pit.store_sqlite import SqliteStore
from tests.clock import Clock
from tests.pit.conftest import (
    baccarat_outcome,
    birth,
    device,
    event,
    fault,
    msg,
    void_outcome,
    will,
)

SUPERVISOR = User("sam", "supervisor")
VIEWER = User("vic", "viewer")


class Pit:
    """Store, floor and engine wired as the service wires them (without the broker)."""

    def __init__(self, store: Store, settings: AlertSettings) -> None:
        self.clock = Clock()
        self.store = store
        self.floor = Floor(clock=self.clock)
        self.changes: list[AlertChange] = []
        self.engine = AlertEngine(store, self.floor, settings, actor="pit:test",
                                  clock=self.clock, on_change=self.changes.append)

    async def feed(self, *messages: Message) -> None:
        for m in messages:
            m = replace(m, received_at=self.clock.now)  # (its typed event or outcome kept)
            recorded = await self.store.record(m, "pit:test")
            applied = self.floor.apply(m) if recorded.new else False
            await self.engine.message(m, recorded, applied)

    async def live(self, kind: str | None = None) -> list[Alert]:
        return [a for a in await self.store.alerts() if kind is None or a.kind == kind]


@pytest.fixture
async def pit(sqlite_store: SqliteStore) -> AsyncIterator[Pit]:
    p = Pit(sqlite_store, AlertSettings(silence_after=30, gap_grace=2.0))
    await p.engine.start()
    yield p


async def test_a_last_will_raises_offline_and_the_birth_clears_it(pit: Pit) -> None:
    await pit.feed(birth(seq=0), will(1))
    (alert,) = await pit.live()
    assert (alert.kind, alert.severity, alert.state) == ("offline", "critical", "open")
    assert "last will" in alert.message
    assert pit.floor.tile("lab", "t1")["state"] == "offline"  # type: ignore[index]
    await pit.feed(will(1))  # the retained will again: nothing new
    assert (await pit.store.alert(alert.id)).count == 1  # type: ignore[union-attr]
    await pit.feed(birth(seq=2, started_at="2026-12-01T11:00:00.000Z"))
    cleared = await pit.store.alert(alert.id)
    assert cleared is not None and cleared.state == "cleared"  # still to be acknowledged
    closed = await pit.engine.desk.acknowledge(alert.id, SUPERVISOR, "restarted the PC")
    assert closed.state == "closed"
    assert [e.action for e in await pit.store.audit(alert.id)] == [
        "raised", "cleared", "acknowledged"]


async def test_a_clean_shutdown_is_offline_but_not_critical(pit: Pit) -> None:
    await pit.feed(birth(seq=0), will(1, reason="shutdown"))
    (alert,) = await pit.live()
    assert alert.kind == "offline" and alert.severity == "major"
    assert alert.message == "table shut down"


async def test_an_older_status_does_not_undo_a_newer_one(pit: Pit) -> None:
    await pit.feed(birth(seq=4), will(5))
    await pit.feed(birth(seq=2))  # late, same run
    assert pit.floor.tile("lab", "t1")["state"] == "offline"  # type: ignore[index]
    assert [a.kind for a in await pit.live()] == ["offline"]


async def test_degraded_then_online(pit: Pit) -> None:
    await pit.feed(birth(seq=0))
    body = dict(birth(seq=0).payload, state="degraded", reason="disk full")
    await pit.feed(msg("status", body, 1))
    (alert,) = await pit.live()
    assert alert.kind == "degraded" and "disk full" in alert.message
    await pit.feed(msg("status", dict(body, state="online"), 2))
    assert (await pit.store.alert(alert.id)).state == "cleared"  # type: ignore[union-attr]


async def test_device_lost_then_unavailable_is_one_alert_cleared_when_connected(pit: Pit) -> None:
    await pit.feed(birth(seq=0), device("shoe-1", "connected", 0))
    await pit.feed(device("shoe-1", "lost", 1), fault("device_lost", 0, device_id="shoe-1"))
    await pit.feed(device("shoe-1", "connecting", 2), device("shoe-1", "unavailable", 3))
    (alert,) = await pit.live()
    assert (alert.kind, alert.subject, alert.count) == ("device_lost", "shoe-1", 2)
    assert pit.floor.tile("lab", "t1")["devices"][0]["state"] == "unavailable"  # type: ignore[index]
    await pit.feed(device("shoe-1", "connected", 4))
    assert (await pit.store.alert(alert.id)).state == "cleared"  # type: ignore[union-attr]
    # a device that never came up is unavailable
    await pit.feed(device("shoe-1", "unavailable", 5))
    assert [a.kind for a in await pit.live() if a.state == "open"] == ["device_unavailable"]


async def test_a_wrong_device(pit: Pit) -> None:
    await pit.feed(birth(seq=0))
    await pit.feed(device("shoe-1", "connected", 0, family="dice"))
    await pit.feed(device("mystery-9", "connected", 1, family="dice"))
    alerts = {a.subject: a for a in await pit.live("wrong_device")}
    assert "is a dice, the table declares a shoe" in alerts["shoe-1"].message
    assert "not declared" in alerts["mystery-9"].message
    await pit.feed(device("shoe-1", "connected", 2, family="shoe"))
    assert (await pit.store.alert(alerts["shoe-1"].id)).state == "cleared"  # type: ignore[union-attr]
    device_tiles = {d["id"]: d for d in pit.floor.tile("lab", "t1")["devices"]}  # type: ignore[index]
    assert device_tiles["mystery-9"]["declared"] is False


async def test_a_device_the_daemon_refused_raises_wrong_device(pit: Pit) -> None:
    """The status as the daemon publishes it for a refused device (daemon/supervisor.py,
    tests/daemon/test_supervisor_refusal.py): ``unavailable`` with reason ``wrong_device``. It
    once raised only ``device_unavailable``: the engine looked for a state ``wrong_device``
    that no daemon publishes (issue 28)."""
    qpoker = [{"id": "shuffler-1", "family": "shuffler"}]
    await pit.feed(birth("qpoker", seq=0, devices=qpoker))
    why = "it sent a frame that is not a shuffler-dealer message (kind 0x20)"
    refused = {"state": "unavailable", "device": "shuffler-1", "family": "shuffler",
               "since": "2026-12-01T10:00:01.000Z", "url": "/dev/pts/7",
               "reason": "wrong_device", "error": why}
    await pit.feed(msg("device/shuffler-1/status", refused, 0))
    (alert,) = await pit.live()
    assert (alert.kind, alert.subject, alert.severity) == ("wrong_device", "shuffler-1", "major")
    assert why in alert.message and "not the configured one" in alert.message
    tile = pit.floor.tile("lab", "t1")["devices"][0]  # type: ignore[index]
    assert (tile["state"], tile["detail"]) == ("unavailable", why)
    # a device that cannot be opened is still only unavailable
    await pit.feed(device("shuffler-1", "unavailable", 1, family="shuffler"))
    assert sorted(a.kind for a in await pit.live()) == ["device_unavailable", "wrong_device"]
    # the right device connected clears both
    await pit.feed(device("shuffler-1", "connected", 2, family="shuffler"))
    assert {a.state for a in await pit.live()} == {"cleared"}


async def test_every_fault_is_an_alert_and_repeats_are_counted(pit: Pit) -> None:
    await pit.feed(fault("shuffler_failure", 0), fault("shuffler_failure", 1),
                   fault("link_errors", 2, device_id="shoe-1"),
                   fault("journal_failure", None, device_id=None))
    alerts = {a.subject: a for a in await pit.live("fault")}
    assert alerts["shuffler_failure@shuffler-1"].count == 2
    assert alerts["shuffler_failure@shuffler-1"].severity == "major"
    assert alerts["link_errors@shoe-1"].severity == "minor"
    assert alerts["journal_failure"].severity == "critical"
    closed = await pit.engine.desk.acknowledge(alerts["link_errors@shoe-1"].id, SUPERVISOR)
    assert closed.state == "closed"  # a fault is a fact: acknowledged, it is done


async def test_notices_and_refused_commands(pit: Pit) -> None:
    await pit.feed(msg("fault", {"v": 1, "type": "notice", "code": "not_for_game",
                                 "message": "a roll at a baccarat table",
                                 "article": "baccarat.art1"}, 0),
                   msg("fault", {"v": 1, "type": "command_rejected", "command": "reveal",
                                 "reason": "forged", "detail": "bad mac"}, 1))
    kinds = {a.kind: a for a in await pit.live()}
    assert kinds["notice"].severity == "minor"
    assert kinds["command_rejected"].severity == "critical"


async def test_every_void_round_with_its_article(pit: Pit) -> None:
    await pit.feed(birth("qpoker", seq=0, devices=[{"id": "shuffler-1", "family": "shuffler"}]))
    await pit.feed(void_outcome(12, 0), void_outcome(13, 1))
    voids = await pit.live("void")
    assert sorted(a.subject for a in voids) == ["round 12", "round 13"]
    assert all(a.detail["article"] == "qpoker.art11.5" and "qpoker.art11.5" in a.message
               for a in voids)


async def test_a_gap_names_the_missing_numbers_and_late_arrivals_clear_it(pit: Pit) -> None:
    cut = {"type": "cut_card"}
    await pit.feed(*(event(cut, n) for n in (0, 1, 2, 6, 7)))
    await pit.engine.tick()
    assert await pit.live() == []  # within the grace time: not yet
    pit.clock.now += 3
    await pit.engine.tick()
    (gap,) = await pit.live("seq_gap")
    assert gap.detail["numbers"] == [3, 4, 5] and gap.detail["missing"] == [[3, 5]]
    assert gap.message == "event: 3 messages missing (table_seq 3-5)"
    await pit.feed(event(cut, 4))
    updated = await pit.store.alert(gap.id)
    assert updated is not None and updated.state == "open"
    assert updated.detail["missing"] == [[3, 3], [5, 5]]
    assert updated.detail["arrived_late"] == [[4, 4]]
    await pit.feed(event(cut, 3), event(cut, 5))
    done = await pit.store.alert(gap.id)
    assert done is not None and done.state == "cleared"
    trail = [(e.action, e.note) for e in await pit.store.audit(gap.id)]
    assert trail[0][0] == "raised" and trail[-1][0] == "cleared"
    assert "arrived late" in (trail[-1][1] or "")


async def test_numbers_filled_within_the_grace_raise_nothing(pit: Pit) -> None:
    await pit.feed(baccarat_outcome(1, 0), baccarat_outcome(3, 2), baccarat_outcome(2, 1))
    pit.clock.now += 3
    await pit.engine.tick()
    assert await pit.live() == []


async def test_the_first_number_heard_starts_a_stream(pit: Pit) -> None:
    await pit.feed(baccarat_outcome(41, 40), baccarat_outcome(42, 41))
    pit.clock.now += 3
    await pit.engine.tick()
    assert await pit.live() == []


async def test_a_reused_number_with_other_content_is_a_conflict(pit: Pit) -> None:
    await pit.feed(baccarat_outcome(1, 0), baccarat_outcome(9, 0, winner="player"))
    (alert,) = await pit.live("seq_conflict")
    assert alert.severity == "critical" and '"round":9' in alert.detail["payload"]


async def test_a_silent_online_table(pit: Pit) -> None:
    await pit.feed(birth(seq=0))
    pit.clock.now += 31
    await pit.engine.tick()
    (alert,) = await pit.live("silent")
    await pit.engine.tick()
    assert (await pit.store.alert(alert.id)).count == 1  # type: ignore[union-attr]
    metrics = msg("metrics", {"uptime_s": 1.0, "queue_depth": 0}, 7)
    await pit.engine.message(metrics, None, False)  # metrics are heard, not recorded
    assert (await pit.store.alert(alert.id)).state == "cleared"  # type: ignore[union-attr]
    # an offline table is not silent: its offline alert says it
    await pit.feed(will(1))
    pit.clock.now += 100
    await pit.engine.tick()
    assert [a.kind for a in await pit.live() if a.state == "open"] == ["offline"]


async def test_a_viewer_cannot_acknowledge_and_the_attempt_is_audited(pit: Pit) -> None:
    await pit.feed(birth(seq=0), will(1))
    (alert,) = await pit.live()
    with pytest.raises(Forbidden, match="vic \\(viewer\\) may not acknowledge"):
        await pit.engine.desk.acknowledge(alert.id, VIEWER, "let me")
    with pytest.raises(Forbidden):
        await pit.engine.desk.close(alert.id, VIEWER)
    assert (await pit.store.alert(alert.id)).state == "open"  # type: ignore[union-attr]
    acked = await pit.engine.desk.acknowledge(alert.id, SUPERVISOR, "  on it  ")
    assert acked.acked_by == "sam" and acked.ack_note == "on it"
    with pytest.raises(AlertActionError):
        await pit.engine.desk.acknowledge(alert.id, SUPERVISOR)
    trail = [(e.actor, e.action) for e in await pit.engine.desk.audit(alert.id, VIEWER)]
    assert trail == [("pit:test", "raised"), ("vic", "refused:acknowledge"),
                     ("vic", "refused:close"), ("sam", "acknowledged")]
    # the live model follows: the tile counts it as acknowledged
    tile = pit.floor.tile("lab", "t1")
    assert tile is not None and tile["alerts"]["unacknowledged"] == 0
    assert tile["alerts"]["not_closed"] == 1


async def test_a_restarted_engine_picks_up_where_the_record_is(pit: Pit) -> None:
    await pit.feed(birth(seq=0), baccarat_outcome(1, 0), baccarat_outcome(2, 1))
    floor = Floor(clock=pit.clock)
    await floor.rebuild(pit.store)
    engine = AlertEngine(pit.store, floor, AlertSettings(gap_grace=0), actor="pit:2",
                         clock=pit.clock)
    await engine.start()
    m = baccarat_outcome(5, 4)
    recorded = await pit.store.record(m, "pit:2")
    await engine.message(m, recorded, floor.apply(m))
    await engine.tick()
    (gap,) = await pit.store.alerts(kind="seq_gap")
    assert gap.detail["numbers"] == [2, 3]


def test_ranges() -> None:
    assert ranges([9, 4, 5, 6]) == [[4, 6], [9, 9]]
    assert ranges([]) == []
