"""The daemon does not apply what ``tabled replay`` calls malformed for the table's game (issue
16, item 8): a Q Poker card without its seat, a Q Poker round_start without its seats. Replay
stops at such a line (exit 2); the daemon cannot stop, so it treats the event as any event it
cannot apply: the rules never see it, the journal holds the ``event_not_applied`` fault that
stands for it (naming the event's type and why, never a card), and the rules void the round
that event would have changed (a card went somewhere: the deal can no longer be shown right).
A replay of the journal gives the daemon's outcomes. Real journal files throughout."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tabled.contract.events import (
    CardDealt,
    Decision,
    Event,
    HandDealt,
    Reveal,
    Roll,
    RoundStart,
    encode_event,
)
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.replay import replay
from tabled.daemon.runtime import TableRuntime


def runtime_for(game: str, path: Path) -> TableRuntime:
    config = parse_config({"table": {"site": "s", "id": "t", "game": game},
                           "journal": {"path": str(path)}})
    return TableRuntime(config, Journal(path).events)


def journaled(runtime: TableRuntime, topic: str) -> list[dict]:
    return [json.loads(o.payload) for o in runtime.events.outputs_after(0, 10_000)
            if o.topic == topic]


def a_round(seat: int, cards: tuple[str, str, str], dealer: tuple[str, str, str]) -> list[Event]:
    return [RoundStart(seats=(seat,)), HandDealt(seat=seat, cards=cards),
            HandDealt(seat="dealer", cards=dealer), Decision(seat=seat, play=True), Reveal()]


FIRST = a_round(1, ("AS", "KS", "QS"), ("2H", "7D", "9C"))
SECOND = a_round(2, ("3D", "3C", "8H"), ("JD", "JC", "4S"))


@pytest.mark.parametrize("bad", [CardDealt(card="5C"), CardDealt(card="5C", face_up=False),
                                 RoundStart()], ids=["card", "face-down card", "round_start"])
def test_a_qpoker_event_without_its_seat_is_not_applied_and_its_round_is_void(
        tmp_path: Path, bad: Event) -> None:
    runtime = runtime_for("qpoker", tmp_path / "j.sqlite")
    runtime.accept(FIRST[0], "device:shuffler-1")
    runtime.accept(bad, "device:shuffler-1")
    for event in FIRST[1:] + SECOND:
        runtime.accept(event, "device:shuffler-1")

    outcomes = journaled(runtime, "outcome")
    # the round the event belonged to is void (what became of the rest of its deal is the
    # rules' business); the next round, declared and dealt in full, completes
    assert (outcomes[0]["round"], outcomes[0]["status"]) == (1, "void")
    assert outcomes[0]["article"] == "qpoker.art11.1"
    assert "(required in qpoker)" in outcomes[0]["void_reason"]
    assert all(o["status"] == "void" for o in outcomes[:-1])
    assert (outcomes[-1]["status"], list(outcomes[-1]["bets"])) == ("complete", ["2"])
    # the event itself is not in the journal; the fault that stands for it is, as an input
    inputs = [i.body for i in runtime.events.owner.inputs()]
    assert not [i for i in inputs if i["type"] == bad.type and i.get("seat") is None
                and i.get("seats") is None]
    (stand_in,) = [i for i in inputs if i["type"] == "fault"]
    assert (stand_in["code"], stand_in["event_type"]) == ("event_not_applied", bad.type)
    assert "(required in qpoker)" in stand_in["detail"]
    assert "5C" not in json.dumps(journaled(runtime, "fault"))  # never a card, face down or not
    assert "5C" not in json.dumps(stand_in)

    # a replay of what the journal holds gives the daemon's outcomes
    out = io.StringIO()
    lines = [json.dumps(body) + "\n" for body in inputs]
    assert replay("qpoker", None, lines, out, io.StringIO()) == 0
    strip = ("table_seq", "ts")
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {k: v for k, v in o.items() if k not in strip} for o in outcomes]

    # and the stream the devices sent is malformed for tabled replay, at that line
    err = io.StringIO()
    sent = [encode_event(e) + "\n" for e in [FIRST[0], bad, *FIRST[1:]]]
    assert replay("qpoker", None, sent, io.StringIO(), err) == 2
    assert err.getvalue().startswith("line 2: ") and "(required in qpoker)" in err.getvalue()


def test_a_baccarat_card_needs_no_seat(tmp_path: Path) -> None:
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    for code in ("9S", "2H", "KD", "3C"):
        runtime.accept(CardDealt(card=code), "device:shoe-1")
    assert len(journaled(runtime, "outcome")) == 1 and not journaled(runtime, "fault")


def test_a_craps_roll_of_three_dice_is_not_applied(tmp_path: Path) -> None:
    """The contract carries two or more dice (a three-dice game is a plugin); craps' own check
    refuses three, in the daemon as in ``tabled replay`` (issue 28): not applied, and the
    journal's stand-in says why (the throw decides nothing, and the point is unknown until a
    seven, as for any throw the daemon could not apply)."""
    runtime = runtime_for("craps", tmp_path / "j.sqlite")
    runtime.accept(Roll(dice=(3, 4)), "device:dice-1")
    runtime.accept(Roll(dice=(3, 4, 5)), "device:dice-1")
    runtime.accept(Roll(dice=(6, 5)), "device:dice-1")
    inputs = [i.body for i in runtime.events.owner.inputs()]
    assert [i["type"] for i in inputs] == ["roll", "fault", "roll"]
    assert (inputs[1]["code"], inputs[1]["event_type"]) == ("event_not_applied", "roll")
    assert "dice [3, 4, 5] is not two integers 1-6" in inputs[1]["detail"]
    outcomes = journaled(runtime, "outcome")
    assert [(o["status"], o.get("article")) for o in outcomes] == [
        ("complete", None), ("void", "craps.art1"), ("void", "craps.art2.1")]
    assert "dice [3, 4, 5] is not two integers 1-6" in outcomes[1]["void_reason"]
