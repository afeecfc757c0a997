"""``python -m tests.campaigns``: the fault campaigns of docs/reliability.md at full size.

    python -m tests.campaigns                  # everything, full size (about 15 minutes)
    python -m tests.campaigns crash broker     # some of them
    python -m tests.campaigns --quick          # the bounded sizes of the test suite

Prints one JSON summary per campaign and game, writes them all to ``--out`` (default
``campaigns.json`` in the work directory), and exits 1 if any audit failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from tests.campaigns.campaigns import (
    GAMES,
    Report,
    broker_campaign,
    can_mount,
    crash_campaign,
    device_campaign,
    disk_campaign,
    dump,
)

FULL = {
    "crash": {"rounds": 1000, "kills": 110},
    "broker": {"rounds": 600, "outages": 6, "long_outage": 20.0},
    "devices": {"rounds": 500, "cycles": 70},
    "disk": {"rounds": 200},
}
QUICK = {
    "crash": {"rounds": 40, "kills": 6},
    "broker": {"rounds": 50, "outages": 5, "long_outage": 3.0},
    "devices": {"rounds": 40, "cycles": 5},
    "disk": {"rounds": 40},
}
RUNNERS = {"crash": crash_campaign, "broker": broker_campaign, "devices": device_campaign,
           "disk": disk_campaign}


async def run(names: list[str], games: list[str], sizes: dict[str, dict[str, float]],
              workdir: Path) -> list[Report]:
    reports = []
    for name in names:
        for game in games:
            if name == "disk" and (reason := can_mount()):
                print(f"{name}: skipped: {reason}", file=sys.stderr)
                continue
            print(f"{name} {game} ...", file=sys.stderr, flush=True)
            report = await RUNNERS[name](game, workdir / f"{name}-{game}",  # type: ignore[operator]
                                         **sizes[name])
            print(dump([report]), flush=True)
            reports.append(report)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.campaigns", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaigns", nargs="*", choices=[*RUNNERS, []], default=[],
                        metavar="CAMPAIGN", help=f"some of {', '.join(RUNNERS)} (default: all)")
    parser.add_argument("--game", action="append", choices=GAMES, help="default: all three")
    parser.add_argument("--quick", action="store_true", help="the test suite's bounded sizes")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabled-campaigns-"))
    workdir.mkdir(parents=True, exist_ok=True)
    reports = asyncio.run(run(args.campaigns or list(RUNNERS), args.game or list(GAMES),
                              QUICK if args.quick else FULL, workdir))
    out = args.out or workdir / "campaigns.json"
    dump(reports, out)
    failed = [f"{r.campaign}/{r.game}" for r in reports if not r.ok]
    print(f"{len(reports)} campaign runs, {len(failed)} failed {failed}; summaries in {out}",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
