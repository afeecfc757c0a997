"""The daemon refuses what ``tabled replay`` calls malformed for the table's game (issue 16,
item 8): a Q Poker card without its seat, a Q Poker round_start without its seats. The rules
never see the event, the journal holds no input for it (a rebuild would feed it), the refusal is
a notice on ``…/fault``, and the round goes on with the events that follow."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tabled.contract.events import CardDealt, Decision, Event, HandDealt, Reveal, RoundStart
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.replay import replay
from tabled.daemon.runtime import TableRuntime


def runtime_for(game: str, path: Path) -> TableRuntime:
    config = parse_config({"table": {"site": "s", "id": "t", "game": game},
                           "journal": {"path": str(path)}})
    return TableRuntime(config, Journal(path))


def journaled(runtime: TableRuntime, topic: str) -> list[dict]:
    return [json.loads(o.payload) for o in runtime.journal.outputs_after(0, 10_000)
            if o.topic == topic]


ROUND = [RoundStart(seats=(1,)), HandDealt(seat=1, cards=("AS", "KS", "QS")),
         HandDealt(seat="dealer", cards=("2H", "7D", "9C")), Decision(seat=1, play=True),
         Reveal()]


@pytest.mark.parametrize("bad", [CardDealt(card="5C"), RoundStart(), CardDealt(card="5C",
                                                                              face_up=False)])
def test_a_qpoker_event_without_its_seat_is_refused_like_replay_refuses_it(
        tmp_path: Path, bad: Event) -> None:
    runtime = runtime_for("qpoker", tmp_path / "j.sqlite")
    runtime.accept(ROUND[0], "device:shuffler-1")
    (notice,) = runtime.accept(bad, "device:shuffler-1")
    assert notice.code == "malformed_event"  # type: ignore[union-attr]
    for event in ROUND[1:]:
        runtime.accept(event, "device:shuffler-1")

    # the round went on as if the bad event had not come: one complete outcome
    (outcome,) = journaled(runtime, "outcome")
    assert outcome["status"] == "complete" and outcome["round"] == 1
    # the journal's inputs are the well-formed events only; the refusal is on …/fault
    inputs = [i.body for i in runtime.journal.inputs()]
    assert [i["type"] for i in inputs] == [e.type for e in ROUND]
    (fault,) = journaled(runtime, "fault")
    assert fault["type"] == "notice" and fault["code"] == "malformed_event"
    assert "(required in qpoker)" in fault["message"]
    assert "5C" not in json.dumps(fault)  # a face-down card is never published early

    # and tabled replay calls the same line malformed
    from tabled.contract.events import encode_event
    lines = [encode_event(ROUND[0]) + "\n", encode_event(bad) + "\n"]
    err = io.StringIO()
    assert replay("qpoker", None, lines, io.StringIO(), err) == 2
    assert err.getvalue().startswith("line 2: ") and "(required in qpoker)" in err.getvalue()
    assert fault["message"].endswith(err.getvalue()[len("line 2: "):].rstrip("\n"))


def test_a_baccarat_card_needs_no_seat(tmp_path: Path) -> None:
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    for code in ("9S", "2H", "KD", "3C"):
        runtime.accept(CardDealt(card=code), "device:shoe-1")
    assert len(journaled(runtime, "outcome")) == 1 and not journaled(runtime, "fault")
