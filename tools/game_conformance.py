"""The games conformance kit: the replay properties every installed game must have.

Owns the checks of docs/games.md ("The conformance kit") and the runner that reports them
(``tabled conformance --game G``). It drives a game only through its declaration
(:class:`~tabled.games.registry.GameDeclaration`: ``streams`` makes the event streams it
plays, ``table`` the rules, ``required`` its own required fields) and through the code every
game shares: ``tabled replay`` (:mod:`tabled.daemon.replay`, in this process and as a process
of its own) and the table service's runtime on a real journal (:mod:`tabled.daemon.runtime`,
the path from an accepted event to what is published). It never names a game: the built-in
ones and an outside one are checked alike.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from structlog.testing import capture_logs

from tabled.contract.events import Event, LineError, event_to_dict, exposed_cards, read_events
from tabled.contract.outcome import Notice
from tabled.daemon.config import Config, TableSettings
from tabled.daemon.journal import Journal
from tabled.daemon.replay import EXIT_BAD_INPUT, replay
from tabled.daemon.runtime import TableRuntime
from tabled.games.registry import (
    GameDeclaration,
    UnknownGame,
    game,
    make_table,
    stream_maker,
)

#: Every check, in the order they run, with what it proves.
CHECKS: Final[Mapping[str, str]] = {
    "deterministic": "the same stream gives the same outcomes byte for byte: the game's "
                     "streams() twice from one seed, tabled replay twice in this process and "
                     "in two tabled replay processes",
    "rounds_closed": "every round of the stream is closed by an outcome of the game, numbered "
                     "1, 2, 3 ..., citing its article in the game's own namespace "
                     "(<game>.artN), as every notice's article does; no round left open",
    "withholding": "what the game withholds (an event its publication holds back, or stands a "
                   "withheld placeholder for) appears in no published message and no log "
                   "line before the event itself is published, and every one is published",
    "malformed_input": "a malformed line (not JSON, blank, an unknown type or version, a "
                       "field the game requires missing) stops tabled replay with exit 2 "
                       "naming its line, after the outcomes of the lines before it",
    "journal_rebuild": "a table rebuilt from the journal (a restart) at any point of the "
                       "stream, mid-round included, is the live table: the same state, and "
                       "the same messages published from there on",
}

Result = Literal["pass", "fail", "skip"]

#: What the published stream adds to an event (docs/contract.md): not part of the event.
_ADDED: Final = ("round", "table_seq", "withheld", "source")
#: How many places of the stream ``journal_rebuild`` restarts the table at.
RESTARTS: Final = 4
#: A card code as a word of a message: not inside a longer word or number.
_CARD_WORD: Final = r"(?<![A-Za-z0-9]){}(?![A-Za-z0-9])"


class KitError(Exception):
    """An unknown game or check: a usage error (exit 2)."""


class CheckFailed(Exception):
    """A property the game does not have; ``str()`` says which and where."""


@dataclass(frozen=True, slots=True)
class GameKitOptions:
    """How the kit plays: the streams' seed and length in rounds, and how long a ``tabled
    replay`` process may take."""

    seed: int = 1
    rounds: int = 40
    timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class GameCheckResult:
    """One check of one game: ``detail`` is why it failed, or a note of what it saw."""

    game: str
    check: str
    outcome: Result
    detail: str = ""
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.outcome == "fail"


@dataclass(slots=True)
class Session:
    """One game under check: its declaration, and the stream every check plays."""

    declared: GameDeclaration
    options: GameKitOptions
    _lines: list[str] | None = None
    _events: list[Event] | None = None

    @property
    def name(self) -> str:
        return self.declared.name

    def make(self, seed: int) -> list[str]:
        """The game's stream of ``seed`` (lines without newlines)."""
        maker = stream_maker(self.name)
        if maker is None:
            raise CheckFailed(f"{self.name} declares no streams (GameDeclaration.streams: "
                              "the kit has nothing to play)")
        lines = maker(random.Random(seed), self.options.rounds)
        if not lines or not all(isinstance(line, str) and "\n" not in line for line in lines):
            raise CheckFailed(f"streams(rng, {self.options.rounds}) gave no lines, or not one "
                              "line per string")
        return lines

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.make(self.options.seed)
        return self._lines

    def events(self) -> list[Event]:
        """The stream's events; :class:`CheckFailed` when the game's own stream is malformed
        (to the contract, or to the game: ``tabled replay`` refuses it)."""
        if self._events is None:
            code, _, err = replay_text(self.name, self.lines)
            if code != 0:
                raise CheckFailed(f"tabled replay refuses the game's own stream (exit {code}): "
                                  f"{_cut(err.strip().splitlines()[-1] if err.strip() else '')}")
            try:
                self._events = [event for _, event in read_events(self.lines)]
            except LineError as exc:
                raise CheckFailed(f"the game's own stream is malformed: {exc}") from None
        return self._events


def replay_text(name: str, lines: Sequence[str]) -> tuple[int, str, str]:
    """``tabled replay`` over ``lines`` (given without newlines) in this process: exit status,
    standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    code = replay(name, None, [f"{line}\n" for line in lines], out, err)
    return code, out.getvalue(), err.getvalue()


def replay_process(name: str, path: Path, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """``tabled replay --game NAME FILE`` as a process of its own, with a hash seed of its
    own (a game whose outcomes follow the order of a set differs from one process to the
    next)."""
    return subprocess.run(
        [sys.executable, "-m", "tabled.tools.cli", "replay", "--game", name, str(path)],
        capture_output=True, timeout=timeout, check=False,
        env={**os.environ, "PYTHONHASHSEED": "random"})


def _first_difference(a: str, b: str) -> str:
    left, right = a.splitlines(), b.splitlines()
    for number, (one, two) in enumerate(zip(left, right, strict=False), 1):
        if one != two:
            return f"line {number}: {_cut(one)} against {_cut(two)}"
    return f"{len(left)} lines against {len(right)}"


def _cut(text: str, most: int = 160) -> str:
    return text if len(text) <= most else f"{text[:most]}…"


# -- the checks ------------------------------------------------------------------------------


def deterministic(s: Session) -> str:
    again = s.make(s.options.seed)
    if again != s.lines:
        raise CheckFailed(f"streams() gave two streams for seed {s.options.seed}: "
                          f"{_first_difference(chr(10).join(s.lines), chr(10).join(again))}")
    first = replay_text(s.name, s.lines)
    if first[0] != 0:
        raise CheckFailed(f"tabled replay refuses the game's own stream (exit {first[0]}): "
                          f"{_cut(first[2].strip())}")
    second = replay_text(s.name, s.lines)
    if second[1] != first[1]:
        raise CheckFailed("two replays of one stream in one process differ: "
                          f"{_first_difference(first[1], second[1])}")
    if second[2] != first[2]:
        raise CheckFailed("two replays of one stream in one process differ on standard "
                          f"error: {_first_difference(first[2], second[2])}")
    outputs = []
    with tempfile.TemporaryDirectory(prefix="tabled-kit-") as folder:
        path = Path(folder) / "stream.jsonl"
        path.write_text("".join(f"{line}\n" for line in s.lines), encoding="utf-8")
        for _ in range(2):
            done = replay_process(s.name, path, s.options.timeout)
            if done.returncode != 0:
                raise CheckFailed(f"tabled replay --game {s.name} (a process) exits "
                                  f"{done.returncode}: "
                                  f"{_cut(' '.join(done.stderr.decode(errors='replace').split()))}")
            outputs.append(done.stdout)
    expected = first[1].encode()
    for number, output in enumerate(outputs, 1):
        if output != expected:
            raise CheckFailed(f"tabled replay process {number} differs from the replay in this "
                              f"process: {_first_difference(expected.decode(), output.decode())}")
    digest = hashlib.sha256(expected).hexdigest()[:12]
    return (f"{len(s.lines)} lines, {len(first[1].splitlines())} outcomes, byte-identical "
            f"twice here and in 2 tabled replay processes (sha256 {digest}…)")


def _articles(value: Any) -> Iterator[Any]:
    """Every ``article`` anywhere in a record."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "article":
                yield item
            else:
                yield from _articles(item)
    elif isinstance(value, list):
        for item in value:
            yield from _articles(item)


def rounds_closed(s: Session) -> str:
    events = s.events()
    table = make_table(s.name)
    namespace = re.compile(rf"{re.escape(s.name)}\.art[0-9]+(\.[0-9]+)*")
    count = notices = 0
    for number, event in enumerate(events, 1):
        for output in table.feed(event):
            where = f"line {number} ({event.TYPE})"
            if isinstance(output, Notice):
                notices += 1
                if output.article is not None and not namespace.fullmatch(output.article):
                    raise CheckFailed(f"{where}: notice {output.code} cites {output.article!r}, "
                                      f"not an article of {s.name} ({s.name}.artN)")
                continue
            count += 1
            record = output.to_record()
            if record.get("game") != s.name:
                raise CheckFailed(f"{where}: an outcome of game {record.get('game')!r}, not "
                                  f"{s.name!r}")
            if record.get("round") != count:
                raise CheckFailed(f"{where}: outcome {count} carries round "
                                  f"{record.get('round')!r} (rounds are numbered 1, 2, 3 …)")
            cited = list(_articles(record))
            if not cited:
                raise CheckFailed(f"{where}: the outcome of round {count} cites no article "
                                  f"(its own, or its bets'): {_cut(json.dumps(record))}")
            foreign = [a for a in cited if not (isinstance(a, str) and namespace.fullmatch(a))]
            if foreign:
                raise CheckFailed(f"{where}: the outcome of round {count} cites {foreign[0]!r}, "
                                  f"not an article of {s.name} ({s.name}.artN)")
    if table.round_open:
        raise CheckFailed(f"the stream ends with round {table.next_round} open: no outcome "
                          "closed it")
    if count == 0:
        raise CheckFailed(f"no outcome in {len(events)} events")
    if table.next_round != count + 1:
        raise CheckFailed(f"{count} outcomes, but the table's next round is "
                          f"{table.next_round} (not {count + 1})")
    return (f"{count} rounds in {len(events)} events, each closed citing {s.name}.art…; "
            f"{notices} notices")


def _scratch() -> tempfile.TemporaryDirectory[str]:
    """A folder for the kit's journals: in memory where the system has one (``/dev/shm``),
    since every event is a durable commit and the kit makes thousands."""
    memory = Path("/dev/shm")
    folder = str(memory) if memory.is_dir() and os.access(memory, os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix="tabled-kit-", dir=folder)


def _runtime(name: str, path: Path) -> TableRuntime:
    """The table service's runtime for game ``name`` on the journal at ``path``: a table with
    no devices (the runtime reads the game and its options of the config, nothing else)."""
    config = Config.model_construct(
        table=TableSettings.model_construct(site="kit", id="kit", game=name),
        rules=game(name).options())
    return TableRuntime(config, Journal(path).events)


def _source(event: Event) -> str:
    return f"device:{event.meta.device}" if event.meta.device else "console:kit"


@dataclass(frozen=True, slots=True)
class Step:
    """What one event did on the table service's path: the messages it published (topic,
    payload without its ``ts``), and the table's state after it."""

    messages: tuple[tuple[str, str], ...]
    round_open: bool
    next_round: int


def _without_ts(payload: str) -> str:
    body = json.loads(payload)
    if isinstance(body, dict):
        body.pop("ts", None)
    return json.dumps(body, sort_keys=True)


def play(runtime: TableRuntime, events: Sequence[Event]) -> list[Step]:
    """Feed ``events`` through ``runtime`` one at a time, each committed: what each did."""
    steps: list[Step] = []
    last = runtime.events.last_id
    for event in events:
        runtime.accept(event, _source(event))
        stored = runtime.events.outputs_after(last, 100_000)
        if stored:
            last = stored[-1].id
        steps.append(Step(tuple((o.topic, o.payload) for o in stored),
                          runtime.table.round_open, runtime.table.next_round))
    return steps


def _same_event(published: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    return {k: v for k, v in published.items() if k not in _ADDED} == dict(body)


def withholding(s: Session) -> str:
    events = s.events()
    with _scratch() as folder, capture_logs() as logs:
        runtime = _runtime(s.name, Path(folder) / "journal.sqlite")
        try:
            steps = play(runtime, events)
        finally:
            runtime.events.owner.close()
    # What each event logged: the runtime logs what an event caused once it is committed.
    held: list[tuple[int, dict[str, Any], re.Pattern[str] | None]] = []
    withheld_count = 0
    seen_logs = 0
    for number, (event, step) in enumerate(zip(events, steps, strict=True), 1):
        body = event_to_dict(event)
        published = [(topic, payload, json.loads(payload)) for topic, payload in step.messages]
        itself = any(topic == "event" and not message.get("withheld")
                     and _same_event(message, body) for topic, _, message in published)
        if not itself:
            secret = [card for card in _cards(body) if card not in exposed_cards(event)]
            pattern = (re.compile("|".join(_CARD_WORD.format(c) for c in secret))
                       if secret else None)
            held.append((number, body, pattern))
            withheld_count += 1
        new_logs = [json.dumps(entry, default=str) for entry in logs[seen_logs:]]
        seen_logs = len(logs)
        # The messages of this step in order: an identity published releases its event for
        # the messages after it.
        for topic, payload, message in published:
            if topic == "event" and message.get("withheld"):
                for i, (_, waiting, _) in enumerate(held):
                    if _same_event(message, waiting):
                        del held[i]
                        break
            for at, waiting, pattern in held:
                if pattern is not None and (found := pattern.search(payload)):
                    raise CheckFailed(
                        f"line {at} ({waiting['type']}) is withheld, but its card "
                        f"{found.group()} is in a message on …/{topic} at line {number} "
                        f"before the event is published: {_cut(payload)}")
        for at, waiting, pattern in held:
            for text in new_logs:
                if pattern is not None and (found := pattern.search(text)):
                    raise CheckFailed(f"line {at} ({waiting['type']}) is withheld, but its "
                                      f"card {found.group()} is in a log line at line "
                                      f"{number}: {_cut(text)}")
    if held:
        at, waiting, _ = held[0]
        raise CheckFailed(f"line {at} ({waiting['type']}) was withheld and never published "
                          f"(the stream ended with {len(held)} event(s) held)")
    if not withheld_count:
        return "the game withholds nothing: every event was published as it came"
    return (f"{withheld_count} of {len(events)} events withheld, each published later; none "
            "of their cards in any message or log line before that")


def _cards(body: Mapping[str, Any]) -> list[str]:
    """The cards an event's JSON object names (``card``, ``cards``)."""
    cards = [body["card"]] if isinstance(body.get("card"), str) else []
    listed = body.get("cards")
    if isinstance(listed, list):
        cards += [card for card in listed if isinstance(card, str)]
    return cards


def _malformed(s: Session, at: int) -> list[tuple[str, str]]:
    """Malformed lines to put at line ``at``: (what it is, the line)."""
    model = json.loads(s.lines[at])
    bad = [("not JSON", s.lines[at][:-1]),
           ("a blank line", ""),
           ("an unknown event type", json.dumps({**model, "type": "no_such_event"})),
           ("an unknown contract version", json.dumps({**model, "v": 99}))]
    for kind, fields in s.declared.required.items():
        for line in s.lines:
            event = json.loads(line)
            if event.get("type") == kind:
                missing = {k: v for k, v in event.items() if k != fields[0]}
                bad.append((f"a {kind} without {fields[0]}, which {s.name} requires",
                            json.dumps(missing)))
                break
    return bad


def malformed_input(s: Session) -> str:
    s.events()  # the stream itself is well formed
    at = random.Random(s.options.seed).randrange(1, len(s.lines))
    prefix = replay_text(s.name, s.lines[:at])
    cases = _malformed(s, at)
    for what, line in cases:
        code, out, err = replay_text(s.name, [*s.lines[:at], line, *s.lines[at:]])
        if code != EXIT_BAD_INPUT:
            raise CheckFailed(f"{what} at line {at + 1}: tabled replay exits {code}, not "
                              f"{EXIT_BAD_INPUT}")
        last = err.strip().splitlines()[-1] if err.strip() else ""
        if not last.startswith(f"line {at + 1}:"):
            raise CheckFailed(f"{what} at line {at + 1}: the error does not name the line: "
                              f"{_cut(last) or 'nothing on standard error'}")
        if out != prefix[1]:
            raise CheckFailed(f"{what} at line {at + 1}: the outcomes before it are not "
                              f"what the {at} lines before it give: "
                              f"{_first_difference(prefix[1], out)}")
    what, line = cases[0]
    with tempfile.TemporaryDirectory(prefix="tabled-kit-") as folder:
        path = Path(folder) / "malformed.jsonl"
        path.write_text("".join(f"{x}\n" for x in [*s.lines[:at], line, *s.lines[at:]]),
                        encoding="utf-8")
        done = replay_process(s.name, path, s.options.timeout)
    stderr = done.stderr.decode(errors="replace")
    if done.returncode != EXIT_BAD_INPUT or f"line {at + 1}:" not in stderr:
        raise CheckFailed(f"{what} at line {at + 1}: the tabled replay process exits "
                          f"{done.returncode} saying {_cut(' '.join(stderr.split())) or 'nothing'}")
    if done.stdout.decode() != prefix[1]:
        raise CheckFailed(f"{what} at line {at + 1}: the tabled replay process wrote other "
                          "outcomes than the lines before it give")
    return (f"{len(cases)} kinds at line {at + 1} of {len(s.lines) + 1}: exit 2, the line "
            f"named, the {len(prefix[1].splitlines())} outcomes before it written (and by a "
            "tabled replay process)")


def journal_rebuild(s: Session) -> str:
    events = s.events()
    with _scratch() as folder, capture_logs():
        live = _runtime(s.name, Path(folder) / "live.sqlite")
        try:
            steps = play(live, events)
            devices = dict(live.devices)
        finally:
            live.events.owner.close()
        cuts = _cuts(s, steps)
        for cut in cuts:
            path = Path(folder) / f"restart-{cut}.sqlite"
            before = _runtime(s.name, path)
            try:
                play(before, events[:cut])
            finally:
                before.events.owner.close()
            again = _runtime(s.name, path)  # a restart: the state is rebuilt from the journal
            try:
                state = (again.table.round_open, again.table.next_round)
                if cut and state != (steps[cut - 1].round_open, steps[cut - 1].next_round):
                    raise CheckFailed(
                        f"rebuilt after line {cut}: round_open, next_round = {state}, live "
                        f"{(steps[cut - 1].round_open, steps[cut - 1].next_round)}")
                rest = play(again, events[cut:])
                if dict(again.devices) != devices:
                    raise CheckFailed(f"rebuilt after line {cut}: the devices' progress "
                                      f"{dict(again.devices)} is not the live {devices}")
            finally:
                again.events.owner.close()
            for number, (one, two) in enumerate(zip(steps[cut:], rest, strict=True), cut + 1):
                left = [(t, _without_ts(p)) for t, p in one.messages]
                right = [(t, _without_ts(p)) for t, p in two.messages]
                if left != right:
                    live_said, rebuilt_said = _first_different(one.messages, two.messages)
                    raise CheckFailed(
                        f"rebuilt after line {cut}: at line {number} it published "
                        f"{rebuilt_said}, the live table {live_said}")
    where = ", ".join(f"{cut}{' (mid-round)' if cut and steps[cut - 1].round_open else ''}"
                      for cut in cuts)
    return (f"restarted after lines {where} of {len(events)}: the same state and the same "
            "messages from there on")


def _first_different(live: Sequence[tuple[str, str]], rebuilt: Sequence[tuple[str, str]]
                     ) -> tuple[str, str]:
    """The first message of two lists that differs (beyond its ``ts``), as each side has it."""
    for one, two in zip(live, rebuilt, strict=False):
        if (one[0], _without_ts(one[1])) != (two[0], _without_ts(two[1])):
            return f"on …/{one[0]} {_cut(one[1])}", f"on …/{two[0]} {_cut(two[1])}"
    count = min(len(live), len(rebuilt))
    return (f"{len(live)} messages{'' if len(live) == count else ': ' + _cut(live[count][1])}",
            f"{len(rebuilt)} messages"
            f"{'' if len(rebuilt) == count else ': ' + _cut(rebuilt[count][1])}")


def _cuts(s: Session, steps: Sequence[Step]) -> list[int]:
    """Where ``journal_rebuild`` restarts: mid-round where it can, and once between rounds."""
    rng = random.Random(s.options.seed)
    middle = [i + 1 for i, step in enumerate(steps[:-1]) if step.round_open]
    between = [i + 1 for i, step in enumerate(steps[:-1]) if not step.round_open]
    cuts = rng.sample(middle, min(len(middle), RESTARTS - 1))
    cuts += rng.sample(between, min(len(between), RESTARTS - len(cuts)))
    return sorted(cuts) or [len(steps) // 2]


_CHECK_FUNCTIONS: Final[Mapping[str, Callable[[Session], str]]] = {
    "deterministic": deterministic,
    "rounds_closed": rounds_closed,
    "withholding": withholding,
    "malformed_input": malformed_input,
    "journal_rebuild": journal_rebuild,
}
assert tuple(_CHECK_FUNCTIONS) == tuple(CHECKS)


# -- running them ----------------------------------------------------------------------------


def _unexpected(exc: BaseException) -> str:
    """An exception a check did not expect, with where it came from."""
    where = traceback.extract_tb(exc.__traceback__)[-3:]
    frames = "; ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in where)
    return f"{type(exc).__name__}: {exc} (at {frames})"


def declaration(name: str) -> GameDeclaration:
    """The installed game ``name``, or :class:`KitError`."""
    try:
        return game(name)
    except UnknownGame as exc:
        raise KitError(str(exc)) from None


def run_check(target: str | Session, check: str,
              options: GameKitOptions | None = None) -> GameCheckResult:
    """Run one check against one game (by name, or a :class:`Session` whose stream is made
    once for all its checks). :class:`KitError` for an unknown game or check."""
    if check not in _CHECK_FUNCTIONS:
        raise KitError(f"unknown check {check!r} (checks: {', '.join(CHECKS)})")
    session = (Session(declaration(target), options or GameKitOptions())
               if isinstance(target, str) else target)
    started = time.monotonic()
    outcome: Result = "pass"
    try:
        detail = _CHECK_FUNCTIONS[check](session)
    except CheckFailed as exc:
        outcome, detail = "fail", str(exc)
    except Exception as exc:  # a game's bug is a failed check, not a crashed kit
        outcome, detail = "fail", _unexpected(exc)
    return GameCheckResult(session.name, check, outcome, detail, time.monotonic() - started)


def run_game(name: str, checks: Sequence[str] = tuple(CHECKS),
             options: GameKitOptions | None = None,
             report: Callable[[GameCheckResult], object] | None = None
             ) -> list[GameCheckResult]:
    """Run ``checks`` against game ``name``; ``report`` gets each result as it comes."""
    session = Session(declaration(name), options or GameKitOptions())
    results = []
    for check in checks:
        result = run_check(session, check)
        results.append(result)
        if report is not None:
            report(result)
    return results


# -- tabled conformance --game ---------------------------------------------------------------

EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


def _line(result: GameCheckResult) -> str:
    mark = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[result.outcome]
    return f"  {mark}  {result.check:<16} {result.seconds:5.2f} s  {result.detail}".rstrip()


def main(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``tabled conformance --game G ...``: 0 when every check of every game passed, 1 when
    one failed, 2 for a game or check that does not exist."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if getattr(args, "list", False):
        for name, proves in CHECKS.items():
            print(f"{name}: {proves}", file=out)
        return 0
    names = list(dict.fromkeys(args.game))
    try:
        declared = [declaration(name) for name in names]
    except KitError as exc:
        print(f"tabled conformance: {exc}", file=err)
        return EXIT_USAGE
    checks = tuple(dict.fromkeys(getattr(args, "check", None) or CHECKS))
    unknown = [check for check in checks if check not in CHECKS]
    if unknown:
        print(f"tabled conformance: unknown check {unknown[0]!r} (game checks: "
              f"{', '.join(CHECKS)})", file=err)
        return EXIT_USAGE
    given = {key: value for key in ("seed", "rounds", "timeout")
             if (value := getattr(args, key, None)) is not None}
    options = replace(GameKitOptions(), **given)
    failed = False
    for one in declared:
        print(f"{one.name}: {one.title}: {one.summary}", file=out, flush=True)
        results = run_game(one.name, checks, options,
                           lambda r: print(_line(r), file=out, flush=True))
        bad = sum(r.failed for r in results)
        failed = failed or bad > 0
        print(f"  {one.name}: {len(results) - bad} passed, {bad} failed", file=out, flush=True)
    return EXIT_FAILED if failed else 0


__all__ = [
    "CHECKS", "CheckFailed", "GameCheckResult", "GameKitOptions", "KitError", "Session",
    "declaration", "main", "play", "replay_process", "replay_text", "run_check", "run_game",
]
