"""Tables in service survive an upgrade: a journal written by release 0.1.0 opens, verifies,
recalls and resumes publishing where it stopped, under the numbers it had already given.

The journal (tests/data/journal-0.1.0.sqlite, made by tests/data/make_release_journal.py with
the release's own code) holds 22 baccarat hands of which the broker acknowledged the first 10,
and hand 23 in progress when the daemon was killed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import Daemon, Subscriber, assert_contiguous, write_config

DATA = Path(__file__).resolve().parents[1] / "data"
FACTS = json.loads((DATA / "journal-0.1.0.json").read_text())


def _copy(tmp_path: Path) -> Path:
    journal = tmp_path / "journal.sqlite"
    shutil.copy(DATA / "journal-0.1.0.sqlite", journal)
    journal.chmod(0o600)
    return journal


def _tabled(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_release_journal_verifies_and_recalls(tmp_path: Path) -> None:
    journal = _copy(tmp_path)
    verify = _tabled("journal", "verify", "--journal", str(journal))
    assert verify.returncode == 0, verify.stderr
    assert f"{FACTS['rows']} records" in verify.stdout
    recall = _tabled("journal", "recall", "--journal", str(journal), "--last", "3", "--json")
    assert recall.returncode == 0, recall.stderr
    rounds = [json.loads(line) for line in recall.stdout.splitlines()]
    assert [r["round"] for r in rounds] == [FACTS["outcomes"] - 2, FACTS["outcomes"] - 1,
                                            FACTS["outcomes"]]
    assert all(r["outcome"]["game"] == "baccarat" and r["events"] for r in rounds)


async def test_a_release_journal_resumes_publishing_where_it_stopped(
        tmp_path: Path, broker: Mosquitto) -> None:
    journal = _copy(tmp_path)
    # The shoe is not there: the hand in progress cannot be completed and is voided
    # (baccarat.art10) once lost_void_after has passed.
    config = write_config(tmp_path / "tabled.toml", game="baccarat", journal=journal,
                          broker_url=broker.url,
                          devices=[{"id": "shoe-1", "family": "shoe",
                                    "url": str(tmp_path / "no-shoe"), "lost_void_after": 1.0}])
    daemon = Daemon(config, tmp_path / "daemon.log")
    published = FACTS["published_outcomes"]
    try:
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            outcomes = await sub.wait_for("/outcome", FACTS["outcomes"] - published + 1,
                                          alive=daemon)
    finally:
        assert daemon.stop() == 0
    # every unacknowledged outcome, in order, under the number the journal gave it, then the
    # hand that was in progress, voided
    assert_contiguous(outcomes)
    firsts = {}
    for outcome in outcomes:
        firsts.setdefault(outcome["table_seq"], outcome)
    ordered = [firsts[seq] for seq in sorted(firsts)]
    assert ordered[0]["table_seq"] <= published
    assert [o["round"] for o in ordered if o["table_seq"] >= published] == list(
        range(published + 1, FACTS["outcomes"] + 2))
    last = ordered[-1]
    assert last["round"] == FACTS["outcomes"] + 1
    assert last["status"] == "void" and last["article"] == "baccarat.art10"
    verify = _tabled("journal", "verify", "--journal", str(journal))
    assert verify.returncode == 0, verify.stderr
