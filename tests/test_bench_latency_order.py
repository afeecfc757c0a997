"""The latency benchmark's order of blocks (bench/latency.py): every pipeline gets the whole
script once, and the order is balanced: each pipeline runs after each of the others, and after
each idle time, equally often."""

from collections import Counter

import pytest

from bench.latency import BLOCK, ORDERS, PIPELINES, rounds, schedule


@pytest.mark.parametrize("total", [1, 6, 45, 3_100, 10_200, 12_000, 20_401])
def test_every_pipeline_gets_every_message_once_in_blocks_of_at_most_block(total):
    seen = {name: [] for name in PIPELINES}
    for name, first, end in schedule(total):
        assert 0 < end - first <= BLOCK
        seen[name].extend(range(first, end))
    for name in PIPELINES:
        assert seen[name] == list(range(total)), name


@pytest.mark.parametrize("total", [10_200, 12_000])
def test_a_full_run_is_a_whole_number_of_cycles(total):
    count, size = rounds(total)
    assert count % len(ORDERS) == 0
    assert (count - 1) * size < total <= count * size


def test_each_pipeline_follows_each_other_after_each_idle_time_once_a_cycle():
    assert all(sorted(order) == sorted(PIPELINES) for order in ORDERS)
    cycles = 4
    runs = [name for _ in range(cycles) for order in ORDERS for name in order]
    last: dict[str, int] = {}
    seen = {name: Counter() for name in PIPELINES}
    for at, name in enumerate(runs):
        if at >= len(ORDERS) * len(PIPELINES):  # from the second cycle on: a steady state
            seen[name][(runs[at - 1], at - last[name] - 1)] += 1
        last[name] = at
    for name in PIPELINES:
        others = [p for p in PIPELINES if p != name]
        expected = {(before, idle): cycles - 1 for before in others for idle in (1, 2, 3)}
        assert dict(seen[name]) == expected, name

