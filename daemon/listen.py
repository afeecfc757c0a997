"""``tabled listen``: the engineer's first tool at a new table.

Opens one device with its family's driver and prints every normalized event it sends as a JSON
line on standard output; link problems and counters go to standard error. No rules, no journal,
no broker: just what the device says, exactly as the daemon would receive it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from tabled.contract.events import Event, encode_event
from tabled.drivers.errors import DeviceError
from tabled.drivers.registry import open_device


async def listen(family: str, url: str, *, device_id: str = "listen", count: int | None = None,
                 duration: float | None = None) -> int:
    """Print events until ``count`` events, ``duration`` seconds, the device goes, or Ctrl-C."""
    done = asyncio.Event()
    seen = 0

    def emit(event: Event) -> None:
        nonlocal seen
        sys.stdout.write(encode_event(event) + "\n")
        sys.stdout.flush()
        seen += 1
        if count is not None and seen >= count:
            done.set()

    try:
        device = await open_device(family, url, device_id=device_id, sink=emit)
    except DeviceError as exc:
        print(f"tabled listen: {exc}", file=sys.stderr)
        return 1
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    closed = asyncio.ensure_future(device.wait_closed())
    waiter = asyncio.ensure_future(done.wait())
    try:
        await asyncio.wait({closed, waiter}, timeout=duration,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        lost = closed.done()
        device.close("listen finished")
        waiter.cancel()
        await asyncio.wait([waiter])  # its end; a cancellation of this task goes on
        await device.wait_closed()
    counters = {k: v for k, v in device.link_counters().items() if v}
    print(json.dumps({"listen": "done", "events": seen, "device_lost": lost,
                      "close_reason": device.close_reason, "info": device.info,
                      "counters": counters}), file=sys.stderr)
    return 1 if lost else 0
