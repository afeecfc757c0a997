"""Simulators as plugins: each device family's simulator, found through entry points.

A family's simulator registers a :class:`SimulatorPlugin` in the ``tabled.simulators`` entry-point
group under its family's name (pyproject.toml; a vendor's family ships its own). ``tabled-sim
FAMILY`` and the conformance kit (``tabled.tools.conformance``) find them here.

What the kit needs of a simulator is its :class:`DeviceSide` (``SimulatorPlugin.conformance``):
a way to start the simulated device in the kit's own process with a :class:`DeviceScript` (a
seed, a length, a pace, the family faults and wire faults to inject, chunked writes), which
returns a :class:`SimulatedDevice` (where to open it, what a correct driver must make of what it
plays, whether it is all acknowledged, unplug and plug), and the family faults it can inject
with the fault code each must arrive as. docs/drivers.md says how to write one.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from tabled.contract.events import Event
from tabled.contract.plugins import plugins
from tabled.simulators.errors import SimulatorError
from tabled.simulators.faults import ByteFault

#: The entry-point group of simulators.
ENTRY_POINTS = "tabled.simulators"


@dataclass(frozen=True, slots=True)
class DeviceScript:
    """What the conformance kit asks a simulated device to play; the family writes the script.

    ``seed`` makes it (the same seed, the same messages). ``length``: about how many events a
    driver should make of it (give or take a hand or a round; at least a dozen device messages,
    so that the wire faults below find their frames). ``pace``: seconds between two messages
    (0: as fast as the link takes them). ``faults``: family faults to inject, by the names of
    :attr:`DeviceSide.faults`, each once, where the family sees fit (early enough for the
    script to reach it). ``wire_faults``: damage to the device's data messages on the way out
    (kinds of :attr:`DeviceSide.wire_faults`; ``at`` counts the device's data messages from 1,
    ``arg`` as :mod:`tabled.simulators.faults` reads it). ``chunked``: write every message in
    pieces, so that the host reads it split at random points."""

    seed: int = 0
    length: int = 24
    pace: float = 0.0
    faults: tuple[str, ...] = ()
    wire_faults: tuple[ByteFault, ...] = ()
    chunked: bool = False


class SimulatedDevice(Protocol):
    """A simulated device the kit has started: plugged in, and playing its script from the
    moment a host first connects to it (a device that talked to nobody would show a driver
    none of its wire faults)."""

    @property
    def url(self) -> str:
        """What the family's ``open`` takes to reach the device (the same after a replug)."""
        ...

    @property
    def serial(self) -> str:
        """The serial number its identity gives."""
        ...

    @property
    def expected(self) -> Sequence[Event]:
        """The events a correct driver emits for the whole script, in order (without the
        driver's stamps: device, seq, ts, device_boot, device_msg)."""
        ...

    @property
    def pending(self) -> int:
        """Messages it has sent (or queued) that no host has acknowledged yet."""
        ...

    @property
    def done(self) -> bool:
        """Whether it has played the whole script and a host acknowledged every message."""
        ...

    @property
    def injected(self) -> Sequence[str]:
        """The wire faults applied so far, as ``KIND@N``."""
        ...

    async def unplug(self) -> None:
        """Pull the cable: the host loses the device; the script goes on into its memory."""
        ...

    async def plug(self) -> None:
        """Plug it in again, at the same :attr:`url`."""
        ...

    async def stop(self) -> None:
        """Stop playing and unplug for good; release everything it opened."""
        ...


#: Start a simulated device in the running event loop; it may keep files in the folder given
#: (a pty's link, a socket: the kit removes the folder afterwards).
StartDevice = Callable[[DeviceScript, Path], Awaitable[SimulatedDevice]]


@dataclass(frozen=True, slots=True)
class DeviceSide:
    """What the conformance kit needs of a family's simulator (docs/drivers.md).

    ``faults``: every family fault the simulator can inject (the names a :class:`DeviceScript`
    gives), each with the code of :mod:`tabled.contract.faults` that a ``fault`` event must
    carry for it. ``wire_faults``: the kinds of wire damage it can inject: ``corrupt`` and
    ``truncate`` at least, and any of ``garbage``, ``drop``. ``no_chunking``: None if it can
    write its messages in pieces (``DeviceScript.chunked``); else why its transport has no
    byte stream to split, which the kit prints when it skips that check."""

    start: StartDevice
    faults: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    wire_faults: frozenset[str] = frozenset()
    no_chunking: str | None = None


@dataclass(frozen=True, slots=True)
class SimulatorPlugin:
    """One family's simulator: ``summary`` and ``description`` are its ``tabled-sim --help``
    (for users: what it simulates and how it prints where to connect); ``add_arguments`` adds
    its options; ``serve`` plays the device until its script ends or it is cancelled (its
    ``finally`` unplugs the device and removes what it printed). ``conformance`` is what the
    conformance kit drives (None: the family cannot be checked, and fails the kit)."""

    family: str
    summary: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    serve: Callable[[argparse.Namespace], Awaitable[int]]
    conformance: DeviceSide | None = None


@functools.cache
def simulators() -> Mapping[str, SimulatorPlugin]:
    """Every installed simulator by family name, loaded once."""
    found: dict[str, SimulatorPlugin] = {}
    for entry in plugins(ENTRY_POINTS):
        plugin = entry.load()
        if not isinstance(plugin, SimulatorPlugin) or plugin.family != entry.name:
            raise SimulatorError(f"simulator {entry.name!r} ({entry.value}) is not a "
                                 f"SimulatorPlugin for family {entry.name!r}")
        found[entry.name] = plugin
    return MappingProxyType(dict(sorted(found.items())))
