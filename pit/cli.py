"""``tabled pit …``: the pit monitor's commands.

    tabled pit --config FILE                      the service (systemd runs this)
    tabled pit check-config FILE                  every error with its key; exit 2
    tabled pit status --config FILE               the floor as the record has it (JSON)
    tabled pit recall --config FILE SITE/TABLE    the table's last rounds (JSON lines)
    tabled pit alerts --config FILE [--all]       alerts (JSON lines)
    tabled pit audit --config FILE [ALERT]        the audit trail (JSON lines)
    tabled pit audit --config FILE --sign-in [--user U]   the sign-in audit (JSON lines)
    tabled pit ack ALERT --config FILE --user U   acknowledge, as a signed-in user
    tabled pit close ALERT --config FILE --user U close, as a supervisor
    tabled pit hash-password                      an argon2id hash for [[users]]
    tabled pit report --config FILE --from T --to T [--table SITE/TABLE]
        [--format html|csv|pdf] [--output FILE] [--lang zh_Hant|en|pt]
                                                  a shift or day report from the record

The acting commands ask for the user's password (from the terminal, or the first line of
standard input, or ``--password-file``) and go through the same role check and audit as the web
page (the password check is in the sign-in audit, client ``cli:<login>``); the running service
publishes the change on ``…/pit/alert``. Exit status: 0 done, 1 the store failed, 2 bad config
or usage, 3 sign-in failed or not allowed, 4 the alert cannot take that action.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

EXIT_STORE = 1
EXIT_USAGE = 2
EXIT_DENIED = 3
EXIT_ACTION = 4


def _print(obj: Any) -> None:
    print(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str))


def _load(path: str) -> Any:
    from tabled.contract.settings import print_problems
    from tabled.pit.config import ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as exc:
        print_problems(exc)
        raise SystemExit(EXIT_USAGE) from None


def _check_config(args: argparse.Namespace) -> int:
    from tabled.contract.settings import print_problems
    from tabled.pit.config import ConfigError, check_secrets, load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print_problems(exc)
        return EXIT_USAGE
    problems = check_secrets(config)
    for key, reason in problems:
        print(f"{args.file}: {key}: {reason}", file=sys.stderr)
    if problems:
        return EXIT_USAGE
    share = f", shared as {config.mqtt.share_group}" if config.mqtt.share_group else ""
    print(f"{args.file}: ok (pit {config.pit.id}; broker {config.mqtt.url}{share}; store "
          f"{config.store.describe()}; {len(config.users)} users)")
    return 0


def _run(args: argparse.Namespace) -> int:
    from tabled.contract.logs import configure
    from tabled.contract.secrets import SecretError
    from tabled.pit.config import PitConfig, check_secrets
    from tabled.pit.service import run_pit
    from tabled.pit.store import StoreError

    config = _load(args.config)
    assert isinstance(config, PitConfig)
    problems = check_secrets(config)
    if problems:  # names the file and its mode, never what is in it
        for key, reason in problems:
            print(f"tabled pit: {key}: {reason}", file=sys.stderr)
        return EXIT_USAGE
    configure(args.log_level or config.log.level, config.log.format,
              static={"pit": config.pit.id})
    try:
        return asyncio.run(run_pit(config))
    except StoreError as exc:  # the store cannot even be opened at start
        print(f"tabled pit: {exc}", file=sys.stderr)
        return EXIT_STORE
    except SecretError as exc:
        print(f"tabled pit: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _with_store(args: argparse.Namespace, body: Callable[[Any, Any], Awaitable[T]],
                *, write: bool = False) -> T | int:
    from tabled.pit.config import PitConfig
    from tabled.pit.service import open_store
    from tabled.pit.store import StoreError

    config = _load(args.config)
    assert isinstance(config, PitConfig)
    if config.store.postgres is None and not config.store.sqlite_path.exists():
        print(f"tabled pit: no record at {config.store.sqlite_path}", file=sys.stderr)
        return EXIT_STORE

    async def main() -> T:
        store = open_store(config, readonly=not write)
        await store.open()
        try:
            return await body(config, store)
        finally:
            await store.close()

    try:
        return asyncio.run(main())
    except StoreError as exc:
        print(f"tabled pit: {exc}", file=sys.stderr)
        return EXIT_STORE


def _status(args: argparse.Namespace) -> int:
    from tabled.pit.model import Floor

    async def body(config: Any, store: Any) -> int:
        floor = Floor()
        await floor.rebuild(store)
        snapshot = floor.snapshot()
        if args.table:
            site, _, table = args.table.partition("/")
            snapshot["tables"] = [t for t in snapshot["tables"]
                                  if t["site"] == site and t["table"] == table]
            snapshot["alerts"] = [a for a in snapshot["alerts"]
                                  if a["site"] == site and a["table"] == table]
        print(json.dumps(snapshot, indent=1, default=str))
        return 0

    return int(_with_store(args, body))


def _recall(args: argparse.Namespace) -> int:
    site, sep, table = args.table.partition("/")
    if not sep:
        print("tabled pit recall: name the table as SITE/TABLE", file=sys.stderr)
        return EXIT_USAGE

    async def body(config: Any, store: Any) -> int:
        for rnd in await store.recall(site, table, args.last):
            _print(rnd.to_dict())
        return 0

    return int(_with_store(args, body))


def _alerts(args: argparse.Namespace) -> int:
    from tabled.pit.store import LIVE_STATES

    states = (*LIVE_STATES, "closed") if args.all else LIVE_STATES

    async def body(config: Any, store: Any) -> int:
        for alert in await store.alerts(states=states, limit=args.limit):
            _print(alert.to_dict())
        return 0

    return int(_with_store(args, body))


def _audit(args: argparse.Namespace) -> int:
    if args.sign_in and args.alert is not None:
        print("tabled pit audit: an ALERT or --sign-in, not both", file=sys.stderr)
        return EXIT_USAGE

    async def body(config: Any, store: Any) -> int:
        entries = (await store.sign_in_audit(user=args.user, limit=args.limit) if args.sign_in
                   else await store.audit(args.alert, limit=args.limit))
        for entry in entries:
            _print(entry.to_dict())
        return 0

    return int(_with_store(args, body))


def _password(args: argparse.Namespace) -> str:
    if args.password_file:
        from tabled.contract.secrets import read_secret

        return read_secret(Path(args.password_file)).decode()
    if sys.stdin.isatty():
        return getpass.getpass(f"password for {args.user}: ")
    return sys.stdin.readline().rstrip("\n")


def _cli_client() -> str:
    """Who typed the command, for the sign-in audit: ``cli:<login name>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


def _act(args: argparse.Namespace) -> int:
    from tabled.pit.alerts import AlertDesk
    from tabled.pit.auth import Forbidden, Users
    from tabled.pit.config import PitConfig
    from tabled.pit.store import AlertActionError, StoreError

    config = _load(args.config)
    assert isinstance(config, PitConfig)
    users = Users(config.users)
    user = users.authenticate(args.user, _password(args))

    async def body(config: Any, store: Any) -> int:
        # the command line's sign-in is in the sign-in audit, as the page's is
        action, reason = ("signed_in", "cli") if user is not None else (
            "failed", "unknown_user" if users.get(args.user) is None else "bad_password")
        try:
            await store.record_sign_in(time.time(), args.user, _cli_client(), action, reason,
                                       config.pit.id)
        except StoreError as exc:
            print(f"tabled pit: the sign-in audit failed: {exc}", file=sys.stderr)
        if user is None:
            print("tabled pit: sign-in failed", file=sys.stderr)
            return EXIT_DENIED
        desk = AlertDesk(store, publish=config.alerts.publish)
        try:
            if args.action == "ack":
                alert = await desk.acknowledge(args.alert, user, args.note)
            else:
                alert = await desk.close(args.alert, user, args.note)
        except Forbidden as exc:
            print(f"tabled pit: {exc}", file=sys.stderr)
            return EXIT_DENIED
        except AlertActionError as exc:
            print(f"tabled pit: {exc}", file=sys.stderr)
            return EXIT_ACTION
        _print(alert.to_dict())
        return 0

    return int(_with_store(args, body, write=True))


def _hash_password(args: argparse.Namespace) -> int:
    from tabled.pit.auth import hash_password

    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            print("tabled pit: the two passwords differ", file=sys.stderr)
            return EXIT_USAGE
    else:
        first = sys.stdin.readline().rstrip("\n")
    if len(first) < 8:
        print("tabled pit: a password of at least 8 characters", file=sys.stderr)
        return EXIT_USAGE
    print(hash_password(first))
    return 0


def _report(args: argparse.Namespace) -> int:
    from tabled.pit.report import render
    from tabled.pit.report.figures import gather
    from tabled.pit.report.period import PeriodError, parse_period

    site: str | None = None
    table: str | None = None
    if args.table:
        site, sep, table = args.table.partition("/")
        if not sep or not site or not table:
            print("tabled pit report: --table: name the table as SITE/TABLE", file=sys.stderr)
            return EXIT_USAGE
    config = _load(args.config)
    zone = config.reports.timezone
    try:
        since, until = parse_period(args.since, args.until, zone)
    except PeriodError as exc:
        print(f"tabled pit report: --{exc}", file=sys.stderr)
        return EXIT_USAGE
    language = args.lang or config.reports.language

    async def body(config: Any, store: Any) -> bytes:
        report = await gather(store, since, until, made_at=time.time(), timezone=zone,
                              site=site, table=table)
        return await asyncio.to_thread(render, report, args.format, language)

    data = _with_store(args, body)
    if isinstance(data, int):
        return data
    if args.output:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            print(f"tabled pit report: --output: {exc}", file=sys.stderr)
            return EXIT_USAGE
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tabled pit", description="The pit monitor: the floor's record, live model, "
        "alerts and metrics. Without an action: run the service.")
    parser.add_argument("--config", "-c", metavar="FILE")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    sub = parser.add_subparsers(dest="action", metavar="ACTION")

    def with_config(p: argparse.ArgumentParser) -> None:
        # SUPPRESS: a --config given before the action is not overwritten by a default here
        p.add_argument("--config", "-c", metavar="FILE", default=argparse.SUPPRESS)

    cc = sub.add_parser("check-config", help="validate a config file; exit 2 listing errors")
    cc.add_argument("file", metavar="FILE")
    cc.set_defaults(func=_check_config)

    st = sub.add_parser("status", help="the floor as the record has it (JSON)")
    with_config(st)
    st.add_argument("--table", metavar="SITE/TABLE")
    st.set_defaults(func=_status)

    rc = sub.add_parser("recall", help="a table's last rounds with every event (JSON lines)")
    with_config(rc)
    rc.add_argument("table", metavar="SITE/TABLE")
    rc.add_argument("--last", type=int, default=10, metavar="N")
    rc.set_defaults(func=_recall)

    al = sub.add_parser("alerts", help="alerts not closed (--all: closed too), JSON lines")
    with_config(al)
    al.add_argument("--all", action="store_true")
    al.add_argument("--limit", type=int, default=1000)
    al.set_defaults(func=_alerts)

    au = sub.add_parser("audit", help="the audit trail of one alert, or the latest entries")
    with_config(au)
    au.add_argument("alert", type=int, nargs="?", metavar="ALERT")
    au.add_argument("--limit", type=int, default=200)
    au.add_argument("--sign-in", action="store_true",
                    help="the sign-in audit instead (newest first): sign-ins, failures, "
                         "throttles, sign-outs, ended sessions")
    au.add_argument("--user", help="with --sign-in: only this user name")
    au.set_defaults(func=_audit)

    for name, text in (("ack", "acknowledge an alert (supervisor)"),
                       ("close", "close an alert (supervisor)")):
        act = sub.add_parser(name, help=text)
        with_config(act)
        act.add_argument("alert", type=int, metavar="ALERT")
        act.add_argument("--user", required=True)
        act.add_argument("--note")
        act.add_argument("--password-file", metavar="FILE",
                         help="default: ask on the terminal, or read standard input")
        act.set_defaults(func=_act)

    rp = sub.add_parser("report", help="a shift or day report from the record (html, csv, pdf)")
    with_config(rp)
    rp.add_argument("--from", dest="since", required=True, metavar="TIME",
                    help="2026-12-04T07:00 or 2026-12-04, local to [reports] timezone "
                         "unless it has an offset")
    rp.add_argument("--to", dest="until", required=True, metavar="TIME")
    rp.add_argument("--table", metavar="SITE/TABLE", help="one table (default: the floor)")
    rp.add_argument("--format", choices=("html", "csv", "pdf"), default="html")
    rp.add_argument("--output", "-o", metavar="FILE", help="default: standard output")
    rp.add_argument("--lang", choices=("zh_Hant", "en", "pt"),
                    help="default: [reports] language")
    rp.set_defaults(func=_report)

    hp = sub.add_parser("hash-password", help="print an argon2id hash for [[users]]")
    hp.set_defaults(func=_hash_password)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.action is None:
        if not args.config:
            parser.error("the service needs --config FILE")
        return _run(args)
    if args.action not in ("check-config", "hash-password") and not args.config:
        parser.error(f"{args.action} needs --config FILE")
    from tabled.contract.logs import configure

    # standard output is the command's answer (JSON); what it logs goes to standard error
    configure(args.log_level or "info", "auto", stream=sys.stderr)
    return int(args.func(args))
