"""The pit keeps up with a floor (issue 14, item 3): ``tabled pit`` as systemd runs it, its
record in SQLite and in PostgreSQL, a floor of table daemons' messages through a real Mosquitto,
and Debian's Chromium on its page.

For each store, two runs, each with a fresh broker, record and pit process:

1. **The floor at ten times a real pace** (``Plan.tables`` tables, ``Plan.seconds`` of dealing;
   bench/pitload.py says what is published and why it is what daemons publish). A browser is
   signed in on the floor page and on a baccarat table's page; a MutationObserver installed
   before the page loads stamps every outcome's first appearance in the DOM
   (``performance.timeOrigin + performance.now()``, in milliseconds) and the load generator
   stamped the same outcome just before handing it to paho (``time.monotonic()``). The page's
   clock ticks on CLOCK_MONOTONIC (Chromium's ``performance.now()``) from a time origin of its
   own, so its offset from this machine's CLOCK_MONOTONIC is measured for each page (the
   tightest of 20 ``evaluate`` round trips, before and after the dealing) and taken off,
   so the difference is publish → DOM. The floor
   page is also loaded ``Plan.paints`` times with the load running: its first contentful paint
   and the first frame after the whole floor (every tile) is in the document. After the
   dealing the pit is stopped and its record compared with what was published, number by
   number: lost (published, not recorded), duplicated (recorded twice), unexpected.
2. **A simulated day** (``Plan.day_hours`` of table time for ``Plan.day_tables`` tables at full
   speed, as fast as the pit takes it): the pit's resident memory sampled all along, its
   VmRSS and VmHWM at the end, the record's size on disk, and the record checked as above. A
   floor page's live stream is read all day (a wall display), so the pit renders what a
   display costs it.

Baselines in the same run: the **bare relay** (a paho subscriber pushing each outcome's round
over server-sent events to a page that writes it into its DOM, no record, no model, no
template; it runs during the floor run, so it shares the machine's load) for publish → DOM; an
**idle pit** (just started, empty record) for memory; the **simplest recorder** (a paho
subscriber inserting each message into SQLite, one commit per message; and the same with
psycopg, autocommit) for messages per second; and the **monitors alone** (bench/integrity.py's
throughput, events made beforehand) for the integrity monitors as the pit runs them
(``pit.watch``, from the payload dicts the pit receives).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import pg as pgserver
from bench.measure import CpuMeter, Latency, load_average
from tabled.daemon.broker import Mosquitto, free_port
from tests.pit.tablefeed import SITE, table_name

CHROMIUM = "/usr/bin/chromium"
#: As tests/pit/test_web.py launches it (FIELD-NOTES.md): no sandbox as root, no background
#: networking on this closed network.
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--disable-extensions"]
#: A floor broker's settings (config/mosquitto/tabled-floor.conf).
BROKER_CONFIG = ["max_queued_messages 100000"]
USER, PASSWORD = "floor", "floor viewer password"
#: Dealing starts this long before the latency window (the tables' first rounds, the pages'
#: streams settle), seconds.
WARM_SECONDS = 2.0
#: The goals of issue 14, item 3.
GOALS = {"dom_p50_ms": 100.0, "dom_p99_ms": 250.0, "first_paint_s": 1.0, "rss_mb": 150.0,
         "monitor_events_per_s": 50_000.0}


@dataclass(frozen=True, slots=True)
class Plan:
    tables: int
    seconds: float
    paints: int
    day_tables: int
    day_hours: float
    stores: tuple[str, ...]
    monitor_rounds: int
    recorder_messages: int
    #: after the latency window the floor page is loaded afresh ``paints`` times, the load
    #: still running, for at most this long, seconds
    paint_seconds: float


FULL = Plan(tables=200, seconds=120.0, paints=5, day_tables=200, day_hours=24.0,
            stores=("sqlite", "postgres"), monitor_rounds=20_000, recorder_messages=20_000,
            paint_seconds=20.0)
QUICK = Plan(tables=6, seconds=5.0, paints=1, day_tables=5, day_hours=0.25,
             stores=("sqlite", "postgres"), monitor_rounds=300, recorder_messages=300,
             paint_seconds=3.0)


def browser_available() -> bool:
    if not Path(CHROMIUM).exists():
        return False
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return False
    return True


# -- the pit as systemd runs it --------------------------------------------------------------


def _pit_config(path: Path, *, broker_url: str, store: str, target: str, web_port: int,
                metrics_port: int, secret: Path, anonymous: bool = False) -> Path:
    from tabled.pit.auth import hash_password

    store_lines = ([f"sqlite = {json.dumps(target)}"] if store == "sqlite" else
                   ["[store.postgres]", f"conninfo = {json.dumps(target)}", "pool_max = 4"])
    lines = ["[pit]", 'id = "bench-pit"', "", "[mqtt]", f"url = {json.dumps(broker_url)}",
             "reconnect_min = 0.1", "reconnect_max = 1.0", "", "[store]", *store_lines, "",
             "[retention]", "days = 90", "alert_days = 365", "interval = 3600", "",
             "[alerts]", "silence_after = 60", "gap_grace = 2.0", "",
             "[web]", 'host = "127.0.0.1"', f"port = {web_port}",
             f"session_secret_file = {json.dumps(str(secret))}",
             f"anonymous_view = {'true' if anonymous else 'false'}", "",
             "[metrics]", 'host = "127.0.0.1"', f"port = {metrics_port}", "",
             "[[users]]", f'name = "{USER}"', 'role = "viewer"',
             f'password_hash = "{hash_password(PASSWORD)}"', "",
             "[log]", 'level = "info"', 'format = "json"']
    path.write_text("\n".join(lines) + "\n")
    return path


class PitProcess:
    """``tabled pit --config …`` in a process of its own, JSON logs to a file."""

    def __init__(self, workdir: Path, broker: Mosquitto, store: str, target: str) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        secret = workdir / "session.secret"
        secret.write_text(secrets.token_urlsafe(48))
        os.chmod(secret, 0o600)
        self.web_port, self.metrics_port = free_port(), free_port()
        self.config = _pit_config(workdir / "pit.toml", broker_url=broker.url, store=store,
                                  target=target, web_port=self.web_port,
                                  metrics_port=self.metrics_port, secret=secret)
        self.url = f"http://127.0.0.1:{self.web_port}"
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> float:
        """Start it; the seconds until its page answers /healthz."""
        started = time.monotonic()
        with open(self.workdir / "pit.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tabled.tools.cli", "pit", "--config", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the pit exited: {self.log()[-3000:]}")
            if self.health() is not None:
                return time.monotonic() - started
            time.sleep(0.1)
        raise RuntimeError("the pit's page did not answer")

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                body: dict[str, Any] = json.loads(response.read())
                return body
        except (OSError, ValueError):
            return None

    def metric(self, name: str) -> float:
        """The sum of a counter over its labels (from /metrics on the pit's metrics port)."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:
            text = response.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{") or line.startswith(name + " "))

    def memory(self) -> dict[str, float]:
        """VmRSS and VmHWM (the peak), MB."""
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
        return out

    def stop(self, timeout: float = 30.0) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def log(self) -> str:
        return (self.workdir / "pit.log").read_text(errors="replace")


def _taken(pit: PitProcess, sent: int, timeout: float) -> float:
    """Wait until the pit has taken every message sent (metrics are QoS 0: the broker may
    drop one, so the wait also ends when nothing more comes for a few seconds); what it
    took."""
    deadline = time.monotonic() + timeout
    last, still = -1.0, time.monotonic()
    while time.monotonic() < deadline:
        taken = pit.metric("pit_messages_received_total")
        if taken >= sent:
            break
        if taken != last:
            last, still = taken, time.monotonic()
        elif time.monotonic() - still > 5.0:
            break
        time.sleep(0.25)
    time.sleep(1.0)  # the last batch applied and recorded
    return pit.metric("pit_messages_received_total")


def wait_until(check: Callable[[], Any], timeout: float, what: str,
               interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(interval)


# -- the load ---------------------------------------------------------------------------------


class Load:
    """``python -m bench.pitload`` driven over its standard input."""

    def __init__(self, workdir: Path, broker: Mosquitto, tables: int, mode: str, *,
                 seconds: float = 0.0, hours: float = 0.0, pit_metrics: str | None = None
                 ) -> None:
        self.out = workdir / f"load-{mode}.json"
        args = [sys.executable, "-m", "bench.pitload", "--port", str(broker.port),
                "--tables", str(tables), "--journals", str(workdir / "journals"),
                "--out", str(self.out), "--mode", mode, "--seconds", str(seconds),
                "--hours", str(hours)]
        if pit_metrics:
            args += ["--pit-metrics", pit_metrics]
        with open(workdir / f"load-{mode}.log", "ab") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, start_new_session=True)
        self.expect("ready")

    def expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != word:
            raise RuntimeError(f"the load generator said {line!r}, not {word!r}")

    def tell(self, word: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()

    def summary(self) -> dict[str, Any]:
        self.tell("stop")
        self.proc.wait(120)
        body: dict[str, Any] = json.loads(self.out.read_text())
        return body

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- what the record holds ---------------------------------------------------------------------


def _record_rows(store: str, target: str) -> tuple[list[tuple[str, str, int, int]], int]:
    """(table, topic, table_seq, copies) for every number recorded, and the malformed count."""
    sql = ("SELECT table_id, topic, table_seq, COUNT(*) FROM messages WHERE site = '"
           f"{SITE}' AND table_seq IS NOT NULL GROUP BY table_id, topic, table_seq")
    if store == "sqlite":
        db = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
        try:
            rows = [tuple(r) for r in db.execute(sql)]
            malformed = db.execute("SELECT COUNT(*) FROM malformed").fetchone()[0]
        finally:
            db.close()
    else:
        import psycopg

        with psycopg.connect(target) as conn:
            rows = [tuple(r) for r in conn.execute(sql).fetchall()]
            malformed = conn.execute("SELECT COUNT(*) FROM malformed").fetchone()[0]  # type: ignore[index]
    return rows, int(malformed)  # type: ignore[return-value]


def check_record(store: str, target: str, published: dict[str, dict[str, list[int]]]
                 ) -> dict[str, Any]:
    """Every number published against the record: lost, duplicated, unexpected."""
    rows, malformed = _record_rows(store, target)
    stored: dict[tuple[str, str], dict[int, int]] = {}
    for table, topic, seq, copies in rows:
        stored.setdefault((table, topic), {})[int(seq)] = int(copies)
    lost = duplicated = unexpected = expected = 0
    by_topic: dict[str, int] = {}
    for table, streams in published.items():
        for topic, seqs in streams.items():
            have = stored.pop((table, topic), {})
            want = set(seqs)
            expected += len(want)
            key = "device" if topic.startswith("device/") else topic
            by_topic[key] = by_topic.get(key, 0) + len(want)
            lost += len(want - set(have))
            unexpected += len(set(have) - want)
            duplicated += sum(c - 1 for c in have.values())
    for have in stored.values():  # tables or topics nobody published
        unexpected += len(have)
    return {"published": expected, "by_topic": by_topic, "lost": lost,
            "duplicated": duplicated, "unexpected": unexpected, "malformed": malformed}


def record_size(store: str, target: str) -> dict[str, Any]:
    if store == "sqlite":
        path = Path(target)
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        size = sum(f.stat().st_size for f in files if f.exists())
        db = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        finally:
            db.close()
    else:
        import psycopg

        with psycopg.connect(target) as conn:
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
            rows = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]  # type: ignore[index]
    return {"bytes": int(size), "messages": int(rows),
            "bytes_per_message": int(size) / max(1, int(rows))}


# -- the browser --------------------------------------------------------------------------------

#: Installed before any page script: stamps the first appearance of each outcome in the DOM.
#: On the floor page a tile's ``data-last-round``; on a table's page its rows' ``data-round``.
OBSERVE = """
(() => {
  window.__seen = [];
  const now = () => performance.timeOrigin + performance.now();
  const look = (root) => {
    const t = now();
    if (root.matches && root.matches('article.tile')) {
      const r = root.dataset.lastRound;
      if (r) window.__seen.push([root.dataset.table + '#' + r, t]);
    }
    if (!root.querySelectorAll) return;
    for (const tile of root.querySelectorAll('article.tile[data-last-round]')) {
      const r = tile.dataset.lastRound;
      if (r) window.__seen.push([tile.dataset.table + '#' + r, t]);
    }
    for (const row of root.querySelectorAll('#table-live [data-round], [data-round]')) {
      if (row.closest('#table-live')) window.__seen.push(['#' + row.dataset.round, t]);
    }
  };
  const start = () => {
    new MutationObserver((mutations) => {
      for (const m of mutations) for (const n of m.addedNodes) if (n.nodeType === 1) look(n);
    }).observe(document.body, {childList: true, subtree: true});
  };
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
  // when each fragment arrived, before htmx swaps it in: publish -> arrival and arrival -> DOM
  window.__arrived = [];
  const tileRound = /data-table="([^"]+)"[^>]*data-last-round="([0-9]+)"/;
  const rowRound = /data-round="([0-9]+)"/g;
  document.addEventListener('htmx:sseBeforeMessage', (e) => {
    const t = now();
    const name = e.detail.type, data = e.detail.data || '';
    if (name.startsWith('tile:')) {
      const m = tileRound.exec(data);
      if (m) window.__arrived.push([m[1] + '#' + m[2], t]);
    } else if (name === 'table') {
      for (const m of data.matchAll(rowRound)) window.__arrived.push(['#' + m[1], t]);
    }
  });
})();
"""

#: The first frame after the whole floor is in the document (every tile parsed).
PAINT = """
(() => {
  window.__floor = {};
  document.addEventListener('DOMContentLoaded', () => {
    window.__floor.dcl = performance.now();
    window.__floor.tiles = document.querySelectorAll('article.tile').length;
    requestAnimationFrame(() => setTimeout(() => {
      window.__floor.painted = performance.now();
    }, 0));
  });
})();
"""


async def _sign_in(browser: Any, url: str) -> Any:
    context = await browser.new_context(viewport={"width": 1600, "height": 1000})
    page = await context.new_page()
    await page.goto(url + "/login")
    await page.fill("input[name=name]", USER)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("form button[type=submit]")
    await page.wait_for_url(url + "/")
    state = await context.storage_state()
    await context.close()
    return state


async def _first_paints(browser: Any, state: Any, url: str, count: int,
                        tables: int) -> list[dict[str, float]]:
    out = []
    for _ in range(count):
        context = await browser.new_context(storage_state=state,
                                            viewport={"width": 1600, "height": 1000})
        page = await context.new_page()
        await page.add_init_script(PAINT)
        await page.goto(url + "/", wait_until="load")
        await page.wait_for_function("() => window.__floor && window.__floor.painted",
                                     timeout=30_000)
        figures = await page.evaluate("""() => {
            const nav = performance.getEntriesByType('navigation')[0];
            const paint = {};
            for (const p of performance.getEntriesByType('paint')) paint[p.name] = p.startTime;
            return {fcp: paint['first-contentful-paint'], fp: paint['first-paint'],
                    response_end: nav.responseEnd, dcl: window.__floor.dcl,
                    load: nav.loadEventEnd, floor_painted: window.__floor.painted,
                    tiles: window.__floor.tiles, bytes: nav.transferSize};
        }""")
        if figures["tiles"] != tables:
            raise RuntimeError(f"the floor page showed {figures['tiles']} tiles, not {tables}")
        out.append(figures)
        await context.close()
    return out


@contextlib.asynccontextmanager
async def _browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def _watch(browser: Any, state: Any | None, url: str, live: bool = True,
                 script: str = OBSERVE) -> Any:
    context = await browser.new_context(storage_state=state,
                                        viewport={"width": 1600, "height": 1000})
    page = await context.new_page()
    await page.add_init_script(script)
    await page.goto(url)
    if live:
        await page.wait_for_selector("#live.on", timeout=30_000)
    return page


async def clock_offset(page: Any, tries: int = 20) -> dict[str, float]:
    """The page's clock (``performance.timeOrigin + performance.now()``) minus this machine's
    CLOCK_MONOTONIC (``time.monotonic()``), ms, from the tightest of ``tries`` round trips (the
    page's time against the middle of the round trip; the uncertainty is half of it). Not the
    wall clock: on this machine CLOCK_REALTIME is slewed against CLOCK_MONOTONIC by about
    5 ms a second (measured), so a page's wall-clock stamps drifted tens of milliseconds from
    the load's during one run (a bare relay showed outcomes before they were published);
    against CLOCK_MONOTONIC the offset stays put (reported before and after the dealing)."""
    best: tuple[float, float] | None = None
    for _ in range(tries):
        t0 = time.monotonic()
        shown = await page.evaluate("() => performance.timeOrigin + performance.now()")
        t1 = time.monotonic()
        if best is None or t1 - t0 < best[0]:
            best = (t1 - t0, float(shown) - (t0 + t1) / 2 * 1000)
    assert best is not None
    return {"offset_ms": best[1], "uncertainty_ms": best[0] * 500}


def dom_latency(seen: list[list[Any]], published: list[tuple[str, int, float]],
                key: Callable[[str, int], str], since: float,
                until: float = float("inf"), offset_ms: float = 0.0) -> dict[str, Any]:
    """First appearance of each outcome published in [since, until) in the DOM (the page's
    stamp less its clock's ``offset_ms``), minus its publish time."""
    first: dict[str, float] = {}
    for k, t in seen:
        if k not in first:
            first[k] = float(t)
    samples = []
    wanted = 0
    for table, round_no, at in published:
        if not since <= at < until:
            continue
        wanted += 1
        shown = first.get(key(table, round_no))
        if shown is not None:
            samples.append((shown - offset_ms) / 1000 - at)
    out = Latency.of(samples).to_dict() if samples else {"count": 0}
    out["published"] = wanted
    out["negative"] = sum(1 for s in samples if s < 0)
    return out


# -- the bare relay (the baseline of publish → DOM) --------------------------------------------

RELAY_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>relay</title>
<script src="/relay.js" defer></script></head><body><ul id="out"></ul></body></html>"""
RELAY_JS = """
const out = document.getElementById('out');
const source = new EventSource('/events');
source.onopen = () => document.body.dataset.live = 'on';
source.onmessage = (e) => {
  const [table, round] = e.data.split(' ');
  const li = document.createElement('li');
  li.className = 'relayed'; li.dataset.key = table + '#' + round; li.textContent = e.data;
  out.prepend(li);
  while (out.children.length > 50) out.lastChild.remove();
};
"""
RELAY_OBSERVE = """
(() => {
  window.__seen = [];
  const start = () => new MutationObserver((mutations) => {
    const t = performance.timeOrigin + performance.now();
    for (const m of mutations) for (const n of m.addedNodes)
      if (n.nodeType === 1 && n.dataset.key) window.__seen.push([n.dataset.key, t]);
  }).observe(document.body, {childList: true, subtree: true});
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();
"""


class Relay:
    """The simplest live page: a paho subscriber to every outcome, each pushed as
    ``"<table> <round>"`` over server-sent events from a bare asyncio HTTP server (on a thread
    of its own) to a page that puts it in its DOM."""

    def __init__(self, broker_port: int) -> None:
        self.port = free_port()
        self.broker_port = broker_port
        self._streams: list[asyncio.Queue[str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> Relay:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the relay did not start")
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion

        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id="bare-relay",
                                  protocol=paho.MQTTv311)
        self.client.on_connect = lambda c, *_: c.subscribe(f"tabled/{SITE}/+/outcome", qos=1)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", self.broker_port)
        self.client.loop_start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.disconnect()
        self.client.loop_stop()
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _on_message(self, _: Any, __: Any, message: Any) -> None:
        body = json.loads(message.payload)
        line = f"{message.topic.split('/')[2]} {body.get('round')}"
        loop = self._loop
        if loop is not None:
            for queue in list(self._streams):
                loop.call_soon_threadsafe(queue.put_nowait, line)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            path = request.split(b" ", 2)[1].decode()
            if path == "/events":
                queue: asyncio.Queue[str] = asyncio.Queue()
                self._streams.append(queue)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Cache-Control: no-store\r\n\r\n")
                await writer.drain()
                try:
                    while True:
                        line = await queue.get()
                        writer.write(f"data: {line}\n\n".encode())
                        await writer.drain()
                finally:
                    self._streams.remove(queue)
            body, kind = (RELAY_JS, "text/javascript") if path == "/relay.js" else (
                RELAY_PAGE, "text/html")
            data = body.encode()
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: "
                         f"{len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


# -- the simplest recorder (the baseline of messages per second) --------------------------------


def simplest_recorder(store: str, target: str, messages: list[tuple[str, bytes]]
                      ) -> dict[str, Any]:
    """Insert each message as it comes, one commit each (what a subscriber that "just records"
    would do): messages per second of wall and of CPU, in this process."""
    started, cpu = time.perf_counter(), time.process_time()
    sql = ("INSERT INTO raw (topic, table_seq, received_at, payload) VALUES (?, ?, ?, ?) "
           "ON CONFLICT DO NOTHING")
    if store == "sqlite":
        db = sqlite3.connect(target, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE raw (id INTEGER PRIMARY KEY, topic TEXT, table_seq INTEGER, "
                   "received_at REAL, payload TEXT, UNIQUE (topic, table_seq))")
        started, cpu = time.perf_counter(), time.process_time()
        for topic, payload in messages:
            seq = json.loads(payload).get("table_seq")
            db.execute(sql, (topic, seq, time.time(), payload.decode()))
        db.close()
    else:
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("CREATE TABLE raw (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                         "topic TEXT, table_seq BIGINT, received_at DOUBLE PRECISION, "
                         "payload TEXT, UNIQUE (topic, table_seq))")
            started, cpu = time.perf_counter(), time.process_time()
            pg_sql = sql.replace("?", "%s")
            for topic, payload in messages:
                seq = json.loads(payload).get("table_seq")
                conn.execute(pg_sql, (topic, seq, time.time(), payload.decode()))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"messages": len(messages), "per_s": len(messages) / wall,
            "per_cpu_s": len(messages) / cpu if cpu > 0 else None}


def sample_messages(count: int, tables: int = 200) -> list[tuple[str, bytes]]:
    """``count`` messages of a floor, as the load generator publishes them."""
    import io
    import tempfile

    from tabled.contract.logs import configure
    from tests.pit.tablefeed import TableFeed

    configure("warning", "json", stream=io.StringIO())
    out: list[tuple[str, bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        feeds = [TableFeed(i, Path(tmp)) for i in range(tables)]
        for f in feeds:
            out += [(o.topic, o.payload.encode()) for o in f.birth()]
        rng = random.Random(3)
        while len(out) < count:
            f = feeds[rng.randrange(len(feeds))]
            out += [(o.topic, o.payload.encode()) for o in f.step()]
            if rng.random() < 0.5:
                out += [(o.topic, o.payload.encode()) for o in f.metrics()]
    return out[:count]


# -- the integrity monitors -------------------------------------------------------------------


def monitors(rounds: int) -> dict[str, Any]:
    """Events per CPU-second through one table's monitors: alone (bench/integrity.py, events
    made beforehand) and as the pit runs them (``pit.watch``: the payload dicts the pit
    received, the sequencer, the monitors), per game and over a floor's mix."""
    import io
    import tempfile

    from bench import integrity
    from tabled.contract.logs import configure
    from tabled.pit.alerts import AlertEngine
    from tabled.pit.config import parse_config
    from tabled.pit.messages import parse_message
    from tabled.pit.model import Floor
    from tabled.pit.watch import IntegrityWatch
    from tests.pit.tablefeed import TableFeed, game_of

    configure("warning", "json", stream=io.StringIO())
    out: dict[str, Any] = {"alone": [integrity.throughput(g, rounds, 13)
                                     for g in ("baccarat", "craps", "qpoker")]}
    config = parse_config({"mqtt": {"url": "mqtt://127.0.0.1:1"},
                           "store": {"sqlite": "/nonexistent"}})
    pit: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for game, index in (("baccarat", 0), ("craps", 3), ("qpoker", 1)):
            assert game_of(index) == game
            feed = TableFeed(index, Path(tmp))
            floor = Floor()
            messages = []
            for o in feed.birth():
                floor.apply(parse_message("tabled", o.topic, o.payload.encode(), time.time()))
            target = rounds if game != "qpoker" else rounds // 2
            while feed.runtime.counters["outcomes"] < target:
                for o in feed.step():
                    m = parse_message("tabled", o.topic, o.payload.encode(), time.time())
                    messages.append(m)
            watch = IntegrityWatch(config.integrity, AlertEngine.__new__(AlertEngine), floor,
                                   None)  # type: ignore[arg-type]
            events = sum(1 for m in messages if m.stream == "event")
            cpu = time.process_time()
            for m in messages:
                watch.feed(m.site, m.table, m.stream, m.table_seq, m.payload, m.received_at,
                           m.event)
            cpu = time.process_time() - cpu
            pit[game] = {"messages": len(messages), "events": events,
                         "messages_per_s": len(messages) / cpu, "events_per_s": events / cpu}
    out["pit"] = pit
    return out


# -- one store ---------------------------------------------------------------------------------


async def _target(store: str, pgs: pgserver.Postgres | None, name: str, workdir: Path) -> str:
    if store == "sqlite":
        return str(workdir / "pit.sqlite")
    assert pgs is not None
    return pgs.conninfo(await asyncio.to_thread(pgs.new_database, name))


def _load_sampler(samples: list[float], stop: threading.Event) -> None:
    while not stop.wait(2.0):
        samples.append(load_average())


async def floor_run(store: str, target: str, workdir: Path, plan: Plan, say: Any,
                    browser_ok: bool) -> dict[str, Any]:
    """The floor at ten times a real pace, the browser on its page."""
    result: dict[str, Any] = {"tables": plan.tables, "seconds": plan.seconds}
    with Mosquitto(workdir=workdir / "broker", extra_config=BROKER_CONFIG) as broker:
        pit = PitProcess(workdir / "pit", broker, store, target)
        result["pit_start_s"] = await asyncio.to_thread(pit.start)
        await asyncio.sleep(1.0)
        result["idle_memory_mb"] = pit.memory()
        paint_window = plan.paint_seconds if browser_ok else 0.0
        load = Load(workdir, broker, plan.tables, "paced", seconds=plan.seconds + paint_window)
        try:
            load.tell("born")
            await asyncio.to_thread(load.expect, "born")
            await asyncio.to_thread(
                wait_until, lambda: (pit.health() or {}).get("tables", {}).get("online")
                == plan.tables, 60, "every table online in the pit")
            result["born_memory_mb"] = pit.memory()
            async with contextlib.AsyncExitStack() as stack:
                pages: dict[str, Any] = {}
                relay_page = None
                if browser_ok:
                    browser = await stack.enter_async_context(_browser())
                    state = await _sign_in(browser, pit.url)
                    relay = stack.enter_context(Relay(broker.port))
                    pages["floor"] = await _watch(browser, state, pit.url + "/")
                    pages["table"] = await _watch(browser, state,
                                                  f"{pit.url}/table/{SITE}/{table_name(0)}")
                    relay_page = await _watch(browser, None, relay.url, live=False,
                                              script=RELAY_OBSERVE)
                    await relay_page.wait_for_selector("body[data-live=on]", state="attached",
                                                      timeout=10_000)
                clocks: dict[str, list[dict[str, float]]] = {}
                watched = {**pages, "relay": relay_page} if relay_page is not None else {}
                for name, page in watched.items():
                    clocks[name] = [await clock_offset(page)]
                say(f"[pit] {store}: {plan.tables} tables online; dealing for "
                    f"{plan.seconds:g} s at ten times a real pace")
                loads: list[float] = []
                stop = threading.Event()
                sampler = threading.Thread(target=_load_sampler, args=(loads, stop),
                                           daemon=True)
                sampler.start()
                meter = CpuMeter([pit.pid])
                load.tell("go")
                # the latency window: the first seconds' outcomes are not counted (the pages'
                # streams and the tables' first rounds settle)
                await asyncio.sleep(WARM_SECONDS)
                since = time.monotonic()
                meter.start()
                await asyncio.sleep(plan.seconds - WARM_SECONDS)
                until = time.monotonic()
                result["pit_cpu_percent"] = meter.percent()
                stop.set()
                sampler.join()
                result["load_average"] = {"mean": sum(loads) / max(1, len(loads)),
                                          "max": max(loads, default=load_average())}
                # then the floor page loaded afresh, the load still running
                paints: list[dict[str, float]] = []
                if browser_ok:
                    paints = await _first_paints(browser, state, pit.url, plan.paints,
                                                 plan.tables)
                await asyncio.to_thread(load.expect, "done")
                sent = await asyncio.to_thread(load.summary)
                result["taken"] = await asyncio.to_thread(_taken, pit, sent["sent"], 60.0)
                result["messages"] = sent["sent"]
                result["messages_per_s"] = sent["sent"] / sent["deal_seconds"]
                if browser_ok:
                    # each page's clock against this one's, before and after the dealing (the
                    # mean is taken: a drift between them is reported)
                    offset: dict[str, float] = {}
                    for name, page in watched.items():
                        clocks[name].append(await clock_offset(page))
                        offset[name] = sum(c["offset_ms"] for c in clocks[name]) / 2
                    result["page_clock_ms"] = clocks
                    outcomes = [tuple(x) for x in sent["outcome_times"]]
                    seen = {name: await page.evaluate("() => window.__seen")
                            for name, page in pages.items()}
                    arrived = {name: await page.evaluate("() => window.__arrived")
                               for name, page in pages.items()}
                    mine = [o for o in outcomes if o[0] == table_name(0)]
                    result["dom"] = {
                        "floor": dom_latency(seen["floor"], outcomes,  # type: ignore[arg-type]
                                             lambda t, r: f"{t}#{r}", since, until,
                                             offset["floor"]),
                        "table": dom_latency(seen["table"], mine,  # type: ignore[arg-type]
                                             lambda t, r: f"#{r}", since, until,
                                             offset["table"])}
                    result["sse_arrival"] = {
                        "floor": dom_latency(arrived["floor"], outcomes,  # type: ignore[arg-type]
                                             lambda t, r: f"{t}#{r}", since, until,
                                             offset["floor"]),
                        "table": dom_latency(arrived["table"], mine,  # type: ignore[arg-type]
                                             lambda t, r: f"#{r}", since, until,
                                             offset["table"])}
                    assert relay_page is not None
                    result["dom"]["relay"] = dom_latency(
                        await relay_page.evaluate("() => window.__seen"),
                        outcomes, lambda t, r: f"{t}#{r}",  # type: ignore[arg-type]
                        since, until, offset["relay"])
                    result["paint"] = paints
            result["memory_mb"] = pit.memory()
        finally:
            load.kill()
            code = await asyncio.to_thread(pit.stop)
        result["pit_exit"] = code
        result["handler_errors"] = pit.log().count('"message_failed"')
        result["record"] = await asyncio.to_thread(check_record, store, target,
                                                   sent["published"])
    return result


async def day_run(store: str, target: str, workdir: Path, plan: Plan, say: Any
                  ) -> dict[str, Any]:
    """A day of table time for the floor at full speed; memory all along."""
    result: dict[str, Any] = {"tables": plan.day_tables, "hours": plan.day_hours}
    with Mosquitto(workdir=workdir / "broker", extra_config=BROKER_CONFIG) as broker:
        pit = PitProcess(workdir / "pit", broker, store, target)
        await asyncio.to_thread(pit.start)
        await asyncio.sleep(1.0)
        result["idle_memory_mb"] = pit.memory()
        load = Load(workdir, broker, plan.day_tables, "day", hours=plan.day_hours,
                    pit_metrics=pit.metrics_url)
        samples: list[tuple[float, float]] = []
        try:
            load.tell("born")
            await asyncio.to_thread(load.expect, "born")
            async with _floor_stream(pit.url) as stream_stats:
                say(f"[pit] {store}: a day of {plan.day_tables} tables "
                    f"({plan.day_hours:g} h of table time) at full speed")
                meter = CpuMeter([pit.pid])
                meter.start()
                started = time.monotonic()
                load.tell("go")
                done = asyncio.ensure_future(asyncio.to_thread(load.expect, "done"))
                while not done.done():
                    samples.append((time.monotonic() - started, pit.memory()["VmRSS"]))
                    await asyncio.wait({done}, timeout=5.0)
                await done
                result["pit_cpu_percent"] = meter.percent()
                sent = await asyncio.to_thread(load.summary)
                result["taken"] = await asyncio.to_thread(_taken, pit, sent["sent"], 600.0)
                result["seconds"] = time.monotonic() - started
                await asyncio.sleep(2.0)
                result["memory_mb"] = pit.memory()
                result["stream"] = dict(stream_stats)
        finally:
            load.kill()
            code = await asyncio.to_thread(pit.stop)
        result["pit_exit"] = code
        result["messages"] = sent["sent"]
        result["messages_per_s"] = sent["sent"] / result["seconds"]
        result["load_wait_s"] = sent.get("day", {}).get("waited_s")
        result["rss_samples"] = samples
        result["handler_errors"] = pit.log().count('"message_failed"')
        result["record"] = await asyncio.to_thread(check_record, store, target,
                                                   sent["published"])
        result["record_size"] = await asyncio.to_thread(record_size, store, target)
    return result


@contextlib.asynccontextmanager
async def _floor_stream(url: str) -> AsyncIterator[dict[str, int]]:
    """A signed-in floor page's live stream, read (and counted) for as long as it is open."""
    import httpx

    stats = {"events": 0, "bytes": 0}
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await client.get("/login")
        token = client.cookies.get("csrftoken")
        response = await client.post("/login", data={"name": USER, "password": PASSWORD,
                                                      "csrftoken": token or ""})
        if response.status_code not in (200, 303):
            raise RuntimeError(f"sign-in refused: {response.status_code}")

        async def read() -> None:
            async with client.stream("GET", "/events?view=floor",
                                     timeout=httpx.Timeout(30, read=None)) as stream:
                async for chunk in stream.aiter_bytes():
                    stats["bytes"] += len(chunk)
                    stats["events"] += chunk.count(b"\nevent: ") + chunk.startswith(b"event: ")

        task = asyncio.ensure_future(read())
        try:
            yield stats
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await task


PARTS = ("floor", "day", "recorder", "monitors")


async def run(workdir: Path, plan: Plan, say: Any = print,
              parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    results: dict[str, Any] = {"plan": asdict(plan), "goals": GOALS, "stores": {}}
    browser_ok = browser_available()
    results["browser"] = "chromium" if browser_ok else "unavailable"
    stores = [s for s in plan.stores if s == "sqlite" or pgserver.available()]
    with contextlib.ExitStack() as stack:
        pgs = stack.enter_context(pgserver.Postgres()) if "postgres" in stores else None
        if pgs is not None:
            results["postgres"] = pgs.version
        for store in stores:
            out: dict[str, Any] = {}
            base = workdir / f"pit-{store}"
            if "floor" in parts:
                (base / "floor").mkdir(parents=True, exist_ok=True)
                target = await _target(store, pgs, "floor", base / "floor")
                out["floor"] = await floor_run(store, target, base / "floor", plan, say,
                                               browser_ok)
            if "day" in parts:
                (base / "day").mkdir(parents=True, exist_ok=True)
                target = await _target(store, pgs, "day", base / "day")
                out["day"] = await day_run(store, target, base / "day", plan, say)
                say(f"[pit] {store}: day done in {out['day']['seconds']:.0f} s, "
                    f"RSS {out['day']['memory_mb']['VmRSS']:.0f} MB")
            if "recorder" in parts:
                sample = await asyncio.to_thread(sample_messages, plan.recorder_messages)
                base.mkdir(parents=True, exist_ok=True)
                rec_target = (str(base / "raw.sqlite") if store == "sqlite" else
                              await _target(store, pgs, "raw", base))
                out["simplest_recorder"] = await asyncio.to_thread(simplest_recorder, store,
                                                                   rec_target, sample)
            results["stores"][store] = out
    if "monitors" in parts:
        say("[pit] integrity monitors")
        results["monitors"] = await asyncio.to_thread(monitors, plan.monitor_rounds)
    return results


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m bench.pit")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--stores", nargs="+", choices=("sqlite", "postgres"))
    parser.add_argument("--tables", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--hours", type=float)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--workdir", type=Path, help="keep the run's files here")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    changes: dict[str, Any] = {}
    if args.stores:
        changes["stores"] = tuple(args.stores)
    if args.tables:
        changes["tables"] = changes["day_tables"] = args.tables
    if args.seconds:
        changes["seconds"] = args.seconds
    if args.hours is not None:
        changes["day_hours"] = args.hours
    from dataclasses import replace

    plan = replace(plan, **changes)
    with tempfile.TemporaryDirectory(prefix="tabled-bench-pit-") as tmp:
        workdir = args.workdir or Path(tmp)
        results = asyncio.run(run(workdir, plan, parts=tuple(args.parts)))
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

