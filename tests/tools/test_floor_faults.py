"""The floor demo shows faults instead of dying of them (issue 27, item 8), against a running
``tabled floor`` (a real subprocess, its own Mosquitto, real daemons, simulators and pit):

- the pit starts first: its record has each table's first event and round;
- garbage on every topic the floor listens to is printed as malformed, counted, and the floor
  plays on; its broker refuses anonymous clients and a table's identity on another table's
  topics, and the printed watcher line reads every table;
- a table daemon killed with SIGKILL is started again: the other tables play on, the pit
  raises the table's offline alert (on ``…/pit/alert``), the table is online again and plays;
- a floor stopped and started again at once gets the same web port (its first run left the
  port in TIME_WAIT).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tabled.daemon.broker import free_port
from tests.tools.running import Demo, children_of
from tests.waiting import until

#: The longest any one thing the tests wait for may take, seconds.
T_WAIT = 45.0
#: Options of every floor here: one table of each game, quick rounds, bounded.
FLOOR = ("--per-game", "1", "--pace", "1", "--duration", "150")


async def line(floor: Demo, pattern: str, *, after: int = 0, timeout: float = T_WAIT
               ) -> re.Match[str]:
    """The first line from ``after`` on that matches ``pattern`` (waiting for it)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        for text in floor.lines[after:]:
            found = re.search(pattern, text)
            if found:
                return found
        assert floor.proc.poll() is None, "the floor stopped:\n" + "\n".join(floor.lines[-40:])
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {pattern!r} in:\n" + "\n".join(floor.lines[-60:]))


def from_the_first(workdir: Path, table: str) -> bool:
    """Whether the pit's record has ``table``'s first event (number 0) and round 1's
    outcome."""
    with contextlib.closing(sqlite3.connect(f"file:{workdir / 'pit.sqlite'}?mode=ro",
                                            uri=True, timeout=5)) as db:
        first = db.execute("SELECT count(*) FROM messages WHERE table_id = ? AND topic = 'event'"
                           " AND table_seq = 0", (table,)).fetchone()[0]
        round_1 = db.execute("SELECT count(*) FROM messages WHERE table_id = ? AND topic = "
                             "'outcome' AND round = 1", (table,)).fetchone()[0]
    return bool(first and round_1)


def secret(workdir: Path, user: str) -> str:
    return (workdir / "secrets" / f"{user}.password").read_text().strip()


class Collector:
    """A subscriber on the floor's broker: every message it receives, as (topic, body)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, Any]] = []

    async def run(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            raw = message.payload
            try:
                body = json.loads(raw if isinstance(raw, (bytes, str)) else b"")
            except ValueError:
                body = raw
            self.got.append((str(message.topic), body))

    def alert(self, table: str, kind: str, state: str) -> bool:
        """Whether the pit published ``table``'s ``kind`` alert in ``state``."""
        return any(t.endswith("/pit/alert") and isinstance(b, dict) and b.get("table") == table
                   and b.get("kind") == kind and b.get("state") == state for t, b in self.got)

    def states(self, table: str) -> list[Any]:
        return [b.get("state") for t, b in self.got
                if t.endswith(f"/{table}/status") and isinstance(b, dict)]


@contextlib.asynccontextmanager
async def started(*args: str):  # type: ignore[no-untyped-def]
    floor = Demo(*args, command="floor")
    try:
        yield floor
    finally:
        if floor.proc.poll() is None:
            floor.proc.send_signal(signal.SIGINT)
            try:
                await asyncio.to_thread(floor.finish, 60)
            finally:
                if floor.proc.poll() is None:
                    floor.proc.kill()


async def test_garbage_on_every_topic_is_shown_and_the_floor_plays_on(tmp_path: Path) -> None:
    async with started(*FLOOR, "--no-faults", "--workdir", str(tmp_path / "w")) as floor:
        workdir = tmp_path / "w"
        watch = await line(floor, r"mosquitto_sub -h (\S+) -p (\d+) -u (\S+) -P (\S+) -v "
                                  r"-t 'tabled/#'")
        host, port, user, password = watch.group(1), int(watch.group(2)), watch.group(3), \
            watch.group(4)
        await line(floor, r"^bac-1 +round +\d+")
        await line(floor, r"^craps-1 +roll +\d+")
        await line(floor, r"^qpoker-1 +round +\d+")
        # the pit started first: its record has every table from its first round
        async with asyncio.timeout(T_WAIT):
            await until(lambda: all(from_the_first(workdir, t)
                                    for t in ("bac-1", "craps-1", "qpoker-1")))

        # anonymous: refused at the door
        with pytest.raises(aiomqtt.MqttError, match=r"(?i)not authori"):
            async with aiomqtt.Client(host, port, identifier="test-anonymous"):
                pass
        collector = Collector()
        async with aiomqtt.Client(host, port, username=user, password=password,
                                  identifier="test-watcher") as watcher:
            await watcher.subscribe("tabled/#", qos=1)
            reading = asyncio.create_task(collector.run(watcher))
            try:
                # the printed watcher line reads the tables
                async with asyncio.timeout(T_WAIT):
                    await until(lambda: any(t.endswith("/outcome") for t, _ in collector.got))
                # a table's identity on another table's topics, the watcher publishing:
                # dropped by the broker, never delivered
                bac = aiomqtt.Client(host, port, username="tabled-bac-1",
                                     password=secret(workdir, "tabled-bac-1"),
                                     identifier="test-as-bac-1")
                async with bac:
                    for topic in ("tabled/floor/craps-1/outcome", "tabled/floor/craps-1/status",
                                  "tabled/floor/qpoker-1/cmd/reveal", "tabled/floor/pit/alert"):
                        await bac.publish(topic, '{"forged": "by bac-1"}', qos=1)
                    await watcher.publish("tabled/floor/bac-1/outcome",
                                          '{"forged": "by the watcher"}', qos=1)
                    # and its own topic does reach the subscriber (so the test would see one)
                    await bac.publish("tabled/floor/bac-1/metrics", '{"own": "bac-1"}', qos=1)
                    async with asyncio.timeout(T_WAIT):
                        await until(lambda: any(isinstance(b, dict) and b.get("own")
                                                for _, b in collector.got))
                await asyncio.sleep(1.0)
                forged = [(t, b) for t, b in collector.got
                          if isinstance(b, dict) and "forged" in b]
                assert forged == []
            finally:
                reading.cancel()

        # garbage on every topic the floor listens to, each published by an identity that may
        garbage = [b"{}", b"not json", b"[]", b'"text"', b"\xff\xfe", b'{"severity": null}',
                   b'{"round": "seven", "game": "baccarat"}', b'{"round": 3}',
                   b'{"code": 5}', b'{"state": ["online"]}']
        topics = {"tabled-bac-1": ["tabled/floor/bac-1/outcome", "tabled/floor/bac-1/fault",
                                   "tabled/floor/bac-1/status"],
                  "tabled-qpoker-1": ["tabled/floor/qpoker-1/outcome",
                                      "tabled/floor/qpoker-1/fault"],
                  "pit": ["tabled/floor/pit/alert"]}
        before = len(floor.lines)
        sent = 0
        for identity, names in topics.items():
            async with aiomqtt.Client(host, port, username=identity,
                                      password=secret(workdir, identity),
                                      identifier=f"test-garbage-{identity}") as client:
                for topic in names:
                    for payload in garbage:
                        await client.publish(topic, payload, qos=1)
                        sent += 1
        await line(floor, r"\[floor\] malformed message on tabled/floor/pit/alert \('severity' "
                          r"is missing, not text\)", after=before)
        await line(floor, r"\[floor\] malformed message on tabled/floor/bac-1/outcome \(not "
                          r"JSON\)", after=before)
        # the floor plays on: new outcomes from each game after the garbage
        after = len(floor.lines)
        for pattern in (r"^bac-1 +round", r"^craps-1 +roll", r"^qpoker-1 +round"):
            await line(floor, pattern, after=after)
        assert floor.proc.poll() is None
        malformed = [t for t in floor.lines[before:] if "malformed message" in t]
        # every payload that is not what its topic promises is shown (a status that says no
        # state of its own is no news: it is not printed at all)
        assert len(malformed) >= sent - 2 * len(garbage), "\n".join(malformed)
        assert not any("Traceback" in t for t in floor.lines)
    assert floor.proc.returncode == 0
    assert re.search(r"\[floor\] \d+ malformed message\(s\) shown and skipped",
                     "\n".join(floor.lines[-10:]))


def daemon_of(floor_pid: int, table: str) -> int:
    """The PID of ``table``'s daemon, a child of the floor (by its command line)."""
    for pid in children_of(floor_pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"run" in argv and any(a.endswith(f"/{table}/tabled.toml".encode())
                                      for a in argv):
                return pid
    raise AssertionError(f"no daemon of {table} among the floor's children")


async def test_a_killed_daemon_is_started_again_and_the_pit_shows_it_offline_then_back(
        tmp_path: Path) -> None:
    """bac-1's daemon and qpoker-1's (in the middle of its round: the dealer's commands are
    then not sent) killed: both back, and the Q Poker dealer finishes the round the daemon
    resumes well before the floor's stall dealer (30 s) would deal again."""
    async with started(*FLOOR, "--no-faults", "--workdir", str(tmp_path / "w")) as floor:
        watch = await line(floor, r"mosquitto_sub -h (\S+) -p (\d+) -u (\S+) -P (\S+) ")
        host, port = watch.group(1), int(watch.group(2))
        await line(floor, r"^bac-1 +round +\d+")
        collector = Collector()
        async with aiomqtt.Client(host, port, username=watch.group(3),
                                  password=watch.group(4), identifier="test-watcher") as client:
            await client.subscribe("tabled/floor/pit/alert", qos=1)
            await client.subscribe("tabled/floor/+/status", qos=1)
            reading = asyncio.create_task(collector.run(client))
            try:
                # qpoker-1 dealt, its players deciding (a round every ~1 s: the deal is pressed
                # 0.2 s after an outcome and takes about half a second)
                await line(floor, r"^qpoker-1 +round +\d+", after=len(floor.lines))
                await asyncio.sleep(0.6)
                killed_at = len(floor.lines)
                for table in ("qpoker-1", "bac-1"):
                    os.kill(daemon_of(floor.proc.pid, table), signal.SIGKILL)
                for table in ("bac-1", "qpoker-1"):
                    await line(floor, rf"\[floor\] {table} daemon killed by SIGKILL .*starting "
                                      r"it again in 3 s", after=killed_at)
                    # the pit raises the table's offline alert, on the topic everyone can read
                    async with asyncio.timeout(T_WAIT):
                        await until(lambda t=table: collector.alert(t, "offline", "open"))
                # the others play on meanwhile
                await line(floor, r"^craps-1 +roll", after=killed_at)
                for table in ("bac-1", "qpoker-1"):
                    await line(floor, rf"\[floor\] {table} daemon started again", after=killed_at)
                    back_at = next(i for i, t in enumerate(floor.lines)
                                   if f"{table} daemon started again" in t)
                    # back: online again, new outcomes, and the pit clears the alert
                    async with asyncio.timeout(T_WAIT):
                        await until(lambda t=table: "offline" in (states := collector.states(t))
                                    and states[-1] == "online")
                    await line(floor, rf"^{table} +round +\d+", after=back_at,
                               timeout=20 if table == "qpoker-1" else T_WAIT)
                    async with asyncio.timeout(T_WAIT):
                        await until(lambda t=table: collector.alert(t, "offline", "cleared"))
            finally:
                reading.cancel()
        assert floor.proc.poll() is None
        said = "\n".join(floor.lines[killed_at:])
        assert "no outcome for" not in said  # (the stall dealer had nothing to do)
    assert floor.proc.returncode == 0


def hold_a_connection(port: int) -> socket.socket:
    """A keep-alive connection to the page, left open: the server closes it first when it
    stops, so its side of it stays in TIME_WAIT (as a browser's does after a floor stops)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(65536)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:  # all of it: a socket closed with unread data resets instead
        body += sock.recv(65536)
    return sock


def plain_bind(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def test_a_floor_started_again_at_once_keeps_its_web_port(tmp_path: Path) -> None:
    port = free_port()
    async with started(*FLOOR, "--web-port", str(port)) as first:
        await line(first, r"\[floor\] the pit serves the floor page")
        held = await asyncio.to_thread(hold_a_connection, port)
    held.close()
    await asyncio.sleep(0.2)  # its FIN reaches the server side: TIME_WAIT
    assert first.proc.returncode == 0
    # the port is in TIME_WAIT: a bind without SO_REUSEADDR fails, as the old check's did
    assert not plain_bind(port)
    async with started(*FLOOR, "--web-port", str(port)) as second:
        await line(second, rf"\[floor\] the pit serves the floor page: "
                           rf"http://127\.0\.0\.1:{port}/")
