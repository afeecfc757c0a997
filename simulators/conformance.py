"""The conformance kit's device side of a serial family: a :class:`PtyDevice` playing a script.

Owns the glue between a serial family's simulated device (a :class:`PtyDevice` subclass, its
script and the events that script stands for) and what the kit drives
(:class:`~tabled.simulators.registry.SimulatedDevice`): start it on a pty with a stable link in
the kit's folder, play the script at a pace, say what is still unacknowledged, unplug and plug.
A family's simulator builds the device and the script; :class:`PtySide` does the rest. It never
decides what a driver should emit: the family gives ``expected``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from tabled.contract.events import Event
from tabled.simulators.pty_device import PtyDevice


class PtySide:
    """A serial family's simulated device as the conformance kit drives it.

    ``play`` plays the script on ``device`` (sending each message, ``pace`` apart); it starts
    once a host has first opened the link, and runs on while a host is away (the device keeps
    what it sends until a host acknowledges it). ``expected`` are the events the script stands for,
    ``serial`` the serial number of the device's identity.
    """

    def __init__(self, device: PtyDevice, play: Callable[[], Awaitable[object]],
                 expected: Sequence[Event], serial: str) -> None:
        if not device.link_path:
            raise ValueError("the kit's device needs a link_path: its url must survive a replug")
        self.device = device
        self._play = play
        self._expected = tuple(expected)
        self._serial = serial
        self._player: asyncio.Task[None] | None = None
        self._played = False

    async def start(self) -> PtySide:
        """Plug the device in and start playing."""
        await self.device.start()
        self._player = asyncio.create_task(self._run(), name="kit-device-script")
        return self

    async def _run(self) -> None:
        await self.device.host_connected.wait()
        await self._play()
        self._played = True

    @property
    def url(self) -> str:
        return self.device.path

    @property
    def serial(self) -> str:
        return self._serial

    @property
    def expected(self) -> Sequence[Event]:
        return self._expected

    @property
    def pending(self) -> int:
        return self.device.backlog

    @property
    def done(self) -> bool:
        if self._player is not None and self._player.done() and not self._player.cancelled():
            self._player.result()  # a script that failed says so
        return self._played and not self.device.backlog and not self.device.unplugged.is_set()

    @property
    def injected(self) -> Sequence[str]:
        return [f"{fault.kind}@{fault.at}" for fault in self.device.plan.applied]

    async def unplug(self) -> None:
        self.device.unplug()

    async def plug(self) -> None:
        self.device.plug()

    async def stop(self) -> None:
        if self._player is not None:
            self._player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._player
        await self.device.stop()

