"""The real parts every benchmark is built from: a Mosquitto broker, ``tabled run`` as a process
with production settings and a systemd notify socket, and an MQTT collector that stamps the
arrival of every message.

Owns starting, watching and stopping those parts. The daemon is the installed command with a
TOML config, exactly as systemd runs it (log level ``info``, metrics every 5 s), never an
in-process imitation. The collector is a paho client on its own network thread, so an arrival is
stamped when the socket delivers it, not when some event loop gets round to it.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

SITE = "bench"
#: How long any part may take to come up before the run is abandoned, seconds.
T_START = 30.0


class RigError(RuntimeError):
    """A part of the rig did not start or died: the run cannot measure anything."""


_sockets: Path | None = None
_socket_numbers = itertools.count()


def socket_path(name: str) -> str:
    """A fresh path for a Unix socket, in a short temporary directory removed at exit: a
    socket's path may not exceed 107 bytes (a test's tmp_path often does)."""
    global _sockets
    if _sockets is None:
        _sockets = Path(tempfile.mkdtemp(prefix="tabled-bench-"))
        atexit.register(shutil.rmtree, _sockets, ignore_errors=True)
    return str(_sockets / f"{next(_socket_numbers)}-{name}")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def write_config(path: Path, *, table: str, game: str, journal: Path, broker_url: str,
                 devices: Iterable[Mapping[str, Any]], rules: Mapping[str, Any] | None = None,
                 log_level: str = "info") -> Path:
    """A daemon config with the example file's production defaults (metrics every 5 s, 64 QoS 1
    messages in flight, JSON logs at ``info``)."""
    lines = ["[table]", f'site = "{SITE}"', f'id = "{table}"', f'game = "{game}"', "", "[rules]"]
    lines += [f"{k} = {_toml(v)}" for k, v in (rules or {}).items()]
    for device in devices:
        lines += ["", "[[devices]]", *(f"{k} = {_toml(v)}" for k, v in device.items())]
    lines += ["", "[mqtt]", f"url = {_toml(broker_url)}", "", "[journal]",
              f"path = {_toml(journal)}", "", "[log]", 'format = "json"',
              f"level = {_toml(log_level)}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def topic_base(table: str) -> str:
    return f"tabled/{SITE}/{table}"


@dataclass
class DaemonProcess:
    """``tabled run -c CONFIG`` with its own notify socket; ``ready_after`` is the time from
    spawning the process to its ``READY=1``."""

    config: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    ready_after: float | None = None
    _notify: socket.socket | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        notify_path = socket_path("notify")
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(str(notify_path))
        env = {**os.environ, "NOTIFY_SOCKET": str(notify_path)}
        with open(self.log_path, "ab") as log:
            self._spawned = time.monotonic()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tabled.tools.cli", "run", "-c", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait_ready(self, timeout: float = T_START) -> float:
        """Block until READY=1; return the seconds since spawn. The socket is read on, as
        systemd reads it, for as long as the daemon runs."""
        assert self._notify is not None and self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RigError(f"the daemon exited with {self.proc.returncode}: "
                               f"{self.log_path.read_text(errors='replace')[-1500:]}")
            self._notify.settimeout(0.05)
            try:
                message = self._notify.recv(4096).decode()
            except TimeoutError:
                continue
            if "READY=1" in message.split("\n"):
                self.ready_after = time.monotonic() - self._spawned
                threading.Thread(target=self._drain, args=(self._notify,), daemon=True).start()
                return self.ready_after
        raise RigError(f"no READY=1 within {timeout} s")

    @staticmethod
    def _drain(notify: socket.socket) -> None:
        """Read STATUS and WATCHDOG lines until the socket is closed."""
        notify.settimeout(None)
        with contextlib.suppress(OSError):
            while notify.recv(4096):
                pass

    def stop(self, timeout: float = 20.0) -> int | None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._notify is not None:
            with contextlib.suppress(OSError):
                self._notify.shutdown(socket.SHUT_RDWR)  # ends the reader's recv()
            self._notify.close()
            self._notify = None
        return None if proc is None else proc.returncode


@dataclass(frozen=True, slots=True)
class Arrival:
    at: float
    topic: str
    payload: bytes


class Collector:
    """Subscribes to ``topics`` (QoS 1) and keeps every message with its arrival time."""

    def __init__(self, port: int, topics: Iterable[str], *, client_id: str = "") -> None:
        self.port = port
        self.topics = list(topics)
        self.arrivals: list[Arrival] = []
        self._lock = threading.RLock()  # predicates may take() while waiting
        self._changed = threading.Condition(self._lock)
        self._subscribed = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=paho.MQTTv311)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message

    def _on_connect(self, client: paho.Client, *_: Any) -> None:
        client.subscribe([(topic, 1) for topic in self.topics])

    def _on_subscribe(self, *_: Any) -> None:
        self._subscribed.set()

    def _on_message(self, _: paho.Client, __: Any, message: paho.MQTTMessage) -> None:
        arrival = Arrival(time.monotonic(), message.topic, bytes(message.payload))
        with self._lock:
            self.arrivals.append(arrival)
            self._changed.notify_all()

    def __enter__(self) -> Collector:
        self.client.connect("127.0.0.1", self.port, keepalive=60)
        self.client.loop_start()
        if not self._subscribed.wait(T_START):
            self.client.loop_stop()
            raise RigError("the collector could not subscribe")
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def count(self, suffix: str = "") -> int:
        with self._lock:
            return sum(1 for a in self.arrivals if a.topic.endswith(suffix))

    def wait_until(self, predicate: Any, timeout: float) -> bool:
        """Wait until ``predicate(arrivals)`` holds (checked on every arrival)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self.arrivals):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.5))
        return True

    def take(self) -> list[Arrival]:
        with self._lock:
            taken, self.arrivals = self.arrivals, []
        return taken


def json_of(arrival: Arrival) -> dict[str, Any]:
    body = json.loads(arrival.payload)
    assert isinstance(body, dict)
    return body


def device_connected(table: str, device: str) -> Any:
    """A collector predicate: the daemon's retained status says ``device`` is connected."""
    topic = f"{topic_base(table)}/device/{device}/status"

    def check(arrivals: list[Arrival]) -> bool:
        states = [json_of(a).get("state") for a in arrivals if a.topic == topic]
        return bool(states) and states[-1] == "connected"
    return check
