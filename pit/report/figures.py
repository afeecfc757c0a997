"""A report's figures, from the record only: per table and for the floor, over a period.

Owns what a shift or day report counts and how: rounds, voids by article, faults by code,
downtime (the minutes each table's retained ``status`` said ``offline`` or ``degraded``), the
alerts opened and how long each waited for its acknowledgement (the alerts' ``acked_at``, which
the audit trail records), the integrity findings (``integrity:*`` alerts), and each game's
outcome frequencies against its exact odds (``tabled odds``) with Wilson score intervals.
Which outcomes a game counts, and their null probabilities, are the game's own: its integrity
part's ``rates``/``observe`` and the registry's ``odds`` — the same classes the frequency
monitor watches. Never the live model: a report reads the store, so a report of a past shift
says the same whenever it is made.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from statistics import NormalDist, median
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from tabled.games import registry
from tabled.games.options import GameOptions
from tabled.pit.integrity.calibration import integrity_part
from tabled.pit.store import Alert, StoredMessage
from tabled.pit.watch import options_of

#: The confidence of every interval a report gives.
CONFIDENCE = 0.95
#: The normal quantile of :data:`CONFIDENCE` (two-sided).
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
#: A period longer than this counts incidents per day, not per hour (seconds).
HOURLY_UP_TO = 72 * 3600
#: The states of a table's ``status`` that count as downtime.
DOWN_STATES = ("offline", "degraded")


class ReportRecord(Protocol):
    """The record's queries a report reads (a :class:`~tabled.pit.store.Store` is one)."""

    async def messages_between(self, since: float, until: float, *, site: str | None = None,
                               table: str | None = None,
                               streams: Sequence[str] = ("outcome", "fault", "status"),
                               limit: int = 1_000_000) -> list[StoredMessage]: ...

    async def statuses_before(self, at: float) -> list[StoredMessage]: ...

    async def alerts_opened(self, since: float, until: float, *, site: str | None = None,
                            table: str | None = None,
                            limit: int = 1_000_000) -> list[Alert]: ...


def wilson(count: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``count / n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = count / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if count == 0 else max(0.0, centre - half)
    high = 1.0 if count == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True, slots=True)
class Frequency:
    """How often one outcome class occurred: ``count`` of ``n`` observations, the exact
    probability ``expected``, and the Wilson interval ``(low, high)`` of the observed rate."""

    name: str
    spoken: str
    count: int
    n: int
    expected: float
    low: float
    high: float

    @property
    def observed(self) -> float | None:
        return self.count / self.n if self.n else None

    @property
    def within(self) -> bool:
        """The exact probability lies inside the interval."""
        return self.low <= self.expected <= self.high


@dataclass(frozen=True, slots=True)
class FrequencyTable:
    """One game's frequencies under one set of options (one rate group: a hand, a roll)."""

    game: str
    title: str
    observation: str
    rows: tuple[Frequency, ...]

    @property
    def n(self) -> int:
        return self.rows[0].n if self.rows else 0


@dataclass(frozen=True, slots=True)
class Finding:
    """An integrity finding of the period (an ``integrity:*`` alert)."""

    site: str
    table: str
    kind: str
    subject: str
    severity: str
    message: str
    opened_at: float


@dataclass
class Section:
    """One table's figures (``table`` None: the floor's, every table's summed)."""

    site: str | None
    table: str | None
    game: str | None = None
    rounds: int = 0
    complete: int = 0
    voids: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    offline: float = 0.0
    degraded: float = 0.0
    alerts: Counter[str] = field(default_factory=Counter)
    severities: Counter[str] = field(default_factory=Counter)
    ack_waits: list[float] = field(default_factory=list)
    unacknowledged: int = 0
    #: the incidents the period's alerts belong to (an incident groups a void and its fault,
    #: repeats of one fault, a device lost and found: pit/alerts.py)
    incident_ids: set[int] = field(default_factory=set)
    frequencies: list[FrequencyTable] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "" if self.table is None else f"{self.site}/{self.table}"

    @property
    def void_count(self) -> int:
        return sum(self.voids.values())

    @property
    def fault_count(self) -> int:
        return sum(self.faults.values())

    @property
    def alert_count(self) -> int:
        return sum(self.alerts.values())

    @property
    def incident_count(self) -> int:
        return len(self.incident_ids)

    @property
    def ack_median(self) -> float | None:
        return median(self.ack_waits) if self.ack_waits else None

    @property
    def ack_max(self) -> float | None:
        return max(self.ack_waits) if self.ack_waits else None


@dataclass
class Report:
    """A period's report: each table's section, the floor's, and the alerts per hour (or per
    day, for a period over :data:`HOURLY_UP_TO`) as ``(start, count)``."""

    since: float
    until: float
    made_at: float
    timezone: str
    tables: list[Section]
    floor: Section
    incidents: list[tuple[float, int]]
    bucket: int
    scope: str | None = None

    def local(self, t: float) -> datetime:
        return datetime.fromtimestamp(t, ZoneInfo(self.timezone))


async def gather(record: ReportRecord, since: float, until: float, *, made_at: float,
                 timezone: str = "UTC", site: str | None = None,
                 table: str | None = None) -> Report:
    """The report of ``[since, until)`` (one table's, or the floor's) from the record."""
    messages = await record.messages_between(since, until, site=site, table=table)
    before = [m for m in await record.statuses_before(since)
              if (site is None or m.site == site) and (table is None or m.table == table)]
    alerts = await record.alerts_opened(since, until, site=site, table=table)
    # the counting and the exact odds take a moment: off the event loop the pit serves from
    report = await asyncio.to_thread(compute, messages, before, alerts, since, until,
                                     made_at=made_at, timezone=timezone)
    if table is not None:
        report.scope = f"{site}/{table}"
    return report


@cache
def _rates(game: str, options: GameOptions) -> tuple[tuple[str, Any, dict[str, float]], ...]:
    """Each rate group of a game with these options, with the exact probability of each rate
    (empty when the game declares no integrity part)."""
    part = integrity_part(game)
    if part is None:
        return ()
    probabilities = registry.odds(game, options).probabilities
    return tuple((group.observation, group,
                  {r.name: float(probabilities[r.name]) for r in group.rates})
                 for group in part.rates(options))


class _Tally:
    """The observations of one game under one set of options."""

    def __init__(self, game: str, options: GameOptions) -> None:
        self.game, self.options = game, options
        self.groups = _rates(game, options)
        self.counts = [Counter[int]() for _ in self.groups]
        self.n = [0 for _ in self.groups]

    def add(self, stored: StoredMessage) -> None:
        part = integrity_part(self.game)
        record = stored.outcome
        if part is None or record is None:
            return
        observed = part.observe(record)
        if observed is None:
            return
        for i, observations in enumerate(observed[:len(self.groups)]):
            for one in observations:
                self.n[i] += 1
                if isinstance(one, int):
                    self.counts[i][one] += 1
                else:
                    for j, hit in enumerate(one):
                        self.counts[i][j] += int(hit)

    def merge(self, other: _Tally) -> None:
        for i in range(len(self.groups)):
            self.counts[i].update(other.counts[i])
            self.n[i] += other.n[i]

    def tables(self) -> list[FrequencyTable]:
        out = []
        for (observation, group, expected), counts, n in zip(
                self.groups, self.counts, self.n, strict=True):
            if n == 0:
                continue  # nothing counted (void rounds only): no table of zeros
            rows = []
            for j, rate in enumerate(group.rates):
                low, high = wilson(counts[j], n)
                rows.append(Frequency(rate.name, rate.spoken, counts[j], n,
                                      expected[rate.name], low, high))
            out.append(FrequencyTable(self.game, registry.game(self.game).title, observation,
                                      tuple(rows)))
        return out


def _state(m: StoredMessage) -> str | None:
    state = m.payload.get("state")
    return state if isinstance(state, str) else None


def compute(messages: Iterable[StoredMessage], before: Iterable[StoredMessage],
            alerts: Iterable[Alert], since: float, until: float, *, made_at: float,
            timezone: str = "UTC") -> Report:
    """The report from what the record holds of the period: ``messages`` (outcome, fault and
    status, in arrival order), ``before`` (each table's last status before the period) and
    the ``alerts`` opened in it. Pure."""
    end = min(until, made_at)
    sections: dict[tuple[str, str], Section] = {}
    tallies: dict[tuple[str, str], dict[tuple[str, GameOptions], _Tally]] = {}
    options: dict[tuple[str, str], tuple[str, GameOptions]] = {}
    state: dict[tuple[str, str], tuple[str | None, float]] = {}

    def section(site: str, table: str) -> Section:
        return sections.setdefault((site, table), Section(site, table))

    def birth(key: tuple[str, str], m: StoredMessage) -> None:
        game = m.payload.get("game")
        if isinstance(game, str) and game in registry.game_names():
            options[key] = (game, options_of(game, m.payload.get("options")))

    def down(key: tuple[str, str], upto: float) -> None:
        was, at = state.get(key, (None, since))
        seconds = max(0.0, min(upto, end) - max(at, since))
        if was == "offline":
            section(*key).offline += seconds
        elif was == "degraded":
            section(*key).degraded += seconds

    for m in before:
        key = (m.site, m.table)
        birth(key, m)
        state[key] = (_state(m), since)
        if _state(m) in DOWN_STATES:
            section(*key)
    for m in messages:
        key = (m.site, m.table)
        s = section(*key)
        if m.stream == "status":
            birth(key, m)
            down(key, m.received_at)
            state[key] = (_state(m), m.received_at)
        elif m.stream == "fault":
            code = m.payload.get("code")
            s.faults[str(code) if code is not None else "?"] += 1
        elif m.stream == "outcome":
            s.rounds += 1
            game = m.payload.get("game")
            if isinstance(game, str):
                s.game = game
            if m.payload.get("status") == "void":
                s.voids[str(m.payload.get("article") or "?")] += 1
            elif m.payload.get("status") == "complete":
                s.complete += 1
            if isinstance(game, str) and game in registry.game_names():
                known = options.get(key)
                opts = known[1] if known is not None and known[0] == game \
                    else options_of(game, None)
                per = tallies.setdefault(key, {})
                per.setdefault((game, opts), _Tally(game, opts)).add(m)
    for key in list(state):
        down(key, end)
    for a in alerts:
        s = section(a.site, a.table)
        s.alerts[a.kind] += 1
        s.severities[a.severity] += 1
        s.incident_ids.add(a.incident_id)
        if a.acked_at is not None:
            s.ack_waits.append(max(0.0, a.acked_at - a.opened_at))
        else:
            s.unacknowledged += 1
        if a.kind.startswith("integrity:"):
            s.findings.append(Finding(a.site, a.table, a.kind, a.subject, a.severity,
                                      a.message, a.opened_at))
    floor = Section(None, None)
    floor_tallies: dict[tuple[str, GameOptions], _Tally] = {}
    for key, s in sorted(sections.items()):
        for k, tally in tallies.get(key, {}).items():
            s.frequencies.extend(tally.tables())
            merged = floor_tallies.setdefault(k, _Tally(*k))
            merged.merge(tally)
        if s.game is None and key in options:
            s.game = options[key][0]
        floor.rounds += s.rounds
        floor.complete += s.complete
        floor.voids.update(s.voids)
        floor.faults.update(s.faults)
        floor.offline += s.offline
        floor.degraded += s.degraded
        floor.alerts.update(s.alerts)
        floor.severities.update(s.severities)
        floor.ack_waits.extend(s.ack_waits)
        floor.unacknowledged += s.unacknowledged
        floor.incident_ids |= s.incident_ids
        floor.findings.extend(s.findings)
    for tally in floor_tallies.values():
        floor.frequencies.extend(tally.tables())
    floor.findings.sort(key=lambda f: f.opened_at)
    bucket = 3600 if until - since <= HOURLY_UP_TO else 86400
    first: dict[int, float] = {}  # each incident counts in the hour its first alert opened
    for a in alerts:
        first[a.incident_id] = min(first.get(a.incident_id, a.opened_at), a.opened_at)
    incidents = _per_bucket(list(first.values()), since, until, bucket, timezone)
    return Report(since, until, made_at, timezone,
                  [sections[k] for k in sorted(sections)], floor, incidents, bucket)


def _per_bucket(times: Sequence[float], since: float, until: float, bucket: int,
                timezone: str) -> list[tuple[float, int]]:
    """How many of ``times`` fall in each local hour (or day) of the period."""
    zone = ZoneInfo(timezone)
    start = datetime.fromtimestamp(since, zone).replace(minute=0, second=0, microsecond=0)
    if bucket == 86400:
        start = start.replace(hour=0)
    edges: list[float] = []
    t = start
    while t.timestamp() < until:
        edges.append(max(t.timestamp(), since))
        t = (t + timedelta(seconds=bucket)).astimezone(zone)
    counts = [0] * len(edges)
    for at in times:
        for i in range(len(edges) - 1, -1, -1):
            if at >= edges[i]:
                counts[i] += 1
                break
    return list(zip(edges, counts, strict=True))


def by_count(counter: Mapping[str, int]) -> list[tuple[str, int]]:
    """A counter's entries, most first, then by name."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
