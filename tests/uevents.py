"""Real udev events for tests, where no udevd runs: libudev-format uevents sent over netlink,
received by pyudev through its real filter (docs/udev.md, "How the real monitor is tested")."""

from __future__ import annotations

import os
import socket
import struct
import uuid
from pathlib import Path

from tabled.drivers.discovery import BY_ID_DIR, UdevSource
from tabled.drivers.errors import DeviceError

NETLINK_KOBJECT_UEVENT = 15
UDEV_MONITOR_GROUP = 2  # libudev's multicast group (the kernel's own events are group 1)
LIBUDEV_MAGIC = 0xFEEDCAFE
LIBUDEV_HEADER = 40


def murmur2(data: bytes, seed: int = 0) -> int:
    """MurmurHash2 as systemd's libudev hashes a subsystem for the kernel's socket filter."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (seed ^ len(data)) & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    for i in reversed(range(len(tail))):
        h ^= tail[i] << (8 * i)
    if tail:
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    return h ^ (h >> 15)


def uevent(properties: dict[str, str]) -> bytes:
    """A libudev-format netlink message: what udevd multicasts after processing an event."""
    body = b"".join(f"{key}={value}".encode() + b"\0" for key, value in properties.items())
    header = (b"libudev\0" + struct.pack("!I", LIBUDEV_MAGIC)
              + struct.pack("=III", LIBUDEV_HEADER, LIBUDEV_HEADER, len(body))
              + struct.pack("!IIII", murmur2(properties["SUBSYSTEM"].encode()), 0, 0, 0))
    return header + body


class UeventInjector:
    """Sends fake devices' uevents as udevd would. Each carries ID_MM_DEVICE_IGNORE and no
    systemd tag, so that ModemManager and systemd on a developer's machine leave them alone."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_KOBJECT_UEVENT)
        self.sock.bind((0, 0))
        self.seqnum = 0
        self.tag = uuid.uuid4().hex[:8].upper()

    def send(self, action: str, name: str, subsystem: str = "tty", **extra: str) -> None:
        self.seqnum += 1
        self.sock.sendto(uevent({
            "ACTION": action, "DEVPATH": f"/devices/virtual/tty/{name}", "SUBSYSTEM": subsystem,
            "SEQNUM": str(self.seqnum), "DEVNAME": f"/dev/{name}", "ID_MM_DEVICE_IGNORE": "1",
            **extra,
        }), (0, UDEV_MONITOR_GROUP))

    def shoe(self, action: str) -> None:
        self.send(action, f"ttyTABLED{self.tag}", ID_VENDOR_ID="0403", ID_MODEL_ID="6001",
                  ID_SERIAL_SHORT=self.tag,
                  DEVLINKS=f"{BY_ID_DIR}usb-FTDI_tabled_{self.tag}-if00-port0 "
                           f"/dev/tabled/shoe-{self.tag}")

    def close(self) -> None:
        self.sock.close()


def monitor_unavailable() -> str | None:
    """Why pyudev cannot open a netlink monitor here, or None."""
    try:
        UdevSource(["tty"]).open()
    except DeviceError as exc:
        return f"pyudev cannot open a netlink monitor: {exc}"
    return None


def injection_unavailable() -> str | None:
    """Why a real uevent cannot be injected here, or None."""
    if os.geteuid() != 0:
        return "sending to the udev netlink group needs root (CAP_NET_ADMIN)"
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    devtmpfs = any(line.split()[1:3] == ["/dev", "devtmpfs"] for line in mounts if line)
    if not (Path("/run/udev/control").exists() or devtmpfs):
        return "libudev disables its monitor where no udev runs and /dev is not a devtmpfs"
    return monitor_unavailable()


