"""Floor scale: 50, 100 and 200 tables against one Mosquitto on loopback, each at ten times a real
table's pace, with one consumer on a shared subscription.

A table here is the whole daemon of one table, :class:`daemon.service.Service` (its own config,
journal fsync'd on disk, rules, device supervisor and driver, MQTT connection and birth/will),
but several tables share a process: ``WORKERS`` *table hosts* each run their share of the
tables' services on one event loop. One process per table does not fit this 2-core machine:
200 daemons at ~45 MB and ~0.3 % idle CPU each, plus 200 simulator processes, would spend most
of the machine on interpreters before a card is dealt (docs/performance.md gives the measured
figures). The devices are real simulated shoes on ptys, run by ``DEVICE_HOSTS`` separate
processes so that the tables' loops serve only the tables.

Latency is from the shoe's frame on the wire to the consumer, joined by table and event
``seq``; loss is every dealt card that never reached the consumer. Broker CPU is Mosquitto's
process over the dealing window.

The two roles run as ``python -m bench.floor devices …`` and ``python -m bench.floor tables …``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from bench import devices as dev
from bench.footprint import TABLE_CARD_EVERY
from bench.measure import CpuMeter, Latency, usage
from bench.rig import SITE, Collector, device_connected, write_config
from tabled.daemon.broker import Mosquitto

WORKERS: Final = 4
DEVICE_HOSTS: Final = 2
#: Ten times a real table's pace.
CARD_EVERY: Final = TABLE_CARD_EVERY / 10
SHARE_GROUP: Final = "floor"


def table_name(index: int) -> str:
    return f"t{index:03d}"


# -- the device hosts ------------------------------------------------------------------------------


async def serve_devices(tables: list[str], every: float, seconds: float, out: Path) -> None:
    """Plug in a timed shoe per table, print where each is, deal on "go", write the wire times."""
    shoes = {table: dev.PtyFamilyDevice("shoe") for table in tables}
    for shoe in shoes.values():
        await shoe.start()
    print(json.dumps({table: shoe.url for table, shoe in shoes.items()}), flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # "go"
    cards = max(1, int(seconds / every))
    rng = random.Random(1)

    async def deal(index: int, shoe: dev.PtyFamilyDevice) -> None:
        await asyncio.sleep(rng.uniform(0, every))  # tables are not in step with each other
        await shoe.play(dev.shoe_script(cards, seed=index), every)

    await asyncio.gather(*(deal(i, shoe) for i, shoe in enumerate(shoes.values())))
    wire = {table: {str(k): t for k, t in shoe.written.items()} for table, shoe in shoes.items()}
    await asyncio.to_thread(out.write_text, json.dumps(wire))
    print("done", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # "stop": the daemons are gone
    for shoe in shoes.values():
        await shoe.close()


# -- the table hosts -------------------------------------------------------------------------------


async def serve_tables(configs: list[Path], log: Path) -> None:
    """Run one table service per config on this loop until "stop" on standard input."""
    from tabled.contract.logs import configure
    from tabled.daemon.config import load_config
    from tabled.daemon.service import Service

    stream = await asyncio.to_thread(open, log, "a")  # the process's log until it exits
    configure("info", "json", stream=stream, static={"host": log.stem})
    services = [Service(load_config(path)) for path in configs]
    tasks = [asyncio.create_task(service.run()) for service in services]
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    for service in services:
        service.request_stop()
    await asyncio.gather(*tasks, return_exceptions=True)
    stream.close()


# -- the benchmark ---------------------------------------------------------------------------------


def _spawn(args: list[str], log: Path) -> subprocess.Popen[str]:
    with open(log, "ab") as err:
        return subprocess.Popen([sys.executable, "-m", "bench.floor", *args],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                text=True, start_new_session=True)


def _tell(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(line + "\n")
        proc.stdin.flush()


def _read(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def _configs(names: list[str], urls: dict[str, str], broker_url: str,
             workdir: Path) -> list[Path]:
    """One daemon config per table: a baccarat table with its shoe."""
    return [write_config(workdir / f"{name}.toml", table=name, game="baccarat",
                         journal=workdir / f"{name}.sqlite", broker_url=broker_url,
                         devices=[{"id": "shoe-1", "family": "shoe", "url": urls[name]}])
            for name in names]


def _split(items: list[Any], parts: int) -> list[list[Any]]:
    return [items[i::parts] for i in range(parts) if items[i::parts]]


async def run_floor(tables: int, workdir: Path, seconds: float, say: Any = print) -> dict[str, Any]:
    names = [table_name(i) for i in range(tables)]
    hosts: list[subprocess.Popen[str]] = []
    workers: list[subprocess.Popen[str]] = []
    with Mosquitto(workdir=workdir / "broker") as broker:
        try:
            urls: dict[str, str] = {}
            for k, part in enumerate(_split(names, DEVICE_HOSTS)):
                host = await asyncio.to_thread(
                    _spawn, ["devices", "--every", str(CARD_EVERY), "--seconds", str(seconds),
                               "--out", str(workdir / f"wire-{k}.json"), *part],
                              workdir / f"devices-{k}.log")
                hosts.append(host)
                urls.update(json.loads(await asyncio.to_thread(_read, host)))
            configs = await asyncio.to_thread(_configs, names, urls, broker.url, workdir)
            for k, part in enumerate(_split(configs, WORKERS)):
                role = ["tables", "--log", str(workdir / f"tables-{k}.log"), *map(str, part)]
                worker = await asyncio.to_thread(_spawn, role, workdir / f"tables-{k}.err")
                workers.append(worker)
                if await asyncio.to_thread(_read, worker) != "ready":
                    raise RuntimeError(f"table host {k} did not start")
            with Collector(broker.port, [f"tabled/{SITE}/+/device/+/status"]) as status:
                for name in names:
                    if not await asyncio.to_thread(status.wait_until,
                                                   device_connected(name, "shoe-1"), 60.0):
                        raise RuntimeError(f"floor: {name} did not connect its shoe")
            say(f"[floor] {tables} tables up; dealing for {seconds:g} s, a card every "
                f"{CARD_EVERY:g} s per table")
            return await _deal(names, broker, hosts, workers, workdir, seconds)
        finally:
            for proc in workers + hosts:
                _tell(proc, "stop")
            for proc in workers + hosts:
                try:
                    await asyncio.to_thread(proc.wait, 60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                for stream in (proc.stdin, proc.stdout):
                    if stream is not None:
                        with contextlib.suppress(OSError):
                            stream.close()


async def _deal(names: list[str], broker: Mosquitto, hosts: list[subprocess.Popen[str]],
                workers: list[subprocess.Popen[str]], workdir: Path,
                seconds: float) -> dict[str, Any]:
    assert broker.process is not None
    filters = [f"$share/{SHARE_GROUP}/tabled/{SITE}/+/event",
               f"$share/{SHARE_GROUP}/tabled/{SITE}/+/outcome"]
    with Collector(broker.port, filters, client_id="floor-consumer") as consumer:
        meters = {"broker": CpuMeter([broker.process.pid]),
                  "tables": CpuMeter([w.pid for w in workers]),
                  "devices": CpuMeter([h.pid for h in hosts])}
        for meter in meters.values():
            meter.start()
        for host in hosts:
            _tell(host, "go")
        for host in hosts:
            if await asyncio.to_thread(_read, host) != "done":
                raise RuntimeError("a device host failed")
        cpu = {name: meter.percent() for name, meter in meters.items()}
        wire: dict[str, dict[str, float]] = {}
        for k in range(len(hosts)):
            wire.update(json.loads((workdir / f"wire-{k}.json").read_text()))
        expected = sum(len(v) for v in wire.values())
        await asyncio.to_thread(
            consumer.wait_until,
            lambda arrivals: sum(a.topic.endswith("/event") for a in arrivals) >= expected, 30.0)
        arrivals = consumer.take()
    rss = [usage(w.pid).rss for w in workers]
    first: dict[tuple[str, int], float] = {}
    outcomes = 0
    for arrival in arrivals:
        table = arrival.topic.split("/")[2]
        if arrival.topic.endswith("/outcome"):
            outcomes += 1
            continue
        body = json.loads(arrival.payload)
        first.setdefault((table, body["seq"]), arrival.at)
    samples = [first[(t, int(k))] - at for t, written in wire.items() for k, at in written.items()
               if (t, int(k)) in first]
    tables = len(names)
    return {
        "tables": tables,
        "events": expected,
        "outcomes": outcomes,
        "events_per_s": expected / seconds,
        "lost": expected - len(samples),
        "latency": Latency.of(samples).to_dict(),
        "cpu_percent": cpu,
        "table_host_rss_mb": sum(rss) / 2**20,
        "rss_per_table_mb": sum(rss) / 2**20 / tables,
        "tables_cpu_per_table": cpu["tables"] / tables,
    }


async def run(workdir: Path, sizes: list[int], seconds: float, say: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {"workers": WORKERS, "device_hosts": DEVICE_HOSTS,
                           "card_every_s": CARD_EVERY, "seconds": seconds, "runs": []}
    for tables in sizes:
        started = time.monotonic()
        floor_dir = workdir / f"floor-{tables}"
        await asyncio.to_thread(floor_dir.mkdir, parents=True, exist_ok=True)
        result = await run_floor(tables, floor_dir, seconds, say)
        result["wall_s"] = time.monotonic() - started
        out["runs"].append(result)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor")
    roles = parser.add_subparsers(dest="role", required=True)
    devices = roles.add_parser("devices", help="a device host: one timed shoe per table")
    devices.add_argument("--every", type=float, required=True)
    devices.add_argument("--seconds", type=float, required=True)
    devices.add_argument("--out", type=Path, required=True)
    devices.add_argument("tables", nargs="+")
    tables = roles.add_parser("tables", help="a table host: one daemon service per config")
    tables.add_argument("--log", type=Path, required=True)
    tables.add_argument("configs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.role == "devices":
        asyncio.run(serve_devices(args.tables, args.every, args.seconds, args.out))
    else:
        asyncio.run(serve_tables(args.configs, args.log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
