"""A report's period and the floor's shifts: times as people type them, in the floor's zone.

Owns reading ``--from``/``--to`` (and the page's fields) and the shifts' boundaries; pure
(the clock is the caller's).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo


class PeriodError(ValueError):
    """A time or period that cannot be read; the message says what was expected."""


def parse_time(text: str, timezone: str, *, end: bool = False) -> float:
    """``2026-12-04``, ``2026-12-04T07:00`` or ``2026-12-04 07:00[:00]`` (local time in
    ``timezone`` unless it carries an offset: ``…+08:00``, ``…Z``) as a timestamp. A date
    alone is its midnight, or with ``end`` the next one (the day is included)."""
    raw = text.strip()
    if end and len(raw) == 10:
        try:
            day = date.fromisoformat(raw)
        except ValueError:
            pass
        else:
            raw = (day + timedelta(days=1)).isoformat()
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise PeriodError(f"not a date and time (2026-12-04T07:00 or 2026-12-04): "
                          f"{text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(timezone))
    return moment.timestamp()


def parse_period(since: str, until: str, timezone: str) -> tuple[float, float]:
    """The period ``[since, until)`` (``until`` a date alone: that whole day included);
    :class:`PeriodError` naming the field that is wrong."""
    try:
        start = parse_time(since, timezone)
    except PeriodError as exc:
        raise PeriodError(f"from: {exc}") from None
    try:
        end = parse_time(until, timezone, end=True)
    except PeriodError as exc:
        raise PeriodError(f"to: {exc}") from None
    if end <= start:
        raise PeriodError("to: the end must come after the start")
    return start, end


def shift_bounds(starts: Sequence[str], timezone: str, day: date) -> list[tuple[float, float]]:
    """The shifts that start on ``day`` (local), each ``(start, end)``: a shift ends when the
    next one starts (the last at the first one of the next day)."""
    zone = ZoneInfo(timezone)
    times = sorted(time.fromisoformat(s) for s in starts)
    out = []
    for i, t in enumerate(times):
        start = datetime.combine(day, t, zone)
        end = (datetime.combine(day, times[i + 1], zone) if i + 1 < len(times)
               else datetime.combine(day + timedelta(days=1), times[0], zone))
        out.append((start.timestamp(), end.timestamp()))
    return out


def ended_shifts(starts: Sequence[str], timezone: str, now: float,
                 within: float = 86400.0) -> list[tuple[float, float]]:
    """The shifts that ended in the ``within`` seconds before ``now`` (at ``now`` included),
    oldest first."""
    today = datetime.fromtimestamp(now, ZoneInfo(timezone)).date()
    found = []
    for offset in (-2, -1, 0):
        for start, end in shift_bounds(starts, timezone, today + timedelta(days=offset)):
            if now - within < end <= now:
                found.append((start, end))
    return sorted(found)
