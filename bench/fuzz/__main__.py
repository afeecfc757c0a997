"""``python -m bench.fuzz``: the full fuzzing campaign, or one target, or one case again.

Prints, per target, the inputs run (events, for the rules core), the cases they came in,
crashes, distinct outcomes (message types, refusal kinds, articles, counters seen: how deep the
inputs reached) and the seconds spent; exits 1 on any crash, after printing how to reproduce
each. ``--case`` rebuilds and runs one case of a crash report, letting its traceback through.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.fuzz import all_targets, campaign, run_case
from bench.fuzz.engine import Report

#: The issue's figure: every target takes at least this many inputs in the full campaign.
FULL_INPUTS = 1_000_000


def _parser() -> argparse.ArgumentParser:
    names = list(all_targets())
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=FULL_INPUTS,
                        help=f"inputs per target (default {FULL_INPUTS:,})")
    parser.add_argument("--target", action="append", choices=names, metavar="NAME",
                        help=f"run only this target (repeatable): {', '.join(names)}")
    parser.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: one per CPU)")
    parser.add_argument("--case", type=int,
                        help="run one case of --target again, as a crash report names it")
    parser.add_argument("--json", type=Path, help="also write the reports to this file")
    return parser


def _row(report: Report) -> str:
    return (f"{report.target:<20} {report.inputs:>12,} {report.unit:<6} {report.cases:>10,} "
            f"{report.crash_count:>8} {len(report.outcomes):>9} {report.seconds:>9.1f}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.case is not None:
        if not args.target or len(args.target) != 1:
            _parser().error("--case needs exactly one --target")
        data, labels = run_case(all_targets()[args.target[0]], args.seed, args.case)
        print(f"input: {data!r}\noutcomes: {labels}")
        return 0
    names = args.target or list(all_targets())
    started = time.perf_counter()
    reports = campaign(all_targets, names, args.inputs, args.seed, args.jobs)
    wall = time.perf_counter() - started
    print(f"{'target':<20} {'inputs':>12} {'unit':<6} {'cases':>10} {'crashes':>8} "
          f"{'outcomes':>9} {'seconds':>9}")
    for report in reports:
        print(_row(report))
    print(f"seed {args.seed}, {args.jobs} jobs, {wall:.0f} s wall clock "
          f"(seconds above are summed over the jobs)")
    for report in reports:
        for crash in report.crashes:
            print(f"\nCRASH {crash.target}: {crash.error}\n  input: {crash.input[:300]}\n"
                  f"  again: {crash.command}\n{crash.trace}")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "seed": args.seed, "jobs": args.jobs, "wall_seconds": round(wall, 1),
            "targets": [{"target": r.target, "inputs": r.inputs, "unit": r.unit,
                         "cases": r.cases, "crashes": r.crash_count,
                         "outcomes": len(r.outcomes), "seconds": round(r.seconds, 1)}
                        for r in reports]}, indent=2) + "\n")
    return 1 if any(report.crash_count for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
