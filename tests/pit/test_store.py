"""The store contract, against a real SQLite file and a real PostgreSQL server: idempotency under
re-delivery, conflicts, gaps, recall, alerts with their lifecycle and audit trail, the outbox,
retention, and (PostgreSQL) two pit servers writing the same stream at once."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tabled.pit.config import PostgresSettings
from tabled.pit.messages import Message, parse_message
from tabled.pit.store import AlertActionError, AlertSpec, Store, StoreError
from tabled.pit.store_postgres import PostgresStore
from tabled.pit.store_sqlite import SqliteStore
from tests.pit.conftest import (
    PgServer,
    baccarat_outcome,
    birth,
    device,
    event,
    fault,
    msg,
    will,
)

PIT = "pit:test"


async def test_a_redelivery_is_stored_once(store: Store) -> None:
    first = baccarat_outcome(1, 0)
    assert (await store.record(first, PIT)).status == "new"
    again = baccarat_outcome(1, 0)  # the same bytes under the same number: QoS 1 re-delivery
    recorded = await store.record(again, PIT)
    assert recorded.status == "duplicate" and not recorded.new
    stored = await store.messages("lab", "t1", "outcome")
    assert len(stored) == 1 and stored[0].payload["round"] == 1
    assert stored[0].payload == json.loads(first.text)


async def test_other_content_under_a_stored_number_is_a_conflict_and_keeps_the_first(
        store: Store) -> None:
    assert (await store.record(baccarat_outcome(1, 0, winner="banker"), PIT)).new
    recorded = await store.record(baccarat_outcome(7, 0, winner="player"), PIT)
    assert recorded.status == "conflict"
    stored = await store.messages("lab", "t1", "outcome")
    assert [m.payload["round"] for m in stored] == [1]


async def test_numbers_are_per_table_and_per_topic(store: Store) -> None:
    assert (await store.record(baccarat_outcome(1, 0), PIT)).new
    assert (await store.record(baccarat_outcome(1, 0, table="t2"), PIT)).new
    assert (await store.record(event({"type": "cut_card"}, 0), PIT)).new
    assert (await store.record(baccarat_outcome(1, 0, site="other"), PIT)).new
    assert sorted(await store.tables()) == [("lab", "t1"), ("lab", "t2"), ("other", "t1")]


async def test_the_unnumbered_journal_failure_is_stored_once_per_content(store: Store) -> None:
    failure = fault("journal_failure", None, device_id=None)
    assert (await store.record(failure, PIT)).new
    assert (await store.record(failure, PIT)).status == "duplicate"
    other = fault("journal_failure", None, device_id=None, at=time.time() + 1)
    other_body = dict(other.payload, detail="disk full")
    assert (await store.record(msg("fault", other_body, None), PIT)).new
    assert len(await store.messages("lab", "t1", "fault")) == 2


async def test_missing_numbers_and_high_water(store: Store) -> None:
    for seq in (0, 1, 2, 5, 6, 9):
        await store.record(event({"type": "cut_card"}, seq), PIT)
    await store.record(baccarat_outcome(1, 3), PIT)
    assert await store.missing("lab", "t1", "event", 0, 9) == [3, 4, 7, 8]
    assert await store.missing("lab", "t1", "event", 3, 4) == [3, 4]
    assert await store.missing("lab", "t1", "event", 5, 6) == []
    high = await store.high_water()
    assert high[("lab", "t1", "event")] == 9 and high[("lab", "t1", "outcome")] == 3


async def test_a_batch_is_recorded_in_order_with_what_each_message_was(store: Store) -> None:
    """record_many: one transaction, each message's fate as record() gives it, and an
    outcome's round delimited by the events before it in the same batch (recall)."""
    assert (await store.record(event({"type": "card", "card": "2S"}, 0), PIT)).new
    batch = [
        event({"type": "card", "card": "2S"}, 0),  # a re-delivery of a recorded one
        event({"type": "card", "card": "3H"}, 1),
        event({"type": "card", "card": "9D"}, 2),
        baccarat_outcome(1, 0),
        event({"type": "card", "card": "KC"}, 2),  # another card under a number just recorded
        event({"type": "card", "card": "4D"}, 3),
        event({"type": "card", "card": "4D"}, 3),  # the same bytes twice in one batch
        baccarat_outcome(2, 1),
        fault("journal_failure", None, device_id=None),
        fault("journal_failure", None, device_id=None),
    ]
    results = await store.record_many(batch, PIT)
    assert [r.status for r in results] == ["duplicate", "new", "new", "new", "conflict", "new",
                                           "duplicate", "new", "new", "duplicate"]
    assert results[0].id is not None and results[4].id == results[2].id
    recalled = await store.recall("lab", "t1", last=10)
    assert [[e["card"] for e in r.events] for r in recalled] == [["2S", "3H", "9D"], ["4D"]]
    assert await store.record_many([], PIT) == []
    assert await store.missing("lab", "t1", "event", 0, 3) == []


async def test_malformed_input_is_kept_with_its_reason(store: Store) -> None:
    await store.record_malformed("tabled/lab/t1/outcome", "payload is not JSON", b"\xff{oops",
                                 time.time(), PIT)
    assert await store.malformed_count() == 1


def _hand(seq0: int, cards: list[str]) -> list[dict[str, object]]:
    return [{"type": "card", "card": c} for c in cards]


async def test_recall_gives_each_round_its_events_and_outcome(store: Store) -> None:
    # the daemon publishes each round's events, then its outcome (journal order)
    seq = 0
    rounds = [["2S", "3H", "9D", "KC"], ["AS", "4H", "5D", "6C", "7S"], ["8S", "8H", "2D", "3C"]]
    for number, cards in enumerate(rounds, start=1):
        for card in cards:
            await store.record(event({"type": "card", "card": card}, seq), PIT)
            seq += 1
        await store.record(baccarat_outcome(number, number - 1), PIT)
    # a round in progress: not shown
    await store.record(event({"type": "card", "card": "TD"}, seq), PIT)
    recalled = await store.recall("lab", "t1", last=2)
    assert [r.round for r in recalled] == [2, 3]
    assert [[e["card"] for e in r.events] for r in recalled] == rounds[1:]
    assert recalled[0].outcome["round"] == 2
    everything = await store.recall("lab", "t1", last=10)
    assert [[e["card"] for e in r.events] for r in everything] == rounds
    assert await store.recall("lab", "nobody") == []


async def test_recent_outcomes_rounds_since_and_rebuild_records(store: Store) -> None:
    now = time.time()
    await store.record(birth(seq=0, at=now - 7200), PIT)
    await store.record(baccarat_outcome(1, 0, at=now - 4000), PIT)
    await store.record(event({"type": "shoe_start", "decks": 8}, 0, at=now - 3000), PIT)
    await store.record(baccarat_outcome(2, 1, at=now - 100), PIT)
    await store.record(device("shoe-1", "lost", 1, at=now - 90), PIT)
    await store.record(device("shoe-1", "connected", 2, at=now - 80), PIT)
    await store.record(will(1, at=now - 10), PIT)
    assert [m.payload["round"] for m in await store.recent_outcomes("lab", "t1", 5)] == [1, 2]
    assert await store.rounds_since("lab", "t1", now - 3600) == 1
    records = await store.rebuild_records("lab", "t1")
    kinds = [(m.stream, m.kind) for m in records]
    assert kinds == [("status", "online"), ("outcome", "complete"), ("event", "shoe_start"),
                     ("outcome", "complete"), ("device/shoe-1/status", "connected"),
                     ("status", "offline")]


def _at(m: Message, t: float) -> Message:
    """``m`` as the table stamped it at ``t`` (its ``ts``)."""
    body = {**m.payload, "ts": datetime.fromtimestamp(t, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")}
    return parse_message("tabled", f"tabled/{m.site}/{m.table}/{m.stream}",
                         json.dumps(body).encode(), m.received_at)


async def test_rebuild_records_come_in_the_tables_order_whatever_the_arrival(
        store: Store) -> None:
    """Messages fetched from a table's journal (pit.reconcile) arrive after newer ones: the
    rebuild puts them back in the table's order (its ``ts``)."""
    now = time.time()
    live = [_at(birth(seq=0, at=now), now - 500),
            _at(event({"type": "shoe_start", "decks": 8}, 40, at=now), now - 100),
            _at(baccarat_outcome(9, 8, at=now), now - 90)]
    fetched = [_at(event({"type": "shoe_start", "decks": 8}, 0, at=now), now - 400),
               _at(baccarat_outcome(1, 0, at=now), now - 390),
               _at(baccarat_outcome(8, 7, at=now), now - 110)]
    for m in live + fetched:
        await store.record(m, PIT)
    order = [(m.stream, m.table_seq) for m in await store.rebuild_records("lab", "t1")]
    assert order == [("status", 0), ("event", 0), ("outcome", 0), ("outcome", 7),
                     ("event", 40), ("outcome", 8)]


def _spec(kind: str = "offline", subject: str = "", transient: bool = False,
          table: str = "t1") -> AlertSpec:
    return AlertSpec("lab", table, kind, subject, "critical", f"{kind} {subject}".strip(),
                     {"reason": "connection_lost"}, transient)


async def test_alert_lifecycle_open_acknowledged_cleared_closed_with_its_audit(
        store: Store) -> None:
    raised = await store.raise_alert(_spec(), PIT, 100.0)
    assert raised is not None and raised.alert.state == "open" and raised.audit.action == "raised"
    alert_id = raised.alert.id
    # the same condition again: counted on the same alert, its timeline a "repeated" line
    repeated = await store.raise_alert(_spec(), PIT, 101.0)
    assert repeated is not None and repeated.audit.action == "repeated"
    assert repeated.alert.id == alert_id and repeated.alert.last_seen == 101.0
    assert len(await store.alerts()) == 1 and (await store.alert(alert_id)).count == 2  # type: ignore[union-attr]
    acked = await store.acknowledge(alert_id, "sam", "called the dealer", 102.0)
    assert acked.alert.state == "acknowledged" and acked.alert.acked_by == "sam"
    with pytest.raises(AlertActionError, match="acknowledged by sam"):
        await store.acknowledge(alert_id, "kim", None, 103.0)
    cleared = await store.clear_alert("lab", "t1", "offline", "", PIT, 104.0, "online again")
    assert cleared is not None and cleared.alert.state == "closed"
    assert cleared.alert.cleared_at == 104.0 and cleared.alert.closed_by == PIT
    assert await store.alerts() == []
    trail = await store.audit(alert_id)
    assert [(e.action, e.actor, e.state, e.note) for e in trail] == [
        ("raised", PIT, "open", "offline"),
        ("repeated", PIT, "open", "offline"),
        ("acknowledged", "sam", "acknowledged", "called the dealer"),
        ("cleared", PIT, "closed", "online again")]
    assert [e.at for e in trail] == [100.0, 101.0, 102.0, 104.0]
    # a new occurrence of the condition after the close is a new alert
    again = await store.raise_alert(_spec(), PIT, 105.0)
    assert again is not None and again.alert.id != alert_id


async def test_cleared_before_acknowledged_then_acknowledged_closes(store: Store) -> None:
    raised = await store.raise_alert(_spec("device_lost", "shoe-1"), PIT, 1.0)
    assert raised is not None
    cleared = await store.clear_alert("lab", "t1", "device_lost", "shoe-1", PIT, 2.0)
    assert cleared is not None and cleared.alert.state == "cleared"
    assert await store.clear_alert("lab", "t1", "device_lost", "shoe-1", PIT, 2.5) is None
    # it comes back before anyone looked: the same alert, open again
    reopened = await store.raise_alert(_spec("device_lost", "shoe-1"), PIT, 3.0)
    assert reopened is not None and reopened.alert.id == raised.alert.id
    assert reopened.audit.action == "reopened" and reopened.alert.state == "open"
    await store.clear_alert("lab", "t1", "device_lost", "shoe-1", PIT, 4.0)
    closed = await store.acknowledge(raised.alert.id, "sam", None, 5.0)
    assert closed.alert.state == "closed" and closed.alert.acked_by == "sam"
    assert [e.action for e in await store.audit(raised.alert.id)] == [
        "raised", "cleared", "reopened", "cleared", "acknowledged"]


async def test_a_transient_alert_closes_when_acknowledged_and_close_by_supervisor(
        store: Store) -> None:
    void = await store.raise_alert(_spec("void", "round 7", transient=True), PIT, 1.0)
    assert void is not None
    closed = await store.acknowledge(void.alert.id, "sam", "seen", 2.0)
    assert closed.alert.state == "closed"
    other = await store.raise_alert(_spec("silent"), PIT, 3.0)
    assert other is not None
    shut = await store.close_alert(other.alert.id, "sam", "table closed for the night", 4.0)
    assert shut.alert.state == "closed" and shut.alert.closed_by == "sam"
    with pytest.raises(AlertActionError, match="closed"):
        await store.close_alert(other.alert.id, "sam", None, 5.0)
    with pytest.raises(AlertActionError, match="no alert"):
        await store.acknowledge(999999, "sam", None, 5.0)
    states = ("open", "acknowledged", "cleared", "closed")
    assert len(await store.alerts(states=states)) == 2


async def test_the_outbox_publishes_each_change_once(store: Store) -> None:
    raised = await store.raise_alert(_spec(), PIT, 1.0)
    assert raised is not None
    refused = await store.audit_refusal(raised.alert.id, "vic", "acknowledge", "role viewer", 1.5)
    assert refused is not None and refused.action == "refused:acknowledge"
    await store.acknowledge(raised.alert.id, "sam", None, 2.0)
    pending = await store.pending_publications()
    assert [(e.action, a.id) for e, a in pending] == [("raised", raised.alert.id),
                                                      ("acknowledged", raised.alert.id)]
    first = pending[0][0].id
    assert await store.claim_publication(first, "pit:a", time.time())
    assert not await store.claim_publication(first, "pit:b", time.time())
    await store.mark_published(first, time.time())
    second = pending[1][0].id
    assert await store.claim_publication(second, "pit:a", time.time())
    await store.release_publication(second)  # the broker went away: someone else may take it
    assert await store.claim_publication(second, "pit:b", time.time())
    await store.mark_published(second, time.time())
    assert await store.pending_publications() == []
    seen = await store.audit_after(0)
    assert [e.action for e in seen] == ["raised", "refused:acknowledge", "acknowledged"]
    assert await store.audit_after(seen[-1].id) == []


async def test_retention_purges_old_messages_and_old_closed_alerts_only(store: Store) -> None:
    now = time.time()
    await store.record(baccarat_outcome(1, 0, at=now - 100 * 86400), PIT)
    await store.record(baccarat_outcome(2, 1, at=now - 10), PIT)
    await store.record_malformed("x", "bad", b"x", now - 100 * 86400, PIT)
    old = await store.raise_alert(_spec("void", "round 1", transient=True), PIT,
                                  now - 400 * 86400)
    assert old is not None
    await store.acknowledge(old.alert.id, "sam", None, now - 400 * 86400)
    ancient_open = await store.raise_alert(_spec("offline"), PIT, now - 500 * 86400)
    assert ancient_open is not None
    gone = await store.purge(now - 90 * 86400, now - 365 * 86400)
    assert gone == {"messages": 1, "malformed": 1, "audit": 2, "alerts": 1}
    assert [m.payload["round"] for m in await store.messages("lab", "t1")] == [2]
    assert [a.id for a in await store.alerts()] == [ancient_open.alert.id]  # open: kept


async def test_reopening_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "pit.sqlite"
    s = SqliteStore(path)
    await s.open()
    await s.record(baccarat_outcome(1, 0), PIT)
    await s.close()
    s = SqliteStore(path)
    await s.open()
    assert len(await s.messages("lab", "t1")) == 1
    await s.call(lambda db: db.execute("INSERT INTO pit_schema VALUES (99)"))
    await s.close()
    with pytest.raises(StoreError, match="schema version 99 is newer"):
        await SqliteStore(path).open()


async def test_an_unreachable_postgres_is_a_store_error() -> None:
    from tabled.daemon.broker import free_port

    s = PostgresStore(PostgresSettings(
        conninfo=f"host=127.0.0.1 port={free_port()} user=x dbname=y"), open_timeout=1.0)
    with pytest.raises(StoreError, match="cannot connect"):
        await s.open()


async def test_two_pit_servers_recording_one_stream_store_each_message_once(
        postgres: PgServer) -> None:
    conninfo = postgres.conninfo(postgres.new_database())
    a = PostgresStore(PostgresSettings(conninfo=conninfo))
    b = PostgresStore(PostgresSettings(conninfo=conninfo))
    await asyncio.gather(a.open(), b.open())  # both migrate: one at a time, once
    try:
        stream = [event({"type": "card", "card": "AS"}, n) for n in range(150)]
        stream += [baccarat_outcome(n + 1, n) for n in range(50)]

        async def record_all(s: Store, name: str) -> list[str]:
            return [(await s.record(m, name)).status for m in stream]

        left, right = await asyncio.gather(record_all(a, "pit:a"), record_all(b, "pit:b"))
        assert sorted(x for x in left + right) == ["duplicate"] * 200 + ["new"] * 200
        assert len(await a.messages("lab", "t1", "event", limit=1000)) == 150
        assert len(await b.messages("lab", "t1", "outcome", limit=1000)) == 50
        # both raise the same condition at once: one alert, counted twice
        changes = await asyncio.gather(*(s.raise_alert(_spec(), name, 1.0)
                                         for s, name in ((a, "pit:a"), (b, "pit:b"))))
        assert sorted(c.audit.action for c in changes if c is not None) == ["raised",
                                                                              "repeated"]
        alerts = await a.alerts()
        assert len(alerts) == 1 and alerts[0].count == 2
        # and both try to publish its change: one claim wins
        (entry, _), = await a.pending_publications()
        claims = await asyncio.gather(a.claim_publication(entry.id, "pit:a", time.time()),
                                      b.claim_publication(entry.id, "pit:b", time.time()))
        assert sorted(claims) == [False, True]
    finally:
        await asyncio.gather(a.close(), b.close())


async def test_a_store_operation_that_timed_out_in_its_begin_does_not_jam_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write whose time ran out while its BEGIN IMMEDIATE waited for SQLite's write lock
    (another process held it: ``tabled pit ack``, a backup): the BEGIN goes on in the store's
    thread and succeeds once the lock is free, and is rolled back there, so the operations
    after it work (it used to stay open: every later BEGIN failed inside it until the pit was
    restarted)."""
    import sqlite3
    import threading

    import tabled.pit.sql

    path = tmp_path / "pit.sqlite"
    s = SqliteStore(path)
    await s.open()
    try:
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock for 0.6 s
        release = threading.Timer(0.6, lambda: other.execute("ROLLBACK"))
        release.start()
        monkeypatch.setattr(tabled.pit.sql, "T_STORE", 0.2)
        with pytest.raises(StoreError, match=r"took longer than 0\.2 s"):
            await s.record(baccarat_outcome(1, 0), PIT)
        release.join()
        other.close()
        monkeypatch.setattr(tabled.pit.sql, "T_STORE", 10.0)
        assert (await s.record(baccarat_outcome(1, 0), PIT)).new
        assert (await s.record(baccarat_outcome(2, 1), PIT)).new
        assert len(await s.messages("lab", "t1")) == 2
    finally:
        await s.close()
