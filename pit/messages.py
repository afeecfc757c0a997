"""What arrives from the tables' topic trees, parsed and checked: topic -> (site, table, stream),
payload -> a JSON object with a valid ``table_seq`` and the fields the pit relies on.

Sans-IO and pure: bytes and a topic in, a :class:`Message` out, or :class:`Malformed` naming
the reason. Nothing here decides what to record or alert. Events are checked with the contract's
own parser (``tabled.contract.events``), outcomes with its outcome decoder
(``tabled.contract.outcome.decode_outcome``: every field of the record typed), so the pit and the
daemon cannot disagree about what a well-formed message is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tabled.contract.events import Event, EventError, parse_event
from tabled.contract.outcome import GAMES, OutcomeError, OutcomeRecord, decode_outcome
from tabled.pit.errors import PitError

#: Streams whose ``table_seq`` the daemon makes contiguous and durable (docs/mqtt.md): gaps in
#: them are real losses.
DURABLE = ("event", "outcome", "fault")
#: Table states of ``…/status``.
TABLE_STATES = ("online", "degraded", "offline")
#: Device states of ``…/device/<id>/status`` the daemon publishes today; others are kept as
#: they come (a newer daemon may add some) and shown as they are.
DEVICE_STATES = ("starting", "connecting", "connected", "waiting", "unavailable", "lost",
                 "stopped", "wrong_device")
#: The table id that the pit's own topics use (``<prefix>/<site>/pit/alert``): never a table.
RESERVED_TABLE = "pit"
#: Larger payloads are malformed (an outcome is a few kilobytes).
MAX_PAYLOAD = 256 * 1024


class Malformed(PitError, ValueError):
    """A message the pit cannot use; ``reason`` says why (for the log and the record)."""


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
        raise Malformed(f"not under {prefix}/")
    parts = topic[len(head):].split("/")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        raise Malformed("not <site>/<table>/<topic>")
    site, table, rest = parts[0], parts[1], parts[2:]
    if table == RESERVED_TABLE:
        raise Malformed("the pit's own topic")
    if len(rest) == 1 and rest[0] in ("status", "event", "outcome", "fault", "metrics"):
        return Topic(site, table, rest[0])
    if len(rest) == 3 and rest[0] == "device" and rest[1] and rest[2] == "status":
        return Topic(site, table, f"device/{rest[1]}/status")
    raise Malformed(f"not a table topic: {'/'.join(rest)}")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_message(prefix: str, topic: str, payload: bytes, received_at: float,
                  retained: bool = False) -> Message:
    """Check one message; raise :class:`Malformed` with a reason a person can act on."""
    where = parse_topic(prefix, topic)
    if len(payload) > MAX_PAYLOAD:
        raise Malformed(f"payload of {len(payload)} bytes (more than {MAX_PAYLOAD})")
    try:
        text = payload.decode("utf-8")
        body = json.loads(text)
    except UnicodeDecodeError:
        raise Malformed("payload is not UTF-8") from None
    except ValueError as exc:
        raise Malformed(f"payload is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Malformed("payload is not a JSON object")
    seq = body.get("table_seq")
    channel = where.channel
    if seq is None:
        # docs/mqtt.md: the journal failure is the only message without a number
        if not (channel == "fault" and body.get("durable") is False):
            raise Malformed("no table_seq")
    elif not _int(seq) or seq < 0:
        raise Malformed(f"table_seq {seq!r} is not a non-negative integer")
    typed = _check_body(channel, body)
    if isinstance(typed, Event):
        return Message(where, seq, body, text, received_at, retained, typed)
    return Message(where, seq, body, text, received_at, retained, outcome=typed)


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
            raise Malformed(f"fault type {kind!r}")
        if kind in ("fault", "notice") and not isinstance(body.get("code"), str):
            raise Malformed(f"a {kind} needs a code")
    elif channel == "status":
        if body.get("state") not in TABLE_STATES:
            raise Malformed(f"table state {body.get('state')!r}")
        if body["state"] == "online" and body.get("game") not in GAMES:
            raise Malformed(f"a birth record names an unknown game {body.get('game')!r}")
    elif channel == "device" and not isinstance(body.get("state"), str):
        raise Malformed("a device status needs a state")
    return None
