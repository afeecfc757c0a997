"""Demos as real subprocesses for the tests: their output as it comes, their children by PID
(from /proc), and the check that nothing of them is left."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path


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
    """``tabled demo`` (or another command: ``floor``) as a subprocess, its output collected
    as it comes."""

    def __init__(self, *args: str, command: str = "demo") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tabled.tools.cli", command, *args],
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
