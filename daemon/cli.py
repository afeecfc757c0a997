"""The table service's subcommands of the ``tabled`` command line (``tabled.tools.cli`` is the
entry point): run, check-config, replay, journal, listen.

Subcommands import their modules lazily, so that ``tabled replay`` starts without loading the
daemon's asyncio, MQTT and device stacks.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tabled.contract.outcome import GAMES


def _parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def _cmd_replay(args: argparse.Namespace) -> int:
    from tabled.daemon.replay import EXIT_BAD_INPUT, replay
    from tabled.daemon.rules.options import OptionError, parse_options

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


def _cmd_check_config(args: argparse.Namespace) -> int:
    from tabled.daemon.config import ConfigError, load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        for key, reason in exc.errors:
            print(f"{exc.path}: {key}: {reason}", file=sys.stderr)
        return 2
    from tabled.daemon.rules.options import declare

    print(f"{args.file}: ok ({config.table.game} at {config.table.site}/{config.table.id}, "
          f"{len(config.devices)} devices, options {declare(config.game_options())})")
    return 0


def _load_config_or_exit(path: str) -> object:
    from tabled.daemon.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        for key, reason in exc.errors:
            print(f"{exc.path}: {key}: {reason}", file=sys.stderr)
        raise SystemExit(2) from None


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from tabled.daemon.config import Config, SecretError, check_secrets
    from tabled.daemon.logs import configure
    from tabled.daemon.service import run_service

    config = _load_config_or_exit(args.config)
    assert isinstance(config, Config)
    try:
        check_secrets(config)
    except SecretError as exc:  # names the file and its mode, never what is in it
        print(f"tabled run: {exc}", file=sys.stderr)
        return 2
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

    config = _load_config_or_exit(args.config)
    assert isinstance(config, Config)
    return str(config.journal.path)


def _cmd_journal(args: argparse.Namespace) -> int:
    import json

    from tabled.daemon.journal import Journal, JournalError

    try:
        journal = Journal(_journal_path(args), create=False)
    except JournalError as exc:
        print(f"tabled journal: {exc}", file=sys.stderr)
        return 2
    try:
        if args.journal_command == "verify":
            result = journal.verify()
            if result.ok:
                print(f"ok: {result.rows} records, hash chain intact")
                return 0
            print(f"BROKEN at record {result.first_bad_id}: {result.reason} "
                  f"({result.rows} records read)", file=sys.stderr)
            return 1
        for rnd in journal.recall(args.last):
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


def register(sub: Any) -> None:
    """Add the table service's subcommands to the ``tabled`` command line."""

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

    run = sub.add_parser("run", help="run the daemon for one table (the systemd service)")
    run.add_argument("--config", "-c", required=True, metavar="FILE")
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    run.set_defaults(func=_cmd_run)

    cc = sub.add_parser("check-config", help="validate a config file; exit 2 listing every error")
    cc.add_argument("file", metavar="FILE")
    cc.set_defaults(func=_cmd_check_config)

    jp = sub.add_parser("journal", help="game recall and integrity of the journal")
    jsub = jp.add_subparsers(dest="journal_command", required=True, metavar="ACTION")
    for name, text in (("recall", "show the last N rounds with their events and outcomes"),
                       ("verify", "check the journal's hash chain")):
        action = jsub.add_parser(name, help=text)
        where = action.add_mutually_exclusive_group(required=True)
        where.add_argument("--config", "-c", metavar="FILE")
        where.add_argument("--journal", metavar="PATH")
        if name == "recall":
            action.add_argument("--last", type=int, default=10, metavar="N")
            action.add_argument("--json", action="store_true", help="one JSON object per round")
        action.set_defaults(func=_cmd_journal)

    lp = sub.add_parser("listen", help="print the normalized events a device sends (JSON lines)")
    lp.add_argument("--driver", required=True, choices=("shoe", "shuffler", "dice"))
    lp.add_argument("url", help="a serial port, by-id name, pty, socket://, or usb://VID:PID")
    lp.add_argument("--device-id", default="listen")
    lp.add_argument("--count", type=int, help="stop after N events")
    lp.add_argument("--duration", type=float, help="stop after this many seconds")
    lp.set_defaults(func=_cmd_listen)
