"""The typed outcome record (``tabled.games.registry.decode_outcome``: the contract's decoder with
each installed game's record) and the outcome schema (the envelope of
``contract/schemas/outcome.schema.json`` with each game's part, ``registry.outcome_schema``)
say the same thing: every outcome the rules core
makes decodes and validates, envelope and all; a record changed anywhere (a field's value of
another type, a field taken away, one added) is taken by both or refused by both, and a refusal
names the field."""

from __future__ import annotations

import contextlib
import copy
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tabled.contract import CONTRACT_VERSION
from tabled.contract.events import parse_event
from tabled.contract.outcome import Outcome, OutcomeError, UntypedRecord
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.craps.record import CrapsOutcome
from tabled.games.qpoker.record import QPokerOutcome
from tabled.games.registry import decode_outcome, make_table
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream

STREAMS: dict[str, tuple[str, dict[str, str], Any]] = {
    "baccarat method 1": ("baccarat", {"method": "1"},
                          lambda rng: baccarat_stream(rng, 1500, 1, "this")),
    "baccarat method 2, one more": ("baccarat", {"method": "2", "last_hand": "one_more"},
                                    lambda rng: baccarat_stream(rng, 1500, 2, "one_more")),
    "craps": ("craps", {}, lambda rng: craps_stream(rng, 3000)),
    "craps, big bets off on the come-out": (
        "craps", {"big_bets_on_come_out": "false"}, lambda rng: craps_stream(rng, 1500)),
    "qpoker": ("qpoker", {}, lambda rng: qpoker_stream(rng, 800)),
}


def records(name: str, seed: int = 20261203) -> Iterator[dict[str, Any]]:
    game, options, make = STREAMS[name]
    table = make_table(game, options)
    for event in make(random.Random(seed)):
        for output in table.feed(parse_event(event)):
            if isinstance(output, Outcome):
                yield json.loads(output.to_json())


@pytest.mark.parametrize("name", STREAMS)
def test_every_outcome_the_rules_make_decodes_and_validates(
        name: str, outcome_validator: Draft202012Validator) -> None:
    kinds = {"baccarat": BaccaratOutcome, "craps": CrapsOutcome, "qpoker": QPokerOutcome}
    statuses = set()
    for n, record in enumerate(records(name), 1):
        assert record["v"] == CONTRACT_VERSION == 2
        published = {**record, "table_seq": n, "ts": "2026-12-03T00:00:00.000Z"}
        for form in (record, published):
            typed = decode_outcome(json.dumps(form).encode())
            assert isinstance(typed, kinds[record["game"]])
            assert decode_outcome(form) == typed
            assert (typed.game, typed.round, typed.status) == (
                record["game"], record["round"], record["status"])
            if n % 7 == 0:  # (jsonschema is the slow part)
                outcome_validator.validate(form)
        statuses.add(record["status"])
    assert statuses == {"complete", "void"}


def test_a_version_1_record_still_decodes() -> None:
    record = next(records("craps"))
    assert decode_outcome({**record, "v": 1}).v == 1
    with pytest.raises(OutcomeError, match="unsupported contract version 3") as refused:
        decode_outcome({**record, "v": 3})
    assert refused.value.field == "v"


# -- wrong types, named -----------------------------------------------------------------------


def baccarat_record() -> dict[str, Any]:
    return next(r for r in records("baccarat method 1") if r["status"] == "complete")


@pytest.mark.parametrize(("path", "value", "field"), [
    (("round",), "7", "round"),
    (("round",), 7.0, "round"),
    (("round",), True, "round"),
    (("status",), "won", "status"),
    (("result", "player_total"), "5", "result.player_total"),
    (("result", "banker_total"), 10, "result.banker_total"),
    (("result", "winner"), None, "result.winner"),  # (the "#7 5 wins None-None" of issue 27)
    (("result", "player_cards"), "AS9H", "result.player_cards"),
    (("bets", "banker", "result"), 5, "bets.banker.result"),
    (("bets", "player"), "lose", "bets.player"),
    (("table_seq",), -1, "table_seq"),
    (("table_seq",), 2**63, "table_seq"),
])
def test_a_wrong_type_is_refused_naming_the_field(path: tuple[str, ...], value: Any,
                                                  field: str) -> None:
    record = baccarat_record()
    target = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    for form in (record, json.dumps(record).encode()):
        with pytest.raises(OutcomeError) as refused:
            decode_outcome(form)
        assert refused.value.field == field, str(refused.value)
        assert str(refused.value).startswith(f"{field}: ")


def test_a_missing_field_and_a_void_without_its_article_are_named() -> None:
    record = baccarat_record()
    del record["bets"]["tie"]
    with pytest.raises(OutcomeError, match=r"^bets: lacks tie"):
        decode_outcome(record)
    record = baccarat_record()
    del record["result"]
    with pytest.raises(OutcomeError, match=r"^result: missing"):
        decode_outcome(record)
    record = {**baccarat_record(), "status": "void", "void_reason": "misdeal"}
    with pytest.raises(OutcomeError, match=r"^article: missing"):
        decode_outcome(record)
    with pytest.raises(OutcomeError, match=r"^not JSON"):
        decode_outcome(b'{"v": 2,')


# -- the decoder and the schema agree ---------------------------------------------------------


def samples() -> list[dict[str, Any]]:
    """Records of every shape: each game, complete and void, a demo hand, a no-roll, a qpoker
    seat with a void status."""
    chosen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name in STREAMS:
        for record in records(name):
            seats = record["result"].get("seats", {})
            key = (record["game"], record["status"], "demo" in record, "no_roll" in record,
                   "hard" in record["result"],
                   any(s["status"] == "void" for s in seats.values()),
                   any("exposed" in s for s in seats.values()))
            chosen.setdefault(key, record)
    return list(chosen.values())


SAMPLES = samples()
VALUES = [None, True, False, 0, -1, 1, 3, 4, 7, 13, 2**53, 1.5, "", "x", "AS", "win", "void",
          "9:1", "baccarat.art10", "2", [], ["AS"], ["AS", "KD"], [3, 4], {}, {"result": "lose"}]


def paths(value: Any, here: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield here
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*here, str(index)))


def mutate(record: dict[str, Any], path: tuple[str, ...], how: str, value: Any) -> Any:
    changed = copy.deepcopy(record)
    parent: Any = changed
    for step in path[:-1]:
        parent = parent[int(step)] if isinstance(parent, list) else parent[step]
    last = path[-1]
    if isinstance(parent, list):
        if how == "delete":
            del parent[int(last)]
        else:
            parent[int(last)] = value
    elif how == "delete":
        del parent[last]
    elif how == "add":
        target = parent[last]
        if isinstance(target, dict):
            target[str(value) if not isinstance(value, str) else value or "extra"] = value
        else:
            parent[last] = value
    else:
        parent[last] = value
    return changed


def accepted(record: Any) -> bool:
    try:
        decode_outcome(json.dumps(record).encode())
    except OutcomeError:
        return False
    return True


@st.composite
def mutations(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    record = draw(st.sampled_from(SAMPLES))
    path = draw(st.sampled_from([p for p in paths(record) if p]))
    how = draw(st.sampled_from(("replace", "delete", "add")))
    value = draw(st.sampled_from(VALUES))
    return record, mutate(record, path, how, value)


@settings(max_examples=1500, deadline=None)
@given(case=mutations())
def test_the_decoder_and_the_schema_take_and_refuse_the_same_records(
        case: tuple[dict[str, Any], Any], outcome_validator: Draft202012Validator) -> None:
    _, changed = case
    assert accepted(changed) == outcome_validator.is_valid(changed), (
        changed, list(outcome_validator.iter_errors(changed))[:1])


def test_every_sample_is_valid_to_both(outcome_validator: Draft202012Validator) -> None:
    assert len(SAMPLES) >= 8
    for record in SAMPLES:
        assert accepted(record) and outcome_validator.is_valid(record)


def test_the_outcomes_of_a_version_1_journal_decode() -> None:
    """tests/data/journal-0.1.0.sqlite: a journal written by tabled 0.1.0 (contract version 1);
    every outcome in it is a record version 2's reader takes."""
    path = Path(__file__).resolve().parents[1] / "data" / "journal-0.1.0.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        bodies = [body for (body,) in conn.execute(
            "SELECT body FROM journal WHERE topic = 'outcome'")]
    assert len(bodies) == 22
    assert {decode_outcome(body.encode()).v for body in bodies} == {1}


# -- a game this side has not installed --------------------------------------------------------


def test_a_record_of_a_game_not_installed_is_read_for_its_envelope(
        outcome_validator: Draft202012Validator) -> None:
    """A table of a game the reader has not installed (``game`` an id all the same) publishes
    a round: read for its envelope, ``result`` and ``bets`` kept as they came; the schema, the
    envelope with the installed games' parts, takes it too. Its envelope is checked as any."""
    record = {**baccarat_record(), "game": "sicbo_test", "result": {"dice": [1, 2, 3]},
              "bets": {"big": {"result": "lose"}}, "table_seq": 4}
    for form in (record, json.dumps(record).encode()):
        typed = decode_outcome(form)
        assert isinstance(typed, UntypedRecord)
        assert (typed.game, typed.round, typed.status, typed.table_seq) == (
            "sicbo_test", record["round"], "complete", 4)
        assert typed.result == {"dice": [1, 2, 3]} and typed.bets == {"big": {"result": "lose"}}
    assert outcome_validator.is_valid(record)
    for field, value in (("round", 0), ("game", "no game"), ("article", "x.art"),
                         ("status", "won")):
        spoiled = {**record, field: value}
        with pytest.raises(OutcomeError) as refused:
            decode_outcome(spoiled)
        assert refused.value.field == field, str(refused.value)
        assert not outcome_validator.is_valid(spoiled)
    with pytest.raises(OutcomeError, match=r"^article: missing"):
        decode_outcome({**record, "status": "void", "void_reason": "misdeal"})


def test_a_record_of_an_installed_game_under_another_name_is_refused() -> None:
    """An installed game's record is its own: a craps record saying baccarat is refused, not
    read for its envelope."""
    record = {**next(records("craps")), "game": "baccarat"}
    with pytest.raises(OutcomeError):
        decode_outcome(record)


def test_without_a_game_the_record_names_the_games_known() -> None:
    record = baccarat_record()
    del record["game"]
    with pytest.raises(OutcomeError, match=r"^game: missing \(one of baccarat, craps, qpoker"):
        decode_outcome(record)
