"""The one exception root of the simulators."""

from __future__ import annotations


class SimulatorError(Exception):
    """A bad script, fault spec, backend call or plugin: everything the simulators raise."""
