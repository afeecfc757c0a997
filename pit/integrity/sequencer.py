"""Puts one table stream back in the table's order (``table_seq``) before the monitors see it.

A pit server receives a table's messages in order from the broker; with a shared subscription
it receives only its share and reads the rest from the shared record a moment later, out of
order. The card-order monitors need the order, so each stream goes through a
:class:`Sequencer`: an item with the next number is released at once with any held ones that
follow it; a later one is held until the gap fills, at most ``max_wait`` seconds or
``max_held`` items, after which the gap is given up on (a ``None`` in the released items: the
monitors break the card order there). A number already passed (a late copy) is dropped. Pure:
times are given.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Sequencer(Generic[T]):
    """One stream's items in ``table_seq`` order; ``None`` released marks a gap given up on."""

    def __init__(self, max_wait: float = 5.0, max_held: int = 1000) -> None:
        self.max_wait = max_wait
        self.max_held = max_held
        self.next: int | None = None
        self._held: dict[int, tuple[T, float]] = {}
        self.gaps = 0
        self.late = 0

    def start(self, next_seq: int) -> None:
        """The stream continues at ``next_seq`` (after a rebuild from the record)."""
        self.next = next_seq
        self._held = {k: v for k, v in self._held.items() if k >= next_seq}

    def push(self, seq: int | None, item: T, now: float) -> list[T | None]:
        """One item; the items now released, in order."""
        if seq is None:
            return [item]
        if self.next is None:
            self.next = seq  # the first number heard starts the stream
        if seq < self.next or seq in self._held:
            self.late += 1
            return []
        if seq > self.next:
            self._held[seq] = (item, now)
            return self._give_up() if len(self._held) > self.max_held else []
        self.next += 1
        return [item, *self._drain()]

    def flush(self, now: float) -> list[T | None]:
        """Give up on a gap held longer than ``max_wait``; the items released."""
        if self._held and min(at for _, at in self._held.values()) <= now - self.max_wait:
            return self._give_up()
        return []

    def _give_up(self) -> list[T | None]:
        self.gaps += 1
        self.next = min(self._held)
        return [None, *self._drain()]

    def _drain(self) -> list[T | None]:
        out: list[T | None] = []
        assert self.next is not None
        while self.next in self._held:
            out.append(self._held.pop(self.next)[0])
            self.next += 1
        return out
