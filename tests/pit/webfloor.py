"""A real floor for the pit's browser tests: Mosquitto, six ``tabled run`` daemons with simulated
devices (a baccarat shoe dealing a known, seeded shoe; electronic dice; a Q Poker shuffler-dealer
with a dealer console signing decisions and reveals; two more baccarat tables and a craps table
at a person's pace), ``tabled pit`` as a subprocess serving its page, and Debian's Chromium driven
by Playwright (``/usr/bin/chromium``, never ``playwright install``, which downloads a browser of
its own).

A test module takes the fixtures by importing them (``from tests.pit.webfloor import browser,
floor, supervisor``; ``pytestmark = WEB_MARKS``): each module gets a floor of its own (module
scope). A module's ``PIT_CONFIG_EXTRA`` (a list of TOML lines, if it has one) ends the pit's
config, e.g. sections of its own; its ``PIT_ALERTS_EXTRA`` (TOML lines) ends the config's
``[alerts]`` section (which the floor writes itself); its ``SIM_EXTRA`` (a table's id → more
arguments of its simulator) changes a table's device, e.g. a short shoe.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tabled.daemon.broker import Mosquitto, free_port
from tabled.pit.auth import hash_password
from tests.integration.harness import Daemon, Simulator, write_config

playwright_sync = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
#: As root, no sandbox; and no background networking,
#: which this machine's closed network refuses many times a second.
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--disable-extensions"]
PASSWORDS = {"sam": "supervisor password", "vic": "viewer password"}
SITE = "lab"
SHOE_HANDS = 60
ENVELOPE = ("table_seq", "ts")

#: every browser test module's marks: ``pytestmark = WEB_MARKS``
WEB_MARKS = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="Debian's chromium is not installed (make system-deps)"),
    pytest.mark.timeout(240),
]


# -- the floor --------------------------------------------------------------------------------


@dataclass
class Collector:
    """Every message of the floor as a subscriber gets it, with its arrival time (paho, on a
    thread of its own: the tests and Playwright's sync API stay free of an event loop)."""

    port: int
    messages: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        import paho.mqtt.client as mqtt

        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="web-test")
        ready = threading.Event()

        def on_connect(client: Any, userdata: Any, flags: Any, rc: Any, props: Any) -> None:
            client.subscribe("tabled/#", qos=1)
            ready.set()

        def on_message(client: Any, userdata: Any, message: Any) -> None:
            try:
                body = json.loads(message.payload)
            except ValueError:
                return
            with self.lock:
                self.messages.append((time.time(), message.topic, body))

        self.client.on_connect = on_connect
        self.client.on_message = on_message
        self.client.connect("127.0.0.1", self.port)
        self.client.loop_start()
        assert ready.wait(10)

    def stop(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()

    def on(self, table: str, stream: str) -> list[tuple[float, dict[str, Any]]]:
        suffix = f"/{SITE}/{table}/{stream}"
        with self.lock:
            found: dict[int, tuple[float, dict[str, Any]]] = {}
            for at, topic, body in self.messages:
                if topic.endswith(suffix):
                    found.setdefault(body.get("table_seq", len(found)), (at, body))
        return [found[k] for k in sorted(found)]


class QPokerConsole:
    """The dealer console of the Q Poker table, on a thread with its own event loop: it signs
    the decisions and the reveal after each deal and presses "deal" after each outcome. With
    ``hold`` set it stops before the decisions (the round stays open, the dealer's cards
    withheld) until :meth:`release`."""

    def __init__(self, port: int, key: bytes, sim: Simulator) -> None:
        self.port, self.key, self.sim = port, key, sim
        self.hold = threading.Event()
        self.holding = threading.Event()  # a round is dealt and held open
        self._release = threading.Event()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def release(self) -> None:
        self.hold.clear()
        self._release.set()

    def stop(self) -> None:
        self._stop.set()
        self._release.set()
        self.thread.join(10)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # reported by the tests that need the console
            self.error = exc

    async def _run(self) -> None:
        import aiomqtt

        from tabled.tools.demo import Console

        outer = self
        base = f"tabled/{SITE}/qp-1"

        class Held(Console):
            async def send(self, name: str, args: dict[str, Any]) -> None:
                if name == "decision" and outer.hold.is_set() and not outer.holding.is_set():
                    outer.holding.set()
                    await asyncio.to_thread(outer._release.wait)
                    outer._release.clear()
                    outer.holding.clear()
                await super().send(name, args)

        async with aiomqtt.Client("127.0.0.1", self.port) as client:
            await client.subscribe(f"{base}/event", qos=1)
            await client.subscribe(f"{base}/outcome", qos=1)
            console = Held(client, base, self.key, seed=5)
            async for message in client.messages:
                if self._stop.is_set():
                    return
                body = json.loads(message.payload)  # type: ignore[arg-type]
                if str(message.topic).endswith("/event"):
                    await console.event(body)
                    continue
                console.round_over()
                assert self.sim.proc is not None and self.sim.proc.stdin is not None
                await asyncio.sleep(0.3)  # a person's pace: the page is read between rounds
                self.sim.proc.stdin.write("deal\n")
                self.sim.proc.stdin.flush()


@dataclass
class Floor:
    work: Path
    broker: Mosquitto
    collector: Collector
    daemons: dict[str, Daemon]
    sims: list[Simulator]
    console: QPokerConsole
    pit: subprocess.Popen[bytes]
    base_url: str
    config: Path
    store: Path

    def pit_log(self) -> str:
        return (self.work / "pit.log").read_text(errors="replace")[-4000:]


def _pit_config(path: Path, broker_url: str, store: Path, port: int, secret: Path,
                extra: Sequence[str] = (), alerts: Sequence[str] = ()) -> Path:
    lines = ["[pit]", 'id = "pit-web"', "", "[mqtt]", f'url = "{broker_url}"',
             "reconnect_min = 0.1", "reconnect_max = 1.0", "", "[store]", f'sqlite = "{store}"',
             "", "[alerts]", "silence_after = 60", "gap_grace = 1.0", *alerts, "",
             "[web]", 'host = "127.0.0.1"', f"port = {port}", f'session_secret_file = "{secret}"',
             "", "[log]", 'format = "json"', 'level = "info"']
    for name, role in (("sam", "supervisor"), ("vic", "viewer")):
        lines += ["", "[[users]]", f'name = "{name}"', f'role = "{role}"',
                  f'password_hash = "{hash_password(PASSWORDS[name])}"']
    lines += ["", *extra]
    path.write_text("\n".join(lines) + "\n")
    return path


def _wait(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def _dice_url(sim: Simulator) -> str:
    sim.start()  # the dice simulator prints its socket, then the URL to open
    assert sim.proc is not None and sim.proc.stdout is not None
    return sim.proc.stdout.readline().split(":", 1)[1].strip()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def floor(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
          ) -> Iterator[Floor]:
    work = tmp_path_factory.mktemp("webfloor")
    broker = Mosquitto(workdir=work / "broker")
    broker.start()
    collector = Collector(broker.port)
    collector.start()
    sims: list[Simulator] = []
    daemons: dict[str, Daemon] = {}
    pit: subprocess.Popen[bytes] | None = None
    console: QPokerConsole | None = None
    sim_extra: dict[str, list[str]] = getattr(request.module, "SIM_EXTRA", {})
    try:
        shoe = Simulator(["shoe", "--seed", "11", "--hands", str(SHOE_HANDS), "--pace", "0.002",
                          "--link", str(work / "shoe"), "--forever", *sim_extra.get("bac-1", [])],
                         work / "shoe.log")
        dice = Simulator(["dice", "--seed", "4", "--count", "100000", "--pace", "0.25",
                          "--forever", "--socket", str(work / "dice.sock"),
                          *sim_extra.get("craps-1", [])], work / "dice.log")
        shuffler = Simulator(["shuffler", "--game", "qpoker", "--seed", "7", "--rounds", "500",
                              "--pace", "0.002", "--link", str(work / "shuffler"), "--step",
                              "--forever", *sim_extra.get("qp-1", [])], work / "shuffler.log")
        # three more tables, playing at a person's pace: a floor of six, as a pit has
        shoe2 = Simulator(["shoe", "--seed", "12", "--pace", "0.12", "--link",
                           str(work / "shoe2"), "--forever", *sim_extra.get("bac-2", [])],
                          work / "shoe2.log")
        shoe3 = Simulator(["shoe", "--seed", "13", "--demo", "1", "--pace", "0.2", "--link",
                           str(work / "shoe3"), "--forever", *sim_extra.get("bac-3", [])],
                          work / "shoe3.log")
        dice2 = Simulator(["dice", "--seed", "9", "--count", "100000", "--pace", "0.7",
                           "--forever", "--socket", str(work / "dice2.sock"),
                           *sim_extra.get("craps-2", [])], work / "dice2.log")
        sims += [shoe, dice, shuffler, shoe2, shoe3, dice2]
        # the pit's config names no device: the pit starts while the simulators start, all at
        # once (each a Python start-up: in turn they took seconds); the tables only once the
        # pit serves, so that it sees each from its first message
        secret = work / "session.secret"
        secret.write_text(secrets.token_urlsafe(48))
        os.chmod(secret, 0o600)
        port = free_port()
        store = work / "pit" / "pit.sqlite"
        config = _pit_config(work / "pit.toml", broker.url, store, port, secret,
                             getattr(request.module, "PIT_CONFIG_EXTRA", ()),
                             getattr(request.module, "PIT_ALERTS_EXTRA", ()))
        with open(work / "pit.log", "ab") as log:
            pit = subprocess.Popen([sys.executable, "-m", "tabled.tools.cli", "pit", "--config",
                                    str(config)], stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        with ThreadPoolExecutor(len(sims)) as starting:
            shoe_url, dice_url, shuffler_url, shoe2_url, shoe3_url, dice2_url = starting.map(
                lambda sim: _dice_url(sim) if sim.args[0] == "dice" else sim.start(), sims)
        key = secrets.token_hex(32).encode()
        key_file = work / "console.key"
        key_file.write_bytes(key)
        os.chmod(key_file, 0o600)
        daemons["bac-1"] = Daemon(write_config(
            work / "bac.toml", game="baccarat", table="bac-1", site=SITE,
            journal=work / "bac.sqlite", broker_url=broker.url,
            devices=[{"id": "shoe-1", "family": "shoe", "url": shoe_url}]), work / "bac.log")
        daemons["craps-1"] = Daemon(write_config(
            work / "craps.toml", game="craps", table="craps-1", site=SITE,
            journal=work / "craps.sqlite", broker_url=broker.url,
            devices=[{"id": "dice-1", "family": "dice", "url": dice_url}]), work / "craps.log")
        daemons["qp-1"] = Daemon(write_config(
            work / "qp.toml", game="qpoker", table="qp-1", site=SITE,
            journal=work / "qp.sqlite", broker_url=broker.url,
            devices=[{"id": "shuffler-1", "family": "shuffler", "url": shuffler_url}],
            commands={"enabled": True, "hmac_key_file": str(key_file)}), work / "qp.log")
        for table, game, device, family, url in (
                ("bac-2", "baccarat", "shoe-1", "shoe", shoe2_url),
                ("bac-3", "baccarat", "shoe-1", "shoe", shoe3_url),
                ("craps-2", "craps", "dice-1", "dice", dice2_url)):
            daemons[table] = Daemon(write_config(
                work / f"{table}.toml", game=game, table=table, site=SITE,
                journal=work / f"{table}.sqlite", broker_url=broker.url,
                devices=[{"id": device, "family": family, "url": url}]), work / f"{table}.log")

        base_url = f"http://127.0.0.1:{port}"
        _wait(lambda: _healthy(base_url) or (pit.poll() is not None and pytest.fail(
            (work / "pit.log").read_text()[-3000:])), 30, "the pit's page")
        console = QPokerConsole(broker.port, key, shuffler)
        console.start()
        for daemon in daemons.values():
            daemon.start()
        yield Floor(work, broker, collector, daemons, sims, console, pit, base_url, config,
                    store)
    finally:
        if console is not None:
            console.stop()
        # the tables stop together (each its own graceful stop), then the pit, then the devices
        with ThreadPoolExecutor(max(1, len(daemons))) as stopping:
            list(stopping.map(lambda d: d.stop() if d.alive() else None, daemons.values()))
        if pit is not None and pit.poll() is None:
            pit.send_signal(signal.SIGTERM)
            try:
                pit.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pit.kill()
                pit.wait()
        with ThreadPoolExecutor(max(1, len(sims))) as stopping:
            list(stopping.map(Simulator.stop, sims))
        collector.stop()
        broker.stop()


# -- the browser --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(floor: Floor) -> Iterator[Any]:
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def sign_in(browser: Any, floor: Floor, name: str) -> Any:
    """A new browser context signed in as ``name``; returns its page."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    page.goto(floor.base_url + "/")
    assert "/login" in page.url  # nothing of the floor before sign-in
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("form button[type=submit]")
    page.wait_for_url(floor.base_url + "/")
    return page


@pytest.fixture(scope="module")
def supervisor(browser: Any, floor: Floor) -> Any:
    return sign_in(browser, floor, "sam")


def live(page: Any) -> None:
    """Wait until the page's live stream is connected."""
    page.wait_for_selector("#live.on", timeout=10_000)


def screenshot(page: Any, name: str, height: int = 1000) -> None:
    """``docs/images/pit-NAME.png``, 1600 px wide, when TABLED_SCREENSHOTS=1."""
    if os.environ.get("TABLED_SCREENSHOTS") != "1":
        return
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1600, "height": height})
    page.wait_for_timeout(300)
    page.screenshot(path=str(IMAGES / f"pit-{name}.png"))
    page.set_viewport_size({"width": 1600, "height": 1000})


#: Every cell, count and ask of a baccarat board on a page (the table page's, a display's),
#: for ``page.evaluate``: ``{roads: {name: {first, cells}}, counts, ask}``.
READ_BOARD = """() => {
    const out = {};
    for (const fig of document.querySelectorAll('figure.road')) {
        out[fig.dataset.roadName] = {first: +fig.dataset.firstCol, cells: []};
    }
    for (const td of document.querySelectorAll('td[data-road]')) {
        const d = td.dataset;
        const cell = {col: +d.col, row: +d.row};
        if (d.winner !== undefined) { cell.winner = d.winner; cell.banker_pair = d.bp === '1';
                                      cell.player_pair = d.pp === '1'; }
        if (d.ties !== undefined) cell.ties = +d.ties;
        if (d.color !== undefined) cell.color = d.color;
        out[d.road].cells.push(cell);
    }
    const counts = {};
    for (const li of document.querySelectorAll('[data-count]')) {
        counts[li.dataset.count] = +li.querySelector('b').textContent;
    }
    const ask = {};
    for (const side of document.querySelectorAll('[data-ask]')) {
        ask[side.dataset.ask] = {};
        for (const c of side.querySelectorAll('.ask-cell')) {
            ask[side.dataset.ask][c.dataset.road] = c.dataset.color || null;
        }
    }
    return {roads: out, counts, ask};
}"""
