"""The bounded fuzzing campaign (issue 5, "Fuzzing"): every target of ``bench.fuzz``, the very
code of the full run (``python -m bench.fuzz``, docs/reliability.md) with fewer inputs.

A target passes with no crash, and only if its inputs still reach what they must: every kind of
damaged frame, every message of each family, every event type, every refusal of the command
gate, voids and settlements of all three games. A fuzzer that stops reaching them fails here
before it quietly proves nothing. ``TABLED_FUZZ_SEED`` picks other inputs than the default ones.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bench.fuzz import all_targets, campaign, fuzz, run_case
from bench.fuzz.__main__ import main
from bench.fuzz.contract import InvariantBroken, check_record
from bench.fuzz.engine import Report, Target
from bench.fuzz.rules import RulesCase, option_sets
from tabled.contract.events import EVENT_TYPES
from tabled.contract.outcome import Outcome
from tabled.daemon.commands import COMMANDS
from tabled.drivers.shoe import protocol as shoe
from tabled.drivers.shuffler import protocol as shuffler
from tabled.games.registry import make_table

SEED = int(os.environ.get("TABLED_FUZZ_SEED", "20261129"))
#: Inputs per target in the default test run (the full campaign runs 1,000,000 of each): the
#: whole directory stays well under a minute.
BOUNDED = {
    "framing": 30_000, "link": 8_000, "shoe": 30_000, "shuffler": 30_000, "dice": 30_000,
    "dice_sequencer": 15_000, "event_lines": 25_000, "event_objects": 30_000,
    "commands": 25_000, "rules": 100_000, "qpoker_publication": 30_000,
}
_EVERY_EVENT = {f"event:{name}" for name in EVENT_TYPES}
#: What each target's inputs must reach; a label ending in ":" is a prefix.
MUST_REACH: dict[str, set[str]] = {
    "framing": {"frame", "garbage", *(f"corrupt:{reason}" for reason in (
        "bad_crc", "bad_length", "truncated", "oversize", "bad_escape", "short"))},
    "link": {"up", "message", "down:no_ack", "down:silence", "counter:naks_sent",
             "counter:naks_received", "counter:retransmits", "counter:out_of_order",
             "counter:duplicates", "counter:resent_already_durable", "host:connected",
             "device:connected"},
    "shoe": {*(cls.__name__ for cls in (*shoe.REPORTS, *shoe.REQUESTS)), "ProtocolError:",
             "event:card", "event:burn", "event:fault", "event:void", "event:shoe_start"},
    "shuffler": {*(cls.__name__ for cls in shuffler.MESSAGE_TYPES.values()), "ProtocolError:",
                 "event:hand", "event:round_start", "event:fault", "event:shoe_start"},
    "dice": {"RollReport", "NoRollReport", "SensorFaultReport", "StatusReport", "DeviceInfo",
             "ResendReply", "report:bad_crc", "report:bad_length", "report:bad_kind",
             "report:bad_content", "event:roll", "event:no_roll", "event:fault"},
    "dice_sequencer": {"Deliver", "RequestResend", "ReportsLost", "AlreadyDurable", "LinkDown",
                       "counter:gaps", "counter:duplicates", "counter:bad_crc",
                       "counter:down_silence", "counter:down_resend_unanswered"},
    "event_lines": {*_EVERY_EVENT, "EventError:not JSON:"},
    "event_objects": {*_EVERY_EVENT, "EventError:"},
    "commands": {*(f"accepted:{name}" for name in COMMANDS),
                 *(f"{reason}:" for reason in ("forged", "stale", "malformed", "unknown"))},
    "rules": {*(f"{game}:{status}:" for game in ("baccarat", "craps", "qpoker")
                for status in ("complete", "void", "notice", "bet")),
              "qpoker:void:qpoker.art11.5", "baccarat:void:baccarat.art10"},
    "qpoker_publication": {"published", "qpoker:complete:", "qpoker:void:qpoker.art11.5"},
}


def _unreached(wanted: Iterable[str], outcomes: set[str]) -> list[str]:
    return sorted(label for label in wanted if not any(
        seen == label or (label.endswith(":") and seen.startswith(label)) for seen in outcomes))


def _crashes(report: Report) -> str:
    return "\n".join(f"{crash.error}\n  again: {crash.command}\n  input: {crash.input[:500]}"
                     for crash in report.crashes)


@pytest.mark.parametrize("name", list(BOUNDED))
def test_bounded_campaign_has_no_crash_and_reaches_deep(name: str) -> None:
    """Issue 5: 0 crashes; the inputs reach every path MUST_REACH names."""
    assert set(BOUNDED) == set(all_targets())
    report = fuzz(all_targets()[name], BOUNDED[name], SEED)
    assert report.crash_count == 0, _crashes(report)
    assert report.inputs >= BOUNDED[name]
    assert not _unreached(MUST_REACH[name], report.outcomes)


# -- the engine itself --------------------------------------------------------------------------


def _fragile_run(data: bytes, rng: random.Random) -> list[str]:
    if b"\x02\x03" in data:
        raise KeyError("STX ETX")
    return ["fine"]


FRAGILE = Target[bytes](
    name="fragile", summary="breaks on STX ETX", corpus=lambda rng: [b"\x02\x10\x03"] * 3,
    mutate=lambda rng, data, corpus: data[:1] + data[2:] if rng.random() < 0.3 else data,
    run=_fragile_run,
)


def test_a_crash_is_counted_kept_and_reproduced_from_its_case() -> None:
    """A crash never stops the campaign; its report names a case that rebuilds the input."""
    report = fuzz(FRAGILE, 300, SEED)
    assert report.cases == 300 and 0 < report.crash_count < 300
    assert report.crash_kinds == {"KeyError:#": report.crash_count}
    assert len(report.crashes) == 1  # the first of its kind, in full
    crash = report.crashes[0]
    assert crash.input == repr(b"\x02\x03") and "KeyError" in crash.trace
    assert crash.command.endswith(f"--target fragile --seed {SEED} --case {crash.case}")
    with pytest.raises(KeyError):
        run_case(FRAGILE, SEED, crash.case)


def test_the_same_seed_runs_the_same_inputs() -> None:
    first, again = (fuzz(all_targets()["shoe"], 3_000, SEED) for _ in range(2))
    other = fuzz(all_targets()["shoe"], 3_000, SEED, shard=1)
    assert first.outcomes == again.outcomes and first.cases == again.cases == 3_000
    assert other.outcomes != first.outcomes  # another shard draws other cases


def test_the_campaign_splits_a_target_over_processes() -> None:
    (report,) = campaign(all_targets, ["dice"], 4_001, SEED, jobs=2)
    assert report.inputs == 4_001 and report.crash_count == 0


def test_the_command_line_prints_a_row_per_target_and_writes_the_figures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = tmp_path / "fuzz.json"
    assert main(["--target", "shoe", "--target", "rules", "--inputs", "2000", "--jobs", "1",
                 "--seed", str(SEED), "--json", str(figures)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[1].split()[:2] == ["shoe", "2,000"] and rows[2].split()[0] == "rules"
    written = json.loads(figures.read_text())
    assert [t["target"] for t in written["targets"]] == ["shoe", "rules"]
    assert all(t["crashes"] == 0 for t in written["targets"])


# -- the checks the campaign relies on ----------------------------------------------------------


def test_the_rules_corpus_holds_every_option_set() -> None:
    """Issue 5: the rules core is fuzzed for all three games and every option set."""
    corpus = all_targets()["rules"].corpus(random.Random(SEED))
    assert all(isinstance(case, RulesCase) and case.events for case in corpus)
    assert [(case.game, case.options) for case in corpus] == option_sets()
    assert len(option_sets()) == 2 * 2 * 2 * 7 + 2 + 14


def _records(seed: int) -> list[dict[str, Any]]:
    corpus = all_targets()["rules"].corpus(random.Random(seed))
    records = []
    for case in corpus[::9]:
        table = make_table(case.game, case.options)
        for event in case.events:
            records += [o.to_record() for o in table.feed(event) if isinstance(o, Outcome)]
    return records


def _spoiled(rng: random.Random, record: dict[str, Any]) -> dict[str, Any]:
    spoiled: dict[str, Any] = json.loads(json.dumps(record))
    key = rng.choice(["round", "status", "game", "v", "article", "result", "bets"])
    spoiled[key] = rng.choice([0, "void", "poker", 2, "art9", None, [], "x"])
    return spoiled


def test_the_fast_validator_agrees_with_the_reference_one(
        outcome_validator: Draft202012Validator) -> None:
    """check_record (jsonschema-rs) accepts and refuses exactly what the reference validator
    (jsonschema) does, on real records and on spoiled ones."""
    rng = random.Random(SEED)
    records = _records(SEED)
    assert len(records) > 100
    for record in [*records, *(_spoiled(rng, record) for record in records)]:
        try:
            check_record(record)
            fast = True
        except InvariantBroken:
            fast = False
        assert fast == outcome_validator.is_valid(record), record


def test_a_record_no_broker_can_carry_is_a_finding() -> None:
    record = _records(SEED)[0]
    with pytest.raises(UnicodeEncodeError):
        check_record({**record, "void_reason": "\ud800"})
    with pytest.raises(ValueError):
        check_record({**record, "extra": float("nan")})


BYTE_TARGETS = ["framing", "shoe", "shuffler", "dice", "event_lines"]


@pytest.mark.parametrize("name", BYTE_TARGETS)
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), seed=st.integers(0, 2**32))
def test_any_bytes_give_outcomes_not_exceptions(name: str, data: bytes, seed: int) -> None:
    """STYLE principle 7, by hypothesis: arbitrary bytes give outcomes or the module's own
    error, never an exception (and hypothesis shrinks whatever breaks it)."""
    assert list(all_targets()[name].run(data, random.Random(seed)))


@settings(max_examples=200, deadline=None)
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["v", "type", "seat", "card", "cards", "dice", "code", "family", "x"]),
        inner, max_size=4),
    max_leaves=12))
def test_any_json_value_gives_an_event_or_an_event_error(value: Any) -> None:
    for candidate in (value, {"v": 1, "type": "fault", "code": "x", "family": value}):
        assert list(all_targets()["event_objects"].run(candidate, random.Random(0)))
    if isinstance(value, dict):
        for name in EVENT_TYPES:
            assert list(all_targets()["event_objects"].run({**value, "v": 1, "type": name},
                                                           random.Random(0)))
