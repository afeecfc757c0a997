"""The processes of a demo and its work directory, stopped and removed however the demo ends.

Owns starting child processes (each in a session of its own, so that a Ctrl-C at the terminal
reaches the demo, which then stops them in order, and not each child at once), stopping them
(SIGTERM to the process group, SIGKILL after a grace period), the private Mosquitto, the
signals that end a demo (SIGINT, SIGTERM, SIGHUP: the demo's main task is cancelled and its
``finally`` runs :meth:`Fleet.close`), and the temporary work directory (removed unless the user
named it with ``--workdir``).

A demo killed with SIGKILL runs no code at all: for that case every child is registered with a
reaper (:mod:`tabled.tools.reaper`), a small process in its own session that holds a pipe from
the demo; when the kernel closes that pipe, the reaper stops the registered process groups and
removes the work directory. Only if the reaper is killed too (say, ``kill -9`` of every process
of the user) can anything be left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from tabled.daemon.broker import Mosquitto, find_mosquitto
from tabled.tools.errors import ToolError
from tabled.tools.reaper import start_time

#: Seconds a child has between SIGTERM and SIGKILL.
T_STOP = 10.0
#: Seconds the private broker has to listen.
T_BROKER = 10.0
#: The signals that end a demo, and how a shell reports each (128 + the signal's number).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class FleetError(ToolError, RuntimeError):
    """A child would not start."""


def python(*args: str) -> list[str]:
    """``python -m ...`` with this interpreter (the venv's, so the children import this code)."""
    return [sys.executable, "-m", *args]


class Fleet:
    """The children of one demo. ``close()`` (from a ``finally``) stops what is still running,
    tells the reaper it is done and removes the work directory unless it was given."""

    def __init__(self, workdir: str | os.PathLike[str] | None, prefix: str) -> None:
        self.keep = workdir is not None
        self.dir = Path(workdir).resolve() if workdir else Path(tempfile.mkdtemp(prefix=prefix))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.children: list[tuple[str, subprocess.Popen[Any]]] = []
        #: The signal that stopped the demo, if one did.
        self.signal: int | None = None
        self._closed = False
        #: How the private broker was started (to start it again on the same port).
        self.broker_argv: list[str] | None = None
        self._reaper: subprocess.Popen[str] | None = subprocess.Popen(
            python("tabled.tools.reaper"), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            text=True, start_new_session=True)
        if not self.keep:
            self._tell(f"dir {self.dir}")

    # -- children -----------------------------------------------------------------------------

    def spawn(self, name: str, argv: list[str], *, log: Path,
              stdin: int | IO[Any] | None = subprocess.DEVNULL,
              stdout: int | IO[Any] | None = None, text: bool = True) -> subprocess.Popen[Any]:
        """Start ``argv`` in a session of its own; stderr (and stdout unless given) to ``log``."""
        with open(log, "ab") as fh:
            try:
                proc = subprocess.Popen(argv, stdin=stdin, stdout=fh if stdout is None else stdout,
                                        stderr=fh, text=text, start_new_session=True)
            except OSError as exc:
                raise FleetError(f"cannot start {name}: {exc}") from None
        self.children.append((name, proc))
        self._tell(f"group {proc.pid} {start_time(proc.pid)}")
        return proc

    def start_broker(self, extra_config: Iterable[str] = (), *,
                     allow_anonymous: bool = True) -> str:
        """A private Mosquitto on a free loopback port (its files in ``broker/``); its URL.
        ``extra_config``: its password and ACL files (:mod:`tabled.tools.broker_access`)."""
        broker = Mosquitto(workdir=self.dir / "broker", extra_config=extra_config,
                           allow_anonymous=allow_anonymous)
        conf = broker.write_config()
        self.broker_argv = [find_mosquitto(), "-c", str(conf)]
        proc = self.spawn("mosquitto", self.broker_argv, log=broker.log_path)
        deadline = time.monotonic() + T_BROKER
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise FleetError(f"mosquitto exited with {proc.returncode}: "
                                 f"{broker.log_path.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", broker.port), timeout=0.2):
                return broker.url
            time.sleep(0.02)
        raise FleetError(f"mosquitto did not listen on {broker.port} within {T_BROKER:g} s")

    def stop(self, procs: Iterable[subprocess.Popen[Any]], timeout: float = T_STOP) -> None:
        """SIGTERM to each one's process group at once, then wait; SIGKILL what is left."""
        procs = [p for p in procs if p.returncode is None]
        for proc in procs:  # not reaped yet, so its process group is still ours to signal
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for proc in procs:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._tell(f"forget {proc.pid}")
        self.children = [(n, p) for n, p in self.children if p not in procs]

    def reap(self, proc: subprocess.Popen[Any]) -> None:
        """Forget a child that ended by itself (it is to be started again, or not)."""
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._tell(f"forget {proc.pid}")
        self.children = [(n, p) for n, p in self.children if p is not proc]

    def exited(self) -> list[tuple[str, int]]:
        """Children that ended by themselves: (name, status)."""
        return [(name, p.returncode) for name, p in self.children if p.poll() is not None]

    # -- signals ------------------------------------------------------------------------------

    def catch_signals(self, on_stop: Callable[[int], None] | None = None) -> None:
        """SIGINT, SIGTERM and SIGHUP cancel the running task (the demo's main coroutine),
        once; a repeated signal during the clean-up is ignored so that it can finish."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(signum: int) -> None:
            if self.signal is None:
                self.signal = signum
                if on_stop is not None:
                    on_stop(signum)
                task.cancel()

        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, stop, signum)

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every child still running (the latest started first), then remove the work
        directory unless it was given. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # any signal from here on: the clean-up is short and bounded, let it finish
        for signum in STOP_SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError):
                signal.signal(signum, signal.SIG_IGN)
        for _, proc in reversed(list(self.children)):
            self.stop([proc])
        self._tell("done")
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            with contextlib.suppress(OSError):
                assert reaper.stdin is not None
                reaper.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                reaper.wait(timeout=5)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _tell(self, line: str) -> None:
        reaper = self._reaper
        if reaper is None or reaper.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            reaper.stdin.write(line + "\n")
            reaper.stdin.flush()


def say_safely(text: str, stream: IO[str] | None = None) -> None:
    """Print for the person watching; a terminal that has gone (SIGHUP) or a reader that left
    (a closed pipe) must not stop the clean-up."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=stream or sys.stdout, flush=True)
