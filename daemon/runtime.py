"""The table runtime: events in, rules core, journal, messages ready to publish.

Owns the synchronous path from an accepted event to durable records. For each event it runs the
rules core, works out what may be published (the game's own
:meth:`~tabled.daemon.rules.Table.publication`: Q Poker withholds face-down cards), and stages the
event and everything it caused; :meth:`TableRuntime.commit` writes the staged records in one journal
transaction. Only after that commit does anything reach MQTT (the publisher reads the journal), and
only after it do the drivers acknowledge the device's frames: a crash before the commit leaves the
event with the device, which sends it again.

The path is transactional: if anything on it raises once the rules core has been fed (the rules
core itself, the redaction, building the records), the event is *not applied*. The rules state is
rebuilt from the journal, as it was before the event, and the failure is journaled as an input
``fault`` ``event_not_applied`` (naming the event's type, never its card) which the rules core
answers like any event: it voids the round the lost event belonged to and declines what it can
no longer follow. So the live state is always what a replay of the journal gives.

If the journal cannot make records durable (disk full, unwritable), the runtime becomes
*degraded*: it rebuilds the rules state from the journal (forgetting what it could not write),
refuses every new event (the devices keep them), and reports the fault; it probes the journal
and recovers by itself.

It never awaits, never publishes, and never logs a card.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from tabled.contract import CONTRACT_VERSION
from tabled.contract.events import (
    Event,
    EventError,
    Fault,
    event_to_dict,
    parse_event,
)
from tabled.contract.faults import (
    EVENT_NOT_APPLIED,
    JOURNAL_FAILURE,
    NOT_APPLIED_CODE,
    NOT_APPLIED_TYPE,
)
from tabled.contract.logs import event_fields
from tabled.contract.outcome import Notice, Outcome, Output
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import Config
from tabled.daemon.errors import DaemonError
from tabled.daemon.journal import EventLog, InputEntry, JournalError, OutputEntry
from tabled.games.registry import check_event, make_table
from tabled.games.table import Publication, Table, added_round, published_body

log = structlog.get_logger("tabled.runtime")



class Degraded(DaemonError):
    """The runtime refuses events: the journal cannot make them durable."""


@dataclass(slots=True)
class Latencies:
    """Recent latencies in seconds (event staged -> journal commit), for metrics."""

    samples: list[float] = field(default_factory=list)
    cap: int = 4096

    def add(self, value: float) -> None:
        if len(self.samples) < self.cap:
            self.samples.append(value)

    def take(self) -> list[float]:
        out, self.samples = self.samples, []
        return out


@dataclass(slots=True)
class DeviceProgress:
    """What the journal holds from one device: its next event sequence number, and the last
    device message made durable (for the link's exactly-once resume)."""

    next_seq: int = 0
    boot_id: int | None = None
    last_message: int | None = None

    def saw(self, event: Event) -> None:
        if event.meta.seq is not None:
            self.next_seq = max(self.next_seq, event.meta.seq + 1)
        boot, number = event.meta.boot, event.meta.msg
        if boot is not None and number is not None and (
                boot != self.boot_id or self.last_message is None or number > self.last_message):
            self.boot_id, self.last_message = boot, number


class TableRuntime:
    """One table's game state and journal. Every method runs on the event loop, and returns."""

    def __init__(
        self,
        config: Config,
        events: EventLog,
        *,
        on_committed: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.game = config.table.game
        self.options = config.game_options()
        #: The runtime's part of the journal: events and what they caused.
        self.events = events
        self.on_committed = on_committed
        self._clock = clock
        self.counters: Counter[str] = Counter()
        self.commit_latency = Latencies()
        self.degraded: str | None = None
        self._stale = False  # the rules state is ahead of the journal: rebuild before use
        self._recovering = False  # staging the fault that stands for an event not applied
        self._staged: list[InputEntry | OutputEntry] = []
        self._staged_at: float | None = None
        #: when the journal last took a write of ours (a commit or a health check)
        self._wrote_at: float | None = None
        #: What the staged events caused, to log once it is durable and on its way (the log
        #: is no part of the path: written before the commit, it delayed every outcome).
        self._to_log: list[tuple[Event, list[Output]]] = []
        self.devices: dict[str, DeviceProgress] = {}
        self.table: Table
        self.publication: Publication
        self.table, self.publication = self._rebuild()

    # -- state ---------------------------------------------------------------------------------

    def _fresh(self) -> tuple[Table, Publication]:
        table = make_table(self.game, self.options)
        return table, table.publication()

    def _rebuild(self) -> tuple[Table, Publication]:
        """The rules state after every input the journal holds (outputs are already there)."""
        table, publication = self._fresh()
        count = 0
        self.devices.clear()
        for stored in self.events.inputs():
            event = parse_event(stored.body)
            self._saw(event)
            outputs = table.feed(event)
            publication.admit(event, outputs)
            count += 1
        self.counters["rebuilt_inputs"] = count
        return table, publication

    # -- the path of an event ------------------------------------------------------------------

    def stage(self, event: Event, source: str) -> list[Output]:
        """Run ``event`` through the rules and stage it with what it caused. Raises Degraded.

        If anything on the way raises, the event is not applied (see the module's docstring):
        the outputs returned are those of the ``event_not_applied`` fault that stands for it."""
        if self.degraded is not None:
            self.counters["refused_degraded"] += 1
            raise Degraded(self.degraded)
        try:
            check_event(event, self.game)
        except EventError as exc:
            # What tabled replay calls malformed (a Q Poker card without its seat): replay
            # stops there; the daemon cannot, and does not apply it either.
            return self._not_applied(event, exc, reason=str(exc))
        try:
            # the round each published event belongs to, for consoles (docs/mqtt.md)
            rounds = (self.table.round_of(event), self.table.next_round)
            outputs = self.table.feed(event)
            published = self.publication.admit(event, outputs)
            entries = self._entries(event, source, outputs, published, rounds)
        except Exception as exc:  # a bug must neither take the table down nor split its state
            return self._not_applied(event, exc)
        self._saw(event)
        self._staged.extend(entries)
        if self._staged_at is None:
            self._staged_at = self._clock()
        self.counters["events"] += 1
        if outputs:  # (most events cause nothing: no counting on their way)
            self.counters["outcomes"] += sum(isinstance(o, Outcome) for o in outputs)
            self.counters["notices"] += sum(isinstance(o, Notice) for o in outputs)
            self._to_log.append((event, outputs))
        return outputs

    def _entries(self, event: Event, source: str, outputs: list[Output],
                 published: list[Event], rounds: tuple[int | None, int]
                 ) -> list[InputEntry | OutputEntry]:
        """The journal records of one applied event: the input, what may be published of it
        (with the round it belongs to: ``published_body``), a device fault, the outcomes and
        the notices."""
        body = event_to_dict(event)  # once: the input and, most often, what is published of it
        entries: list[InputEntry | OutputEntry]
        number = added_round(event, event, *rounds)
        if len(published) == 1 and published[0] is event and (number is None
                                                              or "round" not in body):
            # published as itself: one row is the input and the message (the journal's
            # format 4), with the round its message carries
            entries = [InputEntry(source, body, published=True, round=number)]
        else:
            entries = [InputEntry(source, body)]
            entries.extend(OutputEntry("event", published_body(item, event, *rounds, body))
                           for item in published)
        if isinstance(event, Fault):
            entries.append(OutputEntry("fault", {**body, "source": source}))
        for output in outputs:
            if isinstance(output, Outcome):
                record = output.to_record()
                record["ts"] = rfc3339_now()
                entries.append(OutputEntry("outcome", record, round=output.round))
            else:
                entries.append(OutputEntry("fault", self._notice_body(output, event)))
        return entries

    def _log_outputs(self, event: Event, outputs: list[Output]) -> None:
        """Log what an applied event caused, once it is durable and published (:meth:`commit`).
        Logging is no part of the transaction: a failure here is counted and changes nothing
        that was written."""
        try:
            for output in outputs:
                if isinstance(output, Outcome):
                    if output.status == "void":
                        log.warning("round_void", round=output.round, article=output.article,
                                    reason=output.void_reason)
                    else:
                        log.info("outcome", round=output.round)
                else:
                    # One mapping, so that an event field can never collide with the notice's
                    # own (a fault event carries a ``code`` too): a collision raised TypeError.
                    log.warning("notice", **{**event_fields(event), "notice_code": output.code,
                                             "notice": output.message,
                                             "article": output.article})
        except Exception as exc:
            self.counters["log_errors"] += 1
            with contextlib.suppress(Exception):
                log.error("log_failed", error=type(exc).__name__, where=_where(exc))

    def _not_applied(self, event: Event, exc: Exception, reason: str | None = None
                     ) -> list[Output]:
        """``event`` could not be applied: rebuild the rules state from the journal (as it was
        before the event) and journal, as an input the rules core answers, the fault that
        stands for it. Its text names the event's type and the failure, never a card
        (``reason``, when given, is a text known to hold none)."""
        self.counters["events_not_applied"] += 1
        where = _where(exc)
        with contextlib.suppress(Exception):
            log.error("event_not_applied", error=type(exc).__name__, where=where,
                      **event_fields(event))
        # What was staged before is the journal's due: write it, then forget what the failed
        # event did to the rules state by replaying the journal.
        if not self.commit():
            raise Degraded(self.degraded or "journal failure")
        if not self._try_rebuild():
            self._degrade("the journal could not be read to rebuild the rules state")
            raise Degraded(self.degraded or "journal failure")
        seq = "" if event.meta.seq is None else f" (device seq {event.meta.seq})"
        cause = reason or f"{type(exc).__name__} in {where}"
        detail = (f"the daemon could not apply a {event.TYPE} event{seq}: {cause}; "
                  "the rules state was rebuilt from the journal")
        extra: dict[str, Any] = {"source": "daemon", NOT_APPLIED_TYPE: event.TYPE}
        if isinstance(event, Fault):
            extra[NOT_APPLIED_CODE] = event.code
        fault = Fault(code=EVENT_NOT_APPLIED, detail=detail, meta=event.meta, extra=extra)
        if self._recovering:
            # The rules failed on the fault too: keep the state the journal gives, say so.
            self._staged.append(OutputEntry("fault", self.fault_body(EVENT_NOT_APPLIED, detail)))
            return []
        self._recovering = True
        try:
            return self.stage(fault, "daemon")
        finally:
            self._recovering = False

    def commit(self) -> bool:
        """Write everything staged in one transaction. False (and degraded) if it failed."""
        if not self._staged:
            return self.degraded is None
        staged, self._staged = self._staged, []
        started, self._staged_at = self._staged_at, None
        to_log, self._to_log = self._to_log, []
        try:
            self.events.write(staged, rfc3339_now())
        except JournalError as exc:
            self._degrade(str(exc))  # what it caused never happened: nothing to log
            return False
        self._wrote_at = self._clock()
        if started is not None:
            self.commit_latency.add(self._wrote_at - started)
        self.counters["commits"] += 1
        self.on_committed()  # the publisher: on the broker's socket before anything else
        for event, outputs in to_log:
            self._log_outputs(event, outputs)
        return True

    def accept(self, event: Event, source: str) -> list[Output]:
        """Stage and commit one event at once (commands, daemon decisions). Raises Degraded."""
        outputs = self.stage(event, source)
        if not self.commit():
            raise Degraded(self.degraded or "journal failure")
        return outputs

    def _saw(self, event: Event) -> None:
        device = event.meta.device
        if device is not None:
            progress = self.devices.get(device)
            if progress is None:
                progress = self.devices[device] = DeviceProgress()
            progress.saw(event)

    # -- disk trouble --------------------------------------------------------------------------

    def _degrade(self, reason: str) -> None:
        first = self.degraded is None
        self.degraded = reason
        self.counters["journal_failures"] += 1
        if first:
            log.error("journal_failure", reason=reason, code=JOURNAL_FAILURE)
        # What was fed to the rules but not written never happened: rebuild from the journal,
        # now if the disk still reads, else once it is back (nothing is accepted meanwhile).
        self._stale = True
        self._try_rebuild()

    def _try_rebuild(self) -> bool:
        try:
            self.table, self.publication = self._rebuild()
        except JournalError as exc:
            log.error("journal_unreadable", reason=str(exc))
            return False
        self._stale = False
        return True

    def check_journal(self, quiet_for: float) -> bool:
        """The health check of a healthy journal that has written nothing for ``quiet_for``
        seconds: a one-row durable write (a dying disk is a fault even with no event to
        write). A journal that wrote in that time was checked by its commits, and is left
        alone. A failure degrades the runtime; False while degraded."""
        if self.degraded is not None:
            return False
        if self._wrote_at is not None and self._clock() - self._wrote_at < quiet_for:
            return True
        try:
            self.events.check()
        except JournalError as exc:
            self._degrade(str(exc))
            return False
        self._wrote_at = self._clock()
        return True

    def probe(self) -> bool:
        """While degraded: try a durable write (and the rebuild it may owe); leave the degraded
        state if both work."""
        if self.degraded is None:
            return True
        try:
            self.events.probe()
        except JournalError:
            return False
        if self._stale and not self._try_rebuild():
            return False
        log.warning("journal_recovered", was=self.degraded)
        self.degraded = None
        return True

    def fault_body(self, code: str, detail: str) -> dict[str, Any]:
        """A fault the daemon raises about itself (not journaled when the journal is the fault)."""
        return {"v": CONTRACT_VERSION, "type": "fault", "code": code, "detail": detail,
                "source": "daemon", "ts": rfc3339_now()}

    @staticmethod
    def _notice_body(notice: Notice, event: Event) -> dict[str, Any]:
        body: dict[str, Any] = {"v": CONTRACT_VERSION, "type": "notice", **notice.to_dict(),
                                "event": event_fields(event), "ts": rfc3339_now()}
        return body


def _where(exc: BaseException) -> str:
    """Where ``exc`` was raised, as ``module:function:line`` of its innermost frame: no message
    and no locals, which could hold a face-down card."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown"
    frame = frames[-1]
    module = frame.filename.rsplit("/", 1)[-1].removesuffix(".py")
    return f"{module}:{frame.name}:{frame.lineno}"
