"""A dealer-console command the daemon could not journal does not spend its nonce (issue 16,
item 5, "the class": state kept in memory ahead of the journal after a failed write).

The command gate remembered a nonce as soon as the command passed its checks, before the
runtime tried to journal it; when the journal refused the write (``degraded``), the console's
retry of the very same signed command was then refused as ``replayed``, and the command was
lost although nothing of it had been recorded. docs/reliability.md: a refused command does not
spend its nonce. Real journal file, real gate, the service's own command path.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.commands import CommandGate, sign
from tabled.daemon.config import parse_config
from tabled.daemon.journal import _row_hash
from tabled.daemon.service import Service

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


async def test_a_command_refused_for_a_failing_journal_can_be_sent_again(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    config = parse_config({"table": {"site": "s", "id": "t", "game": "baccarat"},
                           "journal": {"path": str(path)}})
    service = Service(config)
    service.commands = CommandGate(KEY, 30.0)
    try:
        service.runtime.record_start("test", [])
        payload = json.dumps(sign({"cmd": "new_shoe", "args": {"decks": 8}, "console": "pit-1",
                                   "ts": rfc3339_now(), "nonce": "0123456789abcdef"},
                                  KEY)).encode()
        append_behind_its_back(path)  # the next journal write fails once
        refused = await service._command("new_shoe", payload)
        assert (refused["ok"], refused["error"]) == (False, "degraded")
        assert service.runtime.probe()  # the journal is back
        again = await service._command("new_shoe", payload)
        assert again["ok"] is True, again
        inputs = [i.body for i in service.journal.inputs()]
        assert [i["type"] for i in inputs] == ["shoe_start"]
        assert inputs[0]["nonce"] == "0123456789abcdef"
        # and now it has taken effect, the same command is a replay
        assert (await service._command("new_shoe", payload))["error"] == "replayed"
    finally:
        service.journal.close()


async def test_a_command_whose_failed_write_reached_the_file_stays_spent(
        tmp_path: Path) -> None:
    """An I/O error can report a commit failed that reached the disk: the command did take
    effect (a rebuild from the journal applies it), so its retry is a replay."""
    path = tmp_path / "journal.sqlite"
    config = parse_config({"table": {"site": "s", "id": "t", "game": "baccarat"},
                           "journal": {"path": str(path)}})
    service = Service(config)
    service.commands = CommandGate(KEY, 30.0)
    try:
        service.runtime.record_start("test", [])
        payload = json.dumps(sign({"cmd": "new_shoe", "args": {"decks": 6}, "console": "pit-1",
                                   "ts": rfc3339_now(), "nonce": "fedcba9876543210"},
                                  KEY)).encode()
        command = service.commands.check("new_shoe", payload)
        before = service.journal.last_id
        service.runtime.accept(command.event, "console:pit-1")  # written...
        service._unspend(command.nonce, before)  # ... though reported failed
        assert (await service._command("new_shoe", payload))["error"] == "replayed"
    finally:
        service.journal.close()
