"""The numbers of non-durable messages: each topic's ``table_seq`` goes up by one per message a
subscriber can receive, and survives restarts (docs/mqtt.md, "Sequence numbers").

Durable messages (``event``, ``outcome``, ``fault``) are numbered by the journal as they are
written. The others are numbered here, as they are sent, and the last number of each sequence is
kept in the journal's :class:`~tabled.daemon.journal.DeliveryLog`. Pure bookkeeping: nothing here
touches the network.
"""

from __future__ import annotations

import contextlib

from tabled.daemon.journal import DeliveryLog, JournalError, check_number

#: The sequence of ``…/status``: births, wills and our own ``offline``.
STATUS = "status"


class Sequences:
    """The numbered non-durable sequences (``device``, ``metrics``, ``reply``): the next number
    of a kind is its last one plus one, recorded before the message goes out."""

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        self._last: dict[str, int] = {}

    def next(self, kind: str) -> int:
        """The number the next message of ``kind`` carries (it is spent from now on)."""
        assert kind != STATUS, "status numbers follow the connections (StatusNumbers)"
        if kind not in self._last:
            self._last[kind] = self._log.last_number(kind)
        number = check_number(kind, self._last[kind] + 1)  # JournalError beyond MAX_SEQ
        self._last[kind] = number
        # If the journal fails, the number still goes up in memory (the failure is reported
        # on its own); it is only lost if the daemon also restarts before the disk recovers.
        with contextlib.suppress(JournalError):
            self._log.save_number(kind, number)
        return number


class StatusNumbers:
    """``…/status`` numbers, which follow the broker connections.

    A connection's birth takes the next number and its will the one after, so that the will
    sorts after the birth; neither is spent unless the broker accepts the connection. A will
    the broker may hold is spent (it may publish it); one it certainly dropped — the connection
    ended with our DISCONNECT — gives its number back to the next message after the last one we
    sent ourselves. Our own shutdown ``offline`` takes the will's number.
    """

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        #: The highest number that may have reached a subscriber.
        self.spent = log.last_number(STATUS)
        #: The last number this daemon itself published (or tried to).
        self.sent = self.spent
        #: The will's number on the current connection, once the broker accepted it.
        self.will: int | None = None

    def for_connection(self) -> tuple[int, int]:
        """The birth's and the will's numbers for the next connection attempt."""
        check_number(STATUS, self.spent + 2)  # JournalError beyond MAX_SEQ
        self.sent = self.spent
        self.will = None
        return self.spent + 1, self.spent + 2

    def accepted(self, will: int) -> None:
        """The broker holds the will: from now on it may publish it."""
        self.spend(will)
        self.will = will

    def spend(self, number: int, *, dropped_will: bool = False) -> None:
        """Record ``number`` as the highest that may have reached a subscriber, durably. It
        only goes back when the broker certainly dropped a will unpublished."""
        if number == self.spent:
            return
        if number <= self.spent and not dropped_will:
            return
        self.spent = number
        # If the journal fails, the number still holds in memory (the failure is reported on
        # its own); only a restart before the disk recovers could then use a number again.
        with contextlib.suppress(JournalError):
            self._log.save_number(STATUS, number)

    def left_cleanly(self) -> None:
        """The connection ended with our DISCONNECT: the broker dropped the will unpublished,
        and its number goes to the next message after the last one we sent."""
        self.spend(self.sent, dropped_will=True)
        self.will = None
