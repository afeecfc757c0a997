"""The ``tabled`` command line: one entry point, one subcommand per job.

Owns only the root parser and where each layer's subcommands come from: the table service's
(``tabled.daemon.cli``) the floor's (``roads``) and the tools' (``demo``). Subcommands import their
modules lazily, so
that ``tabled replay`` starts without loading asyncio, MQTT or the device stacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tabled.contract.outcome import GAMES
from tabled.daemon import __version__
from tabled.daemon import cli as daemon_cli


def _cmd_roads(args: argparse.Namespace) -> int:
    from tabled.daemon.rules.options import BaccaratOptions, OptionError, parse_options
    from tabled.pit.roads import EXIT_BAD_INPUT, write_roads

    try:
        options = parse_options("baccarat", dict(args.option))
    except OptionError as exc:
        print(f"tabled roads: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    assert isinstance(options, BaccaratOptions)
    return daemon_cli.read_input(
        "roads", args.file, lambda lines: write_roads(options, lines, sys.stdout, sys.stderr))


def _pit(argv: list[str]) -> int:
    # The pit monitor has its own commands and options (pit/cli.py), imported only when asked
    # for; main() hands it everything after "pit" (argparse's REMAINDER drops leading options).
    from tabled.pit.cli import main as pit_main

    return pit_main(argv)


def _cmd_demo(args: argparse.Namespace) -> int:
    from tabled.tools.demo import DemoError, run_demo

    try:
        return run_demo(args.game, args.rounds, broker_url=args.broker, seed=args.seed,
                        pace=args.pace, workdir=args.workdir, quiet=args.quiet)
    except DemoError as exc:
        print(f"tabled demo: {exc}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabled", description="Hardware-integration daemon for casino tables."
    )
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    daemon_cli.register(sub)
    rd = sub.add_parser(
        "roads",
        help="the baccarat scoreboard (roads) of each shoe of a recorded event stream",
        description="Run the baccarat rules over normalized events (JSON Lines) and write one "
        "JSON object per shoe: counts, bead plate, big road, big eye boy, small road, cockroach "
        "pig and the ask road (docs/pit.md). Exit 2 on malformed input.",
    )
    rd.add_argument(
        "--option", action="append", default=[], type=daemon_cli.parse_option, metavar="KEY=VALUE",
        help="a regulated option, as for replay: method=1|2, "
        "commission=five_percent|half_on_four, last_hand=this|one_more, decks=6..12",
    )
    rd.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    rd.set_defaults(func=_cmd_roads)

    pp = sub.add_parser("pit", help="the pit monitor: record, live floor, alerts (tabled pit -h)",
                        add_help=False)
    pp.add_argument("pit_args", nargs=argparse.REMAINDER)
    pp.set_defaults(func=lambda args: _pit(args.pit_args))

    dp = sub.add_parser("demo", help="simulated devices + daemon + broker, outcomes shown live",
                        description="Run N rounds of a game end to end on this machine and "
                        "exit 0 once all their outcomes have been published and received.")
    dp.add_argument("--game", choices=GAMES, default="baccarat")
    dp.add_argument("--rounds", type=int, default=20, metavar="N")
    dp.add_argument("--broker", metavar="mqtt://HOST:PORT",
                    help="an existing broker (default: start a private Mosquitto)")
    dp.add_argument("--seed", type=int, default=1)
    dp.add_argument("--pace", type=float, default=0.05, metavar="SECONDS",
                    help="time between device messages")
    dp.add_argument("--workdir", help="keep config, journal and logs here")
    dp.add_argument("--quiet", action="store_true")
    dp.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["pit"]:
        return _pit(argv[1:])
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
