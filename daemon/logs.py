"""Structured logging for the daemon (structlog): JSON lines under systemd, console on a tty.

Owns the logging configuration and nothing else. Every line carries the table (bound once at
start with contextvars) and, where relevant, the device. Log lines never carry a card of a round
in progress: callers log events through :func:`event_fields`, which keeps the type, device and
sequence number and drops every card.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal

import structlog
import structlog.tracebacks

from tabled.contract.events import Event

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}
# Under systemd a "<N>" prefix sets the journal priority of a stdout line (sd-daemon(3)).
_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2, "exception": 3}


def _syslog_prefix(_: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    event_dict["_priority"] = _PRIORITY.get(method, 6)
    return event_dict


class _PrefixedJSON:
    """JSONRenderer with the sd-daemon priority prefix in front of the line."""

    def __init__(self) -> None:
        self._json = structlog.processors.JSONRenderer(sort_keys=False)

    def __call__(self, logger: Any, method: str, event_dict: dict[str, Any]) -> str:
        priority = event_dict.pop("_priority", 6)
        return f"<{priority}>" + str(self._json(logger, method, event_dict))


def configure(level: str = "info", fmt: Literal["auto", "json", "console"] = "auto",
              *, stream: Any = None, static: dict[str, Any] | None = None) -> None:
    """Configure structlog and route the standard library's logging (paho, aiomqtt) through it.

    ``static`` fields (the table) go on every line of the process, whatever thread or context
    logs it: paho's callbacks run in contexts that asyncio copied from an executor thread, where
    context variables bound at start are not set.
    """
    stream = stream or sys.stdout
    if fmt == "auto":
        fmt = "console" if stream.isatty() else "json"
    fixed = dict(static or {})

    def add_static(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        for key, value in fixed.items():
            event_dict.setdefault(key, value)
        return event_dict

    shared: list[Any] = [
        add_static,
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any
    if fmt == "json":
        # Tracebacks without the frames' local variables: a local may hold a face-down card.
        shared += [structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False)), _syslog_prefix]
        renderer = _PrefixedJSON()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty())
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared, processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS[level])
    # paho logs every packet at DEBUG; keep it at WARNING unless asked for debug
    logging.getLogger("mqtt").setLevel(logging.DEBUG if level == "debug" else logging.WARNING)


def event_fields(event: Event) -> dict[str, Any]:
    """What may be logged of an event: never a card (it may be face down)."""
    fields: dict[str, Any] = {"type": event.TYPE}
    if event.meta.device is not None:
        fields["device"] = event.meta.device
    if event.meta.seq is not None:
        fields["device_seq"] = event.meta.seq
    seat = getattr(event, "seat", None)
    if seat is not None:
        fields["seat"] = seat
    for name in ("code", "reason", "decks", "play"):
        value = getattr(event, name, None)
        if value is not None:
            fields[name] = value
    return fields
