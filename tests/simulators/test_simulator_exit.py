"""Issue 16, item 6: a simulator removes the path it printed (its ``--link``, the dice's socket)
on any exit — its script done, SIGTERM, SIGINT, SIGHUP, an exception — and promptly. A stale
link to a pty number the kernel then gives another simulator is how a Q Poker table came to
read a shoe. Every case runs ``tabled-sim`` as a real process; a host is connected while it
stops, as on a bench.

It removes only its own: a link another simulator has taken over since is left alone."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tabled.contract.events import Event
from tabled.drivers.registry import open_device

SIM = [sys.executable, "-m", "tabled.simulators.cli"]
FOREVER = {
    "shoe": ["shoe", "--cards", "AS,KH", "--forever"],
    # --step: after the first round it waits for the dealer's "deal" on standard input
    "shuffler": ["shuffler", "--rounds", "2", "--pace", "0", "--step", "--forever"],
    "dice": ["dice", "--rolls", "3-4", "--pace", "0.01", "--forever"],
}
ONCE = {
    "shoe": ["shoe", "--cards", "AS,KH"],
    "shuffler": ["shuffler", "--rounds", "1", "--pace", "0"],
    "dice": ["dice", "--rolls", "3-4", "--pace", "0.01"],
}
#: What makes each simulator fail after it has made its path: the next thing it would do.
BOOM = {
    "shoe": "tabled.simulators.shoe:ShoeDevice.report",
    "shuffler": "tabled.simulators.shuffler:ShufflerSimulator.play",
    "dice": "tabled.simulators.dice:device_url",
}


def start(family: str, args: list[str], path: Path, *, boom: bool = False
          ) -> tuple[subprocess.Popen[str], str]:
    """``tabled-sim`` with its path at ``path``; the URL a driver opens."""
    option = "--socket" if family == "dice" else "--link"
    argv = [*args, option, str(path)]
    if boom:  # the same command line, with one of its steps raising
        module, _, name = BOOM[family].partition(":")
        owner, _, attribute = name.rpartition(".")
        code = (f"import {module} as m, sys\n"
                f"def boom(*a, **k): raise RuntimeError('boom')\n"
                f"setattr({'m.' + owner if owner else 'm'}, {attribute!r}, boom)\n"
                f"from tabled.simulators.cli import main\n"
                f"sys.exit(main({argv!r}))\n")
        command = [sys.executable, "-c", code]
    else:
        command = [*SIM, *argv]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        if boom and family == "dice":
            return proc, ""
        assert first.startswith(("path: ", "socket: ")), first
        url = first.split(": ", 1)[1].strip()
        if family == "dice":
            url = proc.stdout.readline().split(": ", 1)[1].strip()
    except BaseException:
        proc.kill()
        ended(proc)
        raise
    return proc, url


async def connect(family: str, url: str) -> tuple[object, list[Event]]:
    events: list[Event] = []
    driver = await open_device(family, url, device_id="dev", sink=events.append)
    async with asyncio.timeout(10):
        await driver.connected.wait()
        while not events:  # noqa: ASYNC110 - the device is serving this host
            await asyncio.sleep(0.02)
    return driver, events


def ended(proc: subprocess.Popen[str], within: float = 5.0) -> int:
    """Its exit status, once it ended within ``within`` seconds (else it is killed, and
    TimeoutExpired raised); its pipes closed either way."""
    try:
        return proc.wait(timeout=within) if within else proc.wait(timeout=0.001)
    except subprocess.TimeoutExpired:
        if within:
            raise
        return -1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("family", list(FOREVER))
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "SIGINT", "SIGHUP"])
async def test_a_stop_signal_removes_the_path(family: str, signum: signal.Signals,
                                              tmp_path: Path) -> None:
    path = tmp_path / "dev"
    proc, url = start(family, FOREVER[family], path)
    try:
        driver, _ = await connect(family, url)
        assert os.path.lexists(path)
        began = time.monotonic()
        proc.send_signal(signum)
        status = await asyncio.to_thread(ended, proc)
        assert time.monotonic() - began < 3.0
        assert status in (0, 128 + signum)  # (the dice sensor ends SIGTERM and SIGINT with 0)
        assert not os.path.lexists(path)
        driver.close()  # type: ignore[attr-defined]
        await driver.wait_closed()  # type: ignore[attr-defined]
    finally:
        ended(proc, 0)


@pytest.mark.parametrize("family", list(ONCE))
async def test_the_end_of_the_script_removes_the_path(family: str, tmp_path: Path) -> None:
    path = tmp_path / "dev"
    proc, url = start(family, ONCE[family], path)
    try:
        driver, _ = await connect(family, url)
        assert await asyncio.to_thread(ended, proc, 10.0) == 0
        assert not os.path.lexists(path)
        driver.close()  # type: ignore[attr-defined]
        await driver.wait_closed()  # type: ignore[attr-defined]
    finally:
        ended(proc, 0)


@pytest.mark.parametrize("family", list(BOOM))
async def test_an_exception_removes_the_path(family: str, tmp_path: Path) -> None:
    path = tmp_path / "dev"
    proc, _ = start(family, FOREVER[family], path, boom=True)
    driver = None
    try:
        if family == "shuffler":  # it plays once a host is there
            driver = await open_device(family, str(path), device_id="dev", sink=lambda e: None)
        status = await asyncio.to_thread(ended, proc, 10.0)
        assert status != 0
        assert not os.path.lexists(path)
    finally:
        ended(proc, 0)
        if driver is not None:
            driver.close()
            await driver.wait_closed()


async def test_only_its_own_link_is_removed(tmp_path: Path) -> None:
    """Two simulators given the same --link (a bench mistake): the one that ends must not
    remove the link the other has made since."""
    path = tmp_path / "dev"
    first, _ = start("shoe", FOREVER["shoe"], path)
    second, _ = start("shoe", FOREVER["shoe"], path)  # takes the link over
    try:
        target = os.readlink(path)
        first.send_signal(signal.SIGTERM)
        await asyncio.to_thread(ended, first)
        assert os.readlink(path) == target
        second.send_signal(signal.SIGTERM)
        await asyncio.to_thread(ended, second)
        assert not os.path.lexists(path)
    finally:
        ended(first, 0)
        ended(second, 0)
