"""Wall-clock timestamps in the one form tabled uses (RFC 3339, UTC, milliseconds, ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339_now() -> str:
    """The current UTC time, e.g. ``2026-11-29T15:43:19.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
