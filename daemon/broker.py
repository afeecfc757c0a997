"""A private Mosquitto broker for the demo and for a daemon with no broker configured.

Owns starting and stopping one ``mosquitto`` process on a free loopback port with a config of its
own in a temporary directory. The tests' fixtures use it too, with their own config lines (TLS,
passwords, ACLs). It never touches a system broker or ``/etc/mosquitto``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from tabled.daemon.errors import DaemonError

#: Where Debian puts the broker when /usr/sbin is not on PATH.
_CANDIDATES = ("mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


class BrokerError(DaemonError, RuntimeError):
    """Mosquitto is missing or would not start."""


def find_mosquitto() -> str:
    for candidate in _CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    raise BrokerError("mosquitto is not installed (the README's commands install it with apt)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


class Mosquitto:
    """One broker process. ``extra_config`` lines are appended after the listener line."""

    def __init__(
        self,
        *,
        port: int | None = None,
        extra_config: Iterable[str] = (),
        listener_options: Iterable[str] = (),
        allow_anonymous: bool = True,
        persistence: bool = False,
        workdir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.port = port or free_port()
        self._owned_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="tabled-broker-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.extra_config = list(extra_config)
        self.listener_options = list(listener_options)
        self.allow_anonymous = allow_anonymous
        #: Keep sessions and queued QoS 1 messages across a broker restart (in ``dir``).
        self.persistence = persistence
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.dir / "mosquitto.log"

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        lines = [
            # Started as root, mosquitto would drop to user "mosquitto" and could not read files
            # in private directories (FIELD-NOTES.md): run it as whoever started it.
            f"user {_current_user()}",
            f"persistence {'true' if self.persistence else 'false'}",
            f"persistence_location {self.dir}/",
            "autosave_interval 1",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "per_listener_settings false",
            # Without it the broker's PUBACKs for back-to-back QoS 1 publishes wait on Nagle
            # and the client's delayed ACK: a publish took 12 ms instead of 0.6 (docs/
            # deployment.md recommends it for every floor broker).
            "set_tcp_nodelay true",
            f"allow_anonymous {'true' if self.allow_anonymous else 'false'}",
            f"listener {self.port} 127.0.0.1",
            *self.listener_options,
            *self.extra_config,
        ]
        conf = self.dir / "mosquitto.conf"
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def start(self, timeout: float = 10.0) -> None:
        conf = self.write_config()
        log = open(self.log_path, "ab")  # noqa: SIM115 - the process owns it until stop()
        self.process = subprocess.Popen(
            [find_mosquitto(), "-c", str(conf)], stdout=log, stderr=log,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"mosquitto exited with {self.process.returncode}: "
                                  f"{self.log_path.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.2):
                return
            time.sleep(0.02)
        self.stop()
        raise BrokerError(f"mosquitto did not listen on {self.port} within {timeout} s")

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def kill(self) -> None:
        """Stop abruptly (an outage, not a shutdown)."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def cleanup(self) -> None:
        self.stop()
        if self._owned_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Mosquitto:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
