"""Throughput: the highest sustained event rate one daemon takes with its journal fsync'd and
nothing lost, per device family.

The device offers its whole script at once and sends as fast as its link lets it: the serial
link keeps at most a window of frames unacknowledged, and the daemon acknowledges frames only
after the journal commit that holds them (end-to-end durability), so the rate the device
reaches *is* the rate the daemon takes. The dice sensor reports as fast as the host reads and
acknowledges its endpoint. The rate is events from the first frame on the wire to the last
event at the subscriber; "nothing lost" is checked at the subscriber: every script index
arrived.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import devices as dev
from bench.latency import tabled_pass
from tabled.daemon.broker import Mosquitto


async def run_family(family: str, broker: Mosquitto, workdir: Path, count: int,
                     seed: int = 7) -> dict[str, Any]:
    messages = dev.script(family, count, seed)
    result = await tabled_pass(family, broker, workdir, messages, 0.0,
                               name=f"tput-{family}", within=count / 50 + 60)
    lost = count - len(result.arrived)
    first = min(result.written.values())
    last = max(result.arrived.values()) if result.arrived else first
    elapsed = last - first
    return {
        "events": count,
        "lost": lost,
        "duplicates": result.duplicates,
        "seconds": elapsed,
        "events_per_s": (len(result.arrived) / elapsed) if elapsed > 0 else 0.0,
        "daemon_cpu_percent": 100.0 * result.cpu / elapsed if elapsed > 0 else 0.0,
    }


async def run(broker: Mosquitto, workdir: Path, count: int, say: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for family in dev.FAMILIES:
        say(f"[throughput] {family}: {count} events, as fast as the daemon takes them")
        family_dir = workdir / f"throughput-{family}"
        family_dir.mkdir(parents=True, exist_ok=True)
        out[family] = await run_family(family, broker, family_dir, count)
    return out
