"""``tabled floor``: a simulated casino floor on one machine, until interrupted — the README's
main job (``make demo``).

Owns the orchestration of a floor: a private Mosquitto (or ``--broker``) on which each client has
its own identity (:mod:`tabled.tools.broker_access`), two tables of each installed game
(``--per-game``; ``--game`` to choose) as the game's ``demo`` part says
(:class:`tabled.games.parts.demo.DemoRecipe`: baccarat with card-reading shoes, craps with dice
sensors on the simulated USB bus, Q Poker with shuffler-dealers and the dealer console playing
the decisions and the reveal through :mod:`tabled.tools.console`) — each a real ``tabled-sim``
and a real ``tabled run`` — and the pit (``tabled pit``) with a generated config: its record in
the work directory, its web page's address, a supervisor and a viewer whose passwords are made
up and printed at start.

The devices play at a *demo pace*: ``--pace`` seconds per round at each table (default 5; a real
table takes 30 to 90 s), and each table meets one kind of fault now and then (its recipe's
``faults``), chosen to raise the pit's alerts: a shoe unplugged for a few seconds, an
unreadable card and a dirty sensor, a cocked die, a sensor unplugged from the USB bus, a
shuffler jam, a door opened mid-deal. The pit starts first; a part that dies is started again
(:func:`_supervise`), and a received message the floor cannot print is shown as malformed: the
floor stops only when told to.
Every process and the temporary work directory go when the floor stops, however it stops
(:mod:`tabled.tools.procs`).
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

from tabled.daemon.broker import free_port
from tabled.daemon.mqtt import BrokerAddress
from tabled.games.parts.demo import DemoRecipe, SimulatorRun
from tabled.tools.broker_access import PIT, WATCHER, AccessError, BrokerAccess
from tabled.tools.console import AutoDealer, ConsoleError, TableConsole, keygen, load_target
from tabled.tools.demo import DemoError, playable, recipe_of, tail, url_of, write_table_config
from tabled.tools.procs import Fleet, FleetError, python, say_safely
from tabled.tools.show import describe

SITE = "floor"
#: Default seconds per round at each table: lively, and still a table one can follow.
DEFAULT_PACE = 5.0
#: The web port the pit's page asks for first (a free one when it is taken).
DEFAULT_WEB_PORT = 8080
#: How long a device's script lasts (the recipe's ``script``; a shoe deals for ever): it is
#: built before the device starts, so its length is bounded; then the table idles.
SCRIPT_HOURS = 6.0
#: Faults are planned for this many rounds (the simulators look each planned fault up for every
#: hand or roll they script, so a longer plan costs start-up time): hours at the default pace.
FAULT_ROUNDS = 2_000


def script_length(limits: tuple[int, int], seconds_each: float) -> int:
    """Steps of a script (rounds, rolls) for SCRIPT_HOURS at one every ``seconds_each``,
    within the recipe's ``limits``."""
    low, high = limits
    return max(low, min(high, int(SCRIPT_HOURS * 3600 / seconds_each)))
#: The first fault at each table comes after about this many rounds, then every FAULT_EVERY.
FIRST_FAULT, FAULT_EVERY = 3, 30
#: Seconds before a part of the floor that died is started again; doubled each time it dies
#: again within RESTART_STABLE seconds of its start, up to RESTART_MAX.
RESTART_DELAY, RESTART_STABLE, RESTART_MAX = 3.0, 30.0, 60.0
#: How long the pit has to subscribe at the broker before the tables start, seconds.
T_PIT_START = 30.0


@dataclass(frozen=True)
class Game:
    """One installed game's tables, as its demo recipe says they are simulated."""

    name: str
    recipe: DemoRecipe

    @property
    def short(self) -> str:
        return self.recipe.short or self.name

    @property
    def family(self) -> str:
        return self.recipe.family

    @property
    def rules(self) -> dict[str, Any]:
        return dict(self.recipe.options)

    @property
    def describes(self) -> str:
        return self.recipe.describes or f"{self.recipe.family} simulators"

    def device_pace(self, pace: float) -> float:
        """The simulator's ``--pace`` for a round of ``pace`` seconds."""
        return pace / self.recipe.pace_divisor


def floor_games(names: list[str] | None = None) -> tuple[Game, ...]:
    """The games of the floor: ``names`` (each must be installed and playable in the demos),
    or every installed game that declares a demo recipe."""
    return tuple(Game(name, recipe_of(name)) for name in (names or playable()))


def fault_args(recipe: DemoRecipe, index: int, horizon: int, seed: int) -> list[str]:
    """``--fault`` options for table ``index`` of a game: the first after about
    FIRST_FAULT rounds, then one every about FAULT_EVERY, up to ``horizon`` rounds."""
    if not recipe.faults:
        return []
    plan = recipe.faults[index % len(recipe.faults)]
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


@dataclass
class Part:
    """A process of the floor that is started again when it dies: its name, how to start it
    (``start`` also records the new process where the floor keeps it), its log, and the
    delay before its next start."""

    name: str
    start: Callable[[], subprocess.Popen[Any]]
    log: Path
    proc: subprocess.Popen[Any] | None = None
    started_at: float = 0.0
    delay: float = RESTART_DELAY
    restarts: int = 0

    def launch(self) -> None:
        self.proc = self.start()
        self.started_at = time.monotonic()


class Malformed(ValueError):
    """A received message the floor cannot print: the reason, for a person."""


def _port_free(port: int) -> bool:
    """Whether the pit could listen on ``port``: bound as uvicorn binds it (SO_REUSEADDR), so
    a port whose last server left connections in TIME_WAIT (the floor of a minute ago) is
    free, and one a server listens on is not."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
              seed: int = 1, workdir: str | None = None, quiet: bool = False,
              games: list[str] | None = None) -> int:
    """Run the floor until interrupted (or for ``duration`` seconds); the exit status (0 when
    it ran its course or was stopped by SIGINT; 128 + N for signal N otherwise). ``games``:
    the games whose tables it has (default: every installed game with a demo recipe)."""
    if pace <= 0:
        raise DemoError("--pace must be above 0 seconds")
    if not 1 <= per_game <= 10:
        raise DemoError("--per-game is 1 to 10 tables of each game")
    chosen = floor_games(games)
    if not chosen:
        raise DemoError("no installed game declares a demo recipe: no table to simulate")
    return asyncio.run(_floor(broker_url, pace, per_game, web_port, duration, faults, seed,
                              workdir, quiet, chosen))


async def _floor(broker_url: str | None, pace: float, per_game: int, web_port: int | None,
                 duration: float | None, faults: bool, seed: int, workdir: str | None,
                 quiet: bool, games: tuple[Game, ...]) -> int:
    def say(text: str) -> None:
        if not quiet:
            say_safely(text)

    fleet = Fleet(workdir, "tabled-floor-")
    fleet.catch_signals()
    work = fleet.dir
    tables = [Table(game, f"{game.short}-{i + 1}", i, work / f"{game.short}-{i + 1}")
              for game in games for i in range(per_game)]
    shown = Shown()
    parts: list[Part] = []
    try:
        own_broker = broker_url is None
        access: BrokerAccess | None = None
        if broker_url is None:  # each client with its own identity, as on a floor
            access = BrokerAccess()
            for table in tables:
                access.add_table(SITE, table.name, console=table.game.recipe.dealer)
            access.write(work / "broker", work / "secrets")
            broker_url = fleet.start_broker(access.config_lines(work / "broker"),
                                            allow_anonymous=False)
            broker_argv = fleet.broker_argv
            assert broker_argv is not None
            parts.append(Part("mosquitto", lambda: fleet.spawn(
                "mosquitto", broker_argv, log=work / "broker" / "mosquitto.log"),
                work / "broker" / "mosquitto.log", fleet.children[-1][1], time.monotonic()))
        if web_port is not None and not _port_free(web_port):
            raise DemoError(f"--web-port {web_port} is taken")
        port = web_port or (DEFAULT_WEB_PORT if _port_free(DEFAULT_WEB_PORT) else free_port())
        # the pit first: its subscriptions exist before any table says a word
        users = _users()
        displays = _displays(work, tables)
        pit_config = _write_pit_config(work, broker_url, port, users, pace, access, displays)
        pit = Part("pit", lambda: fleet.spawn(
            "pit", python("tabled.tools.cli", "pit", "--config", str(pit_config)),
            log=work / "pit.log"), work / "pit.log")
        logged = pit.log.stat().st_size if pit.log.exists() else 0  # (a kept work dir's)
        pit.launch()
        parts.append(pit)
        await _pit_listening(pit, logged)
        for table in tables:
            parts.append(_device_part(fleet, table, pace, faults, seed))
        for table in tables:
            parts.append(await _connect_daemon(fleet, table, broker_url, pace, access))
        _banner(say, work, fleet.keep, broker_url, own_broker, games, tables, pace, port,
                users, pit_config, access, displays)
        async with asyncio.timeout(duration):
            try:
                await _run(fleet, tables, parts, broker_url, pace, seed, port, pit, say,
                           shown, access)
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
    except (FleetError, AccessError) as exc:
        raise DemoError(str(exc)) from None
    except aiomqtt.MqttError as exc:
        raise DemoError(f"cannot reach the broker at {broker_url}: {exc}") from None
    except ConsoleError as exc:
        raise DemoError(f"the dealer console: {exc}") from None
    finally:
        if shown.malformed:
            say(f"[floor] {shown.malformed} malformed message(s) shown and skipped")
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


async def _pit_listening(pit: Part, logged: int) -> None:
    """Until the pit has subscribed at the broker (its ``broker_connected`` log line, after
    the first ``logged`` bytes of its log); a pit that exits or does not connect in time stops
    the floor: it is what the floor shows."""
    deadline = time.monotonic() + T_PIT_START
    while time.monotonic() < deadline:
        assert pit.proc is not None
        if pit.proc.poll() is not None:
            raise DemoError(f"the pit could not start (exit {pit.proc.returncode}): "
                            f"{tail(pit.log, 2500)}")
        if b'"broker_connected"' in _log_after(pit.log, logged):
            return
        await asyncio.sleep(0.1)
    raise DemoError(f"the pit did not reach the broker within {T_PIT_START:g} s: "
                    f"{tail(pit.log, 2500)}")


def _log_after(path: Path, offset: int) -> bytes:
    """What a log holds after its first ``offset`` bytes (nothing, when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read()
    except OSError:
        return b""


def _device_part(fleet: Fleet, table: Table, pace: float, faults: bool, seed: int) -> Part:
    table.dir.mkdir(parents=True, exist_ok=True)
    game, index = table.game, table.index
    recipe = game.recipe
    device_pace = f"{game.device_pace(pace):.3f}"
    table_seed = seed * 100 + index + 1
    if recipe.script is None:
        rounds, horizon = None, FAULT_ROUNDS  # it deals (or throws) for ever
    else:
        each = game.device_pace(pace) if recipe.script_unit == "device" else pace
        rounds = horizon = script_length(recipe.script, each)
    planned = fault_args(recipe, index, min(horizon, FAULT_ROUNDS), seed) if faults else []
    args = recipe.simulator_args(SimulatorRun(
        seed=table_seed, pace=device_pace, folder=str(table.dir), rounds=rounds,
        table=table.name, faults=tuple(planned[1::2])))
    name, log = f"{table.name} simulator", table.dir / "simulator.log"

    def start() -> subprocess.Popen[Any]:
        # the same device at the same path: the daemon finds it again there
        table.sim = fleet.spawn(name, python("tabled.simulators.cli", *args), log=log,
                                stdout=subprocess.PIPE, stdin=subprocess.PIPE)
        return table.sim

    part = Part(name, start, log)
    part.launch()
    return part


async def _connect_daemon(fleet: Fleet, table: Table, broker_url: str, pace: float,
                          access: BrokerAccess | None) -> Part:
    assert table.sim is not None
    log = table.dir / "simulator.log"
    url = await url_of(table.sim, log, table.game.recipe)
    device: dict[str, Any] = {"id": f"{table.game.family}-1", "family": table.game.family,
                              "url": url, "reconnect_min": 0.2, "reconnect_max": 2.0}
    key_file = keygen(table.dir / "console.key") if table.game.recipe.dealer else None
    config = table.config = write_table_config(
        table.dir / "tabled.toml", SITE, table.name, table.game.name, broker_url, device,
        table.game.rules, table.dir / "journal.sqlite", key_file,
        metrics_interval=min(5.0, max(1.0, pace)), access=access,
        fetch_key=_fetch_key(table.dir.parent))
    name, daemon_log = f"{table.name} daemon", table.dir / "daemon.log"

    def start() -> subprocess.Popen[Any]:
        table.daemon = fleet.spawn(name, python("tabled.tools.cli", "run", "-c", str(config)),
                                   log=daemon_log)
        return table.daemon

    part = Part(name, start, daemon_log)
    part.launch()
    return part


def _users() -> dict[str, tuple[str, str]]:
    """name -> (role, password): made up for this run, printed at start, never written."""
    return {"supervisor": ("supervisor", secrets.token_urlsafe(9)),
            "viewer": ("viewer", secrets.token_urlsafe(9))}


def _fetch_key(work: Path) -> Path:
    """The floor's one fetch key (``work/fetch.key``), shared by the tables and the pit, made
    the first time it is asked for."""
    path = work / "fetch.key"
    return path if path.exists() else keygen(path)


def _displays(work: Path, tables: list[Table]) -> dict[str, str]:
    """A scoreboard display for each table whose game draws one (its pit part's
    ``display_template``): table name -> the token made up for it, written to
    ``work/displays/<table>.token`` (mode 0600) for the pit's ``[[displays]] token_file``."""
    from tabled.pit.model import pit_part

    out: dict[str, str] = {}
    for table in tables:
        part = pit_part(table.game.name)
        if part is None or part.display_template is None:
            continue
        folder = work / "displays"
        folder.mkdir(mode=0o700, exist_ok=True)
        token = secrets.token_urlsafe(32)
        fd = os.open(folder / f"{table.name}.token", os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
        out[table.name] = token
    return out


def _write_pit_config(work: Path, broker_url: str, port: int,
                      users: dict[str, tuple[str, str]], pace: float,
                      access: BrokerAccess | None, displays: dict[str, str] | None = None
                      ) -> Path:
    from tabled.pit.auth import hash_password

    secret = work / "pit-session.secret"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    identity = [] if access is None else [
        f'username = "{PIT}"', f"password_file = {json.dumps(str(access.password_file(PIT)))}"]
    lines = ["[pit]", 'id = "floor-demo"', "", "[mqtt]", f'url = "{broker_url}"',
             'client_id = "tabled-pit-floor-demo"', f'sites = ["{SITE}"]', *identity,
             # a fresh floor each run: no session left at the broker for the next one
             "persistent_session = false", "",
             "[store]", f"sqlite = {json.dumps(str(work / 'pit.sqlite'))}", "",
             "[alerts]", f"silence_after = {max(30.0, 10 * pace):g}", "",
             "[web]", 'host = "127.0.0.1"', f"port = {port}",
             f"session_secret_file = {json.dumps(str(secret))}", "",
             "[log]", 'format = "json"']
    # the floor's fetch key: the tables serve their journals to the pit, which fetches what
    # its record lacks (docs/pit.md "Reconciliation")
    lines += ["", "[reconcile]", f"hmac_key_file = {json.dumps(str(_fetch_key(work)))}"]
    for name, (role, password) in users.items():
        lines += ["", "[[users]]", f'name = "{name}"', f'role = "{role}"',
                  f'password_hash = "{hash_password(password)}"']
    # the scoreboard beside each table that has one, in the floor's language
    for table in displays or {}:
        token_file = work / "displays" / f"{table}.token"
        lines += ["", "[[displays]]", f'table = "{SITE}/{table}"',
                  f"token_file = {json.dumps(str(token_file))}"]
    path = work / "pit.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _banner(say: Callable[[str], None], work: Path, keep: bool, broker_url: str,
            own_broker: bool, games: tuple[Game, ...], tables: list[Table], pace: float,
            port: int,
            users: dict[str, tuple[str, str]], pit_config: Path,
            access: BrokerAccess | None, displays: dict[str, str] | None = None) -> None:
    address = BrokerAddress.parse(broker_url)
    by_game: dict[str, list[str]] = {}
    for table in tables:
        by_game.setdefault(table.game.name, []).append(table.name)
    console = next((t for t in tables if t.game.recipe.dealer), None)
    say(f"tabled floor: {len(tables)} simulated tables, their daemons, a broker and the pit "
        f"(work dir {work}{'' if keep else ', removed at exit'})")
    login = "" if access is None else f"-u {WATCHER} -P {access.passwords[WATCHER]} "
    private = " (a private Mosquitto: each table, console and the pit its own identity)"
    say(f"  broker   {broker_url}{private if own_broker else ''}")
    say(f"           watch it: mosquitto_sub -h {address.host} -p {address.port} {login}-v "
        f"-t 'tabled/#'" + ("" if access is None else " (a read-only watcher)"))
    for game in games:
        say(f"  {game.name:<8} {' '.join(by_game[game.name])}: {game.describes}")
    say(f"  pace     a round every ~{pace:g} s at each table (a real table: 30 to 90 s); "
        "a fault at each table now and then; a table that dies is started again")
    say(f"  pit      the floor page: http://127.0.0.1:{port}/")
    say("           sign in: " + " · ".join(f"{name} / {password} ({role})"
                                          for name, (role, password) in users.items()))
    say(f"           the record: tabled pit status --config {pit_config}")
    for number, (shown, token) in enumerate((displays or {}).items()):
        say(f"  {'display' if number == 0 else '':<8} {shown}'s scoreboard, no sign-in: "
            f"http://127.0.0.1:{port}/display/{SITE}/{shown}?token={token}")
    if console is not None:
        say(f"  console  tabled console --config {console.config} (a dealer console on "
            f"{console.name})")
    say("Ctrl-C stops everything.")


@dataclass
class Shown:
    """What the floor counted of the messages it printed."""

    malformed: int = 0


async def _run(fleet: Fleet, tables: list[Table], parts: list[Part], broker_url: str,
               pace: float, seed: int, port: int, pit: Part, say: Callable[[str], None],
               shown: Shown, access: BrokerAccess | None) -> None:
    address = BrokerAddress.parse(broker_url)
    by_name = {t.name: t for t in tables}
    width = max(len(t.name) for t in tables)
    user, password = (None, None) if access is None else (WATCHER, access.passwords[WATCHER])
    async with contextlib.AsyncExitStack() as stack, asyncio.TaskGroup() as group:
        for table in tables:
            if not table.game.recipe.dealer:
                continue
            assert table.config is not None
            console = await stack.enter_async_context(
                TableConsole(load_target(table.config), watch=True, reconnect=True))
            dealer = AutoDealer(console, seed=seed * 100 + table.index, think=pace / 12,
                                said=_prefixed(say, f"[console] {table.name}: "))
            group.create_task(dealer.run(), name=f"dealer {table.name}")
        group.create_task(_supervise(fleet, parts, say, group), name="children")
        group.create_task(_unstall([t for t in tables if t.game.recipe.deal is not None],
                                   max(30.0, 10 * pace), say), name="unstall")
        group.create_task(_web_page(port, pit, say), name="web")
        connected = False
        while True:  # the broker may be started again: so is this connection
            try:
                async with aiomqtt.Client(address.host, address.port, username=user,
                                          password=password,
                                          identifier=f"tabled-floor-{os.getpid()}") as client:
                    for topic in ("+/outcome", "+/fault", "+/status", "pit/alert"):
                        await client.subscribe(f"tabled/{SITE}/{topic}", qos=1)
                    if connected:
                        say("[floor] connected to the broker again")
                    connected = True
                    async for message in client.messages:
                        topic, raw = str(message.topic), message.payload
                        try:
                            _show(topic, raw, by_name, width, pace, say, group)
                        except Exception as exc:  # any message it cannot print: shown, never fatal
                            shown.malformed += 1
                            say(f"[floor] malformed message on {topic} ({_reason(exc)}); "
                                f"skipped ({shown.malformed} so far)")
            except aiomqtt.MqttError as exc:
                if not connected:
                    raise
                say(f"[floor] lost the broker ({exc}); connecting again")
                await asyncio.sleep(1.0)


def _reason(exc: Exception) -> str:
    if isinstance(exc, Malformed):
        return str(exc)
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}" if exc.args else "a field is missing"
    return f"{type(exc).__name__}: {exc}"


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise Malformed(f"{key!r} is {'missing' if value is None else type(value).__name__}, "
                        "not text")
    return value


def _show(topic: str, raw: Any, by_name: dict[str, Table], width: int, pace: float,
          say: Callable[[str], None], group: asyncio.TaskGroup) -> None:
    """Print one received message (and act on it); Malformed (or any error) when it is not
    what its topic promises."""
    parts = topic.split("/")
    if len(parts) < 4:
        return
    try:
        body = json.loads(raw if isinstance(raw, (bytes, bytearray, str)) else b"")
    except ValueError:
        raise Malformed("not JSON") from None
    if not isinstance(body, dict):
        raise Malformed(f"a JSON {type(body).__name__}, not an object")
    name, kind = parts[2], parts[3]
    if name == "pit":
        severity, table_name = _text(body, "severity"), _text(body, "table")
        text, now = _text(body, "message"), _text(body, "state")
        say(f"[alert] {severity:<8} {table_name}: {text} ({now})")
        return
    table = by_name.get(name)
    if table is None:
        return
    if kind == "outcome":
        number = body.get("round")
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise Malformed(f"round {number!r} is not a round number")
        if body.get("game") != table.game.name:
            raise Malformed(f"game {body.get('game')!r} is not {table.name}'s")
        lines = describe(body).splitlines()
        say(f"{name:<{width}}  {lines[0]}")
        table.outcomes += 1
        table.last_outcome_at = time.monotonic()
        if table.game.recipe.deal is not None and number > table.dealt_after:
            # once per round (a QoS 1 re-delivery must not deal twice): the dealer clears the
            # table and presses "deal" on the machine
            table.dealt_after = number
            group.create_task(_deal(table, pace / 5))
    elif kind == "fault":
        what = body.get("code") or body.get("type")
        if not isinstance(what, str):
            raise Malformed("a fault without a code")
        detail = body.get("detail") or body.get("reason") or body.get("message") or ""
        say(f"{name:<{width}}  [fault] {what}: {detail}")
        if what in table.game.recipe.halts:
            group.create_task(_after_halt(table, 2 * pace + 2, say))
    elif kind == "status":
        state, said = body.get("state"), body.get("reason")
        if isinstance(state, str) and state in ("online", "offline"):
            why = said if isinstance(said, str) else ""
            say(f"{name:<{width}}  [{state}] {why}".rstrip())


def _prefixed(say: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda text: say(prefix + text)


async def _deal(table: Table, pause: float) -> None:
    await asyncio.sleep(pause)
    sim, deal = table.sim, table.game.recipe.deal
    if deal is not None and sim is not None and sim.stdin is not None and sim.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            sim.stdin.write(deal + "\n")
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
    """A table dealt on the dealer's word (Q Poker) with no outcome for ``after`` seconds (a
    command lost, a halt missed): the dealer deals again, as at a real table (an open round
    is then void, Art. 11.1)."""
    for table in tables:
        table.last_outcome_at = time.monotonic()
    while True:
        await asyncio.sleep(after / 4)
        for table in tables:
            if time.monotonic() - table.last_outcome_at > after:
                table.last_outcome_at = time.monotonic()
                say(f"{table.name}  [floor] no outcome for {after:g} s: the dealer deals again")
                await _deal(table, 0)


async def _supervise(fleet: Fleet, parts: list[Part], say: Callable[[str], None],
                    group: asyncio.TaskGroup) -> None:
    """A part of the floor that ends by itself (a daemon killed, a simulator crashed) is said,
    with the end of its log, and started again after RESTART_DELAY seconds, twice as long each
    time it dies again within RESTART_STABLE seconds of its start (at most RESTART_MAX): the
    pit shows the table offline, alerted, then back, while the rest of the floor plays on."""
    while True:
        await asyncio.sleep(0.5)
        for part in parts:
            proc = part.proc
            if proc is None or proc.poll() is None:
                continue
            code = proc.returncode
            fleet.reap(proc)
            part.proc = None
            ran = time.monotonic() - part.started_at
            part.delay = (RESTART_DELAY if part.restarts == 0 or ran >= RESTART_STABLE
                          else min(RESTART_MAX, part.delay * 2))
            how = f"exited with {code}"
            if code < 0:
                with contextlib.suppress(ValueError):
                    how = f"killed by {signal.Signals(-code).name}"
            last = tail(part.log, 300).strip().splitlines()
            said = f"; its log ends: {last[-1][:200]}" if last and code >= 0 else ""
            say(f"[floor] {part.name} {how} after {ran:.0f} s{said}: starting it again in "
                f"{part.delay:g} s")
            group.create_task(_restart(part, say), name=f"restart {part.name}")


async def _restart(part: Part, say: Callable[[str], None]) -> None:
    await asyncio.sleep(part.delay)
    try:
        part.launch()
    except FleetError as exc:  # could not even start: tried again after the next delay
        say(f"[floor] {exc}")
        part.started_at = time.monotonic()
        part.proc = None
        part.restarts += 1
        part.delay = min(RESTART_MAX, part.delay * 2)
        await _restart(part, say)
        return
    part.restarts += 1
    say(f"[floor] {part.name} started again (restart {part.restarts})")


async def _web_page(port: int, pit: Part, say: Callable[[str], None]) -> None:
    """Say once whether the pit serves its page."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and pit.proc is not None and pit.proc.poll() is None:
        if await asyncio.to_thread(_serving, port):
            say(f"[floor] the pit serves the floor page: http://127.0.0.1:{port}/")
            return
        await asyncio.sleep(0.5)
    say(f"[floor] nothing answers on http://127.0.0.1:{port}/: the pit serves no page (see "
        "pit.log in the work dir); it records and alerts all the same (tabled pit status, "
        "tabled pit alerts)")
