"""Bounded exponential backoff that resets on success (the pymodbus / dsmr pattern)."""

from __future__ import annotations


class Backoff:
    """Delays ``low, 2·low, 4·low, …`` capped at ``high``; :meth:`reset` after a success."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self.delay = low

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.high, self.delay * 2)
        return delay

    def reset(self) -> None:
        self.delay = self.low
