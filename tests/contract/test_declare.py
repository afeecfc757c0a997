"""The ``declare`` event and console command (issue 13): the dealer's call of a result, in the
contract, through the signed console gate, and accepted by every game's rules core without
deciding anything (the pit compares it with the outcome: docs/integrity.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tabled.contract.events import (
    Declare,
    EventError,
    encode_event,
    parse_event,
    parse_line,
)
from tabled.daemon.commands import COMMANDS, CommandGate, CommandRejected, parse_ts, sign
from tabled.games.registry import check_event, declared_words, event_checks, games, make_table

SCHEMA = json.loads((Path(__file__).parents[2] / "contract" / "schemas" /
                     "event.schema.json").read_text())
KEY = b"declare-test-key"
TS = "2026-11-29T16:00:00.000Z"


def test_a_declaration_parses_encodes_and_satisfies_the_schema() -> None:
    event = parse_event({"v": 1, "type": "declare", "result": "banker", "round": 57})
    assert event == Declare(result="banker", round=57)
    line = encode_event(event)
    assert json.loads(line) == {"v": 2, "type": "declare", "result": "banker", "round": 57}
    assert parse_line(line) == event
    Draft202012Validator(SCHEMA).validate(json.loads(line))
    bare = parse_event({"v": 1, "type": "declare", "result": "seven_out"})
    assert bare == Declare(result="seven_out") and bare.round is None
    Draft202012Validator(SCHEMA).validate(json.loads(encode_event(bare)))


@pytest.mark.parametrize("fields", [{}, {"result": "the banker"}, {"result": 1}, {"result": ""},
                                    {"result": "tie", "round": 0},
                                    {"result": "tie", "round": True},
                                    {"result": "tie", "round": "3"}])
def test_a_declaration_outside_the_vocabulary_is_malformed(fields: dict[str, object]) -> None:
    with pytest.raises(EventError):
        parse_event({"v": 1, "type": "declare", **fields})
    assert not Draft202012Validator(SCHEMA).is_valid({"v": 1, "type": "declare", **fields})


@pytest.mark.parametrize("game", ["baccarat", "craps", "qpoker"])
def test_every_rules_core_accepts_a_declaration_and_decides_nothing(game: str) -> None:
    table = make_table(game)
    for word in (w for declared in games().values() for w in declared.declarations):
        assert table.feed(Declare(result=word)) == []
        assert table.feed(Declare(result=word, round=3)) == []
    assert table.next_round == 1 and not table.round_open


@pytest.mark.parametrize(("game", "word"), [("baccarat", "seven_out"), ("craps", "banker"),
                                             ("qpoker", "tie")])
def test_another_games_word_passes_and_an_unknown_word_is_malformed(game: str, word: str) -> None:
    """The contract takes any word (an id); at a table, a word no installed game declares is
    malformed (in ``tabled replay`` and the daemon alike), while another game's word passes, as
    it always has: it is journaled, and the pit's integrity monitors find the call wrong
    (``result_mismatch``), so the record keeps the console's mistake."""
    line = json.dumps({"v": 2, "type": "declare", "result": word})
    assert parse_line(line) == Declare(result=word)
    assert parse_line(line, event_checks(game)) == Declare(result=word)
    check_event(Declare(result=word, round=2), game)
    words = ", ".join(sorted(declared_words()))
    assert word in words.split(", ")
    bad = json.dumps({"v": 2, "type": "declare", "result": "bankers"})
    with pytest.raises(EventError, match=rf"^result 'bankers' is not one of {words}$"):
        parse_line(bad, event_checks(game))
    for own in games()[game].declarations:
        check_event(Declare(result=own), game)


def test_a_declaration_mid_hand_changes_nothing_in_the_hand() -> None:
    plain, told = make_table("baccarat"), make_table("baccarat")
    cards = ["9S", "2H", "KD", "3C"]
    for card in cards[:2]:
        for table in (plain, told):
            table.feed(parse_event({"v": 1, "type": "card", "card": card}))
    assert told.feed(Declare(result="player")) == []
    outs = [table.feed(parse_event({"v": 1, "type": "card", "card": c}))
            for c in cards[2:] for table in (plain, told)]
    assert outs[-2] == outs[-1] and outs[-1]


def _command(args: dict[str, object], nonce: str = "0123456789abcdef0123") -> bytes:
    return json.dumps(sign({"cmd": "declare", "args": args, "console": "pit-4", "ts": TS,
                            "nonce": nonce}, KEY)).encode()


def test_the_console_declares_through_the_signed_gate() -> None:
    assert "declare" in COMMANDS
    gate = CommandGate(KEY, 30.0, clock=lambda: parse_ts(TS))
    command = gate.check("declare", _command({"result": "banker", "round": 12}))
    assert command.event == Declare(result="banker", round=12)
    assert command.event.extra["source"] == "console:pit-4"
    bare = gate.check("declare", _command({"result": "seven_out"}, nonce="f" * 20)).event
    assert isinstance(bare, Declare) and bare.round is None
    with pytest.raises(CommandRejected) as refused:
        gate.check("declare", _command({"result": "the banker, obviously"}, nonce="e" * 20))
    assert refused.value.reason == "malformed"
    with pytest.raises(CommandRejected) as refused:
        gate.check("declare", _command({"result": "tie", "round": -1}, nonce="d" * 20))
    assert refused.value.reason == "malformed"


def test_the_gate_refuses_a_word_no_installed_game_declares() -> None:
    """Given the table's game, the console's gate refuses a word no installed game declares as
    malformed before it reaches the rules; another game's word passes to the journal."""
    gate = CommandGate(KEY, 30.0, clock=lambda: parse_ts(TS), checks=event_checks("craps"))
    assert gate.check("declare", _command({"result": "seven_out"})).event == Declare(
        result="seven_out")
    assert gate.check("declare", _command({"result": "banker"}, nonce="c" * 20)).event == \
        Declare(result="banker")
    with pytest.raises(CommandRejected) as refused:
        gate.check("declare", _command({"result": "bankers"}, nonce="e" * 20))
    assert refused.value.reason == "malformed"
    assert "'bankers' is not one of banker, " in refused.value.detail
