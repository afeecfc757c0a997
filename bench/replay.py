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

import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

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


def _timed(args: list[str], out: Path, err: Path) -> tuple[float, int]:
    """Wall seconds of one process run, and the lines it wrote."""
    with open(out, "w") as stdout, open(err, "w") as stderr:
        started = time.monotonic()
        proc = subprocess.run(args, stdout=stdout, stderr=stderr, check=False)
        elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{args[:4]} exited {proc.returncode}: {err.read_text()[-800:]}")
    with open(out, "rb") as written:
        return elapsed, sum(1 for _ in written)


def run_game(game: str, rounds: int, workdir: Path, repeats: int) -> dict[str, Any]:
    stream = workdir / f"{game}.jsonl"
    events = make_stream(game, rounds, stream)
    commands = {
        "tabled": [sys.executable, "-m", "daemon.cli", "replay", "--game", game, str(stream)],
        "reference": [sys.executable, "-m", "bench.reference", "--game", game, str(stream)],
    }
    result: dict[str, Any] = {"rounds": rounds, "events": events}
    for name, args in commands.items():
        best, lines = min(_timed(args, workdir / f"{game}.{name}.out",
                                 workdir / f"{game}.{name}.err") for _ in range(repeats))
        result[name] = {"seconds": best, "outcomes": lines, "rounds_per_s": lines / best}
    result["ratio"] = result["tabled"]["rounds_per_s"] / result["reference"]["rounds_per_s"]
    return result


def run(workdir: Path, rounds: dict[str, int], repeats: int,
        say: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for game in GAMES:
        say(f"[replay] {game}: {rounds[game]} rounds, best of {repeats}")
        out[game] = run_game(game, rounds[game], workdir, repeats)
    return out
