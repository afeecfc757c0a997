"""Footprint: one daemon with every device its game can use attached, how much memory and CPU it
takes idle and at a real table's pace, and how soon after start it says READY.

The table is a baccarat table with a reading shoe and a shuffler-dealer (baccarat mode, idle: it
prepares the next shoe), each on its simulator, so the daemon runs two links, their heartbeats and
its broker connection (a table's config names only devices its game uses). READY is the time from
spawning ``tabled run`` to its ``READY=1`` on the notify socket (systemd's own measure), over
several starts; CPU is the daemon process's user + system time over a window (100 % = one core).
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any, Final

from bench import devices as dev
from bench.measure import CpuMeter, usage
from bench.rig import (
    Collector,
    DaemonProcess,
    device_connected,
    topic_base,
    write_config,
)
from tabled.daemon.broker import Mosquitto

#: A real baccarat table's pace: one card every 6 s, about 110 hands an hour (a hand takes
#: 4-6 cards and burns come with each shoe).
TABLE_CARD_EVERY: Final = 6.0
TABLE = "foot"


def peak_rss(pid: int) -> int:
    """The process's peak resident set size so far (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


async def run(broker: Mosquitto, workdir: Path, *, starts: int, idle_s: float, pace_s: float,
              card_every: float = TABLE_CARD_EVERY, say: Any = print) -> dict[str, Any]:
    shoe, shuffler = dev.PtyFamilyDevice("shoe"), dev.PtyFamilyDevice("shuffler")
    for device in (shoe, shuffler):
        await device.start()
    attached = [("shoe-1", "shoe", shoe.url), ("shuffler-1", "shuffler", shuffler.url)]
    config = write_config(workdir / f"{TABLE}.toml", table=TABLE, game="baccarat",
                          journal=workdir / f"{TABLE}.sqlite", broker_url=broker.url,
                          devices=[{"id": i, "family": f, "url": u} for i, f, u in attached])
    ready: list[float] = []
    result: dict[str, Any] = {}
    try:
        with Collector(broker.port, [f"{topic_base(TABLE)}/device/+/status"]) as collector:
            for start in range(starts):
                daemon = DaemonProcess(config, workdir / f"{TABLE}.log")
                daemon.start()
                try:
                    ready.append(await asyncio.to_thread(daemon.wait_ready))
                    for device_id, _, _ in attached:
                        if not await asyncio.to_thread(
                                collector.wait_until, device_connected(TABLE, device_id), 30.0):
                            raise RuntimeError(f"footprint: {device_id} did not connect")
                    if start == starts - 1:
                        result = await _measure(daemon.pid, shoe, idle_s, pace_s, card_every,
                                                say)
                finally:
                    await asyncio.to_thread(daemon.stop)
                    collector.take()
    finally:
        for device in (shoe, shuffler):
            await device.close()
    return {
        "devices": [f for _, f, _ in attached],
        "ready_s": {"median": statistics.median(ready), "max": max(ready), "starts": ready},
        **result,
    }


async def _measure(pid: int, shoe: dev.PtyFamilyDevice, idle_s: float, pace_s: float,
                   card_every: float, say: Any) -> dict[str, Any]:
    await asyncio.sleep(min(5.0, idle_s))  # start-up work (imports, first metrics) settles
    say(f"[footprint] idle for {idle_s:g} s")
    meter = CpuMeter([pid])
    meter.start()
    await asyncio.sleep(idle_s)
    idle_cpu, idle_rss = meter.percent(), usage(pid).rss
    cards = max(1, int(pace_s / card_every))
    say(f"[footprint] table pace: {cards} cards, one every {card_every:g} s")
    meter.start()
    await shoe.play(dev.shoe_script(cards, seed=3), card_every)
    await asyncio.sleep(card_every)  # the window ends a card's interval after the last one
    pace_cpu, pace_rss = meter.percent(), usage(pid).rss
    return {
        "idle": {"seconds": idle_s, "cpu_percent": idle_cpu, "rss_mb": idle_rss / 2**20},
        "table_pace": {"seconds": cards * card_every + card_every, "cards": cards,
                       "card_every_s": card_every, "cpu_percent": pace_cpu,
                       "rss_mb": pace_rss / 2**20},
        "peak_rss_mb": peak_rss(pid) / 2**20,
    }
