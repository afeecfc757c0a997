"""A whole table for the fault campaigns: broker, simulated device, daemon, a floor consumer,
and — for Q Poker — a dealer console; plus the final audit that compares what the consumer
received with the journal, with a replay of itself, and with what the device really dealt (its
simulator's ledger, compared by ``tests/truth.py``).

Everything is real: Mosquitto (with persistence, so that a consumer's session survives a broker
restart), ``tabled-sim`` processes, ``tabled run`` processes that the campaigns kill, restart and
starve of disk, and aiomqtt clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt

from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import Journal
from tabled.simulators.ledger import read_ledger
from tabled.tools.demo import Console
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    replay,
    strip_envelope,
    write_config,
)
from tests.truth import Truth, compare, expected_outcomes

TOPIC_BASE = "tabled/lab/t1"
DURABLE = ("event", "outcome", "fault")
LEDGER = "ledger.jsonl"  # what the simulated device dealt (docs/protocols/ledger.md)


@dataclass
class Audit:
    """What the consumer received, checked against the journal, against replay, and against
    what the device dealt (``truth``: the ledger comparison of tests/truth.py)."""

    game: str
    rounds: int = 0
    outcomes_received: int = 0
    redeliveries: int = 0
    lost: int = 0
    duplicated_under_new_number: int = 0
    gaps: int = 0
    out_of_order: int = 0
    replay_equal: bool = False
    journal_verified: bool = False
    voids: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    truth: Truth | None = None

    @property
    def ok(self) -> bool:
        return (not self.problems and self.lost == 0 and self.duplicated_under_new_number == 0
                and self.gaps == 0 and self.out_of_order == 0 and self.replay_equal
                and self.journal_verified and self.truth is not None and self.truth.ok)

    def summary(self) -> dict[str, Any]:
        return {**{k: v for k, v in vars(self).items() if k != "truth"},
                "voids": dict(self.voids),
                "truth": None if self.truth is None else self.truth.summary()}


def sim_args(game: str, rounds: int, seed: int, pace: float, workdir: Path,
             faults: list[str]) -> list[str]:
    extra = [arg for fault in faults for arg in ("--fault", fault)]
    extra += ["--ledger", str(workdir / LEDGER)]
    if game == "baccarat":
        return ["shoe", "--seed", str(seed), "--hands", str(rounds), "--pace", str(pace),
                "--link", str(workdir / "device"), "--forever", *extra]
    if game == "craps":
        # The sensor throws on its own clock and keeps 64 unacknowledged reports: faster than
        # ~20 throws/s, a daemon restart would outlast its memory (a real table throws every
        # 20-60 s).
        pace = max(pace, 0.05)
        return ["dice", "--seed", str(seed), "--count", str(rounds), "--pace", str(pace),
                "--socket", str(workdir / "dice.sock"), "--forever", *extra]
    return ["shuffler", "--game", "qpoker", "--seed", str(seed), "--rounds", str(rounds),
            "--pace", str(pace), "--link", str(workdir / "device"), "--step", "--forever",
            *extra]


class Table:
    """One table under test. Use as ``async with Table(...) as table:``."""

    def __init__(self, game: str, workdir: Path, *, rounds: int, seed: int = 1,
                 pace: float = 0.01, faults: list[str] | None = None,
                 journal: Path | None = None, device_options: dict[str, Any] | None = None,
                 log_level: str = os.environ.get("TABLED_CAMPAIGN_LOG", "info")) -> None:
        self.game, self.workdir, self.rounds, self.seed = game, workdir, rounds, seed
        workdir.mkdir(parents=True, exist_ok=True)
        # a consumer that falls behind in a burst must not lose messages to the broker's
        # default per-client queue limit (1000): the audit is about the daemon's delivery
        self.broker = Mosquitto(workdir=workdir / "broker", persistence=True,
                                extra_config=["max_queued_messages 0"])
        self.faults = faults or []
        self.sim = Simulator(sim_args(game, rounds, seed, pace, workdir, self.faults),
                             workdir / "simulator.log")
        self.journal_path = journal or workdir / "journal.sqlite"
        self.device_options = device_options or {}
        self.log_level = log_level
        self.daemon: Daemon
        self.sub: Subscriber
        self.key = secrets.token_hex(32).encode()
        self._console_task: asyncio.Task[None] | None = None
        self.deals = 0
        self.dealt_after = 0  # the last round whose outcome made the console press "deal"
        self._pending_since: float | None = None  # a deal complete, its outcome awaited

    async def __aenter__(self) -> Table:
        self.broker.start()
        printed = self.sim.start()
        url = printed
        if self.game == "craps":
            assert self.sim.proc is not None and self.sim.proc.stdout is not None
            url = self.sim.proc.stdout.readline().split(":", 1)[1].strip()
        family = {"baccarat": "shoe", "craps": "dice", "qpoker": "shuffler"}[self.game]
        key_file = self.workdir / "console.key"
        key_file.write_bytes(self.key)
        os.chmod(key_file, 0o600)
        config = write_config(
            self.workdir / "tabled.toml", game=self.game, journal=self.journal_path,
            broker_url=self.broker.url,
            devices=[{"id": f"{family}-1", "family": family, "url": url,
                      "reconnect_min": 0.1, "reconnect_max": 0.5, **self.device_options}],
            commands={"enabled": True, "hmac_key_file": str(key_file)}
            if self.game == "qpoker" else None)
        text = config.read_text().replace('level = "debug"', f'level = "{self.log_level}"')
        config.write_text(text)
        self.daemon = Daemon(config, self.workdir / "daemon.log")
        self.sub = Subscriber("127.0.0.1", self.broker.port, f"{TOPIC_BASE}/#",
                              identifier="floor-consumer", clean_session=False)
        await self.sub.__aenter__()
        self.daemon.start()
        if self.game == "qpoker":
            self._console_task = asyncio.create_task(self._console())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._console_task is not None:
            self._console_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._console_task
        self.sim.stop()
        self.daemon.stop()
        await self.sub.__aexit__(None, None, None)
        self.broker.cleanup()

    async def _console(self) -> None:
        """The dealer console of Q Poker: decisions and reveal once a deal is complete (again
        every 2 s while no outcome follows: a command sent while the daemon was down is lost),
        and "deal" on the machine after each outcome. One console for the whole run: what it
        follows of the round (its seats, the dealer's cards seen) survives a broker outage
        that falls in the middle of a deal; a console made afresh on each connection missed
        the deal's start and never decided (the bounded broker campaign stalled so, once)."""
        console: Console | None = None
        while True:
            try:
                # a persistent session: what the table publishes while the console is away (a
                # broker outage) waits for it, so it never misses the end of a deal
                async with aiomqtt.Client("127.0.0.1", self.broker.port,
                                          identifier="dealer-console",
                                          clean_session=False) as client:
                    await client.subscribe(f"{TOPIC_BASE}/event", qos=1)
                    await client.subscribe(f"{TOPIC_BASE}/outcome", qos=1)
                    # its commands name their round: one that lands late, in the next round
                    # (a round its exposed dealer's card voided at once, a retry), is declined
                    if console is None:
                        console = Console(client, TOPIC_BASE, self.key, self.seed)
                    else:
                        console.client = client
                    async with asyncio.TaskGroup() as group:
                        group.create_task(self._console_retry(console))
                        async for message in client.messages:
                            body = json.loads(message.payload)  # type: ignore[arg-type]
                            if str(message.topic).endswith("/outcome"):
                                self._pending_since = None
                                console.round_over()
                                # once per round: a QoS 1 re-delivery must not deal twice
                                if body["round"] > self.dealt_after:
                                    self.dealt_after = body["round"]
                                    self._deal()
                                continue
                            if body.get("type") == "round_start":
                                self._pending_since = None
                            before = console.dealer_cards
                            await console.event(body)
                            if console.dealer_cards == 3 and before != 3:
                                self._pending_since = time.monotonic()
            except* aiomqtt.MqttError:
                await asyncio.sleep(0.2)

    async def _console_retry(self, console: Console) -> None:
        while True:
            await asyncio.sleep(0.5)
            since = self._pending_since
            if since is not None and time.monotonic() - since > 2.0:
                self._pending_since = time.monotonic()
                for seat in console.seats:
                    await console.send("decision", {"seat": seat, "play": True})
                await console.send("reveal", {})

    def _deal(self) -> None:
        proc = self.sim.proc
        if proc is not None and proc.stdin is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.stdin.write("deal\n")
                proc.stdin.flush()
                self.deals += 1

    async def outcomes(self, count: int, timeout: float = 120.0) -> None:
        """Wait for ``count`` outcomes, or for every outcome the table owes once the device
        has played its whole script, if that is fewer: throws the dice sensor said it lost
        (it forgets the oldest of 64 while no host acknowledges, as in a storm of kills just
        after each start) have none, and the audit checks that each was named."""
        deadline = time.monotonic() + timeout
        while self.sub.distinct("/outcome") < count:
            if self._owes_nothing():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.sub.distinct('/outcome')}/{count} messages on "
                                     "/outcome")
            await asyncio.sleep(0.05)

    def ledger(self) -> list[dict[str, Any]]:
        """What the device has dealt so far, one line a round (or a report, for the dice)."""
        path = self.workdir / LEDGER
        return read_ledger(path) if path.exists() else []

    def script_length(self) -> int:
        """How many lines the device's ledger holds once it has played its whole script: one
        per hand or round; the dice's no-rolls and sensor faults are reports of their own."""
        if self.game != "craps":
            return self.rounds
        return self.rounds + sum(1 for fault in self.faults
                                 if fault.partition("@")[0] in ("off_table", "sensor"))

    async def finish(self, timeout: float = 600.0) -> None:
        """Wait until the device has played its whole script, the consumer has an outcome for
        every round of it (as its ledger counts them), and every durable message the journal
        holds. A table that falls short is not an error here: the audit then says precisely
        what is missing, against what was dealt."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._owes_nothing():
                break
            await asyncio.sleep(0.2)
        await self.settle()

    def _owes_nothing(self) -> bool:
        """The device has played its whole script and the consumer has an outcome for every
        round of it (a throw the sensor said it lost owes none)."""
        ledger = self.ledger()
        return (len(ledger) >= self.script_length() and self.sub.distinct("/outcome")
                >= expected_outcomes(self.game, ledger, self.sub.on("/event")))

    async def restart(self, timeout: float = 30.0) -> None:
        """Start the daemon again and wait for its birth record (it is up: journal rebuilt,
        broker connected)."""
        self.daemon.start()
        assert self.daemon.proc is not None
        pid = self.daemon.proc.pid
        deadline = time.monotonic() + timeout
        while not any(p.get("pid") == pid for p in self.sub.on("/t1/status")):
            if time.monotonic() > deadline or not self.daemon.alive():
                raise AssertionError(f"no birth record: {self.daemon.log_lines()[-15:]}")
            await asyncio.sleep(0.02)

    # -- the audit ------------------------------------------------------------------------------

    def journal_rows(self) -> dict[str, dict[int, str]]:
        """Every durable message the journal holds, by topic and number, as it is published
        (read as the publisher reads them: an input published as itself is its message)."""
        rows: dict[str, dict[int, str]] = {t: {} for t in DURABLE}
        journal = Journal(self.journal_path, create=False)
        try:
            after = 0
            while batch := journal.delivery.outputs_after(after, 10_000):
                for message in batch:
                    rows[message.topic][message.stream_seq] = message.payload
                after = batch[-1].id
        finally:
            journal.close()
        return rows

    async def settle(self, timeout: float = 60.0) -> None:
        """Wait until the consumer has every durable message the journal holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.journal_rows()
            if all(self.sub.distinct(f"/{t}") >= len(rows[t]) for t in DURABLE):
                return
            await asyncio.sleep(0.2)

    def audit(self, options: dict[str, Any] | None = None) -> Audit:
        audit = Audit(self.game)
        rows = self.journal_rows()
        for topic in DURABLE:
            received = [p for t, p, _ in self.sub.messages if t == f"{TOPIC_BASE}/{topic}"]
            seen: dict[int, dict[str, Any]] = {}
            last = -1
            for payload in received:
                seq = payload["table_seq"]
                if seq is None:  # the journal failure: outside the durable sequence
                    continue
                if seq in seen:
                    audit.redeliveries += 1
                    if seen[seq] != payload:
                        audit.problems.append(f"{topic} {seq} re-delivered with other content")
                    continue
                if seq != last + 1:
                    if seq > last + 1:
                        audit.gaps += 1
                    else:
                        audit.out_of_order += 1
                seen[seq] = payload
                last = max(last, seq)
            for seq, body in rows[topic].items():
                if seq not in seen:
                    audit.lost += 1
                elif json.loads(body) != seen[seq]:
                    audit.problems.append(f"{topic} {seq} differs from the journal")
            if topic == "outcome":
                outcomes = [seen[k] for k in sorted(seen)]
                rounds = [o["round"] for o in outcomes]
                audit.rounds = len(rounds)
                audit.outcomes_received = len(received)
                audit.duplicated_under_new_number = len(rounds) - len(set(rounds))
                if rounds != list(range(1, len(rounds) + 1)):
                    audit.problems.append("outcome rounds are not 1..N")
                audit.voids = Counter(o["article"] for o in outcomes if o["status"] == "void")
            if topic == "event":
                events = [seen[k] for k in sorted(seen)]
                keys = [(e.get("device_boot"), e.get("device_msg"), e["type"]) for e in events
                        if e.get("device_msg") is not None and not e.get("withheld")]
                dupes = len(keys) - len(set(keys))
                if dupes:
                    audit.problems.append(f"{dupes} device messages journaled twice")
        events = [strip_envelope(p) for p in self._ordered("event")]
        outcomes = [strip_envelope(p) for p in self._ordered("outcome")]
        audit.replay_equal = replay(self.game, events, options) == outcomes
        from tabled.daemon.journal import Journal

        journal = Journal(self.journal_path, create=False)
        audit.journal_verified = journal.verify().ok
        journal.close()
        # and what was published against what the device really dealt
        audit.truth = compare(self.game, self._ordered("outcome"), self.ledger(),
                              self._ordered("event"))
        return audit

    def _ordered(self, topic: str) -> list[dict[str, Any]]:
        seen: dict[int, dict[str, Any]] = {}
        for t, payload, _ in self.sub.messages:
            if t == f"{TOPIC_BASE}/{topic}" and payload["table_seq"] is not None:
                seen.setdefault(payload["table_seq"], payload)
        return [seen[k] for k in sorted(seen)]

    def starts(self) -> list[dict[str, Any]]:
        db = sqlite3.connect(self.journal_path)
        out = [json.loads(b) for (b,) in db.execute(
            "SELECT body FROM journal WHERE kind = 'start' ORDER BY id")]
        db.close()
        return out
