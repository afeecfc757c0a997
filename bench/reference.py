"""The straightforward reference of the replay benchmark, run as a process like ``tabled replay``.

``python -m bench.reference --game GAME FILE``: JSON Lines in, one JSON line per outcome out,
computed by the project's test oracles (``tests/oracle``): plain second readings of the rules,
written for clarity and never for speed, with no typed events, no validation beyond what the
rules need and no notices. It is the simplest thing that does the job, and the yardstick
``tabled replay`` is compared with in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from tests.oracle import baccarat, craps, qpoker

ORACLES = {"baccarat": baccarat.replay, "craps": craps.replay, "qpoker": qpoker.replay}


def _events(path: str) -> Iterator[dict[str, object]]:
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                yield json.loads(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reference", description=__doc__)
    parser.add_argument("--game", choices=sorted(ORACLES), required=True)
    parser.add_argument("file")
    args = parser.parse_args(argv)
    write = sys.stdout.write
    for record in ORACLES[args.game](_events(args.file), {}):
        write(json.dumps(record, separators=(",", ":")))
        write("\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
