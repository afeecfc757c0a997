"""``tabled floor``: a simulated casino floor on one machine, until interrupted — the README's
main job (``make demo``).

Owns the orchestration of a floor: a private Mosquitto (or ``--broker``), two tables of each game
(``--per-game``) — baccarat with card-reading shoes, craps with dice sensors on the simulated
USB bus, Q Poker with shuffler-dealers and the dealer console playing the decisions and the
reveal through :mod:`tabled.tools.console` — each a real ``tabled-sim`` and a real ``tabled run``,
and the pit (``tabled pit``) with a generated config: its record in the work directory, its web
page's address, a supervisor and a viewer whose passwords are made up and printed at start.

The devices play at a *demo pace*: ``--pace`` seconds per round at each table (default 5; a real
table takes 30 to 90 s), and each table meets one kind of fault now and then (:data:`FAULTS`),
chosen to raise the pit's alerts: a shoe unplugged for a few seconds, an unreadable card and a
dirty sensor, a cocked die, a sensor unplugged from the USB bus, a shuffler jam, a door opened
mid-deal. Every process and the temporary work directory go when the floor stops, however it
stops (:mod:`tabled.tools.procs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.contract.faults import SHUFFLER_FAILURES
from tabled.daemon.broker import free_port
from tabled.daemon.mqtt import BrokerAddress
from tabled.tools.console import AutoDealer, ConsoleError, TableConsole, keygen, load_target
from tabled.tools.demo import DemoError, first_line, tail, write_table_config
from tabled.tools.procs import Fleet, FleetError, python, say_safely
from tabled.tools.show import describe

SITE = "floor"
#: Default seconds per round at each table: lively, and still a table one can follow.
DEFAULT_PACE = 5.0
#: The web port the pit's page asks for first (a free one when it is taken).
DEFAULT_WEB_PORT = 8080
#: How long the dice and shufflers' scripts last (the shoe deals for ever): they are built
#: before the device starts, so their length is bounded; then those tables idle.
SCRIPT_HOURS = 6.0
SCRIPT_LIMITS = {"qpoker": (500, 6_000), "craps": (1_000, 50_000)}
#: Faults are planned for this many rounds (the simulators look each planned fault up for every
#: hand or roll they script, so a longer plan costs start-up time): hours at the default pace.
FAULT_ROUNDS = 2_000


def script_length(game: str, seconds_each: float) -> int:
    """Rounds (Q Poker) or rolls (craps) for SCRIPT_HOURS at one every ``seconds_each``."""
    low, high = SCRIPT_LIMITS[game]
    return max(low, min(high, int(SCRIPT_HOURS * 3600 / seconds_each)))
#: The first fault at each table comes after about this many rounds, then every FAULT_EVERY.
FIRST_FAULT, FAULT_EVERY = 3, 30


@dataclass(frozen=True)
class Game:
    """How one game's tables are simulated: the device family, the table's rules, and what
    ``--pace`` means for the device (its simulator's own ``--pace``)."""

    name: str
    short: str
    family: str
    rules: dict[str, Any]
    #: the simulator's ``--pace`` for a round of ``pace`` seconds
    device_pace: Callable[[float], float]
    #: what the banner says the tables are
    describes: str


GAMES = (
    Game("baccarat", "bac", "shoe",
         {"method": 1, "commission": "five_percent", "last_hand": "this", "decks": 8},
         lambda pace: pace / 5, "card-reading shoes"),  # 4 to 6 cards a hand
    Game("craps", "craps", "dice", {"big_bets_on_come_out": True},
         lambda pace: pace / 2, "dice sensors on the USB bus"),  # rolls come faster than hands
    Game("qpoker", "qpoker", "shuffler", {"positions": 7},
         lambda pace: pace / 20, "shuffler-dealers, dealer console"),  # ~9 messages a round
)

#: Each table's faults, by game and table index (cycling): ``(spec, unit)`` where the spec's
#: ``{n}`` is filled with the simulator's count for a round number, ``unit`` how many of the
#: simulator's counted things make a round (pulls, data frames, reports, hands).
FAULTS: dict[str, list[list[tuple[str, float]]]] = {
    # shoe: unplugged 3 s (below lost_void_after: device_lost, then connected again);
    # an unreadable card and a dirty sensor (faults the dealer deals with)
    "baccarat": [[("disconnect@{n}:3", 6.0)], [("unreadable@{n}", 5.0), ("dirty@{n}", 5.0)]],
    # dice: a cocked die (read by the face most clearly up, Art. 1); the sensor unplugged
    # from the USB bus for 2 s, and a die off the table (no roll)
    "craps": [[("cocked@{n}", 1.0)], [("unplug@{n}:2", 1.0), ("off_table@{n}", 1.0)]],
    # shuffler: a jam mid-deal (the round is void, qpoker.art11.5); the door opened mid-deal
    "qpoker": [[("jam@{n}", 5.0)], [("door@{n}", 5.0)]],
}


def fault_args(game: str, index: int, horizon: int, seed: int) -> list[str]:
    """``--fault`` options for table ``index`` of ``game``: the first after about
    FIRST_FAULT rounds, then one every about FAULT_EVERY, up to ``horizon`` rounds."""
    plan = FAULTS[game][index % len(FAULTS[game])]
    rng = random.Random(seed * 7919 + index)
    out: list[str] = []
    round_no = FIRST_FAULT + index
    while round_no < horizon:
        for spec, unit in plan:
            at = max(1, int((round_no + rng.random()) * unit))
            out += ["--fault", spec.format(n=at)]
            round_no += 1  # a table's two kinds of fault come a round apart
        round_no += FAULT_EVERY + rng.randint(-5, 5)
    return out


@dataclass
class Table:
    game: Game
    name: str
    index: int
    dir: Path
    sim: subprocess.Popen[Any] | None = None
    daemon: subprocess.Popen[Any] | None = None
    config: Path | None = None
    outcomes: int = 0
    dealt_after: int = 0
    last_outcome_at: float = 0.0


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _serving(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port),
                                                                timeout=0.3):
        return True
    return False


def run_floor(*, broker_url: str | None = None, pace: float = DEFAULT_PACE, per_game: int = 2,
              web_port: int | None = None, duration: float | None = None, faults: bool = True,
              seed: int = 1, workdir: str | None = None, quiet: bool = False) -> int:
    """Run the floor until interrupted (or for ``duration`` seconds); the exit status (0 when
    it ran its course or was stopped by SIGINT; 128 + N for signal N otherwise)."""
    if pace <= 0:
        raise DemoError("--pace must be above 0 seconds")
    if not 1 <= per_game <= 10:
        raise DemoError("--per-game is 1 to 10 tables of each game")
    return asyncio.run(_floor(broker_url, pace, per_game, web_port, duration, faults, seed,
                              workdir, quiet))


async def _floor(broker_url: str | None, pace: float, per_game: int, web_port: int | None,
                 duration: float | None, faults: bool, seed: int, workdir: str | None,
                 quiet: bool) -> int:
    def say(text: str) -> None:
        if not quiet:
            say_safely(text)

    fleet = Fleet(workdir, "tabled-floor-")
    fleet.catch_signals()
    work = fleet.dir
    tables = [Table(game, f"{game.short}-{i + 1}", i, work / f"{game.short}-{i + 1}")
              for game in GAMES for i in range(per_game)]
    try:
        own_broker = broker_url is None
        if broker_url is None:
            broker_url = fleet.start_broker()
        port = web_port or (DEFAULT_WEB_PORT if _port_free(DEFAULT_WEB_PORT) else free_port())
        if web_port is not None and not _port_free(web_port):
            raise DemoError(f"--web-port {web_port} is taken")
        for table in tables:
            _start_device(fleet, table, pace, faults, seed)
        for table in tables:
            await _connect_daemon(fleet, table, broker_url, pace)
        users = _users()
        pit_config = _write_pit_config(work, broker_url, port, users, pace)
        pit = fleet.spawn("pit", python("tabled.tools.cli", "pit", "--config", str(pit_config)),
                          log=work / "pit.log")
        _banner(say, work, fleet.keep, broker_url, own_broker, tables, pace, port, users,
                pit_config)
        async with asyncio.timeout(duration):
            try:
                await _run(fleet, tables, broker_url, pace, seed, port, pit, say)
            except BaseExceptionGroup as group:  # a part of the floor failed: say which
                raise _first(group) from None
        return 0
    except TimeoutError:  # --duration ran out
        say(f"[floor] {duration:g} s: stopping")
        return 0
    except asyncio.CancelledError:
        if fleet.signal is None:
            raise
        say(f"[floor] stopped by {signal.Signals(fleet.signal).name}: stopping the tables, the "
            "devices, the pit and the broker")
        return 0 if fleet.signal == signal.SIGINT else 128 + fleet.signal
    except FleetError as exc:
        raise DemoError(str(exc)) from None
    except aiomqtt.MqttError as exc:
        raise DemoError(f"cannot reach the broker at {broker_url}: {exc}") from None
    except ConsoleError as exc:
        raise DemoError(f"the dealer console: {exc}") from None
    finally:
        # the daemons first: each says "offline (shutdown)" while the broker and the pit listen
        fleet.stop([t.daemon for t in tables if t.daemon is not None])
        fleet.close()
        if fleet.keep:
            say_safely(f"[floor] the work dir stays: {work}")


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    """The exception that made a task group fail (not the cancellations it caused)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first(exc)
        if not isinstance(exc, asyncio.CancelledError):
            found: BaseException = exc
            return found
    return asyncio.CancelledError()


def _start_device(fleet: Fleet, table: Table, pace: float, faults: bool, seed: int) -> None:
    table.dir.mkdir(parents=True, exist_ok=True)
    game, index = table.game, table.index
    device_pace = f"{game.device_pace(pace):.3f}"
    table_seed = str(seed * 100 + index + 1)
    if game.name == "baccarat":
        args = ["shoe", "--seed", table_seed, "--pace", device_pace, "--link",
                str(table.dir / "shoe"), "--serial", f"SHOE-{table.name}", "--forever"]
        horizon = FAULT_ROUNDS  # the shoe deals shoe after shoe for ever
    elif game.name == "craps":
        rolls = script_length("craps", game.device_pace(pace))
        args = ["dice", "--seed", table_seed, "--count", str(rolls), "--pace", device_pace,
                "--socket", str(table.dir / "dice.sock"), "--serial", f"DS-{table.name}",
                "--forever"]
        horizon = rolls
    else:
        rounds = script_length("qpoker", pace)
        args = ["shuffler", "--game", "qpoker", "--seed", table_seed, "--rounds", str(rounds),
                "--pace", device_pace, "--link", str(table.dir / "shuffler"), "--step",
                "--forever"]
        horizon = rounds
    if faults:
        args += fault_args(game.name, index, min(horizon, FAULT_ROUNDS), seed)
    table.sim = fleet.spawn(f"{table.name} simulator", python("tabled.simulators.cli", *args),
                            log=table.dir / "simulator.log", stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE)


async def _connect_daemon(fleet: Fleet, table: Table, broker_url: str, pace: float) -> None:
    assert table.sim is not None
    log = table.dir / "simulator.log"
    url = await first_line(table.sim, log)
    if table.game.name == "craps":  # the dice simulator prints its socket, then the URL
        url = await first_line(table.sim, log)
    device: dict[str, Any] = {"id": f"{table.game.family}-1", "family": table.game.family,
                              "url": url, "reconnect_min": 0.2, "reconnect_max": 2.0}
    key_file = keygen(table.dir / "console.key") if table.game.name == "qpoker" else None
    table.config = write_table_config(
        table.dir / "tabled.toml", SITE, table.name, table.game.name, broker_url, device,
        table.game.rules, table.dir / "journal.sqlite", key_file,
        metrics_interval=min(5.0, max(1.0, pace)))
    table.daemon = fleet.spawn(f"{table.name} daemon",
                               python("tabled.tools.cli", "run", "-c", str(table.config)),
                               log=table.dir / "daemon.log")


def _users() -> dict[str, tuple[str, str]]:
    """name -> (role, password): made up for this run, printed at start, never written."""
    return {"supervisor": ("supervisor", secrets.token_urlsafe(9)),
            "viewer": ("viewer", secrets.token_urlsafe(9))}


def _write_pit_config(work: Path, broker_url: str, port: int,
                      users: dict[str, tuple[str, str]], pace: float) -> Path:
    from tabled.pit.auth import hash_password

    secret = work / "pit-session.secret"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    lines = ["[pit]", 'id = "floor-demo"', "", "[mqtt]", f'url = "{broker_url}"',
             'client_id = "tabled-pit-floor-demo"', f'sites = ["{SITE}"]',
             # a fresh floor each run: no session left at the broker for the next one
             "persistent_session = false", "",
             "[store]", f"sqlite = {json.dumps(str(work / 'pit.sqlite'))}", "",
             "[alerts]", f"silence_after = {max(30.0, 10 * pace):g}", "",
             "[web]", 'host = "127.0.0.1"', f"port = {port}",
             f"session_secret_file = {json.dumps(str(secret))}", "",
             "[log]", 'format = "json"']
    for name, (role, password) in users.items():
        lines += ["", "[[users]]", f'name = "{name}"', f'role = "{role}"',
                  f'password_hash = "{hash_password(password)}"']
    path = work / "pit.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _banner(say: Callable[[str], None], work: Path, keep: bool, broker_url: str,
            own_broker: bool, tables: list[Table], pace: float, port: int,
            users: dict[str, tuple[str, str]], pit_config: Path) -> None:
    address = BrokerAddress.parse(broker_url)
    by_game: dict[str, list[str]] = {}
    for table in tables:
        by_game.setdefault(table.game.name, []).append(table.name)
    qpoker = next(t for t in tables if t.game.name == "qpoker")
    say(f"tabled floor: {len(tables)} simulated tables, their daemons, a broker and the pit "
        f"(work dir {work}{'' if keep else ', removed at exit'})")
    say(f"  broker   {broker_url}{' (a private Mosquitto)' if own_broker else ''}; watch it: "
        f"mosquitto_sub -h {address.host} -p {address.port} -v -t 'tabled/#'")
    for game in GAMES:
        say(f"  {game.name:<8} {' '.join(by_game[game.name])}: {game.describes}")
    say(f"  pace     a round every ~{pace:g} s at each table (a real table: 30 to 90 s); "
        "a fault at each table now and then")
    say(f"  pit      the floor page: http://127.0.0.1:{port}/")
    say("           sign in: " + " · ".join(f"{name} / {password} ({role})"
                                          for name, (role, password) in users.items()))
    say(f"           the record: tabled pit status --config {pit_config}")
    say(f"  console  tabled console --config {qpoker.config} (a dealer console on "
        f"{qpoker.name})")
    say("Ctrl-C stops everything.")


async def _run(fleet: Fleet, tables: list[Table], broker_url: str, pace: float, seed: int,
               port: int, pit: subprocess.Popen[Any], say: Callable[[str], None]) -> None:
    address = BrokerAddress.parse(broker_url)
    by_name = {t.name: t for t in tables}
    width = max(len(t.name) for t in tables)
    async with contextlib.AsyncExitStack() as stack, asyncio.TaskGroup() as group:
        client = await stack.enter_async_context(
            aiomqtt.Client(address.host, address.port, identifier=f"tabled-floor-{os.getpid()}"))
        for topic in ("+/outcome", "+/fault", "+/status", "pit/alert"):
            await client.subscribe(f"tabled/{SITE}/{topic}", qos=1)
        for table in tables:
            if table.game.name != "qpoker":
                continue
            assert table.config is not None
            console = await stack.enter_async_context(
                TableConsole(load_target(table.config), watch=True, reconnect=True))
            dealer = AutoDealer(console, seed=seed * 100 + table.index, think=pace / 12,
                                said=_prefixed(say, f"[console] {table.name}: "))
            group.create_task(dealer.run(), name=f"dealer {table.name}")
        group.create_task(_watch_children(fleet), name="children")
        group.create_task(_unstall([t for t in tables if t.game.name == "qpoker"],
                                   max(30.0, 10 * pace), say), name="unstall")
        group.create_task(_web_page(port, pit, say), name="web")
        async for message in client.messages:
            parts = str(message.topic).split("/")
            raw = message.payload
            try:
                body = json.loads(raw if isinstance(raw, (bytes, str)) else b"")
            except ValueError:
                continue
            if not isinstance(body, dict) or len(parts) < 4:
                continue
            name, kind = parts[2], parts[3]
            if name == "pit":
                say(f"[alert] {body.get('severity'):<8} {body.get('table')}: "
                    f"{body.get('message')} ({body.get('state')})")
                continue
            found = by_name.get(name)
            if found is None:
                continue
            table = found
            if kind == "outcome":
                table.outcomes += 1
                table.last_outcome_at = time.monotonic()
                lines = describe(body).splitlines()
                say(f"{name:<{width}}  {lines[0]}")
                if table.game.name == "qpoker" and body.get("round", 0) > table.dealt_after:
                    # once per round (a QoS 1 re-delivery must not deal twice): the dealer
                    # clears the table and presses "deal" on the machine
                    table.dealt_after = int(body["round"])
                    group.create_task(_deal(table, pace / 5))
            elif kind == "fault":
                what = body.get("code") or body.get("type")
                detail = body.get("detail") or body.get("reason") or body.get("message") or ""
                say(f"{name:<{width}}  [fault] {what}: {detail}")
                if table.game.name == "qpoker" and what in SHUFFLER_FAILURES:
                    group.create_task(_after_halt(table, 2 * pace + 2, say))
            elif kind == "status" and body.get("state") in ("online", "offline"):
                say(f"{name:<{width}}  [{body['state']}] {body.get('reason') or ''}".rstrip())


def _prefixed(say: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda text: say(prefix + text)


async def _deal(table: Table, pause: float) -> None:
    await asyncio.sleep(pause)
    sim = table.sim
    if sim is not None and sim.stdin is not None and sim.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            sim.stdin.write("deal\n")
            sim.stdin.flush()


async def _after_halt(table: Table, wait: float, say: Callable[[str], None]) -> None:
    """The machine stopped (jam, failure, door). A halt mid-deal voids the round (Art. 11.5)
    and its outcome makes the dealer deal again; a halt before the round's first card voids
    nothing, so the dealer clears the machine and deals again without one."""
    seen = table.outcomes
    await asyncio.sleep(wait)
    if table.outcomes == seen:
        say(f"{table.name}  [floor] the machine is cleared: the dealer deals again")
        await _deal(table, 0)


async def _unstall(tables: list[Table], after: float, say: Callable[[str], None]) -> None:
    """A Q Poker table with no outcome for ``after`` seconds (a command lost, a halt missed):
    the dealer deals again, as at a real table (an open round is then void, Art. 11.1)."""
    for table in tables:
        table.last_outcome_at = time.monotonic()
    while True:
        await asyncio.sleep(after / 4)
        for table in tables:
            if time.monotonic() - table.last_outcome_at > after:
                table.last_outcome_at = time.monotonic()
                say(f"{table.name}  [floor] no outcome for {after:g} s: the dealer deals again")
                await _deal(table, 0)


async def _watch_children(fleet: Fleet) -> None:
    """A part of the floor that ends by itself is a fault of the demo: say which and why."""
    while True:
        await asyncio.sleep(1.0)
        for name, code in fleet.exited():
            log = {"pit": fleet.dir / "pit.log", "mosquitto": fleet.dir / "broker" /
                   "mosquitto.log"}.get(name)
            if log is None:
                table, _, part = name.partition(" ")
                log = fleet.dir / table / f"{part}.log"
            raise DemoError(f"{name} exited with {code}: {tail(log, 2500)}")


async def _web_page(port: int, pit: subprocess.Popen[Any], say: Callable[[str], None]) -> None:
    """Say once whether the pit serves its page."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and pit.poll() is None:
        if await asyncio.to_thread(_serving, port):
            say(f"[floor] the pit serves the floor page: http://127.0.0.1:{port}/")
            return
        await asyncio.sleep(0.5)
    say(f"[floor] nothing answers on http://127.0.0.1:{port}/: the pit serves no page (see "
        "pit.log in the work dir); it records and alerts all the same (tabled pit status, "
        "tabled pit alerts)")
