"""The table service's subcommands of the ``tabled`` command line (``tabled.tools.cli`` is the
entry point): run, check-config, replay, journal, listen.

Subcommands import their modules lazily, so that ``tabled replay`` starts without loading the
daemon's asyncio, MQTT and device stacks.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from tabled.drivers.registry import family_names
from tabled.games.registry import game_names, games


def parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def read_input(command: str, file: str, run: Callable[[TextIO], int]) -> int:
    """``run`` over FILE, or standard input for ``-``; a file that cannot be read is exit 2."""
    if file == "-":
        return run(sys.stdin)
    try:
        with open(file, encoding="utf-8", errors="surrogateescape") as stream:
            return run(stream)
    except OSError as exc:
        print(f"tabled {command}: cannot read {file}: {exc.strerror}", file=sys.stderr)
        return 2


def _cmd_replay(args: argparse.Namespace) -> int:
    from tabled.daemon.replay import EXIT_BAD_INPUT, replay
    from tabled.games.options import OptionError
    from tabled.games.registry import parse_options

    try:
        options = parse_options(args.game, dict(args.option))
    except OptionError as exc:
        print(f"tabled replay: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return read_input("replay", args.file,
                       lambda lines: replay(args.game, options, lines, sys.stdout, sys.stderr))


def _cmd_check_config(args: argparse.Namespace) -> int:
    from tabled.daemon.config import Config

    config = _config_or_exit(args.file)
    assert isinstance(config, Config)
    from tabled.games.options import declare
    from tabled.games.registry import game_policy

    count = len(config.devices)
    print(f"{args.file}: ok ({config.table.game} at {config.table.site}/{config.table.id}, "
          f"{count} device{'' if count == 1 else 's'}, options {declare(config.game_options())}; "
          f"broker {_broker_said(config)})")
    console = game_policy(config.table.game).needs_console
    if console is not None and not config.commands.enabled:
        # valid, and useless: the game's rounds are settled through the dealer console
        print(f"{args.file}: warning: commands: a {config.table.game} table needs its dealer "
              f"console, and [commands] enabled = false: {console}. Set [commands] "
              "enabled = true and hmac_key_file (`tabled console keygen --out FILE` makes a "
              "key; docs/console.md).", file=sys.stderr)
    return 0


def _broker_said(config: object) -> str:
    """The broker ``tabled run`` will use, as the ok line of check-config says it."""
    from tabled.daemon.config import Config

    assert isinstance(config, Config)
    if config.mqtt.embedded:
        return ("embedded: a private Mosquitto on 127.0.0.1, started by the daemon; no outcome "
                "leaves this machine")
    return f"{config.mqtt.url} as client {config.client_id}"


def add_option_argument(parser: argparse.ArgumentParser,
                        help: str = "a regulated option, as for replay") -> None:
    """``--option KEY=VALUE``, repeatable: a regulated option of the game's rules."""
    parser.add_argument("--option", action="append", default=[], type=parse_option,
                        metavar="KEY=VALUE", help=help)


def _config_or_exit(path: str, *, checked: bool = True) -> object:
    """The config as ``tabled run`` and ``tabled check-config`` both check it (one function:
    what one passes, the other does; ``checked=False``: its keys only, for a command that runs
    nothing), or exit 2 listing every problem with its key."""
    from tabled.contract.settings import print_problems
    from tabled.daemon.config import ConfigError, check_config, load_config

    try:
        return check_config(path) if checked else load_config(path)
    except ConfigError as exc:
        print_problems(exc)
        raise SystemExit(2) from None


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from tabled.contract.logs import configure
    from tabled.daemon.config import Config
    from tabled.daemon.service import run_service

    # exactly what check-config checks (a secret file names its mode, never what is in it)
    config = _config_or_exit(args.config)
    assert isinstance(config, Config)
    from tabled.daemon.journal import Journal, JournalError

    # The journal first, before anything else is started or logged: one daemon per journal,
    # and a second one leaves with one line naming the first (JournalInUse).
    try:
        journal = Journal(config.journal.path)
    except JournalError as exc:
        print(f"tabled run: {exc}", file=sys.stderr)
        return 1
    # every line, whoever logs it, names the table
    configure(args.log_level or config.log.level, config.log.format,
              static={"table": f"{config.table.site}/{config.table.id}"})
    try:
        return asyncio.run(run_service(config, journal))
    except JournalError as exc:  # the journal cannot even be written at start
        print(f"tabled run: {exc}", file=sys.stderr)
        return 1
    finally:
        journal.close()


def _journal_path(args: argparse.Namespace) -> str:
    if args.journal:
        return str(args.journal)
    from tabled.daemon.config import Config

    config = _config_or_exit(args.config, checked=False)
    assert isinstance(config, Config)
    return str(config.journal.path)


def _cmd_journal(args: argparse.Namespace) -> int:
    import json

    from tabled.daemon.journal import Head, Journal, JournalError

    expect = None
    if getattr(args, "expect_head", None):
        try:
            expect = Head.parse(args.expect_head)
        except ValueError as exc:
            print(f"tabled journal: --expect-head: {exc}", file=sys.stderr)
            return 2
    try:
        journal = Journal(_journal_path(args), create=False)
    except (JournalError, OSError) as exc:  # a file it may not read: one line, no traceback
        print(f"tabled journal: {exc}", file=sys.stderr)
        return 2
    try:
        if args.journal_command == "verify":
            result = journal.verify(expect)
            if result.ok:
                print(f"ok: {result.rows} records, hash chain intact, every stream numbered in "
                      f"order, head {result.head}@"
                      f"{result.rows}" + (", the witness's head is in it" if expect else ""))
                return 0
            print(f"BROKEN at record {result.first_bad_id}: {result.reason} "
                  f"({result.rows} records read)", file=sys.stderr)
            return 1
        for rnd in journal.recall(args.last, round_no=args.round):
            if args.json:
                print(json.dumps({"round": rnd.round, "events": [i.body for i in rnd.inputs],
                                  "outcome": rnd.outcome}, separators=(",", ":")))
                continue
            out = rnd.outcome
            head = f"round {rnd.round}: {out.get('status')}"
            if out.get("status") == "void":
                head += f" ({out.get('article')}: {out.get('void_reason')})"
            print(head)
            for item in rnd.inputs:
                body = {k: v for k, v in item.body.items() if k not in ("v",)}
                print(f"  [{item.source}] {json.dumps(body, separators=(',', ':'))}")
            print(f"  => {json.dumps(out.get('result'), separators=(',', ':'))}")
        return 0
    finally:
        journal.close()


def _cmd_listen(args: argparse.Namespace) -> int:
    import asyncio

    from tabled.daemon.listen import listen

    return asyncio.run(listen(args.driver, args.url, device_id=args.device_id,
                              count=args.count, duration=args.duration))


def _cmd_odds(args: argparse.Namespace) -> int:
    import json

    from tabled.games.odds.render import text
    from tabled.games.options import OptionError
    from tabled.games.registry import odds, odds_markdown, option_type, parse_options

    def refuse(reason: str) -> int:
        print(f"tabled odds: {reason}", file=sys.stderr)
        return 2

    raw = dict(args.option)
    if args.markdown:
        if raw or args.decks is not None or args.json:
            return refuse("--markdown shows every option combination: no --option, --decks "
                          "or --json with it")
        markdown = odds_markdown(args.game)
        if markdown is None:
            return refuse(f"{args.game} declares no odds tables for its document")
        print(markdown)
        return 0
    if args.decks is not None and "decks" not in option_type(args.game).__dataclass_fields__:
        return refuse(f"--decks is for a game dealt from a shoe ({args.game} has none)")
    try:
        options = parse_options(args.game, raw)
        if "decks" in raw and args.decks not in (None, getattr(options, "decks", None)):
            return refuse(f"--decks {args.decks} disagrees with --option decks={raw['decks']}")
        result = odds(args.game, options, args.decks)  # --decks overrides the default
    except OptionError as exc:
        return refuse(str(exc))
    print(json.dumps(result.to_json()) if args.json else text(result))
    return 0


def register(sub: Any) -> None:
    """Add the table service's subcommands to the ``tabled`` command line."""

    rp = sub.add_parser(
        "replay",
        help="run the rules core over a recorded event stream",
        description="Read normalized events (JSON Lines) and write one outcome per line, "
        "exactly as the daemon would publish them. Exit 2 on malformed input.",
    )
    rp.add_argument("--game", required=True, choices=game_names())
    add_option_argument(rp, "a regulated option: " + "; ".join(
        f"{name} " + ", ".join(f"{key}={values}" for key, values in declared.option_values.items())
        for name, declared in games().items() if declared.option_values))
    rp.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    rp.set_defaults(func=_cmd_replay)

    notes = [declared.odds_help for declared in games().values() if declared.odds_help]
    op = sub.add_parser(
        "odds",
        help="exact house edges of every bet under the configured rules",
        description="Compute, in exact fractions from the rules core's own code, the "
        "probabilities of a round and the house edge of every bet: the house's expected gain "
        "per unit staked, a push counting as a zero-return decision (per hand)."
        + (f" {'; '.join(notes)}." if notes else ""),
    )
    op.add_argument("--game", required=True, choices=game_names())
    add_option_argument(op)
    op.add_argument("--decks", type=int, metavar="N", help="; ".join(
        f"{name}: the shoe size, {declared.option_values['decks']} (the decks option, default "
        f"{declared.options().decks}; given both, they must agree)"
        for name, declared in games().items() if "decks" in declared.option_values))
    op.add_argument("--json", action="store_true", help="one JSON object")
    op.add_argument("--markdown", action="store_true",
                    help="the docs/rules/ tables of every option combination")
    op.set_defaults(func=_cmd_odds)

    run = sub.add_parser("run", help="run the daemon for one table (the systemd service)")
    run.add_argument("--config", "-c", required=True, metavar="FILE")
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    run.set_defaults(func=_cmd_run)

    cc = sub.add_parser(
        "check-config", help="check a config file as `tabled run` does; exit 2 listing every "
        "error",
        description="Check the file, every key and the files it names (secrets private, TLS "
        "files that load) exactly as `tabled run` does before it starts; print `ok` with the "
        "table, its devices, its options and the broker it will use, or every problem with "
        "its key (exit 2).")
    cc.add_argument("file", metavar="FILE")
    cc.set_defaults(func=_cmd_check_config)

    jp = sub.add_parser("journal", help="game recall and integrity of the journal")
    jsub = jp.add_subparsers(dest="journal_command", required=True, metavar="ACTION")
    for name, text in (("recall", "show the last N rounds with their events and outcomes"),
                       ("verify", "check the journal's hash chain and each stream's numbers")):
        action = jsub.add_parser(name, help=text)
        where = action.add_mutually_exclusive_group(required=True)
        where.add_argument("--config", "-c", metavar="FILE")
        where.add_argument("--journal", metavar="PATH")
        if name == "recall":
            which = action.add_mutually_exclusive_group()
            which.add_argument("--last", type=int, default=10, metavar="N",
                               help="the last N rounds (default 10)")
            which.add_argument("--round", type=int, metavar="N", help="round N alone")
            action.add_argument("--json", action="store_true", help="one JSON object per round")
        else:
            action.add_argument("--expect-head", metavar="HASH[@ROWS]",
                                help="a head a witness holds (the birth record's journal.head, "
                                "as the floor recorded it): the journal must hold that row, "
                                "with that hash, or it was cut")
        action.set_defaults(func=_cmd_journal)

    lp = sub.add_parser("listen", help="print the normalized events a device sends (JSON lines)")
    lp.add_argument("--driver", required=True, choices=family_names(), metavar="FAMILY",
                    help=f"the device family: {', '.join(family_names())}")
    lp.add_argument("url", help="a serial port, by-id name, pty, socket://, or usb://VID:PID")
    lp.add_argument("--device-id", default="listen")
    lp.add_argument("--count", type=int, help="stop after N events")
    lp.add_argument("--duration", type=float, help="stop after this many seconds")
    lp.set_defaults(func=_cmd_listen)
