"""Replay throughput: ``tabled replay`` rounds per second, whole process, per game, against the
straightforward reference (:mod:`bench.reference`) on the same stream in the same run.

The streams are the long seeded ones of the replay oracle tests (``tests/oracle/streams.py``):
real shoes and decks, cards in the order the rules call for them, a few per cent of irregular
events and events of other games (each gives a notice on standard error). Each command reads
the file and writes its outcomes to a file; the time is the process's wall time from spawn to
exit (interpreter start-up included), best of ``repeats`` runs. Both run on one core: nothing
here is parallel.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

from bench.measure import load_average
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream, write_jsonl

GAMES: Final = ("baccarat", "craps", "qpoker")
SEED: Final = 20261129


def make_stream(game: str, rounds: int, path: Path) -> int:
    """Write ``rounds`` rounds of ``game`` to ``path``; return the number of events."""
    rng = random.Random(SEED)
    if game == "baccarat":
        events = baccarat_stream(rng, rounds, 1, "this")
    elif game == "craps":
        events = craps_stream(rng, rounds)
    else:
        events = qpoker_stream(rng, rounds)
    write_jsonl(path, events)
    return len(events)


def _timed(args: list[str], out: Path, err: Path) -> tuple[float, float, int]:
    """Wall seconds and CPU seconds (user + system) of one process run, and the lines it
    wrote. CPU time is what the process itself used of its core: on a machine other work
    shares, wall time counts the waiting too."""
    with open(out, "w") as stdout, open(err, "w") as stderr:
        started = time.monotonic()
        proc = subprocess.Popen(args, stdout=stdout, stderr=stderr)
        _, status, rusage = os.wait4(proc.pid, 0)
        elapsed = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{args[:4]} exited {proc.returncode}: {err.read_text()[-800:]}")
    with open(out, "rb") as written:
        return elapsed, rusage.ru_utime + rusage.ru_stime, sum(1 for _ in written)


def breakdown(game: str, path: Path, limit: int = 200_000) -> dict[str, Any]:
    """Where a round's CPU time goes in ``tabled replay``'s steps, in process (µs per round):
    decoding and validating the typed event, the rules, encoding the outcome (the rest of the
    whole process's time is start-up and the file's reading and writing)."""
    from tabled.contract.events import read_events
    from tabled.contract.outcome import Outcome
    from tabled.games.registry import event_checks, make_table

    with open(path, encoding="utf-8") as stream:
        lines = [line for _, line in zip(range(limit), stream, strict=False)]
    clock = time.process_time
    marks = [clock()]
    events = [event for _, event in read_events(lines, event_checks(game))]
    marks.append(clock())
    table = make_table(game, None)
    outcomes = [o for event in events for o in table.feed(event) if isinstance(o, Outcome)]
    marks.append(clock())
    for outcome in outcomes:
        outcome.to_json()
    marks.append(clock())
    rounds = len(outcomes) or 1
    steps = ("decoding and validation (read_events)", "rules (feed)",
             "encoding (Outcome.to_json)")
    return {"events_per_round": len(lines) / rounds,
            "us": {step: (b - a) / rounds * 1e6
                   for step, a, b in zip(steps, marks[:-1], marks[1:], strict=True)}}


def run_game(game: str, rounds: int, workdir: Path, repeats: int) -> dict[str, Any]:
    stream = workdir / f"{game}.jsonl"
    events = make_stream(game, rounds, stream)
    commands = {
        "tabled": [sys.executable, "-m", "tabled.tools.cli", "replay", "--game", game, str(stream)],
        "reference": [sys.executable, "-m", "bench.reference", "--game", game, str(stream)],
    }
    result: dict[str, Any] = {"rounds": rounds, "events": events,
                              "load": {"start": load_average()}}
    for name, args in commands.items():
        runs = [_timed(args, workdir / f"{game}.{name}.out", workdir / f"{game}.{name}.err")
                for _ in range(repeats)]
        best, cpu, lines = min(runs)
        result[name] = {"seconds": best, "cpu_seconds": cpu, "outcomes": lines,
                        "rounds_per_s": lines / best, "rounds_per_cpu_s": lines / cpu}
    result["load"]["end"] = load_average()
    result["ratio"] = result["tabled"]["rounds_per_s"] / result["reference"]["rounds_per_s"]
    if game == "baccarat":
        result["breakdown"] = breakdown(game, stream)
    return result


def byte_compile() -> None:
    """Compile tabled's modules to bytecode first, as an installed package is (the Debian
    package byte-compiles at install): where ``PYTHONDONTWRITEBYTECODE`` is set, as on this
    machine, each process would otherwise compile every module it imports from source, a cost
    that grows with the source and that no table PC pays."""
    import importlib.util

    folders = []
    for package in ("contract", "daemon", "drivers", "games", "tools"):
        spec = importlib.util.find_spec(f"tabled.{package}")
        if spec is not None and spec.submodule_search_locations:
            folders += list(spec.submodule_search_locations)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})


def run(workdir: Path, rounds: dict[str, int], repeats: int,
        say: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {}
    byte_compile()
    for game in GAMES:
        say(f"[replay] {game}: {rounds[game]} rounds, best of {repeats}")
        out[game] = run_game(game, rounds[game], workdir, repeats)
    return out
