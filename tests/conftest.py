"""Fixtures shared by every test: the contract's JSON Schemas."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tabled.games.registry import outcome_schema


def load_schema(name: str) -> dict[str, Any]:
    text = resources.files("tabled.contract.schemas").joinpath(f"{name}.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return schema


@pytest.fixture(scope="session")
def outcome_validator() -> Draft202012Validator:
    """The outcome schema as the registry composes it: the contract's envelope with each
    installed game's part."""
    schema = outcome_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture(scope="session")
def event_validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema("event"))
