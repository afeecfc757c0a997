"""The demo never leaks (issue 10, item 7): however ``tabled demo`` ends — SIGINT, SIGTERM,
SIGHUP, an error, even SIGKILL — none of its processes is left (checked by PID) and its
temporary work directory is gone (kept only when ``--workdir`` named it). Real processes: the
demo, Mosquitto, the simulator, the daemon, the reaper."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tabled.daemon.broker import free_port


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid``, from /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Demo:
    """``tabled demo`` as a subprocess, its output collected as it comes."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tabled.tools.cli", "demo", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            assert self.proc.poll() is None, "\n".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} in:\n" + "\n".join(self.lines))

    def workdir(self) -> Path:
        return Path(self.wait_for(r"work dir (\S+)\)").group(1))

    def finish(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code


def assert_gone(pids: set[int], workdir: Path | None, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = {pid for pid in pids if alive(pid)}
        if not left and (workdir is None or not workdir.exists()):
            return
        time.sleep(0.1)
    raise AssertionError(f"left behind: processes {left}, directory "
                         f"{workdir if workdir and workdir.exists() else None}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_every_child_and_removes_the_work_dir(signum: int) -> None:
    demo = Demo("--game", "craps", "--rounds", "100000", "--pace", "0.05")
    try:
        workdir = demo.workdir()
        demo.wait_for(r"^roll +3 ")
        children = children_of(demo.proc.pid)
        # the broker, the simulator, the daemon and the reaper
        assert len(children) == 4, children
        demo.proc.send_signal(signum)
        assert demo.finish() == 128 + signum, "\n".join(demo.lines)
    finally:
        if demo.proc.poll() is None:
            demo.proc.kill()
    assert_gone(children, workdir, timeout=2)
    assert any(f"stopped by signal {int(signum)}" in line for line in demo.lines)


def test_a_given_workdir_is_kept(tmp_path: Path) -> None:
    demo = Demo("--game", "baccarat", "--rounds", "100000", "--pace", "0.02",
                "--workdir", str(tmp_path / "w"))
    demo.wait_for(r"^round +2 ")
    children = children_of(demo.proc.pid)
    demo.proc.send_signal(signal.SIGTERM)
    assert demo.finish() == 128 + signal.SIGTERM
    assert_gone(children, None, timeout=2)
    assert (tmp_path / "w" / "journal.sqlite").exists()
    assert (tmp_path / "w" / "daemon.log").exists()


def test_an_error_stops_every_child_and_removes_the_work_dir() -> None:
    """A broker that is not there: the demo fails (exit 1, saying why), after starting the
    simulator and the daemon, and leaves nothing."""
    demo = Demo("--game", "craps", "--rounds", "5", "--pace", "0.05",
                "--broker", f"mqtt://127.0.0.1:{free_port()}")
    children: set[int] = set()
    while demo.proc.poll() is None:  # every child it ever had, however briefly
        children |= children_of(demo.proc.pid)
        time.sleep(0.005)
    workdir = demo.workdir()
    assert demo.finish() == 1
    assert any("cannot reach the broker" in line for line in demo.lines), demo.lines
    assert any("simulator and daemon starting" in line for line in demo.lines)
    # the reaper and the simulator (the daemon may live too briefly to be seen)
    assert len(children) >= 2, children
    assert_gone(children, workdir, timeout=2)


def test_sigkill_leaves_the_clean_up_to_the_reaper() -> None:
    """SIGKILL runs no code in the demo: its reaper sees the pipe close and stops the
    registered process groups, then removes the work directory."""
    demo = Demo("--game", "craps", "--rounds", "100000", "--pace", "0.05")
    workdir = demo.workdir()
    demo.wait_for(r"^roll +2 ")
    children = children_of(demo.proc.pid)
    assert len(children) == 4, children
    demo.proc.kill()
    demo.finish()
    assert_gone(children, workdir, timeout=15)
