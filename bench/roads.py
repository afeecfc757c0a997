"""``python -m bench.roads [--hands N]``: how fast and how small the baccarat roads are.

Measures :class:`tabled.games.baccarat.roads.Roads` in process, on hands drawn at the game's
real frequencies (Banker 45.86 %, Player 44.62 %, Tie 9.52 %; each pair 7.47 %) by a seeded
``random.Random``:

- the page's path: ``add()`` one hand at a time, each returning its ``Update``, all into one
  ``Roads`` (no shoe ever that long: the worst case for growth), with the time per hand over the
  first and the last tenth, which O(1) amortised keeps equal;
- the batch path: ``extend()`` over the same hands;
- ``tabled roads``' path: shoes of 80 hands, each a new ``Roads`` turned into its JSON line;
- memory: the peak traced while the one long ``Roads`` is built;
- whole processes: ``tabled roads`` against ``tabled replay`` over the same recorded stream
  (``tests/oracle/streams.py``, ``--stream-rounds`` rounds): the roads add next to nothing to
  what reading the stream and running the rules core cost.

CPU time (``time.process_time``, or the child's user + system time), best of ``--repeats``; the
machine is shared, wall time is not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from tabled.games.baccarat.roads import Hand, Roads

SEED = 20261129
SHOE_HANDS = 80
#: Probabilities of one hand of an 8-deck shoe (the well-known exact figures, rounded).
WEIGHTS = {"banker": 0.4586, "player": 0.4462, "tie": 0.0952}
PAIR = 0.0747


def make_hands(count: int, seed: int = SEED) -> list[Hand]:
    rng = random.Random(seed)
    winners = rng.choices(list(WEIGHTS), list(WEIGHTS.values()), k=count)
    return [Hand(winner, rng.random() < PAIR, rng.random() < PAIR,  # type: ignore[arg-type]
                 rng.random() < 0.34)
            for winner in winners]


def best_of(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def add_one_by_one(hands: list[Hand]) -> tuple[float, float]:
    """Seconds per hand of ``add`` over the first and the last tenth of ``hands``."""
    roads = Roads()
    add = roads.add
    tenth = max(1, len(hands) // 10)
    clock = time.process_time
    started = clock()
    for hand in hands[:tenth]:
        add(hand)
    first = clock() - started
    for hand in hands[tenth:-tenth]:
        add(hand)
    started = clock()
    for hand in hands[-tenth:]:
        add(hand)
    last = clock() - started
    return first / tenth, last / tenth


def shoes_to_json(hands: list[Hand]) -> int:
    written = 0
    for start in range(0, len(hands), SHOE_HANDS):
        line = json.dumps(Roads(hands[start:start + SHOE_HANDS]).to_dict(),
                          separators=(",", ":"))
        written += len(line) + 1
    return written


def process_cpu(args: list[str], repeats: int) -> float:
    """The best CPU seconds (user + system) of a whole command run, output thrown away."""
    times = []
    for _ in range(repeats):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{args[:4]} failed")
        times.append(usage.ru_utime + usage.ru_stime)
    return min(times)


def commands(rounds: int, repeats: int) -> None:
    from tests.oracle.streams import baccarat_stream, write_jsonl

    with tempfile.TemporaryDirectory() as workdir:
        stream = Path(workdir) / "baccarat.jsonl"
        events = baccarat_stream(random.Random(SEED), rounds, 1, "this")
        write_jsonl(stream, events)
        shoes = sum(event["type"] == "shoe_start" for event in events)
        print(f"  whole processes, {rounds:,} rounds ({len(events):,} events, {shoes:,} shoes):")
        for command in ("roads", "replay"):
            args = [sys.executable, "-m", "tabled.tools.cli", command, str(stream)]
            if command == "replay":
                args[4:4] = ["--game", "baccarat"]
            cpu = process_cpu(args, repeats)
            print(f"    tabled {command:<7} {cpu:6.2f} s  {rounds / cpu:>12,.0f} rounds/s")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.roads", description=__doc__)
    parser.add_argument("--hands", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stream-rounds", type=int, default=50_000,
                        help="rounds of the stream for tabled roads and replay (0: skip)")
    args = parser.parse_args()
    hands = make_hands(args.hands)
    n = len(hands)

    def add_all() -> None:
        roads = Roads()
        for hand in hands:
            roads.add(hand)

    add_s = best_of(args.repeats, add_all)
    first, last = add_one_by_one(hands)
    extend_s = best_of(args.repeats, lambda: Roads().extend(hands))
    shoes_s = best_of(args.repeats, lambda: shoes_to_json(hands))
    tracemalloc.start()
    kept = Roads(hands)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    counts = kept.counts
    print(f"{n:,} hands ({counts.banker:,} banker, {counts.player:,} player, "
          f"{counts.tie:,} tie), CPU time, best of {args.repeats}:")
    print(f"  add(), one Roads:        {add_s:6.2f} s  {n / add_s:>12,.0f} hands/s  "
          f"({first * 1e6:.2f} us/hand over the first tenth, {last * 1e6:.2f} over the last)")
    print(f"  extend(), one Roads:     {extend_s:6.2f} s  {n / extend_s:>12,.0f} hands/s")
    print(f"  shoes of {SHOE_HANDS} + to_dict + JSON: {shoes_s:6.2f} s  "
          f"{n / shoes_s:>12,.0f} hands/s")
    print(f"  memory of one Roads of {n:,} hands: peak {peak / 2**20:.1f} MiB "
          f"({peak / n:.0f} bytes/hand)")
    if args.stream_rounds:
        commands(args.stream_rounds, args.repeats)


if __name__ == "__main__":
    main()
