"""What arrives from the tables' topic trees, parsed and checked: topic -> (site, table, stream),
payload -> a JSON object with a valid ``table_seq`` and the fields the pit relies on.

Sans-IO and pure: bytes and a topic in, a :class:`Message` out, or :class:`Malformed` naming
the reason (and a short ``code`` for the metrics). Nothing here decides what to record or alert.
Ids, numbers and nesting are judged by the contract's ranges (``tabled.contract.limits``), events
with the contract's own parser (``tabled.contract.events``), outcomes with its outcome decoder
(``tabled.contract.outcome.decode_outcome``: every field of the record typed), so the pit and the
daemon cannot disagree about what a well-formed message is.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Final

from tabled.contract.devices import DeviceState
from tabled.contract.events import Event, EventError, parse_event
from tabled.contract.limits import MAX_DEPTH, MAX_SEQ, RESERVED_TABLE, valid_id, valid_seq
from tabled.contract.outcome import OutcomeError, OutcomeRecord
from tabled.games.registry import decode_outcome, game_names
from tabled.pit.errors import PitError

#: Streams whose ``table_seq`` the daemon makes contiguous and durable (docs/mqtt.md): gaps in
#: them are real losses.
DURABLE = ("event", "outcome", "fault")
#: Table states of ``…/status``.
TABLE_STATES = ("online", "degraded", "offline")
#: Larger payloads are malformed (an outcome is a few kilobytes).
MAX_PAYLOAD = 256 * 1024

#: Why a message is malformed, in a word (the ``reason`` label of ``pit_malformed_total``):
#: not a table's topic; a site, table or device id outside the contract's alphabet; too large;
#: not UTF-8; not JSON; nested deeper than ``MAX_DEPTH``; a number outside the contract's
#: range; text no store keeps (U+0000, a lone surrogate); a field of the wrong type; no
#: ``table_seq``; anything else the contract refuses; refused by the store; the check itself
#: failed (a bug, named in the reason).
MALFORMED_CODES: Final = ("bad_topic", "bad_id", "too_large", "not_utf8", "not_json",
                          "too_deep", "out_of_range", "bad_text", "wrong_type", "no_seq",
                          "invalid", "store_refused", "unchecked")


def device_state(state: str) -> DeviceState | None:
    """A device status's ``state`` as the contract's :class:`DeviceState`, or None for one this
    pit does not know (a newer daemon may add some): such a status is kept as it comes and shown
    as it is, and the floor counts and logs it (``pit_device_states_unknown``)."""
    try:
        return DeviceState(state)
    except ValueError:
        return None


class Malformed(PitError, ValueError):
    """A message the pit cannot use; ``reason`` says why (for the log and the record), ``code``
    in a word (:data:`MALFORMED_CODES`)."""

    def __init__(self, reason: str, code: str = "invalid") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True, slots=True)
class Topic:
    site: str
    table: str
    #: ``status``, ``event``, ``outcome``, ``fault``, ``metrics`` or ``device/<id>/status``
    stream: str

    @property
    def device(self) -> str | None:
        if self.stream.startswith("device/"):
            return self.stream.split("/")[1]
        return None

    @property
    def channel(self) -> str:
        """The stream without the device id: what metrics and the rules switch on."""
        return "device" if self.device is not None else self.stream


@dataclass(frozen=True, slots=True)
class Message:
    """One well-formed message from one table."""

    topic: Topic
    #: the table's per-topic sequence number; ``None`` only for the daemon's unnumbered journal
    #: failure on ``…/fault``
    table_seq: int | None
    payload: dict[str, Any]
    #: the payload exactly as received (UTF-8 JSON), what the record keeps
    text: str
    received_at: float
    retained: bool = False
    #: an event's typed form (the contract's parser checked it): the integrity monitors use
    #: it, so that an event is parsed once
    event: Event | None = None
    #: an outcome's typed form (the contract's decoder checked it): what the floor, the alerts
    #: and the monitors read, never the payload's fields
    outcome: OutcomeRecord | None = None

    @property
    def site(self) -> str:
        return self.topic.site

    @property
    def table(self) -> str:
        return self.topic.table

    @property
    def stream(self) -> str:
        return self.topic.stream

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def kind(self) -> str:
        """A short word for the record's index: the outcome's status, the event's type, the
        fault's code, the table's or device's state."""
        p = self.payload
        channel = self.topic.channel
        if channel == "outcome":
            return str(p["status"])
        if channel == "event":
            return str(p["type"])
        if channel == "fault":
            return str(p.get("code") or p.get("type"))
        if channel in ("status", "device"):
            return str(p["state"])
        return channel

    @property
    def round(self) -> int | None:
        return None if self.outcome is None else self.outcome.round


def parse_topic(prefix: str, topic: str) -> Topic:
    """``<prefix>/<site>/<table>/<stream>`` -> :class:`Topic`; raise Malformed otherwise."""
    head = prefix + "/"
    if not topic.startswith(head):
        raise Malformed(f"not under {prefix}/", "bad_topic")
    parts = topic[len(head):].split("/")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        raise Malformed("not <site>/<table>/<topic>", "bad_topic")
    site, table, rest = parts[0], parts[1], parts[2:]
    if table == RESERVED_TABLE:
        raise Malformed("the pit's own topic", "bad_topic")
    for what, value in (("site", site), ("table", table)):
        if not valid_id(value):
            raise Malformed(f"{what} id {value[:80]!r} is not an id (docs/mqtt.md)", "bad_id")
    if len(rest) == 1 and rest[0] in ("status", "event", "outcome", "fault", "metrics"):
        return Topic(site, table, rest[0])
    if len(rest) == 3 and rest[0] == "device" and rest[1] and rest[2] == "status":
        if not valid_id(rest[1]):
            raise Malformed(f"device id {rest[1][:80]!r} is not an id (docs/mqtt.md)",
                            "bad_id")
        return Topic(site, table, f"device/{rest[1]}/status")
    raise Malformed(f"not a table topic: {'/'.join(rest)[:200]}", "bad_topic")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _bounded_int(digits: str) -> int:
    # before int(): ten thousand digits cost a parser time (and Python refuses 4,300)
    if len(digits) > 17 or not -MAX_SEQ <= (value := int(digits)) <= MAX_SEQ:
        raise Malformed(f"integer {digits[:40]} beyond ±{MAX_SEQ}", "out_of_range")
    return value


def _finite_float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise Malformed(f"number {digits[:40]} is not finite", "out_of_range")
    return value


#: JSON as the contract has it: no NaN or Infinity, integers within ±MAX_SEQ, floats finite.
_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant, parse_int=_bounded_int,
                                   parse_float=_finite_float)


def _judge_values(body: dict[str, Any], text: str) -> None:
    """Raise :class:`Malformed` for nesting deeper than ``MAX_DEPTH`` or text no store keeps
    (U+0000, a lone surrogate) anywhere in ``body`` (decoded from ``text``). A loop, not
    recursion; and only when ``text`` could hold either (JSON spells both with ``\\u``)."""
    if text.count("{") + text.count("[") <= MAX_DEPTH and "\\u" not in text:
        return
    pending: list[tuple[Any, int]] = [(body, 1)]
    while pending:
        value, depth = pending.pop()
        kind = type(value)
        if kind is dict or kind is list:
            if depth > MAX_DEPTH:
                raise Malformed(f"nested deeper than {MAX_DEPTH}", "too_deep")
            if kind is dict:
                for key, item in value.items():
                    _judge_text(key)
                    pending.append((item, depth + 1))
            else:
                pending.extend((item, depth + 1) for item in value)
        elif kind is str:
            _judge_text(value)


def _judge_text(text: str) -> None:
    if "\x00" in text:
        raise Malformed("text holds U+0000", "bad_text")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise Malformed(f"text {text[:40]!r} is not valid Unicode", "bad_text") from None


def parse_message(prefix: str, topic: str, payload: bytes, received_at: float,
                  retained: bool = False) -> Message:
    """Check one message; raise :class:`Malformed` with a reason a person can act on."""
    where = parse_topic(prefix, topic)
    if len(payload) > MAX_PAYLOAD:
        raise Malformed(f"payload of {len(payload)} bytes (more than {MAX_PAYLOAD})",
                        "too_large")
    try:
        text = payload.decode("utf-8")
        body = _DECODER.decode(text)
    except Malformed:
        raise
    except UnicodeDecodeError:
        raise Malformed("payload is not UTF-8", "not_utf8") from None
    except RecursionError:  # the parser's own stack: far deeper than MAX_DEPTH
        raise Malformed(f"nested deeper than {MAX_DEPTH}", "too_deep") from None
    except ValueError as exc:
        raise Malformed(f"payload is not JSON: {exc}", "not_json") from None
    if not isinstance(body, dict):
        raise Malformed("payload is not a JSON object", "wrong_type")
    seq = body.get("table_seq")
    channel = where.channel
    if seq is None:
        # docs/mqtt.md: the journal failure is the only message without a number
        if not (channel == "fault" and body.get("durable") is False):
            raise Malformed("no table_seq", "no_seq")
    elif not _int(seq):
        raise Malformed(f"table_seq {seq!r} is not an integer", "wrong_type")
    elif not valid_seq(seq):
        raise Malformed(f"table_seq {seq} is outside 0 … {MAX_SEQ}", "out_of_range")
    # the contract's other numbers (an outcome's, an event's, a fault's): above the range here;
    # below it, an event's and an outcome's in the words of the contract's own parsers
    own_parser = channel in ("event", "outcome")
    for key in ("round", "seq"):
        number = body.get(key)
        if not isinstance(number, int) or isinstance(number, bool) or valid_seq(number):
            continue
        if not (own_parser and number < 0):
            raise Malformed(f"{key} {number} is outside 0 … {MAX_SEQ}", "out_of_range")
    _judge_values(body, text)
    typed = _check_body(channel, body)
    if isinstance(typed, Event):
        return Message(where, seq, body, text, received_at, retained, typed)
    return Message(where, seq, body, text, received_at, retained, outcome=typed)


#: Fields of a fault, a table status and a device status that are text when present.
_TEXT_FIELDS: Final = {
    "fault": ("code", "detail", "device", "source", "family", "article", "message", "command",
              "reason"),
    "status": ("reason", "version", "site", "table", "started_at"),
    "device": ("state", "device", "family", "since", "url", "error", "reason", "detail"),
}


def _check_types(channel: str, body: dict[str, Any]) -> None:
    """Raise :class:`Malformed` (``wrong_type``) for a field the pit shows of the wrong type."""
    for key in _TEXT_FIELDS.get(channel, ()):
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            raise Malformed(f"{channel} {key} {_short(value)} is not text", "wrong_type")
    if channel == "status":
        devices = body.get("devices")
        if devices is not None and not (isinstance(devices, list) and all(
                isinstance(d, dict) and isinstance(d.get("id"), str)
                and isinstance(d.get("family"), str) for d in devices)):
            raise Malformed("a birth record's devices are not a list of {id, family}",
                            "wrong_type")
        if body.get("options") is not None and not isinstance(body["options"], dict):
            raise Malformed("a birth record's options are not an object", "wrong_type")
    elif channel == "device" and body.get("info") is not None \
            and not isinstance(body["info"], dict):
        raise Malformed("a device status's info is not an object", "wrong_type")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_body(channel: str, body: dict[str, Any]) -> Event | OutcomeRecord | None:
    """Raise :class:`Malformed` if the body is not what its channel carries; an event's or an
    outcome's typed form."""
    if channel == "outcome":
        # contract v1 and v2 alike (a table not yet upgraded): the fields are the same
        try:
            return decode_outcome(body)
        except OutcomeError as exc:
            raise Malformed(f"outcome: {exc}") from None
    elif channel == "event":
        try:
            return parse_event(body)
        except EventError as exc:
            raise Malformed(f"event: {exc}") from None
    elif channel == "fault":
        kind = body.get("type")
        if kind not in ("fault", "notice", "command_rejected"):
            raise Malformed(f"fault type {_short(kind)}")
        if kind in ("fault", "notice") and not isinstance(body.get("code"), str):
            raise Malformed(f"a {kind} needs a code", "wrong_type")
        _check_types(channel, body)
    elif channel == "status":
        if body.get("state") not in TABLE_STATES:
            raise Malformed(f"table state {_short(body.get('state'))}")
        if body["state"] == "online" and body.get("game") not in game_names():
            raise Malformed(f"a birth record names an unknown game {_short(body.get('game'))}")
        _check_types(channel, body)
    elif channel == "device":
        if not isinstance(body.get("state"), str):
            raise Malformed("a device status needs a state", "wrong_type")
        _check_types(channel, body)
    return None
