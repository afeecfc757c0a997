"""The fuzzing engine: seeded cases, the campaign loop, crash records and per-target reports.

Owns how a campaign runs, and nothing about any decoder. A :class:`Target` says how to make
valid inputs with the real encoders (its corpus), how to spoil one, and how to run one against
the code under test. The engine draws every case from its own 64-bit seed: a crash report names
that seed, and ``python -m bench.fuzz --target NAME --seed S --case CASE`` rebuilds the very same
input. It must never catch a documented error itself: a target's ``run`` turns the errors its
module documents (``EventError``, ``ProtocolError``, ``CommandRejected``...) into outcome labels,
so anything that reaches the engine is a crash.
"""

from __future__ import annotations

import random
import re
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: How many crashes a report keeps in full, the first of each kind (all are counted).
KEPT_CRASHES = 20
#: Of the inputs, the share run intact from the corpus (the deep path, as the encoders make it).
INTACT_SHARE = 0.05
#: Longest input shown in a crash report.
SHOWN_INPUT = 2000
#: What varies from one refused input to the next: quoted values, lists, objects, numbers.
_VALUES = re.compile(r"""b?'.*'|b?".*"|\[.*\]|\(.*\)|\{.*\}|0x[0-9a-f]+|\d+""")


def error_shape(exc: Exception) -> str:
    """A documented error as an outcome label: its message with the values taken out, so that
    every kind of refusal is one label however many inputs earn it."""
    return f"{type(exc).__name__}:{_VALUES.sub('#', str(exc))[:80]}"


@dataclass(frozen=True)
class Target(Generic[T]):
    """One fuzz target: the module function under test and what it must promise.

    ``corpus`` makes valid inputs with the real encoders; ``fresh`` (optional) makes one from
    nothing; ``mutate`` spoils a corpus input (it may splice from the others); ``run`` feeds an
    input to the code under test, raising on a crash or a broken invariant, and returns labels
    for what happened (a message type, an error's shape, an article). ``size`` is how many
    ``unit`` s an input counts for (events, for the rules core; 1 elsewhere).
    """

    name: str
    summary: str
    corpus: Callable[[random.Random], Sequence[T]]
    mutate: Callable[[random.Random, T, Sequence[T]], T]
    run: Callable[[T, random.Random], Iterable[str]]
    fresh: Callable[[random.Random], T] | None = None
    fresh_share: float = 0.1
    size: Callable[[T], int] = field(default=lambda _: 1)
    unit: str = "input"


@dataclass(frozen=True)
class Crash:
    """One input that made the target raise: enough to reproduce it and to read it."""

    target: str
    seed: int
    case: int
    error: str
    input: str
    trace: str

    @property
    def command(self) -> str:
        return f"python -m bench.fuzz --target {self.target} --seed {self.seed} --case {self.case}"


def error_shape_of(crash: Crash) -> str:
    """The kind of a recorded crash, as :func:`error_shape` names a live one."""
    name, _, message = crash.error.partition(": ")
    return f"{name}:{_VALUES.sub('#', message)[:80]}"


@dataclass
class Report:
    """What a campaign did on one target: inputs (in ``unit``), cases, crashes, the distinct
    outcome labels seen, and the seconds spent (summed over shards)."""

    target: str
    unit: str
    inputs: int = 0
    cases: int = 0
    crash_count: int = 0
    #: How many crashes of each kind (an error's shape), and the first crash of each kind.
    crash_kinds: Counter[str] = field(default_factory=Counter)
    crashes: list[Crash] = field(default_factory=list)
    outcomes: set[str] = field(default_factory=set)
    seconds: float = 0.0

    def merge(self, other: Report) -> None:
        self.inputs += other.inputs
        self.cases += other.cases
        self.crash_count += other.crash_count
        known = {error_shape_of(crash) for crash in self.crashes}
        self.crashes += [crash for crash in other.crashes
                         if error_shape_of(crash) not in known][:KEPT_CRASHES - len(self.crashes)]
        self.crash_kinds.update(other.crash_kinds)
        self.outcomes |= other.outcomes
        self.seconds += other.seconds


def corpus_of(target: Target[T], seed: int) -> Sequence[T]:
    """The target's corpus for a campaign seed (the same in every shard and every process)."""
    return target.corpus(random.Random(f"{seed}:{target.name}:corpus"))


def make_case(target: Target[T], corpus: Sequence[T], case: int) -> tuple[T, random.Random]:
    """Case number ``case``'s input, and the RNG the run goes on with (chunking, timing)."""
    rng = random.Random(case)
    draw = rng.random()
    if target.fresh is not None and draw < target.fresh_share:
        return target.fresh(rng), rng
    original = rng.choice(corpus)
    if draw > 1 - INTACT_SHARE:
        return original, rng
    return target.mutate(rng, original, corpus), rng


def run_case(target: Target[Any], seed: int, case: int) -> tuple[Any, list[str]]:
    """Rebuild and run one case (the reproduction of a crash report): its input and labels."""
    data, rng = make_case(target, corpus_of(target, seed), case)
    return data, sorted(target.run(data, rng))


def fuzz(target: Target[Any], inputs: int, seed: int, shard: int = 0) -> Report:
    """Run ``target`` until it has taken ``inputs`` units, with cases drawn from ``seed`` and
    ``shard``; every exception out of ``run`` is a crash, recorded and survived."""
    report = Report(target.name, target.unit)
    started = time.perf_counter()
    corpus = corpus_of(target, seed)
    cases = random.Random(f"{seed}:{target.name}:{shard}")
    while report.inputs < inputs:
        case = cases.getrandbits(64)
        data, rng = make_case(target, corpus, case)
        report.cases += 1
        report.inputs += target.size(data)
        try:
            report.outcomes.update(target.run(data, rng))
        except Exception as exc:  # any exception at all is what the campaign hunts for
            report.crash_count += 1
            kind = error_shape(exc)
            if kind not in report.crash_kinds and len(report.crashes) < KEPT_CRASHES:
                report.crashes.append(Crash(target.name, seed, case, f"{type(exc).__name__}: "
                                            f"{exc}"[:500], repr(data)[:SHOWN_INPUT],
                                            traceback.format_exc(limit=-6)))
            report.crash_kinds[kind] += 1
    report.seconds = time.perf_counter() - started
    return report


Registry = Callable[[], Mapping[str, Target[Any]]]


def _shard(registry: Registry, name: str, inputs: int, seed: int, shard: int) -> Report:
    return fuzz(registry()[name], inputs, seed, shard)


def campaign(registry: Registry, names: Sequence[str], inputs: int, seed: int,
             jobs: int = 1) -> list[Report]:
    """Every named target of ``registry`` (a module-level function, so that worker processes
    can call it too) for ``inputs`` units each, split over ``jobs`` processes: each target in
    ``jobs`` shards with their own case streams. One merged report per target, in order."""
    targets = registry()
    if jobs <= 1:
        return [fuzz(targets[name], inputs, seed) for name in names]
    shares = [inputs // jobs + (1 if shard < inputs % jobs else 0) for shard in range(jobs)]
    reports = {name: Report(name, targets[name].unit) for name in names}
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(_shard, registry, name, share, seed, shard)
                   for name in names for shard, share in enumerate(shares) if share]
        for future in futures:
            part = future.result()
            reports[part.target].merge(part)
    return [reports[name] for name in names]
