"""rfc3339_now: the one timestamp form (RFC 3339, UTC, milliseconds truncated, ``Z``), the same
text ``datetime.now(UTC).isoformat(timespec="milliseconds")`` gives for every instant, across
second boundaries (its text up to the seconds is remembered from one call to the next)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabled.contract import timeutil
from tabled.contract.timeutil import rfc3339_now


def by_datetime(ns: int) -> str:
    seconds, nanos = divmod(ns, 1_000_000_000)
    instant = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(st.lists(st.integers(min_value=0, max_value=4_102_444_800 * 10**9), min_size=1,
                max_size=20))
def test_every_instant_reads_as_datetime_writes_it(instants: list[int]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        for ns in sorted(instants) + instants:  # forwards, and back across seconds
            patch.setattr(timeutil.time, "time_ns", lambda ns=ns: ns)
            assert rfc3339_now() == by_datetime(ns)


def test_the_milliseconds_are_truncated_at_a_second_s_edges() -> None:
    second = 1_764_604_800 * 10**9  # 2025-12-01T16:00:00Z
    with pytest.MonkeyPatch.context() as patch:
        for ns, text in ((second - 1, "2025-12-01T15:59:59.999Z"),
                         (second, "2025-12-01T16:00:00.000Z"),
                         (second + 999_999, "2025-12-01T16:00:00.000Z"),
                         (second + 1_000_000, "2025-12-01T16:00:00.001Z")):
            patch.setattr(timeutil.time, "time_ns", lambda ns=ns: ns)
            assert rfc3339_now() == text


def test_now_is_now() -> None:
    before = by_datetime(time.time_ns())
    now = rfc3339_now()
    after = by_datetime(time.time_ns())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now)
    assert before <= now <= after
