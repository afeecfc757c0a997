"""``tabled integrity``: the integrity monitors over a recorded event stream, at full speed.

    tabled integrity --game G [--option KEY=VALUE ...] [FILE|-]

Reads normalized events (JSON Lines) as ``tabled replay`` does (through
:func:`tabled.contract.events.read_events`, the rules core making the outcomes), feeds them and
the outcomes to one table's :class:`~.table.TableMonitors` in stream order (the shoes of the
stream make the ``slug`` index; an event's ``ts``, when it has one, is its time for ``pace``),
and writes one JSON line per finding: ``{"monitor", "round", "severity", "detail"}``. Exit 0
whether or not there were findings; a malformed line is reported on standard error as
``line N: reason`` and the command exits 2 after the findings before it, as replay does. The
rules core's notices go to standard error as replay writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TextIO

from tabled.contract.events import LineError, read_events
from tabled.contract.outcome import Game, Outcome, OutcomeRecord
from tabled.games.options import GameOptions
from tabled.games.registry import decode_outcome, event_checks, make_table
from tabled.pit.integrity.calibration import DEFAULT_SETTINGS, Settings
from tabled.pit.integrity.findings import Finding
from tabled.pit.integrity.table import TableMonitors, slug_index

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def record_of(outcome: Outcome) -> OutcomeRecord:
    """The outcome's record, typed as the pit reads it from a table (``decode_outcome``), for
    the monitors."""
    return decode_outcome(outcome.to_json())


def seconds(ts: str | None) -> float | None:
    """An RFC 3339 time as seconds since the epoch, or None (absent or unreadable)."""
    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def findings(game: Game, options: GameOptions | Mapping[str, str] | None,
             lines: Iterable[str], settings: Settings = DEFAULT_SETTINGS,
             err: TextIO | None = None) -> Iterable[Finding]:
    """Every finding over ``lines``, in order (raises :class:`LineError` at a malformed line,
    after yielding the findings before it). Notices go to ``err``."""
    table = make_table(game, options)
    monitors = TableMonitors(game, table.options, settings=settings,
                             slugs=slug_index(settings))
    feed = table.feed
    for lineno, event in read_events(lines, event_checks(game)):  # malformed as for replay
        at = seconds(event.meta.ts)
        yield from monitors.event(event, at)
        for output in feed(event):
            if isinstance(output, Outcome):
                yield from monitors.outcome(record_of(output), at)
            elif err is not None:
                article = f" ({output.article})" if output.article else ""
                err.write(f"line {lineno}: notice {output.code}: {output.message}{article}\n")


def write_findings(game: Game, options: GameOptions | Mapping[str, str] | None,
                   lines: Iterable[str], out: TextIO, err: TextIO,
                   settings: Settings = DEFAULT_SETTINGS) -> int:
    """``tabled integrity``: findings to ``out`` as JSON lines; the exit status."""
    write = out.write
    try:
        for found in findings(game, options, lines, settings, err):
            if not found.cleared:
                write(json.dumps(found.to_json(), separators=(",", ":"), ensure_ascii=False))
                write("\n")
    except LineError as exc:
        out.flush()
        err.write(f"{exc}\n")
        return EXIT_BAD_INPUT
    out.flush()
    return EXIT_OK
