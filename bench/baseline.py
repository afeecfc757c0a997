"""The baselines of the latency benchmark: the least a program can do to move a device's frame to
an MQTT subscriber, run as its own process like the daemon.

``python -m bench.baseline --source pty:PATH|usb:SOCKET --port N --topic T [--journal FILE]``

- (a) without ``--journal``: read the device (a blocking read of the pty, cut into frames; or an
  interrupt read of the sensor through pyusb), and publish one message per frame with paho
  (QoS 1, the network on paho's own thread);
- (b) with ``--journal``: the same, plus one SQLite insert per frame in WAL mode with
  ``synchronous=FULL``, committed (so fsync'd) before the publish: the floor of any durable
  pipeline.

It acknowledges nothing to the device, applies no rule and keeps no state beyond a counter: each
message is ``{"n": k}`` for the k-th frame, the index the device side timed. It prints ``ready``
once it is connected and reading, and runs until it is terminated.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from tabled.drivers.dice.protocol import (
    INTERFACE,
    PRODUCT_ID,
    REPORT_ENDPOINT,
    REPORT_SIZE,
    VENDOR_ID,
    StatusReport,
    decode_report,
)
from tabled.drivers.framing import Frame, FrameDecoder
from tabled.drivers.link import FIRST_FAMILY_KIND


def pty_frames(path: str) -> Iterator[bytes]:
    """Open the pty at ``path``; every data frame's payload read from it, in order."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    decoder = FrameDecoder()

    def frames() -> Iterator[bytes]:
        while data := os.read(fd, 4096):
            for frame in decoder.feed(data):
                if isinstance(frame, Frame) and frame.kind >= FIRST_FAMILY_KIND:
                    yield frame.payload
    return frames()


def usb_reports(socket_path: str) -> Iterator[bytes]:
    """Claim the simulated sensor; every event report read from its interrupt endpoint with
    pyusb (the sensor's idle STATUS reports skipped)."""
    import usb.core
    import usb.util

    from tabled.simulators.usb_backend import SimBackend

    device: Any = usb.core.find(idVendor=VENDOR_ID, idProduct=PRODUCT_ID,
                                backend=SimBackend(socket_path))
    if device is None:
        raise SystemExit(f"no sensor behind {socket_path}")
    device.set_configuration()
    usb.util.claim_interface(device, INTERFACE)

    def reports() -> Iterator[bytes]:
        while True:
            try:
                data = bytes(device.read(REPORT_ENDPOINT, REPORT_SIZE, timeout=1000))
            except usb.core.USBTimeoutError:
                continue
            if not isinstance(decode_report(data), StatusReport):
                yield data
    return reports()


def journal(path: str) -> Callable[[bytes], None]:
    """One fsync'd SQLite WAL insert per frame."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, at REAL, body BLOB)")

    def insert(frame: bytes) -> None:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO frames (at, body) VALUES (?, ?)", (time.time(), frame))
        db.execute("COMMIT")
    return insert


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.baseline", description=__doc__)
    parser.add_argument("--source", required=True, help="pty:PATH or usb:SOCKET")
    parser.add_argument("--port", type=int, required=True, help="the broker's port (loopback)")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--journal", help="SQLite file: baseline (b)")
    args = parser.parse_args(argv)

    client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
    client.max_inflight_messages_set(64)  # as the daemon's default max_inflight
    client.connect("127.0.0.1", args.port, keepalive=30)
    client.loop_start()
    kind, _, where = args.source.partition(":")
    frames = pty_frames(where) if kind == "pty" else usb_reports(where)
    durable = journal(args.journal) if args.journal else None
    print("ready", flush=True)
    for n, frame in enumerate(frames):
        if durable is not None:
            durable(frame)
        client.publish(args.topic, f'{{"n":{n}}}', qos=1)
    client.loop_stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
