"""docs/contract.md and the JSON Schemas of ``contract/schemas/`` cannot drift apart: every
field a schema names is a row of the document's field tables, with the same type, and every
row of those tables is a field of a schema.

A field table follows a ``<!-- schema: NAME -->`` line (``event``, ``outcome``, ``fault``) and
has the columns ``where | field | type | meaning``. ``where`` is the part of the schema: the
message as a whole (``every event``, ``every outcome``, ``every fault message``; ``every
published event``: what the daemon adds on ``…/event``), an event or
fault type (its ``type``), or a part of an outcome record (``bet``, ``baccarat``, ``baccarat
result``, ``qpoker dealer``, …). ``type`` is :func:`render` of the field's schema, word for
word: ``python -m tests.contract.test_contract_doc`` prints the rows the schemas call for."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from tabled.contract import CONTRACT_VERSION
from tabled.games.registry import outcome_schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "contract.md"
SCHEMAS = ("event", "outcome", "fault")
WHOLE = {"event": "every event", "outcome": "every outcome", "fault": "every fault message"}
#: Definitions shown by their name (the document says what each is).
NAMED = {"card", "seat", "game", "article", "bet", "hand_class", "round", "pays"}
#: The games whose part of the outcome record this document has: those of tabled itself (a
#: game installed as a plugin documents its own).
BUILT_IN = tuple(entry.name for entry in entry_points(group="tabled.games")
                 if entry.value.startswith("tabled.games."))
MAX_INT = 2**53 - 1


def schema(name: str) -> dict[str, Any]:
    if name == "outcome":  # the envelope, and each game's part from its package
        return outcome_schema(BUILT_IN)
    text = resources.files("tabled.contract.schemas").joinpath(f"{name}.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def render(s: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A field's schema in the document's words: ``int ≥ 1``, ``list of card``, ``bool``…"""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[1]
        return name if name in NAMED else render(defs[name], defs)
    if "const" in s:
        return json.dumps(s["const"])
    if "enum" in s:
        values = [json.dumps(v) for v in s["enum"]]
        return " or ".join(values) if len(values) <= 2 else "one of " + ", ".join(values)
    for key in ("oneOf", "anyOf"):
        if key in s:
            return " or ".join(render(choice, defs) for choice in s[key])
    kind = s.get("type")
    if isinstance(kind, list):
        return " or ".join(render({**s, "type": k}, defs) for k in kind)
    if kind == "integer":
        low, high = s.get("minimum"), s.get("maximum")
        top = "2^53-1" if high == MAX_INT else "2^32-1" if high == 2**32 - 1 else high
        if low is not None and high is not None:
            return f"int {low}..{top}"
        return "int" if low is None else f"int ≥ {low}"
    if kind == "string":
        if s.get("format") == "date-time":
            return "RFC 3339 time"
        return "non-empty string" if s.get("minLength") == 1 else "string"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        items = s.get("items")
        if "minItems" in s and s.get("minItems") == s.get("maxItems") and items is not None:
            return f"{s['minItems']} × {render(items, defs)}"
        return "list" if items is None else f"list of {render(items, defs)}"
    if kind == "object":
        return "object"
    if kind == "null":
        return "null"
    return "any"


def _properties(s: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """The properties of a part, those of a definition it refers to included."""
    out: dict[str, Any] = {}
    if "$ref" in s:
        out.update(_properties(defs[s["$ref"].rsplit("/", 1)[1]], defs))
    out.update(s.get("properties", {}))
    return out


def parts(name: str) -> dict[str, dict[str, Any]]:
    """Each part of a schema (the document's ``where``) and its fields."""
    whole = schema(name)
    defs = whole.get("$defs", {})
    found: dict[str, dict[str, Any]] = {WHOLE[name]: whole["properties"]}
    for branch in whole.get("allOf", []):
        condition = branch["if"]["properties"]
        then = branch["then"]
        if "type" in condition:
            found[condition["type"]["const"]] = then.get("properties", {})
        elif "game" in condition:
            game = condition["game"]["const"]
            props = dict(then.get("properties", {}))
            result, _ = props.pop("result"), props.pop("bets")
            if props:
                found[game] = props
            found[f"{game} result"] = result["properties"]
            if game == "qpoker":
                found["qpoker dealer"] = _properties(result["properties"]["dealer"], defs)
                found["qpoker seat"] = _properties(
                    result["properties"]["seats"]["additionalProperties"], defs)
    if name == "event":
        found["every published event"] = defs["published"]["properties"]
    if name == "outcome":
        found["bet"] = defs["bet"]["properties"]
        found["qpoker seat bets"] = defs["qpoker_seat_bets"]["properties"]
    return {where: props for where, props in found.items() if props}


def expected(name: str) -> dict[tuple[str, str], str]:
    defs = schema(name).get("$defs", {})
    return {(where, field): render(s, defs)
            for where, props in parts(name).items() for field, s in props.items()}


_MARK = re.compile(r"^<!-- schema: (?P<name>\w+) -->$")


def _cell(text: str) -> str:
    return text.strip().replace("`", "").replace("\\|", "|")


def documented() -> Iterator[tuple[str, int, tuple[str, str], str]]:
    """Each row of the document's field tables: (schema, line, (where, field), type)."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        mark = _MARK.match(line.strip())
        if mark is None:
            continue
        row = index + 1
        while row < len(lines) and not lines[row].startswith("|"):
            row += 1
        header = [_cell(c) for c in lines[row].strip("|").split("|")]
        assert header[:3] == ["where", "field", "type"], f"line {row + 1}: {header}"
        row += 2  # (the header and its rule)
        while row < len(lines) and lines[row].startswith("|"):
            cells = re.split(r"(?<!\\)\|", lines[row].strip().strip("|"))
            where, field, kind = (_cell(c) for c in cells[:3])
            yield mark["name"], row + 1, (where, field), kind
            row += 1


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_schema_field_is_documented_with_its_type_and_nothing_else_is(name: str) -> None:
    rows = [(key, kind, line) for schema_name, line, key, kind in documented()
            if schema_name == name]
    assert rows, f"docs/contract.md has no <!-- schema: {name} --> table"
    wanted = expected(name)
    doc = {key: kind for key, kind, _ in rows}
    assert len(doc) == len(rows), "a field documented twice"
    missing = sorted(set(wanted) - set(doc))
    assert not missing, "in the schema, not in docs/contract.md: " + "; ".join(
        f"| {w} | `{f}` | {wanted[(w, f)]} |" for w, f in missing)
    unknown = sorted(set(doc) - set(wanted))
    assert not unknown, f"in docs/contract.md, in no {name} schema: {unknown}"
    wrong = [(line, key, kind, wanted[key]) for key, kind, line in rows if wanted[key] != kind]
    assert not wrong, "types differ (line, field, doc, schema): " + repr(wrong)


def test_the_document_is_of_this_contract_version_and_says_what_changed() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.startswith(f"# The public contract, version {CONTRACT_VERSION}\n")
    assert f"## From version {CONTRACT_VERSION - 1} to {CONTRACT_VERSION}" in text
    for name in SCHEMAS:  # (a reader takes version 1 too: a table not yet upgraded)
        assert schema(name)["properties"]["v"]["enum"] == [1, CONTRACT_VERSION]


def test_the_check_fails_on_a_field_the_document_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field added to a schema and not to the document is found (the check can fail)."""
    original = schema

    def with_one_more(name: str) -> dict[str, Any]:
        loaded = original(name)
        if name == "outcome":
            loaded["properties"]["dealer_id"] = {"type": "string"}
        return loaded

    monkeypatch.setattr(sys.modules[__name__], "schema", with_one_more)
    assert ("every outcome", "dealer_id") in set(expected("outcome"))
    assert ("every outcome", "dealer_id") not in {key for _, _, key, _ in documented()}


if __name__ == "__main__":  # the rows the schemas call for, to paste into docs/contract.md
    for schema_name in SCHEMAS:
        print(f"<!-- schema: {schema_name} -->")
        print("| where | field | type | meaning |\n|---|---|---|---|")
        for (part, field_name), kind in expected(schema_name).items():
            print(f"| {part} | `{field_name}` | {kind} | |")
        print()
