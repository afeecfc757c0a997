"""The journal on real SQLite files: atomic batches, per-topic sequence numbers that survive a
reopen, a hash chain that catches tampering, game recall, and a full disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tabled.daemon.journal import InputEntry, Journal, JournalError, OutputEntry, StartEntry

TS = "2026-11-29T16:00:00.000Z"


def card(code: str) -> InputEntry:
    return InputEntry("device:shoe-1", {"v": 1, "type": "card", "card": code})


def outcome(round_no: int) -> OutputEntry:
    return OutputEntry("outcome", {"v": 1, "type": "outcome", "round": round_no,
                                   "status": "complete", "result": {}}, round=round_no)


def test_batches_are_sequenced_per_topic_and_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    stored = journal.write([card("AS"), OutputEntry("event", {"type": "card"}), outcome(1)], TS)
    assert [(s.topic, s.stream_seq) for s in stored] == [("event", 0), ("outcome", 0)]
    assert '"table_seq":0' in stored[1].payload
    journal.close()
    journal = Journal(path)
    stored = journal.write([OutputEntry("event", {"type": "card"}), outcome(2),
                            OutputEntry("fault", {"code": "x"})], TS)
    assert [(s.topic, s.stream_seq) for s in stored] == [("event", 1), ("outcome", 1),
                                                          ("fault", 0)]
    assert [o.stream_seq for o in journal.outputs_after(0)] == [0, 0, 1, 1, 0]
    assert journal.verify().ok
    journal.close()


def test_a_failed_batch_leaves_nothing_behind(tmp_path: Path) -> None:
    """A disk that fills in the middle of a batch: the whole batch is refused, the journal and
    its sequence numbers are as before, and the next batch continues the chain."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.write([card("AS"), outcome(1)], TS)
    db = sqlite3.connect(journal.path)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.close()
    journal._db.execute(f"PRAGMA max_page_count = {pages + 1}")  # a nearly full disk
    big = [OutputEntry("event", {"pad": "x" * 3000}) for _ in range(50)]
    with pytest.raises(JournalError, match="full"):
        journal.write(big, TS)
    assert journal.next_seq("event") == 0 and journal.next_seq("outcome") == 1
    journal._db.execute("PRAGMA max_page_count = 1073741823")
    journal.write([outcome(2)], TS)
    assert [o.stream_seq for o in journal.outputs_after(0)] == [0, 1]
    assert journal.verify().ok


@pytest.mark.parametrize("tamper", ["edit", "delete", "insert"])
def test_verify_finds_tampering(tmp_path: Path, tamper: str) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    for n in range(1, 6):
        journal.write([card("KH"), outcome(n)], TS)
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
    journal.write([StartEntry({"game": "baccarat"})], TS)
    for n, cards in enumerate((["AS", "2S", "3S", "4S"], ["5H", "6H", "7H", "8H"],
                               ["9C", "TC", "JC", "QC"]), 1):
        journal.write([card(c) for c in cards] + [outcome(n)], TS)
    journal.write([card("KD")], TS)  # a round in progress: not recalled
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
    journal.write([card("AS"), outcome(1), card("KH"), outcome(2)], TS)
    journal.set_meta("acked_id", "2")  # what the publisher persists now and then
    assert journal.acked_id() == 2
    journal.note_acked(4)
    journal.write([card("QD")], TS)
    assert journal.acked_id() == 4  # rode on row 5, after the persisted position
    journal.set_meta("acked_id", "5")
    assert journal.acked_id() == 5


def test_save_acked_commits_only_a_position_no_write_carried(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    journal.write([card("AS"), outcome(1), card("KH"), outcome(2)], TS)
    journal.note_acked(2)
    journal.write([card("QD")], TS)
    journal.save_acked()
    assert journal.get_meta("acked_id") is None  # the write carried it: nothing more to do
    journal.note_acked(4)
    journal.save_acked()
    assert journal.get_meta("acked_id") == "4"
    journal.close()
    assert Journal(tmp_path / "j.sqlite").acked_id() == 4


def test_a_journal_from_before_the_acked_column_opens_and_keeps_its_chain(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    journal = Journal(path)
    journal.write([card("AS"), outcome(1)], TS)
    journal.set_meta("acked_id", "2")
    journal.close()
    db = sqlite3.connect(path)  # as the journal was made before the column existed
    db.execute("ALTER TABLE journal DROP COLUMN acked")
    db.commit()
    db.close()
    reopened = Journal(path)
    assert reopened.verify().ok and reopened.acked_id() == 2
    reopened.note_acked(2)
    reopened.write([card("KH"), outcome(2)], TS)
    assert reopened.verify().ok and reopened.verify().rows == 4
    assert [o.stream_seq for o in reopened.outputs_after(0, 10)] == [0, 1]


def test_opening_a_missing_journal_for_reading_fails(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="no journal"):
        Journal(tmp_path / "none.sqlite", create=False)


def test_the_acknowledged_position_rides_on_the_next_write(tmp_path: Path) -> None:
    """No commit of its own: the broker's acknowledgement is made durable with the next batch,
    so that a crash re-publishes only what was in flight since."""
    journal = Journal(tmp_path / "j.sqlite")
    journal.write([card("AS"), outcome(1)], TS)
    journal.note_acked(2)
    assert journal.acked_id() == 0  # not yet: nothing was written since
    journal.write([card("KH")], TS)
    journal.close()
    assert Journal(tmp_path / "j.sqlite").acked_id() == 2
