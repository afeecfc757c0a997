"""``tabled-sim shoe|shuffler|dice``: serve one simulated device.

Owns only the command line: each family's module (``simulators/<family>.py``) adds its own
arguments and serves. The serial devices appear on a pseudo-terminal (the path to open is
printed first), the dice sensor behind a pyusb backend reached over a local socket.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

FAMILIES = {
    "shoe": "a baccarat card-reading shoe (serial)",
    "shuffler": "an automatic shuffler-dealer, Q Poker or baccarat mode (serial)",
    "dice": "an electronic dice sensor (USB, through the simulated pyusb backend)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tabled-sim",
                                     description="Serve a simulated tabled device.")
    sub = parser.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for family, text in FAMILIES.items():
        module = importlib.import_module(f"tabled.simulators.{family}")
        child = sub.add_parser(family, help=text, description=module.__doc__)
        module.add_arguments(child)
        child.set_defaults(serve=module.serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(asyncio.run(args.serve(args)))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
