"""The integrity monitors in the pit (pit/watch.py) over a real SQLite store, the real floor
model and the real alert engine: findings become ``integrity:<monitor>`` alerts with readable
evidence, de-duplicated per (table, monitor, subject); ``pace`` clears; the table's options pick
the exact odds; a restart rebuilds the monitors from the record without raising anything again;
messages put back in order; switched off, nothing."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from tabled.contract.events import Declare, Event, event_to_dict
from tabled.contract.outcome import Outcome
from tabled.games.registry import make_table
from tabled.pit.alerts import AlertEngine
from tabled.pit.config import AlertSettings, IntegritySettings
from tabled.pit.messages import Message
from tabled.pit.model import Floor
from tabled.pit.store import Alert, Store
from tabled.pit.store_sqlite import SqliteStore
from tabled.pit.watch import IntegrityWatch, settings_of
from tabled.simulators.shoe import Preset
from tests.clock import Clock
from tests.oracle.integrity import baccarat_events, craps_events
from tests.pit.conftest import birth, msg


@dataclass
class Table:
    """One table's numbered streams, as its daemon publishes them."""

    game: str
    name: str = "t1"
    event_seq: int = 0
    outcome_seq: int = 0

    def __post_init__(self) -> None:
        self.rules = make_table(self.game)

    def messages(self, events: Iterable[Event], ts: Any = None) -> list[Message]:
        out = []
        for event in events:
            out.append(msg("event", event_to_dict(event), self.event_seq, table=self.name))
            self.event_seq += 1
            for output in self.rules.feed(event):
                if isinstance(output, Outcome):
                    record = output.to_record()
                    if ts is not None:
                        record["ts"] = ts(output.round)
                    out.append(msg("outcome", record, self.outcome_seq, table=self.name))
                    self.outcome_seq += 1
        return out


class Pit:
    """Store, floor, engine and integrity watch wired as the service wires them."""

    def __init__(self, store: Store, integrity: IntegritySettings | None = None) -> None:
        self.clock = Clock()
        self.store = store
        self.floor = Floor(clock=self.clock)
        self.engine = AlertEngine(store, self.floor, AlertSettings(silence_after=3600),
                                  actor="pit:test", clock=self.clock)
        self.watch = IntegrityWatch(integrity or IntegritySettings(), self.engine, self.floor,
                                    store, clock=self.clock)

    async def start(self) -> None:
        await self.floor.rebuild(self.store)
        await self.engine.start()
        await self.watch.start()

    async def feed(self, messages: Iterable[Message]) -> None:
        for m in messages:
            m = Message(m.topic, m.table_seq, m.payload, m.text, self.clock.now)
            recorded = await self.store.record(m, "pit:test")
            applied = self.floor.apply(m) if recorded.new else False
            await self.engine.message(m, recorded, applied)
            if recorded.new:
                found = self.watch.feed(m.site, m.table, m.stream, m.table_seq, m.payload,
                                        m.received_at)
                await self.watch.alerts(m.site, m.table, found)

    async def integrity(self, monitor: str | None = None) -> list[Alert]:
        return [a for a in await self.store.alerts()
                if a.kind.startswith("integrity:")
                and (monitor is None or a.kind == f"integrity:{monitor}")]


@pytest.fixture
async def pit(sqlite_store: SqliteStore) -> AsyncIterator[Pit]:
    p = Pit(sqlite_store)
    await p.start()
    yield p


async def test_loaded_dice_raise_a_critical_alert_with_its_evidence(pit: Pit) -> None:
    craps = Table("craps")
    await pit.feed([birth("craps", devices=[{"id": "dice-1", "family": "dice"}])])
    await pit.feed(craps.messages(craps_events(random.Random(1), 600, "6:0.5")))
    (alert,) = await pit.integrity()
    assert (alert.kind, alert.subject, alert.severity) == ("integrity:dice", "die 1 face 6",
                                                           "critical")
    assert alert.transient and alert.state == "open" and alert.count >= 2  # counted again
    assert alert.message.startswith("die 1 shows 6 too often: ")
    d = alert.detail
    assert d["monitor"] == "dice" and isinstance(d["round"], int)
    assert d["count"] > d["expected"] and d["cusum"] >= d["threshold"]
    assert d["false_alarms_per_10k_hours"] == 1.0
    tile = pit.floor.tile("lab", "t1")
    assert tile is not None and tile["alerts"]["by_severity"]["critical"] == 1


async def test_a_sorted_shoe_and_a_wrong_call_at_a_baccarat_table(pit: Pit) -> None:
    bac = Table("baccarat")
    await pit.feed([birth("baccarat")])
    await pit.feed(bac.messages(baccarat_events(random.Random(2), None, shoes=1,
                                                preset=Preset("sorted", 0, 30, 52))))
    (runs,) = await pit.integrity("shoe_runs")
    assert runs.severity == "critical" and runs.subject.endswith(" ranks")
    assert runs.detail["cards"][:2] == ["AS", "2S"] and "new deck's order" in runs.message
    last = bac.rules.next_round - 1
    # the dealer calls each winner for the last hand: two calls at least are wrong
    await pit.feed(bac.messages([Declare(result=w) for w in ("banker", "player", "tie")]))
    mismatches = await pit.integrity("result_mismatch")
    assert len(mismatches) == 1 and mismatches[0].subject == f"round {last}"
    assert mismatches[0].count in (2, 3) and mismatches[0].severity == "major"


async def test_pace_out_of_bounds_opens_and_clears(sqlite_store: SqliteStore) -> None:
    pit = Pit(sqlite_store, IntegritySettings(pace_window=600, idle_gap=120))
    await pit.start()
    craps = Table("craps")
    await pit.feed([birth("craps", devices=[])])

    def stamp(n: int) -> str:
        from datetime import UTC, datetime

        # a roll every 5 s (720 an hour) for 150 rolls, then every 30 s (120 an hour)
        at = 1.8e9 + 5.0 * min(n, 150) + 30.0 * max(n - 150, 0)
        return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")

    rolls = list(craps_events(random.Random(3), 300))
    await pit.feed(craps.messages(rolls[:150], ts=stamp))
    (fast,) = await pit.integrity("pace")
    assert fast.subject == "fast" and not fast.transient and fast.state == "open"
    assert "above the bound of 250" in fast.message
    await pit.feed(craps.messages(rolls[150:], ts=stamp))
    (cleared,) = await pit.integrity("pace")
    assert cleared.id == fast.id and cleared.state == "cleared"


async def test_the_declared_options_pick_the_exact_odds(pit: Pit) -> None:
    await pit.feed([birth("baccarat", seq=0)])
    first = pit.watch._state("lab", "t1", {})
    assert first is not None and first.options.method == 1  # type: ignore[union-attr]
    body = birth("baccarat", seq=1, started_at="2026-12-02T10:00:00.000Z")
    body.payload["options"] = {"method": 2, "commission": "five_percent", "last_hand": "this",
                               "decks": 6, "from_a_newer_daemon": True}
    await pit.feed([msg("status", body.payload, 1)])
    state = pit.watch._state("lab", "t1", {})
    assert state is not None and state is not first
    assert state.options.method == 2 and state.options.decks == 6  # type: ignore[union-attr]
    (hands,) = state.monitors.calibration.frequency
    assert hands.p0[2] == pytest.approx(0.08796, abs=1e-5)  # method 2's ties, 6 decks


async def test_a_restart_rebuilds_the_monitors_without_raising_again(
        sqlite_store: SqliteStore) -> None:
    pit = Pit(sqlite_store)
    await pit.start()
    bac = Table("baccarat")
    await pit.feed([birth("baccarat")])
    events = list(baccarat_events(random.Random(4), None, shoes=2, preset=Preset("riffle")))
    second = [i for i, e in enumerate(events) if e.type == "shoe_start"][1]
    await pit.feed(bac.messages(events[:second]))  # the first, fair shoe
    assert await pit.integrity() == []
    # the pit restarts: its monitors come back from the record, silently
    again = Pit(sqlite_store)
    await again.start()
    assert await again.integrity() == []
    await again.feed(bac.messages(events[second:]))  # the riffled shoe
    (riffle,) = await again.integrity("riffle")
    assert "previous shoe" in riffle.message and riffle.count == 1
    # and once more: the riffle alert is not raised again by the rebuild
    third = Pit(sqlite_store)
    await third.start()
    (same,) = await third.integrity("riffle")
    assert same.count == 1


async def test_out_of_order_delivery_is_put_back_in_order(pit: Pit) -> None:
    bac = Table("baccarat")
    await pit.feed([birth("baccarat")])
    messages = bac.messages(baccarat_events(random.Random(5), None, shoes=1,
                                            preset=Preset("sorted", 0, 60, 52)))
    # a shared subscription's other half arrives a little later: swap neighbours throughout
    shuffled = list(messages)
    for i in range(0, len(shuffled) - 1, 2):
        shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]
    await pit.feed(shuffled)
    (runs,) = await pit.integrity("shoe_runs")
    assert runs.detail["cards"][:9] == ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S"]


async def test_switched_off_nothing_runs(sqlite_store: SqliteStore) -> None:
    pit = Pit(sqlite_store, IntegritySettings(enabled=False))
    await pit.start()
    craps = Table("craps")
    await pit.feed([birth("craps", devices=[])])
    await pit.feed(craps.messages(craps_events(random.Random(1), 400, "6:0.6")))
    assert await pit.integrity() == []


def test_the_config_section_gives_the_monitors_defaults() -> None:
    from tabled.pit.integrity.calibration import DEFAULT_SETTINGS

    assert settings_of(IntegritySettings()) == DEFAULT_SETTINGS
