"""A journal cut back at its end is caught (issue 10, item 5): by the journal's own positions,
and by a head a witness holds (the birth record's ``journal``, which the floor records). Also
``journal recall --round N``, and a journal the user may not read is one line, not a
traceback. Real journal files, the real command."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tabled.daemon.journal import Head, InputEntry, Journal, OutputEntry

TS = "2026-12-01T10:00:00.000Z"


def _tabled(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def _journal(path: Path, hands: int) -> Journal:
    journal = Journal(path)
    for n in range(1, hands + 1):
        journal.events.write([InputEntry("device:shoe-1", {"type": "card", "card": "AS"}),
                              OutputEntry("outcome", {"type": "outcome", "round": n}, round=n)],
                             TS)
    return journal


def _cut(path: Path, rows: int) -> None:
    db = sqlite3.connect(path)
    db.execute("DELETE FROM journal WHERE id > (SELECT MAX(id) FROM journal) - ?", (rows,))
    db.commit()
    db.close()


def test_a_tail_cut_behind_the_acknowledged_position_fails_verify(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = _journal(path, 60)
    journal.delivery.note_acked(110)
    journal.delivery.save_acked()  # the broker had acknowledged up to record 110
    journal.close()
    assert _tabled("journal", "verify", "--journal", str(path)).returncode == 0
    _cut(path, 50)
    verify = _tabled("journal", "verify", "--journal", str(path))
    assert verify.returncode == 1
    assert "the tail was cut: the journal's acknowledged position is record 110, its last " \
           "record is 70" in verify.stderr


def test_a_witness_head_catches_a_cut_the_positions_cannot_see(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = _journal(path, 30)
    witness = journal.head()  # what the birth record published, and the floor kept
    assert witness == Head(60, witness.hash)
    journal.events.write([InputEntry("device:shoe-1", {"type": "card", "card": "KD"})], TS)
    ok = _tabled("journal", "verify", "--journal", str(path), "--expect-head", str(witness))
    assert ok.returncode == 0, ok.stderr  # later rows do not matter: that row is still there
    assert "the witness's head is in it" in ok.stdout
    journal.close()
    _cut(path, 5)  # nothing published was acknowledged: only the witness can tell
    assert _tabled("journal", "verify", "--journal", str(path)).returncode == 0
    cut = _tabled("journal", "verify", "--journal", str(path), "--expect-head", str(witness))
    assert cut.returncode == 1
    assert "the witness holds record 60, the last record is 56" in cut.stderr
    forged = Head(50, "0" * 64)
    other = _tabled("journal", "verify", "--journal", str(path), "--expect-head", str(forged))
    assert other.returncode == 1 and "record 50 is not the one the witness holds" in other.stderr
    bad = _tabled("journal", "verify", "--journal", str(path), "--expect-head", "xyz")
    assert bad.returncode == 2 and "not a SHA-256 hash" in bad.stderr


def test_recall_one_round(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal(path, 5).close()
    one = _tabled("journal", "recall", "--journal", str(path), "--round", "3", "--json")
    assert one.returncode == 0, one.stderr
    lines = one.stdout.splitlines()
    assert len(lines) == 1 and '"round":3' in lines[0] and '"card":"AS"' in lines[0]
    none = _tabled("journal", "recall", "--journal", str(path), "--round", "9")
    assert none.returncode == 0 and none.stdout == ""


def test_a_journal_the_user_may_not_read_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    _journal(path, 1).close()
    if os.getuid() == 0:  # root reads anything: make it a directory nobody can open instead
        path.unlink()
        path.mkdir()
    else:
        path.chmod(0)
    verify = _tabled("journal", "verify", "--journal", str(path))
    assert verify.returncode == 2
    assert verify.stderr.count("\n") == 1 and "Traceback" not in verify.stderr, verify.stderr
    assert verify.stderr.startswith("tabled journal:")
