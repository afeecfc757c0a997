"""``python -m bench [--quick]``: run every benchmark of issues 6 and 14 and write
docs/performance.md.

The full run takes about an hour and a half on the 2-core reference machine (the two simulated
pit days, one per store, about 25 minutes each); ``--quick`` runs every benchmark in its smallest
form in a few minutes (what CI's smoke test runs: it checks that the harness works, never how fast
anything is). ``--only`` picks benchmarks; ``--out`` writes the
report elsewhere; the raw figures go to ``bench/results.json`` (or next to ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import floor, footprint, latency, pit, replay, smallpc, throughput
from bench.measure import load_average, machine
from bench.report import render
from tabled.daemon.broker import Mosquitto

ROOT = Path(__file__).resolve().parent.parent
#: The pit's sections (issue 14, item 3; bench/pit.py): the floor at ten times a real pace with
#: the browser on its page and the simplest recorder beside it, a simulated day, the integrity
#: monitors; each section for both stores.
PIT_SECTIONS = {"pit": ("floor", "recorder"), "pit_day": ("day",), "pit_monitors": ("monitors",)}
BENCHMARKS = ("latency", "throughput", "footprint", "replay", "floor", *PIT_SECTIONS,
              "smallpc")
#: The benchmarks whose figures are read against the machine's disk and broker (the latency
#: reasons quote the disk's commit cost): only a run of one of them measures the machine again.
USES_DISK = frozenset({"latency", "throughput", "footprint", "floor"})
REPORT = ROOT / "docs" / "performance.md"


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big each benchmark runs."""

    latency: latency.Plan
    throughput_events: int
    footprint_starts: int
    footprint_idle_s: float
    footprint_pace_s: float
    replay_rounds: dict[str, int]
    replay_repeats: int
    floor_tables: list[int]
    floor_seconds: float
    pit: pit.Plan
    smallpc: smallpc.Plan


FULL = Sizes(
    latency=latency.Plan(count=10_000, warmup=200, interval=0.01),
    throughput_events=20_000,
    footprint_starts=5, footprint_idle_s=60.0, footprint_pace_s=120.0,
    replay_rounds={"baccarat": 200_000, "craps": 200_000, "qpoker": 50_000}, replay_repeats=3,
    floor_tables=[50, 100, 200], floor_seconds=60.0,
    pit=pit.FULL,
    smallpc=smallpc.FULL,
)
QUICK = Sizes(
    latency=latency.Plan(count=40, warmup=5, interval=0.005),
    throughput_events=200,
    footprint_starts=1, footprint_idle_s=1.0, footprint_pace_s=1.0,
    replay_rounds={"baccarat": 300, "craps": 300, "qpoker": 100}, replay_repeats=1,
    floor_tables=[4], floor_seconds=2.0,
    pit=pit.QUICK,
    smallpc=smallpc.QUICK,
)


async def run(sizes: Sizes, only: list[str], workdir: Path, say: Any) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(workdir)}
    with Mosquitto(workdir=workdir / "broker") as broker:
        if "latency" in only:
            results["latency"] = await latency.run(broker, workdir, sizes.latency, say)
        if "throughput" in only:
            results["throughput"] = await throughput.run(broker, workdir,
                                                         sizes.throughput_events, say)
        if "footprint" in only:
            foot = workdir / "footprint"
            foot.mkdir()
            pace = min(footprint.TABLE_CARD_EVERY, sizes.footprint_pace_s)
            results["footprint"] = await footprint.run(
                broker, foot, starts=sizes.footprint_starts, idle_s=sizes.footprint_idle_s,
                pace_s=sizes.footprint_pace_s, card_every=pace, say=say)
    if "replay" in only:
        replay_dir = workdir / "replay"
        replay_dir.mkdir()
        results["replay"] = await asyncio.to_thread(replay.run, replay_dir, sizes.replay_rounds,
                                                    sizes.replay_repeats, say)
    if "floor" in only:  # last, with a broker of its own: its CPU is the floor's alone
        results["floor"] = await floor.run(workdir, sizes.floor_tables, sizes.floor_seconds, say)
    for name, parts in PIT_SECTIONS.items():  # each with its own brokers and pit processes
        if name in only:
            section = workdir / name
            section.mkdir()
            results[name] = await pit.run(section, sizes.pit, say, parts)
    if "smallpc" in only:  # the table PC is small (issue 30): the daemon in a cgroup
        section = workdir / "smallpc"
        section.mkdir()
        results["smallpc"] = await smallpc.run(section, sizes.smallpc, say)
    return results


def _sample_load(samples: list[float], stop: threading.Event) -> None:
    """The machine's load average every 10 s while the run lasts: other work on the machine
    is part of every figure, and the report says how much there was."""
    while True:
        samples.append(load_average())
        if stop.wait(10.0):
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="every benchmark, smallest form")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS))
    parser.add_argument("--out", type=Path, default=REPORT)
    parser.add_argument("--merge", action="store_true",
                        help="keep the other benchmarks' figures from the last run's JSON and "
                             "replace only those run now (with --only)")
    parser.add_argument("--workdir", type=Path,
                        help="where journals and logs go (default: a new temporary directory "
                             "on the same disk as /tmp, removed afterwards)")
    parser.add_argument("--pit-day-hours", type=float,
                        help="hours of table time in the pit's simulated day (default: 24, "
                             "--quick: a quarter of an hour)")
    parser.add_argument("--pit-stores", nargs="+", choices=("sqlite", "postgres"),
                        help="the stores the pit's sections measure (default: both); with "
                             "--merge the other store's earlier figures are kept")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.pit_stores:
        sizes = replace(sizes, pit=replace(sizes.pit, stores=tuple(args.pit_stores)))
    if args.pit_day_hours is not None:
        sizes = replace(sizes, pit=replace(sizes.pit, day_hours=args.pit_day_hours))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabled-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)

    def say(text: str) -> None:
        print(text, flush=True)

    started = time.monotonic()
    loads: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_load, args=(loads, stop), daemon=True)
    sampler.start()
    try:
        results = asyncio.run(run(sizes, args.only, workdir, say))
    finally:
        stop.set()
        sampler.join()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    results["run"] = {"quick": args.quick, "only": args.only, "merged": args.merge,
                      "seconds": time.monotonic() - started,
                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "load_mean": sum(loads) / len(loads), "load_max": max(loads)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figures = ROOT / "bench" / "results.json" if args.out == REPORT else args.out.with_suffix(
        ".json")
    # when each section was measured: with --merge the sections come from several runs
    results["measured"] = {name: results["run"]["date"] for name in args.only}
    if args.merge and figures.exists():
        earlier = json.loads(figures.read_text())
        before = earlier.get("measured") or {name: earlier["run"]["date"] for name in BENCHMARKS
                                             if name in earlier}
        for name in PIT_SECTIONS:  # a pit section run for some stores keeps the others'
            if name in results and name in earlier and "stores" in earlier[name]:
                results[name]["stores"] = {**earlier[name]["stores"], **results[name]["stores"]}
        results = {**earlier, **results, "earlier_run": earlier.get("earlier_run", earlier["run"]),
                   "measured": {**before, **results["measured"]}}
        if "machine" in earlier and not set(args.only) & USES_DISK:
            # the disk's commit cost is what the earlier sections' figures are read against
            # (the latency reasons quote it): a run that used neither disk nor broker keeps it
            results["machine"] = earlier["machine"]
    figures.write_text(json.dumps(results, indent=1) + "\n")
    args.out.write_text(render(results))
    say(f"[bench] wrote {args.out} in {results['run']['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
