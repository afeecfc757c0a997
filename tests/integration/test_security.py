"""Security end to end (issue 5): no one gets in, and nothing leaks.

Each test starts its own Mosquitto: the floor's example config (``config/mosquitto/``) with a CA
made by trustme (``tests/integration/tls.py``), or a plain one where only the daemon's own checks
are at stake. The daemon runs as ``tabled run`` at log level debug; the devices are ``tabled-sim``
processes; the dealer console signs its commands with the shared key, as a real one does.

1. TLS: the daemon publishes over ``mqtts://`` with a client certificate and a password, with a
   certificate alone, with a password alone; with a wrong CA, a wrong password, no client
   certificate or one from a CA the broker does not trust, it is refused, logs why, keeps
   retrying and keeps every outcome in its journal; once its config is right, they all go out.
2. The ACL: only the table's dealer console reaches its daemon (not another table's console,
   not the floor, not the daemon's own identity), the daemon's identity cannot publish under
   another table's prefix, and the floor reads but cannot command or forge.
3. Commands: stale, replayed, forged, unsigned and tampered commands are refused, journaled
   and published on ``…/fault``, and change nothing; a replay after a restart is refused too.
4. No dealer's card in any MQTT message or log line before the event that ends its round.
5. Secrets: the daemon refuses a secret file others can read, without showing it; no log line
   or message carries the broker password or the HMAC key.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import aiomqtt
import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabled.contract.events import CardDealt, Decision, Reveal, RoundStart, Void
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.broker import Mosquitto
from tabled.daemon.commands import sign
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import TableRuntime
from tests.integration.harness import (
    Daemon,
    Simulator,
    Subscriber,
    assert_contiguous,
    replay,
    strip_envelope,
    write_config,
)
from tests.integration.tls import (
    Identity,
    Pki,
    example_acl,
    floor_broker,
    password_file,
    secret_file,
)

BASE = "tabled/lab/t1"
#: The identities of the test floor (the example ACL's, for site lab, tables t1 and t2).
DAEMON, CONSOLE, FLOOR, OTHER_CONSOLE = "tabled-t1", "console-t1", "floor", "console-t2"
#: Q Poker rounds of the no-leak test; TABLED_SECURITY_ROUNDS=500 for a longer run.
ROUNDS = int(os.environ.get("TABLED_SECURITY_ROUNDS", "40"))

CARD = re.compile(r"[A2-9TJQK][SHCD]")
WORD = re.compile(r"[A-Za-z0-9]+")


# -- the test floor ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@dataclass
class Floor:
    """A running floor broker and everyone's credentials."""

    pki: Pki
    broker: Mosquitto
    passwords: dict[str, str]
    identities: dict[str, Identity]
    with_certificates: bool = True
    with_passwords: bool = True

    def login(self, name: str) -> dict[str, Any]:
        """aiomqtt keyword arguments for ``name`` (a console, the floor, an intruder)."""
        kwargs: dict[str, Any] = {
            "tls_context": self.pki.context(
                self.identities[name] if self.with_certificates else None),
            "identifier": f"{name}-{secrets.token_hex(4)}",
        }
        if self.with_passwords:
            kwargs.update(username=name, password=self.passwords[name])
        return kwargs

    def client(self, name: str) -> aiomqtt.Client:
        return aiomqtt.Client("127.0.0.1", self.broker.port, **self.login(name))

    def subscriber(self, topic: str = "tabled/#") -> Subscriber:
        return Subscriber("127.0.0.1", self.broker.port, topic, **self.login(FLOOR))

    @property
    def url(self) -> str:
        return f"mqtts://127.0.0.1:{self.broker.port}"

    def daemon_settings(self, workdir: Path, *, password: str | None = None,
                        ca_file: Path | None = None, identity: Identity | None = None,
                        ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``[mqtt]`` and ``[mqtt.tls]`` of the daemon of lab/t1: right, unless another
        password, CA or client certificate is given."""
        mqtt: dict[str, Any] = {}
        if self.with_passwords:
            secret = password if password is not None else self.passwords[DAEMON]
            mqtt = {"username": DAEMON,
                    "password_file": secret_file(workdir / "broker.password", secret)}
        tls: dict[str, Any] = {"ca_file": ca_file or self.pki.ca_file}
        identity = identity or (self.identities[DAEMON] if self.with_certificates else None)
        if identity is not None:
            tls.update(cert_file=identity.cert, key_file=identity.key)
        return mqtt, tls


@pytest.fixture
def floor(request: pytest.FixtureRequest, tmp_path: Path, pki: Pki) -> Iterator[Floor]:
    """The example broker config as it is (a certificate and a password), or, parametrized
    indirectly with ``(certificates, passwords)``, with one of the two only."""
    with_certificates, with_passwords = getattr(request, "param", (True, True))
    names = (DAEMON, CONSOLE, FLOOR, OTHER_CONSOLE)
    passwords = {name: secrets.token_urlsafe(18) for name in names}
    hashed = password_file(tmp_path / "passwd", passwords) if with_passwords else None
    broker = floor_broker(pki, tmp_path / "broker", passwords=hashed,
                          acl=example_acl(tmp_path / "tabled.acl"),
                          identity_as_username=not with_passwords,
                          require_certificate=with_certificates)
    with broker:
        yield Floor(pki, broker, passwords, {name: pki.identity(name) for name in names},
                    with_certificates, with_passwords)


# -- devices, daemon, dealer console ----------------------------------------------------------


def shoe(workdir: Path, hands: int = 5) -> Simulator:
    """A baccarat shoe that deals ``hands`` hands by itself (no console needed)."""
    return Simulator(["shoe", "--seed", "4", "--hands", str(hands), "--pace", "0.005",
                      "--forever", "--link", str(workdir / "shoe")], workdir / "sim.log")


def shuffler(workdir: Path, *args: str) -> Simulator:
    """A Q Poker shuffler-dealer that waits for the dealer's "deal" before each new round."""
    return Simulator(["shuffler", "--game", "qpoker", "--link", str(workdir / "shuffler"),
                      "--step", "--forever", "--pace", "0.002", *args], workdir / "sim.log")


def hmac_key(workdir: Path) -> tuple[bytes, Path]:
    key = secrets.token_hex(32).encode()
    return key, secret_file(workdir / "console.key", key)


def daemon_for(workdir: Path, game: str, url: str, sim_path: str, *,
               key_file: Path | None = None, mqtt: dict[str, Any] | None = None,
               tls: dict[str, Any] | None = None) -> Daemon:
    family = "shoe" if game == "baccarat" else "shuffler"
    commands = {"enabled": True, "hmac_key_file": key_file} if key_file else None
    config = write_config(workdir / "tabled.toml", game=game, journal=workdir / "journal.sqlite",
                          broker_url=url, mqtt=mqtt, tls=tls, commands=commands,
                          devices=[{"id": f"{family}-1", "family": family, "url": sim_path}])
    return Daemon(config, workdir / "daemon.log")


def command(key: bytes, name: str, args: dict[str, Any] | None = None, *,
            ts: str | None = None, console: str = "pit-1") -> dict[str, Any]:
    """A command as the dealer console signs it (docs/mqtt.md "Commands")."""
    return sign({"cmd": name, "args": args or {}, "console": console,
                 "ts": ts or rfc3339_now(), "nonce": secrets.token_hex(16)}, key)


def shifted(seconds: float) -> str:
    """An RFC 3339 timestamp ``seconds`` away from now, as a console's clock would write it."""
    when = datetime.now(UTC) + timedelta(seconds=seconds)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def until(sub: Subscriber, received: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait until the subscriber has received what ``received`` looks for."""
    async with asyncio.timeout(timeout):
        while True:
            sub.changed.clear()
            if received():
                return
            await sub.changed.wait()


async def send(client: aiomqtt.Client, body: dict[str, Any]) -> None:
    """Publish a command and wait for the broker's PUBACK: from then on the broker has routed
    it, or dropped it, before anything published after it."""
    await client.publish(f"{BASE}/cmd/{body['cmd']}", json.dumps(body), qos=1)


OnDeal = Callable[[list[int]], Awaitable[None]]


class Pit:
    """The pit of table lab/t1: the dealer console's connection and the shuffler's "deal"
    button. :meth:`round` waits for a complete deal (the dealer's hand, face down), lets
    ``on_deal`` act, and returns the round's outcome."""

    def __init__(self, client: aiomqtt.Client, sim: Simulator) -> None:
        self.client, self.sim = client, sim
        self.replies: list[dict[str, Any]] = []

    async def subscribe(self) -> None:
        for topic in ("event", "outcome", "cmd/+/reply"):
            await self.client.subscribe(f"{BASE}/{topic}", qos=1)

    def deal(self) -> None:
        assert self.sim.proc is not None and self.sim.proc.stdin is not None
        self.sim.proc.stdin.write("deal\n")
        self.sim.proc.stdin.flush()

    async def round(self, on_deal: OnDeal, timeout: float = 30.0) -> dict[str, Any]:
        seats: list[int] = []
        async with asyncio.timeout(timeout):
            async for message in self.client.messages:
                topic = str(message.topic)
                body = json.loads(message.payload)
                if topic.endswith("/reply"):
                    self.replies.append(body)
                elif topic.endswith("/outcome"):
                    return dict(body)
                elif body["type"] == "round_start":
                    seats = list(body["seats"])
                elif body["type"] == "withheld" and body["seat"] == "dealer":
                    await on_deal(seats)  # the deal is complete (Art. 7(2): dealer last)
        raise AssertionError("the broker went away")

    async def settle(self, replies: int, timeout: float = 10.0) -> None:
        """Wait until ``replies`` replies have come in all (each command gets one)."""
        async with asyncio.timeout(timeout):
            while len(self.replies) < replies:
                message = await anext(self.client.messages)
                if str(message.topic).endswith("/reply"):
                    self.replies.append(json.loads(message.payload))


def play_all(key: bytes, client: aiomqtt.Client, sent: list[dict[str, Any]] | None = None,
             fold: Iterable[int] = ()) -> OnDeal:
    """The genuine console: a decision per seat (Play, or fold for ``fold``), then reveal."""
    folding = set(fold)

    async def on_deal(seats: list[int]) -> None:
        for body in [*(command(key, "decision", {"seat": s, "play": s not in folding})
                       for s in seats), command(key, "reveal")]:
            await send(client, body)
            if sent is not None:
                sent.append(body)

    return on_deal


def journal_of(daemon: Daemon) -> Journal:
    """The journal a stopped daemon left."""
    text = daemon.config.read_text()
    path = re.search(r'\[journal\]\npath = "([^"]+)"', text)
    assert path is not None
    return Journal(path.group(1), create=False)


def journaled(journal: Journal, topic: str) -> list[dict[str, Any]]:
    return [json.loads(o.payload) for o in journal.delivery.outputs_after(0, 100_000)
            if o.topic == topic]


def log_records(daemon: Daemon) -> list[dict[str, Any]]:
    """The daemon's log lines: JSON after the journal priority prefix, else the raw text."""
    records = []
    for line in daemon.log_lines():
        try:
            records.append(json.loads(line[3:] if line.startswith("<") else line))
        except ValueError:
            records.append({"raw": line})
    return records


def logged(daemon: Daemon, event: str) -> list[dict[str, Any]]:
    return [r for r in log_records(daemon) if r.get("event") == event]


# -- 1. TLS and credentials -------------------------------------------------------------------


@pytest.mark.parametrize("floor", [(True, True), (True, False), (False, True)],
                         ids=["certificate_and_password", "certificate_identity",
                              "password_only"], indirect=True)
async def test_the_daemon_publishes_over_tls(tmp_path: Path, floor: Floor) -> None:
    """mqtts:// with [mqtt.tls] ca_file: a client certificate and a password (the example
    config as it is), the identity from the certificate alone, or a password alone."""
    sim = shoe(tmp_path)
    mqtt, tls = floor.daemon_settings(tmp_path)
    daemon = daemon_for(tmp_path, "baccarat", floor.url, sim.start(), mqtt=mqtt, tls=tls)
    try:
        async with floor.subscriber() as sub:
            daemon.start()
            outcomes = await sub.wait_for("/outcome", 5, alive=daemon)
    finally:
        sim.stop()
        assert daemon.stop() == 0
    assert [o["round"] for o in outcomes] == [1, 2, 3, 4, 5]
    assert_contiguous(outcomes)
    # the broker knew the daemon as tabled-t1, from its password or its certificate
    assert re.search(rf"as tabled-lab-t1 \(.*u'{DAEMON}'\)", floor.broker.log_path.read_text())
    assert logged(daemon, "broker_connected")[0]["url"] == floor.url


#: One wrong thing each; what the daemon logs about it.
REFUSALS = {
    "wrong_ca": "CERTIFICATE_VERIFY_FAILED",
    "wrong_password": "Not authorized",
    "no_client_certificate": "CERTIFICATE_REQUIRED",
    "untrusted_client_certificate": "UNKNOWN_CA",
}


def refused_settings(floor: Floor, workdir: Path, case: str,
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    if case == "wrong_ca":
        return floor.daemon_settings(workdir, ca_file=floor.pki.rogue_ca_file)
    if case == "wrong_password":
        return floor.daemon_settings(workdir, password="not-" + floor.passwords[DAEMON])
    if case == "no_client_certificate":
        mqtt, tls = floor.daemon_settings(workdir)
        return mqtt, {"ca_file": tls["ca_file"]}
    # the right name, from a CA the broker does not trust
    return floor.daemon_settings(workdir, identity=floor.pki.identity(DAEMON, rogue=True))


def mentions(daemon: Daemon, text: str) -> int:
    return sum(text in line for line in daemon.log_lines())


@dataclass
class Refused:
    """One daemon of the refusal test, with its shoe."""

    case: str
    workdir: Path
    sim: Simulator
    url: str = ""
    daemon: Daemon | None = None

    def start(self, floor: Floor, *, right: bool) -> Daemon:
        mqtt, tls = (floor.daemon_settings(self.workdir) if right
                     else refused_settings(floor, self.workdir, self.case))
        self.url = self.url or self.sim.start()
        self.daemon = daemon_for(self.workdir, "baccarat", floor.url, self.url, tls=tls,
                                 mqtt={**mqtt, "client_id": f"tabled-lab-t1-{self.case}"})
        self.daemon.start()
        return self.daemon

    def refused_enough(self) -> bool:
        """Five outcomes journaled, and the refusal logged twice: it keeps retrying."""
        assert self.daemon is not None and self.daemon.alive()
        return (len(logged(self.daemon, "outcome")) == 5
                and mentions(self.daemon, REFUSALS[self.case]) >= 2)

    def stop(self) -> None:
        self.sim.stop()
        if self.daemon is not None:
            self.daemon.stop()


async def test_a_refused_daemon_keeps_its_outcomes_until_its_credentials_are_right(
        tmp_path: Path, floor: Floor) -> None:
    """Four daemons side by side, each with one thing wrong: the broker (or, for a wrong CA,
    the daemon itself) refuses the connection; each logs why, keeps retrying, journals its five
    outcomes and publishes nothing. Restarted with the right config, each publishes all five,
    exactly as journaled, numbered from 0."""
    tables = []
    for case in REFUSALS:
        (tmp_path / case).mkdir()
        tables.append(Refused(case, tmp_path / case, shoe(tmp_path / case)))
    try:
        async with floor.subscriber() as sub:
            for table in tables:
                table.start(floor, right=False)
            # A TLS handshake the broker refuses is only noticed when the CONNACK wait times
            # out (10 s): every case has tried twice within about 11 s.
            deadline = time.monotonic() + 30
            while not all(table.refused_enough() for table in tables):
                assert time.monotonic() < deadline, [t.case for t in tables
                                                     if not t.refused_enough()]
                await asyncio.sleep(0.2)
            assert sub.messages == []  # nothing from any of them reached the floor
        # the broker's side of it: a password, a missing and an untrusted certificate refused
        said = floor.broker.log_path.read_text()
        for refusal in ("not authorised", "peer did not return a certificate",
                        "certificate verify failed"):
            assert refusal in said
        for table in tables:
            assert table.daemon is not None and table.daemon.stop() == 0
            journal = journal_of(table.daemon)
            assert len(journaled(journal, "outcome")) == 5 and journal.delivery.acked_id() == 0
            journal.close()

        for table in tables:
            async with floor.subscriber() as sub:
                daemon = table.start(floor, right=True)
                received = await sub.wait_for("/outcome", 5, alive=daemon)
            assert daemon.stop() == 0
            journal = journal_of(daemon)
            assert received == journaled(journal, "outcome"), table.case
            journal.close()
            assert [o["table_seq"] for o in received] == [0, 1, 2, 3, 4], table.case
    finally:
        for table in tables:
            table.stop()


# -- 2. the ACL -------------------------------------------------------------------------------


async def test_only_the_tables_console_reaches_its_daemon(tmp_path: Path, floor: Floor) -> None:
    """With the example ACL, during a round whose deal is complete:

    (a) another table's console, the floor and the daemon's own identity each publish a void
        for lab/t1, correctly signed with lab/t1's key: none reaches the daemon (no reply,
        nothing journaled, the round completes), and the floor, which reads every table's
        topics, never sees them;
    (b) the daemon's identity publishes under lab/t2's prefix: a subscriber with read rights
        on every table sees nothing of it, though it sees the daemon's identity publish under
        lab/t1;
    (c) the floor reads everything of lab/t1 but forges neither a command nor an outcome.

    The daemon runs at debug with a broker password and an HMAC key: neither is in any log
    line or message (secrets are never logged).
    """
    key, key_file = hmac_key(tmp_path)
    sim = shuffler(tmp_path, "--seed", "11", "--seats", "1,2")
    mqtt, tls = floor.daemon_settings(tmp_path)
    daemon = daemon_for(tmp_path, "qpoker", floor.url, sim.start(), key_file=key_file,
                        mqtt=mqtt, tls=tls)
    intruders = {name: command(key, "void", {"reason": f"sent by {name}"})
                 for name in (OTHER_CONSOLE, FLOOR, DAEMON)}
    genuine: list[dict[str, Any]] = []
    try:
        async with floor.subscriber() as sub, floor.client(CONSOLE) as console, \
                floor.client(OTHER_CONSOLE) as other, floor.client(FLOOR) as reader, \
                floor.client(DAEMON) as impostor:
            pit = Pit(console, sim)
            await pit.subscribe()
            by = {OTHER_CONSOLE: other, FLOOR: reader, DAEMON: impostor}
            daemon.start()

            async def attack_then_play(seats: list[int]) -> None:
                for name, body in intruders.items():
                    await send(by[name], body)
                # (c) a forged outcome from the floor, to the topic the console reads
                await reader.publish(f"{BASE}/outcome", json.dumps(
                    {"v": 1, "type": "outcome", "round": 1, "status": "void"}), qos=1)
                # the positive control: the other console commands its own table
                await other.publish("tabled/lab/t2/cmd/void", json.dumps({"cmd": "void"}),
                                    qos=1)
                await play_all(key, console, genuine)(seats)

            outcome = await pit.round(attack_then_play)
            await pit.settle(len(genuine))
            # (b) the daemon's identity under another table's prefix, then under its own
            await impostor.publish("tabled/lab/t2/outcome", json.dumps(
                {"v": 1, "type": "outcome", "round": 1, "status": "void"}), qos=1)
            await impostor.publish("tabled/lab/t2/cmd/void", json.dumps(intruders[DAEMON]),
                                   qos=1)
            await impostor.publish(f"{BASE}/metrics", json.dumps({"marker": True}), qos=1)
            await until(sub, lambda: any(p.get("marker") for p in sub.on("/metrics")))
            seen = list(sub.messages)
    finally:
        sim.stop()
        assert daemon.stop() == 0

    assert outcome["status"] == "complete" and outcome["round"] == 1  # nobody voided it
    topics = [t for t, _, _ in seen]
    commands = [p for t, p, _ in seen if re.fullmatch(rf"{BASE}/cmd/\w+", t)]
    assert [c["nonce"] for c in commands] == [c["nonce"] for c in genuine]  # (a), (c)
    assert [p for t, p, _ in seen if t.startswith("tabled/lab/t2/")] == [
        {"cmd": "void"}]  # (b): only the other console's own command
    assert [p["status"] for t, p, _ in seen if t == f"{BASE}/outcome"] == ["complete"]  # (c)
    assert f"{BASE}/event" in topics  # (c) the floor reads the table
    assert len(pit.replies) == len(genuine) and all(r["ok"] for r in pit.replies)
    journal = journal_of(daemon)
    nonces = {i.body.get("nonce") for i in journal.inputs()}
    assert {c["nonce"] for c in genuine} <= nonces
    assert not nonces & {c["nonce"] for c in intruders.values()}
    assert not [f for f in journaled(journal, "fault") if f["type"] == "command_rejected"]
    journal.close()
    # secrets are never logged nor published
    text = "\n".join(daemon.log_lines()) + json.dumps([p for _, p, _ in seen])
    assert floor.passwords[DAEMON] not in text and key.decode() not in text
    assert sum(1 for r in log_records(daemon) if r.get("level") == "debug") > 10


# -- 3. commands: HMAC, freshness, nonces -----------------------------------------------------


def rejected(journal: Journal) -> list[tuple[str, str]]:
    return [(f["command"], f["reason"]) for f in journaled(journal, "fault")
            if f["type"] == "command_rejected"]


async def back_online(sub: Subscriber, daemon: Daemon) -> None:
    """Wait for the birth record of this daemon process, then for its device to be connected."""
    assert daemon.proc is not None
    pid = daemon.proc.pid

    def online() -> bool:
        births = [i for i, (t, p, _) in enumerate(sub.messages)
                  if t == f"{BASE}/status" and p.get("pid") == pid]
        return bool(births) and any(
            t.endswith("/device/shuffler-1/status") and p["state"] == "connected"
            for t, p, _ in sub.messages[births[0]:])

    await until(sub, online)


def unsigned(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "mac"}


def as_input(body: dict[str, Any]) -> tuple[Any, ...]:
    """What a command becomes in the journal and on …/event: its type, arguments and nonce."""
    args = body.get("args", {})
    return (body.get("cmd", body.get("type")), body.get("seat", args.get("seat")),
            body.get("play", args.get("play")), body["nonce"])


async def test_stale_replayed_forged_and_tampered_commands_change_nothing(
        tmp_path: Path, broker: Mosquitto) -> None:
    """Between a complete deal and its reveal: a decision whose argument was changed after
    signing, a void signed with another key, a void with no MAC, a void signed ten minutes ago
    and a reveal signed ten minutes ahead, and a decision sent again. Each is refused with its
    reason, in its reply, in the journal and on …/fault; none becomes an input of the rules
    core, so the round ends exactly as the genuine commands say (seat 2 folds, nobody voids).
    After a restart, round 1's genuine reveal, sent again during round 2, is refused as
    replayed: the daemon remembers nonces from its journal."""
    key, key_file = hmac_key(tmp_path)
    sim = shuffler(tmp_path, "--seed", "5", "--seats", "1,2")
    daemon = daemon_for(tmp_path, "qpoker", broker.url, sim.start(), key_file=key_file)
    plays = command(key, "decision", {"seat": 1, "play": True})
    folds = command(key, "decision", {"seat": 2, "play": False})
    reveal = command(key, "reveal")
    attacks = [
        ({**folds, "args": {"seat": 2, "play": True}}, "forged"),  # changed after signing
        (command(b"not the console's key", "void"), "forged"),
        (unsigned(command(key, "void")), "forged"),
        (command(key, "void", ts=shifted(-600)), "stale"),
        (command(key, "reveal", ts=shifted(+600)), "stale"),
        (plays, "replayed"),
    ]
    genuine = [plays, folds, reveal]
    try:
        async with Subscriber("127.0.0.1", broker.port, f"{BASE}/#") as sub, \
                aiomqtt.Client("127.0.0.1", broker.port) as console:
            pit = Pit(console, sim)
            await pit.subscribe()
            daemon.start()

            async def attack_then_play(seats: list[int]) -> None:
                assert seats == [1, 2]
                for body in [plays, *(body for body, _ in attacks), folds, reveal]:
                    await send(console, body)

            first = await pit.round(attack_then_play)
            await pit.settle(len(attacks) + 3)
            assert daemon.stop() == 0
            daemon.start()  # the same journal
            await back_online(sub, daemon)
            pit.deal()

            async def replay_then_play(seats: list[int]) -> None:
                await send(console, reveal)
                await play_all(key, console, genuine)(seats)

            second = await pit.round(replay_then_play)
            await pit.settle(len(attacks) + 3 + 1 + 3)
            events, faults = sub.on("/event"), sub.on("/fault")
    finally:
        sim.stop()
        assert daemon.stop() == 0

    refusals = [(body["cmd"], reason) for body, reason in attacks] + [("reveal", "replayed")]
    assert [(r["command"], r.get("error")) for r in pit.replies if not r["ok"]] == refusals
    assert [r["ok"] for r in pit.replies] == [True, *[False] * len(attacks), True, True,
                                             False, True, True, True]
    assert [(f["command"], f["reason"]) for f in faults
            if f["type"] == "command_rejected"] == refusals
    journal = journal_of(daemon)
    assert rejected(journal) == refusals
    inputs = [i.body for i in journal.inputs() if i.source.startswith("console:")]
    journal.close()
    # only the genuine commands reached the rules core, and the stream shows only them
    assert [as_input(b) for b in inputs] == [as_input(b) for b in genuine]
    assert [as_input(e) for e in events if e.get("source", "").startswith("console:")] == [
        as_input(b) for b in genuine]
    assert first["status"] == second["status"] == "complete"
    assert first["bets"]["2"]["play"]["result"] == "fold"  # not the tampered "play": true
    assert first["bets"]["1"]["play"]["result"] != "fold"
    assert [strip_envelope(o) for o in (first, second)] == replay(
        "qpoker", [strip_envelope(e) for e in events])


# -- 4. no dealer's card before its round ends ------------------------------------------------

#: The events that end a Q Poker round once the dealer's hand is dealt: the reveal, the
#: dealer's void, a device fault (qpoker.art11.5). The dealer's exposed hand (art11.3) ends its
#: round by itself.
ENDINGS = ("reveal", "void", "fault")


def words(value: Any) -> set[str]:
    """Every word of every key and string in a JSON value. A card code is a whole word: "AS"
    counts, the "as" in "was" or the "5C" inside a hex nonce does not."""
    if isinstance(value, str):
        return set(WORD.findall(value))
    if isinstance(value, dict):
        return set().union(*(words(k) | words(v) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(words(v) for v in value))
    return set()


def cards_in(value: Any) -> set[str]:
    return {w for w in words(value) if CARD.fullmatch(w)}


def dealer_dealing(event: dict[str, Any]) -> bool:
    return event.get("seat") == "dealer" and event.get("type") in ("card", "hand")


def dealer_cards_by_round(messages: list[tuple[str, dict[str, Any]]]) -> dict[int, set[str]]:
    """Check the published stream round by round and return each round's dealer cards.

    In publication order, from the end of the previous round up to the first message that
    carries a dealer's card of this round, no message (any topic: events, outcomes, faults,
    metrics, status, replies, commands) contains one; and the dealer's cards come out only as
    the round ends: after them on ``…/event`` there is at most the event that ends the round.
    """
    rounds: dict[int, set[str]] = {}
    start = 0
    for end, (topic, outcome) in enumerate(messages):
        if not topic.endswith("/outcome"):
            continue
        events = [(i, p) for i, (t, p) in enumerate(messages[start:end], start)
                  if t.endswith("/event")]
        release = next((i for i, p in events if dealer_dealing(p)), end)
        tail = [p for i, p in events if i >= release]
        opened = list(itertools.takewhile(dealer_dealing, tail))
        dealer = set(((outcome.get("result") or {}).get("dealer") or {}).get("cards") or [])
        dealer |= {c for p in opened for c in p.get("cards", [p.get("card")])}
        for topic_before, before in messages[start:release]:
            assert not dealer & cards_in(before), (outcome["round"], topic_before, before)
        rest = tail[len(opened):]
        assert len(rest) <= 1 and all(p["type"] in ENDINGS for p in rest), (
            outcome["round"], rest)
        rounds[outcome["round"]] = dealer
        start = end + 1
    return rounds


def assert_no_dealer_card_logged(records: list[dict[str, Any]],
                                 dealer: dict[int, set[str]]) -> int:
    """The daemon logs no card at all, but for the line that ends a round: a log line with a
    card code is the ``outcome`` or ``round_void`` line of the round in play, and its cards are
    that round's. Returns how many such lines there were."""
    current = min(dealer, default=1)
    with_cards = 0
    for record in records:
        cards = cards_in(record)
        ends = record.get("event") in ("outcome", "round_void") and record.get("round") == current
        if cards:
            assert ends and cards <= dealer[current], (current, record)
            with_cards += 1
        if ends:
            current += 1
    assert current == max(dealer, default=0) + 1, "a round ended without its log line"
    return with_cards


def voided_by_the_dealer(rng: random.Random, rounds: int) -> set[int]:
    """The rounds the dealer voids by command after the deal, before the reveal."""
    return set(rng.sample(range(2, rounds + 1), max(1, rounds // 8)))


async def test_no_dealer_card_is_published_or_logged_before_its_round_ends(
        tmp_path: Path, broker: Mosquitto) -> None:
    """CONTRACT.md (qpoker) and docs/mqtt.md: the dealer's cards appear in no message and no
    log line before the event that ends the round. Several dozen rounds in shuffler mode
    (Art. 7(2)), seats drawn by the machine, the daemon at debug, every message on ``#``.

    Rounds voided before the reveal follow one policy: the held dealer's hand is published
    just before the event that ends the round, in the same journal transaction (the round is
    over, nothing is left to decide on it). Here: the dealer voids by command after the deal
    (qpoker.art11.1), a dealer's card is exposed (art11.3: the exposed hand itself ends the
    round), and the shuffler jams mid-deal (art11.5: the dealer's hand is never dealt)."""
    rng = random.Random(ROUNDS)
    voided = voided_by_the_dealer(rng, ROUNDS)
    exposed = min(set(range(3, ROUNDS + 1)) - voided)
    key, key_file = hmac_key(tmp_path)
    sim = shuffler(tmp_path, "--seed", str(ROUNDS), "--rounds", str(ROUNDS),
                   "--fault", f"exposed@dealer:{exposed}", "--fault", "jam@2")
    daemon = daemon_for(tmp_path, "qpoker", broker.url, sim.start(), key_file=key_file)
    outcomes: list[dict[str, Any]] = []
    try:
        async with Subscriber("127.0.0.1", broker.port, "#") as sub, \
                aiomqtt.Client("127.0.0.1", broker.port) as console:
            pit = Pit(console, sim)
            await pit.subscribe()
            daemon.start()
            play = play_all(key, console, fold=(3, 6))

            async def deal_done(seats: list[int]) -> None:
                if len(outcomes) + 1 in voided:
                    await send(console, command(key, "void", {"reason": "dealer_error"}))
                else:
                    await play(seats)

            for _ in range(ROUNDS):
                outcomes.append(await pit.round(deal_done, timeout=60))
                pit.deal()
            await sub.wait_for("/outcome", ROUNDS, alive=daemon)
    finally:
        sim.stop()
        assert daemon.stop() == 0
    messages = [(t, p) for t, p, _ in sub.messages]
    assert [o["round"] for o in outcomes] == list(range(1, ROUNDS + 1))
    articles = {o["round"]: o.get("article") for o in outcomes if o["status"] == "void"}
    assert articles[1] == "qpoker.art11.5"  # jam@2: round 1 stops at its second hand
    assert articles.get(exposed) == "qpoker.art11.3"
    assert {r for r, a in articles.items() if a == "qpoker.art11.1"} == voided
    dealer = dealer_cards_by_round(messages)
    assert sorted(dealer) == list(range(1, ROUNDS + 1))
    assert sum(len(cards) == 3 for cards in dealer.values()) >= ROUNDS - 1  # all but the jam
    assert sum(1 for t, _ in messages if t.endswith("/metrics")) >= 1
    records = log_records(daemon)
    assert sum(r.get("level") == "debug" for r in records) > ROUNDS  # paho's packets too
    # the one log line with cards: the dealer's exposed hand, as its round is voided
    assert assert_no_dealer_card_logged(records, dealer) == 1


# -- 5. secrets ------------------------------------------------------------------------------


@pytest.mark.parametrize("secret, mode", [("password_file", 0o640), ("hmac_key_file", 0o640),
                                          ("key_file", 0o640), ("password_file", 0o604)],
                         ids=["password_group", "hmac_key_group", "tls_key_group",
                              "password_others"])
def test_the_daemon_refuses_a_secret_others_can_read(tmp_path: Path, pki: Pki, secret: str,
                                                     mode: int) -> None:
    """A broker password, an HMAC key or a TLS client key that the service's group or others
    may read: ``tabled run`` exits 2 before it journals or connects anything, naming the file
    and its mode, never its content."""
    password, key = secrets.token_urlsafe(18), secrets.token_hex(32)
    identity = pki.identity(DAEMON)
    files = {
        "password_file": secret_file(tmp_path / "broker.password", password),
        "hmac_key_file": secret_file(tmp_path / "console.key", key),
        "key_file": secret_file(tmp_path / "client.key", identity.key.read_bytes()),
    }
    os.chmod(files[secret], mode)
    config = write_config(
        tmp_path / "tabled.toml", game="qpoker", journal=tmp_path / "journal.sqlite",
        broker_url="mqtts://127.0.0.1:9", commands={"enabled": True,
                                                    "hmac_key_file": files["hmac_key_file"]},
        mqtt={"username": DAEMON, "password_file": files["password_file"]},
        tls={"ca_file": pki.ca_file, "cert_file": identity.cert, "key_file": files["key_file"]})
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "run", "-c", str(config)],
                          capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 2
    assert proc.stdout == ""  # not even a log line: refused before logging is set up
    shown = "-rw-r-----" if mode == 0o640 else "-rw----r--"
    assert proc.stderr.startswith(f"tabled run: {files[secret]} is accessible by group or "
                                  f"others (mode {shown})")
    assert "chmod 600" in proc.stderr
    for content in (password, key, "PRIVATE KEY"):
        assert content not in proc.stderr
    assert not (tmp_path / "journal.sqlite").exists()


# -- 4 (continued). shoe mode, at the runtime ---------------------------------------------------


@st.composite
def shoe_rounds(draw: st.DrawFn) -> list[tuple[list[int], list[str], str, set[int]]]:
    """Q Poker rounds dealt from the shoe (Art. 7(1)): seats, the deck's order, how the round
    ends (reveal or a dealer's void), and who folds."""
    rounds = []
    for _ in range(draw(st.integers(1, 4))):
        seats = sorted(draw(st.sets(st.integers(1, 7), min_size=1, max_size=7)))
        deck = draw(st.permutations([r + s for r in "A23456789TJQK" for s in "SHCD"]))
        ending = draw(st.sampled_from(["reveal", "reveal", "void"]))
        folds = draw(st.sets(st.sampled_from(seats)))
        rounds.append((seats, deck[:3 * (len(seats) + 1)], ending, folds))
    return rounds


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=shoe_rounds())
def test_shoe_mode_hides_the_dealer_card_by_card(tmp_path_factory: pytest.TempPathFactory,
                                                 rounds: list[tuple[list[int], list[str], str,
                                                                    set[int]]]) -> None:
    """No device deals Q Poker from the shoe (the shuffler simulator deals hands of three), so
    the shoe mode (Art. 7(1): one card at a time, face down, dealer last) is proven on the
    daemon's own runtime and journal: what it journals for ``…/event``, ``…/outcome`` and
    ``…/fault`` is what the publisher sends, in journal order, and every log line it writes is
    captured. The same checks as for the shuffler mode hold."""
    path = tmp_path_factory.mktemp("shoe-mode") / "journal.sqlite"
    config = parse_config({"table": {"site": "lab", "id": "t1", "game": "qpoker"},
                           "journal": {"path": str(path)}})
    runtime = TableRuntime(config, Journal(path).events)
    with structlog.testing.capture_logs() as captured:
        for seats, deck, ending, folds in rounds:
            order: list[int | Literal["dealer"]] = [*seats, "dealer"]
            runtime.accept(RoundStart(seats=tuple(seats)), "device:shoe-1")
            for i, card in enumerate(deck):  # round after round of the table, dealer last
                runtime.accept(CardDealt(card=card, face_up=False, seat=order[i % len(order)]),
                               "device:shoe-1")
            if ending == "void":
                runtime.accept(Void(reason="dealer_error"), "console:pit-1")
                continue
            for seat in seats:
                runtime.accept(Decision(seat=seat, play=seat not in folds), "console:pit-1")
            runtime.accept(Reveal(), "console:pit-1")
    messages = [(f"{BASE}/{o.topic}", json.loads(o.payload))
                for o in runtime.events.outputs_after(0, 100_000)]
    runtime.events.owner.close()
    dealer = dealer_cards_by_round(messages)
    assert [dealer[r] for r in sorted(dealer)] == [set(deck[len(seats)::len(seats) + 1])
                                                   for seats, deck, _, _ in rounds]
    assert len(captured) >= len(rounds)  # an outcome or round_void line per round, at least
    assert assert_no_dealer_card_logged([dict(r) for r in captured], dealer) == 0
