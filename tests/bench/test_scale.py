"""The pit pair's floor benchmark (bench/scale.py) counts right: a small floor at ten times a
real pace through the real pair (two ``tabled pit`` processes, one share group, one PostgreSQL
record, Chromium on pit A's floor page), one outcome kept from the broker and another published
twice. The accounting must show exactly that one lost, no duplicate, and every other outcome of
the window on pit A's page, whichever pit recorded it. About 30 s alone.

Not timed: how fast anything was is the benchmark's business, not this test's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench import pg as pgserver
from bench import scale
from bench.pit import browser_available
from bench.report import scale_section

pytestmark = pytest.mark.skipif(not (pgserver.available() and browser_available()),
                                reason="PostgreSQL and Chromium come with make system-deps")

TABLES = 10
#: the third outcome of the floor is withheld, the sixth published twice
WITHHOLD, REPEAT = 3, 6


def test_the_accounting_finds_the_withheld_outcome_and_no_duplicate(tmp_path: Path) -> None:
    results = asyncio.run(scale.run(tmp_path, [TABLES], 8.0, lambda _: None, speedup=10.0,
                                    withhold=WITHHOLD, repeat=REPEAT))
    (x,) = results["runs"]
    assert x["pit_exit"] == [0, 0] and x["handler_errors"] == 0
    rec = x["record"]
    assert rec["published"] > 100 and rec["by_topic"]["outcome"] > REPEAT
    assert rec["lost"] == 1 and len(x["withheld"]) == 1
    assert rec["duplicated"] == rec["unexpected"] == rec["malformed"] == 0
    # every outcome published in the window reached pit A's page, its partner's share too
    dom = x["dom"]
    assert dom["count"] == dom["published"] > 0 and dom["negative"] == 0
    assert x["dom_a"]["count"] + x["dom_b"]["count"] == dom["count"]
    assert x["dom_a"]["count"] > 0 and x["dom_b"]["count"] > 0
    text = "\n".join(scale_section(results))
    assert "1 / 0 of" in text and text.startswith(scale.BEGIN) and scale.END in text
