"""``tabled console`` end to end (issue 10, item 1): real Mosquitto, a real ``tabled run`` Q Poker
daemon with a simulated shuffler, and the console as a real subprocess — one-shot and through a
pseudo-terminal — with a key that ``tabled console keygen`` made.

1. keygen writes 64 hex characters and a newline, mode 0600, and never overwrites a key;
2. one-shot decisions and the reveal settle a round (exit 0), and a command the rules decline
   (a decision with no round open) exits 1 and says why;
3. a console with the wrong key is refused (``forged``), exit 1, and the daemon reports it;
4. the console's broker identity is its own: with the ACL, the console identity's command is
   answered, and the same console configured with the daemon's identity gets no reply (the
   broker drops it) and says so;
5. the interactive console, on a pty, shows the round, takes keystrokes, plays it to its
   outcome, and never shows a dealer's card before the outcome;
6. ``check-config`` warns (exit 0) when a Q Poker table has commands disabled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tabled.daemon.broker import Mosquitto
from tests.integration.harness import Daemon, Simulator, Subscriber, write_config
from tests.integration.tls import example_acl, password_file, secret_file
from tests.waiting import until

BASE = "tabled/lab/t1"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def tabled(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)


def keygen(path: Path) -> Path:
    proc = tabled("console", "keygen", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


def table(tmp_path: Path, broker: Mosquitto, *sim_args: str, console: str = "",
          mqtt: dict[str, str] | None = None) -> tuple[Simulator, Daemon, Path]:
    """A Q Poker table: shuffler (waiting for "deal" after each round), daemon, config with a
    ``[console]`` section."""
    sim = Simulator(["shuffler", "--game", "qpoker", "--link", str(tmp_path / "shuffler"),
                     "--step", "--pace", "0.005", *sim_args], tmp_path / "sim.log")
    path = sim.start()
    key = keygen(tmp_path / "console.key")
    config = write_config(tmp_path / "tabled.toml", game="qpoker",
                          journal=tmp_path / "journal.sqlite", broker_url=broker.url,
                          devices=[{"id": "shuffler-1", "family": "shuffler", "url": path}],
                          commands={"enabled": True, "hmac_key_file": str(key)}, mqtt=mqtt)
    config.write_text(config.read_text() + "\n[console]\n" + console)
    return sim, Daemon(config, tmp_path / "daemon.log"), config


async def dealt(sub: Subscriber, rounds: int = 1, timeout: float = 30) -> None:
    """Until the dealer's three cards of round ``rounds`` were dealt (published withheld)."""
    deadline = time.monotonic() + timeout
    while sum(1 for e in sub.on("/event") if e.get("type") == "withheld"
              and e.get("seat") == "dealer") < rounds:
        assert time.monotonic() < deadline, sub.on("/event")
        await sub.wait_for("/event", len(sub.on("/event")) + 1, timeout=timeout)


def test_keygen_writes_a_key_the_daemon_reads_mode_0600_and_never_overwrites(
        tmp_path: Path) -> None:
    key = keygen(tmp_path / "k")
    assert os.stat(key).st_mode & 0o777 == 0o600
    text = key.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", text)
    again = tabled("console", "keygen", "--out", str(key))
    assert again.returncode == 2 and "exists" in again.stderr
    assert key.read_text() == text
    forced = tabled("console", "keygen", "--out", str(key), "--force")
    assert forced.returncode == 0 and key.read_text() != text
    assert text.strip() not in again.stdout + again.stderr + forced.stdout + forced.stderr


async def test_one_shot_decisions_and_the_reveal_settle_a_round(tmp_path: Path,
                                                               broker: Mosquitto) -> None:
    sim, daemon, config = table(tmp_path, broker, "--seed", "5", "--rounds", "1",
                                "--seats", "1,3")
    key = (tmp_path / "console.key").read_text().strip()
    try:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub:
            daemon.start()
            await dealt(sub)
            play = tabled("console", "--config", str(config), "decision", "--seat", "1", "--play")
            fold = tabled("console", "decision", "--seat", "3", "--fold", "--config", str(config),
                          "--round", "1")
            # a reveal that names another round than the open one is declined, and changes
            # nothing (one that came late, after its round, would otherwise end this one)
            early = tabled("console", "--config", str(config), "reveal", "--round", "2")
            reveal = tabled("console", "--config", str(config), "reveal", "--round", "1")
            late = tabled("console", "--config", str(config), "decision", "--seat", "1",
                          "--play")
            outcome = (await sub.wait_for("/outcome", 1, alive=daemon))[0]
    finally:
        sim.stop()
        assert daemon.stop() == 0
    for proc in (play, fold, reveal):
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert play.stdout.strip() == "seat 1 play: ok"
    assert fold.stdout.strip() == "seat 3 fold: ok"
    assert reveal.stdout.strip() == "reveal: ok (round 1 settled)"
    assert early.returncode == 1 and "declined by the rules: for_another_round: a reveal for " \
        "round 2, while round 1 is open" in early.stdout
    assert late.returncode == 1 and "declined by the rules: decision_without_round" in late.stdout
    assert outcome["status"] == "complete"
    assert outcome["bets"]["3"]["play"]["result"] == "fold"
    assert outcome["bets"]["1"]["play"]["result"] != "fold"
    decisions = [e for e in sub.on("/event") if e["type"] in ("decision", "reveal")]
    assert {e["source"] for e in decisions} == {"console:console-t1"}
    everything = "".join(p.stdout + p.stderr for p in (play, fold, reveal, late))
    assert key not in everything and key not in daemon.log_path.read_text()


async def test_a_console_with_the_wrong_key_is_refused(tmp_path: Path,
                                                       broker: Mosquitto) -> None:
    wrong = keygen(tmp_path / "wrong.key")
    sim, daemon, config = table(tmp_path, broker, "--seed", "5", "--rounds", "1",
                                console=f'hmac_key_file = "{wrong}"\n')
    try:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub:
            daemon.start()
            await dealt(sub)
            reveal = tabled("console", "--config", str(config), "reveal")
            deadline = time.monotonic() + 20
            while not [f for f in sub.on("/fault") if f["type"] == "command_rejected"]:
                assert time.monotonic() < deadline, sub.on("/fault")
                await sub.wait_for("/fault", len(sub.on("/fault")) + 1, alive=daemon)
            rejected = [f for f in sub.on("/fault") if f["type"] == "command_rejected"]
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert reveal.returncode == 1
    assert reveal.stdout.startswith("reveal: refused: forged")
    assert [(f["command"], f["reason"]) for f in rejected] == [("reveal", "forged")]
    assert not sub.on("/outcome")


async def test_the_console_speaks_as_its_own_broker_identity(tmp_path: Path) -> None:
    """With the example ACL, the console identity's command reaches the daemon and its reply
    comes back; configured with the daemon's identity, the broker drops the command (the
    daemon's identity may not publish commands) and the console says what to check."""
    passwords = {"tabled-t1": "daemon-secret", "console-t1": "console-secret"}
    pw = password_file(tmp_path / "passwd", passwords)
    acl = example_acl(tmp_path / "tabled.acl")
    for name, secret in passwords.items():
        secret_file(tmp_path / f"{name}.password", secret)
    broker = Mosquitto(workdir=tmp_path / "broker", allow_anonymous=False,
                       extra_config=[f"password_file {pw}", f"acl_file {acl}"])
    with broker:
        sim, daemon, config = table(
            tmp_path, broker, "--seed", "5", "--rounds", "1",
            mqtt={"username": "tabled-t1", "password_file": str(tmp_path / "tabled-t1.password")},
            console=f'username = "console-t1"\npassword_file = "{tmp_path}/console-t1.password"\n')
        impostor = tmp_path / "impostor.toml"
        impostor.write_text(config.read_text().replace('"console-t1"', '"tabled-t1"').replace(
            "console-t1.password", "tabled-t1.password"))
        try:
            daemon.start()
            deadline = time.monotonic() + 30
            while True:  # the table is up once its daemon answers (a void with no round open)
                own = tabled("console", "--config", str(config), "--timeout", "2", "void",
                             "--reason", "test")
                if "declined by the rules" in own.stdout or time.monotonic() > deadline:
                    break
            borrowed = tabled("console", "--config", str(impostor), "--timeout", "2", "void",
                              "--reason", "test")
        finally:
            sim.stop()
            assert daemon.stop() == 0
    assert own.returncode == 1, own.stdout + own.stderr
    assert "void (test): declined by the rules: nothing_to_void" in own.stdout
    assert borrowed.returncode == 1
    assert "no reply to void" in borrowed.stdout and "ACL" in borrowed.stdout
    assert "console-secret" not in own.stdout + own.stderr + borrowed.stdout + borrowed.stderr


class Terminal:
    """A process on a pseudo-terminal, as a dealer's terminal runs it: what it shows is read
    into ``screen``; keys are typed with :meth:`type`."""

    def __init__(self, argv: list[str]) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.raw = ""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if not ready:
                if self.proc.poll() is not None:
                    return
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the other side closed
                return
            if not data:
                return
            with self._lock:
                self.raw += data.decode(errors="replace")

    @property
    def text(self) -> str:
        with self._lock:
            return ANSI.sub("", self.raw)

    def screen(self) -> str:
        """What the last full redraw shows."""
        with self._lock:
            return ANSI.sub("", self.raw.rsplit("\x1b[2J", 1)[-1])

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.screen())
            if found:
                return found
            assert self.proc.poll() is None, self.text[-3000:]
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} not on the screen:\n{self.screen()}")

    def type(self, keys: str) -> None:
        for key in keys:  # one keystroke at a time, as fingers do
            os.write(self.master, key.encode())
            time.sleep(0.05)

    def close(self) -> int:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        os.close(self.master)
        return self.proc.returncode


async def test_the_interactive_console_plays_a_round_through_a_terminal(
        tmp_path: Path, broker: Mosquitto) -> None:
    sim, daemon, config = table(tmp_path, broker, "--seed", "11", "--rounds", "1",
                                "--seats", "2,5")
    terminal = Terminal([sys.executable, "-m", "tabled.tools.cli", "console", "--config",
                         str(config)])
    try:
        terminal.wait_for(r"\(connected\)")
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub:
            daemon.start()
            terminal.wait_for(r"table online, commands on")
            terminal.wait_for(r"dealt: the players decide")
            screen = terminal.screen()
            assert re.search(r"seat 2 .*-", screen) and re.search(r"seat 5 .*-", screen)
            assert "dealer   3 card(s), face down" in screen
            terminal.type("2p")
            terminal.wait_for(r"seat 2 play: ok")
            terminal.wait_for(r"seat 2 +.* PLAY")
            terminal.type("r")  # seat 5 has not decided: the console asks first
            terminal.wait_for(r"seat 5 has not decided")
            terminal.type("n")
            terminal.wait_for(r"reveal cancelled")
            terminal.type("5f")
            terminal.wait_for(r"seat 5 +.* fold")
            terminal.type("r")
            terminal.wait_for(r"reveal: ok \(round 1 settled\)")
            terminal.wait_for(r"last: round +1 ")
            outcome = (await sub.wait_for("/outcome", 1, alive=daemon))[0]
            terminal.type("q")
            terminal.proc.wait(timeout=15)
    finally:
        code = terminal.close()
        sim.stop()
        assert daemon.stop() == 0
    assert code == 0, terminal.text[-2000:]
    assert outcome["bets"]["2"]["play"]["result"] != "fold"
    assert outcome["bets"]["5"]["play"]["result"] == "fold"
    shown = terminal.text
    before = shown[:shown.index("last: round")]
    for card in outcome["result"]["dealer"]["cards"]:
        assert not re.search(rf"\b{card}\b", before), card
    # players' cards are open once dealt (Art. 9.1): the console shows them
    for card in outcome["result"]["seats"]["2"]["cards"]:
        assert re.search(rf"\b{card}\b", before), card


@pytest.mark.parametrize(("game", "commands", "warned"), [
    ("qpoker", False, True), ("qpoker", True, False), ("baccarat", False, False)])
def test_check_config_warns_when_a_qpoker_table_cannot_take_commands(
        tmp_path: Path, game: str, commands: bool, warned: bool) -> None:
    key = keygen(tmp_path / "console.key")
    config = write_config(tmp_path / "t.toml", game=game, journal=tmp_path / "j.sqlite",
                          broker_url="mqtt://127.0.0.1:1883",
                          commands={"enabled": commands, "hmac_key_file": str(key)})
    proc = tabled("check-config", str(config))
    assert proc.returncode == 0, proc.stderr
    assert ": ok (" in proc.stdout
    assert ("warning" in proc.stderr) == warned
    if warned:
        assert "qpoker.art11.1" in proc.stderr and "enabled = true" in proc.stderr


async def test_a_command_for_a_table_that_is_down_is_not_sent_and_says_so(
        tmp_path: Path, broker: Mosquitto) -> None:
    """The daemon killed (its last will: the retained status says offline): a command is not
    sent (the broker would not keep it for the daemon, so it would be lost without a word), the
    console says so and exits 1; once the daemon is back, commands go again."""
    sim, daemon, config = table(tmp_path, broker, "--seed", "5", "--rounds", "2",
                                "--seats", "1,3")

    def state() -> object:
        said = [p for t, p, _ in sub.messages if t == f"{BASE}/status"]
        return said[-1].get("state") if said else None

    try:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub:
            daemon.start()
            await dealt(sub)
            daemon.kill9()
            async with asyncio.timeout(20):
                await until(lambda: state() == "offline")
            down = tabled("console", "--config", str(config), "reveal", "--round", "1")
            await asyncio.sleep(0.5)  # a command sent would have reached the subscriber by now
            sent_while_down = sub.on("/cmd/reveal")
            daemon.start()
            async with asyncio.timeout(30):
                await until(lambda: state() == "online")
            back = tabled("console", "--config", str(config), "decision", "--seat", "1",
                          "--play")
            async with asyncio.timeout(10):  # sent, this time
                await until(lambda: bool(sub.on("/cmd/decision")))
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert down.returncode == 1, down.stdout + down.stderr
    assert down.stdout.strip().startswith("reveal: table offline (")
    assert "not sent, not queued" in down.stdout
    assert sent_while_down == []
    # back online: the command is sent and answered (whatever the rules make of it)
    assert "offline" not in back.stdout, back.stdout
    assert back.stdout.startswith("seat 1 play: "), back.stdout
    assert "no reply" not in back.stdout, back.stdout
