"""Fuzz targets of the text side: the event parser (JSON lines and JSON objects) and the dealer
console's command gate.

Owns their corpora, made with the real encoders (``encode_event`` of every event type as the
oracle streams and the drivers produce them, commands signed with ``tabled.daemon.commands.sign``),
and
the mutations that reach past the first check: structural JSON mutations, and commands signed
again after they were spoiled, so that the gate's checks behind the MAC are fuzzed too. A run
holds the parser to "an event or EventError, and what it accepts is contract-valid" and the
gate to "a command or CommandRejected, and a command is accepted once". It must never change
the parser or the gate.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bench.fuzz.contract import InvariantBroken, check_event
from bench.fuzz.engine import Target, error_shape
from bench.fuzz.mutate import json_value, mutate_bytes, mutate_json, random_bytes
from tabled.contract.events import (
    EVENT_TYPES,
    Decision,
    Declare,
    EventError,
    Reveal,
    ShoeStart,
    Void,
    encode_event,
    parse_event,
    parse_line,
)
from tabled.daemon.commands import COMMANDS, CommandGate, CommandRejected, sign
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream

#: Field names of the contract's events, worth adding where they do not belong.
EVENT_KEYS = ("v", "type", "device", "seq", "ts", "decks", "card", "face_up", "seat", "seats",
              "cards", "play", "dice", "reason", "code", "detail", "count", "withheld", "extra",
              "result", "round")

# -- events -------------------------------------------------------------------------------------

#: Events the oracle streams seldom or never hold (the Q Poker publication's, odd corners), and
#: one of every type, so that no type depends on the luck of the sample.
_RARE_EVENTS: tuple[dict[str, Any], ...] = (
    {"v": 1, "type": "withheld", "seat": "dealer", "count": 3},
    {"v": 1, "type": "withheld", "seat": 4, "count": 1, "device": "shuffler-1", "seq": 9},
    {"v": 1, "type": "hand", "seat": 2, "cards": ["AS", "KD", "2C"], "face_up": False,
     "withheld": True},
    {"v": 1, "type": "card", "card": "9H", "seat": "dealer", "face_up": False},
    {"v": 1, "type": "burn"},
    {"v": 1, "type": "void"},
    {"v": 1, "type": "no_roll", "reason": "die_off_table"},
    {"v": 1, "type": "fault", "code": "device_lost", "detail": "unplugged",
     "family": "shuffler"},
    {"v": 1, "type": "round_start"},
    {"v": 1, "type": "decision", "seat": 20, "play": False, "ts": "2026-11-29T15:43:19.123Z"},
    {"v": 1, "type": "cut_card", "card_no": 402}, {"v": 1, "type": "demo"},
    {"v": 1, "type": "shoe_start", "decks": 8}, {"v": 1, "type": "reveal"},
    {"v": 1, "type": "declare", "result": "banker"},
    {"v": 1, "type": "declare", "result": "seven_out", "round": 12},
)


def event_dicts(rng: random.Random) -> list[dict[str, Any]]:
    """Events of every type, as the games' realistic streams and the publication make them."""
    streams = (baccarat_stream(rng, 40, rng.choice((1, 2)), "this"), craps_stream(rng, 150),
               qpoker_stream(rng, 30))
    events = [event for stream in streams for event in stream]
    return [*rng.sample(events, min(len(events), 700)), *_RARE_EVENTS]


def _event_lines(rng: random.Random) -> list[bytes]:
    return [encode_event(parse_event(event)).encode() for event in event_dicts(rng)]


def _nest(rng: random.Random, text: bytes) -> bytes:
    """``text`` deep inside arrays or objects: the input that exhausts a recursive parser."""
    depth = rng.choice((2, 50, 5000, 50000))
    if rng.random() < 0.5:
        return b"[" * depth + text + b"]" * depth
    return b'{"v":' * depth + text + b"}" * depth


def mutate_json_text(rng: random.Random, text: bytes, corpus: Sequence[bytes]) -> bytes:
    """A JSON text spoiled as bytes, as a structure (then written again), or nested deep."""
    draw = rng.random()
    if draw < 0.45:
        return mutate_bytes(rng, text, corpus)
    if draw < 0.97:
        donors = [json.loads(rng.choice(corpus)) for _ in range(2)]
        value = mutate_json(rng, json.loads(text), EVENT_KEYS, donors)
        return json.dumps(value, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    return _nest(rng, text)


def _parsed(text: bytes | str) -> list[str]:
    try:
        event = parse_line(text)
    except EventError as exc:
        return [error_shape(exc)]
    check_event(event)
    return [f"event:{event.type}"]


def _run_event_line(data: bytes, rng: random.Random) -> list[str]:
    """The line as bytes (as read from a file or a socket) and, when it is UTF-8, as text."""
    labels = _parsed(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return labels
    return labels + _parsed(text)


EVENT_LINES = Target[bytes](
    name="event_lines",
    summary="tabled.contract.events.parse_line over JSON text (bytes and str)",
    corpus=_event_lines, mutate=mutate_json_text, run=_run_event_line, fresh=random_bytes,
)


def _mutate_event_object(rng: random.Random, value: Any, corpus: Sequence[Any]) -> Any:
    for _ in range(rng.choice((1, 1, 2, 3))):
        value = mutate_json(rng, value, EVENT_KEYS, [rng.choice(corpus) for _ in range(2)])
    if isinstance(value, dict) and rng.random() < 0.1:  # any type's fields under any type
        value = {**value, "type": rng.choice(list(EVENT_TYPES))}
    return value


def _run_event_object(value: Any, rng: random.Random) -> list[str]:
    try:
        event = parse_event(value)
    except EventError as exc:
        return [error_shape(exc)]
    check_event(event)
    return [f"event:{event.type}"]


EVENT_OBJECTS = Target[Any](
    name="event_objects",
    summary="tabled.contract.events.parse_event over decoded JSON values",
    corpus=event_dicts, mutate=_mutate_event_object, run=_run_event_object, fresh=json_value,
)

# -- dealer-console commands --------------------------------------------------------------------

KEY = b"fuzzing-campaign-console-key"
#: The gate's clock: every command of the corpus is signed within a second of it.
NOW = 1_800_000_000.0
MAX_SKEW = 30.0
REASONS = frozenset({"forged", "stale", "replayed", "malformed", "unknown"})
COMMAND_KEYS = ("cmd", "args", "console", "ts", "nonce", "mac", "seat", "play", "reason",
                "decks", "result", "round")
EVENT_OF = {"decision": Decision, "reveal": Reveal, "void": Void, "new_shoe": ShoeStart,
            "declare": Declare}


@dataclass(frozen=True)
class CommandCase:
    """A message on ``…/cmd/<name>`` with its payload."""

    name: str
    payload: bytes


def rfc3339(seconds: float) -> str:
    stamp = datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _args(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "decision":
        return {"seat": rng.randint(1, 20), "play": rng.random() < 0.5}
    if name == "void":
        return rng.choice(({}, {"reason": "dealer_call"}))
    if name == "new_shoe":
        return {"decks": rng.randint(6, 12)}
    if name == "declare":
        return {"result": rng.choice(("banker", "player", "tie", "seven_out", "point_made",
                                      "dealer_qualifies")),
                **({"round": rng.randint(1, 500)} if rng.random() < 0.5 else {})}
    return {}


def _signed(rng: random.Random, body: dict[str, Any]) -> bytes:
    """``body`` signed as the console signs it, or left with whatever MAC it has when it
    cannot be signed (a string no UTF-8 can carry)."""
    with contextlib.suppress(UnicodeEncodeError):
        body = sign(body, KEY)
    return json.dumps(body, ensure_ascii=rng.random() < 0.7).encode("utf-8", "surrogatepass")


def _command_corpus(rng: random.Random) -> list[CommandCase]:
    corpus = []
    for _ in range(200):
        name = rng.choice(COMMANDS)
        body = {"cmd": name, "args": _args(rng, name), "console": f"pit-{rng.randint(1, 9)}",
                "ts": rfc3339(NOW + rng.uniform(-1, 1)),
                "nonce": rng.randbytes(rng.randint(8, 64)).hex()}
        corpus.append(CommandCase(name, _signed(rng, body)))
    return corpus


def _mutate_command(rng: random.Random, case: CommandCase,
                    corpus: Sequence[CommandCase]) -> CommandCase:
    draw = rng.random()
    if draw < 0.3:  # spoiled on the wire: the MAC or the JSON breaks
        donors = [other.payload for other in rng.sample(corpus, 2)]
        return replace(case, payload=mutate_json_text(rng, case.payload, donors))
    if draw < 0.4:
        name = rng.choice((*COMMANDS, "decision_reply", "", "shutdown", "\u00e9"))
        return replace(case, name=name)
    body = json.loads(case.payload)
    if draw < 0.5:  # signed at the wrong time
        body["ts"] = rng.choice((rfc3339(NOW + rng.choice((-1, 1)) * rng.choice(
            (MAX_SKEW - 0.5, MAX_SKEW + 0.5, 1e6))), "2026-13-45T99:00:00Z", "yesterday"))
    else:  # content the console should never send, mostly signed (the MAC itself, not always)
        donors = [json.loads(other.payload) for other in rng.sample(corpus, 2)]
        body = mutate_json(rng, body, COMMAND_KEYS, donors)
        if not isinstance(body, dict) or rng.random() < 0.15:
            return replace(case, payload=json.dumps(body).encode())
    return replace(case, payload=_signed(rng, body))


def _run_command(case: CommandCase, rng: random.Random) -> list[str]:
    gate = CommandGate(KEY, MAX_SKEW, clock=lambda: NOW)
    try:
        command = gate.check(case.name, case.payload)
    except CommandRejected as exc:
        if exc.reason not in REASONS:
            raise InvariantBroken(f"rejected for an unknown reason {exc.reason!r}") from None
        return [f"{exc.reason}:{error_shape(exc)}"]
    if not isinstance(command.event, EVENT_OF[case.name]):
        raise InvariantBroken(f"{case.name} became {command.event!r}")
    check_event(command.event)
    try:
        gate.check(case.name, case.payload)
    except CommandRejected as exc:
        if exc.reason != "replayed":
            raise InvariantBroken(f"a command sent again was refused as {exc.reason}") from None
    else:
        raise InvariantBroken("a command was accepted twice")
    return [f"accepted:{case.name}"]


COMMANDS_TARGET = Target[CommandCase](
    name="commands",
    summary="tabled.daemon.commands.CommandGate.check (signed, spoiled and re-signed payloads)",
    corpus=_command_corpus, mutate=_mutate_command, run=_run_command,
)

TARGETS: tuple[Target[Any], ...] = (EVENT_LINES, EVENT_OBJECTS, COMMANDS_TARGET)
