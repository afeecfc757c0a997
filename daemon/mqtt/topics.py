"""The topic tree of one table and the broker's address: names only, no connection."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class Topics:
    """The topic tree of one table: ``<prefix>/<site>/<table>/…`` (docs/mqtt.md)."""

    def __init__(self, prefix: str, site: str, table: str) -> None:
        self.base = f"{prefix}/{site}/{table}"
        self.status = f"{self.base}/status"
        self.event = f"{self.base}/event"
        self.outcome = f"{self.base}/outcome"
        self.fault = f"{self.base}/fault"
        self.metrics = f"{self.base}/metrics"
        self.commands = f"{self.base}/cmd/+"
        #: The pit's requests for numbers it lacks; each answered on ``…/fetch/reply/<pit>``.
        self.fetch = f"{self.base}/fetch"

    def durable(self, topic: str) -> str:
        """The topic of a journaled message's stream (``event``, ``outcome``, ``fault``)."""
        return f"{self.base}/{topic}"

    def device_status(self, device_id: str) -> str:
        return f"{self.base}/device/{device_id}/status"

    def reply(self, command: str) -> str:
        return f"{self.base}/cmd/{command}/reply"

    def command_name(self, topic: str) -> str | None:
        """The command a ``…/cmd/<name>`` topic names, or None (a reply, another topic)."""
        prefix = f"{self.base}/cmd/"
        rest = topic[len(prefix):] if topic.startswith(prefix) else ""
        return rest if rest and "/" not in rest else None


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    tls: bool

    @classmethod
    def parse(cls, url: str) -> BrokerAddress:
        parts = urlsplit(url)
        tls = parts.scheme == "mqtts"
        return cls(parts.hostname or "127.0.0.1", parts.port or (8883 if tls else 1883), tls)

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"


def dumps(body: dict[str, Any]) -> str:
    """A payload: compact JSON, UTF-8 text as it is."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)
