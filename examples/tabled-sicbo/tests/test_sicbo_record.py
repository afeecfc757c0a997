"""Sic bo's part of the contract, where the contract has a game's typed record (issue 28): every
record the rules make decodes typed, a damaged one is refused naming its field, and the
composed outcome schema takes what the decoder takes."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from tabled.contract import outcome as contract_outcome
from tabled.contract.events import NoRoll, Roll, Void
from tabled.contract.outcome import Outcome

if not hasattr(contract_outcome, "GameRecord"):
    pytest.skip("the contract has no game's typed record yet (issue 28)", allow_module_level=True)

from tabled.games import registry as _registry

from tabled_sicbo import GAME
from tabled_sicbo.record import SicBoOutcome
from tabled_sicbo.rules import THROWS, SicBoTable

#: (Any: what issue 28 adds to the declaration and the registry is not in every tabled)
registry: Any = _registry


def records() -> list[dict[str, Any]]:
    table = SicBoTable()
    events: list[Any] = [Roll(dice=cast(Any, dice)) for dice in THROWS[::7]]
    events += [NoRoll(reason="die_not_flat"), Void()]
    return [json.loads(o.to_json()) for e in events for o in table.feed(e)
            if isinstance(o, Outcome)]


def test_the_game_declares_its_record_and_schema() -> None:
    declared: Any = GAME
    assert declared.record is SicBoOutcome
    assert declared.schema == "tabled_sicbo:outcome.schema.json"


def test_every_record_decodes_typed() -> None:
    decode = registry.decode_outcome
    for record in records():
        typed = decode(record)
        assert isinstance(typed, SicBoOutcome), record
        assert typed.round == record["round"]


def test_a_damaged_record_is_refused_naming_its_field() -> None:
    decode = registry.decode_outcome
    record = records()[0]
    bad = {**record, "result": {**record["result"], "dice": [1, 2, 9]}}
    with pytest.raises(contract_outcome.OutcomeError) as caught:
        decode(bad)
    assert caught.value.field.startswith("result.dice")
    lacking = {**record, "bets": {k: v for k, v in record["bets"].items() if k != "small"}}
    with pytest.raises(contract_outcome.OutcomeError, match="small"):
        decode(lacking)


def test_the_composed_schema_takes_the_records() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = registry.outcome_schema()
    for record in records():
        jsonschema.validate(record, schema)
    record = records()[0]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**record, "result": {**record["result"], "total": 19}}, schema)
