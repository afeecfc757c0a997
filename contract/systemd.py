"""systemd integration without a library: sd_notify datagrams and the watchdog.

Owns the notify socket protocol (sd_notify(3)): ``READY=1``, ``STATUS=...``, ``STOPPING=1`` and
``WATCHDOG=1``. The watchdog is pinged from a task on the event loop itself, so a loop that hangs
stops the pings and systemd restarts the service. Outside systemd (no ``NOTIFY_SOCKET``) every
call is a no-op.
"""

from __future__ import annotations

import asyncio
import os
import socket

import structlog

log = structlog.get_logger("tabled.systemd")


class Notifier:
    """Send sd_notify messages to ``NOTIFY_SOCKET`` (a path, or ``@name`` in the abstract
    namespace)."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self._address: str | None = None
        if address:
            self._address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_interval: float | None = None
        usec = env.get("WATCHDOG_USEC")
        pid = env.get("WATCHDOG_PID")
        if usec and usec.isdigit() and (pid is None or pid == str(os.getpid())):
            # ping at half the timeout, as sd_watchdog_enabled(3) advises
            self.watchdog_interval = int(usec) / 1_000_000 / 2
        self._sock: socket.socket | None = None
        if self._address is not None:
            # Non-blocking: a notify socket nobody reads (its queue full) must cost a lost
            # STATUS line, never an event loop blocked in sendto().
            self._sock = socket.socket(
                socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *lines: str) -> bool:
        if self._sock is None or self._address is None:
            return False
        try:
            self._sock.sendto("\n".join(lines).encode(), self._address)
        except OSError as exc:
            log.warning("sd_notify_failed", error=str(exc))
            return False
        return True

    def ready(self, status: str) -> None:
        self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        self.notify(f"STATUS={status}")

    def stopping(self) -> None:
        self.notify("STOPPING=1")

    async def watchdog(self) -> None:
        """Ping the watchdog for as long as the event loop runs (cancel to stop)."""
        if self.watchdog_interval is None:
            return
        while True:
            self.notify("WATCHDOG=1")
            await asyncio.sleep(self.watchdog_interval)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
