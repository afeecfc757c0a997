"""The ``tabled`` command line: one entry point, one subcommand per job.

Subcommands import their modules lazily, so that ``tabled replay`` starts without loading the
daemon's asyncio, MQTT and device stacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from daemon import __version__
from daemon.rules.outcome import GAMES


def _parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def _cmd_replay(args: argparse.Namespace) -> int:
    from daemon.replay import EXIT_BAD_INPUT, replay
    from daemon.rules.options import OptionError, parse_options

    try:
        options = parse_options(args.game, dict(args.option))
    except OptionError as exc:
        print(f"tabled replay: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.file == "-":
        return replay(args.game, options, sys.stdin, sys.stdout, sys.stderr)
    try:
        with open(args.file, encoding="utf-8", errors="surrogateescape") as stream:
            return replay(args.game, options, stream, sys.stdout, sys.stderr)
    except OSError as exc:
        print(f"tabled replay: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabled", description="Hardware-integration daemon for casino tables."
    )
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rp = sub.add_parser(
        "replay",
        help="run the rules core over a recorded event stream",
        description="Read normalized events (JSON Lines) and write one outcome per line, "
        "exactly as the daemon would publish them. Exit 2 on malformed input.",
    )
    rp.add_argument("--game", required=True, choices=GAMES)
    rp.add_argument(
        "--option", action="append", default=[], type=_parse_option, metavar="KEY=VALUE",
        help="a regulated option: baccarat method=1|2, commission=five_percent|half_on_four, "
        "last_hand=this|one_more, decks=6..12; craps big_bets_on_come_out=true|false; "
        "qpoker positions=7..20",
    )
    rp.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    rp.set_defaults(func=_cmd_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # A reader such as `head` went away: not our error. Point stdout at /dev/null so that
        # the interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
