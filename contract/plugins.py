"""The installed plugins' entry points, read once per process.

Owns the one reading of the installed distributions' entry points, which the device families
(``tabled.drivers``), the games (``tabled.games``) and the simulators (``tabled.simulators``)
share: each reading opens every installed distribution's metadata (a few milliseconds), and a
command line used to read them once per registry and per question. Never loads a plugin.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoints, entry_points
from typing import Any


@functools.cache
def _installed() -> Any:
    # every group's entry points (Python 3.11: SelectableGroups; 3.12: EntryPoints), both
    # with select(group=...)
    return entry_points()


def plugins(group: str) -> EntryPoints:
    """The installed entry points of ``group`` (read with the others, once)."""
    found: EntryPoints = _installed().select(group=group)
    return found


def forget() -> None:
    """Read the installed distributions again at the next question (a test that installs a
    plugin, a process that installed one meanwhile)."""
    _installed.cache_clear()
