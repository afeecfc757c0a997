"""The table runtime on a real journal: one transaction per event, redacted publication,
state rebuilt after a restart, and a full disk that loses nothing that was promised."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tabled.contract.events import (
    CardDealt,
    Decision,
    Fault,
    HandDealt,
    Meta,
    Reveal,
    Roll,
    RoundStart,
    ShoeStart,
)
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import Degraded, TableRuntime
from tabled.games.registry import decode_outcome
from tests.clock import Clock
from tests.conftest import load_schema


def runtime_for(game: str, path: Path, *, clock: Callable[[], float] = time.monotonic,
                **rules: object) -> TableRuntime:
    config = parse_config({"table": {"site": "s", "id": "t", "game": game}, "rules": rules,
                           "journal": {"path": str(path)}})
    return TableRuntime(config, Journal(path).events, clock=clock)


def published(runtime: TableRuntime, topic: str) -> list[dict]:
    return [json.loads(o.payload) for o in runtime.events.outputs_after(0, 10_000)
            if o.topic == topic]


def deal_baccarat(runtime: TableRuntime, cards: list[str]) -> None:
    for i, code in enumerate(cards):
        runtime.stage(CardDealt(card=code, meta=Meta(device="shoe-1", seq=i)), "device:shoe-1")
    assert runtime.commit()


def test_an_event_and_its_outcome_are_journaled_together(tmp_path: Path) -> None:
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    deal_baccarat(runtime, ["9S", "2H", "KD", "3C"])  # player natural 9
    outcomes = published(runtime, "outcome")
    assert len(outcomes) == 1 and outcomes[0]["result"]["winner"] == "player"
    assert outcomes[0]["table_seq"] == 0 and "ts" in outcomes[0]
    assert [e["card"] for e in published(runtime, "event")] == ["9S", "2H", "KD", "3C"]
    assert runtime.devices["shoe-1"].next_seq == 4


def test_a_restart_rebuilds_the_shoe_and_the_round_numbers(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    runtime = runtime_for("baccarat", path)
    runtime.accept(ShoeStart(decks=6), "console:pit")
    deal_baccarat(runtime, ["9S", "2H", "KD", "3C", "AS", "AH"])  # a hand and a half
    runtime.events.owner.close()
    again = runtime_for("baccarat", path)
    assert again.table.round_open and again.table.next_round == 2
    deal_baccarat(again, ["TS", "TH"])  # the rest of hand 2: P A,T  B A,T: both 1, both draw
    deal_baccarat(again, ["2C", "3C"])
    rounds = [o["round"] for o in published(again, "outcome")]
    assert rounds == [1, 2]


def test_qpoker_face_down_cards_are_withheld_until_the_rules_open_them(tmp_path: Path) -> None:
    runtime = runtime_for("qpoker", tmp_path / "j.sqlite")
    runtime.accept(RoundStart(seats=(1,)), "device:shuffler-1")
    runtime.accept(HandDealt(seat=1, cards=("AS", "KS", "QS")), "device:shuffler-1")
    runtime.accept(HandDealt(seat="dealer", cards=("2H", "7D", "9C")), "device:shuffler-1")
    events = published(runtime, "event")
    text = json.dumps(events)
    assert "2H" not in text and "7D" not in text and "9C" not in text  # the dealer's, held
    assert "AS" in text  # the players open their cards once the deal is complete (Art. 9.1)
    runtime.accept(Decision(seat=1, play=True), "console:pit")
    runtime.accept(Reveal(), "console:pit")
    events = published(runtime, "event")
    assert [e["type"] for e in events[-2:]] == ["hand", "reveal"]
    assert events[-2]["cards"] == ["2H", "7D", "9C"] and events[-2]["withheld"] is True
    (outcome,) = published(runtime, "outcome")
    assert outcome["bets"]["1"]["play"]["result"] == "win"  # dealer 9-high does not qualify


def journal_rows(path: Path) -> list[tuple[str, str | None, int | None, dict]]:
    with sqlite3.connect(path) as db:
        return [(kind, topic, round_no, json.loads(body)) for kind, topic, round_no, body in
                db.execute("SELECT kind, topic, round, body FROM journal ORDER BY id")]


def test_an_event_published_as_itself_is_one_row_and_a_redacted_one_two(tmp_path: Path) -> None:
    """Journal format 4: an event the table publishes as it came is one row, the input and
    the message (with the round it is published with); one published otherwise (withheld,
    or opening cards with it) is the input and its published copies, as before. Either way
    the messages are what the rules said to publish, and the inputs what came."""
    path = tmp_path / "b.sqlite"
    runtime = runtime_for("baccarat", path)
    deal_baccarat(runtime, ["9S", "2H", "KD", "3C"])
    rows = journal_rows(path)
    assert [(kind, topic, round_no) for kind, topic, round_no, _ in rows] == [
        ("input", "event", 1)] * 4 + [("output", "outcome", 1)]
    assert [body for _, _, _, body in rows[:4]] == [
        {"v": 2, "type": "card", "card": card, "device": "shoe-1", "seq": seq}
        for seq, card in enumerate(["9S", "2H", "KD", "3C"])]
    assert published(runtime, "event") == [
        {"v": 2, "type": "card", "card": card, "device": "shoe-1", "seq": seq, "round": 1,
         "table_seq": seq} for seq, card in enumerate(["9S", "2H", "KD", "3C"])]
    assert [i.body for i in runtime.events.inputs()] == [body for _, _, _, body in rows[:4]]

    path = tmp_path / "q.sqlite"
    runtime = runtime_for("qpoker", path)
    runtime.accept(RoundStart(seats=(1,)), "device:shuffler-1")
    runtime.accept(HandDealt(seat=1, cards=("AS", "KS", "QS")), "device:shuffler-1")
    runtime.accept(HandDealt(seat="dealer", cards=("2H", "7D", "9C")), "device:shuffler-1")
    rows = journal_rows(path)
    # the round's start as itself; each hand withheld, the player's opened once the deal is
    # complete (Art. 9.1): copies of their own, the inputs as they came
    assert [(kind, topic, round_no, body.get("type")) for kind, topic, round_no, body in rows
            ] == [("input", "event", 1, "round_start"), ("input", None, None, "hand"),
                  ("output", "event", None, "withheld"), ("input", None, None, "hand"),
                  ("output", "event", None, "withheld"), ("output", "event", None, "hand")]
    assert rows[3][3]["cards"] == ["2H", "7D", "9C"]
    assert [json.loads(o.payload)["table_seq"] for o in runtime.events.outputs_after(0, 100)
            ] == [0, 1, 2, 3]
    text = " ".join(o.payload for o in runtime.events.outputs_after(0, 1000))
    assert "2H" not in text and "AS" in text


def test_a_full_disk_degrades_and_forgets_only_what_it_could_not_write(tmp_path: Path) -> None:
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    deal_baccarat(runtime, ["9S", "2H"])
    pages = runtime.events.owner._db.execute("PRAGMA page_count").fetchone()[0]
    runtime.events.owner._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
    runtime.stage(CardDealt(card="KD"), "device:shoe-1")
    # a big event, so that the batch needs pages the full disk cannot give
    runtime.stage(CardDealt(card="3C", extra={"note": "x" * 100_000}), "device:shoe-1")
    assert runtime.commit() is False and runtime.degraded
    assert published(runtime, "outcome") == []  # never reported: it was never durable
    with pytest.raises(Degraded):
        runtime.stage(CardDealt(card="KD"), "device:shoe-1")
    runtime.events.owner._db.execute("PRAGMA max_page_count = 1073741823")
    assert runtime.probe() is True and runtime.degraded is None
    deal_baccarat(runtime, ["KD", "3C"])  # the device sends them again: the hand completes
    (outcome,) = published(runtime, "outcome")
    assert outcome["result"]["player_cards"] == ["9S", "KD"]


def test_a_quiet_journal_is_checked_with_one_row_and_a_busy_one_not_at_all(
        tmp_path: Path) -> None:
    """The health check writes only to a journal that has written nothing for a while (its
    commits are the check), one row, not a busy commit's worth; a disk that refuses it
    degrades the runtime."""
    path = tmp_path / "j.sqlite"
    clock = Clock()
    runtime = runtime_for("baccarat", path, clock=clock)
    db = runtime.events.owner._db
    deal_baccarat(runtime, ["9S", "2H"])
    db.execute("PRAGMA query_only = ON")  # from here, any write the runtime tries fails
    clock.now += 9.0
    assert runtime.check_journal(quiet_for=10.0) and runtime.degraded is None  # no write
    db.execute("PRAGMA query_only = OFF")
    deal_baccarat(runtime, ["KD"])  # a commit: the quiet time starts again
    clock.now += 9.0
    db.execute("PRAGMA query_only = ON")
    assert runtime.check_journal(quiet_for=10.0) and runtime.degraded is None
    db.execute("PRAGMA query_only = OFF")

    clock.now += 1.5  # quiet for 10.5 s: checked, with one row
    wal = Path(f"{path}-wal")
    before = wal.stat().st_size
    assert runtime.check_journal(quiet_for=10.0) and runtime.degraded is None
    assert wal.stat().st_size - before < 64 * 1024  # a page or two, not the failing disk's probe
    assert db.execute("SELECT value FROM meta WHERE key = 'probe'").fetchone() == (
        str(runtime.events.last_id),)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'probe'").fetchone() is None

    clock.now += 10.5
    db.execute("PRAGMA query_only = ON")  # the disk dies while the table is quiet
    assert runtime.check_journal(quiet_for=10.0) is False
    assert runtime.degraded and "probe failed" in runtime.degraded
    db.execute("PRAGMA query_only = OFF")
    assert runtime.probe() and runtime.degraded is None  # the failing disk's probe: back
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'probe'").fetchone()


def test_what_the_runtime_publishes_satisfies_the_contract_schemas(
        tmp_path: Path, event_validator: Any, outcome_validator: Any) -> None:
    """Every message on ``…/event``, ``…/outcome`` and ``…/fault`` (a device fault, a rules
    notice, a fault the daemon raises about itself) is one docs/contract.md describes, at
    version 2: its schema takes it, and an outcome decodes typed."""
    fault_validator = Draft202012Validator(load_schema("fault"))
    path = tmp_path / "f.sqlite"
    runtime = runtime_for("baccarat", path)
    runtime.stage(Roll(dice=(3, 4), meta=Meta(device="console", seq=0)), "console:c1")
    runtime.stage(Fault(code="sensor_dirty", detail="clean the window",
                        meta=Meta(device="shoe-1", seq=1)), "device:shoe-1")
    assert runtime.commit()
    deal_baccarat(runtime, ["9S", "2H", "KD", "3C"])
    faults = [*published(runtime, "fault"), {**runtime.fault_body("journal_failure", "disk"),
                                             "durable": False, "table_seq": None}]
    assert {f["type"] for f in faults} == {"fault", "notice"}
    for message in faults:
        assert message["v"] == 2
        fault_validator.validate(message)
    for message in published(runtime, "event"):
        assert message["v"] == 2
        event_validator.validate(message)
    (outcome,) = published(runtime, "outcome")
    outcome_validator.validate(outcome)
    assert decode_outcome(outcome).v == 2
