"""A dealer-console command the daemon could not journal does not spend its nonce (issue 16,
item 5, "the class": state kept in memory ahead of the journal after a failed write).

The command gate remembered a nonce as soon as the command passed its checks, before the
runtime tried to journal it; when the journal refused the write (``degraded``), the console's
retry of the very same signed command was then refused as ``replayed``, and the command was
lost although nothing of it had been recorded. docs/reliability.md: a refused command does not
spend its nonce. Real journal file, real runtime, the daemon's own command gate
(:class:`~tabled.daemon.gate.ConsoleGate`), without a broker.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.commands import CommandGate, sign
from tabled.daemon.config import parse_config
from tabled.daemon.gate import ConsoleGate
from tabled.daemon.journal import Journal, _row_hash
from tabled.daemon.runtime import TableRuntime

KEY = b"k" * 32


def append_behind_its_back(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    last_id, last_hash = db.execute(
        "SELECT id, hash FROM journal ORDER BY id DESC LIMIT 1").fetchone()
    row = (last_id + 1, "start", None, None, "daemon", None, rfc3339_now(), "{}")
    db.execute("INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
               (*row, _row_hash(bytes(last_hash), row)))
    db.execute("COMMIT")
    db.close()


def console_gate(path: Path) -> tuple[ConsoleGate, Journal]:
    config = parse_config({"table": {"site": "s", "id": "t", "game": "baccarat"},
                           "journal": {"path": str(path)}})
    journal = Journal(path)
    journal.audit.record_start({"version": "test"}, rfc3339_now())
    runtime = TableRuntime(config, journal.events)
    return ConsoleGate(CommandGate(KEY, 30.0), runtime, journal.audit), journal


def test_a_command_refused_for_a_failing_journal_can_be_sent_again(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    gate, journal = console_gate(path)
    try:
        payload = json.dumps(sign({"cmd": "new_shoe", "args": {"decks": 8}, "console": "pit-1",
                                   "ts": rfc3339_now(), "nonce": "0123456789abcdef"},
                                  KEY)).encode()
        append_behind_its_back(path)  # the next journal write fails once
        refused = gate.handle("new_shoe", payload)
        assert (refused["ok"], refused["error"]) == (False, "degraded")
        assert gate.runtime.probe()  # the journal is back
        again = gate.handle("new_shoe", payload)
        assert again["ok"] is True, again
        inputs = [i.body for i in journal.inputs()]
        assert [i["type"] for i in inputs] == ["shoe_start"]
        assert inputs[0]["nonce"] == "0123456789abcdef"
        # and now it has taken effect, the same command is a replay
        assert gate.handle("new_shoe", payload)["error"] == "replayed"
    finally:
        journal.close()


def test_a_command_whose_failed_write_reached_the_file_stays_spent(tmp_path: Path) -> None:
    """An I/O error can report a commit failed that reached the disk: the command did take
    effect (a rebuild from the journal applies it), so its retry is a replay."""
    gate, journal = console_gate(tmp_path / "journal.sqlite")
    try:
        payload = json.dumps(sign({"cmd": "new_shoe", "args": {"decks": 6}, "console": "pit-1",
                                   "ts": rfc3339_now(), "nonce": "fedcba9876543210"},
                                  KEY)).encode()
        command = gate.gate.check("new_shoe", payload)
        before = journal.last_id
        gate.runtime.accept(command.event, "console:pit-1")  # written...
        gate._unspend(command.nonce, before)  # ... though reported failed
        assert gate.handle("new_shoe", payload)["error"] == "replayed"
    finally:
        journal.close()
