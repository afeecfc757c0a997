"""The pit's record: one async interface, two databases (SQLite embedded, PostgreSQL shared).

Owns what is kept and how it is queried, and nothing that decides: the alert engine says what to
raise or clear, this module makes each change one transaction with its audit entry.

- **Messages**, idempotent by ``(site, table, topic, table_seq)``: a QoS 1 re-delivery (the same
  bytes under a number already stored) is a duplicate and stored once; different bytes under a
  stored number is a *conflict* (a table whose journal was reset), reported, never overwritten.
  The daemon's one unnumbered message (a journal failure on ``…/fault``) is idempotent by its
  digest. What is recorded: every ``event``, ``outcome`` and ``fault`` (the durable, contiguous
  streams), and every ``status`` and ``device/<id>/status`` message (state changes; each carries
  its own number). ``metrics`` is not recorded: it is a periodic sample (QoS 0), its figures go
  to the live model and Prometheus.
- **Malformed** messages, kept with the reason, so that bad input loses nothing.
- **Alerts** with their lifecycle ``open → acknowledged → cleared → closed`` (or ``open →
  cleared`` and then acknowledged to close; or closed by a supervisor) and an **audit trail**:
  every change is a row naming who, when, what and the note. The audit rows are also the
  outbox of ``…/pit/alert``: each is published once (claimed by one pit server, marked when the
  broker acknowledged it), even with several servers on one database.
- **Web sessions** and the **sign-in audit** (schema version 2): a session is a row (the hash
  of its id, never the id), so that sign-out ends it for every pit server on the record; every
  sign-in, failure, throttle, sign-out and ended session is a row of ``sign_in_audit``.

The SQL is written once (``?`` placeholders, portable types); :mod:`pit.store_sqlite` and
:mod:`pit.store_postgres` provide the connection, the transaction and the few words that differ.
Every operation has a timeout and raises :class:`StoreError` when the database fails, or
:class:`StoreDataError` when it refuses the content it was given (retrying would not help).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tabled.contract.outcome import OutcomeError, OutcomeRecord
from tabled.games.registry import decode_outcome
from tabled.pit.errors import PitError
from tabled.pit.messages import Message

#: Every store operation (one transaction) must finish within this, seconds.
T_STORE = 10.0
#: A claimed outbox row not marked published within this is claimed again (its pit died).
T_CLAIM = 30.0

SCHEMA_VERSION = 3

AlertState = Literal["open", "acknowledged", "cleared", "closed"]
LIVE_STATES: tuple[AlertState, ...] = ("open", "acknowledged", "cleared")
Severity = Literal["critical", "major", "minor", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "major", "minor", "info")


class StoreError(PitError):
    """The database failed or did not answer in time (the operation was not done): an outage,
    worth retrying."""


class StoreDataError(StoreError):
    """The database refused what it was given (a number beyond its integers, text it cannot
    keep): the operation was not done, and doing it again would fail the same way."""


def store_error(description: str, exc: BaseException,
                data: tuple[type[BaseException], ...]) -> StoreError:
    """``exc`` of a database driver as the store's error: :class:`StoreDataError` if it is one
    of the dialect's ``data`` errors, an outage (:class:`StoreError`) otherwise. The one rule
    that tells the two apart; each dialect lists its driver's data errors."""
    kind = StoreDataError if isinstance(exc, data) else StoreError
    return kind(f"{description}: {type(exc).__name__}: {exc}")


class AlertActionError(PitError):
    """An alert action that cannot be done: no such alert, or not in its current state."""


Row = tuple[Any, ...]


class Tx(abc.ABC):
    """One transaction's statements (``?`` placeholders)."""

    @abc.abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    @abc.abstractmethod
    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


# -- what the store returns -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recorded:
    """What :meth:`Store.record` did with a message."""

    status: Literal["new", "duplicate", "conflict"]
    id: int | None

    @property
    def new(self) -> bool:
        return self.status == "new"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    site: str
    table: str
    stream: str
    table_seq: int | None
    kind: str
    round: int | None
    received_at: float
    payload: dict[str, Any]

    @property
    def outcome(self) -> OutcomeRecord | None:
        """An outcome's typed form, decoded from the record as it was when received (None for
        another stream, or for a record the contract's decoder refuses: one recorded before the
        pit decoded every field)."""
        if self.stream != "outcome":
            return None
        try:
            return decode_outcome(self.payload)
        except OutcomeError:
            return None


@dataclass(frozen=True, slots=True)
class Holdings:
    """What the record holds of one stream (:meth:`Store.holes`): ``high`` the highest number
    recorded (-1: none), ``holes`` the missing runs below it as ``(first, last)``, lowest first
    (the numbers below the lowest recorded one included), ``low_at`` when the lowest recorded
    number was received (None: none; retention purges by that time)."""

    high: int
    holes: list[tuple[int, int]]
    low_at: float | None = None


@dataclass(frozen=True, slots=True)
class RecalledRound:
    """One round for game recall: its outcome, every event the table published for it, the
    faults that touched it (the table's ``fault`` messages naming its round or received in its
    time span) and the outcome's number (``table_seq``, a history page's cursor)."""

    round: int
    outcome: dict[str, Any]
    events: list[dict[str, Any]]
    received_at: float
    faults: list[dict[str, Any]] = field(default_factory=list)
    table_seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "outcome": self.outcome, "events": self.events,
                "received_at": self.received_at, "faults": self.faults,
                "table_seq": self.table_seq}


@dataclass(frozen=True, slots=True)
class RoundQuery:
    """Which rounds of a table a history page shows, newest first, ``size`` of them: those
    received from ``since`` to ``until`` (the pit's clock, epoch seconds), starting ``before``
    or ``after`` an outcome's ``table_seq`` (the cursors of :class:`RoundPage`), or else at
    round number ``round`` (the newest shown), or else at the latest."""

    before: int | None = None
    after: int | None = None
    round: int | None = None
    since: float | None = None
    until: float | None = None
    size: int = 20


@dataclass(frozen=True, slots=True)
class RoundPage:
    """A page of rounds, newest first, with the cursors of the pages beside it: ``older``
    (pass as ``before``) and ``newer`` (pass as ``after``), None where there is none."""

    rounds: list[RecalledRound]
    older: int | None
    newer: int | None


@dataclass(frozen=True, slots=True)
class Segment:
    """A part of a table's play that a card-less event begins (a baccarat shoe at each
    ``shoe_start``): its ordinal among those recorded (``number``, 1 the first), the event's
    number, when it was received, the event, and how many rounds ended in it."""

    number: int
    table_seq: int
    received_at: float
    event: dict[str, Any]
    rounds: int
    next_seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "table_seq": self.table_seq,
                "received_at": self.received_at, "event": self.event, "rounds": self.rounds}


@dataclass(frozen=True, slots=True)
class AlertSpec:
    """What the alert engine raises. ``(site, table, kind, subject)`` identifies one condition:
    at most one alert per condition is not closed. ``transient``: a fact, not a lasting
    condition (a void round, a fault): there is nothing to clear, so acknowledging closes it."""

    site: str
    table: str
    kind: str
    subject: str
    severity: Severity
    message: str
    detail: dict[str, Any] = field(default_factory=dict)
    transient: bool = False
    #: the incident a new alert joins (the id of its first alert; the engine decides what
    #: belongs together); None: it starts an incident of its own
    incident: int | None = None


@dataclass(frozen=True, slots=True)
class Alert:
    id: int
    site: str
    table: str
    kind: str
    subject: str
    severity: Severity
    state: AlertState
    message: str
    detail: dict[str, Any]
    transient: bool
    #: how many times the condition was reported while this alert was not closed
    count: int
    opened_at: float
    updated_at: float
    acked_by: str | None
    acked_at: float | None
    ack_note: str | None
    cleared_at: float | None
    closed_at: float | None
    closed_by: str | None
    #: the incident it belongs to: the id of the incident's first alert (its own id: it
    #: started one; 0: not known, read as its own id)
    incident: int = 0
    #: how many times it was escalated unacknowledged (0: never), and when last
    escalation: int = 0
    escalated_at: float | None = None
    #: when its condition was last reported (raised, repeated, reopened, updated)
    seen_at: float | None = None

    @property
    def incident_id(self) -> int:
        return self.incident or self.id

    @property
    def last_seen(self) -> float:
        return self.seen_at if self.seen_at is not None else self.opened_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "site": self.site, "table": self.table, "kind": self.kind,
            "subject": self.subject, "severity": self.severity, "state": self.state,
            "message": self.message, "detail": self.detail, "transient": self.transient,
            "count": self.count, "opened_at": self.opened_at, "updated_at": self.updated_at,
            "acknowledged": None if self.acked_by is None else {
                "by": self.acked_by, "at": self.acked_at, "note": self.ack_note},
            "cleared_at": self.cleared_at, "closed_at": self.closed_at,
            "closed_by": self.closed_by, "incident": self.incident_id,
            "escalation": self.escalation, "escalated_at": self.escalated_at,
            "seen_at": self.last_seen,
        }


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One action on one alert: who (a user, or ``pit:<id>`` for the engine), when, what, the
    alert's state after it, and the note."""

    id: int
    alert_id: int
    at: float
    actor: str
    action: str
    state: str
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "alert_id": self.alert_id, "at": self.at, "actor": self.actor,
                "action": self.action, "state": self.state, "note": self.note}


@dataclass(frozen=True, slots=True)
class AlertChange:
    """An alert after a change, and the audit entry that records the change."""

    alert: Alert
    audit: AuditEntry


# -- web sessions and the sign-in audit (schema version 2) -------------------------------------


@dataclass(frozen=True, slots=True)
class WebSession:
    """A signed-in session of the web page: ``id_hash`` is the SHA-256 of the random id in the
    browser's cookie (the record never holds the id itself); ``password_mark`` a fingerprint of
    the user's password hash when the session began (another hash in the config: the password
    changed, the session ends)."""

    id_hash: str
    user: str
    password_mark: str
    created_at: float
    last_seen: float
    ended_at: float | None
    end_reason: str | None
    client: str
    pit: str

    def to_dict(self) -> dict[str, Any]:
        return {"user": self.user, "created_at": self.created_at, "last_seen": self.last_seen,
                "ended_at": self.ended_at, "end_reason": self.end_reason,
                "client": self.client, "pit": self.pit}


@dataclass(frozen=True, slots=True)
class SignInEntry:
    """One line of the sign-in audit: ``action`` is ``signed_in``, ``failed``, ``throttled``,
    ``signed_out`` or ``session_ended`` (``reason``: ``password_changed``, ``user_removed``,
    ``idle``, ``expired``); never a password."""

    id: int
    at: float
    user: str
    client: str
    action: str
    reason: str | None
    pit: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "user": self.user, "client": self.client,
                "action": self.action, "reason": self.reason, "pit": self.pit}


# -- the interface ----------------------------------------------------------------------------



class RecordStore(abc.ABC):
    """The floor's record of what the tables published: messages, idempotent by number, and
    malformed input; what the reconciler, the live model, recall, the history and the integrity
    monitors read."""

    @abc.abstractmethod
    async def record(self, message: Message, recorded_by: str) -> Recorded: ...

    @abc.abstractmethod
    async def record_many(self, messages: Sequence[Message],
                          recorded_by: str) -> list[Recorded]:
        """:meth:`record` for each message in order, in one transaction."""

    @abc.abstractmethod
    async def record_malformed(self, topic: str, reason: str, payload: bytes,
                               received_at: float, recorded_by: str) -> None: ...

    @abc.abstractmethod
    async def missing(self, site: str, table: str, stream: str, first: int,
                      last: int) -> list[int]: ...

    @abc.abstractmethod
    async def holes(self, site: str, table: str, stream: str, after: int = -1,
                    limit: int = 10_000) -> Holdings:
        """What the record holds of one numbered stream above ``after`` (a prefix known
        complete): its highest number and the runs of numbers missing below it (from
        ``after + 1``), at most ``limit`` of them, lowest first."""

    @abc.abstractmethod
    async def high_water(self) -> dict[tuple[str, str, str], int]: ...

    @abc.abstractmethod
    async def tables(self) -> list[tuple[str, str]]: ...

    @abc.abstractmethod
    async def messages(self, site: str, table: str, stream: str | None = None, *,
                       limit: int = 100) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def recent_outcomes(self, site: str, table: str,
                              limit: int = 10) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def rounds_since(self, site: str, table: str, since: float) -> int: ...

    @abc.abstractmethod
    async def recall(self, site: str, table: str, last: int = 10) -> list[RecalledRound]: ...

    @abc.abstractmethod
    async def round_page(self, site: str, table: str, query: RoundQuery) -> RoundPage:
        """A page of the table's rounds (:class:`RoundQuery`), newest first, each with its
        events (as :meth:`recall` gives them: never a round in progress) and the faults that
        touched it."""

    @abc.abstractmethod
    async def segments(self, site: str, table: str, event_type: str, *,
                       before: int | None = None, since: float | None = None,
                       until: float | None = None, size: int = 20) -> list[Segment]:
        """The table's segments begun by ``event_type`` events, newest first: those begun
        before event number ``before``, received from ``since`` to ``until``."""

    @abc.abstractmethod
    async def segment(self, site: str, table: str, event_type: str,
                      number: int) -> Segment | None:
        """The ``number``-th segment (1 the first recorded), or None."""

    @abc.abstractmethod
    async def segment_outcomes(self, site: str, table: str, segment: Segment,
                               limit: int = 2000) -> list[StoredMessage]:
        """The outcomes of the rounds that ended in ``segment``, in the table's order."""

    @abc.abstractmethod
    async def rebuild_records(self, site: str, table: str,
                              limit: int = 5000) -> list[StoredMessage]: ...

    @abc.abstractmethod
    async def malformed_count(self) -> int: ...

    @abc.abstractmethod
    async def last_message_id(self) -> int: ...

    @abc.abstractmethod
    async def recorded_by_others(self, after_id: int, recent: float, me: str,
                                 limit: int = 1000) -> list[StoredMessage]:
        """Outcomes and ``shoe_start`` events other pit servers recorded with an id above
        ``after_id`` or in the last ``recent`` seconds (the live model of a server that gets
        only its share of a shared subscription follows the rest through the record)."""

    async def others_recorded(self, me: str, within: float) -> bool:
        """Wait until another pit server than ``me`` has committed records since the last
        call (PostgreSQL: its ``NOTIFY``), at most ``within`` seconds; True if woken by one.
        A store with no such signal (SQLite: one pit server) just waits."""
        await asyncio.sleep(within)
        return False

    # -- the reports' queries (pit/report) --------------------------------------------------

    @abc.abstractmethod
    async def messages_between(self, since: float, until: float, *, site: str | None = None,
                               table: str | None = None,
                               streams: Sequence[str] = ("outcome", "fault", "status"),
                               limit: int = 1_000_000) -> list[StoredMessage]:
        """The messages of ``streams`` received in ``[since, until)`` (of one site and table,
        or all), in arrival order."""

    @abc.abstractmethod
    async def statuses_before(self, at: float) -> list[StoredMessage]:
        """Each table's last ``status`` message received before ``at``: its state when a
        report's period begins."""


class AlertStore(abc.ABC):
    """Alerts and their audit trail: each change one transaction with its audit line (the
    alert engine decides what to raise or clear, this keeps it)."""

    @abc.abstractmethod
    async def raise_alert(self, spec: AlertSpec, actor: str, now: float,
                          publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def clear_alert(self, site: str, table: str, kind: str, subject: str, actor: str,
                          now: float, note: str | None = None,
                          publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def update_alert(self, alert_id: int, detail: dict[str, Any], message: str,
                           actor: str, now: float, note: str,
                           publish: bool = True) -> AlertChange | None: ...

    @abc.abstractmethod
    async def acknowledge(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange: ...

    @abc.abstractmethod
    async def close_alert(self, alert_id: int, actor: str, note: str | None, now: float,
                          publish: bool = True) -> AlertChange: ...

    @abc.abstractmethod
    async def audit_refusal(self, alert_id: int, actor: str, action: str, note: str,
                            now: float) -> AuditEntry | None: ...

    @abc.abstractmethod
    async def alert(self, alert_id: int) -> Alert | None: ...

    @abc.abstractmethod
    async def alerts(self, *, site: str | None = None, table: str | None = None,
                     states: Sequence[str] = LIVE_STATES, kind: str | None = None,
                     limit: int = 1000) -> list[Alert]: ...

    @abc.abstractmethod
    async def audit(self, alert_id: int | None = None, *, limit: int = 200) -> list[AuditEntry]:
        """The audit trail of one alert (oldest first), or the latest entries of all."""

    @abc.abstractmethod
    async def escalate(self, alert_id: int, level: int, actor: str, now: float, note: str,
                       publish: bool = True) -> AlertChange | None:
        """Raise an alert not acknowledged (open or cleared) to escalation ``level`` with its
        audit line (published: ``…/pit/alert`` carries the new level); None if it is
        acknowledged or closed meanwhile, or at that level already."""

    @abc.abstractmethod
    async def alerts_since(self, since: float, *, limit: int = 1000) -> list[Alert]:
        """Alerts not closed, and alerts changed at or after ``since``, newest first."""

    @abc.abstractmethod
    async def incident_alerts(self, incidents: Sequence[int]) -> list[Alert]:
        """Every alert of these incidents, whatever its state, oldest first."""

    @abc.abstractmethod
    async def audit_since(self, since: float, *, limit: int = 1000) -> list[AuditEntry]:
        """Audit entries written at or after ``since``, oldest first."""

    @abc.abstractmethod
    async def audit_after(self, after_id: int, recent: float = 0.0,
                          limit: int = 500) -> list[AuditEntry]:
        """Audit entries with an id above ``after_id`` or written in the last ``recent``
        seconds: how a pit learns what other processes did (PostgreSQL hands out ids before
        commit, so a late commit may carry a lower id than one already seen)."""

    # -- the reports' queries (pit/report) --------------------------------------------------

    @abc.abstractmethod
    async def alerts_opened(self, since: float, until: float, *, site: str | None = None,
                            table: str | None = None,
                            limit: int = 1_000_000) -> list[Alert]:
        """Alerts opened in ``[since, until)`` in any state (of one site and table, or all),
        oldest first."""


class OutboxStore(abc.ABC):
    """The outbox of ``…/pit/alert``: each audit line published once, even with several pit
    servers on one record (claimed by one, marked when the broker acknowledged it)."""

    @abc.abstractmethod
    async def pending_publications(self, limit: int = 100) -> list[tuple[AuditEntry, Alert]]: ...

    @abc.abstractmethod
    async def claim_publication(self, audit_id: int, by: str, now: float) -> bool: ...

    @abc.abstractmethod
    async def mark_published(self, audit_id: int, now: float) -> None: ...

    @abc.abstractmethod
    async def release_publication(self, audit_id: int) -> None: ...


class SessionStore(abc.ABC):
    """Web sessions and the sign-in audit (schema version 2): what the page's sign-in reads
    and writes."""

    @abc.abstractmethod
    async def start_session(self, session: WebSession) -> SignInEntry:
        """Store a new session and its ``signed_in`` audit line, in one transaction."""

    @abc.abstractmethod
    async def web_session(self, id_hash: str) -> WebSession | None: ...

    @abc.abstractmethod
    async def touch_session(self, id_hash: str, now: float) -> bool:
        """Note activity on a session not ended; False if it is ended (or unknown)."""

    @abc.abstractmethod
    async def end_session(self, id_hash: str, reason: str, now: float, *,
                          client: str | None = None, pit: str = "") -> SignInEntry | None:
        """End a session not ended yet, with its audit line (``signed_out`` for the reason
        ``signed_out``, else ``session_ended``); None if it was ended already (by another
        request or another pit server: audited once)."""

    @abc.abstractmethod
    async def live_sessions(self, limit: int = 10_000) -> list[WebSession]: ...

    @abc.abstractmethod
    async def record_sign_in(self, at: float, user: str, client: str, action: str,
                             reason: str | None, pit: str) -> SignInEntry: ...

    @abc.abstractmethod
    async def sign_in_audit(self, *, user: str | None = None,
                            limit: int = 100) -> list[SignInEntry]:
        """The latest sign-in audit lines (of one user), newest first."""

    @abc.abstractmethod
    async def purge_sign_in(self, sessions_before: float,
                            audit_before: float) -> dict[str, int]:
        """Delete sessions ended before ``sessions_before`` and audit lines written before
        ``audit_before``."""


class Store(RecordStore, AlertStore, OutboxStore, SessionStore):
    """The record, all of it: what the pit service opens, purges and closes. Each part of the pit
    is handed the narrow interface it needs (:class:`RecordStore`, :class:`AlertStore`,
    :class:`OutboxStore`, :class:`SessionStore`). :meth:`open` connects and migrates; every other
    method is one transaction."""

    #: Called with (operation, seconds) after each operation (Prometheus' store latency).
    observe: Callable[[str, float], None] | None = None

    @abc.abstractmethod
    async def open(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def description(self) -> str: ...

    @abc.abstractmethod
    async def purge(self, messages_before: float, alerts_before: float) -> dict[str, int]: ...
