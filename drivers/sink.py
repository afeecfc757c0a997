"""Where a driver's events go, and the durability barrier before it acknowledges a device.

A driver hands each normalized event to its :class:`EventSink`'s :meth:`~EventSink.emit`, and
after each batch of received frames calls :meth:`~EventSink.commit`: the daemon's sink writes
what the batch caused to the journal there, and the driver acknowledges the device's frames only
if it returned True (end-to-end durability: a host that dies before the commit never
acknowledged them, so the device sends them again). ``tabled listen`` and tests pass a plain
callable, which :func:`as_sink` wraps in a sink with nothing to make durable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from tabled.contract.events import Event

#: Why a link went down when the sink's commit failed: the driver drops the link unacknowledged
#: (the device keeps its frames). Its close reason is ``link_down: not_durable``; the daemon
#: reads it as the host's failure, not the device's.
NOT_DURABLE = "not_durable"

@runtime_checkable
class EventSink(Protocol):
    """A driver's destination for events, with the durability barrier."""

    def emit(self, event: Event) -> None:
        """Take one event (stamped with the device id, its sequence number and time)."""
        ...

    def commit(self) -> bool:
        """Make every event emitted so far durable; False if it could not (then the driver
        acknowledges nothing and drops the link; the device keeps the frames)."""
        ...


class CallbackSink:
    """A sink that hands each event to a callable and has nothing to make durable."""

    __slots__ = ("_emit",)

    def __init__(self, emit: Callable[[Event], object]) -> None:
        self._emit = emit

    def emit(self, event: Event) -> None:
        self._emit(event)

    def commit(self) -> bool:
        return True


def as_sink(target: EventSink | Callable[[Event], object]) -> EventSink:
    """``target`` itself if it is a sink, else a :class:`CallbackSink` around the callable."""
    return target if isinstance(target, EventSink) else CallbackSink(target)
