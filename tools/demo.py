"""``tabled demo``: the whole table on one machine — simulated devices, the daemon, a broker —
and the outcomes shown live, as a subscriber on the broker sees them.

Owns the orchestration only: it starts ``tabled-sim`` processes for the game's devices, a
private Mosquitto when no broker is given, and ``tabled run`` with a generated config, then
subscribes to the table's topics and prints each outcome. What a game's table gets (its device
family and simulator, options, how its rounds are dealt) is the game's ``demo`` part
(:class:`tabled.games.parts.demo.DemoRecipe`, through the registry): the demo names no game.
Where a dealer console plays the rounds (Q Poker) it does so through
:mod:`tabled.tools.console` — the code ``tabled console`` runs — with the key and the
``[console]`` section of the generated config. It exits 0 once N outcomes have been
received, non-zero if any part fails; however it ends (N outcomes, an error, SIGINT, SIGTERM,
SIGHUP, even SIGKILL: see :mod:`tabled.tools.procs`) its processes are stopped and its
temporary work directory removed (unless ``--workdir`` named it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.daemon.mqtt import BrokerAddress
from tabled.games import registry
from tabled.games.parts.demo import DemoRecipe, SimulatorRun
from tabled.tools.broker_access import WATCHER, AccessError, BrokerAccess, console_user, daemon_user
from tabled.tools.console import (
    ROUND_COMMANDS,
    AutoDealer,
    TableConsole,
    command_body,
    keygen,
    load_target,
)
from tabled.tools.errors import ToolError
from tabled.tools.procs import Fleet, FleetError, python, say_safely
from tabled.tools.show import BetsShown, describe

__all__ = ["Console", "DemoError", "describe", "playable", "recipe_of", "run_demo"]

SITE = "demo"
#: How long the demo waits for the next outcome before it gives up, seconds.
T_STALL = 60.0
#: How long a simulator has to say where it serves, seconds.
T_SIM_START = 30.0


class DemoError(ToolError, RuntimeError):
    pass


def recipe_of(game: str) -> DemoRecipe:
    """Game ``game``'s demo recipe (its ``demo`` part); DemoError for a game not installed or
    one that declares none."""
    try:
        found = registry.part(game, "demo")
    except (registry.UnknownGame, registry.BadGame) as exc:
        raise DemoError(str(exc)) from None
    if not isinstance(found, DemoRecipe):
        raise DemoError(f"{game} cannot be played in the demos: its declaration names no "
                        "demo part (tabled.games.parts.demo.DemoRecipe)")
    return found


def playable() -> list[str]:
    """The installed games that declare a demo recipe, by name; DemoError for a game that
    does not load (it names itself)."""
    try:
        return [name for name in registry.games()
                if isinstance(registry.part(name, "demo"), DemoRecipe)]
    except registry.BadGame as exc:
        raise DemoError(str(exc)) from None


def tail(log: Path, size: int = 1500) -> str:
    """The end of a child's log, for an error message."""
    try:
        return log.read_text(errors="replace")[-size:]
    except OSError:
        return f"(no {log.name})"


async def first_line(proc: subprocess.Popen[str], log: Path) -> str:
    """The value of the ``name: value`` line a simulator prints first."""
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(T_SIM_START):
            line = (await asyncio.to_thread(proc.stdout.readline)).strip()
    except TimeoutError:
        raise DemoError(f"the simulator said nothing for {T_SIM_START:g} s: {tail(log)}"
                        ) from None
    if ":" not in line:
        raise DemoError(f"simulator failed: {tail(log)}")
    return line.split(":", 1)[1].strip()


class Console:
    """A dealer console on a connection the caller owns, for test rigs that watch the table
    themselves (tests/campaigns): decides and reveals once a deal is complete, publishing each
    command as :func:`tabled.tools.console.command_body` signs it, without waiting for replies.
    Each decision and reveal names the round whose deal it saw (the ``round`` its round_start
    was published with): one that arrives late, in the next round, is declined there. The
    demos use :class:`tabled.tools.console.AutoDealer` instead."""

    def __init__(self, client: aiomqtt.Client, base: str, key: bytes, seed: int) -> None:
        self.client, self.base, self.key = client, base, key
        self.rng = random.Random(seed)
        self.seats: list[int] = []
        self.dealer_cards = 0
        self.armed = False  # a round_start was seen and its deal is not complete yet
        self.round: int | None = None  # the round of that round_start

    async def send(self, name: str, args: dict[str, Any]) -> None:
        """Publish a command; a decision, reveal or void for the round last begun."""
        if name in ROUND_COMMANDS and self.round is not None:
            args = {"round": self.round, **args}
        body = command_body(name, args, "demo-console", self.key)
        await self.client.publish(f"{self.base}/cmd/{name}", json.dumps(body), qos=1)

    def round_over(self) -> None:
        """An outcome came: whatever of that round still arrives (the rest of a deal voided
        midway) is not to be decided on."""
        self.armed = False

    async def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "round_start":
            self.seats = list(event.get("seats") or [])
            self.dealer_cards = 0
            self.armed = True
            named = event.get("round")
            self.round = named if isinstance(named, int) and not isinstance(named, bool) else None
        elif kind in ("withheld", "hand", "card") and event.get("seat") == "dealer" \
                and not event.get("withheld") and self.armed:
            self.dealer_cards += int(event.get("count", len(event.get("cards", [1]))))
            if self.dealer_cards == 3:  # the deal is complete: the players decide, then reveal
                self.armed = False
                for seat in self.seats:
                    await self.send("decision", {"seat": seat, "play": self.rng.random() < 0.8})
                await self.send("reveal", {})


def run_demo(game: str, rounds: int, *, broker_url: str | None = None, seed: int = 1,
             pace: float = 0.05, workdir: str | None = None, quiet: bool = False,
             bets: BetsShown = "main") -> int:
    """Run the demo; returns the exit status (0 once every outcome was received; 128 + N
    when signal N stopped it)."""
    if rounds < 1:
        raise DemoError("--rounds must be at least 1")
    return asyncio.run(_demo(game, rounds, broker_url, seed, pace, workdir, quiet, bets))


async def _demo(game: str, rounds: int, broker_url: str | None, seed: int, pace: float,
                workdir: str | None, quiet: bool, bets: BetsShown) -> int:
    def say(text: str) -> None:
        if not quiet:
            say_safely(text)

    fleet = Fleet(workdir, "tabled-demo-")
    fleet.catch_signals()
    work = fleet.dir
    table = f"{game}-1"
    daemon: subprocess.Popen[Any] | None = None
    try:
        recipe = recipe_of(game)
        access: BrokerAccess | None = None
        if broker_url is None:  # a private broker: each client with its own identity
            access = BrokerAccess()
            access.add_table(SITE, table, console=recipe.dealer)
            access.write(work / "broker", work / "secrets")
            broker_url = fleet.start_broker(access.config_lines(work / "broker"),
                                            allow_anonymous=False)
            say(f"[demo] private Mosquitto broker at {broker_url} (anonymous clients refused)")
        address = BrokerAddress.parse(broker_url)
        device: dict[str, Any] = {"id": recipe.device_id, "family": recipe.family}
        run = SimulatorRun(seed=seed, pace=str(pace), folder=str(work), rounds=rounds)
        sim = fleet.spawn("simulator", python("tabled.simulators.cli",
                                              *recipe.simulator_args(run)),
                          log=work / "simulator.log", stdout=subprocess.PIPE,
                          stdin=subprocess.PIPE)
        device["url"] = await url_of(sim, work / "simulator.log", recipe)
        key_file = keygen(work / "console.key") if recipe.dealer else None
        config = write_table_config(work / "tabled.toml", SITE, table, game, broker_url, device,
                                    dict(recipe.options), work / "journal.sqlite", key_file,
                                    access=access)
        say(f"[demo] {game}: simulator and daemon starting (work dir {work})")
        daemon = fleet.spawn("daemon", python("tabled.tools.cli", "run", "-c", str(config)),
                             log=work / "daemon.log")
        watcher = None if access is None else (WATCHER, access.passwords[WATCHER])
        seen = await _watch(address, f"tabled/{SITE}/{table}", recipe, rounds, seed, daemon,
                            say, sim, config, bets, watcher)
        where = (f"journal {work / 'journal.sqlite'}" if fleet.keep else
                 "the work dir is removed at exit; --workdir DIR keeps its journal and logs")
        say(f"[demo] {seen} outcomes published and received; {where}")
        return 0 if seen >= rounds else 1
    except asyncio.CancelledError:
        if fleet.signal is None:
            raise
        say(f"[demo] stopped by {signal.Signals(fleet.signal).name}: stopping the simulator, "
            "the daemon and the broker")
        return 128 + fleet.signal
    except (FleetError, AccessError) as exc:
        raise DemoError(str(exc)) from None
    except aiomqtt.MqttError as exc:
        raise DemoError(f"cannot reach the broker at {broker_url}: {exc}") from None
    finally:
        code = None
        if daemon is not None:
            fleet.stop([daemon])
            code = daemon.returncode
        fleet.close()
        if code not in (None, 0, -15) and fleet.signal is None:
            say_safely(f"[demo] the daemon exited with {code}"
                       + (f"; see {work / 'daemon.log'}" if fleet.keep else ""))


async def url_of(proc: subprocess.Popen[str], log: Path, recipe: DemoRecipe) -> str:
    """What the family's ``open`` takes to reach the simulated device: the value of the
    recipe's ``url_line``-th line the simulator prints (the dice simulator: its socket, then
    the URL to open)."""
    printed = await first_line(proc, log)
    for _ in range(recipe.url_line - 1):
        printed = await first_line(proc, log)
    return printed


def write_table_config(path: Path, site: str, table: str, game: str, broker_url: str,
                       device: dict[str, Any], rules: dict[str, Any], journal: Path,
                       key_file: Path | None, *, metrics_interval: float = 2.0,
                       access: BrokerAccess | None = None,
                       fetch_key: Path | None = None) -> Path:
    """One table's config; with ``key_file``, commands on and the ``[console]`` the dealer
    console of the demos reads (the name it signs with); with ``access``, the daemon's and the
    console's own broker identities (each a user and a password file); with ``fetch_key``, the
    table serves its journal on ``…/fetch`` to a pit holding the same key (docs/mqtt.md)."""
    def value(v: Any) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v)

    def identity(user: str) -> list[str]:
        if access is None:
            return []
        return [f'username = "{user}"',
                f"password_file = {json.dumps(str(access.password_file(user)))}"]

    lines = ["[table]", f'site = "{site}"', f'id = "{table}"', f'game = "{game}"', "",
             "[rules]", *(f"{k} = {value(v)}" for k, v in rules.items()), "",
             "[[devices]]", *(f"{k} = {value(v)}" for k, v in device.items()), "",
             "[mqtt]", f'url = "{broker_url}"', f"metrics_interval = {metrics_interval}",
             *identity(daemon_user(table)), "",
             "[journal]", f"path = {json.dumps(str(journal))}", "",
             "[log]", 'format = "json"']
    if key_file is not None:
        lines += ["", "[commands]", "enabled = true",
                  f"hmac_key_file = {json.dumps(str(key_file))}",
                  "", "[console]", f'id = "console-{table}"', *identity(console_user(table))]
    if fetch_key is not None:
        lines += ["", "[fetch]", f"hmac_key_file = {json.dumps(str(fetch_key))}"]
    path.write_text("\n".join(lines) + "\n")
    return path


async def _watch(address: BrokerAddress, base: str, recipe: DemoRecipe, rounds: int, seed: int,
                 daemon: subprocess.Popen[Any], say: Any, sim: subprocess.Popen[str],
                 config: Path, bets: BetsShown, watcher: tuple[str, str] | None) -> int:
    seen = 0
    user, password = watcher or (None, None)
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(aiomqtt.Client(
            address.host, address.port, username=user, password=password))
        await client.subscribe(f"{base}/#", qos=1)
        if recipe.dealer:  # the dealer console, on its own connection, as at a table
            console = await stack.enter_async_context(
                TableConsole(load_target(config), watch=True, reconnect=True))
            dealer = AutoDealer(console, seed=seed, said=lambda text: say(f"[console] {text}"))
            task = asyncio.create_task(dealer.run(), name="dealer")
            stack.callback(task.cancel)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(T_STALL) as guard:
                async for message in client.messages:
                    topic = str(message.topic)
                    raw = message.payload
                    body = json.loads(raw if isinstance(raw, (bytes, str)) else b"{}")
                    if topic.endswith("/outcome"):
                        seen += 1
                        guard.reschedule(loop.time() + T_STALL)
                        say(describe(body, bets))
                        if seen >= rounds:
                            return seen
                        if recipe.deal is not None and sim.stdin is not None:
                            # the dealer presses "deal" on the machine
                            sim.stdin.write(recipe.deal + "\n")
                            sim.stdin.flush()
                    elif topic.endswith("/fault"):
                        say(f"[fault] {body.get('code') or body.get('type')}: "
                            f"{body.get('detail') or body.get('message') or body.get('reason')}")
                    elif topic == f"{base}/status" and body.get("state") == "online":
                        say(f"[demo] table online: {body['game']} {body['options']}")
                    if daemon.poll() is not None:
                        raise DemoError(f"the daemon exited with {daemon.returncode}")
        except TimeoutError:
            raise DemoError(f"no outcome for {T_STALL:g} s") from None
    return seen

