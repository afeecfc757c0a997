"""The demo never leaks (issue 10, item 7): however ``tabled demo`` ends — SIGINT, SIGTERM,
SIGHUP, an error, even SIGKILL — none of its processes is left (checked by PID) and its
temporary work directory is gone (kept only when ``--workdir`` named it). Real processes: the
demo, Mosquitto, the simulator, the daemon, the reaper."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tabled.daemon.broker import free_port
from tests.tools.running import Demo, assert_gone, children_of


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
    assert any(f"stopped by {signal.Signals(signum).name}" in line for line in demo.lines)


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
