"""Structured logging for the daemon (structlog): JSON lines under systemd, console on a tty.

Owns the logging configuration and nothing else. Every line carries the table (bound once at
start with contextvars) and, where relevant, the device. Log lines never carry a card of a round
in progress: callers log events through :func:`event_fields`, which keeps the type, device and
sequence number and drops every card.

A line is one line. No traceback ever shows the frames' local variables (a local may hold a
face-down card, a password, a key); an exception logged at info or warning (a broker that went
away, a device that cannot be opened: conditions, not bugs) is its type and message in ``error``,
without a traceback, whoever logs it (paho and aiomqtt included). Tracebacks are for bugs
(``error`` and above) and for ``debug``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Hashable
from typing import Any, Literal

import structlog
import structlog.tracebacks

from tabled.contract.events import Event

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}
# Under systemd a "<N>" prefix sets the journal priority of a stdout line (sd-daemon(3)).
_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2, "exception": 3}


def _exception_as_text(exc_info: Any) -> str | None:
    """``"Type: message"`` of an ``exc_info`` as loggers pass it (True, an exception, a tuple)."""
    if exc_info is True:
        exc_info = sys.exc_info()
    if isinstance(exc_info, tuple):
        exc_info = exc_info[1]
    if not isinstance(exc_info, BaseException):
        return None
    text = str(exc_info)
    return f"{type(exc_info).__name__}: {text}" if text else type(exc_info).__name__


def _conditions_in_one_line(_: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """An exception logged below ``error`` (and above ``debug``) is a condition, not a bug: its
    type and message go in ``error`` (if the line has none), and no traceback."""
    if method in ("info", "warning") and event_dict.get("exc_info"):
        text = _exception_as_text(event_dict.pop("exc_info"))
        if text is not None:
            event_dict.setdefault("error", text)
    return event_dict


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
        _conditions_in_one_line,
    ]
    renderer: Any
    if fmt == "json":
        # Tracebacks without the frames' local variables: a local may hold a face-down card.
        shared += [structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False)), _syslog_prefix]
        renderer = _PrefixedJSON()
    else:
        # Not the default (rich's, when installed), which prints every frame's locals.
        renderer = structlog.dev.ConsoleRenderer(
            colors=stream.isatty(), exception_formatter=structlog.dev.plain_traceback)
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


class Repeats:
    """When to log a condition that may recur at every retry (a device that cannot be opened, a
    broker that cannot be reached): at once when it changes, then the same again at most every
    ``every`` seconds, saying how many times it recurred since it was last logged."""

    def __init__(self, every: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self._clock = clock
        self._last: Hashable = None
        self._logged_at = 0.0
        self._unlogged = 0

    def seen(self, condition: Hashable) -> int | None:
        """``condition`` holds (again): None if it is not to be logged now; otherwise how many
        times it recurred without being logged (0: it is new)."""
        now = self._clock()
        if condition != self._last:
            self._last, self._logged_at, self._unlogged = condition, now, 0
            return 0
        self._unlogged += 1
        if now - self._logged_at < self.every:
            return None
        count, self._unlogged, self._logged_at = self._unlogged, 0, now
        return count

    def clear(self) -> None:
        """The condition is over: the next one is news, even if it is the same again."""
        self._last = None
