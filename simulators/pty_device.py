"""The device side of a serial family, served on a pseudo-terminal.

Owns the pty pair, the device end of the same :class:`~tabled.drivers.link.Link` the drivers run,
byte-level fault injection on the way out, and unplug/replug. A family simulator subclasses
:class:`PtyDevice`, sends its messages with :meth:`send` and answers host requests in
:meth:`message_received`. It never decides what a driver should see: it only plays the device.

The path a driver opens is :attr:`PtyDevice.path`: a stable symbolic link (like a
``/dev/serial/by-id`` name) when ``link_path`` is given, which follows the device across an
unplug and replug, else the pty's own ``/dev/pts/N``.

``chunked`` writes every frame in pieces of 1 to :data:`CHUNK_MAX` bytes with a pause between
them, so that the host reads frames split at random points (the conformance kit's "any
chunking", which a whole-frame write over a pty in the same process would never show).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tty
from collections.abc import Callable

from tabled.drivers.link import Identity, Link, LinkDown, LinkEvent, LinkUp, MessageReceived
from tabled.drivers.link_runner import LinkRunner
from tabled.simulators.faults import ByteFault, Damage, FaultPlan, split_frames

#: The device keeps its queued messages while no host listens; this is how long it waits
#: for a host before its link counts a silence (it then simply waits for the next RESET).
DEVICE_T_SILENCE = 3600.0
#: ``chunked``: the longest piece of a frame written at once, and the pause after each piece
#: (long enough for the host's event loop to read the piece before the next one arrives).
CHUNK_MAX = 7
CHUNK_GAP = 0.001


class PtyDevice:
    """One simulated serial device on a pseudo-terminal."""

    def __init__(
        self,
        *,
        link_path: str | None = None,
        faults: list[ByteFault] | None = None,
        seed: int = 0,
        identity: Identity | None = None,
        chunked: bool = False,
    ) -> None:
        self.link_path = link_path
        #: What the device's RESET_ACK says it is: its family's identity message.
        self.identity = identity
        #: Random at each "power-on" of the simulated device (RESET_ACK carries it).
        self.boot_id = random.SystemRandom().getrandbits(32)
        self.plan = FaultPlan(list(faults or []), random.Random(seed))
        #: Where ``chunked`` cuts the frames (its own generator: the fault plan's stays as it was).
        self._chunks = random.Random(f"chunks-{seed}") if chunked else None
        self.host_connected = asyncio.Event()
        self.unplugged = asyncio.Event()
        self.messages_sent = 0
        self.disconnects = 0
        self._master: int | None = None
        self._slave: int | None = None
        self._slave_path = ""
        self._runner: LinkRunner | None = None
        self._out: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._writer_task: asyncio.Task[None] | None = None
        self._stopped = False
        self._drained = asyncio.Event()
        self._drained.set()

    # -- for family simulators ------------------------------------------------------------------

    def message_received(self, kind: int, payload: bytes) -> None:
        """A request from the host (firmware version, status...). Families override."""

    def link_established(self) -> None:
        """A host opened the link (RESET handshake). Families may send a status here."""

    def send(self, kind: int, payload: bytes = b"") -> None:
        """Send one family message to the host, reliably: kept until acknowledged, across
        host reconnects and unplugs."""
        assert self._runner is not None, "start() the device first"
        self.messages_sent += 1
        self._drained.clear()
        self._runner.send(kind, payload)

    @property
    def backlog(self) -> int:
        return 0 if self._runner is None else self._runner.link.backlog

    async def drain(self) -> None:
        """Wait until the host has acknowledged everything sent so far (callers bound it with
        ``asyncio.timeout``)."""
        await self._drained.wait()

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def path(self) -> str:
        return self.link_path or self._slave_path

    async def start(self) -> str:
        """Plug the device in; return the path a driver opens."""
        self._restart_link()
        self._plug()
        self._writer_task = asyncio.create_task(self._writer(), name="pty-device-writer")
        return self.path

    async def stop(self) -> None:
        self._stopped = True
        if self._runner is not None:
            self._runner.stop()
        if self._writer_task is not None:
            self._out.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer_task
        self._unplug()
        self._remove_link()

    async def replug(self, down_for: float) -> None:
        """Unplug (the host sees its port close), wait, and plug in again on a new pty."""
        self.unplug()
        await asyncio.sleep(down_for)
        self.plug()

    def unplug(self) -> None:
        """Pull the cable: the host sees its port close. What the device sends meanwhile waits
        in it for the next host."""
        self.disconnects += 1
        self._unplug()
        self.unplugged.set()

    def plug(self) -> None:
        """Plug in again after :meth:`unplug`, on a new pty (``link_path`` follows it)."""
        if not self._stopped and self._master is None:
            self._restart_link()
            self._plug()
        self.unplugged.clear()

    # -- internals ------------------------------------------------------------------------------

    def _new_runner(self, backlog: list[tuple[int, bytes, int]], next_number: int) -> LinkRunner:
        loop_time = asyncio.get_running_loop().time
        link = Link(initiator=False, now=loop_time(), t_silence=DEVICE_T_SILENCE,
                    boot_id=self.boot_id, identity=self.identity)
        link.carry_over(backlog, next_number)  # queued until a host resets the link
        runner = LinkRunner(link, self._enqueue, self._link_event, clock=loop_time)
        runner.start()
        return runner

    def _restart_link(self) -> None:
        """A new link after a host went away: what the old one had not had acknowledged is
        carried over with its message numbers, so a reconnecting host gets every message
        once."""
        if self._runner is None:
            self._runner = self._new_runner([], 0)
            return
        old = self._runner.link
        self._runner.stop()
        self._runner = self._new_runner(old.take_backlog(), old.next_number)

    def _link_event(self, item: LinkEvent) -> None:
        if isinstance(item, MessageReceived):
            self.message_received(item.kind, item.payload)
        elif isinstance(item, LinkUp):
            self.host_connected.set()
            self.link_established()
        elif isinstance(item, LinkDown):
            self.host_connected.clear()
            asyncio.get_running_loop().call_soon(self._restart_link)

    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(master)
        tty.setraw(slave)
        os.set_blocking(master, False)
        self._master, self._slave = master, slave
        self._slave_path = os.ttyname(slave)
        if self.link_path:
            tmp = f"{self.link_path}.tmp{os.getpid()}"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(self._slave_path, tmp)
            os.replace(tmp, self.link_path)
        asyncio.get_running_loop().add_reader(master, self._readable)

    def _remove_link(self) -> None:
        """Remove ``link_path`` if it is still ours: like udev removing a by-id link, so that
        nobody opens the old /dev/pts/N by our name (the kernel gives that number to the next
        pty: another simulator's). A link another device has made since is left alone."""
        if not self.link_path or not self._slave_path:
            return
        with contextlib.suppress(OSError):
            if os.readlink(self.link_path) == self._slave_path:
                os.unlink(self.link_path)

    def _unplug(self) -> None:
        self.host_connected.clear()
        self._remove_link()
        if self._master is not None:
            asyncio.get_running_loop().remove_reader(self._master)
            os.close(self._master)
            self._master = None
        if self._slave is not None:
            os.close(self._slave)
            self._slave = None

    def _readable(self) -> None:
        if self._master is None:
            return
        try:
            data = os.read(self._master, 4096)
        except BlockingIOError:
            return
        except OSError:
            return  # EIO: no process has the other end open right now
        if data and self._runner is not None:
            self._runner.data_received(data)
            if not self.backlog:
                self._drained.set()

    def _enqueue(self, data: bytes) -> None:
        self._out.put_nowait(data)

    async def _writer(self) -> None:
        while True:
            data = await self._out.get()
            if data is None:
                return
            for frame in split_frames(data):
                damage = self.plan.apply(frame)
                await self._write_all(damage)
                if damage.stall:
                    await asyncio.sleep(damage.stall)
                if damage.disconnect:
                    await self.replug(damage.disconnect)

    async def _write_all(self, damage: Damage) -> None:
        data = damage.data
        chunks = self._chunks
        while data:
            if self._master is None:
                return  # unplugged: bytes on the wire are lost, the link will retransmit
            piece = data if chunks is None else data[:chunks.randint(1, CHUNK_MAX)]
            try:
                n = os.write(self._master, piece)
            except BlockingIOError:
                await asyncio.sleep(0.002)
                continue
            except OSError:
                return
            data = data[n:]
            if chunks is not None:
                await asyncio.sleep(CHUNK_GAP)


DeviceFactory = Callable[[], PtyDevice]
