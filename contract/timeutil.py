"""Wall-clock timestamps in the one form tabled uses (RFC 3339, UTC, milliseconds, ``Z``)."""

from __future__ import annotations

import time

#: The last second formatted, and its text up to the seconds: a timestamp is taken for every
#: event and journal write, and ``datetime.now().isoformat()`` cost 3 % of the daemon's CPU on
#: a shoe event's way to the broker (py-spy).
_second: tuple[int, str] = (-1, "")


def rfc3339_now() -> str:
    """The current UTC time, e.g. ``2026-11-29T15:43:19.123Z`` (the milliseconds truncated, as
    ``datetime.now(UTC).isoformat(timespec="milliseconds")`` gives them)."""
    global _second
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    second, text = _second
    if seconds != second:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second = (seconds, text)
    return f"{text}.{nanos // 1_000_000:03d}Z"
