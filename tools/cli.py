"""The ``tabled`` command line: one entry point, one subcommand per job.

Owns only the root parser and where each layer's subcommands come from: the table service's
(``tabled.daemon.cli``), the floor's (``roads``, ``integrity``, ``pit``) and the tools' (``demo``,
``floor``, ``console``, ``conformance``, ``floor-config``). Subcommands import their modules
lazily, so that ``tabled replay`` starts without loading asyncio, MQTT or the device stacks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from tabled.daemon import __version__
from tabled.daemon import cli as daemon_cli
from tabled.games.registry import game_names

#: Exit status of ``tabled roads`` for bad options or input (as ``tabled replay``).
EXIT_BAD_INPUT = 2


def _cmd_roads(args: argparse.Namespace) -> int:
    from tabled.games import registry
    from tabled.games.options import OptionError

    names = [args.game] if args.game else list(registry.games())
    with_roads = [name for name in names if registry.part(name, "roads") is not None]
    if len(with_roads) != 1:
        said = args.game or "no installed game, or more than one,"
        print(f"tabled roads: {said} declares a scoreboard of roads (a \"roads\" part); "
              "--game names the game", file=sys.stderr)
        return EXIT_BAD_INPUT
    (game,) = with_roads
    write_roads: Any = registry.part(game, "roads")
    try:
        options = registry.parse_options(game, dict(args.option))
    except OptionError as exc:
        print(f"tabled roads: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return daemon_cli.read_input(
        "roads", args.file,
        lambda lines: int(write_roads(options, lines, sys.stdout, sys.stderr)))


def _cmd_integrity(args: argparse.Namespace) -> int:
    from tabled.games.options import OptionError
    from tabled.games.registry import parse_options
    from tabled.pit.integrity.command import EXIT_BAD_INPUT, write_findings

    try:
        options = parse_options(args.game, dict(args.option))
    except OptionError as exc:
        print(f"tabled integrity: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return daemon_cli.read_input(
        "integrity", args.file,
        lambda lines: write_findings(args.game, options, lines, sys.stdout, sys.stderr))


def _pit(argv: list[str]) -> int:
    # The pit monitor has its own commands and options (pit/cli.py), imported only when asked
    # for; main() hands it everything after "pit" (argparse's REMAINDER drops leading options).
    from tabled.pit.cli import main as pit_main

    return pit_main(argv)


def _cmd_demo(args: argparse.Namespace) -> int:
    from tabled.tools.demo import DemoError, run_demo

    try:
        return run_demo(args.game, args.rounds, broker_url=args.broker, seed=args.seed,
                        pace=args.pace, workdir=args.workdir, quiet=args.quiet,
                        bets=args.bets)
    except DemoError as exc:
        print(f"tabled demo: {exc}", file=sys.stderr)
        return 1


def _cmd_console(args: argparse.Namespace) -> int:
    import asyncio

    from tabled.tools.console import (
        EXIT_REFUSED,
        EXIT_USAGE,
        ConsoleError,
        interactive,
        keygen,
        load_target,
        send_once,
    )

    if args.action == "keygen":
        try:
            path = keygen(args.out, force=args.force)
        except ConsoleError as exc:
            print(f"tabled console: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"{path}: a new key (64 hex characters, mode 0600). The daemon reads it from "
              "[commands] hmac_key_file; each console from [console] hmac_key_file or the same "
              "setting (docs/console.md)")
        return 0
    if not args.config:
        print("tabled console: --config FILE (the table's config) is required", file=sys.stderr)
        return EXIT_USAGE
    try:
        target = load_target(args.config)
    except ConsoleError as exc:
        print(f"tabled console: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action is None:
            return asyncio.run(interactive(target))
        name: str = args.action.replace("-", "_")
        command_args: dict[str, Any] = {}
        if name == "decision":
            command_args = {"seat": args.seat, "play": args.play}
        elif name == "void":
            command_args = {"reason": args.reason}
        elif name == "new_shoe":
            command_args = {"decks": args.decks}
        if getattr(args, "round", None) is not None:
            command_args["round"] = args.round
        return asyncio.run(send_once(target, name, command_args, wait=args.timeout))
    except ConsoleError as exc:
        print(f"tabled console: {exc}", file=sys.stderr)
        return EXIT_REFUSED


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _cmd_floor(args: argparse.Namespace) -> int:
    from tabled.tools.demo import DemoError
    from tabled.tools.floor import run_floor

    try:
        return run_floor(broker_url=args.broker, pace=args.pace, per_game=args.per_game,
                         web_port=args.web_port, duration=args.duration,
                         faults=not args.no_faults, seed=args.seed, workdir=args.workdir,
                         quiet=args.quiet, games=args.game)
    except DemoError as exc:
        print(f"tabled floor: {exc}", file=sys.stderr)
        return 1


def _add_floor(sub: Any) -> None:
    fp = sub.add_parser(
        "floor", help="the floor demo: simulated tables of each game, their daemons, a broker "
        "and the pit, until interrupted",
        description="A simulated floor on this machine: two tables of each installed game "
        f"({', '.join(game_names())}), each with the devices its demo recipe names (a "
        "dealer console where the game has one), a table daemon each, a private Mosquitto "
        "and the pit, whose page address and sign-in are printed at start. Devices play at a "
        "demo pace with a fault now and then. Runs until interrupted (Ctrl-C: exit 0), then "
        "stops everything and removes its work directory.")
    fp.add_argument("--pace", type=_positive_float, default=5.0, metavar="SECONDS",
                    help="about this many seconds per round at each table (default 5; a real "
                    "table takes 30 to 90 s)")
    fp.add_argument("--per-game", type=_positive_int, default=2, metavar="N",
                    help="tables of each game (default 2)")
    fp.add_argument("--game", action="append", choices=game_names(), metavar="GAME",
                    help="only this game's tables (repeatable; default: every installed game: "
                    f"{', '.join(game_names())})")
    fp.add_argument("--web-port", type=_positive_int, metavar="PORT",
                    help="the pit's web page (default 8080, or a free port when it is taken)")
    fp.add_argument("--broker", metavar="mqtt://HOST:PORT",
                    help="an existing broker (default: start a private Mosquitto)")
    fp.add_argument("--duration", type=_positive_float, metavar="SECONDS",
                    help="stop after this long (default: run until interrupted)")
    fp.add_argument("--no-faults", action="store_true", help="devices without injected faults")
    fp.add_argument("--seed", type=int, default=1)
    fp.add_argument("--workdir", help="keep configs, journals, the pit's record and logs here")
    fp.add_argument("--quiet", action="store_true", help="the banner only, no live lines")
    fp.set_defaults(func=_cmd_floor)


def _add_console(sub: Any) -> None:
    cp = sub.add_parser(
        "console", help="the dealer console: signed decisions, reveal, void (docs/console.md)",
        description="The dealer console of one table. Without an action: interactive (shows "
        "the open round, takes keystrokes). With one: send that command, print the daemon's "
        "reply; exit 0 accepted, 1 refused, declined by the rules or no reply, 2 bad config.")
    cp.add_argument("--config", "-c", metavar="FILE",
                    help="the table's config file: broker, topics, [console], the key")
    cp.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                    help="how long to wait for the reply (default: [console] reply_timeout)")
    actions = cp.add_subparsers(dest="action", metavar="ACTION")

    def action(name: str, text: str) -> argparse.ArgumentParser:
        ap: argparse.ArgumentParser = actions.add_parser(name, help=text, description=text)
        # SUPPRESS: a --config given before the action is not overwritten by a default here
        ap.add_argument("--config", "-c", metavar="FILE", default=argparse.SUPPRESS)
        ap.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                        default=argparse.SUPPRESS)
        return ap

    def for_round(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--round", type=_positive_int, metavar="N",
                        help="the round this is for (the number its outcome will carry): in "
                        "any other round the daemon declines it. Without it, the command is "
                        "for whatever round is open when it arrives")

    dp = action("decision", "a player's decision: Play (--play) or fold (--fold), Art. 9.2-9.3")
    dp.add_argument("--seat", type=_positive_int, required=True, metavar="N")
    choice = dp.add_mutually_exclusive_group(required=True)
    choice.add_argument("--play", dest="play", action="store_true")
    choice.add_argument("--fold", dest="play", action="store_false")
    for_round(dp)
    for_round(action("reveal", "turn the dealer's cards: the round is settled (Art. 9)"))
    vp = action("void", "void the open round, with the reason (an article such as "
                "qpoker.art11.3 is cited as given)")
    vp.add_argument("--reason", required=True)
    for_round(vp)
    np = action("new-shoe", "a game dealt from a shoe: a new shoe of N decks")
    np.add_argument("--decks", type=_positive_int, required=True, metavar="N")
    kp = actions.add_parser("keygen", help="write a new shared key (mode 0600)",
                            description="Write a new random HMAC key: 64 hexadecimal "
                            "characters and a newline, mode 0600. An existing file is kept "
                            "unless --force.")
    kp.add_argument("--out", required=True, metavar="FILE")
    kp.add_argument("--force", action="store_true", help="replace an existing key file")
    cp.set_defaults(func=_cmd_console)


def _cmd_conformance(args: argparse.Namespace) -> int:
    from tabled.tools.conformance import main as conformance_main

    return conformance_main(args)


def _add_conformance(sub: Any) -> None:
    from tabled.drivers.registry import family_names  # names only: no family is loaded here

    kp = sub.add_parser(
        "conformance", help="the conformance kit: check installed device families' drivers "
        "against their simulators (docs/drivers.md)",
        description="Run the conformance kit against device families (their driver with their "
        "simulator, in this process): framing round trip, any chunking, corrupt and truncated "
        "frames, disconnect and reconnect, the durability barrier, identity, each family fault "
        "as its event, and no leaked task or file descriptor. Prints each check's result; exit "
        "0 when all passed (a check that does not apply is skipped with its reason), 1 when "
        "one failed, 2 for an unknown family or check.")
    # Plain strings, checked by the kit (which names what is installed): building this parser
    # must not load the kit, the families or their simulators.
    kp.add_argument("families", nargs="*", metavar="FAMILY",
                    help=f"installed device families ({', '.join(family_names()) or 'none'})")
    kp.add_argument("--all", action="store_true", help="check every installed family")
    kp.add_argument("--check", action="append", metavar="CHECK",
                    help="run only this check (repeatable; --list names them)")
    kp.add_argument("--list", action="store_true", help="list the checks and what each proves")
    kp.add_argument("--seed", type=int, help="seed of the devices' scripts (default 1)")
    kp.add_argument("--length", type=_positive_int, metavar="N",
                    help="about how many events each device's script makes (default 24)")
    kp.add_argument("--pace", type=_positive_float, metavar="SECONDS",
                    help="seconds between device messages where a check unplugs the device or "
                    "refuses a commit mid-stream (default 0.004)")
    kp.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                    help="the longest any one wait of a check may take (default 20)")
    # the games conformance kit (docs/games.md): an installed game's replay properties
    kp.add_argument("--game", action="append", metavar="GAME",
                    help="check an installed game instead (repeatable; with --list, its checks)")
    kp.add_argument("--rounds", type=_positive_int, metavar="N",
                    help="--game: rounds in the game's stream (default 40)")
    kp.set_defaults(func=_cmd_conformance)


def _cmd_floor_config(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tabled.tools.floor_config import FloorConfigError, build, write

    try:
        floor = build(sites=args.site or [], central=args.central or [],
                      listen=args.listen or [], central_listen=args.central_listen,
                      prefix=args.prefix,
                      cafile=Path(args.tls_ca) if args.tls_ca else None,
                      cert_dir=Path(args.tls_certs) if args.tls_certs else None,
                      etc=Path(args.etc) if args.etc else None,
                      data=Path(args.data) if args.data else None, run_as=args.run_as,
                      consoles=not args.no_consoles, keepalive=args.keepalive,
                      restart_timeout=tuple(args.restart_timeout))
        written = write(floor, Path(args.out), force=args.force)
    except (FloorConfigError, OSError) as exc:
        print(f"tabled floor-config bridge: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in written:
        print(path)
    print(f"{len(floor.sites)} sites, {sum(len(s.tables) for s in floor.sites)} tables: each "
          "broker's mosquitto.conf, passwd (hashed) and tabled.acl, and each client's password "
          "in secrets/<user>.password (mode 0600; none printed)", file=sys.stderr)
    return 0


def _add_floor_config(sub: Any) -> None:
    fc = sub.add_parser(
        "floor-config", help="broker configs for a floor: sites bridged to a central broker "
        "(docs/deployment.md)",
        description="Write the Mosquitto configs of a floor layout (docs/deployment.md).")
    layouts = fc.add_subparsers(dest="layout", metavar="LAYOUT", required=True)
    bp = layouts.add_parser(
        "bridge", help="a broker per site, each bridged to a central broker",
        description="For each site, OUT/<site>/: mosquitto.conf (listener, passwords, ACL, "
        "persistence, and the bridge to the central broker: the tables' topics up, the pit's "
        "fetch requests down, QoS 1, persistent session), passwd (hashed), tabled.acl (each "
        "table daemon and console only its own topics) and secrets/<user>.password for each "
        "client (mode 0600). OUT/central/: the same for the central broker, where each site's "
        "bridge identity may write only its own site's tables' topics, and the pit and a "
        "read-only watcher have their identities. No password is printed. Exit 0 written, "
        "2 bad input (named).")
    bp.add_argument("--site", action="append", metavar="SITE=TABLE[,TABLE…]",
                    help="a site and its table ids (repeatable; ids are MQTT topic levels)")
    bp.add_argument("--central", action="append", metavar="[SITE=]HOST:PORT",
                    help="where the sites' bridges reach the central broker; SITE= for one "
                    "site only (repeatable)")
    bp.add_argument("--listen", action="append", metavar="[SITE=][HOST:]PORT",
                    help="where each site's broker listens for its tables (default "
                    "0.0.0.0:1883, 0.0.0.0:8883 with --tls-ca); SITE= for one site only "
                    "(repeatable)")
    bp.add_argument("--central-listen", metavar="[HOST:]PORT",
                    help="where the central broker listens (default: all interfaces, the "
                    "--central port)")
    bp.add_argument("--out", required=True, metavar="DIR", help="write the files here")
    bp.add_argument("--force", action="store_true",
                    help="replace the files of an earlier run (new passwords)")
    bp.add_argument("--prefix", default="tabled", help="the topic prefix (default tabled)")
    bp.add_argument("--etc", metavar="DIR", help="where the files will be on each broker's "
                    "host, e.g. /etc/mosquitto (default: where they are written)")
    bp.add_argument("--data", metavar="DIR", help="each broker's persistence directory on its "
                    "host, e.g. /var/lib/mosquitto (default: OUT/<site>/data)")
    bp.add_argument("--run-as", metavar="USER", help="the user each broker runs as when "
                    "started as root (default: Mosquitto's, mosquitto)")
    bp.add_argument("--tls-ca", metavar="FILE",
                    help="TLS on every listener and bridge: the floor's CA certificate")
    bp.add_argument("--tls-certs", metavar="DIR",
                    help="with --tls-ca: each broker's certificate and key (DIR/<site>.crt, "
                    ".key; DIR/central.crt, .key) and each bridge's client certificate "
                    "(DIR/bridge-<site>.crt, .key)")
    bp.add_argument("--no-consoles", action="store_true",
                    help="no dealer-console identities at the sites")
    bp.add_argument("--keepalive", type=_positive_int, default=30, metavar="SECONDS",
                    help="the bridge's keepalive: a silent uplink is noticed after 1.5 times "
                    "this (default 30)")
    bp.add_argument("--restart-timeout", type=_positive_int, nargs=2, default=[2, 30],
                    metavar=("BASE", "CAP"), help="the bridge's reconnect backoff in seconds "
                    "(default 2 30)")
    bp.set_defaults(func=_cmd_floor_config)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabled", description="Hardware-integration daemon for casino tables."
    )
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    daemon_cli.register(sub)
    rd = sub.add_parser(
        "roads",
        help="the scoreboard (roads) of each shoe of a recorded event stream",
        description="Run the rules of the game whose scoreboard is its roads over normalized "
        "events (JSON Lines) and write one JSON object per shoe: counts, bead plate, big road, "
        "big eye boy, small road, cockroach pig and the ask road (docs/pit.md). Exit 2 on "
        "malformed input.",
    )
    rd.add_argument("--game", choices=game_names(),
                    help="the game (default: the one installed game that declares roads)")
    daemon_cli.add_option_argument(
        rd, "a regulated option, as for replay: method=1|2, "
        "commission=five_percent|half_on_four, last_hand=this|one_more, decks=6..12")
    rd.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    rd.set_defaults(func=_cmd_roads)

    ip = sub.add_parser(
        "integrity",
        help="the integrity monitors over a recorded event stream, one JSON line per finding",
        description="Run the rules and the integrity monitors (docs/integrity.md) over "
        "normalized events (JSON Lines) at full speed and write each finding as a JSON line "
        '{"monitor", "round", "severity", "detail"}. Exit 0 with or without findings, 2 on '
        "malformed input.",
    )
    ip.add_argument("--game", choices=game_names(), required=True)
    daemon_cli.add_option_argument(ip)
    ip.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    ip.set_defaults(func=_cmd_integrity)

    pp = sub.add_parser("pit", help="the pit monitor: record, live floor, alerts (tabled pit -h)",
                        add_help=False)
    pp.add_argument("pit_args", nargs=argparse.REMAINDER)
    pp.set_defaults(func=lambda args: _pit(args.pit_args))

    dp = sub.add_parser("demo", help="simulated devices + daemon + broker, outcomes shown live",
                        description="Run N rounds of a game end to end on this machine and "
                        "exit 0 once all their outcomes have been published and received.")
    names = game_names()
    dp.add_argument("--game", choices=names, default=names[0] if names else None,
                    required=not names)
    dp.add_argument("--rounds", type=int, default=20, metavar="N")
    dp.add_argument("--broker", metavar="mqtt://HOST:PORT",
                    help="an existing broker (default: start a private Mosquitto)")
    dp.add_argument("--seed", type=int, default=1)
    dp.add_argument("--pace", type=float, default=0.05, metavar="SECONDS",
                    help="time between device messages")
    dp.add_argument("--workdir", help="keep config, journal and logs here")
    dp.add_argument("--quiet", action="store_true")
    dp.add_argument("--bets", choices=("main", "all"), default="main",
                    help="main: what a pit engineer reads first (the game's headline: the "
                    "winner, the roll and the point, the dealer's hand); all: every bet of each "
                    "outcome")
    dp.set_defaults(func=_cmd_demo)
    _add_console(sub)
    _add_floor(sub)
    _add_conformance(sub)
    _add_floor_config(sub)
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
