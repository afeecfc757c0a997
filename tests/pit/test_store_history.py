"""The history's queries (:meth:`RecordStore.round_page`, :meth:`RecordStore.segments` …),
against a real SQLite file and a real PostgreSQL server: paging by cursor both ways, by round
number and by time, the faults that touched a round, and a table's segments (shoes)."""

from __future__ import annotations

from tabled.contract import CONTRACT_VERSION
from tabled.pit.store import RoundQuery, Store
from tests.pit.conftest import baccarat_outcome, event, fault, msg

PIT = "pit:test"
T0 = 1_800_000_000.0


async def _play(store: Store, rounds: int, *, shoe_every: int = 0) -> None:
    """``rounds`` rounds of two cards each, round n's outcome received at T0 + 10 n; a
    ``shoe_start`` before round 1 and every ``shoe_every`` rounds."""
    seq = 0
    for n in range(1, rounds + 1):
        at = T0 + 10 * n
        if shoe_every and (n - 1) % shoe_every == 0:
            await store.record(event({"type": "shoe_start", "decks": 8}, seq, at=at - 5), PIT)
            seq += 1
        for card in ("2S", "3H"):
            await store.record(event({"type": "card", "card": card, "round": n}, seq,
                                     at=at - 2), PIT)
            seq += 1
        await store.record(baccarat_outcome(n, n - 1, at=at), PIT)


async def test_rounds_page_back_and_forth_by_cursor(store: Store) -> None:
    await _play(store, 25)
    await store.record(event({"type": "card", "card": "TD"}, 50, at=T0 + 300), PIT)
    first = await store.round_page("lab", "t1", RoundQuery(size=10))
    assert [r.round for r in first.rounds] == list(range(25, 15, -1))
    assert first.newer is None and first.older is not None
    assert [e["card"] for e in first.rounds[0].events] == ["2S", "3H"]  # not the open round's
    second = await store.round_page("lab", "t1", RoundQuery(before=first.older, size=10))
    assert [r.round for r in second.rounds] == list(range(15, 5, -1))
    third = await store.round_page("lab", "t1", RoundQuery(before=second.older, size=10))
    assert [r.round for r in third.rounds] == [5, 4, 3, 2, 1]
    assert third.older is None and third.newer is not None
    back = await store.round_page("lab", "t1", RoundQuery(after=third.newer, size=10))
    assert [r.round for r in back.rounds] == [r.round for r in second.rounds]
    assert back.newer is not None and back.older is not None
    assert all(len(r.events) == 2 for r in back.rounds)
    assert (await store.round_page("lab", "nobody", RoundQuery())).rounds == []


async def test_rounds_by_number_and_by_time(store: Store) -> None:
    await _play(store, 30)
    at12 = await store.round_page("lab", "t1", RoundQuery(round=12, size=5))
    assert [r.round for r in at12.rounds] == [12, 11, 10, 9, 8]
    assert at12.newer is not None and at12.older is not None
    window = await store.round_page("lab", "t1", RoundQuery(since=T0 + 95, until=T0 + 150,
                                                            size=50))
    assert [r.round for r in window.rounds] == list(range(15, 9, -1))
    assert window.older is None and window.newer is None


async def test_each_round_has_the_faults_that_touched_it(store: Store) -> None:
    await _play(store, 6)
    # in round 3's span (after round 2's outcome, before round 3's)
    await store.record(fault("card_misread", 0, device_id="shoe-1", at=T0 + 25), PIT)
    # naming no round, received just after round 5's outcome: round 6's
    await store.record(fault("dealer_procedure", 1, device_id=None, at=T0 + 51), PIT)
    page = await store.round_page("lab", "t1", RoundQuery(size=10))
    faults = {r.round: [f["code"] for f in r.faults] for r in page.rounds}
    assert faults[3] == ["card_misread"]
    assert faults[6] == ["dealer_procedure"]  # by time: after round 5's outcome
    assert all(not faults[n] for n in (1, 2, 4, 5))
    recalled = await store.recall("lab", "t1", last=4)  # recall shows them too
    assert [[f["code"] for f in r.faults] for r in recalled] \
        == [["card_misread"], [], [], ["dealer_procedure"]]


async def test_a_fault_naming_a_round_is_that_rounds(store: Store) -> None:
    await _play(store, 4)
    body = {"v": CONTRACT_VERSION, "type": "notice", "code": "void_round",
            "event": {"type": "card", "round": 2}, "article": "baccarat.art9"}
    await store.record(msg("fault", body, 0, at=T0 + 41), PIT)
    page = await store.round_page("lab", "t1", RoundQuery(size=10))
    faults = {r.round: [f["code"] for f in r.faults] for r in page.rounds}
    assert faults == {4: [], 3: [], 2: ["void_round"], 1: []}


async def test_segments_are_the_shoes_newest_first_with_their_rounds(store: Store) -> None:
    await _play(store, 25, shoe_every=10)
    shoes = await store.segments("lab", "t1", "shoe_start")
    assert [(s.number, s.rounds) for s in shoes] == [(3, 5), (2, 10), (1, 10)]
    assert shoes[0].event["decks"] == 8 and shoes[1].next_seq == shoes[0].table_seq
    older = await store.segments("lab", "t1", "shoe_start", before=shoes[0].table_seq, size=1)
    assert [s.number for s in older] == [2]
    timed = await store.segments("lab", "t1", "shoe_start", until=T0 + 100)
    assert [s.number for s in timed] == [1]
    second = await store.segment("lab", "t1", "shoe_start", 2)
    assert second is not None and second.table_seq == shoes[1].table_seq
    outcomes = await store.segment_outcomes("lab", "t1", second)
    assert [m.payload["round"] for m in outcomes] == list(range(11, 21))
    last = await store.segment("lab", "t1", "shoe_start", 3)
    assert last is not None and last.next_seq is None
    assert [m.payload["round"] for m in await store.segment_outcomes("lab", "t1", last)] \
        == list(range(21, 26))
    assert await store.segment("lab", "t1", "shoe_start", 4) is None
    assert await store.segment("lab", "t1", "shoe_start", 0) is None
    assert await store.segments("lab", "t1", "no_such_event") == []
