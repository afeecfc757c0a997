"""The table PC is small (issue 30, item 4): ``tabled run`` in a cgroup limited as a low-end
table controller would give it (10 % of one core, 256 MB; then 5, 3 and 20 % to find the
margin), at a real table's pace and at the demo's pace, against the same run without the limit.

Owns the cgroup harness (:func:`open_cage`: a child cgroup of its own per daemon, by cgroup v2
``cpu.max``/``memory.max``, cgroup v1 ``cpu.cfs_quota_us``/``memory.limit_in_bytes``, or a
``systemd-run --scope`` where systemd runs the machine; detected at run time) and what is measured
under it. Never the daemon's code, never its config beyond bench/rig.py's production defaults.

What is inside the limit: the daemon process only (spawned inside: its imports, its start-up and
its READY count against the quota). The broker, the collector and the device simulators run
outside: the table PC runs the daemon; the devices are hardware of their own and the broker is the
floor's. Each family plays on a table of its own, one daemon per cage, the three at once, and
beside each the same table in a cage without limits (its baseline, under the machine's load of
the same moment):

- a baccarat table dealt by the reading shoe, its shuffler-dealer attached (two links, as
  bench/footprint.py's table);
- a baccarat table dealt by the shuffler-dealer;
- a craps table with the dice sensor (simulated USB).

Paces: a real table's (one card or roll every :data:`TABLE_EVERY` seconds, faster than a real craps
table rolls) and the demo's (``tabled demo``'s default, one device message every 0.05 s). Each pace
has a daemon, a journal and a cage of its own. Every message counts (no warm-up: a table's first
card after a start is a card too), and the first comes one interval after READY, as the pace
has it: a card within the 100 ms period in which the daemon said READY finds that period's
quota spent on the start-up's end and waits up to 90 ms for the next (measured: 90.6 ms, the
dice table at 10 %, its first roll 2 ms after READY; the same roll costs 2–3 ms of CPU a second
later); ``--at-ready`` sends it at READY to show that.

Loss is checked both ways: every script message the device put on the wire arrived as the event of
that ``seq`` exactly once, and every outcome and event the daemon's journal numbered arrived under
its ``table_seq`` exactly once, byte for byte as journaled.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import devices as dev
from bench.footprint import TABLE_CARD_EVERY
from bench.measure import Latency, load_average, machine
from bench.rig import (
    Arrival,
    Collector,
    DaemonProcess,
    RigError,
    device_connected,
    json_of,
    socket_path,
    topic_base,
    write_config,
)
from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import Journal

CGROUP: Final = Path("/sys/fs/cgroup")
#: The goals of issue 30, item 4.
GOAL_P99_MS: Final = 50.0
GOAL_READY_S: Final = 5.0
#: The limit a low-end table controller gives the daemon (issue 30): percent of one core, bytes.
LIMIT_CPU: Final = 10.0
LIMIT_MEMORY: Final = 256 * 2**20
#: A real table's pace: a card (a roll) every 6 s.
TABLE_EVERY: Final = TABLE_CARD_EVERY
#: ``tabled demo``'s default pace (``--pace``): seconds between device messages.
DEMO_EVERY: Final = 0.05
#: The cgroup v1/v2 CFS period the quota is a share of, microseconds (systemd's too).
PERIOD_US: Final = 100_000
#: The tables: name → (game, the family that deals, the families attached).
TABLES: Final = {
    "shoe": ("baccarat", "shoe", ("shoe", "shuffler")),
    "shuffler": ("baccarat", "shuffler", ("shuffler",)),
    "dice": ("craps", "dice", ("dice",)),
}


class CageUnavailable(RuntimeError):
    """No cgroup can be made here (not root, no writable hierarchy, no systemd): the reason."""


@dataclass(frozen=True, slots=True)
class Limit:
    """A cage's limits: percent of one core, bytes; None for no limit (the baseline: the same
    cage, so the same instruments, without a limit)."""

    cpu_percent: float | None
    memory_bytes: int | None

    @property
    def name(self) -> str:
        return "none" if self.cpu_percent is None else f"{self.cpu_percent:g}%"


def _read(path: Path) -> str:
    return path.read_text().strip()


def _keyed(path: Path) -> dict[str, int]:
    """A ``key value`` file (cpu.stat, memory.events) as integers."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
    return out


def _join_script(procs: Sequence[Path]) -> str:
    """A shell line that moves itself into each ``cgroup.procs`` and then execs its arguments:
    the command starts inside, before its first instruction."""
    moves = [f"echo $$ > {shlex.quote(str(p))}" for p in procs]
    return " && ".join([*moves, 'exec "$@"'])


class Cage:
    """A cgroup of its own for one process tree. ``wrap`` the command so that it starts
    inside; ``stats`` reads the cgroup's CPU, throttling and memory figures; ``close`` removes
    it once its processes are gone."""

    kind = "?"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def stats(self, pid: int | None = None) -> dict[str, Any]:
        """``cpu_s`` (CPU time used), ``periods``, ``throttled`` (periods throttled),
        ``throttled_s``, ``memory_peak`` (bytes; None where the kernel does not keep it),
        ``oom_kills``."""
        raise NotImplementedError

    def close(self) -> None:
        pass


def _cgroup_mounts(fstype: str) -> dict[str, Path]:
    """Controller → mount point of each mounted hierarchy of ``fstype`` (cgroup, cgroup2)."""
    found: dict[str, Path] = {}
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == fstype:
            for option in parts[3].split(","):
                found.setdefault(option, Path(parts[1]))
    return found


def _own_path(controller: str) -> str:
    """This process's cgroup in a v1 hierarchy (``""`` for the v2 one)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return "/"


class V1Cage(Cage):
    """cgroup v1: a child of this process's own cgroup in the cpu, cpuacct and memory
    hierarchies (nested, so whatever limits this process's cgroup keeps holding)."""

    kind = "cgroup v1 (cpu.cfs_quota_us, memory.limit_in_bytes)"

    def __init__(self, name: str, limit: Limit) -> None:
        mounts = _cgroup_mounts("cgroup")
        missing = [c for c in ("cpu", "cpuacct", "memory") if c not in mounts]
        if missing:
            raise CageUnavailable(f"no cgroup v1 hierarchy for {', '.join(missing)}")
        self.dirs: dict[str, Path] = {}
        try:
            for controller in ("cpu", "cpuacct", "memory"):
                where = mounts[controller] / _own_path(controller).lstrip("/") / name
                if where not in self.dirs.values():
                    where.mkdir()
                self.dirs[controller] = where
            cpu, memory = self.dirs["cpu"], self.dirs["memory"]
            (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            quota = -1 if limit.cpu_percent is None else round(PERIOD_US * limit.cpu_percent
                                                               / 100)
            (cpu / "cpu.cfs_quota_us").write_text(str(quota))
            if limit.memory_bytes is not None:
                (memory / "memory.limit_in_bytes").write_text(str(limit.memory_bytes))
        except OSError as exc:
            self.close()
            raise CageUnavailable(f"cannot make a cgroup v1 child ({exc})") from None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        procs = list(dict.fromkeys(d / "cgroup.procs" for d in self.dirs.values()))
        return ["/bin/sh", "-c", _join_script(procs), "sh", *argv]

    def stats(self, pid: int | None = None) -> dict[str, Any]:
        cpu = _keyed(self.dirs["cpu"] / "cpu.stat")
        memory = self.dirs["memory"]
        return {"cpu_s": int(_read(self.dirs["cpuacct"] / "cpuacct.usage")) / 1e9,
                "periods": cpu.get("nr_periods", 0), "throttled": cpu.get("nr_throttled", 0),
                "throttled_s": cpu.get("throttled_time", 0) / 1e9,
                "memory_peak": int(_read(memory / "memory.max_usage_in_bytes")),
                "oom_kills": _keyed(memory / "memory.oom_control").get("oom_kill", 0)}

    def close(self) -> None:
        for where in dict.fromkeys(self.dirs.values()):
            _remove(where)


def _remove(where: Path) -> None:
    """rmdir a cgroup whose processes have exited (the kernel may take a moment to see it)."""
    for _ in range(50):
        try:
            where.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def _v2_stats(where: Path) -> dict[str, Any]:
    cpu = _keyed(where / "cpu.stat")
    peak = where / "memory.peak"  # Linux 5.19 and later
    return {"cpu_s": cpu.get("usage_usec", 0) / 1e6, "periods": cpu.get("nr_periods", 0),
            "throttled": cpu.get("nr_throttled", 0),
            "throttled_s": cpu.get("throttled_usec", 0) / 1e6,
            "memory_peak": int(_read(peak)) if peak.exists() else None,
            "oom_kills": _keyed(where / "memory.events").get("oom_kill", 0)}


def _v2_root() -> Path | None:
    """The cgroup v2 hierarchy with the cpu and memory controllers, if there is one."""
    for mount in _cgroup_mounts("cgroup2").values():
        controllers = mount / "cgroup.controllers"
        if controllers.exists() and {"cpu", "memory"} <= set(_read(controllers).split()):
            return mount
    return None


class V2Cage(Cage):
    """cgroup v2: a child of the hierarchy's root (the root may hold processes and delegate the
    cpu and memory controllers; a non-root cgroup with processes may not)."""

    kind = "cgroup v2 (cpu.max, memory.max)"

    def __init__(self, name: str, limit: Limit, root: Path) -> None:
        self.dir = root / name
        try:
            control = root / "cgroup.subtree_control"
            enabled = set(_read(control).split())
            for controller in ("cpu", "memory"):
                if controller not in enabled:
                    control.write_text(f"+{controller}")
            self.dir.mkdir()
            quota = "max" if limit.cpu_percent is None else str(round(PERIOD_US
                                                                      * limit.cpu_percent / 100))
            (self.dir / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            (self.dir / "memory.max").write_text("max" if limit.memory_bytes is None
                                                 else str(limit.memory_bytes))
        except OSError as exc:
            self.close()
            raise CageUnavailable(f"cannot make a cgroup v2 child of {root} ({exc})") from None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return ["/bin/sh", "-c", _join_script([self.dir / "cgroup.procs"]), "sh", *argv]

    def stats(self, pid: int | None = None) -> dict[str, Any]:
        return _v2_stats(self.dir)

    def close(self) -> None:
        _remove(self.dir)


class SystemdCage(Cage):
    """A transient scope by ``systemd-run --scope`` with ``CPUQuota=`` and ``MemoryMax=``, as
    the unit file sets them (where systemd runs the machine: it owns the cgroup tree)."""

    kind = "systemd-run --scope (CPUQuota=, MemoryMax=)"

    def __init__(self, name: str, limit: Limit) -> None:
        self.name = name
        self.scopes = 0
        self.properties: list[str] = []
        if limit.cpu_percent is not None:
            self.properties += ["-p", f"CPUQuota={limit.cpu_percent:g}%"]
        if limit.memory_bytes is not None:
            self.properties += ["-p", f"MemoryMax={limit.memory_bytes}"]

    def wrap(self, argv: Sequence[str]) -> list[str]:
        user = [] if os.geteuid() == 0 else ["--user"]
        self.scopes += 1  # each command a scope of its own (check-config, then the daemon)
        return ["systemd-run", *user, "--scope", "--quiet", "--collect",
                f"--unit={self.name}-{self.scopes}", *self.properties, "--", *argv]

    def stats(self, pid: int | None = None) -> dict[str, Any]:
        if pid is None:
            raise CageUnavailable("a scope's cgroup is found from its process")
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                root = _v2_root() or CGROUP
                self.dir = root / line[3:].lstrip("/")
                return _v2_stats(self.dir)
        raise CageUnavailable(f"process {pid} is in no cgroup v2")


_cages = iter(range(1, 10**9))


def open_cage(limit: Limit, *, prefer: str | None = None) -> Cage:
    """A new cage with ``limit``, by the first of cgroup v2, cgroup v1 and systemd-run that
    works here (``prefer``, or TABLED_CAGE: v2, v1 or systemd, to pick one); CageUnavailable
    with every reason when none does."""
    name = f"tabled-smallpc-{os.getpid()}-{next(_cages)}"
    prefer = prefer or os.environ.get("TABLED_CAGE")
    reasons: list[str] = []
    order = [prefer] if prefer else ["v2", "v1", "systemd"]
    for kind in order:
        try:
            if kind == "v2":
                root = _v2_root()
                if root is None:
                    raise CageUnavailable("no cgroup v2 hierarchy with cpu and memory")
                return V2Cage(name, limit, root)
            if kind == "v1":
                return V1Cage(name, limit)
            if kind == "systemd":
                if not Path("/run/systemd/system").is_dir():
                    raise CageUnavailable("systemd is not running this machine")
                if shutil.which("systemd-run") is None:
                    raise CageUnavailable("no systemd-run")
                return SystemdCage(name, limit)
            raise CageUnavailable(f"unknown cage kind {kind!r} (v2, v1, systemd)")
        except CageUnavailable as exc:
            reasons.append(f"{kind}: {exc}")
    raise CageUnavailable("; ".join(reasons))


def why_not() -> str | None:
    """Why no cage can be made here, or None when one can (made and removed to find out)."""
    try:
        open_cage(Limit(LIMIT_CPU, LIMIT_MEMORY)).close()
    except CageUnavailable as exc:
        return str(exc)
    return None


# -- the daemon in its cage ------------------------------------------------------------------------


#: Development tools' packages a table PC does not have but whose presence changes what the
#: daemon imports: structlog loads rich (import-linter's dependency here) for its console
#: tracebacks when it is installed, about 0.09 s of CPU a start, 0.9 s of READY in a tenth of
#: a core. Found by -X importtime; the Debian package installs tabled's dependencies only.
_NOT_ON_A_TABLE_PC: Final = ("rich", "pygments", "attr", "attrs", "better_exceptions",
                             "colorama")


def as_installed_env() -> dict[str, str]:
    """PYTHONPATH for a daemon that imports what it would as the Debian package installs it:
    each development-only package above that is installed here is made unimportable."""
    import importlib.metadata
    import re
    import tempfile

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    needed: set[str] = set()
    todo = ["tabled"]
    while todo:
        name = todo.pop()
        if norm(name) in needed:
            continue
        needed.add(norm(name))
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0] for r in requires
                 if "extra ==" not in r]
    where = Path(tempfile.gettempdir()) / f"tabled-as-installed-{os.getuid()}"
    dists = importlib.metadata.packages_distributions()
    for module in _NOT_ON_A_TABLE_PC:
        owners = dists.get(module, [])
        if owners and not any(norm(d) in needed for d in owners):
            (where / module).mkdir(parents=True, exist_ok=True)
            why = f"{module} is not installed on a table PC (bench/smallpc.py)"
            (where / module / "__init__.py").write_text(f"raise ImportError({why!r})\n")
    if not where.is_dir():
        return {}
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(where),
                                                         os.environ.get("PYTHONPATH")]))}



@dataclass
class CagedDaemon(DaemonProcess):
    """bench/rig.py's daemon, spawned inside ``cage``."""

    cage: Cage | None = None

    def start(self) -> None:
        import socket

        assert self.cage is not None
        notify_path = socket_path("notify")
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(notify_path)
        env = {**os.environ, "NOTIFY_SOCKET": notify_path, **as_installed_env()}
        argv = self.cage.wrap([sys.executable, "-m", "tabled.tools.cli", "run", "-c",
                               str(self.config)])
        with open(self.log_path, "ab") as log:
            self._spawned = time.monotonic()
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)


@dataclass(frozen=True, slots=True)
class Pace:
    name: str
    every: float
    count: int


@dataclass
class TableRun:
    """One table at one pace in one cage: what arrived, from where, and when."""

    table: str
    pace: Pace
    arrived: dict[int, float] = field(default_factory=dict)
    duplicates: int = 0
    #: when each outcome arrived (a card that ends a round is followed by its outcome)
    outcomes_at: list[float] = field(default_factory=list)
    by_number: dict[str, dict[int, set[bytes]]] = field(
        default_factory=lambda: {"event": {}, "outcome": {}})

    def take(self, arrival: Arrival, device_id: str) -> None:
        stream = arrival.topic.rsplit("/", 1)[-1]
        if stream not in self.by_number:
            return
        body = json_of(arrival)
        number = body.get("table_seq")
        if isinstance(number, int):
            copies = self.by_number[stream].setdefault(number, set())
            fresh = arrival.payload not in copies  # a QoS 1 re-delivery is the same bytes
            copies.add(arrival.payload)
            if fresh and stream == "outcome":
                self.outcomes_at.append(arrival.at)
        else:
            fresh = True
        if stream == "event" and body.get("device") == device_id and "seq" in body and fresh:
            if body["seq"] in self.arrived:
                self.duplicates += 1
            else:
                self.arrived[body["seq"]] = arrival.at


def _device(family: str) -> Any:
    if family == "dice":
        return dev.UsbFamilyDevice(socket_path("dice.sock"))
    return dev.PtyFamilyDevice(family, host_bytes_at_sends=True)


def _check_config(cage: Cage, config: Path, log_path: Path) -> dict[str, float | None]:
    """``tabled check-config`` in the cage: its wall time and the CPU it took."""
    argv = cage.wrap([sys.executable, "-m", "tabled.tools.cli", "check-config", str(config)])
    started = time.monotonic()
    with open(log_path, "ab") as log:
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=120,
                              check=False, env={**os.environ, **as_installed_env()})
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise RigError(f"check-config failed: {log_path.read_text(errors='replace')[-800:]}")
    if isinstance(cage, SystemdCage):  # a scope of its own, gone with its process
        return {"s": took, "cpu_s": None}
    return {"s": took, "cpu_s": cage.stats()["cpu_s"]}


def _record(journal_path: Path, run: TableRun) -> dict[str, Any]:
    """The journal's numbered streams against what arrived: every number once, byte for byte."""
    journal = Journal(journal_path, create=False)
    try:
        high = journal.high_water()
        out: dict[str, Any] = {}
        for stream in ("event", "outcome"):
            last = high[stream]
            stored = {m.stream_seq: m.payload for m in journal.published_range(stream, 0, last,
                                                                     last + 1)}
            seen = run.by_number[stream]
            out[stream] = {
                "journaled": last + 1,
                "lost": sum(1 for n in stored if n not in seen),
                "duplicated": sum(len(c) - 1 for c in seen.values() if len(c) > 1),
                "wrong": sum(1 for n, c in seen.items()
                             if n in stored and c != {stored[n].encode()}),
                "unexpected": sum(1 for n in seen if n not in stored),
            }
        return out
    finally:
        journal.close()


async def run_table(table: str, pace: Pace, limit: Limit, broker: Mosquitto, workdir: Path,
                    *, seed: int = 30, check_config: bool = True,
                    tag: str = "", at_ready: bool = False) -> dict[str, Any]:
    """One fresh daemon in a fresh cage with ``limit``, its devices outside, ``pace.count``
    messages of the dealing family's script at ``pace.every``; first, with ``check_config``,
    ``tabled check-config`` in the same cage (the unit's ExecStartPre)."""
    game, dealer, attached = TABLES[table]
    name = f"small-{table}-{pace.name}-{limit.name.rstrip('%')}{tag.rstrip('%')}"
    here = workdir / name
    here.mkdir(parents=True)
    devices = {family: _device(family) for family in attached}
    cage = open_cage(limit)
    daemon: CagedDaemon | None = None
    run = TableRun(table, pace)
    device_id = dev.DEVICE_ID[dealer]
    base = topic_base(name)
    try:
        for device in devices.values():
            await device.start()
        config = write_config(
            here / "tabled.toml", table=name, game=game, journal=here / "journal.sqlite",
            broker_url=broker.url,
            devices=[{"id": dev.DEVICE_ID[f], "family": f, "url": d.url}
                     for f, d in devices.items()])
        topics = [f"{base}/event", f"{base}/outcome", f"{base}/device/+/status"]
        # the unit's ExecStartPre, in the cage as systemd runs it
        checked: dict[str, float | None] = {"s": None, "cpu_s": None}
        if check_config:
            checked = await asyncio.to_thread(_check_config, cage, config, here / "check.log")
        with Collector(broker.port, topics) as collector:
            daemon = CagedDaemon(config, here / "daemon.log", cage=cage)
            daemon.start()
            ready = await asyncio.to_thread(daemon.wait_ready, 30.0)
            cpu_to_ready = cage.stats(daemon.pid)["cpu_s"] - (checked["cpu_s"] or 0.0)
            for family in devices:
                if not await asyncio.to_thread(collector.wait_until,
                                               device_connected(name, dev.DEVICE_ID[family]),
                                               30.0):
                    raise RigError(f"{name}: the daemon did not connect {family}")
            connected = time.monotonic() - daemon._spawned
            collector.take()
            messages = dev.script(dealer, pace.count, seed)
            before, started = cage.stats(daemon.pid), time.monotonic()
            if not at_ready:
                await asyncio.sleep(pace.every)  # the pace's interval, READY its first beat
            await devices[dealer].play(messages, pace.every)
            wanted = set(range(pace.count))

            def done(_: list[Arrival]) -> bool:
                for arrival in collector.take():
                    run.take(arrival, device_id)
                return wanted.issubset(run.arrived)
            await asyncio.to_thread(collector.wait_until, done, 30.0)
            # the last round's outcome: everything the journal numbered has arrived
            journal_path = here / "journal.sqlite"

            def complete(_: list[Arrival]) -> bool:
                for arrival in collector.take():
                    run.take(arrival, device_id)
                reader = Journal(journal_path, create=False)
                try:
                    high = reader.high_water()
                finally:
                    reader.close()
                return all(set(range(high[s] + 1)) <= run.by_number[s].keys()
                           for s in ("event", "outcome"))
            await asyncio.to_thread(collector.wait_until, complete, 10.0)
            window = time.monotonic() - started
            after = cage.stats(daemon.pid)
            await asyncio.to_thread(daemon.stop)
            for arrival in collector.take():
                run.take(arrival, device_id)
        exit_code = daemon.proc.returncode if daemon.proc is not None else None
        written = devices[dealer].written
        samples = [run.arrived[k] - written[k] for k in sorted(written) if k in run.arrived]
        first = min(written.values(), default=0.0)
        slowest = sorted((k for k in written if k in run.arrived),
                         key=lambda k: run.arrived[k] - written[k], reverse=True)[:5]
        return {
            "table": table, "game": game, "devices": list(attached), "pace": pace.name,
            "every_s": pace.every, "sent": len(written),
            "first_after_ready_s": first - (daemon._spawned + (ready or 0.0)),
            "lost": sum(1 for k in written if k not in run.arrived),
            "duplicates": run.duplicates, "latency": Latency.of(samples).to_dict(),
            # the slowest messages: which (script index), when (s after the first was written)
            # and whether an outcome followed within 0.5 s (the card that ended a round)
            "slowest": [{"index": k, "ms": 1000 * (run.arrived[k] - written[k]),
                         "after_s": written[k] - first,
                         "ended_round": any(0 <= t - run.arrived[k] <= 0.5
                                            for t in run.outcomes_at)} for k in slowest],
            "ready_s": ready, "cpu_s_to_ready": cpu_to_ready, "check_config_s": checked["s"],
            "check_config_cpu_s": checked["cpu_s"], "connected_s": connected, "window_s": window,
            "cpu_percent": 100 * (after["cpu_s"] - before["cpu_s"]) / window,
            "periods": after["periods"] - before["periods"],
            "throttled": after["throttled"] - before["throttled"],
            "throttled_s": after["throttled_s"] - before["throttled_s"],
            "cpu_s_total": after["cpu_s"],
            "memory_peak_mb": (None if after["memory_peak"] is None
                               else after["memory_peak"] / 2**20),
            "oom_kills": after["oom_kills"], "record": _record(journal_path, run),
            "exit": exit_code,
        }
    finally:
        if daemon is not None:
            await asyncio.to_thread(daemon.stop)
        for device in devices.values():
            await device.close()
        cage.close()


def holds(result: dict[str, Any]) -> bool:
    """Issue 30's goals for the table's pace, one run: nothing lost, duplicated or wrong (by
    the device's ``seq`` and by the journal's ``table_seq``), p99 ≤ 50 ms, no OOM kill."""
    whole = all(r["lost"] == r["duplicated"] == r["wrong"] == r["unexpected"] == 0
                for r in result["record"].values())
    return (whole and result["lost"] == 0 and result["duplicates"] == 0
            and result["latency"]["p99"] <= GOAL_P99_MS and result["oom_kills"] == 0)


def meets(result: dict[str, Any]) -> bool:
    """:func:`holds`, and READY ≤ 5 s after ``tabled run`` was spawned."""
    return holds(result) and result["ready_s"] <= GOAL_READY_S


@dataclass(frozen=True, slots=True)
class Plan:
    """The quotas tried (percent of one core; the first is the goal's) and the paces' sizes."""

    quotas: tuple[float, ...] = (10.0, 5.0, 3.0, 20.0)
    memory_bytes: int = LIMIT_MEMORY
    table_count: int = 20
    table_every: float = TABLE_EVERY
    demo_count: int = 1200
    demo_every: float = DEMO_EVERY
    #: the first message at READY instead of one interval after it (bench/smallpc's docstring)
    at_ready: bool = False


FULL: Final = Plan()
#: The harness's smoke form (``python -m bench --quick``): a whole core, the start-up quick;
#: tests/bench/test_smallpc.py runs the daemon under the 10 % itself.
QUICK: Final = Plan(quotas=(100.0,), table_count=2, table_every=0.5, demo_count=20)


async def _step(limit: Limit, plan: Plan, broker: Mosquitto, workdir: Path,
                say: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every table at both paces under ``limit``, and beside each the same table in a cage
    without a limit (its baseline, under the same load at the same moment): six daemons at
    once, one pace after the other. Returns the limited runs and their baselines."""
    limited: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    free = Limit(None, None)
    for pace in (Pace("table", plan.table_every, plan.table_count),
                 Pace("demo", plan.demo_every, plan.demo_count)):
        say(f"[smallpc] limit {limit.name}: {pace.count} messages, one every {pace.every:g} s, "
            f"at {len(TABLES)} tables, each beside its baseline")
        runs = await asyncio.gather(
            *(run_table(t, pace, limit, broker, workdir, at_ready=plan.at_ready)
              for t in TABLES),
            *(run_table(t, pace, free, broker, workdir, tag=f"beside-{limit.name}",
                        at_ready=plan.at_ready) for t in TABLES))
        limited += runs[:len(TABLES)]
        baseline += runs[len(TABLES):]
    return limited, baseline


async def run(workdir: Path, plan: Plan, say: Any = print) -> dict[str, Any]:
    """Each quota of the plan with the memory limit, each beside its baseline (a cage without
    limits)."""
    reason = why_not()
    if reason is not None:
        say(f"[smallpc] skipped: no cgroup can be made here ({reason})")
        return {"skipped": reason}
    probe = open_cage(Limit(None, None))
    probe.close()
    steps: list[dict[str, Any]] = []
    with Mosquitto(workdir=workdir / "broker") as broker:
        for limit in (Limit(q, plan.memory_bytes) for q in plan.quotas):
            load = load_average()
            results, baseline = await _step(limit, plan, broker, workdir, say)
            step = {"cpu_percent": limit.cpu_percent, "memory_bytes": limit.memory_bytes,
                    "holds": all(holds(r) for r in results),
                    "met": all(meets(r) for r in results),
                    "baseline_holds": all(holds(r) for r in baseline),
                    "load": [load, load_average()], "runs": results, "baseline": baseline}
            steps.append(step)
            say(f"[smallpc] limit {limit.name}: pace goals "
                f"{'met' if step['holds'] else 'NOT met'} (beside it, without the limit: "
                f"{'met' if step['baseline_holds'] else 'NOT met'}), with READY ≤ "
                f"{GOAL_READY_S:g} s {'met' if step['met'] else 'NOT met'}")
    limited = [s for s in steps if s["cpu_percent"] is not None]
    return {"cage": type(probe).kind, "simulators": "outside the cage",
            "machine": machine(workdir),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "plan": {"quotas": list(plan.quotas), "memory_mb": plan.memory_bytes / 2**20,
                     "table": {"count": plan.table_count, "every_s": plan.table_every},
                     "demo": {"count": plan.demo_count, "every_s": plan.demo_every}},
            "steps": steps,
            "smallest_quota_holds": min((s["cpu_percent"] for s in limited if s["holds"]),
                                        default=None),
            "smallest_quota_met": min((s["cpu_percent"] for s in limited if s["met"]),
                                      default=None)}


# -- the report's section (bench/report.py calls these) ----------------------------------------


def _worst(runs: Sequence[dict[str, Any]], key: str) -> float:
    return max(float(r[key]) for r in runs)


def _limit_name(step: dict[str, Any]) -> str:
    return f"**{step['cpu_percent']:g} % / {step['memory_bytes'] / 2**20:.0f} MB**"


def _row(limit: str, pace: str, runs: Sequence[dict[str, Any]],
         quota: float | None) -> tuple[str, ...]:
    lost = sum(x["lost"] + x["duplicates"] + sum(
        v["lost"] + v["duplicated"] + v["wrong"] + v["unexpected"]
        for v in x["record"].values()) for x in runs)
    outcomes = sum(x["record"]["outcome"]["journaled"] for x in runs)
    events = sum(x["sent"] for x in runs)
    p50 = max(x["latency"]["p50"] for x in runs)
    p99 = max(x["latency"]["p99"] for x in runs)
    peaks = [x["memory_peak_mb"] for x in runs if x["memory_peak_mb"] is not None]
    return (limit, pace, f"{events:,} / {outcomes:,}", str(lost), f"{p50:.1f} / {p99:.1f}",
            f"{_worst(runs, 'ready_s'):.1f}", f"{_worst(runs, 'cpu_s_to_ready'):.2f}",
            "–" if quota is None else f"{_worst(runs, 'cpu_s_to_ready') * 100 / quota:.1f}",
            f"{_worst(runs, 'check_config_s'):.1f}", f"{_worst(runs, 'cpu_percent'):.1f}",
            f"{sum(x['throttled'] for x in runs)} / {sum(x['periods'] for x in runs)}",
            f"{max(peaks):.0f}" if peaks else "?",
            "met" if all(meets(x) for x in runs) else
            ("pace met, READY **not**" if all(holds(x) for x in runs) else "**not met**"))


def _at(s: dict[str, Any], quota: float) -> dict[str, Any] | None:
    return next((step for step in s["steps"] if step["cpu_percent"] == quota), None)


def goals(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """The Goals table's rows: at the goal's limit, the pace goals and READY."""
    s = r.get("smallpc")
    if not s or "steps" not in s:
        return []
    step = _at(s, LIMIT_CPU)
    if step is None:
        return []
    runs = step["runs"]
    lost = sum(x["lost"] + x["duplicates"] + sum(v["lost"] + v["duplicated"] + v["wrong"]
                                                 for v in x["record"].values()) for x in runs)
    p99 = max(x["latency"]["p99"] for x in runs)
    ready = _worst(runs, "ready_s")
    name = f"table PC, {LIMIT_CPU:g} % of a core / {LIMIT_MEMORY // 2**20} MB"
    return [(f"{name}: lost, device byte → broker p99 (worst table and pace)",
             f"0, ≤ {GOAL_P99_MS:g} ms", f"{lost}, {p99:.1f} ms", step["holds"]),
            (f"{name}: READY after spawn (worst)", f"≤ {GOAL_READY_S:g} s", f"{ready:.1f} s",
             ready <= GOAL_READY_S)]


def section(r: dict[str, Any]) -> list[str]:
    """docs/performance.md's section of this benchmark."""
    s = r["smallpc"]
    title = "## The table PC is small: the daemon in 10 % of a core and 256 MB"
    if "steps" not in s:
        return [title, "", f"Not measured: {s.get('skipped', '?')}.", ""]
    plan, m = s["plan"], s["machine"]
    loads = [x for step in s["steps"] for x in step["load"]]
    out = [title, "",
           f"Measured {s['date']} on {m['cpu']}, {m['cores']} cores, kernel {m['kernel']}, "
           f"load average {min(loads):.1f} to {max(loads):.1f} during the run (the machine "
           "was shared with other work: every figure, the baseline's too, carries it). Cage: "
           f"{s['cage']}, one per daemon and pace; the daemon is spawned inside (its start-up "
           "counts against the quota), the broker, the subscriber and the device simulators "
           "run outside: the table PC runs the daemon, the devices are hardware of their own. "
           "Three tables, each its own daemon and cage: baccarat dealt by the reading "
           "shoe with the shuffler-dealer attached, baccarat dealt by the shuffler-dealer, "
           "craps with the dice sensor. Paces: the table's, "
           f"{plan['table']['count']} messages one every {plan['table']['every_s']:g} s (a "
           "card, or a roll: faster than a craps table rolls), and the demo's (`tabled demo`'s "
           f"default), {plan['demo']['count']:,} one every {plan['demo']['every_s']:g} s. "
           "Every message counts, the first after the start too; each table's first comes one "
           "interval of its pace after READY, as at a table (a message within the 100 ms "
           "period of READY finds that period's quota spent on the start-up's end and waits "
           "for the next, up to 90 ms: `python -m bench.smallpc --at-ready` sends it at READY "
           "to show that). The baseline is measured "
           "beside each limited table at the same moment: the same table in a cage without "
           "limits (six daemons at once), so both see the machine's load alike.", "",
           "Lost counts both ways: a script message that did not arrive as the event of its "
           "`seq`, or arrived twice; a `table_seq` of the journal's event and outcome streams "
           "that did not arrive, arrived twice with different bytes, or differs from the "
           "journal's text. CPU is the cage's (cpuacct / cpu.stat) over the pace's window, "
           "100 % = one core; throttled is the CFS periods (100 ms) the quota ran out in, of "
           "the periods the daemon was runnable. READY is spawn to `READY=1` on the notify "
           "socket; check-config is the unit's `ExecStartPre` run in the same cage before it "
           "(systemd's start = both). On a loaded machine both wait for the CPU beside the "
           "quota; the CPU seconds to READY do not, and divided by the quota they give the "
           "READY of a table PC that runs nothing else (the 1 s the daemon may wait for its "
           "devices and broker aside: it waits on them while it runs anyway). Memory is the "
           "cage's peak (memory.max_usage_in_bytes / memory.peak, page cache of the journal "
           "included).", ""]
    rows = []
    for step in s["steps"]:
        for pace in ("table", "demo"):
            for limited in (True, False):
                runs = [x for x in step["runs" if limited else "baseline"] if x["pace"] == pace]
                if runs:
                    rows.append(_row(_limit_name(step) if limited else "none, beside it", pace,
                                     runs, step["cpu_percent"] if limited else None))
    out += _table(("limit (CPU / memory)", "pace", "events / outcomes", "lost",
                   "p50 / p99 ms (worst table)", "READY s", "CPU s to READY",
                   "READY s at the quota alone (CPU s ÷ quota)",
                   "check-config s", "CPU % (worst)", "throttled periods", "peak MB",
                   "goals"), rows)
    out += slowest(s)
    holds_at, met_at = s["smallest_quota_holds"], s["smallest_quota_met"]
    out += [f"Smallest quota tried that holds both paces (0 lost, p99 ≤ {GOAL_P99_MS:g} ms): "
            + (f"{holds_at:g} %" if holds_at is not None else "none")
            + f"; with READY ≤ {GOAL_READY_S:g} s as well: "
            + (f"{met_at:g} %" if met_at is not None else "none") + ". Quotas tried: "
            + ", ".join(f"{q:g} %" for q in plan["quotas"]) + ".", ""]
    out += recommendation(s)
    out += ["Re-measure: `make bench BENCH_ARGS='--only smallpc --merge'` (as root: it makes "
            "cgroups; about 20 minutes), or `.venv/bin/python -m bench.smallpc` for the "
            "figures alone (`--quotas 10 5`, `--quick`).", ""]
    return out


def slowest(s: dict[str, Any]) -> list[str]:
    """A line on the slowest message of each pace at the goal's quota: which, when, and
    whether it ended a round."""
    goal = _at(s, LIMIT_CPU)
    if goal is None:
        return []
    parts = []
    for pace in ("table", "demo"):
        found = [(x, w) for x in goal["runs"] if x["pace"] == pace for w in x.get("slowest", [])]
        if not found:
            continue
        run, worst = max(found, key=lambda xw: xw[1]["ms"])
        parts.append(f"at the {pace}'s pace, message {worst['index'] + 1} of the {run['table']} "
                     f"table, {worst['ms']:.1f} ms, {worst['after_s']:.1f} s after its first"
                     + (" (it ended a round)" if worst["ended_round"] else ""))
    if not parts:
        return []
    return [f"The slowest message at {LIMIT_CPU:g} %: " + "; ".join(parts) + ".", ""]


def reason(r: dict[str, Any], name: str) -> str:
    """The measured reason for a goal of :func:`goals` not met."""
    s = r["smallpc"]
    goal = _at(s, LIMIT_CPU)
    assert goal is not None
    runs, beside = goal["runs"], goal["baseline"]
    if "READY" in name:
        cpu = _worst(runs, "cpu_s_to_ready")
        return (f"start-up takes {cpu:.2f} s of CPU to READY, {cpu * 100 / LIMIT_CPU:.1f} s at "
                f"{LIMIT_CPU:g} % of a core even on a PC that runs nothing else; READY ≤ "
                f"{GOAL_READY_S:g} s needs {cpu * 100 / GOAL_READY_S:.0f} %, and the unit "
                f"recommends {recommended(s):g} % (the table PC section).")
    worst = max(runs, key=lambda x: x["latency"]["p99"])
    twin = next(x for x in beside if x["table"] == worst["table"]
                and x["pace"] == worst["pace"])
    others = max(x["latency"]["p99"] for x in beside if x["pace"] == worst["pace"])
    return (f"the {worst['table']} table at the {worst['pace']} pace, {worst['sent']} messages "
            f"(their p99 is their worst): {worst['latency']['p99']:.1f} ms, with "
            f"{worst['throttled']} of {worst['periods']} periods throttled; the same table "
            f"beside it without a limit {twin['latency']['p99']:.1f} ms, the worst beside "
            f"{others:.1f} ms, on a machine at load {min(goal['load']):.0f}–"
            f"{max(goal['load']):.0f}. Nothing was lost.")


def recommended(s: dict[str, Any]) -> float:
    """The quota to recommend: the smallest tried that met every goal, READY included; the
    issue's 10 % when none did."""
    met = s.get("smallest_quota_met")
    return float(met) if met is not None else LIMIT_CPU


def recommendation(s: dict[str, Any]) -> list[str]:
    """What the unit file should say, from the figures: the quota, the memory, the margins."""
    quota = recommended(s)
    step, goal = _at(s, quota), _at(s, LIMIT_CPU)
    if step is None or goal is None:
        return []
    runs = step["runs"]
    every = [x for st in s["steps"] for x in st["runs"]]
    peak = max((x["memory_peak_mb"] or 0.0) for x in every)
    busiest = _worst(every, "cpu_percent")
    ready_cpu = _worst(every, "cpu_s_to_ready")
    check_cpu = max(float(x["check_config_cpu_s"] or 0.0) for x in every)
    unthrottled = [st["cpu_percent"] for st in s["steps"]
                   if all(x["throttled"] == 0 for x in st["runs"] if x["pace"] == "demo")]
    smallest_free = min(unthrottled) if unthrottled else None
    table_runs = [x for x in goal["runs"] if x["pace"] == "table"]
    out = [f"Recommendation (systemd/tabled.service, docs/install.md): `CPUQuota={quota:g}%` "
           f"and `MemoryMax={LIMIT_MEMORY // 2**20}M`. {quota:g} % is the smallest quota "
           "tried that met every goal, READY included"
           + ("" if s.get("smallest_quota_met") is not None else " (none did: the issue's)")
           + f": worst p99 there {max(x['latency']['p99'] for x in runs):.1f} ms, READY "
           f"{_worst(runs, 'ready_s'):.1f} s on the measuring machine (its load in the "
           "section's first line). The busiest pace used "
           f"{busiest:.1f} % of a core on average ({quota / busiest:.1f}× under the quota); "
           + (f"the demo pace was throttled in no period at {smallest_free:g} % and above, "
              f"and {quota:g} % is {quota / smallest_free:.1f}× that. "
              if smallest_free else "")
           + f"Memory peaked at {peak:.0f} MB, {LIMIT_MEMORY / 2**20 / peak:.1f}× under "
           "the limit.", "",
           f"At the issue's {LIMIT_CPU:g} % nothing was lost and the demo pace was throttled in "
           f"{sum(x['throttled'] for x in goal['runs'] if x['pace'] == 'demo')} of "
           f"{sum(x['periods'] for x in goal['runs'] if x['pace'] == 'demo')} periods; the "
           f"table pace's worst p99 was {max(x['latency']['p99'] for x in table_runs):.1f} ms "
           f"({table_runs[0]['sent']} messages a table: their p99 is their worst; beside it "
           "without a limit "
           f"{max(x['latency']['p99'] for x in goal['baseline'] if x['pace'] == 'table'):.1f}"
           " ms). The start is what the quota slows: READY takes "
           f"{ready_cpu:.2f} s of CPU and check-config before it {check_cpu:.2f} s, so at "
           f"{LIMIT_CPU:g} % a table PC that runs nothing else says READY "
           f"{ready_cpu * 100 / LIMIT_CPU:.1f} s after `tabled run` starts and "
           f"{(ready_cpu + check_cpu) * 100 / LIMIT_CPU:.1f} s after systemd starts the unit; "
           f"READY ≤ {GOAL_READY_S:g} s needs {ready_cpu * 100 / GOAL_READY_S:.0f} % "
           f"({(ready_cpu + check_cpu) * 100 / GOAL_READY_S:.0f} % counting check-config). "
           f"At {quota:g} % those are {ready_cpu * 100 / quota:.1f} s and "
           f"{(ready_cpu + check_cpu) * 100 / quota:.1f} s; the unit's `TimeoutStartSec=60` "
           "covers either.", ""]
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return [*lines, *("| " + " | ".join(row) + " |" for row in rows), ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.smallpc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the smallest form")
    parser.add_argument("--quotas", type=float, nargs="+",
                        help="CPU quotas to try, percent of one core (default 10 5 3 20)")
    parser.add_argument("--at-ready", action="store_true",
                        help="each table's first message at READY, not one interval after")
    parser.add_argument("--workdir", type=Path, help="keep configs, journals and logs here")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.quotas or args.at_ready:
        plan = Plan(**{**{f: getattr(plan, f) for f in plan.__dataclass_fields__},
                       "quotas": tuple(args.quotas or plan.quotas),
                       "at_ready": args.at_ready})
    import tempfile

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tabled-smallpc-"))
    try:
        result = asyncio.run(run(workdir, plan))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    for step in result.get("steps", []):
        for r in [*step["runs"], *step["baseline"]]:
            lat = r["latency"]
            limit = f"{step['cpu_percent']:g}%" if r in step["runs"] else "beside it, none"
            print(f"limit {limit} {r['table']:8} {r['pace']:5} "
                  f"p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} ms, lost {r['lost']}, "
                  f"READY {r['ready_s']:.2f} s (CPU {r['cpu_s_to_ready']:.2f} s, check-config "
                  f"{r['check_config_s']:.2f} s), CPU {r['cpu_percent']:.1f} %, throttled "
                  f"{r['throttled']}/{r['periods']}, peak {r['memory_peak_mb']:.0f} MB, "
                  f"outcomes {r['record']['outcome']['journaled']} "
                  f"{'met' if meets(r) else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
