"""The contract checks every fuzz target ends with: is what came out a valid public event or record?

Owns the two compiled JSON Schema validators (``contract/schemas``, built once per process with
jsonschema-rs, which checks a record in microseconds where the reference validator takes a
millisecond) and the round trip an event must survive. It must never decide what a game or a
device means: it only holds outputs against docs/contract.md's schemas and the event codec.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

from tabled.contract.events import Event, encode_event, event_to_dict, parse_event
from tabled.contract.outcome import OutcomeError
from tabled.games.registry import decode_outcome


class InvariantBroken(Exception):
    """The code under test survived the input but broke a promise it makes (the fuzz finding
    that is not an exception of its own)."""


@cache
def _validator(name: str) -> Any:
    text = resources.files("tabled.contract.schemas").joinpath(f"{name}.schema.json").read_text()
    # Formats are annotations, as the reference validator treats them by default.
    return jsonschema_rs.validator_for(json.loads(text), validate_formats=False)


def _check(name: str, document: Any) -> None:
    validator = _validator(name)
    if not validator.is_valid(document):
        error = next(iter(validator.iter_errors(document)))
        where = "/".join(str(part) for part in error.instance_path)
        raise InvariantBroken(f"{name} schema: {error.message} at /{where}: {document!r}")


def check_record(record: dict[str, Any]) -> None:
    """``record`` is a contract-valid outcome record, and the daemon can publish it: strict JSON
    in UTF-8, as ``tabled.daemon.mqtt.dumps`` and the broker take it."""
    json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    _check("outcome", record)
    try:  # and the contract's typed reader (what the pit decodes it with) takes it too
        decode_outcome(record)
    except OutcomeError as exc:
        raise InvariantBroken(f"decode_outcome: {exc}: {record!r}") from None


def check_event(event: Event) -> None:
    """``event`` is contract-valid: its JSON satisfies the event schema and parses back to the
    very same line."""
    document = event_to_dict(event)
    _check("event", document)
    line = encode_event(event)
    again = encode_event(parse_event(json.loads(line)))
    if again != line:
        raise InvariantBroken(f"event changed through JSON: {line} -> {again}")
