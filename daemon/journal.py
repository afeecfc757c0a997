"""The journal: every accepted event and every message to publish, durable and hash-chained.

Owns the SQLite file (WAL, ``synchronous=FULL``: a commit returns only once it is on disk) and the
rules of what goes in it. The daemon writes an event and everything it caused (outcomes, the
redacted events to publish, faults) in **one transaction** before anything is published. Published
messages get their per-topic sequence number here, once, so a restart re-publishes the same
message under the same number. Rows form a SHA-256 chain that :meth:`Journal.verify` checks.

One process writes a journal (an ``flock`` on ``<journal>.lock``; a second writer is refused
with :class:`JournalInUse`); readers open it with ``create=False``. After a failed write, or a
file whose last row is not the one it wrote, the writer reads its position from the file again.
Each writer gets a typed part, not the file: the table runtime the :class:`EventLog`, the
publisher the :class:`DeliveryLog`, the command gate and start-up the :class:`AuditLog`. The
format is versioned (:data:`MIGRATIONS`) and each file has an identity.

It never publishes, never reads the rules, and never logs a row's body (it may hold face-down
cards). The layout, its versions and what each choice was measured to cost: docs/journal.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from tabled.contract.limits import MAX_SEQ
from tabled.daemon.errors import DaemonError

#: The file format this code writes (each version: docs/journal.md, "Format versions").
SCHEMA_VERSION: Final = 4
#: How often the checkpoint thread copies the WAL into the database, seconds.
T_CHECKPOINT: Final = 1.0
#: The WAL is copied into the database once this many commits are in it (or after
#: :data:`T_CHECKPOINT_MAX` with any): see :meth:`Journal.start_checkpointer`.
CHECKPOINT_COMMITS: Final = 250
T_CHECKPOINT_MAX: Final = 60.0
GENESIS: Final = b"\x00" * 32
#: The page size of a new journal file, bytes: a commit writes every page it changed, so the
#: page is what the disk is asked to write (why 1 KiB: docs/journal.md). A journal keeps the
#: size it was made with.
PAGE_SIZE: Final = 1024
#: How much a probe of a failing disk writes: more than a busy commit (an event with an outcome
#: and its published copies, a few KiB), so that a disk that takes it takes the next commit.
PROBE_BYTES: Final = 256 * 1024
#: Topics whose messages are durable: journaled, sequenced, re-published until acknowledged.
DURABLE_TOPICS: Final = ("event", "outcome", "fault")
#: The topic whose numbers have no index (format 3: nearly every commit holds one of its
#: messages; docs/journal.md). Its next number is that of its last row (numbers rise with the
#: rows: :meth:`Journal.verify` checks every stream's run), found by reading back from the
#: journal's end; the other streams' numbers stay unique by index.
UNINDEXED_TOPIC: Final = "event"
#: The topic an input published as itself is a message of.
_EVENT: Final = "event"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS journal (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('input', 'output', 'start')),
    topic       TEXT,
    stream_seq  INTEGER,
    source      TEXT,
    round       INTEGER,
    ts          TEXT NOT NULL,
    body        TEXT NOT NULL,
    hash        BLOB NOT NULL,
    acked       INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS journal_numbers ON journal (topic, stream_seq)
    WHERE kind = 'output' AND topic <> '{UNINDEXED_TOPIC}';
CREATE INDEX IF NOT EXISTS journal_output_round ON journal (round)
    WHERE kind = 'output' AND round IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


_SET_META = ("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
             "value = excluded.value")

#: The statements that take a journal from version N to N + 1, each run in one transaction.
#: 1 -> 2 changes no table: release 0.1.0's rows and meta keys are read as they are; it only
#: starts recording the version, so that a later change of format knows where it starts.
#: 2 -> 3 drops the index of every stream's numbers (the schema, run first, made its
#: successor, which leaves the ``event`` stream out). 3 -> 4 drops the index of every row's
#: round for its successor, of outputs' only (an input published as itself has the round it
#: is published with, and an entry for it would be an index page in every commit); the rows
#: are read as they are.
MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: (),
    2: ("DROP INDEX IF EXISTS journal_stream",),
    3: ("DROP INDEX IF EXISTS journal_round",),
}

# The meta keys, all here: the publisher's and the numbering's positions (their values are
# decimal integers). "seq:<kind>" is each non-durable sequence's last number.
_ACKED_KEY: Final = "acked_id"
#: The journal file's identity (random hex), written once, by the writer that made the file or
#: first opened it: an addition to ``meta`` that releases before it never read, so not a format
#: change (an older release still opens the file, and keeps the id).
_ID_KEY: Final = "journal_id"
#: The lowest number of each stream a journal can serve: it keeps every row since the file was
#: made (no retention yet; the place a future one says how far back it reaches).
FIRST_NUMBER: Final = 0
_PROBE_KEY: Final = "probe"
_STATUS_KIND: Final = "status"


class JournalError(DaemonError):
    """The journal could not make a record durable (disk full, unwritable, corrupt)."""


class JournalInUse(JournalError):
    """Another process (``pid``, if it could be read) has the journal open for writing."""

    def __init__(self, path: Path, pid: int | None) -> None:
        holder = f"PID {pid}" if pid is not None else "another process"
        super().__init__(f"journal {path} is in use by {holder}")
        self.path = path
        self.pid = pid


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of the journal at ``path``: beside it, ``<name>.lock``."""
    journal = Path(path)
    return journal.with_name(journal.name + ".lock")


def _lock(path: Path) -> int:
    """Take the writer's lock of the journal at ``path`` and write our PID into it; return its
    descriptor (closing it releases the lock). ``flock``, not ``fcntl``/``lockf`` locks: those
    belong to the process and vanish when it closes *any* descriptor of the file, and SQLite's
    own locks are of that kind. The lock file is never deleted: a process that deleted it could
    let the next two lock two different files."""
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise JournalError(f"{path}: cannot open its lock file {lock}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _holder(fd)
        os.close(fd)
        raise JournalInUse(path, pid) from None
    except OSError as exc:
        os.close(fd)
        raise JournalError(f"{path}: cannot lock {lock}: {exc}") from exc
    with contextlib.suppress(OSError):  # a full disk: the lock holds, the PID is missing
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _holder(fd: int, wait: float = 0.5) -> int | None:
    """The PID the holder wrote into the lock file; it writes it just after it takes the lock,
    so an empty file is given a moment."""
    deadline = time.monotonic() + wait
    while True:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if text.isdigit():
            return int(text)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)


@dataclass(frozen=True, slots=True)
class InputEntry:
    """An accepted input: a device event, a console command or a daemon decision.

    ``published``: the input is also published on ``…/event`` as itself, with ``round`` (if
    not None) and its ``table_seq`` added after its own fields. It is then one row, not an
    input row and a copy (format 4): the row's ``topic``, ``stream_seq`` and ``round`` say
    what is added, inside the hash chain, and the message is made from them when it is read
    (:func:`_message`; what a second row cost: docs/journal.md).
    ``body`` must not have a ``round`` of its own when ``round`` is given."""

    source: str
    body: dict[str, Any]
    published: bool = False
    round: int | None = None


@dataclass(frozen=True, slots=True)
class OutputEntry:
    """A message to publish on ``topic``; the journal adds ``table_seq`` to its body."""

    topic: str
    body: dict[str, Any]
    round: int | None = None


@dataclass(frozen=True, slots=True)
class StartEntry:
    """A daemon start, with the declared regulated options (audit trail)."""

    body: dict[str, Any]


Entry = InputEntry | OutputEntry | StartEntry


@dataclass(frozen=True, slots=True)
class StoredOutput:
    id: int
    topic: str
    stream_seq: int
    payload: str


@dataclass(frozen=True, slots=True)
class StoredInput:
    id: int
    source: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    rows: int
    first_bad_id: int | None = None
    reason: str = ""
    #: The last row's hash (hex): what the table publishes as its journal's head, for a
    #: witness to hold (``journal verify --expect-head``).
    head: str = ""


@dataclass(frozen=True, slots=True)
class Head:
    """A journal's head: its row count and its last row's hash. The table publishes it in its
    retained birth record and its metrics, so that the floor holds a copy: a journal cut back
    behind a head a witness holds fails ``journal verify --expect-head``."""

    rows: int
    hash: str

    def __str__(self) -> str:
        return f"{self.hash}@{self.rows}"

    @classmethod
    def parse(cls, text: str) -> Head:
        """``HASH@ROWS`` (as printed), or ``HASH`` alone (then the row is the last one)."""
        digest, _, rows = text.partition("@")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower()):
            raise ValueError(f"{digest!r} is not a SHA-256 hash in hex")
        if rows and not rows.isdigit():
            raise ValueError(f"{rows!r} is not a row count")
        return cls(int(rows) if rows else 0, digest.lower())


@dataclass(slots=True)
class RecalledRound:
    round: int
    inputs: list[StoredInput] = field(default_factory=list)
    outcome: dict[str, Any] = field(default_factory=dict)


class _Moved(Exception):
    """The file's last row is not this journal's last write."""


#: A row's body as compact JSON, UTF-8 unescaped: the text ``json.dumps(obj, separators=(",",
#: ":"), ensure_ascii=False)`` gives for the contract's values (strings, integers, booleans,
#: null, lists, objects; floats would differ only in form, 1e16 for 1e+16), in a third of the time
#: (tests/daemon/test_journal_json.py).
_ENCODE = msgspec.json.Encoder().encode


def _dumps(obj: dict[str, Any]) -> str:
    return _ENCODE(obj).decode()


def _message(body: str, round_no: int | None, seq: int) -> str:
    """The message an input row published as itself stands for: its body with ``round`` (if
    any) and ``table_seq`` added, as ``_dumps({**body, "round": round_no, "table_seq": seq})``
    writes them (tests/daemon/test_journal_json.py)."""
    added = f'"table_seq":{seq}}}' if round_no is None else \
        f'"round":{round_no},"table_seq":{seq}}}'
    return body[:-1] + ("," if body != "{}" else "") + added


def check_number(topic: str, seq: int) -> int:
    """``seq`` if the contract allows it (``0 … MAX_SEQ``, tabled.contract.limits); a number
    beyond is never published: :class:`JournalError` (2^53 messages: centuries of play)."""
    if not 0 <= seq <= MAX_SEQ:
        raise JournalError(f"{topic}: table_seq {seq} is beyond the contract's {MAX_SEQ}")
    return seq


def encode_entry(entry: Entry, row_id: int, next_seq: dict[str, int], ts: str
                 ) -> tuple[tuple[object, ...], StoredOutput | None]:
    """``entry`` as the journal's row ``row_id`` (its columns up to ``hash``) and, if it is
    a message, that message as stored; ``next_seq`` (each topic's next number) moves on."""
    if isinstance(entry, OutputEntry):
        seq = check_number(entry.topic, next_seq[entry.topic])
        next_seq[entry.topic] = seq + 1
        body = _dumps({**entry.body, "table_seq": seq})
        return ((row_id, "output", entry.topic, seq, None, entry.round, ts, body),
                StoredOutput(row_id, entry.topic, seq, body))
    if isinstance(entry, InputEntry):
        body = _dumps(entry.body)
        if not entry.published:
            return (row_id, "input", None, None, entry.source, None, ts, body), None
        seq = check_number(_EVENT, next_seq[_EVENT])
        next_seq[_EVENT] = seq + 1
        return ((row_id, "input", _EVENT, seq, entry.source, entry.round, ts, body),
                StoredOutput(row_id, _EVENT, seq, _message(body, entry.round, seq)))
    return (row_id, "start", None, None, "daemon", None, ts, _dumps(entry.body)), None


def _row_hash(prev: bytes, row: Sequence[Any]) -> bytes:
    """The chain's hash of ``row``: SHA-256 of the previous row's hash, then of each value, in
    column order, after a 0x1f: its text in UTF-8, or a 0x00 byte for NULL."""
    text = "\x1f" + "\x1f".join(["\x00" if value is None else str(value) for value in row])
    return hashlib.sha256(prev + text.encode()).digest()


#: The journal table's columns, and the most rows one INSERT writes (well under SQLite's
#: limit of 32,766 parameters).
_COLUMNS: Final = 10
_INSERT_ROWS: Final = 100


@functools.cache
def _insert(rows: int) -> str:
    """One INSERT of ``rows`` rows: a write's rows in one statement (a statement per row cost
    a run of SQLite's program each on the commit path)."""
    row = "(" + ", ".join("?" * _COLUMNS) + ")"
    return "INSERT INTO journal VALUES " + ", ".join([row] * rows)


class Journal:
    """One table's journal file. Not thread-safe: one event loop owns it.

    ``create=True`` (the daemon): open for writing, creating the file if need be, holding the
    writer's lock until :meth:`close` (or the process's end); :class:`JournalInUse` if another
    process holds it. ``create=False``: open an existing journal to read it, without the lock;
    writes through it fail."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        self.read_only = not create
        self._release_lock: weakref.finalize[[int], Journal] | None = None
        if self.read_only and not self.path.exists():
            raise JournalError(f"{self.path}: no journal here")
        try:
            if not self.read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                # Before SQLite touches anything: a second writer must change nothing at all.
                self._release_lock = weakref.finalize(self, os.close, _lock(self.path))
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # never world-readable
                new = os.fstat(fd).st_size == 0
                os.close(fd)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            if self.read_only:
                self._db.execute("PRAGMA query_only=ON")
            else:
                if new:  # before anything is written: the size is the file's for good
                    self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
                columns = {row[1] for row in self._db.execute("PRAGMA table_info(journal)")}
                if "acked" not in columns:  # a journal from before the column
                    self._db.execute("ALTER TABLE journal ADD COLUMN acked INTEGER")
                self._migrate()
                self._db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                                 (_ID_KEY, secrets.token_hex(16)))
        except (sqlite3.Error, OSError) as exc:
            self._unlock()
            raise JournalError(f"{self.path}: cannot open: {exc}") from exc
        self.events = EventLog(self)
        self.delivery = DeliveryLog(self)
        self.audit = AuditLog(self)
        self._acked_to_record: int | None = None
        #: commits since the checkpointer last copied the WAL, and whether a failed write or a
        #: probe asks for a copy at its next look (it reads and resets both)
        self._commits_since_checkpoint = 0
        self._checkpoint_soon = False
        self._checkpointer: tuple[threading.Thread, threading.Event] | None = None
        self._last_hash, self._last_id = GENESIS, 0
        self._next_seq: dict[str, int] = {}
        #: SQLite's ``data_version`` when the positions were read (:meth:`_tail_moved`)
        self._data_version = 0
        #: The last write, as the file holds it: the id before its first row, and its outputs
        #: (what the publisher asks for next, right after the commit: no read of the file).
        self._last_write: tuple[int, list[StoredOutput]] | None = None
        #: A write failed since the positions were read: read them again before writing.
        self._stale = False
        #: How often the positions were read again from the file after a failure or a move.
        self.resyncs = 0
        #: The last row id whose streams' numbers :meth:`high_water_upto` found, and those.
        self._marks: tuple[int, dict[str, int]] | None = None
        try:
            self._read_positions()
            #: The file's identity (None: a journal no writer has opened since identities
            #: were made, read without writing).
            self.id: str | None = self._identity()
        except JournalError:
            self._db.close()
            self._unlock()
            raise

    # -- writing --------------------------------------------------------------------------------

    def _note_acked(self, acked_id: int) -> None:
        """The broker acknowledged every output up to ``acked_id``: recorded with the next
        write's transaction (no commit of its own), so that a crash re-publishes little.

        It goes in the ``acked`` column of that write's last row, outside the hash chain (it
        is delivery bookkeeping, not the record). Not in ``meta``: another table is another
        page in every commit's WAL (docs/journal.md)."""
        self._acked_to_record = acked_id

    def _save_acked(self) -> None:
        """Make the noted position durable now, with a commit of its own, if no write has
        carried it yet (the publisher calls this when idle and when the connection ends)."""
        pending = self._acked_to_record
        if pending is None:
            return
        self._set_meta(_ACKED_KEY, str(pending))
        if self._acked_to_record == pending:
            self._acked_to_record = None

    def _write(self, entries: Sequence[Entry], ts: str) -> list[StoredOutput]:
        """Make ``entries`` durable in one transaction; return the outputs as stored.

        Raises :class:`JournalError` and leaves the journal unchanged if the commit fails.
        """
        if not entries:
            return []
        acked = self._acked_to_record
        db = self._db
        stored: list[StoredOutput] = []
        try:
            if self._stale or db.in_transaction:
                self._settle()
            db.execute("BEGIN IMMEDIATE")
            version = self._data_version_now()
            moved = None if version == self._data_version else self._tail_moved(version)
            if moved is not None:  # the file was written behind this journal's back
                self._read_positions()
                self.resyncs += 1
                raise _Moved(moved)
            prev, last_id = self._last_hash, self._last_id
            next_seq = dict(self._next_seq)
            values: list[object] = []  # every row's columns, in order
            for entry in entries:
                last_id += 1
                row, message = encode_entry(entry, last_id, next_seq, ts)
                if message is not None:
                    stored.append(message)
                prev = _row_hash(prev, row)
                values += row
                values += (prev, None)
            values[-1] = acked  # the last row carries the acknowledged position
            for first in range(0, len(values), _INSERT_ROWS * _COLUMNS):
                chunk = values[first:first + _INSERT_ROWS * _COLUMNS]
                db.execute(_insert(len(chunk) // _COLUMNS), chunk)
            db.execute("COMMIT")
        except _Moved as moved:
            self._rollback()
            # The caller's state may be behind the file too (a rules state without those
            # rows): it is told, as for any failure, and the next write goes on from the file.
            raise JournalError(f"{self.path}: written behind this journal's back: {moved}; "
                               "positions read again from the file") from None
        except (sqlite3.Error, JournalError) as exc:
            self._stale = True  # whatever the file now holds, read it before the next write
            self._checkpoint_soon = True  # a full disk: let the WAL start again (below)
            self._last_write = None
            self._rollback()
            if isinstance(exc, JournalError):
                raise
            raise JournalError(f"{self.path}: write failed: {exc}") from exc
        self._last_write = (self._last_id, stored)
        self._commits_since_checkpoint += 1
        self._last_hash, self._last_id = prev, last_id
        self._next_seq = next_seq
        if acked is not None and self._acked_to_record == acked:
            self._acked_to_record = None
        return stored

    def _set_meta(self, key: str, value: str) -> None:
        try:
            self._end_transaction()
            self._db.execute(_SET_META, (key, value))
        except sqlite3.Error as exc:
            self._checkpoint_soon = True
            raise JournalError(f"{self.path}: meta write failed: {exc}") from exc
        self._commits_since_checkpoint += 1

    def _get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return default if not rows else str(rows[0][0])

    def _probe(self, nbytes: int = PROBE_BYTES) -> None:
        """A durable write of ``nbytes`` (and the probe's position in ``meta``), to learn
        whether the disk takes writes, after reading the positions from the file if a write
        failed (so that the next write can go on).

        After a failure, a one-row write is not enough: a full disk can take it and still
        refuse the next commit (the fault campaign saw the daemon go online and degrade again
        50 ms later); so the probe of a failing disk writes :data:`PROBE_BYTES` in one
        transaction, and then removes them, leaving the pages free for the commits that
        follow, and has the WAL copied at the checkpointer's next look. The health check of a
        quiet, healthy journal writes ``nbytes=0``: its one row tells a dead disk, without
        writing a busy commit's worth to the disk every few seconds."""
        failed = True
        try:
            self._settle()
            self._db.execute("BEGIN IMMEDIATE")
            if nbytes:
                self._db.execute("CREATE TABLE IF NOT EXISTS probe (data BLOB)")
                self._db.execute("INSERT INTO probe VALUES (zeroblob(?))", (nbytes,))
            self._db.execute(_SET_META, (_PROBE_KEY, str(self._last_id)))
            self._db.execute("COMMIT")
            self._commits_since_checkpoint += 1
            if nbytes:
                self._db.execute("DELETE FROM probe")
                self._commits_since_checkpoint += 1
            failed = False
        except sqlite3.Error as exc:
            self._rollback()
            raise JournalError(f"{self.path}: probe failed: {exc}") from exc
        finally:
            if nbytes or failed:  # its pages (or a full disk's WAL): copied at once
                self._checkpoint_soon = True

    # -- reading --------------------------------------------------------------------------------

    @property
    def last_id(self) -> int:
        return self._last_id

    def next_seq(self, topic: str) -> int:
        return self._next_seq[topic]

    @property
    def version(self) -> int:
        """The file format version (:data:`SCHEMA_VERSION` once opened for writing)."""
        rows = self._read("PRAGMA user_version")
        return int(rows[0][0]) or 1

    def inputs(self, after_id: int = 0, before_id: int | None = None) -> Iterator[StoredInput]:
        """Every accepted input in order (after ``after_id``, before ``before_id``): what the
        rules core is rebuilt from."""
        try:
            cur = self._db.execute(
                "SELECT id, source, body FROM journal WHERE kind = 'input' AND id > ? "
                "AND id < ? ORDER BY id",
                (after_id, before_id if before_id is not None else 1 << 62))
            for row_id, source, body in cur:
                yield StoredInput(row_id, source, json.loads(body))
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: read failed: {exc}") from exc

    def _has_input(self, after_id: int, key: str, value: str) -> bool:
        """Whether an input after ``after_id`` has ``key`` set to the string ``value`` (did a
        write that reported failure reach the file all the same?)."""
        needle = _dumps({key: value})[1:-1]  # "key":"value", as the bodies are written
        rows = self._read("SELECT 1 FROM journal WHERE kind = 'input' AND id > ? AND "
                          "instr(body, ?) > 0 LIMIT 1", (after_id, needle))
        return bool(rows)

    def _outputs_after(self, after_id: int, limit: int = 500) -> list[StoredOutput]:
        """Outputs with id > ``after_id``, oldest first (store-and-forward reads these).

        Right after a write, asked for what follows a row at or after the one before that
        write (the publisher, caught up, from inside the commit), the answer is that write's
        outputs, as stored: every row after it is that write's (this process holds the
        writer's lock, and a write finds rows written behind its back), so the file is not
        read again for them."""
        last_write = self._last_write
        if last_write is not None and after_id >= last_write[0]:
            return [row for row in last_write[1] if row.id > after_id][:limit]
        rows = self._read(
            "SELECT id, kind, topic, stream_seq, round, body FROM journal WHERE "
            "topic IS NOT NULL AND id > ? ORDER BY id LIMIT ?", (after_id, limit))
        return [StoredOutput(row_id, topic, seq,
                             body if kind == "output" else _message(body, round_no, seq))
                for row_id, kind, topic, seq, round_no, body in rows]

    def _count_outputs_after(self, after_id: int) -> int:
        """How many outputs have an id above ``after_id`` (not yet acknowledged, if it is the
        acknowledged position)."""
        rows = self._read("SELECT COUNT(*) FROM journal WHERE topic IS NOT NULL AND id > ?",
                          (after_id,))
        return int(rows[0][0])

    def _identity(self) -> str | None:
        """The file's id from ``meta``; a reader of a file without one (or without ``meta``:
        nothing reads it from a writer before identities) finds None."""
        try:
            return self._get_meta(_ID_KEY)
        except JournalError:
            if self.read_only:
                return None
            raise

    def high_water(self) -> dict[str, int]:
        """Each durable stream's last number so far (-1: none yet)."""
        return {topic: self._next_seq[topic] - 1 for topic in DURABLE_TOPICS}

    def high_water_upto(self, row_id: int) -> dict[str, int]:
        """Each durable stream's highest number among the rows up to ``row_id`` (-1: none),
        e.g. what the broker acknowledged. Remembered between calls: a later position reads
        only the rows after the one before (a range of the primary key)."""
        known = self._marks
        if known is not None and known[0] <= row_id:
            since, marks = known[0], dict(known[1])
            rows = self._read("SELECT topic, MAX(stream_seq) FROM journal WHERE id > ? AND "
                              "id <= ? AND topic IS NOT NULL GROUP BY topic", (since, row_id))
            for topic, number in rows:
                marks[topic] = max(marks.get(topic, -1), int(number))
        else:
            marks = {topic: self._number_upto(topic, row_id) for topic in DURABLE_TOPICS}
        self._marks = (row_id, marks)
        return dict(marks)

    def _number_upto(self, topic: str, row_id: int) -> int:
        """The last number of ``topic`` among the rows up to ``row_id`` (-1: none): the
        indexed streams' from their index (``+id``: not a scan of the primary key), the
        unindexed one's from its last row at or before ``row_id``."""
        if topic == UNINDEXED_TOPIC:
            rows = self._read("SELECT stream_seq FROM journal WHERE topic = ? AND id <= ? "
                              "ORDER BY id DESC LIMIT 1", (topic, row_id))
        else:
            rows = self._read("SELECT stream_seq FROM journal WHERE kind = 'output' AND "
                              f"topic = ? AND topic <> '{UNINDEXED_TOPIC}' AND +id <= ? "
                              "ORDER BY stream_seq DESC LIMIT 1", (topic, row_id))
        return -1 if not rows else int(rows[0][0])

    def published_range(self, topic: str, first: int, last: int,
                        limit: int) -> list[StoredOutput]:
        """The messages of ``topic``'s stream numbered ``first`` to ``last``, in order, at most
        ``limit`` of them, each the text that was published (the same as
        :meth:`_outputs_after` gives the publisher): only rows that are published messages,
        so never a withheld card. A number the journal does not have is simply absent.

        The ``event`` stream's numbers have no index (:data:`UNINDEXED_TOPIC`, kept off the
        commit path): its numbers rise with the row ids, so the first row is found by a binary
        search over the primary key, a few short indexed reads, and the rest are read from
        there in id order."""
        if limit <= 0 or last < first or topic not in DURABLE_TOPICS:
            return []
        if topic != UNINDEXED_TOPIC:
            rows = self._read(
                "SELECT id, kind, stream_seq, round, body FROM journal WHERE kind = 'output' "
                f"AND topic = ? AND topic <> '{UNINDEXED_TOPIC}' AND stream_seq >= ? AND "
                "stream_seq <= ? ORDER BY stream_seq LIMIT ?", (topic, first, last, limit))
        else:
            start = self._first_row_numbered(topic, first)
            # the stream's numbers run 0, 1, 2 ... (verify checks it): [first, last] is at
            # most the next last - first + 1 rows of the stream
            rows = self._read(
                "SELECT id, kind, stream_seq, round, body FROM journal WHERE id >= ? AND "
                "topic = ? ORDER BY id LIMIT ?", (start, topic, min(limit, last - first + 1)))
        return [StoredOutput(row_id, topic, seq,
                             body if kind == "output" else _message(body, round_no, seq))
                for row_id, kind, seq, round_no, body in rows if first <= seq <= last]

    def _first_row_numbered(self, topic: str, number: int) -> int:
        """The smallest row id from which ``topic``'s next row has a number of at least
        ``number`` (past the last row if none has): a binary search over the primary key,
        each probe the stream's first row at or after an id."""
        low, high = 1, self._last_id + 1
        while low < high:
            middle = (low + high) // 2
            rows = self._read("SELECT id, stream_seq FROM journal WHERE id >= ? AND id < ? AND "
                              "topic = ? ORDER BY id LIMIT 1", (middle, high, topic))
            if not rows or rows[0][1] >= number:
                high = middle
            else:
                low = int(rows[0][0]) + 1
        return low

    def _acked_id(self) -> int:
        """Every output with an id up to this one was acknowledged by the broker: the later
        of the position the publisher persists in ``meta`` and the last one that rode on a
        write (a row recording position P has an id above P, so only rows after the persisted
        position need looking at)."""
        persisted = int(self._get_meta(_ACKED_KEY, "0") or 0)
        rows = self._read("SELECT MAX(acked) FROM journal WHERE id > ?", (persisted,))
        return max(persisted, int(rows[0][0] or 0))

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(f"{self.path}{suffix}").st_size
        return total

    def head(self) -> Head:
        """The journal's head as the file holds it."""
        last_hash, last_id = self._tail()
        return Head(last_id, last_hash.hex())

    def verify(self, expect: Head | None = None) -> VerifyResult:
        """Recompute the hash chain from the first row, and check that each stream's numbers
        run 0, 1, 2 ... in journal order; report the first row that breaks either.

        A chain intact to its last row can still have lost its tail (rows deleted from the
        end leave a shorter, valid chain). Two things catch that: the journal's own positions
        (the broker's acknowledged position, the last probe) may not lie beyond its last row;
        and ``expect``, a head a witness holds (the floor's copy of the birth record's
        ``journal``), must be a row of this chain: that row, with that hash."""
        prev = GENESIS
        rows = 0
        witnessed: bytes | None = None
        due: dict[str, int] = {}  # each stream's next number
        chain = self._rows("SELECT id, kind, topic, stream_seq, source, round, ts, body, hash "
                           "FROM journal ORDER BY id")
        for expected_id, (*row, stored_hash) in enumerate(chain, 1):
            rows = expected_id
            if row[0] != expected_id:
                return VerifyResult(False, rows, row[0], f"row {expected_id} is missing")
            prev = _row_hash(prev, row)
            if prev != stored_hash:
                return VerifyResult(False, rows, row[0], "hash does not match the row")
            if row[2] is not None:  # every stream numbered 0, 1, 2 ... in journal order
                topic, number, wanted = row[2], row[3], due.get(row[2], 0)
                if number != wanted:
                    return VerifyResult(False, rows, row[0],
                                        f"its {topic} number is {number}, {wanted} was due "
                                        "(a number given twice or skipped)")
                due[topic] = number + 1
            if expect is not None and expected_id == expect.rows:
                witnessed = prev
        head = prev.hex() if rows else ""
        for name, position in self._positions():
            if position > rows:
                return VerifyResult(False, rows, rows + 1,
                                    f"the tail was cut: the journal's {name} is record "
                                    f"{position}, its last record is {rows}", head)
        if expect is not None:
            if expect.rows == 0:  # a hash alone: the journal's head
                witnessed = prev if rows else None
                expect = Head(rows, expect.hash)
            if expect.rows > rows:
                return VerifyResult(False, rows, rows + 1,
                                    f"the tail was cut: the witness holds record "
                                    f"{expect.rows}, the last record is {rows}", head)
            if witnessed is None or witnessed.hex() != expect.hash:
                return VerifyResult(False, rows, expect.rows,
                                    f"record {expect.rows} is not the one the witness holds "
                                    f"(its hash differs)", head)
        return VerifyResult(True, rows, head=head)

    def _positions(self) -> list[tuple[str, int]]:
        """The record positions the journal itself wrote down besides its rows."""
        out = []
        for name, key in (("acknowledged position", _ACKED_KEY), ("last probe", _PROBE_KEY)):
            value = self._get_meta(key)
            if value is not None and value.isdigit():
                out.append((name, int(value)))
        rows = self._read("SELECT MAX(acked) FROM journal")
        if rows and rows[0][0] is not None:
            out.append(("acknowledged position", int(rows[0][0])))
        return out

    def recall(self, last: int = 10, *, round_no: int | None = None) -> list[RecalledRound]:
        """The last ``last`` rounds that have an outcome — or, with ``round_no``, that round
        alone — each with the inputs that led to it (game recall). Inputs after the last
        outcome (a round in progress) are not shown."""
        if round_no is not None:
            outcome_rows = self._read(
                "SELECT id, round, body FROM journal WHERE kind = 'output' AND "
                "topic = 'outcome' AND round = ? ORDER BY id", (round_no,))
        else:
            outcome_rows = self._read(
                "SELECT id, round, body FROM journal WHERE kind = 'output' AND "
                "topic = 'outcome' ORDER BY id DESC LIMIT ?", (last,))
            outcome_rows.reverse()
        if not outcome_rows:
            return []
        first_id = outcome_rows[0][0]
        before = self._read(
            "SELECT MAX(id) FROM journal WHERE kind = 'output' AND topic = 'outcome' AND id < ?",
            (first_id,))[0][0] or 0
        inputs = list(self.inputs(after_id=before, before_id=outcome_rows[-1][0]))
        rounds = []
        start = before
        for row_id, number, body in outcome_rows:
            rec = RecalledRound(round=number, outcome=json.loads(body))
            rec.inputs = [i for i in inputs if start < i.id < row_id]
            rounds.append(rec)
            start = row_id
        return rounds

    def start_checkpointer(self, interval: float = T_CHECKPOINT, *,
                           commits: int = CHECKPOINT_COMMITS,
                           longest: float = T_CHECKPOINT_MAX) -> None:
        """Move WAL checkpoints off the commit path: a thread with its own connection copies
        the WAL into the database once ``commits`` commits are in it, or ``longest`` seconds
        after the last copy if any is (it looks every ``interval`` seconds); and at once, at its
        next look, after a write that failed or a probe of the disk, so that a WAL that reached
        a full disk's last block starts again instead of needing more space. Inline, SQLite
        checkpoints inside a commit, which then waits for the copy and a second fsync. Why
        every ``commits`` commits, neither more often nor less: docs/journal.md."""
        if self._checkpointer is not None:
            return
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        stop = threading.Event()

        def run() -> None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            last = time.monotonic()
            try:
                while not stop.wait(interval):
                    due = self._commits_since_checkpoint
                    if (self._checkpoint_soon or due >= commits
                            or (due and time.monotonic() - last >= longest)):
                        self._commits_since_checkpoint = 0
                        self._checkpoint_soon = False
                        last = time.monotonic()
                        with contextlib.suppress(sqlite3.Error):  # a failing disk: commits say so
                            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                db.close()

        thread = threading.Thread(target=run, name="journal-checkpoint", daemon=True)
        self._checkpointer = (thread, stop)
        thread.start()

    def close(self) -> None:
        if self._checkpointer is not None:
            thread, stop = self._checkpointer
            stop.set()
            thread.join(timeout=5)
            self._checkpointer = None
        self._db.close()
        self._unlock()  # last: the next writer finds the file closed

    # -- internals ------------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Bring the file to :data:`SCHEMA_VERSION`, one step per transaction; refuse a file
        written by a newer release (its format is not this code's to guess)."""
        found = int(self._db.execute("PRAGMA user_version").fetchone()[0]) or 1
        if found > SCHEMA_VERSION:
            raise JournalError(f"{self.path}: written by a newer tabled (journal format "
                               f"{found}; this one knows up to {SCHEMA_VERSION})")
        for version in range(found, SCHEMA_VERSION):
            self._db.execute("BEGIN IMMEDIATE")
            for statement in MIGRATIONS[version]:
                self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version={version + 1}")
            self._db.execute("COMMIT")

    def _rows(self, sql: str) -> Iterator[tuple[Any, ...]]:
        """A query's rows one at a time (a journal may not fit in memory); a failing disk is a
        JournalError."""
        try:
            yield from self._db.execute(sql)
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: read failed: {exc}") from exc

    def _read(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """A query's rows; a failing disk is a JournalError like a failing write."""
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: read failed: {exc}") from exc

    def _tail(self) -> tuple[bytes, int]:
        rows = self._read("SELECT hash, id FROM journal ORDER BY id DESC LIMIT 1")
        return (GENESIS, 0) if not rows else (bytes(rows[0][0]), int(rows[0][1]))

    def _read_positions(self) -> None:
        """The chain's position and each topic's next number, as the file holds them."""
        self._last_write = None
        # before the rows: a commit by another connection after this read changes it
        self._data_version = self._data_version_now()
        self._last_hash, self._last_id = self._tail()
        self._next_seq = {topic: self._max_seq(topic) + 1 for topic in DURABLE_TOPICS}

    def _settle(self) -> None:
        """Before a write after a failure: no transaction left open by a failed rollback, and
        the positions read from the file (raises JournalError if it cannot be read)."""
        self._end_transaction()
        if self._stale:
            self._read_positions()
            self._stale = False
            self.resyncs += 1

    def _end_transaction(self) -> None:
        if self._db.in_transaction:  # a ROLLBACK that failed with the disk: try it again
            self._db.execute("ROLLBACK")

    def _data_version_now(self) -> int:
        rows = self._read("PRAGMA data_version")
        return int(rows[0][0])

    def _tail_moved(self, version: int) -> str | None:
        """Inside a write's transaction, when SQLite's ``data_version`` is now ``version``, not
        the value read with the positions: how the file's last row differs from this journal's
        last write, or None: the file is the truth, memory a cache of it.

        ``data_version`` changes when another connection has committed (never for this
        connection's own commits): while it holds the value read with the positions, no one
        else wrote and the last row is this journal's last write, without reading it (half the
        cost of the indexed read of the last row, on every commit; the caller compares).
        Otherwise (a writer behind the lock's back, or only a checkpoint that restarted the
        WAL, which also changes it) the last row is read and compared."""
        last_hash, last_id = self._tail()
        if (last_id, last_hash) == (self._last_id, self._last_hash):
            self._data_version = version
            return None
        return f"its last record is {last_id}, this journal's last write was {self._last_id}"

    def _unlock(self) -> None:
        if self._release_lock is not None:
            self._release_lock()

    def _max_seq(self, topic: str) -> int:
        """The last number ``topic``'s stream gave (-1: none yet). The unindexed topic's is
        its last row's, read back from the journal's end; the others' come from their index
        (the query names the index's condition, so that SQLite may use it: a journal of the
        formats before 3 has an index of every stream, which the condition also fits)."""
        if topic == UNINDEXED_TOPIC:  # an output, or an input published as itself
            rows = self._read("SELECT stream_seq FROM journal WHERE topic = ? "
                              "ORDER BY id DESC LIMIT 1", (topic,))
        else:
            rows = self._read("SELECT MAX(stream_seq) FROM journal WHERE kind = 'output' AND "
                              f"topic = ? AND topic <> '{UNINDEXED_TOPIC}'", (topic,))
        return -1 if not rows or rows[0][0] is None else int(rows[0][0])

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # no transaction was open if BEGIN failed
            self._db.execute("ROLLBACK")


# -- each writer's part of the journal --------------------------------------------------------


class EventLog:
    """The table runtime's part: each accepted event with everything it caused, in one
    transaction, and the inputs the rules state is rebuilt from."""

    __slots__ = ("_journal",)

    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    @property
    def owner(self) -> Journal:
        """The journal this is part of (for whoever owns it: to verify, recall, close)."""
        return self._journal

    def write(self, entries: Sequence[InputEntry | OutputEntry], ts: str) -> list[StoredOutput]:
        """Make ``entries`` durable in one transaction (:class:`JournalError` if not, the
        journal unchanged); the outputs as stored, each with its ``table_seq``."""
        return self._journal._write(entries, ts)

    def inputs(self, after_id: int = 0) -> Iterator[StoredInput]:
        return self._journal.inputs(after_id)

    def outputs_after(self, after_id: int, limit: int = 500) -> list[StoredOutput]:
        """What was written to publish, after ``after_id``, oldest first."""
        return self._journal._outputs_after(after_id, limit)

    @property
    def last_id(self) -> int:
        return self._journal.last_id

    def probe(self) -> None:
        """A durable write as large as a busy commit: does a failing disk take writes again?"""
        self._journal._probe()

    def check(self) -> None:
        """A one-row durable write: does a healthy, quiet journal's disk still take writes?"""
        self._journal._probe(0)


class DeliveryLog:
    """The publisher's part: the durable messages in order, how far the broker acknowledged
    them, and the last number of each non-durable sequence (``status``, ``device``, ...)."""

    __slots__ = ("_journal",)

    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    @property
    def last_id(self) -> int:
        return self._journal.last_id

    def outputs_after(self, after_id: int, limit: int = 500) -> list[StoredOutput]:
        return self._journal._outputs_after(after_id, limit)

    def count_outputs_after(self, after_id: int) -> int:
        return self._journal._count_outputs_after(after_id)

    def acked_id(self) -> int:
        """Every output up to this id was acknowledged by the broker."""
        return self._journal._acked_id()

    def note_acked(self, acked_id: int) -> None:
        """The broker acknowledged up to ``acked_id``: recorded with the next event's
        transaction (no commit of its own)."""
        self._journal._note_acked(acked_id)

    def save_acked(self) -> None:
        """Make the noted position durable now, if no event's transaction carried it."""
        self._journal._save_acked()

    def last_number(self, kind: str) -> int:
        """The last number sequence ``kind`` gave (-1: none yet)."""
        return int(self._journal._get_meta(f"seq:{kind}", "-1") or -1)

    def save_number(self, kind: str, number: int) -> None:
        """Record that sequence ``kind`` gave ``number`` (a commit of its own)."""
        self._journal._set_meta(f"seq:{kind}", str(number))


class AuditLog:
    """Start-up's and the command gate's part: each daemon start with its declared options,
    each refused command, and the nonces of the commands the journal holds."""

    __slots__ = ("_journal",)

    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    def record_start(self, body: dict[str, Any], ts: str) -> None:
        self._journal._write([StartEntry(body)], ts)

    def record_rejection(self, body: dict[str, Any], ts: str) -> None:
        """A refused command, published on ``…/fault`` like the journal's other faults."""
        self._journal._write([OutputEntry("fault", body)], ts)

    def commands(self) -> Iterator[StoredInput]:
        """Every input that came from a console (a replay across a restart must be refused)."""
        return (stored for stored in self._journal.inputs()
                if stored.source.startswith("console:"))

    def has_input(self, after_id: int, key: str, value: str) -> bool:
        """Whether an input after ``after_id`` has ``key`` set to the string ``value``."""
        return self._journal._has_input(after_id, key, value)

    @property
    def last_id(self) -> int:
        return self._journal.last_id
