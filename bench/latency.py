"""Latency, device byte to subscriber, per device family: tabled against its two baselines.

For each family (shoe, shuffler, dice) three pipelines carry the same script at the same pace
to one subscriber on the same broker:

- ``tabled``: the daemon (``tabled run``) with the family's simulator, published on
  ``…/event``, matched by the event's ``seq`` (the driver numbers the k-th event k);
- ``baseline_a``: ``bench.baseline`` reading the device and publishing with paho;
- ``baseline_b``: the same with one fsync'd SQLite WAL insert per frame.

The three run side by side but only one is driven at a time: the script is played in rounds,
each pipeline's block in turn, so a drift in the machine (the VM's disk is the noisiest part)
falls on all three alike. The order changes from round to round (:data:`ORDERS`): what ran just
before a block moves its latency, so each pipeline comes after each of the others, and after
each idle time, equally often.

Each cycle of :data:`ORDERS` has processes of its own: every pipeline is started afresh (a new
process, journal file and device) for each cycle, and its figures pool the cycles. One process
of the same code differs from the next by tens of microseconds at the p50, for as long as it
runs (where its journal file lies on the disk, its memory's layout): one process per pipeline
made a run's ratio a draw of that (measured: docs/performance.md, Profiles, "One process, one
draw").

A latency is the collector's arrival stamp minus the device's wire stamp (bench.devices), both
CLOCK_MONOTONIC. The first ``warmup`` messages of every process are sent and not counted.

tabled's serial device takes the daemon's ACKs just before its next send, not as they arrive
(:data:`HOST_BYTES_AT_SENDS`; why: ``bench.devices._Timed.hold_host_bytes``).
"""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import devices as dev
from bench.measure import Latency, usage
from bench.rig import (
    Arrival,
    Collector,
    DaemonProcess,
    device_connected,
    json_of,
    socket_path,
    topic_base,
    write_config,
)
from tabled.daemon.broker import Mosquitto

PIPELINES = ("tabled", "baseline_a", "baseline_b")
#: Messages per block at most: a pipeline is driven for one block, then the next pipeline.
BLOCK = 500
#: tabled's simulated serial device takes its host's bytes at its sends (recorded in the plan).
HOST_BYTES_AT_SENDS = True

#: The pipelines' order in each round, cycled (a balanced carry-over design): over one cycle
#: every pipeline runs just after each of the other two, and after one, two and three blocks
#: idle, each of these six combinations once. The order was fixed (tabled, (a), (b)) before,
#: so tabled always came after (b); what that did is measured in docs/performance.md
#: (Profiles, "The order of the blocks").
ORDERS: Final = (
    ("tabled", "baseline_a", "baseline_b"),
    ("tabled", "baseline_b", "baseline_a"),
    ("baseline_b", "tabled", "baseline_a"),
    ("tabled", "baseline_b", "baseline_a"),
    ("tabled", "baseline_a", "baseline_b"),
    ("baseline_a", "tabled", "baseline_b"),
)


def rounds(total: int, block: int = BLOCK) -> tuple[int, int]:
    """How ``total`` measured messages are cut: (rounds, messages per block), the rounds a
    whole number of :data:`ORDERS` cycles and no block longer than ``block``."""
    cycles = max(1, math.ceil(total / (len(ORDERS) * block)))
    count = cycles * len(ORDERS)
    return count, math.ceil(total / count)


def cycles(total: int, block: int = BLOCK) -> list[int]:
    """How many measured messages each cycle (each set of processes) plays: every cycle's
    rounds full but the last's, ``total`` in all."""
    count, size = rounds(total, block)
    per_cycle = size * len(ORDERS)
    return [min(per_cycle, total - first) for first in range(0, count * size, per_cycle)
            if first < total]


def schedule(total: int, block: int = BLOCK) -> Iterator[tuple[str, int, int]]:
    """One cycle's blocks of ``total`` measured messages, in the order they are driven:
    (pipeline, first index, end index), round after round in the orders of :data:`ORDERS`
    (the indices count the measured messages, after the warm-up)."""
    size = math.ceil(total / len(ORDERS))
    for number, order in enumerate(ORDERS):
        first, end = number * size, min((number + 1) * size, total)
        if first < end:
            for name in order:
                yield name, first, end


@dataclass(frozen=True, slots=True)
class Plan:
    count: int = 10_000
    warmup: int = 200
    interval: float = 0.01
    seed: int = 6


async def _device(family: str, workdir: Path, *, raw: bool) -> Any:
    device: Any
    if family == "dice":
        device = dev.UsbFamilyDevice(socket_path("dice.sock"))
    elif raw:
        device = dev.RawPty()
    else:
        device = dev.PtyFamilyDevice(family, host_bytes_at_sends=HOST_BYTES_AT_SENDS)
    await device.start()
    return device


@dataclass
class TabledPipeline:
    """A fresh daemon (own journal, own table) with the family's timed simulator."""

    family: str
    workdir: Path
    name: str
    device: Any = None
    daemon: DaemonProcess | None = None
    arrived: dict[int, float] = field(default_factory=dict)
    duplicates: int = 0

    @property
    def device_id(self) -> str:
        return dev.DEVICE_ID[self.family]

    @property
    def topics(self) -> list[str]:
        base = topic_base(self.name)
        return [f"{base}/event", f"{base}/device/+/status"]

    async def start(self, broker: Mosquitto, collector: Collector) -> None:
        self.device = await _device(self.family, self.workdir, raw=False)
        config = write_config(
            self.workdir / f"{self.name}.toml", table=self.name, game=dev.GAME[self.family],
            journal=self.workdir / f"{self.name}.sqlite", broker_url=broker.url,
            devices=[{"id": self.device_id, "family": self.family, "url": self.device.url}])
        self.daemon = DaemonProcess(config, self.workdir / f"{self.name}.log")
        self.daemon.start()
        await asyncio.to_thread(self.daemon.wait_ready)
        if not await asyncio.to_thread(collector.wait_until,
                                       device_connected(self.name, self.device_id), 30.0):
            raise RuntimeError(f"{self.name}: the daemon did not connect its device")

    def take(self, arrival: Arrival) -> bool:
        """Note ``arrival`` if it is one of this pipeline's events."""
        if not arrival.topic.startswith(topic_base(self.name) + "/event"):
            return False
        body = json_of(arrival)
        if body.get("device") == self.device_id and "seq" in body:
            if body["seq"] in self.arrived:
                self.duplicates += 1
            else:
                self.arrived[body["seq"]] = arrival.at
        return True

    async def stop(self) -> None:
        if self.daemon is not None:
            await asyncio.to_thread(self.daemon.stop)
        if self.device is not None:
            await self.device.close()


@dataclass
class BaselinePipeline:
    """``bench.baseline`` (a) or, ``durable``, (b), with a device that expects no host."""

    family: str
    workdir: Path
    durable: bool
    device: Any = None
    proc: subprocess.Popen[str] | None = None
    arrived: dict[int, float] = field(default_factory=dict)
    duplicates: int = 0

    @property
    def topic(self) -> str:
        return f"bench/baseline/{self.family}/{'b' if self.durable else 'a'}"

    @property
    def topics(self) -> list[str]:
        return [self.topic]

    async def start(self, broker: Mosquitto, collector: Collector) -> None:
        self.device = await _device(self.family, self.workdir / ("b" if self.durable else "a"),
                                    raw=True)
        source = (f"usb:{self.device.socket_path}" if self.family == "dice"
                  else f"pty:{self.device.url}")
        args = [sys.executable, "-m", "bench.baseline", "--source", source,
                "--port", str(broker.port), "--topic", self.topic]
        if self.durable:
            args += ["--journal", str(self.workdir / f"baseline-{self.family}.sqlite")]
        self.proc = await asyncio.to_thread(_spawn, args,
                                            self.workdir / f"baseline-{self.family}.log")
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"baseline {self.topic} did not start: {line!r}")

    def take(self, arrival: Arrival) -> bool:
        if arrival.topic != self.topic:
            return False
        index = json_of(arrival)["n"]
        if index in self.arrived:
            self.duplicates += 1
        else:
            self.arrived[index] = arrival.at
        return True

    async def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            await asyncio.to_thread(self.proc.wait)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        if self.device is not None:
            await self.device.close()


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen[str]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                                start_new_session=True)


Pipeline = TabledPipeline | BaselinePipeline


async def drive(pipeline: Pipeline, collector: Collector, messages: list[Any], first: int,
                interval: float, within: float) -> None:
    """Play ``messages`` as script indices ``first``… and wait until each has arrived."""
    await pipeline.device.play(messages, interval, first=first)
    wanted = set(range(first, first + len(messages)))

    def done(_: list[Arrival]) -> bool:
        for arrival in collector.take():
            pipeline.take(arrival)
        return wanted.issubset(pipeline.arrived)
    if not await asyncio.to_thread(collector.wait_until, done, within):
        missing = len(wanted - pipeline.arrived.keys())
        raise RuntimeError(f"{missing} of {len(wanted)} messages did not arrive in {within:g} s")


def _samples(pipeline: Pipeline, warmup: int, count: int) -> tuple[list[float], int]:
    """One process's latencies of its measured messages, and how many of them were lost."""
    written, arrived = pipeline.device.written, pipeline.arrived
    samples = [arrived[k] - written[k] for k in range(warmup, warmup + count)
               if k in arrived and k in written]
    return samples, count - len(samples)


def _pipelines(family: str, workdir: Path, cycle: int) -> dict[str, Pipeline]:
    here = workdir / f"cycle-{cycle}"
    for sub in ("a", "b"):
        (here / sub).mkdir(parents=True, exist_ok=True)
    return {
        "tabled": TabledPipeline(family, here, f"lat-{family}-{cycle}"),
        "baseline_a": BaselinePipeline(family, here, durable=False),
        "baseline_b": BaselinePipeline(family, here, durable=True),
    }


async def run_family(family: str, broker: Mosquitto, workdir: Path, plan: Plan,
                     say: Any = print) -> dict[str, Any]:
    """The three pipelines of one family, driven in turn, block by block; new processes for
    each cycle of :data:`ORDERS`, their latencies pooled."""
    plays = cycles(plan.count)
    count, block = rounds(plan.count)
    say(f"[latency] {family}: {plan.count} events per pipeline at {1 / plan.interval:.0f}/s, "
        f"in {count} rounds of {block}: {len(plays)} cycle(s) of {len(ORDERS)} rounds, new "
        "processes for each")
    block_timeout = block * plan.interval * 2 + 30.0
    samples: dict[str, list[float]] = {name: [] for name in PIPELINES}
    each: dict[str, list[dict[str, float]]] = {name: [] for name in PIPELINES}
    lost = dict.fromkeys(PIPELINES, 0)
    duplicates = dict.fromkeys(PIPELINES, 0)
    for cycle, measured in enumerate(plays):
        messages = dev.script(family, plan.warmup + measured, plan.seed + cycle)
        pipelines = _pipelines(family, workdir, cycle)
        topics = [t for p in pipelines.values() for t in p.topics]
        try:
            with Collector(broker.port, topics) as collector:
                for pipeline in pipelines.values():
                    await pipeline.start(broker, collector)
                collector.take()  # statuses and births: nothing to time
                # warmed up in the cycle's last order: its first round follows what a round
                # follows in the steady state
                for name in ORDERS[-1]:
                    await drive(pipelines[name], collector, messages[:plan.warmup], 0,
                                plan.interval, block_timeout)
                for name, first, end in schedule(measured):
                    await drive(pipelines[name], collector,
                                messages[plan.warmup + first:plan.warmup + end],
                                plan.warmup + first, plan.interval, block_timeout)
        finally:
            for pipeline in pipelines.values():
                await pipeline.stop()
        for name, pipeline in pipelines.items():
            mine, missing = _samples(pipeline, plan.warmup, measured)
            samples[name] += mine
            if mine:
                one = Latency.of(mine)
                each[name].append({"p50": one.p50, "p99": one.p99})
            lost[name] += missing
            duplicates[name] += pipeline.duplicates
    results: dict[str, Any] = {
        name: {**Latency.of(samples[name]).to_dict(), "lost": lost[name],
               "duplicates": duplicates[name], "cycles": each[name]}
        for name in PIPELINES}
    tabled, a, b = (results[p] for p in PIPELINES)
    results["ratios"] = {
        "p50_vs_b": tabled["p50"] / b["p50"], "p99_vs_b": tabled["p99"] / b["p99"],
        "p50_vs_a": tabled["p50"] / a["p50"], "p99_vs_a": tabled["p99"] / a["p99"],
    }
    return results


async def run(broker: Mosquitto, workdir: Path, plan: Plan, say: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {"plan": {"count": plan.count, "warmup": plan.warmup,
                                    "rate": 1 / plan.interval,
                                    "block": rounds(plan.count)[1],
                                    "cycles": len(cycles(plan.count)),
                                    "orders": [list(order) for order in ORDERS],
                                    "host_bytes_at_sends": HOST_BYTES_AT_SENDS}}
    for family in dev.FAMILIES:
        family_dir = workdir / f"latency-{family}"
        family_dir.mkdir(parents=True, exist_ok=True)
        out[family] = await run_family(family, broker, family_dir, plan, say)
    return out


@dataclass
class Pass:
    """One script through one fresh daemon: wire and arrival times, and the daemon's CPU."""

    written: dict[int, float]
    arrived: dict[int, float]
    cpu: float
    duplicates: int


async def tabled_pass(family: str, broker: Mosquitto, workdir: Path, messages: list[Any],
                      interval: float, *, name: str, within: float) -> Pass:
    """Play ``messages`` through a fresh daemon with the family's simulator."""
    pipeline = TabledPipeline(family, workdir, name)
    try:
        with Collector(broker.port, pipeline.topics) as collector:
            await pipeline.start(broker, collector)
            collector.take()
            assert pipeline.daemon is not None
            cpu0 = usage(pipeline.daemon.pid).cpu
            await drive(pipeline, collector, messages, 0, interval, within)
            cpu = usage(pipeline.daemon.pid).cpu - cpu0
    finally:
        await pipeline.stop()
    return Pass(pipeline.device.written, pipeline.arrived, cpu, pipeline.duplicates)
