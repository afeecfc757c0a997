"""The latency benchmark's order of blocks (bench/latency.py): every pipeline gets every measured
message once, cut into cycles that each have processes of their own, and the order is balanced:
each pipeline runs after each of the others, and after each idle time, equally often."""

from collections import Counter

import pytest

from bench.latency import BLOCK, ORDERS, PIPELINES, cycles, rounds, schedule


@pytest.mark.parametrize("total", [1, 6, 40, 45, 3_100, 10_000, 12_000, 20_401])
def test_every_pipeline_gets_every_message_once_in_blocks_of_at_most_block(total):
    plays = cycles(total)
    assert sum(plays) == total
    for measured in plays:
        seen = {name: [] for name in PIPELINES}
        for name, first, end in schedule(measured):
            assert 0 < end - first <= BLOCK
            seen[name].extend(range(first, end))
        for name in PIPELINES:
            assert seen[name] == list(range(measured)), name


@pytest.mark.parametrize("total", [10_000, 12_000])
def test_a_full_run_is_a_whole_number_of_cycles_each_of_new_processes(total):
    count, size = rounds(total)
    assert count % len(ORDERS) == 0
    assert (count - 1) * size < total <= count * size
    plays = cycles(total)
    assert len(plays) == count // len(ORDERS) > 1
    assert all(measured == size * len(ORDERS) for measured in plays[:-1])


def test_each_pipeline_follows_each_other_after_each_idle_time_once_a_cycle():
    assert all(sorted(order) == sorted(PIPELINES) for order in ORDERS)
    # a cycle's processes are warmed up in its last order: round one follows what a round
    # follows in the steady state, so every cycle, the first included, is balanced
    runs = [*ORDERS[-1], *(name for order in ORDERS for name in order)]
    last: dict[str, int] = {}
    seen = {name: Counter() for name in PIPELINES}
    for at, name in enumerate(runs):
        if name in last and at >= len(PIPELINES):
            seen[name][(runs[at - 1], at - last[name] - 1)] += 1
        last[name] = at
    for name in PIPELINES:
        others = [p for p in PIPELINES if p != name]
        expected = {(before, idle): 1 for before in others for idle in (1, 2, 3)}
        assert dict(seen[name]) == expected, name
