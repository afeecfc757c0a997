"""What a table serves back from its journal (docs/mqtt.md, "Reconciliation"): any stretch of a
published stream, byte for byte as it was published, found by a binary search where the stream
has no index; each stream's high-water mark up to a row; and the journal's identity. Real SQLite
files; the binary search is checked against a plain scan of everything the journal publishes."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabled.daemon.journal import DURABLE_TOPICS, InputEntry, Journal, OutputEntry

TS = "2026-12-03T23:00:00.000Z"

#: One journal write: an event published as itself, a withheld one (published as a copy, or
#: not at all), an outcome, a fault, a start; a few of them per transaction.
ENTRY = st.one_of(
    st.builds(lambda n, r: InputEntry("device:shoe-1", {"type": "card", "n": n, "é": "ü"},
                                      published=True, round=r),
              st.integers(0, 99), st.none() | st.integers(1, 9)),
    st.builds(lambda n: InputEntry("device:shuffler-1", {"type": "hand", "cards": ["AS"],
                                                         "n": n}), st.integers(0, 99)),
    st.builds(lambda t, n: OutputEntry(t, {"type": t, "n": n}, round=n % 5),
              st.sampled_from(DURABLE_TOPICS), st.integers(0, 99)),
)
WRITES = st.lists(st.lists(ENTRY, min_size=1, max_size=5), max_size=25)


def scan(journal: Journal, topic: str) -> dict[int, str]:
    """Every published message of ``topic`` by number, as the publisher reads them."""
    return {row.stream_seq: row.payload for row in journal._outputs_after(0, 1 << 20)
            if row.topic == topic}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(WRITES, st.sampled_from(DURABLE_TOPICS), st.integers(0, 40), st.integers(0, 40),
       st.integers(1, 12))
def test_a_range_read_is_what_a_scan_of_the_published_messages_gives(
        writes: list[list[InputEntry | OutputEntry]], topic: str, first: int, span: int,
        limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        journal = Journal(Path(tmp) / "j.sqlite")
        for entries in writes:
            journal.events.write(entries, TS)
        published = scan(journal, topic)
        last = first + span
        wanted = [(n, published[n]) for n in sorted(published) if first <= n <= last][:limit]
        got = journal.published_range(topic, first, last, limit)
        assert [(row.stream_seq, row.payload) for row in got] == wanted
        assert all(row.topic == topic for row in got)
        # and read back by a reader beside the writer (tabled journal, an audit)
        reader = Journal(Path(tmp) / "j.sqlite", create=False)
        assert reader.published_range(topic, first, last, limit) == got
        reader.close()
        # each stream's high-water mark up to any row, as a scan of those rows gives it
        for upto in sorted({0, journal.last_id // 2, journal.last_id}):
            rows = [r for r in journal._outputs_after(0, 1 << 20) if r.id <= upto]
            expected = {t: max([r.stream_seq for r in rows if r.topic == t], default=-1)
                        for t in DURABLE_TOPICS}
            assert journal.high_water_upto(upto) == expected
        assert journal.high_water() == {t: max(scan(journal, t), default=-1)
                                        for t in DURABLE_TOPICS}
        journal.close()


def test_a_withheld_card_is_never_served(tmp_path: Path) -> None:
    """Q Poker's dealer hand is journaled as an input that is not published, with its
    redacted copy on the event stream: only the copy is served."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.events.write([
        InputEntry("device:shuffler-1", {"type": "hand", "seat": "dealer", "cards": ["KH"]}),
        OutputEntry("event", {"type": "hand", "seat": "dealer", "face_up": False}, round=1),
    ], TS)
    served = journal.published_range("event", 0, 10, 10)
    assert [row.payload for row in served] == [
        '{"type":"hand","seat":"dealer","face_up":false,"table_seq":0}']
    journal.close()


def test_the_journal_has_an_identity_that_outlives_a_restart(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    made = journal.id
    assert made is not None and len(made) == 32 and int(made, 16) >= 0
    journal.close()
    again = Journal(tmp_path / "j.sqlite")
    assert again.id == made
    again.close()
    reader = Journal(tmp_path / "j.sqlite", create=False)
    assert reader.id == made
    reader.close()
    other = Journal(tmp_path / "other.sqlite")
    assert other.id is not None and other.id != made
    other.close()


def test_a_journal_from_before_identities_gets_one_from_its_writer_not_its_readers(
        tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([OutputEntry("outcome", {"round": 1}, round=1)], TS)
    journal.close()
    with sqlite3.connect(path) as db:  # as a release before identities left it
        db.execute("DELETE FROM meta WHERE key = 'journal_id'")
    db.close()
    reader = Journal(path, create=False)  # `tabled journal verify` writes nothing
    assert reader.id is None
    assert reader.verify().ok
    reader.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM meta WHERE key = 'journal_id'").fetchone() == (0,)
    db.close()
    writer = Journal(path)
    assert writer.id is not None
    assert writer.verify().ok
    assert [row.payload for row in writer.published_range("outcome", 0, 0, 1)] == [
        '{"round":1,"table_seq":0}']
    writer.close()
    assert Journal(path, create=False).id == writer.id
