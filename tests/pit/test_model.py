"""The live floor model: tiles, per-game panels (craps histograms, Q Poker hands only from the
outcome, baccarat roads through the roads plug), the change feed, and a rebuild from the store
equal to the live model."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import Any

import pytest
import structlog

from tabled.games import registry
from tabled.pit import model
from tabled.pit.metrics import PitMetrics
from tabled.pit.model import Change, ChangeFeed, Floor
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import (
    NOTHING_DEALT,
    all_bets,
    baccarat_outcome,
    birth,
    device,
    event,
    msg,
    will,
)


def craps_outcome(round_no: int, seq: int, dice: tuple[int, int],
                  point_after: int | None) -> Any:
    body = {"v": 2, "type": "outcome", "game": "craps", "round": round_no,
            "status": "complete",
            "result": {"dice": list(dice), "total": sum(dice), "point_before": None,
                       "point_after": point_after},
            "bets": all_bets("craps", **{"pass": {"result": "open"}})}
    return msg("outcome", body, seq)


def test_the_craps_panel_keeps_50_rolls_the_point_and_the_sessions_histograms() -> None:
    floor = Floor()
    floor.apply(birth("craps", devices=[{"id": "dice-1", "family": "dice"}]))
    rng = random.Random(3)
    rolls = [(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(80)]
    for n, dice in enumerate(rolls):
        floor.apply(craps_outcome(n + 1, n, dice, 6 if n == 79 else None))
    floor.apply(msg("outcome", {"v": 2, "type": "outcome", "game": "craps", "round": 81,
                                "status": "complete", "no_roll": True,
                                "result": NOTHING_DEALT["craps"], "bets": all_bets("craps")},
                    80))
    panel = floor.panel("lab", "t1")
    assert panel is not None and panel["game"] == "craps"
    assert len(panel["rolls"]) == 50 and panel["rolls"][-1] == {"round": 81, "no_roll": True}
    assert panel["rolls"][-2]["dice"] == list(rolls[-1])
    assert panel["point"] == 6
    session = panel["session"]
    assert session["rolls"] == 80 and session["no_rolls"] == 1
    assert sum(session["totals"].values()) == 80
    assert session["totals"]["7"] == sum(1 for a, b in rolls if a + b == 7)
    assert session["die1"]["3"] == sum(1 for a, _ in rolls if a == 3)
    assert session["die2"]["6"] == sum(1 for _, b in rolls if b == 6)
    # a new run of the daemon is a new session; the last rolls stay on screen
    floor.apply(birth("craps", seq=1, started_at="2026-12-02T10:00:00.000Z",
                      devices=[{"id": "dice-1", "family": "dice"}]))
    panel = floor.panel("lab", "t1")
    assert panel is not None and panel["session"]["rolls"] == 0 and len(panel["rolls"]) == 50
    tile = floor.tile("lab", "t1")
    assert tile is not None and tile["last_outcome"]["line"] == "#81 no roll"
    assert tile["rounds_last_hour"] == 81


def qpoker_events_and_outcome() -> tuple[list[Any], Any]:
    """A Q Poker round as the daemon publishes it: the deal withheld, the seats' cards after the
    deal, the dealer's just before the outcome."""
    events = [
        event({"type": "round_start", "seats": [1]}, 0),
        event({"type": "withheld", "seat": 1, "count": 3}, 1),
        event({"type": "withheld", "seat": "dealer", "count": 3}, 2),
        event({"type": "hand", "seat": 1, "cards": ["2S", "2H", "9C"], "withheld": True}, 3),
        event({"type": "decision", "seat": 1, "play": True}, 4),
        event({"type": "hand", "seat": "dealer", "cards": ["KS", "KH", "4D"],
               "withheld": True}, 5),
        event({"type": "reveal"}, 6),
    ]
    outcome = msg("outcome", {
        "v": 2, "type": "outcome", "game": "qpoker", "round": 1, "status": "complete",
        "result": {"dealer": {"cards": ["KS", "KH", "4D"], "hand": "pair", "qualifies": True},
                   "seats": {"1": {"cards": ["2S", "2H", "9C"], "hand": "pair",
                                   "status": "active"}}},
        "bets": {"1": {"dobo": {"result": "lose"}, "play": {"result": "lose"}}}}, 0)
    return events, outcome


def test_the_qpoker_panel_never_shows_a_dealer_card_before_the_outcome() -> None:
    floor = Floor()
    floor.apply(birth("qpoker", devices=[{"id": "shuffler-1", "family": "shuffler"}]))
    events, outcome = qpoker_events_and_outcome()
    for e in events:  # the dealer's hand event has arrived: the outcome has not
        floor.apply(e)
        shown = json.dumps(floor.snapshot())
        assert "KS" not in shown and "KH" not in shown and "4D" not in shown
    floor.apply(outcome)
    panel = floor.panel("lab", "t1")
    assert panel is not None
    (rnd,) = panel["rounds"]
    assert rnd["dealer"] == {"cards": ["KS", "KH", "4D"], "hand": "pair", "qualifies": True}
    assert rnd["seats"]["1"]["dobo"] == {"result": "lose"}
    assert rnd["seats"]["1"]["cards"] == ["2S", "2H", "9C"]


def test_a_qpoker_void_carries_its_article() -> None:
    floor = Floor()
    floor.apply(birth("qpoker", devices=[{"id": "shuffler-1", "family": "shuffler"}]))
    floor.apply(msg("outcome", {"v": 2, "type": "outcome", "game": "qpoker", "round": 4,
                                "status": "void", "void_reason": "shuffler_failure",
                                "article": "qpoker.art11.5", "result": NOTHING_DEALT["qpoker"],
                                "bets": {}}, 0))
    panel = floor.panel("lab", "t1")
    assert panel is not None
    assert panel["voids"] == [{"round": 4, "reason": "shuffler_failure",
                               "article": "qpoker.art11.5"}]
    tile = floor.tile("lab", "t1")
    assert tile is not None and "qpoker.art11.5" in tile["last_outcome"]["line"]


def test_the_baccarat_roads_are_fed_each_outcome_and_start_anew_with_a_shoe() -> None:
    floor = Floor()
    floor.apply(birth())
    floor.apply(baccarat_outcome(1, 0, winner="banker"))
    floor.apply(baccarat_outcome(2, 1, winner="player"))
    panel = floor.panel("lab", "t1")
    assert panel is not None
    roads = panel["roads"]
    assert [b["winner"] for b in roads["bead_plate"]] == ["banker", "player"]
    assert [(e["col"], e["row"], e["winner"]) for e in roads["big_road"]] == [
        (0, 0, "banker"), (1, 0, "player")]
    floor.apply(event({"type": "shoe_start", "decks": 8}, 0))
    floor.apply(baccarat_outcome(3, 2, winner="tie"))
    panel = floor.panel("lab", "t1")
    assert panel is not None and panel["shoe"] == 1
    assert [b["winner"] for b in panel["roads"]["bead_plate"]] == ["tie"]
    assert panel["roads"]["big_road"] == []  # a leading tie waits for the first result
    assert len(panel["hands"]) == 3


async def test_changes_reach_a_listener_coalesced() -> None:
    feed = ChangeFeed()
    floor = Floor(changes=feed)
    with feed.subscribe() as sub:
        floor.apply(birth())
        floor.apply(baccarat_outcome(1, 0))
        floor.apply(birth(table="t2", seq=0))
        async with asyncio.timeout(1):
            batch = await sub.next()
        assert batch == {Change("table", "lab", "t1"), Change("table", "lab", "t2")}
        waiting = asyncio.create_task(sub.next())
        await asyncio.sleep(0.01)
        assert not waiting.done()
        floor.apply(will(1))
        async with asyncio.timeout(1):
            assert await waiting == {Change("table", "lab", "t1")}
    assert not feed._subscribers


async def test_a_rebuild_from_the_store_shows_the_floor_as_it_was(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "pit.sqlite")
    await store.open()
    live = Floor()
    stream = [birth(), device("shoe-1", "connected", 0), baccarat_outcome(1, 0),
              baccarat_outcome(2, 1), device("shoe-1", "lost", 1), will(1),
              birth(seq=2, table="t2"), baccarat_outcome(1, 0, table="t2")]
    for m in stream:
        await store.record(m, "pit:test")
        live.apply(m)
    rebuilt = Floor()
    assert await rebuilt.rebuild(store) == 2
    await store.close()

    def comparable(floor: Floor) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k not in ("last_heard",)} for t in floor.tiles()]

    assert comparable(rebuilt) == comparable(live)
    tile = rebuilt.tile("lab", "t1")
    assert tile is not None and tile["state"] == "offline"
    assert tile["devices"][0]["state"] == "lost"
    assert tile["last_outcome"]["round"] == 2


def test_the_model_applies_each_number_once_in_whatever_order_it_comes() -> None:
    """The live model is updated before the record answers (pit.service): a re-delivery or
    another copy under a number it applied changes nothing; a number it has not seen is
    applied even below the highest (a shared subscription's other half, a late message)."""
    floor = Floor()
    floor.apply(birth("baccarat"))
    assert floor.apply(baccarat_outcome(2, 1))
    assert not floor.apply(baccarat_outcome(2, 1))  # QoS 1 re-delivery
    assert not floor.apply(baccarat_outcome(9, 1, winner="player"))  # other bytes, same number
    assert floor.apply(baccarat_outcome(1, 0))  # below the highest, never seen: applied
    assert floor.apply(baccarat_outcome(3, 5))
    assert floor.apply(baccarat_outcome(4, 3)) and floor.apply(baccarat_outcome(5, 4))
    assert not floor.apply(baccarat_outcome(4, 3))
    panel = floor.panel("lab", "t1")
    assert panel is not None and [h["round"] for h in panel["hands"]] == [2, 1, 3, 4, 5]
    tile = floor.tile("lab", "t1")
    assert tile is not None and tile["rounds_last_hour"] == 5
    # a new shoe once, whatever copies of its start come
    assert floor.apply(event({"type": "shoe_start", "decks": 8}, 7))
    assert not floor.apply(event({"type": "shoe_start", "decks": 8}, 7))
    panel = floor.panel("lab", "t1")
    assert panel is not None and panel["shoe"] == 1


def test_rounds_in_the_last_hour_are_counted_by_the_minute() -> None:
    floor = Floor(clock=lambda: 10_000.0)
    floor.apply(birth("baccarat"))
    for n, at in enumerate((5_000.0, 6_430.0, 6_500.0, 9_000.0, 9_990.0)):
        floor.apply(baccarat_outcome(n + 1, n, at=at))
    tile = floor.tile("lab", "t1")
    # the last hour is 6,400-10,000: from the minute that starts at 6,420 on
    assert tile is not None and tile["rounds_last_hour"] == 4
    model = floor.table("lab", "t1")
    assert model is not None and len(model.outcome_minutes) == 4


def test_a_device_state_the_pit_does_not_know_is_kept_shown_and_counted() -> None:
    """A newer daemon may add a device state: the pit keeps it as it comes, shows it as it is,
    and counts it (``pit_device_states_unknown_total``) rather than refusing the status."""
    floor = Floor()
    floor.apply(birth())
    assert floor.apply(device("shoe-1", "connected", 0))
    assert floor.unknown_device_states == 0
    assert floor.apply(device("shoe-1", "calibrating", 1))
    (shown,) = floor.tile("lab", "t1")["devices"]  # type: ignore[index]
    assert shown["state"] == "calibrating"
    assert floor.unknown_device_states == 1
    text = PitMetrics(floor).text().decode()
    assert "pit_device_states_unknown_total 1.0" in text


def test_a_pit_part_that_does_not_load_leaves_the_table_on_the_floor_logged_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    declared = dict(registry.games())
    broken = dataclasses.replace(declared["craps"], parts={"pit": "tabled.games.craps:NO_PART"})
    declared["craps"] = broken
    monkeypatch.setattr(registry, "games", lambda: declared)
    monkeypatch.setattr(registry, "game", lambda name: declared[name])
    monkeypatch.setattr(model, "_UNUSABLE", set())
    floor = Floor()
    with structlog.testing.capture_logs() as logs:
        floor.apply(birth("craps", devices=[{"id": "dice-1", "family": "dice"}]))
        for n in range(3):
            floor.apply(craps_outcome(n + 1, n, (3, 4), None))
    tile = floor.tile("lab", "t1")
    assert tile is not None and tile["last_outcome"]["line"] == "#3 complete"
    assert floor.panel("lab", "t1") == {"game": "craps", "outcomes": [
        {"round": n, "status": "complete", "article": None, "void_reason": None}
        for n in (1, 2, 3)]}
    unusable = [e for e in logs if e["event"] == "pit_part_unusable"]
    assert len(unusable) == 1 and "NO_PART" in unusable[0]["error"]


def _alert(alert_id: int, table: str, state: str = "open", at: float = 1.0) -> Any:
    from tabled.pit.store import Alert

    return Alert(id=alert_id, site="lab", table=table, kind="device_lost", subject="shoe-1",
                 severity="major", state=state, message="lost", detail={},  # type: ignore[arg-type]
                 transient=False, count=1, opened_at=at, updated_at=at, acked_by=None,
                 acked_at=None, ack_note=None, cleared_at=None, closed_at=None,
                 closed_by=None)


def test_the_counts_by_state_and_each_tables_version_follow_every_change() -> None:
    """Floor.states() is kept between changes of a state and TableModel.version is what a page
    keys its rendering of a tile by (pit.web.app.tile_html): after every kind of change, the
    kept counts equal a fresh count, and a table whose tile or panel changed has a version it
    never had before."""
    floor = Floor(clock=lambda: 1_000.0)
    rng = random.Random(30)
    tables = ["t1", "t2", "t3"]
    seq = {t: {"status": 0, "device": 0, "outcome": 0} for t in tables}
    seen: dict[str, set[int]] = {t: set() for t in tables}
    shown: dict[str, Any] = {}
    alerts = 0
    for step in range(400):
        table = rng.choice(tables)
        kind = rng.choice(["birth", "will", "device", "outcome", "outcome", "alert", "close",
                           "set_alerts"])
        s = seq[table]
        if kind == "birth":
            s["status"] += 1
            floor.apply(birth(seq=s["status"], table=table,
                              started_at=f"2026-12-01T10:00:{step % 60:02d}.000Z"))
        elif kind == "will":
            s["status"] += 1
            floor.apply(will(s["status"], table=table))
        elif kind == "device":
            s["device"] += 1
            floor.apply(device("shoe-1", rng.choice(["connected", "lost"]), s["device"],
                               table=table))
        elif kind == "outcome":
            s["outcome"] += 1
            floor.apply(baccarat_outcome(s["outcome"], s["outcome"], table=table))
        elif kind == "alert":
            alerts += 1
            floor.alert_changed(_alert(alerts, table, at=float(step)))
        elif kind == "close" and alerts:
            floor.alert_changed(_alert(rng.randint(1, alerts), table, "closed", float(step)))
        elif kind == "set_alerts":
            floor.set_alerts([_alert(alerts + 1, table, at=float(step))])
            alerts += 1
        fresh = dict.fromkeys(("online", "degraded", "offline", "unknown"), 0)
        for t in floor.tables():
            fresh[t.state] += 1
        assert floor.states() == fresh, (step, kind)
        for t in floor.tables():
            now = (floor.tile("lab", t.table), floor.panel("lab", t.table))
            before = shown.get(t.table)
            if before is not None and before[0] != now:
                assert t.version != before[1], (step, kind, t.table)
                assert t.version not in seen[t.table]
            seen[t.table].add(t.version)
            shown[t.table] = (now, t.version)
    # the kept counts are the caller's own
    floor.states()["online"] = 99
    assert floor.states()["online"] != 99


async def test_a_table_reloaded_from_the_record_never_takes_an_old_version(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "pit.sqlite")
    await store.open()
    floor = Floor()
    for m in [birth(), baccarat_outcome(1, 0), baccarat_outcome(2, 1)]:
        await store.record(m, "pit:test")
        floor.apply(m)
    model_before = floor.table("lab", "t1")
    assert model_before is not None
    versions = {model_before.version}
    states_before = floor.states()
    await floor.reload(store, "lab", "t1")
    await store.close()
    after = floor.table("lab", "t1")
    assert after is not None and after is not model_before
    assert after.version not in versions and after.version > max(versions)
    assert floor.states() == states_before
