"""The journal on real SQLite files: atomic batches, per-topic sequence numbers that survive a
reopen, a hash chain that catches tampering, game recall, a full disk, one writer at a time, and
a journal that reads its positions from the file again after a failure."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabled.daemon.journal import (
    PAGE_SIZE,
    SCHEMA_VERSION,
    InputEntry,
    Journal,
    JournalError,
    JournalInUse,
    OutputEntry,
    StartEntry,
    _row_hash,
)
from tests.campaigns.campaigns import _mount, _umount, can_mount

TS = "2026-11-29T16:00:00.000Z"


def card(code: str) -> InputEntry:
    return InputEntry("device:shoe-1", {"v": 1, "type": "card", "card": code})


def outcome(round_no: int) -> OutputEntry:
    return OutputEntry("outcome", {"v": 1, "type": "outcome", "round": round_no,
                                   "status": "complete", "result": {}}, round=round_no)


def test_batches_are_sequenced_per_topic_and_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    stored = journal.events.write(
        [card("AS"), OutputEntry("event", {"type": "card"}), outcome(1)], TS)
    assert [(s.topic, s.stream_seq) for s in stored] == [("event", 0), ("outcome", 0)]
    assert '"table_seq":0' in stored[1].payload
    journal.close()
    journal = Journal(path)
    stored = journal.events.write([OutputEntry("event", {"type": "card"}), outcome(2),
                            OutputEntry("fault", {"code": "x"})], TS)
    assert [(s.topic, s.stream_seq) for s in stored] == [("event", 1), ("outcome", 1),
                                                          ("fault", 0)]
    assert [o.stream_seq for o in journal.delivery.outputs_after(0)] == [0, 0, 1, 1, 0]
    assert journal.verify().ok
    journal.close()


def test_a_failed_batch_leaves_nothing_behind(tmp_path: Path) -> None:
    """A disk that fills in the middle of a batch: the whole batch is refused, the journal and
    its sequence numbers are as before, and the next batch continues the chain."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.events.write([card("AS"), outcome(1)], TS)
    db = sqlite3.connect(journal.path)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.close()
    journal._db.execute(f"PRAGMA max_page_count = {pages + 1}")  # a nearly full disk
    big = [OutputEntry("event", {"pad": "x" * 3000}) for _ in range(50)]
    with pytest.raises(JournalError, match="full"):
        journal.events.write(big, TS)
    assert journal.next_seq("event") == 0 and journal.next_seq("outcome") == 1
    journal._db.execute("PRAGMA max_page_count = 1073741823")
    journal.events.write([outcome(2)], TS)
    assert [o.stream_seq for o in journal.delivery.outputs_after(0)] == [0, 1]
    assert journal.verify().ok


@pytest.mark.parametrize("tamper", ["edit", "delete", "insert"])
def test_verify_finds_tampering(tmp_path: Path, tamper: str) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    for n in range(1, 6):
        journal.events.write([card("KH"), outcome(n)], TS)
    assert journal.verify().ok and journal.verify().rows == 10
    db = sqlite3.connect(journal.path)
    if tamper == "edit":
        db.execute("UPDATE journal SET body = replace(body, 'KH', 'KS') WHERE id = 5")
    elif tamper == "delete":
        db.execute("DELETE FROM journal WHERE id = 4")
    else:
        db.execute("INSERT INTO journal VALUES (11, 'input', NULL, NULL, 'x', NULL, 't', '{}', "
                   "x'00', NULL)")
    db.commit()
    db.close()
    result = journal.verify()
    assert not result.ok
    assert result.first_bad_id == {"edit": 5, "delete": 5, "insert": 11}[tamper]


def test_recall_gives_the_last_rounds_with_their_inputs(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    journal.audit.record_start({"game": "baccarat"}, TS)
    for n, cards in enumerate((["AS", "2S", "3S", "4S"], ["5H", "6H", "7H", "8H"],
                               ["9C", "TC", "JC", "QC"]), 1):
        journal.events.write([card(c) for c in cards] + [outcome(n)], TS)
    journal.events.write([card("KD")], TS)  # a round in progress: not recalled
    rounds = journal.recall(2)
    assert [r.round for r in rounds] == [2, 3]
    assert [i.body["card"] for i in rounds[0].inputs] == ["5H", "6H", "7H", "8H"]
    assert [i.body["card"] for i in rounds[1].inputs] == ["9C", "TC", "JC", "QC"]
    assert rounds[1].outcome["round"] == 3


def test_the_file_is_private(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state" / "j.sqlite")
    assert (journal.path.stat().st_mode & 0o077) == 0
    journal.close()


def test_the_acknowledged_position_is_the_later_of_meta_and_the_rows(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    journal.events.write([card("AS"), outcome(1), card("KH"), outcome(2)], TS)
    journal._set_meta("acked_id", "2")  # what the publisher persists now and then
    assert journal.delivery.acked_id() == 2
    journal.delivery.note_acked(4)
    journal.events.write([card("QD")], TS)
    assert journal.delivery.acked_id() == 4  # rode on row 5, after the persisted position
    journal._set_meta("acked_id", "5")
    assert journal.delivery.acked_id() == 5


def test_save_acked_commits_only_a_position_no_write_carried(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    journal.events.write([card("AS"), outcome(1), card("KH"), outcome(2)], TS)
    journal.delivery.note_acked(2)
    journal.events.write([card("QD")], TS)
    journal.delivery.save_acked()
    assert journal._get_meta("acked_id") is None  # the write carried it: nothing more to do
    journal.delivery.note_acked(4)
    journal.delivery.save_acked()
    assert journal._get_meta("acked_id") == "4"
    journal.close()
    assert Journal(tmp_path / "j.sqlite").delivery.acked_id() == 4


def test_a_journal_from_before_the_acked_column_opens_and_keeps_its_chain(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), outcome(1)], TS)
    journal._set_meta("acked_id", "2")
    journal.close()
    db = sqlite3.connect(path)  # as the journal was made before the column existed
    db.execute("ALTER TABLE journal DROP COLUMN acked")
    db.commit()
    db.close()
    reopened = Journal(path)
    assert reopened.verify().ok and reopened.delivery.acked_id() == 2
    reopened.delivery.note_acked(2)
    reopened.events.write([card("KH"), outcome(2)], TS)
    assert reopened.verify().ok and reopened.verify().rows == 4
    assert [o.stream_seq for o in reopened.delivery.outputs_after(0, 10)] == [0, 1]


def page_size(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA page_size").fetchone()[0])
    finally:
        db.close()


def test_a_new_journal_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """New files get PAGE_SIZE (a commit writes whole pages); a file made with SQLite's default
    keeps it, opens, takes writes and verifies; a row bigger than a page (overflow pages)
    reads back whole."""
    new = tmp_path / "new.sqlite"
    journal = Journal(new)
    big = OutputEntry("outcome", {"type": "outcome", "round": 1, "pad": "x" * (3 * PAGE_SIZE)},
                      round=1)
    journal.events.write([card("AS"), big], TS)
    journal.close()
    assert PAGE_SIZE == 1024 and page_size(new) == PAGE_SIZE
    reopened = Journal(new)
    [row] = reopened.delivery.outputs_after(1)
    assert json.loads(row.payload)["pad"] == "x" * (3 * PAGE_SIZE)
    assert reopened.verify().ok
    reopened.close()
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)  # an existing journal's file: SQLite's default page size
    db.execute("CREATE TABLE t (a)")
    db.execute("DROP TABLE t")
    db.close()
    assert page_size(old) == 4096
    journal = Journal(old)
    journal.events.write([card("KH"), outcome(1)], TS)
    journal.close()
    assert page_size(old) == 4096
    reopened = Journal(old)
    assert reopened.verify().ok and reopened.verify().rows == 2
    reopened.close()


def indexes(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'journal'")}
    finally:
        db.close()


def test_a_format_2_journal_is_migrated_with_its_numbers(tmp_path: Path) -> None:
    """Format 2 indexed every stream's numbers; 3 leaves the event stream out. A format 2 file
    is read as it is (without the lock, before any change), then migrated when a writer opens
    it: the old index gone, the new one there, each stream going on from its last number."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), OutputEntry("event", {"type": "card"}), outcome(1),
                          OutputEntry("fault", {"code": "x"}),
                          OutputEntry("event", {"type": "card"})], TS)
    journal.close()
    db = sqlite3.connect(path)  # as format 2 made it
    db.execute("DROP INDEX journal_numbers")
    db.execute("CREATE UNIQUE INDEX journal_stream ON journal (topic, stream_seq) "
               "WHERE kind = 'output'")
    db.execute("PRAGMA user_version=2")
    db.commit()
    db.close()
    reader = Journal(path, create=False)
    assert reader.version == 2 and [reader.next_seq(t) for t in ("event", "outcome", "fault")] \
        == [2, 1, 1]
    reader.close()
    assert "journal_stream" in indexes(path)
    writer = Journal(path)
    assert writer.version == SCHEMA_VERSION == 4
    assert indexes(path) == {"journal_numbers", "journal_output_round"}
    stored = writer.events.write([OutputEntry("event", {"type": "card"}), outcome(2),
                                  OutputEntry("fault", {"code": "y"})], TS)
    assert [(s.topic, s.stream_seq) for s in stored] == [("event", 2), ("outcome", 1),
                                                          ("fault", 1)]
    assert writer.verify().ok
    writer.close()


def test_a_format_3_journal_goes_on_with_inputs_published_as_themselves(
        tmp_path: Path) -> None:
    """Format 3 wrote an event's message as a second row; 4 writes an input published as
    itself once, and indexes the rounds of outputs only. A format 3 file is migrated when a
    writer opens it (its rows read as they are), and the event stream goes on across the two
    kinds of row: numbered in order, published with the text the copies had, recalled with
    the input as it came."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), OutputEntry("event", {**card("AS").body, "round": 1}),
                          outcome(1)], TS)
    journal.close()
    db = sqlite3.connect(path)  # as format 3 made it
    db.execute("DROP INDEX journal_output_round")
    db.execute("CREATE INDEX journal_round ON journal (round) WHERE round IS NOT NULL")
    db.execute("PRAGMA user_version=3")
    db.commit()
    db.close()
    writer = Journal(path)
    assert writer.version == 4 and indexes(path) == {"journal_numbers", "journal_output_round"}
    body = card("KH").body
    [message] = writer.events.write([InputEntry("device:shoe-1", body, published=True,
                                                round=2)], TS)
    assert (message.id, message.topic, message.stream_seq) == (4, "event", 1)
    assert json.loads(message.payload) == {**body, "round": 2, "table_seq": 1}
    writer.events.write([card("QD"), OutputEntry("event", {"type": "withheld"}), outcome(2)],
                        TS)
    assert writer.verify().ok and writer.verify().rows == 7
    writer.close()
    for reader in (Journal(path), Journal(path, create=False)):
        # from the file, not the last write: the publisher after a restart, an audit
        assert [(o.id, o.topic, o.stream_seq) for o in reader.delivery.outputs_after(0)] == [
            (2, "event", 0), (3, "outcome", 0), (4, "event", 1), (6, "event", 2),
            (7, "outcome", 1)]
        assert reader.delivery.outputs_after(3)[0] == message
        assert reader.delivery.count_outputs_after(3) == 3
        assert [i.body for i in reader.inputs()] == [card("AS").body, body, card("QD").body]
        assert [r.inputs[0].body for r in reader.recall()] == [card("AS").body, body]
        assert reader.next_seq("event") == 3
        reader.close()
    with sqlite3.connect(path) as db:
        # the round of an input published as itself is in no index: no page more per commit
        plan = " ".join(str(r) for r in db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM journal WHERE round = 2"))
    assert "journal_output_round" not in plan


def test_the_event_streams_next_number_is_found_behind_other_rows(tmp_path: Path) -> None:
    """The event stream has no index: its next number is its last row's plus one, however
    many rows of other streams came after it."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([OutputEntry("event", {"type": "card"})] * 3, TS)
    for n in range(300):
        journal.events.write([card("AS"), OutputEntry("fault", {"code": str(n)})], TS)
    journal.close()
    journal = Journal(path)
    assert (journal.next_seq("event"), journal.next_seq("fault")) == (3, 300)
    journal.close()


def test_verify_finds_a_number_given_twice_or_skipped(tmp_path: Path) -> None:
    """A writer that numbered wrongly (a bug: the numbers come from the journal alone) leaves
    an intact chain; verify still names the row. The event stream, without an index, takes
    the row, a copy or an input published as itself; the other streams' index refuses a
    number given twice."""
    published = InputEntry("device:shoe-1", card("AS").body, published=True, round=1)
    copy = [card("AS"), OutputEntry("event", {"type": "card"})]
    for n, (slip, what, entries, bad) in enumerate((
            (-1, "its event number is 1, 2 was due", copy, 4),
            (+1, "its event number is 3, 2 was due", copy, 4),
            (-1, "its event number is 1, 2 was due", [published], 3),
            (+1, "its event number is 3, 2 was due", [published], 3))):
        journal = Journal(tmp_path / f"j{n}.sqlite")
        journal.events.write([OutputEntry("event", {"type": "card"})] * 2, TS)
        journal._next_seq["event"] += slip
        journal.events.write(entries, TS)
        result = journal.verify()
        assert not result.ok and result.first_bad_id == bad and what in result.reason
        journal.close()
    journal = Journal(tmp_path / "o.sqlite")
    journal.events.write([outcome(1)], TS)
    journal._next_seq["outcome"] -= 1
    with pytest.raises(JournalError, match="UNIQUE"):
        journal.events.write([outcome(2)], TS)
    assert journal.verify().ok and journal.verify().rows == 1
    journal.close()


def test_opening_a_missing_journal_for_reading_fails(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal"):
        Journal(tmp_path / "none.sqlite", create=False)


def test_the_acknowledged_position_rides_on_the_next_write(tmp_path: Path) -> None:
    """No commit of its own: the broker's acknowledgement is made durable with the next batch,
    so that a crash re-publishes only what was in flight since."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.events.write([card("AS"), outcome(1)], TS)
    journal.delivery.note_acked(2)
    assert journal.delivery.acked_id() == 0  # not yet: nothing was written since
    journal.events.write([card("KH")], TS)
    journal.close()
    assert Journal(tmp_path / "j.sqlite").delivery.acked_id() == 2



def test_a_write_of_more_rows_than_one_insert_holds_is_one_transaction(tmp_path: Path) -> None:
    """A write goes to the file in INSERTs of at most a hundred rows: a large one (a burst of
    frames in one read) is still one transaction, in order, its chain intact, with the
    acknowledged position on its last row only."""
    journal = Journal(tmp_path / "j.sqlite")
    entries: list[InputEntry | OutputEntry] = []
    for n in range(120):
        entries += [card(f"{n}"), OutputEntry("event", {"type": "card", "n": n})]
    journal.delivery.note_acked(0)
    stored = journal.events.write(entries, TS)
    assert [s.stream_seq for s in stored] == list(range(120))
    assert [s.id for s in stored] == list(range(2, 241, 2))
    assert journal.verify().ok and journal.verify().rows == 240
    journal.close()
    with sqlite3.connect(tmp_path / "j.sqlite") as db:
        acked = db.execute("SELECT id FROM journal WHERE acked IS NOT NULL").fetchall()
        bodies = [json.loads(b) for (b,) in db.execute(
            "SELECT body FROM journal WHERE kind = 'output' ORDER BY id")]
    assert acked == [(240,)]
    assert [b["n"] for b in bodies] == list(range(120))


def _chain_hash(prev: bytes, row: tuple[object, ...]) -> bytes:
    """The chain as every journal so far was hashed: one value at a time (the old code)."""
    import hashlib
    h = hashlib.sha256(prev)
    for value in row:
        h.update(b"\x1f")
        h.update(b"\x00" if value is None else str(value).encode())
    return h.digest()


_values = st.one_of(st.none(), st.integers(), st.text())


@given(prev=st.binary(min_size=32, max_size=32),
       row=st.tuples(st.integers(min_value=1), _values, _values, _values, _values, _values,
                     st.text(), st.text()))
def test_a_rows_hash_is_the_chains_definition(prev: bytes, row: tuple[object, ...]) -> None:
    # NUL and 0x1f in a text, and non-ASCII, hash as the definition says
    assert _row_hash(prev, row) == _chain_hash(prev, row)


# -- one writer per journal, and a journal that heals (issue 16, item 5) ---------------------------


def test_a_second_writer_is_refused_and_told_who_holds_it(tmp_path: Path) -> None:
    """Two writers once shared a journal: each kept its own idea of the last row and the next
    numbers, so both published the same outcomes and one then failed every write. A journal is
    open for writing in one place only: an OS lock beside it, held while it is open."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), outcome(1)], TS)
    with pytest.raises(JournalInUse) as refused:
        Journal(path)
    assert str(refused.value) == f"journal {path} is in use by PID {os.getpid()}"
    assert refused.value.pid == os.getpid()
    # another process is refused the same way, and the holder never notices
    other = subprocess.run([sys.executable, "-c", OPEN_FOR_WRITING, str(path)],
                           capture_output=True, text=True, timeout=60, check=False)
    assert (other.returncode, other.stdout) == (3, f"journal {path} is in use by PID "
                                                   f"{os.getpid()}\n")
    journal.events.write([card("KH"), outcome(2)], TS)
    assert [o.stream_seq for o in journal.delivery.outputs_after(0)] == [0, 1]
    assert journal.verify().ok and journal.verify().rows == 4
    journal.close()
    Journal(path).close()  # closed: free again


OPEN_FOR_WRITING = """
import sys
from tabled.daemon.journal import Journal, JournalInUse
try:
    Journal(sys.argv[1])
except JournalInUse as exc:
    print(exc)
    sys.exit(3)
"""

HOLD_FOR_WRITING = """
import sys, time
from tabled.daemon.journal import Journal
journal = Journal(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


def test_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    """kill -9 leaves no stale lock: the kernel releases it with the process (the file and the
    dead holder's PID in it stay, and mean nothing)."""
    path = tmp_path / "j.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FOR_WRITING, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(JournalInUse, match=f"in use by PID {holder.pid}$"):
            Journal(path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    journal = Journal(path)
    assert (tmp_path / "j.sqlite.lock").read_text() == f"{os.getpid()}\n"
    journal.close()


def test_readers_take_no_lock_and_cannot_write(tmp_path: Path) -> None:
    """``tabled journal verify`` and ``recall`` read a live journal (WAL gives them a
    consistent snapshot): they need no lock, and their connection refuses any write, so they
    cannot disturb the daemon that holds it."""
    path = tmp_path / "j.sqlite"
    writer = Journal(path)
    writer.events.write([StartEntry({"game": "baccarat"}), card("AS"), outcome(1)], TS)
    reader = Journal(path, create=False)
    assert reader.verify().ok and [r.round for r in reader.recall(5)] == [1]
    with pytest.raises(JournalError):
        reader.events.write([card("KH")], TS)
    with pytest.raises(JournalError):
        reader._set_meta("x", "1")
    writer.events.write([card("KH"), outcome(2)], TS)  # the writer goes on regardless
    assert [r.round for r in reader.recall(5)] == [1, 2]
    reader.close()
    assert writer.verify().ok and writer.verify().rows == 5
    writer.close()


def _append_behind_its_back(path: Path, body: dict[str, object]) -> None:
    """What a second daemon on the same file did first: journal a start record, continuing
    the chain properly (so the journal stays verifiable), behind the first one's back."""
    db = sqlite3.connect(path)
    last_id, last_hash = db.execute(
        "SELECT id, hash FROM journal ORDER BY id DESC LIMIT 1").fetchone()
    row = (last_id + 1, "start", None, None, "daemon", None, TS,
           json.dumps(body, separators=(",", ":")))
    db.execute("INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
               (*row, _row_hash(bytes(last_hash), row)))
    db.commit()
    db.close()


def test_a_journal_written_behind_its_back_reads_itself_again(tmp_path: Path) -> None:
    """The first daemon of the two then failed every write (``UNIQUE constraint failed:
    journal.id``) for as long as it ran: its last id, last hash and next numbers were those
    of the file before the other's rows. Now a write that finds the file moved on refuses
    (the runtime rebuilds its state from the file), and the journal reads its positions from
    the file again before it writes: the next write continues the chain and the numbers."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), outcome(1)], TS)
    _append_behind_its_back(path, {"game": "baccarat", "by": "someone else"})
    with pytest.raises(JournalError, match="written behind"):
        journal.events.write([card("KH"), outcome(2)], TS)
    stored = journal.events.write([card("KH"), outcome(2)], TS)
    assert [(s.id, s.stream_seq) for s in stored] == [(5, 1)]
    assert journal.verify().ok and journal.verify().rows == 5
    journal.close()


def test_the_last_row_is_read_only_when_another_connection_committed(tmp_path: Path) -> None:
    """Each write checks the file's last row against its own last write; it reads that row
    only once SQLite's data_version says another connection committed: a checkpoint that
    restarted the WAL (which changes it too) is found to be no move, and a move after it is
    still caught, each time from the file."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), outcome(1)], TS)
    reads: list[str] = []
    journal._db.set_trace_callback(reads.append)
    journal.events.write([card("KH")], TS)
    assert not [sql for sql in reads if "ORDER BY id DESC" in sql]  # nobody else wrote
    other = sqlite3.connect(path)
    other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    reads.clear()
    journal.events.write([card("QD"), outcome(2)], TS)  # no refusal: the tail is its own
    assert [sql for sql in reads if "ORDER BY id DESC" in sql]  # read once, to be sure
    reads.clear()
    journal.events.write([card("JC")], TS)
    assert not [sql for sql in reads if "ORDER BY id DESC" in sql]
    other.close()
    _append_behind_its_back(path, {"game": "baccarat", "by": "someone else"})
    with pytest.raises(JournalError, match="written behind"):
        journal.events.write([card("TS")], TS)
    journal._db.set_trace_callback(None)
    assert journal.verify().ok and journal.verify().rows == journal.last_id == 7  # 6 + theirs
    journal.close()


def test_a_failed_write_is_followed_by_positions_read_from_the_file(tmp_path: Path) -> None:
    """Whatever a failure left behind (here: a commit reported failed that reached the file
    all the same, as an I/O error after the WAL write can make it), the next write starts from
    what the file holds, not from memory."""
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.events.write([card("AS"), outcome(1)], TS)
    journal._db.execute("PRAGMA max_page_count = 1")  # a full disk: this write fails
    with pytest.raises(JournalError, match="full"):
        journal.events.write([OutputEntry("event", {"pad": "x" * 5000})], TS)
    journal._db.execute("PRAGMA max_page_count = 1073741823")
    _append_behind_its_back(path, {"the": "failed batch, on disk after all"})
    stored = journal.events.write([outcome(2)], TS)  # no refusal: after a failure it reads anyway
    assert [(s.id, s.stream_seq) for s in stored] == [(4, 1)]
    assert journal.verify().ok
    journal.close()


def test_a_full_filesystem_then_freed_loses_nothing(tmp_path: Path) -> None:
    """A real ext4 filesystem on a loop device (root only), filled to the last block: the
    write that does not fit fails and leaves nothing; once space is freed the next one goes on
    from the file, and every write that succeeded is there."""
    reason = can_mount()
    if reason:
        pytest.skip(reason)
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    problem = _mount(image, mount, size_mb=4)
    assert problem is None, problem
    try:
        journal = Journal(mount / "j.sqlite")
        written = 0
        for n in range(1, 6):
            journal.events.write([card("AS"), outcome(n)], TS)
            written += 1
        filler = mount / "filler"
        with open(filler, "wb", buffering=0) as fh, contextlib.suppress(OSError):
            while True:
                fh.write(b"\0" * 65536)
        failures = 0
        for n in range(6, 40):  # until a write does not fit
            try:
                journal.events.write([card("KH"), OutputEntry("event", {"pad": "x" * 4000}),
                               outcome(n)], TS)
                written += 1
            except JournalError as exc:
                assert "full" in str(exc) or "disk" in str(exc)
                failures += 1
                break
        assert failures == 1
        filler.unlink()
        journal.events.probe()
        stored = journal.events.write([card("QD"), outcome(written + 1)], TS)
        assert [s.stream_seq for s in stored] == [written]
        outcomes = [o for o in journal.delivery.outputs_after(0, 10_000) if o.topic == "outcome"]
        assert [json.loads(o.payload)["round"] for o in outcomes] == list(
            range(1, written + 2))
        assert journal.verify().ok
        journal.close()
    finally:
        _umount(mount)


def _db_size(path: Path) -> int:
    return path.stat().st_size


def _wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_the_wal_is_copied_after_so_many_commits_not_every_second(tmp_path: Path) -> None:
    # After a checkpoint that copied everything, the next commit restarts the WAL and syncs
    # its header too: two fsyncs. So the WAL is copied into the database (the database file
    # grows) only once enough commits are in it.
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.start_checkpointer(0.02, commits=5, longest=60)
    big = {"type": "card", "pad": "x" * 20_000}
    for n in range(4):
        journal.events.write([InputEntry("device:shoe-1", {**big, "n": n})], TS)
    before = _db_size(path)
    time.sleep(0.3)  # fifteen looks: four commits are not enough
    assert _db_size(path) == before
    journal.events.write([InputEntry("device:shoe-1", {**big, "n": 4})], TS)
    assert _wait_for(lambda: _db_size(path) > before + 4 * 20_000)
    journal.close()


def test_a_quiet_journal_is_copied_after_the_longest_wait(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.start_checkpointer(0.02, commits=1000, longest=0.3)
    before = _db_size(path)
    journal.events.write([InputEntry("device:shoe-1", {"pad": "x" * 20_000})], TS)
    assert _wait_for(lambda: _db_size(path) > before + 20_000)
    journal.close()


def test_a_probe_of_the_disk_has_the_wal_copied_at_the_next_look(tmp_path: Path) -> None:
    # a disk that was full is probed every second (256 KiB through the WAL each time): without
    # a copy at once, a WAL at the disk's last block would need more space at every write
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    journal.start_checkpointer(0.02, commits=1000, longest=60)
    journal.events.write([InputEntry("device:shoe-1", {"pad": "x" * 20_000})], TS)
    before = _db_size(path)
    time.sleep(0.3)
    assert _db_size(path) == before  # one commit: not yet
    journal.events.probe()
    assert _wait_for(lambda: _db_size(path) > before + 20_000)
    journal.close()


def test_no_number_beyond_the_contracts_range_is_given(tmp_path: Path) -> None:
    """tabled.contract.limits: table_seq stays within 0 … 2^53 - 1; the journal refuses to
    number past it (a JournalError, the batch not written), durable or not."""
    from tabled.contract.limits import MAX_SEQ
    from tabled.daemon.mqtt.numbers import Sequences, StatusNumbers

    journal = Journal(tmp_path / "j.sqlite")
    journal._next_seq["outcome"] = MAX_SEQ  # centuries of play, skipped
    (last,) = journal.events.write([outcome(1)], TS)
    assert last.stream_seq == MAX_SEQ
    with pytest.raises(JournalError, match="beyond the contract"):
        journal.events.write([OutputEntry("event", {"type": "card"}), outcome(2)], TS)
    assert [o.stream_seq for o in journal.delivery.outputs_after(0)] == [MAX_SEQ]
    journal.delivery.save_number("metrics", MAX_SEQ)
    with pytest.raises(JournalError, match="beyond the contract"):
        Sequences(journal.delivery).next("metrics")
    journal.delivery.save_number("status", MAX_SEQ - 1)
    with pytest.raises(JournalError, match="beyond the contract"):
        StatusNumbers(journal.delivery).for_connection()  # a birth and its will: two numbers
    journal.close()
