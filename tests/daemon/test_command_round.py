"""The round a dealer's command is for, through the daemon: the command gate takes ``round`` in
``args`` (checked) onto the event; the rules decline the command in another round and the reply
says so; and every published event names the round it belongs to, which is how a console knows
the round to name (docs/mqtt.md). Real journal, real gate, the service's command path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tabled.contract.events import (
    Decision,
    HandDealt,
    Meta,
    Reveal,
    RoundStart,
    Void,
    parse_event,
)
from tabled.contract.outcome import FOR_ANOTHER_ROUND, Outcome
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.commands import CommandGate, CommandRejected, parse_ts, sign
from tabled.daemon.config import parse_config
from tabled.daemon.gate import ConsoleGate
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import TableRuntime
from tabled.games.registry import make_table

KEY = b"k" * 32
TS = "2026-11-29T16:00:00.000Z"
SHUFFLER = "device:shuffler-1"


def _body(name: str, args: dict[str, Any], nonce: str, ts: str = TS) -> bytes:
    return json.dumps(sign({"cmd": name, "args": args, "console": "pit-4", "ts": ts,
                            "nonce": nonce}, KEY)).encode()


def test_the_gate_puts_the_round_on_the_event() -> None:
    gate = CommandGate(KEY, 30.0, clock=lambda: parse_ts(TS))
    nonces = iter(f"{n:020d}" for n in range(100))

    def check(name: str, args: dict[str, Any]) -> Any:
        return gate.check(name, _body(name, args, next(nonces))).event

    assert check("decision", {"seat": 3, "play": True, "round": 17}) == Decision(
        seat=3, play=True, round=17)
    assert check("reveal", {"round": 17}) == Reveal(round=17)
    assert check("void", {"reason": "x", "round": 17}) == Void(reason="x", round=17)
    assert check("reveal", {}) == Reveal()  # no round: the open one, as before
    assert check("decision", {"seat": 3, "play": True}).round is None


@pytest.mark.parametrize("value", [0, -2, True, 1.5, 17.0, "17", None, [17]])
@pytest.mark.parametrize("name", ["decision", "reveal", "void"])
def test_a_round_that_is_not_a_positive_integer_is_malformed(name: str, value: Any) -> None:
    gate = CommandGate(KEY, 30.0, clock=lambda: parse_ts(TS))
    args = {"seat": 3, "play": True} if name == "decision" else {}
    with pytest.raises(CommandRejected) as refused:
        gate.check(name, _body(name, {**args, "round": value}, "0123456789abcdef"))
    assert refused.value.reason == "malformed" and "round" in refused.value.detail
    # (a malformed command spends no nonce: the console may send it again, corrected)
    assert gate.check(name, _body(name, args, "0123456789abcdef")).event.round is None


def published(journal: Journal, topic: str) -> list[dict[str, Any]]:
    return [json.loads(o.payload) for o in journal.delivery.outputs_after(0, 10_000)
            if o.topic == topic]


def replayed(game: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = make_table(game)
    out = []
    for body in events:
        event = {k: v for k, v in body.items() if k != "table_seq"}
        out += [o.to_record() for o in table.feed(parse_event(event)) if isinstance(o, Outcome)]
    return out


async def test_a_late_reveal_is_declined_and_the_reply_says_so(tmp_path: Path) -> None:
    """The campaign's case through the service's command path: round 1's dealer card is
    exposed (void, qpoker.art11.3), round 2 is being dealt when the console's reveal for round
    1 arrives. The reply is ok with the notice; round 2 is dealt, decided and settled."""
    config = parse_config({"table": {"site": "s", "id": "t", "game": "qpoker"},
                           "journal": {"path": str(tmp_path / "j.sqlite")}})
    journal = Journal(tmp_path / "j.sqlite")
    runtime = TableRuntime(config, journal.events)
    gate = ConsoleGate(CommandGate(KEY, 30.0), runtime, journal.audit)
    nonces = iter(f"{n:020d}" for n in range(100))

    async def command(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return gate.handle(name, _body(name, args, next(nonces), rfc3339_now()))

    def deal(*events: Any) -> None:
        for event in events:
            runtime.accept(event, SHUFFLER)

    try:
        journal.audit.record_start({"version": "test"}, rfc3339_now())
        deal(RoundStart(seats=(1, 2)), HandDealt(seat=1, cards=("AS", "KS", "QS")),
             HandDealt(seat=2, cards=("2D", "2H", "5C")),
             HandDealt(seat="dealer", cards=("QD", "4C", "9H"), face_up=True))
        deal(RoundStart(seats=(1, 2)), HandDealt(seat=1, cards=("5D", "6H", "KH")))
        late = await command("reveal", {"round": 1})
        assert late["ok"] is True and late["rounds"] == []
        assert [n["code"] for n in late["notices"]] == [FOR_ANOTHER_ROUND]
        assert late["notices"][0]["article"] == "qpoker.art9"
        assert runtime.table.round_open and runtime.table.next_round == 2
        deal(HandDealt(seat=2, cards=("2C", "JS", "6C")),
             HandDealt(seat="dealer", cards=("KC", "4H", "TC")))
        for seat in (1, 2):
            reply = await command("decision", {"seat": seat, "play": True, "round": 2})
            assert reply["ok"] and reply["notices"] == []
        settled = await command("reveal", {"round": 2})
        assert settled["rounds"] == [2] and settled["notices"] == []
        outcomes = published(journal, "outcome")
        assert [(o["round"], o["status"], o.get("article")) for o in outcomes] == [
            (1, "void", "qpoker.art11.3"), (2, "complete", None)]
        events = published(journal, "event")
        # every event names its round; a command keeps the one it named
        assert [(e["type"], e.get("seat"), e.get("round")) for e in events] == [
            ("round_start", None, 1), ("withheld", 1, 1), ("withheld", 2, 1),
            ("hand", 1, 1), ("hand", 2, 1), ("hand", "dealer", 1),  # opened with the void
            ("round_start", None, 2), ("withheld", 1, 2),
            ("reveal", None, 1),  # declined: round 1's, as the console named it
            ("withheld", 2, 2), ("withheld", "dealer", 2), ("hand", 1, 2), ("hand", 2, 2),
            ("decision", 1, 2), ("decision", 2, 2),
            ("hand", "dealer", 2), ("reveal", None, 2)]
        # the published stream replays to the published outcomes
        assert replayed("qpoker", events) == [
            {k: v for k, v in o.items() if k not in ("table_seq", "ts")} for o in outcomes]
    finally:
        journal.close()


def test_published_events_name_their_round(tmp_path: Path) -> None:
    """``round`` on what is published: a round_start the round it begins (even one that voids
    the open round), a card opened at a void the round it was dealt in, the rest of a deal
    voided midway that void round; a command without a round gets none (the rules would check
    one on replay)."""
    config = parse_config({"table": {"site": "s", "id": "t", "game": "qpoker"},
                           "journal": {"path": str(tmp_path / "j.sqlite")}})
    runtime = TableRuntime(config, Journal(tmp_path / "j.sqlite").events)
    stamp = Meta(device="shuffler-1")
    for event in (RoundStart(seats=(1, 2), meta=stamp),
                  HandDealt(seat=1, cards=("AS", "KS", "QS"), meta=stamp),
                  RoundStart(seats=(3,), meta=stamp),  # round 1 void (11.1), round 2 begins
                  Void(reason="dealer_call"),  # round 2 void before its deal
                  HandDealt(seat=3, cards=("2D", "2H", "5C"), meta=stamp),  # its rest
                  RoundStart(seats=(1,), meta=stamp),
                  Decision(seat=1, play=True)):
        runtime.accept(event, "test")
    events = published(runtime.events.owner, "event")
    assert [(e["type"], e.get("withheld"), e.get("round")) for e in events] == [
        ("round_start", None, 1), ("withheld", None, 1),
        ("hand", True, 1), ("round_start", None, 2),  # round 1's card, opened as it ended
        ("void", None, None),
        ("hand", None, 2),  # the rest of round 2's deal, as it came (nothing left to hide)
        ("round_start", None, 3), ("decision", None, None)]
    assert [o["round"] for o in published(runtime.events.owner, "outcome")] == [1, 2]
    assert replayed("qpoker", events) == [
        {k: v for k, v in o.items() if k not in ("table_seq", "ts")}
        for o in published(runtime.events.owner, "outcome")]
    runtime.events.owner.close()
