"""Simulators as plugins: each device family's simulator, found through entry points.

A family's simulator registers a :class:`SimulatorPlugin` in the ``tabled.simulators`` entry-point
group under its family's name (pyproject.toml; a vendor's family ships its own). ``tabled-sim
FAMILY`` and the conformance kit (``tabled.tools.conformance``) find them here.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import MappingProxyType

from tabled.simulators.errors import SimulatorError

#: The entry-point group of simulators.
ENTRY_POINTS = "tabled.simulators"


@dataclass(frozen=True, slots=True)
class SimulatorPlugin:
    """One family's simulator: ``summary`` and ``description`` are its ``tabled-sim --help``
    (for users: what it simulates and how it prints where to connect); ``add_arguments`` adds
    its options; ``serve`` plays the device until its script ends or it is cancelled (its
    ``finally`` unplugs the device and removes what it printed)."""

    family: str
    summary: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    serve: Callable[[argparse.Namespace], Awaitable[int]]


@functools.cache
def simulators() -> Mapping[str, SimulatorPlugin]:
    """Every installed simulator by family name, loaded once."""
    found: dict[str, SimulatorPlugin] = {}
    for entry in entry_points(group=ENTRY_POINTS):
        plugin = entry.load()
        if not isinstance(plugin, SimulatorPlugin) or plugin.family != entry.name:
            raise SimulatorError(f"simulator {entry.name!r} ({entry.value}) is not a "
                                 f"SimulatorPlugin for family {entry.name!r}")
        found[entry.name] = plugin
    return MappingProxyType(dict(sorted(found.items())))
