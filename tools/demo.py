"""``tabled demo``: the whole table on one machine — simulated devices, the daemon, a broker —
and the outcomes shown live, as a subscriber on the broker sees them.

Owns the orchestration only: it starts ``tabled-sim`` processes for the game's devices, a
private Mosquitto when no broker is given, and ``tabled run`` with a generated config, then
subscribes to the table's topics and prints each outcome. For Q Poker it also plays the dealer
console: it signs decisions and the reveal with the shared key, like a real console. It exits 0
once N outcomes have been received, non-zero if any part fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.broker import Mosquitto
from tabled.daemon.commands import sign
from tabled.daemon.mqtt import BrokerAddress

SITE = "demo"
#: How long the demo waits for the next outcome before it gives up, seconds.
T_STALL = 60.0


class DemoError(RuntimeError):
    pass


def _spawn(args: list[str], log: Path, **kwargs: Any) -> subprocess.Popen[str]:
    with open(log, "a") as fh:
        return subprocess.Popen([sys.executable, "-m", *args], stderr=fh, text=True,
                                start_new_session=True, **kwargs)


def _stop(proc: subprocess.Popen[str] | None) -> int | None:
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stdin):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return proc.returncode


def _first_line(proc: subprocess.Popen[str], log: Path) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if ":" not in line:
        raise DemoError(f"simulator failed: {log.read_text(errors='replace')[-1500:]}")
    return line.split(":", 1)[1].strip()


def describe(outcome: dict[str, Any]) -> str:
    """One line per outcome for a person watching the table."""
    game, rnd = outcome["game"], outcome["round"]
    if outcome["status"] == "void":
        return f"round {rnd:>4}  VOID  {outcome['void_reason']}  [{outcome['article']}]"
    result, bets = outcome["result"], outcome["bets"]
    if game == "baccarat":
        if outcome.get("demo"):
            tag = "demonstration hand"
        else:
            winner = result["winner"]
            tag = "tie" if winner == "tie" else f"{winner} wins"
            if result["natural"]:
                tag += " (natural)"
        return (f"round {rnd:>4}  {tag:<22} P {' '.join(result['player_cards']):<9} = "
                f"{result['player_total']}   B {' '.join(result['banker_cards']):<9} = "
                f"{result['banker_total']}")
    if game == "craps":
        if outcome.get("no_roll"):
            return f"roll  {rnd:>4}  no roll: a die left the table  [craps.art1]"
        a, b = result["dice"]
        point = result["point_after"]
        wins = [k for k, v in bets.items() if v["result"] == "win"]
        shown = ", ".join(wins[:5]) + (f" (+{len(wins) - 5} more)" if len(wins) > 5 else "")
        return (f"roll  {rnd:>4}  {a}-{b} = {result['total']:>2}  point "
                f"{'off' if point is None else point:<3}  wins: {shown or '-'}")
    dealer = result["dealer"]
    seats = []
    for seat, info in sorted(result["seats"].items(), key=lambda kv: int(kv[0])):
        seat_bets = bets.get(seat, {})
        dobo = seat_bets.get("dobo", {})
        play = seat_bets.get("play", {})
        seats.append(f"seat {seat} {info['hand']}: dobo {dobo.get('result')}"
                     f"{' ' + dobo['pays'] if 'pays' in dobo else ''}, play {play.get('result')}"
                     f"{' ' + play['pays'] if 'pays' in play else ''}")
    qualifies = "qualifies" if dealer["qualifies"] else "does not qualify"
    return (f"round {rnd:>4}  dealer {' '.join(dealer['cards'])} {dealer['hand']} "
            f"({qualifies}) | " + " | ".join(seats))


class Console:
    """The dealer console of a Q Poker table: decisions and the reveal, signed."""

    def __init__(self, client: aiomqtt.Client, base: str, key: bytes, seed: int) -> None:
        self.client, self.base, self.key = client, base, key
        self.rng = random.Random(seed)
        self.seats: list[int] = []
        self.dealer_cards = 0
        self.armed = False  # a round_start was seen and its deal is not complete yet

    async def send(self, name: str, args: dict[str, Any]) -> None:
        body = sign({"cmd": name, "args": args, "console": "demo-console", "ts": rfc3339_now(),
                     "nonce": secrets.token_hex(16)}, self.key)
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
        elif kind in ("withheld", "hand", "card") and event.get("seat") == "dealer" \
                and not event.get("withheld") and self.armed:
            # (the rest of a deal voided midway arrives unarmed: it is not this round's)
            self.dealer_cards += int(event.get("count", len(event.get("cards", [1]))))
            if self.dealer_cards == 3:  # the deal is complete: the players decide, then reveal
                self.armed = False
                for seat in self.seats:
                    await self.send("decision", {"seat": seat, "play": self.rng.random() < 0.8})
                await self.send("reveal", {})


def run_demo(game: str, rounds: int, *, broker_url: str | None = None, seed: int = 1,
             pace: float = 0.05, workdir: str | None = None, quiet: bool = False) -> int:
    """Run the demo; returns the exit status (0 once every outcome was received)."""
    work = Path(workdir or tempfile.mkdtemp(prefix="tabled-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    table = f"{game}-1"
    base = f"tabled/{SITE}/{table}"
    broker: Mosquitto | None = None
    sim: subprocess.Popen[str] | None = None
    daemon: subprocess.Popen[str] | None = None
    say = (lambda *_: None) if quiet else print
    try:
        if broker_url is None:
            broker = Mosquitto(workdir=work / "broker")
            broker.start()
            broker_url = broker.url
            say(f"[demo] private Mosquitto broker at {broker_url}")
        address = BrokerAddress.parse(broker_url)

        device, sim_args, rules = _devices(game, rounds, seed, pace, work)
        sim = _spawn(["tabled.simulators.cli", *sim_args], work / "simulator.log",
                     stdout=subprocess.PIPE, stdin=subprocess.PIPE)
        printed = _first_line(sim, work / "simulator.log")
        if game == "craps":  # the dice simulator prints its socket, then the URL to open
            printed = _first_line(sim, work / "simulator.log")
        device["url"] = printed
        key = secrets.token_hex(32).encode()
        key_file = work / "console.key"
        key_file.write_bytes(key)
        os.chmod(key_file, 0o600)
        config = _write_config(work, game, table, broker_url, device, rules,
                               key_file if game == "qpoker" else None)
        say(f"[demo] {game}: simulator and daemon starting (work dir {work})")
        daemon = _spawn(["tabled.tools.cli", "run", "-c", str(config)], work / "daemon.log",
                        stdout=open(work / "daemon.log", "a"))  # noqa: SIM115
        seen = asyncio.run(_watch(address, base, game, rounds, key, seed, daemon, say, sim))
        say(f"[demo] {seen} outcomes published and received; journal {work / 'journal.sqlite'}")
        return 0 if seen >= rounds else 1
    finally:
        _stop(sim)
        code = _stop(daemon)
        if code not in (None, 0):
            print(f"[demo] the daemon exited with {code}; see {work / 'daemon.log'}",
                  file=sys.stderr)
        if broker is not None:
            broker.cleanup()


def _devices(game: str, rounds: int, seed: int, pace: float,
             work: Path) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
    if game == "baccarat":
        return ({"id": "shoe-1", "family": "shoe"},
                ["shoe", "--seed", str(seed), "--hands", str(rounds), "--pace", str(pace),
                 "--link", str(work / "shoe"), "--forever"],
                {"method": 1, "commission": "five_percent", "last_hand": "this", "decks": 8})
    if game == "craps":
        return ({"id": "dice-1", "family": "dice"},
                ["dice", "--seed", str(seed), "--count", str(rounds), "--pace", str(pace),
                 "--socket", str(work / "dice.sock"), "--forever"],
                {"big_bets_on_come_out": True})
    return ({"id": "shuffler-1", "family": "shuffler"},
            ["shuffler", "--game", "qpoker", "--seed", str(seed), "--rounds", str(rounds),
             "--pace", str(pace), "--link", str(work / "shuffler"), "--step", "--forever"],
            {"positions": 7})


def _write_config(work: Path, game: str, table: str, broker_url: str, device: dict[str, Any],
                  rules: dict[str, Any], key_file: Path | None) -> Path:
    def value(v: Any) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v)

    lines = ["[table]", f'site = "{SITE}"', f'id = "{table}"', f'game = "{game}"', "",
             "[rules]", *(f"{k} = {value(v)}" for k, v in rules.items()), "",
             "[[devices]]", *(f"{k} = {value(v)}" for k, v in device.items()), "",
             "[mqtt]", f'url = "{broker_url}"', "metrics_interval = 2.0", "",
             "[journal]", f'path = "{work / "journal.sqlite"}"', "",
             "[log]", 'format = "json"']
    if key_file is not None:
        lines += ["", "[commands]", "enabled = true", f'hmac_key_file = "{key_file}"']
    path = work / "tabled.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def _watch(address: BrokerAddress, base: str, game: str, rounds: int, key: bytes,
                 seed: int, daemon: subprocess.Popen[str], say: Any,
                 sim: subprocess.Popen[str]) -> int:
    seen = 0
    last = time.monotonic()
    async with aiomqtt.Client(address.host, address.port) as client:
        await client.subscribe(f"{base}/#", qos=1)
        console = Console(client, base, key, seed) if game == "qpoker" else None
        async with asyncio.timeout(None) as guard:
            async for message in client.messages:
                topic = str(message.topic)
                raw = message.payload
                body = json.loads(raw if isinstance(raw, (bytes, str)) else b"{}")
                if topic.endswith("/outcome"):
                    if console is not None:
                        console.round_over()
                    seen += 1
                    last = time.monotonic()
                    say(describe(body))
                    if seen >= rounds:
                        return seen
                    if console is not None and sim.stdin is not None:
                        sim.stdin.write("deal\n")  # the dealer presses "deal" on the machine
                        sim.stdin.flush()
                elif topic.endswith("/event") and console is not None:
                    await console.event(body)
                elif topic.endswith("/fault"):
                    say(f"[fault] {body.get('code') or body.get('type')}: "
                        f"{body.get('detail') or body.get('message') or body.get('reason')}")
                elif topic == f"{base}/status" and body.get("state") == "online":
                    say(f"[demo] table online: {body['game']} {body['options']}")
                if daemon.poll() is not None:
                    raise DemoError(f"the daemon exited with {daemon.returncode}")
                if time.monotonic() - last > T_STALL:
                    raise DemoError(f"no outcome for {T_STALL:g} s")
                guard.reschedule(asyncio.get_running_loop().time() + T_STALL)
    return seen
