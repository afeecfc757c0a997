"""Real parts for end-to-end tests: a Mosquitto broker, the daemon as a subprocess, simulators
as subprocesses, an MQTT subscriber, and a systemd notify socket.

Nothing here is a mock: the daemon is ``python -m tabled.tools.cli run`` with a TOML config, the
devices are ``tabled-sim`` processes on real pseudo-terminals (the dice behind the simulated pyusb
backend), and the broker is Mosquitto on a free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

ENVELOPE = ("table_seq", "ts")
PYTHON = sys.executable


def strip_envelope(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in ENVELOPE}


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def write_config(path: Path, *, game: str, journal: Path, broker_url: str,
                 devices: Iterable[dict[str, Any]] = (), rules: dict[str, Any] | None = None,
                 mqtt: dict[str, Any] | None = None, commands: dict[str, Any] | None = None,
                 tls: dict[str, Any] | None = None, site: str = "lab", table: str = "t1",
                 fetch: dict[str, Any] | None = None) -> Path:
    lines = ["[table]", f'site = "{site}"', f'id = "{table}"', f'game = "{game}"', "",
             "[rules]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in (rules or {}).items()]
    for device in devices:
        lines += ["", "[[devices]]"] + [f"{k} = {toml_value(v)}" for k, v in device.items()]
    # the broker is always named: "embedded" (the daemon's private Mosquitto) only if asked for
    lines += ["", "[mqtt]", "metrics_interval = 1.0", "reconnect_min = 0.1",
              "reconnect_max = 1.0", f'url = "{broker_url}"']
    lines += [f"{k} = {toml_value(v)}" for k, v in (mqtt or {}).items()]
    if tls:
        lines += ["", "[mqtt.tls]"] + [f"{k} = {toml_value(v)}" for k, v in tls.items()]
    if commands:
        lines += ["", "[commands]"] + [f"{k} = {toml_value(v)}" for k, v in commands.items()]
    if fetch:
        lines += ["", "[fetch]"] + [f"{k} = {toml_value(v)}" for k, v in fetch.items()]
    lines += ["", "[journal]", f'path = "{journal}"', "", "[log]", 'format = "json"',
              'level = "debug"']
    path.write_text("\n".join(lines) + "\n")
    return path


class NotifySocket:
    """A datagram socket standing in for systemd's NOTIFY_SOCKET."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)
        self.messages: list[str] = []

    def drain(self) -> list[str]:
        with contextlib.suppress(BlockingIOError):
            while True:
                self.messages.append(self.sock.recv(4096).decode())
        return self.messages

    async def wait_for(self, text: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in m for m in self.drain()):
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"no {text!r} on the notify socket; got {self.messages[-5:]}")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Daemon:
    """``tabled run`` as a subprocess; stdout (JSON log lines) goes to ``log_path``."""

    config: Path
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        env = {**os.environ, **self.env}
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the process
        self.proc = subprocess.Popen([PYTHON, "-m", "tabled.tools.cli",
                                      "run", "-c", str(self.config)],
                                     stdout=log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        log.close()
        self.starts += 1

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_lines(self) -> list[str]:
        return self.log_path.read_text(errors="replace").splitlines()


@dataclass
class Simulator:
    """A ``tabled-sim`` subprocess; ``path`` is what it printed for a driver to open."""

    args: list[str]
    log_path: Path
    proc: subprocess.Popen[str] | None = None
    printed: list[str] = field(default_factory=list)

    def start(self, timeout: float = 15.0) -> str:
        log = open(self.log_path, "a")  # noqa: SIM115
        self.proc = subprocess.Popen([PYTHON, "-m", "tabled.simulators.cli", *self.args],
                                     stdout=subprocess.PIPE, stderr=log, text=True,
                                     stdin=subprocess.PIPE, start_new_session=True)
        log.close()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        self.printed.append(line)
        if ":" not in line:
            raise AssertionError(f"simulator printed {line!r}: {self.log_path.read_text()}")
        return line.split(":", 1)[1].strip()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stdin):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


class Subscriber:
    """Collects every message under a topic filter, in arrival order, from a real broker."""

    def __init__(self, host: str, port: int, topic: str, **client_kwargs: Any) -> None:
        self.host, self.port, self.topic = host, port, topic
        self.client_kwargs = client_kwargs
        self.messages: list[tuple[str, dict[str, Any], bool]] = []
        self._seqs: dict[str, set[int]] = {}  # per topic: the table_seq numbers seen
        self._unnumbered: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        self.changed = asyncio.Event()

    async def __aenter__(self) -> Subscriber:
        self._task = asyncio.create_task(self._run())
        async with asyncio.timeout(10):
            await self.ready.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
            await self._task

    async def _run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client(self.host, self.port, **self.client_kwargs) as client:
                    await client.subscribe(self.topic, qos=1)
                    self.ready.set()
                    async for message in client.messages:
                        raw = message.payload
                        text = raw.decode() if isinstance(raw, bytes) else str(raw)
                        topic, payload = str(message.topic), json.loads(text)
                        self.messages.append((topic, payload, bool(message.retain)))
                        seq = payload.get("table_seq") if isinstance(payload, dict) else None
                        if seq is None:
                            self._unnumbered[topic] = self._unnumbered.get(topic, 0) + 1
                        else:
                            self._seqs.setdefault(topic, set()).add(seq)
                        self.changed.set()
            except aiomqtt.MqttError:
                await asyncio.sleep(0.2)  # the broker went away: a real consumer reconnects

    def on(self, suffix: str) -> list[dict[str, Any]]:
        return [p for t, p, _ in self.messages if t.endswith(suffix)]

    def distinct(self, suffix: str) -> int:
        """Messages on ``suffix`` counted once per ``table_seq`` (QoS 1 may deliver twice);
        kept incrementally, so that waiting on a long run stays cheap."""
        return (sum(len(v) for k, v in self._seqs.items() if k.endswith(suffix))
                + sum(v for k, v in self._unnumbered.items() if k.endswith(suffix)))

    async def wait_for(self, suffix: str, count: int, timeout: float = 60.0,
                       alive: Daemon | None = None) -> list[dict[str, Any]]:
        """Wait until ``count`` distinct messages arrived on ``suffix``; return them all."""
        deadline = time.monotonic() + timeout
        while self.distinct(suffix) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.distinct(suffix)}/{count} messages on {suffix}")
            if alive is not None and not alive.alive():
                raise AssertionError(f"the daemon exited: {alive.log_lines()[-20:]}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await self.changed.wait()
            await asyncio.sleep(0.01)  # let a burst in before counting again
        return self.on(suffix)

    async def until_offline(self, suffix: str = "/status", timeout: float = 20.0) -> None:
        """Wait for the table's status to say ``offline``: a daemon stopped cleanly says it
        last, after it has published everything it had (so nothing is still on its way)."""
        async with asyncio.timeout(timeout):
            while not [s for s in self.on(suffix) if s.get("state") == "offline"]:
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.2):
                        await self.changed.wait()


def replay(game: str, events: list[dict[str, Any]], options: dict[str, Any] | None = None,
           workdir: Path | None = None) -> list[dict[str, Any]]:
    """``tabled replay`` as a subprocess over ``events``; returns its outcome records."""
    args = [PYTHON, "-m", "tabled.tools.cli", "replay", "--game", game]
    for key, value in (options or {}).items():
        args += ["--option", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    text = "".join(json.dumps(e) + "\n" for e in events)
    proc = subprocess.run(args, input=text, capture_output=True, text=True, check=False,
                          cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def assert_contiguous(messages: list[dict[str, Any]]) -> None:
    """Every table_seq from the first to the last, each at least once, in order (a QoS 1
    re-delivery repeats a number; nothing is skipped or reordered)."""
    seqs = [m["table_seq"] for m in messages]
    seen: set[int] = set()
    firsts = []
    for seq in seqs:
        if seq not in seen:
            seen.add(seq)
            firsts.append(seq)
    assert firsts == sorted(firsts), f"out of order: {firsts}"
    if firsts:
        assert firsts == list(range(firsts[0], firsts[-1] + 1)), f"gap: {firsts}"
