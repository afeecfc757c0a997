"""A floor of up to 1,000 tables at a real table's pace into one pit pair (issue 30, item 3):
``python -m bench.scale --tables 200,500,1000 --minutes 2``.

Owns the pair's benchmark: for each size a fresh Mosquitto (the floor broker's settings), a
fresh database in one private PostgreSQL (bench/pg.py, the server's durable defaults), two
``tabled pit`` processes with one ``mqtt.share_group`` and one record (docs/pit.md "Several
pit servers on one floor"), the tables, and Debian's Chromium signed in on pit A's floor
page. Never decides what a figure means (bench/report.py words it).

What is simulated: each table is bench/pitload.py's :class:`~tests.pit.tablefeed.TableFeed`,
a daemon's own rules runtime and message numbering over an in-memory journal, fed by the
simulators' generation code, every message byte for byte what a daemon publishes; all the
tables run in one load process (``python -m bench.scale load``) over a few shared MQTT
connections (each table's messages in order on one of them, QoS 1) instead of a daemon and a
connection per table. The pace is a real table's (tests/pit/tablefeed.py ``SECONDS_PER_EVENT``:
a baccarat card every 6 s, so a hand every ~30 s; a craps roll every 30 s; a Q Poker event
every 5.5 s, a round a minute; each gap drawn from 0.5-1.5 times that) and metrics every 5 s
per table, as the daemon sends them. Not simulated: the broker, both pits, PostgreSQL, the
browser.

Measured per size: the durable messages published against the record, number by number per
(site, table, stream, ``table_seq``) (lost, duplicated, unexpected; bench/pit.py
``check_record``); publish → DOM for every outcome on pit A's floor page (the load stamps
``time.monotonic()`` just before handing the outcome to paho; a MutationObserver in the page
stamps the tile's new ``data-last-round`` with ``performance.timeOrigin + performance.now()``;
the page clock's offset from CLOCK_MONOTONIC is measured by round trips before and after, as
bench/pit.py does: one machine, one monotonic clock), split by which pit recorded the outcome
(A's own share reaches its page directly; B's share through the record); each pit's CPU (% of
a core) and RSS (VmHWM, the peak, and VmRSS at the end); PostgreSQL's, Mosquitto's and the
load's CPU; how late the load ran behind its schedule; the machine's load average.

``--withhold K`` keeps the K-th outcome from the broker (still counted as published) and
``--repeat K`` publishes the K-th outcome twice (a redelivery): the accounting must then show
exactly one lost and no duplicate (tests/bench/test_scale.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Final

from bench import pg as pgserver
from bench.measure import CpuMeter, Latency, load_average, machine, usage
from bench.pit import (
    BROKER_CONFIG,
    Load,
    PitProcess,
    _browser,
    _sign_in,
    _watch,
    browser_available,
    check_record,
    clock_offset,
    dom_latency,
    wait_until,
)
from bench.rig import Collector
from tabled.daemon.broker import Mosquitto
from tabled.pit.service import T_FOLLOW, T_FOLLOW_MIN
from tests.pit.tablefeed import PREFIX, SITE

#: The goals of issue 30, item 3.
GOALS: Final = {"dom_p99_ms": 250.0, "rss_mb": 300.0}
SHARE_GROUP: Final = "scale"
PITS: Final = ("scale-a", "scale-b")
#: Outcomes published in the first seconds are not counted (the page's stream settles).
WARM_SECONDS: Final = 5.0
#: The daemon's default metrics interval, seconds.
METRICS_EVERY: Final = 5.0


# -- the load (``python -m bench.scale load``) --------------------------------------------------


def deal(tables: list[Any], pub: Any, seconds: float, speedup: float, withhold: int,
         repeat: int) -> dict[str, Any]:
    """Every table at ``speedup`` times a real pace for ``seconds``; each outcome's publish
    time (table, round, CLOCK_MONOTONIC just before the publish call)."""
    from tests.pit.tablefeed import SECONDS_PER_EVENT

    rng = random.Random(7)
    start = time.monotonic()
    end = start + seconds
    heap: list[tuple[float, int, str]] = []
    for i, t in enumerate(tables):
        heap.append((start + rng.uniform(0, SECONDS_PER_EVENT[t.game] / speedup), i, "event"))
        heap.append((start + rng.uniform(0, METRICS_EVERY), i, "metrics"))
    heapq.heapify(heap)
    times: list[tuple[str, int, float]] = []
    walls: list[float] = []  # the same publishes on the wall clock, for the record's stamps
    late: list[float] = []
    withheld: list[tuple[str, int]] = []
    outcomes = 0
    while heap:
        due, i, kind = heapq.heappop(heap)
        if due >= end:
            continue
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            late.append(-wait)
        t = tables[i]
        if kind == "metrics":
            out = t.metrics()
            heapq.heappush(heap, (due + METRICS_EVERY, i, kind))
        else:
            out = t.step()
            every = SECONDS_PER_EVENT[t.game] / speedup
            heapq.heappush(heap, (due + every * rng.uniform(0.5, 1.5), i, kind))
        for o in out:
            copies = 1
            if o.round is not None:
                outcomes += 1
                if outcomes == withhold:
                    withheld.append((t.name, o.round))
                    continue
                copies = 2 if outcomes == repeat else 1
                times.append((t.name, o.round, time.monotonic()))
                walls.append(time.time())
            for _ in range(copies):
                pub.publish(t.connection, o)
    late.sort()
    return {"outcome_times": times, "outcome_walls": walls, "withheld": withheld,
            "late_events": len(late),
            "late_max_s": late[-1] if late else 0.0,
            "late_p99_s": late[int(0.99 * (len(late) - 1))] if late else 0.0}


def serve_load(args: argparse.Namespace) -> int:
    """The load generator's process, on bench/pitload.py's protocol (``ready``; ``born`` →
    births → ``born``; ``go`` → deals → ``done``; ``stop`` → summary to ``--out``)."""
    from bench.pitload import Publisher, serve
    from tabled.contract.logs import configure
    from tests.pit.tablefeed import TableFeed

    configure("warning", "json", stream=io.StringIO())  # the runtime logs every outcome
    args.journals.mkdir(parents=True, exist_ok=True)
    tables = [TableFeed(i, args.journals, connection=i) for i in range(args.tables)]
    pub = Publisher(args.port)
    summary: dict[str, Any] = {"tables": len(tables)}

    def go() -> None:
        summary.update(deal(tables, pub, args.seconds, args.speedup, args.withhold,
                            args.repeat))

    serve(tables, pub, summary, go, args.out)
    return 0


class ScaleLoad(Load):
    """``python -m bench.scale load`` driven over its standard input."""

    def __init__(self, workdir: Path, broker: Mosquitto, tables: int, seconds: float,
                 speedup: float, withhold: int, repeat: int) -> None:
        self.out = workdir / "load.json"
        args = [sys.executable, "-m", "bench.scale", "load", "--port", str(broker.port),
                "--tables", str(tables), "--journals", str(workdir / "journals"),
                "--out", str(self.out), "--seconds", str(seconds), "--speedup", str(speedup),
                "--withhold", str(withhold), "--repeat", str(repeat)]
        with open(workdir / "load.log", "ab") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, start_new_session=True)
        self.expect("ready")


# -- the pit pair -------------------------------------------------------------------------------


def browser_pids() -> list[int]:
    """This process's Chromium processes (Playwright's driver starts the browser, which
    starts its renderers and helpers): every descendant whose command is chromium's."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, _, rest = stat.partition("(")[2].rpartition(")")
        parents[int(entry.name)] = int(rest.split()[1])
        names[int(entry.name)] = name
    me = os.getpid()

    def mine(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == me:
                return True
        return False

    return [pid for pid, name in names.items() if "chrom" in name and mine(pid)]


class LiveCpuMeter(CpuMeter):
    """A :class:`~bench.measure.CpuMeter` over processes that may end during the interval
    (a browser's helpers): only those alive at both ends are counted."""

    def _each(self) -> dict[int, float]:
        out = {}
        for pid in self.pids:
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[pid] = usage(pid).cpu
        return out

    def start(self) -> None:
        self._first, self._t0 = self._each(), time.monotonic()

    def percent(self) -> float:
        elapsed = time.monotonic() - self._t0
        now = self._each()
        spent = sum(now[pid] - cpu for pid, cpu in self._first.items() if pid in now)
        return 100.0 * spent / elapsed if elapsed > 0 else float("nan")


TILE_ROUND = re.compile(r'data-table="([^"]+)"[^>]*data-last-round="([0-9]+)"')


async def read_floor_stream(url: str, seen: list[tuple[str, float]]) -> None:
    """Pit A's floor stream as a program reads it (no browser): each tile fragment's round,
    stamped ``time.monotonic()`` in ms when its event is complete, until cancelled. What the
    pit sends, and when, apart from what a browser does with it."""
    import httpx

    from bench.pit import PASSWORD, USER

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await client.get("/login")
        token = client.cookies.get("csrftoken")
        await client.post("/login", data={"name": USER, "password": PASSWORD,
                                          "csrftoken": token or ""})
        async with client.stream("GET", "/events?view=floor",
                                 timeout=httpx.Timeout(30, read=None)) as stream:
            name, data = "", []
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:])
                elif not line:
                    if name.startswith("tile:"):
                        found = TILE_ROUND.search("".join(data))
                        if found:
                            seen.append((f"{found[1]}#{found[2]}", time.monotonic() * 1000))
                    name, data = "", []


def profile_summary(path: Path, top: int = 12) -> dict[str, Any]:
    """Where a profiled pit's main thread spent its busy time: the functions with the most
    time of their own, and
    the share of the whole each of a few of the pit's parts took (cumulative time of its
    entry points; they overlap where one calls another)."""
    import pstats

    stats = pstats.Stats(str(path))
    # cProfile times the main thread on the wall clock: the event loop's wait in epoll is
    # idle time, not work, and is left out
    table: dict[Any, Any] = {k: v for k, v in stats.stats.items()  # type: ignore[attr-defined]
                             if "epoll" not in k[2] and "select" not in k[2]}
    total = sum(own for _, _, own, _, _ in table.values())
    rows = sorted(((own, cum, calls, f"{Path(file).name}:{line}({name})")
                   for (file, line, name), (_, calls, own, cum, _) in table.items()),
                  reverse=True)
    parts = {"alerts (pit/alerts.py)": "/pit/alerts.py", "web (pit/web)": "/pit/web/",
             "templates (jinja2)": "/jinja2/",
             "store (psycopg)": "/psycopg/", "MQTT (aiomqtt, paho)": "/paho/",
             "model (pit/model.py)": "/pit/model.py", "integrity (pit/integrity)":
             "/pit/integrity/"}
    own_by_part = {part: sum(own for (file, _, _), (_, _, own, _, _) in table.items()
                             if marker in file) for part, marker in parts.items()}
    # the floor page's alerts panel groups every alert into incidents on each render
    incidents = [(calls, cum) for (file, _, name), (_, calls, _, cum, _) in table.items()
                 if file.endswith("/pit/alerts.py") and name == "incidents"]
    return {"total_s": total,
            "incidents": {"calls": sum(c for c, _ in incidents),
                          "cumulative_s": sum(t for _, t in incidents)},
            "own_share": {part: own / total for part, own in own_by_part.items()},
            "top": [{"function": where, "own_s": own, "cumulative_s": cum, "calls": calls}
                    for own, cum, calls, where in rows[:top]]}


def _online(pit: PitProcess, tables: int) -> bool:
    return bool((pit.health() or {}).get("tables", {}).get("online") == tables)


def _password_line(config: str) -> str:
    return next(line for line in config.splitlines() if line.startswith("password_hash"))


class PairedPit(PitProcess):
    """A :class:`~bench.pit.PitProcess` of the pair: its own id, the pair's share group and
    session secret, the pair's PostgreSQL record."""

    def __init__(self, workdir: Path, broker: Mosquitto, target: str, pit_id: str,
                 secret: Path, follow_every: float | None = None,
                 partner: PairedPit | None = None) -> None:
        super().__init__(workdir, broker, "postgres", target)
        self.follow_every = follow_every
        self.profile: Path | None = None
        shutil.copyfile(secret, workdir / "session.secret")
        text = self.config.read_text()
        if partner is not None:
            # the same [[users]], hash and salt included: a password hash of its own would
            # read as the password changed, and the partner would end every session
            text = text.replace(_password_line(text), _password_line(partner.config.read_text()))
        text = text.replace('id = "bench-pit"', f'id = "{pit_id}"', 1)
        text = text.replace("[mqtt]\n", f'[mqtt]\nshare_group = "{SHARE_GROUP}"\n', 1)
        self.config.write_text(text)
        self.pit_id = pit_id

    def start(self, timeout: float = 60.0) -> float:
        """As :meth:`PitProcess.start`; with ``follow_every`` the pit's ``T_FOLLOW`` (how often
        it reads its partner's share from the record) is set to it first: an experiment on
        what that interval costs, not the pit as shipped. With ``profile`` it runs under
        cProfile, its statistics written to ``pit.prof`` when it stops."""
        if self.follow_every is None and self.profile is None:
            return super().start(timeout)
        started = time.monotonic()
        follow = "" if self.follow_every is None else (
            f"import tabled.pit.service as s; s.T_FOLLOW = {self.follow_every!r}; ")
        launch = self.workdir / "launch.py"
        launch.write_text(f"import sys; {follow}from tabled.tools.cli import main; "
                          "sys.exit(main(sys.argv[1:]))\n")
        profiling = [] if self.profile is None else ["-m", "cProfile", "-o", str(self.profile)]
        with open(self.workdir / "pit.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, *profiling, str(launch), "pit", "--config", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(lambda: self.health() is not None or self.proc is None
                   or self.proc.poll() is not None, timeout, "the pit's page")
        if self.proc.poll() is not None:
            raise RuntimeError(f"the pit exited: {self.log()[-3000:]}")
        return time.monotonic() - started


def _durable_rows(target: str) -> int:
    import psycopg

    with psycopg.connect(target) as conn:
        row = conn.execute("SELECT COUNT(*) FROM messages WHERE site = %s AND table_seq IS "
                           "NOT NULL", (SITE,)).fetchone()
    return int(row[0]) if row else 0


def _settle(target: str, expected: int, timeout: float) -> int:
    """Wait until the record holds ``expected`` numbered messages or stops growing for 5 s."""
    deadline = time.monotonic() + timeout
    last, still = -1, time.monotonic()
    while time.monotonic() < deadline:
        rows = _durable_rows(target)
        if rows >= expected:
            return rows
        if rows != last:
            last, still = rows, time.monotonic()
        elif time.monotonic() - still > 5.0:
            return rows
        time.sleep(0.25)
    return _durable_rows(target)


def _recorded_by(target: str) -> dict[str, tuple[str, float]]:
    """``"<table>#<round>"`` → the pit server that recorded that outcome, and when it
    received it (``time.time()``)."""
    import psycopg

    with psycopg.connect(target) as conn:
        rows = conn.execute("SELECT table_id, round, recorded_by, received_at FROM messages "
                            "WHERE site = %s AND topic = 'outcome'", (SITE,)).fetchall()
    return {f"{t}#{r}": (str(by), float(at)) for t, r, by, at in rows}


def _metric_lines(pit: PitProcess, prefix: str) -> dict[str, float]:
    """The pit's own figures whose name starts with ``prefix`` (from its /metrics)."""
    import urllib.request

    out: dict[str, float] = {}
    with urllib.request.urlopen(pit.metrics_url, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(prefix) and "_created" not in line and (
                    "_bucket{" not in line
                    or line.startswith((LAG + "_bucket{", BATCH + "_bucket{", GC + "_bucket{"))
                    or (line.startswith("pit_store_seconds_bucket{") and RECORD_LABEL in line)):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
    return out


#: The pit's event-loop lag histogram (pit/metrics.py) and its record's write latency: their
#: buckets are kept in the figures.
LAG: Final = "pit_event_loop_lag_seconds"
BATCH: Final = "pit_batch_seconds"
GC: Final = "pit_gc_pause_seconds"
RECORD_LABEL: Final = 'operation="record_batch"'
RECORD: Final = "pit_store_seconds{" + RECORD_LABEL + "}"


def histogram(lines: dict[str, float], name: str = LAG) -> dict[str, float | None]:
    """A histogram's samples (``name``: the metric, with its labels if any) and the bucket
    (its upper bound, ms) within which 50 %, 99 % and all of them fell."""
    metric, _, wanted = name.partition("{")
    labels = dict(re.findall(r'(\w+)="([^"]*)"', wanted))
    buckets: list[tuple[float, float]] = []
    total = 0.0
    for key, count in lines.items():
        head, _, rest = key.partition("{")
        found = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        le = found.pop("le", None)
        if found != labels:
            continue
        if head == metric + "_bucket" and le is not None:
            buckets.append((float(le), count))
        elif head == metric + "_count":
            total = count
    buckets.sort()

    def within(share: float) -> float | None:
        for bound, count in buckets:
            if total and count >= share * total:
                return bound * 1000
        return None

    return {"samples": total, "p50_le_ms": within(0.5), "p99_le_ms": within(0.99),
            "max_le_ms": within(1.0)}


async def _cancel(task: asyncio.Future[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


def _sampler(samples: list[float], stop: threading.Event) -> None:
    while not stop.wait(2.0):
        samples.append(load_average())


#: Chromium's cumulative main-thread counters (CDP ``Performance.getMetrics``) kept per run.
PAGE_METRICS: Final = ("TaskDuration", "ScriptDuration", "LayoutDuration",
                       "RecalcStyleDuration", "LayoutCount", "RecalcStyleCount", "Nodes",
                       "JSHeapUsedSize")


async def _page_metrics(cdp: Any) -> dict[str, float]:
    got = await cdp.send("Performance.getMetrics")
    return {m["name"]: float(m["value"]) for m in got["metrics"] if m["name"] in PAGE_METRICS}


def _page_busy(before: dict[str, float], after: dict[str, float],
               seconds: float) -> dict[str, float]:
    """What the page's main thread did over the window: the durations as % of the window,
    the counts per second, the document's size at the end."""
    out: dict[str, float] = {}
    for name in PAGE_METRICS:
        if name not in after:
            continue
        delta = after[name] - before.get(name, 0.0)
        if name.endswith("Duration"):
            out[name.removesuffix("Duration").lower() + "_percent"] = 100 * delta / seconds
        elif name.endswith("Count"):
            out[name.removesuffix("Count").lower() + "_per_s"] = delta / seconds
        else:
            out[name.lower()] = after[name]
    return out


def page_profile_summary(profile: dict[str, Any], top: int = 15) -> dict[str, Any]:
    """A CDP CPU profile of the page's main thread: self time per function (name, script
    and line), the busiest first, as ms and as % of the sampled time."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    self_us: dict[str, float] = {}
    for node_id, delta in zip(profile.get("samples", []), profile.get("timeDeltas", []),
                              strict=False):
        frame = nodes[node_id]["callFrame"]
        url = frame.get("url", "").rsplit("/", 1)[-1]
        line = frame.get("lineNumber", 0) + 1
        name = f"{frame.get('functionName') or '(anonymous)'} {url}:{line}"
        self_us[name] = self_us.get(name, 0.0) + delta
    total = sum(self_us.values()) or 1.0
    busy = total - sum(v for k, v in self_us.items() if k.startswith(("(idle)", "(program)")))
    return {"sampled_ms": total / 1000, "busy_ms": busy / 1000,
            "top": [{"function": k, "self_ms": v / 1000, "percent": 100 * v / total}
                    for k, v in sorted(self_us.items(), key=lambda kv: -kv[1])[:top]]}


async def run_step(tables: int, seconds: float, workdir: Path, pgs: pgserver.Postgres,
                   say: Any, *, speedup: float = 1.0, withhold: int = 0, repeat: int = 0,
                   follow_every: float | None = None, profile: bool = False,
                   profile_page: bool = False) -> dict[str, Any]:
    """One size: the pair, the tables for ``seconds`` of dealing, the browser on pit A."""
    result: dict[str, Any] = {"tables": tables, "seconds": seconds, "speedup": speedup,
                              "follow_every": follow_every}
    name = f"scale{tables}" + ("" if follow_every is None else "_follow")
    target = pgs.conninfo(await asyncio.to_thread(pgs.new_database, name))
    with Mosquitto(workdir=workdir / "broker", extra_config=BROKER_CONFIG) as broker:
        assert broker.process is not None
        secret = workdir / "session.secret"
        secret.write_text(os.urandom(32).hex())
        os.chmod(secret, 0o600)
        first = PairedPit(workdir / PITS[0], broker, target, PITS[0], secret, follow_every)
        if profile:
            first.profile = workdir / "pit-a.prof"
        pits = [first, *(PairedPit(workdir / name, broker, target, name, secret, follow_every,
                                   partner=first) for name in PITS[1:])]
        load: ScaleLoad | None = None
        sent: dict[str, Any] = {}
        try:
            for pit in pits:
                await asyncio.to_thread(pit.start)
            result["idle_memory_mb"] = [pit.memory() for pit in pits]
            load = await asyncio.to_thread(ScaleLoad, workdir, broker, tables, seconds,
                                           speedup, withhold, repeat)
            load.tell("born")
            await asyncio.to_thread(load.expect, "born")
            for pit in pits:
                await asyncio.to_thread(wait_until, partial(_online, pit, tables), 120,
                                        f"every table online in {pit.pit_id}")
            result["born_memory_mb"] = [pit.memory() for pit in pits]
            async with contextlib.AsyncExitStack() as stack:
                browser = await stack.enter_async_context(_browser())
                state = await _sign_in(browser, pits[0].url)
                page = await _watch(browser, state, pits[0].url + "/")
                navigations: list[str] = []
                page.on("framenavigated", lambda frame: navigations.append(frame.url)
                        if frame.parent_frame is None else None)
                result["page_memory_mb"] = [pit.memory() for pit in pits]
                clocks = [await clock_offset(page)]
                streamed: list[tuple[str, float]] = []
                reader = asyncio.ensure_future(read_floor_stream(pits[0].url, streamed))
                stack.push_async_callback(_cancel, reader)
                # the broker's delivery of each outcome to a subscriber of its own (QoS 1, as
                # the pits subscribe): publish → broker → a client, without a pit
                probe = stack.enter_context(Collector(broker.port,
                                                      [f"{PREFIX}/{SITE}/+/outcome"]))
                say(f"[scale] {tables} tables online in both pits; dealing for {seconds:g} s "
                    f"at {speedup:g}x a real pace")
                loads: list[float] = []
                stop = threading.Event()
                sampler = threading.Thread(target=_sampler, args=(loads, stop), daemon=True)
                sampler.start()
                meters = {"pit_a": CpuMeter([pits[0].pid]), "pit_b": CpuMeter([pits[1].pid]),
                          "postgres": CpuMeter(pgs.server_pids()),
                          "mosquitto": CpuMeter([broker.process.pid]),
                          "load": CpuMeter([load.proc.pid]),
                          "browser": LiveCpuMeter(await asyncio.to_thread(browser_pids))}
                cdp = await page.context.new_cdp_session(page)
                await cdp.send("Performance.enable")
                load.tell("go")
                await asyncio.sleep(min(WARM_SECONDS, seconds / 4))
                since = time.monotonic()
                for meter in meters.values():
                    meter.start()
                page_before = await _page_metrics(cdp)
                lag_before = [await asyncio.to_thread(_metric_lines, pit, "pit_")
                              for pit in pits]
                if profile_page:
                    await cdp.send("Profiler.enable")
                    await cdp.send("Profiler.setSamplingInterval", {"interval": 500})
                    await cdp.send("Profiler.start")
                done = asyncio.ensure_future(asyncio.to_thread(load.expect, "done"))
                await done
                until = time.monotonic()
                result["page_main_thread"] = _page_busy(page_before, await _page_metrics(cdp),
                                                        until - since)
                if profile_page:
                    stopped = await cdp.send("Profiler.stop")
                    result["page_profile"] = page_profile_summary(stopped["profile"])
                result["cpu_percent"] = {name: m.percent() for name, m in meters.items()}
                stop.set()
                sampler.join()
                result["load_average"] = {"mean": sum(loads) / max(1, len(loads)),
                                          "max": max(loads, default=load_average())}
                sent = await asyncio.to_thread(load.summary)
                expected = sum(len(seqs) for streams in sent["published"].values()
                               for seqs in streams.values()) - len(sent["withheld"])
                result["recorded_rows"] = await asyncio.to_thread(_settle, target, expected,
                                                                  60.0)
                await asyncio.sleep(1.5)  # the last outcomes followed into A's page
                clocks.append(await clock_offset(page))
                offset = sum(c["offset_ms"] for c in clocks) / len(clocks)
                result["page_clock_ms"] = clocks
                live = await page.evaluate(
                    "() => document.querySelector('#live.on') !== null")
                seen = await page.evaluate("() => window.__seen")
                delivered = [[f"{a.topic.split('/')[2]}#{json.loads(a.payload)['round']}",
                              a.at * 1000] for a in probe.take()]
                arrived = await page.evaluate("() => window.__arrived")
            outcomes = [(str(t), int(r), float(at)) for t, r, at in sent["outcome_times"]]
            result["page_saw"] = {"tile_changes": len(seen), "stream_fragments": len(arrived),
                                  "live_at_end": live, "url_at_end": page.url,
                                  "navigations": navigations}
            by = await asyncio.to_thread(_recorded_by, target)

            def key(t: str, r: int) -> str:
                return f"{t}#{r}"

            result["dom"] = dom_latency(seen, outcomes, key, since, until, offset)
            result["sse_arrival"] = dom_latency(arrived, outcomes, key, since, until,
                                                offset)
            # publish → the pit's receipt, both on the wall clock (the record's stamp is one)
            received = [by[key(t, r)][1] - wall for (t, r, at), wall in
                        zip(outcomes, sent["outcome_walls"], strict=True)
                        if since <= at < until and key(t, r) in by]
            result["received"] = Latency.of(received).to_dict() if received else {"count": 0}
            result["stream_reader"] = dom_latency([list(x) for x in streamed], outcomes, key,
                                                  since, until, 0.0)
            result["broker_delivery"] = dom_latency(delivered, outcomes, key, since, until, 0.0)
            # the broker's delivery (to the bench's subscriber) → the pit's receipt, per outcome:
            # what the pit itself adds after the broker (its wall-clock stamp against the
            # subscriber's CLOCK_MONOTONIC one, through the load's pair of stamps of its publish)
            at_broker = {k: t / 1000 for k, t in reversed(delivered)}
            after_broker = [by[key(t, r)][1] - (wall - at) - at_broker[key(t, r)]
                            for (t, r, at), wall in zip(outcomes, sent["outcome_walls"],
                                                        strict=True)
                            if since <= at < until and key(t, r) in by
                            and key(t, r) in at_broker]
            result["broker_to_receipt"] = (Latency.of(after_broker).to_dict() if after_broker
                                           else {"count": 0})
            for name in PITS:
                mine = [o for o in outcomes
                        if by.get(key(o[0], o[1]), ("", 0.0))[0] == f"pit:{name}"]
                result["dom_" + name.rsplit("-", 1)[1]] = dom_latency(
                    seen, mine, key, since, until, offset)
            result["messages"] = sent["sent"]
            result["deal_seconds"] = sent["deal_seconds"]
            result["messages_per_s"] = sent["sent"] / sent["deal_seconds"]
            result["outcomes_per_s"] = len(outcomes) / sent["deal_seconds"]
            result["load_late"] = {k: sent[k] for k in ("late_events", "late_max_s",
                                                         "late_p99_s")}
            result["withheld"] = sent["withheld"]
            result["memory_mb"] = [pit.memory() for pit in pits]
            result["pit_metrics"] = [await asyncio.to_thread(_metric_lines, pit, "pit_")
                                     for pit in pits]
            # over the window: the histograms' growth since its start
            grown = [{k: v - before.get(k, 0.0) for k, v in lines.items()}
                     for lines, before in zip(result["pit_metrics"], lag_before, strict=True)]
            result["loop_lag"] = [histogram(lines, LAG) for lines in grown]
            result["record_latency"] = [histogram(lines, RECORD) for lines in grown]
            result["batch_latency"] = [histogram(lines, BATCH) for lines in grown]
            result["gc_pause"] = [{g: histogram(lines, f'{GC}{{generation="{g}"}}')
                                   for g in ("0", "1", "2")} for lines in grown]
        finally:
            if load is not None:
                load.kill()
            codes = [await asyncio.to_thread(pit.stop) for pit in pits]
        result["pit_exit"] = codes
        if first.profile is not None and first.profile.exists():
            result["profile"] = {"tables": tables, **await asyncio.to_thread(
                profile_summary, first.profile)}
        result["handler_errors"] = sum(pit.log().count('"message_failed"') for pit in pits)
        result["record"] = await asyncio.to_thread(check_record, "postgres", target,
                                                   sent["published"])
    return result


async def run(workdir: Path, sizes: list[int], seconds: float, say: Any = print,
              experiment_follow: float | None = None, **options: Any) -> dict[str, Any]:
    """Every size in turn, one PostgreSQL server for all (a database each); with
    ``experiment_follow`` the smallest size once more with the pits' ``T_FOLLOW`` at that
    (where the poll shows with nothing else queued)."""
    if not pgserver.available():
        raise RuntimeError("PostgreSQL is not installed (make system-deps installs it)")
    if not browser_available():
        raise RuntimeError("Chromium or Playwright is missing (make system-deps)")
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    out: dict[str, Any] = {"goals": GOALS, "seconds": seconds, "runs": [],
                           "load_before": load_average(),
                           "machine": await asyncio.to_thread(machine, workdir),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           # how often the shipped pit reads its partner's share (seconds)
                           "t_follow": T_FOLLOW, "t_follow_min": T_FOLLOW_MIN,
                           "follow": "notify"}
    with pgserver.Postgres() as pgs:
        out["postgres"] = pgs.version
        steps: list[tuple[int, dict[str, Any]]] = [(tables, options) for tables in sizes]
        if experiment_follow is not None:
            steps.append((min(sizes), {**options, "follow_every": experiment_follow}))
        for tables, step_options in steps:
            follow = step_options.get("follow_every")
            step = workdir / (f"scale-{tables}" + ("" if follow is None else "-follow"))
            step.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            result = await run_step(tables, seconds, step, pgs, say, **step_options)
            result["wall_s"] = time.monotonic() - started
            if follow is not None and experiment_follow is not None:
                out["follow_experiment"] = result
            else:
                out["runs"].append(result)
            rec = result["record"]
            say(f"[scale] {tables} tables: lost {rec['lost']}, duplicated "
                f"{rec['duplicated']}, DOM p99 {result['dom'].get('p99', float('nan')):.0f} ms,"
                f" RSS {max(m['VmHWM'] for m in result['memory_mb']):.0f} MB")
    return out


ROOT: Final = Path(__file__).resolve().parent.parent
DOC: Final = ROOT / "docs" / "performance.md"
RESULTS: Final = ROOT / "bench" / "scale.json"
#: The section's place in docs/performance.md (bench/report.py writes the markers with it).
BEGIN, END = "<!-- scale:figures -->", "<!-- /scale:figures -->"
BEFORE: Final = "## Profiles, and what they changed"


def write_docs(results: dict[str, Any], doc: Path = DOC) -> None:
    """Put the section into docs/performance.md between its markers (before the profiles the
    first time), leaving the rest of the document as it is."""
    from bench.report import scale_section

    text = doc.read_text()
    section = "\n".join(scale_section(results)).rstrip("\n") + "\n"
    if BEGIN in text and END in text:
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        text = head + section.rstrip("\n") + tail
    elif BEFORE in text:
        head, _, tail = text.partition(BEFORE)
        text = head + section + "\n" + BEFORE + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    doc.write_text(text)
    # and into make bench's figures, which render the whole document: a later run of the
    # other sections keeps this one
    figures = ROOT / "bench" / "results.json"
    if doc == DOC and figures.exists():
        every = json.loads(figures.read_text())
        every["scale"] = results
        every.setdefault("measured", {})["scale"] = results.get("date", "?")
        figures.write_text(json.dumps(every, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    roles = parser.add_subparsers(dest="role")
    load = roles.add_parser("load", help="the load generator's process (run by the benchmark)")
    load.add_argument("--port", type=int, required=True)
    load.add_argument("--tables", type=int, required=True)
    load.add_argument("--journals", type=Path, required=True)
    load.add_argument("--out", type=Path, required=True)
    load.add_argument("--seconds", type=float, required=True)
    load.add_argument("--speedup", type=float, default=1.0)
    load.add_argument("--withhold", type=int, default=0)
    load.add_argument("--repeat", type=int, default=0)
    parser.add_argument("--tables", default="200",
                        help="sizes, comma-separated (default 200; the full form: "
                             "200,500,1000)")
    parser.add_argument("--minutes", type=float, default=1.0,
                        help="minutes of dealing per size (default 1)")
    parser.add_argument("--speedup", type=float, default=1.0,
                        help="times a real table's pace (default 1)")
    parser.add_argument("--withhold", type=int, default=0,
                        help="keep the K-th outcome from the broker (checks the accounting)")
    parser.add_argument("--repeat", type=int, default=0,
                        help="publish the K-th outcome twice (a redelivery)")
    parser.add_argument("--follow-every", type=float, metavar="S",
                        help="an experiment: run the pits with T_FOLLOW (pit/service.py, how "
                             "often a pit reads its partner's share from the record) set to S "
                             f"seconds instead of the shipped {T_FOLLOW:g}")
    parser.add_argument("--experiment-follow", type=float, metavar="S",
                        help="after the sizes, the smallest once more with --follow-every S")
    parser.add_argument("--profile", action="store_true",
                        help="run pit A under cProfile (<workdir>/scale-N/pit-a.prof; its "
                             "figures are then not the shipped pit's)")
    parser.add_argument("--profile-page", action="store_true",
                        help="sample the floor page's main thread (CDP Profiler) over the "
                             "dealing: its busiest functions in the figures")
    parser.add_argument("--out", type=Path, help="write the figures here (default: stdout)")
    parser.add_argument("--workdir", type=Path, help="keep the run's files here")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the section of docs/performance.md and bench/scale.json")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="measure nothing: write the section from saved figures")
    args = parser.parse_args(argv)
    if args.role == "load":
        return serve_load(args)
    if args.render is not None:
        write_docs(json.loads(args.render.read_text()))
        return 0
    sizes = [int(s) for s in args.tables.split(",")]
    with tempfile.TemporaryDirectory(prefix="tabled-bench-scale-") as tmp:
        workdir = args.workdir or Path(tmp)
        results = asyncio.run(run(workdir, sizes, args.minutes * 60,
                                  lambda s: print(s, file=sys.stderr, flush=True),
                                  speedup=args.speedup, withhold=args.withhold,
                                  repeat=args.repeat, follow_every=args.follow_every,
                                  experiment_follow=args.experiment_follow,
                                  profile=args.profile, profile_page=args.profile_page))
    text = json.dumps(results, indent=1)
    if args.write_docs:
        RESULTS.write_text(text + "\n")
        write_docs(results)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
