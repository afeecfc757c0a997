"""``python -m bench.integrity``: the integrity monitors' calibration, measured (issue 13).

Everything runs at full speed through the monitors (never in real time), on streams made by the
simulators' own generation code (:func:`tabled.simulators.dice.random_rolls`, the shoe
simulator's :class:`~tabled.simulators.shoe.Dealer` and its presets, the shuffler's
:func:`~tabled.simulators.shuffler.qpoker_script`) and the rules core, exactly as ``tabled
integrity`` feeds them:

1. **false alarms**: fair streams of ``--rounds`` rounds per game (10^6 by default) through the
   monitors at the configured budget, counting every finding by monitor; and through a copy at
   a budget 1,000 times looser, whose false alarms are frequent enough to count, to check the
   bound each threshold comes from (measured against allowed);
2. **detection delays** (median and 95th percentile, in rounds), ``--replications`` times each:
   a die with one face at 1/4, a shoe with a replayed 20-card block of an earlier shoe of the
   floor, a shoe given a single riffle instead of a shuffle, a sorted 52-card block, and a
   Banker rate 5 points above the odds;
3. **throughput**: messages (events and outcome records) per second of CPU through one table's
   monitors, and lines per second through the whole ``tabled integrity`` pipeline.

``--write-docs`` puts the figures into docs/integrity.md (between its ``integrity:figures``
markers) and the raw results into ``bench/integrity.json``. ``make integrity-calibration`` runs
the full form (several minutes on two shared cores);
``tests/bench/test_integrity_calibration.py`` runs a bounded form in ``make test``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from tabled.contract.events import (
    DEALER,
    Decision,
    Event,
    HandDealt,
    Reveal,
    Roll,
    RoundStart,
    ShoeStart,
    encode_event,
)
from tabled.contract.outcome import Game, Outcome, OutcomeRecord
from tabled.drivers.shoe.driver import normalize as shoe_events
from tabled.drivers.shuffler.driver import normalize as shuffler_events
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.registry import make_table
from tabled.pit.integrity import Settings, TableMonitors, calibrate, slug_index
from tabled.pit.integrity.calibration import (
    DEFAULT_SETTINGS,
    MONITORS,
    hands_per_shoe,
)
from tabled.pit.integrity.calibration import statistics as monitor_statistics
from tabled.pit.integrity.command import findings, record_of
from tabled.pit.integrity.findings import Finding
from tabled.pit.integrity.stats import TABLE_HOURS, kl
from tabled.simulators.dice import parse_bias, random_rolls
from tabled.simulators.shoe import Dealer, Preset, ShoeReader
from tabled.simulators.shuffler import qpoker_script

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "integrity.md"
RESULTS = ROOT / "bench" / "integrity.json"
BEGIN, END = "<!-- integrity:figures:begin -->", "<!-- integrity:figures:end -->"
THRESHOLDS = ("<!-- integrity:thresholds:begin -->", "<!-- integrity:thresholds:end -->")
GAMES: tuple[Game, ...] = ("craps", "baccarat", "qpoker")
#: How much looser the budget of the check run is.
LOOSE = 1000.0
#: The Banker shift of the biased case, in probability.
BANKER_SHIFT = 0.05
#: A detection later than this many rounds counts as missed (the die, the Banker rate).
CAP = 60_000


# -- streams: the simulators' generation code, turned into events -------------------------------


def craps_events(rng: random.Random, rolls: int, die_1: str | None = None) -> Iterator[Event]:
    """``rolls`` throws of the dice simulator, die 1 loaded with ``die_1`` (``"6:0.25"``)."""
    weights = parse_bias(die_1) if die_1 else None
    left = rolls
    while left > 0:
        chunk = min(left, 10_000)
        left -= chunk
        for a, b in random_rolls(rng, chunk, weights):
            yield Roll(dice=(a, b))


def baccarat_events(rng: random.Random, hands: int | None, *, decks: int = 8,
                    shoes: int | None = None, preset: Preset | None = None) -> Iterator[Event]:
    """The shoe simulator's dealer: shoe after shoe until ``hands`` hands (or ``shoes``)."""
    dealer = Dealer(ShoeReader(), rng=rng, decks=decks, hands=hands, shoes=shoes, preset=preset)
    for report in dealer.reports():
        event = shoe_events(report)
        if event is not None:
            yield event


def qpoker_events(rng: random.Random, rounds: int) -> Iterator[Event]:
    """The shuffler's Q Poker rounds; after the dealer's hand every seat plays and the dealer
    reveals (the console's part: what is played changes no hand, and no monitor reads it)."""
    left = rounds
    while left > 0:
        chunk = min(left, 500)
        left -= chunk
        seats: tuple[int, ...] = ()
        for message in qpoker_script(rng, rounds=chunk):
            for event in shuffler_events(message):
                yield event
                if isinstance(event, RoundStart):
                    seats = event.seats or ()
                elif isinstance(event, HandDealt) and event.seat == DEALER:
                    for seat in seats:
                        yield Decision(seat=seat, play=True)
                    yield Reveal()


def stream(game: Game, rng: random.Random, rounds: int) -> Iterator[Event]:
    if game == "craps":
        return craps_events(rng, rounds)
    if game == "baccarat":
        return baccarat_events(rng, rounds)
    return qpoker_events(rng, rounds)


def play(game: Game, events: Iterable[Event], monitors: Sequence[TableMonitors],
         seen: Callable[[int, Finding], bool] | None = None,
         records: Callable[[OutcomeRecord], None] | None = None) -> int:
    """Feed ``events`` and the rules core's outcomes to every table of ``monitors`` in order;
    ``seen(i, finding)`` for each finding of table ``i`` (return True to stop). The rounds."""
    table = make_table(game, monitors[0].options)
    feed = table.feed
    rounds = 0
    for event in events:
        for i, monitor in enumerate(monitors):
            for found in monitor.event(event):
                if seen is not None and seen(i, found):
                    return rounds
        for output in feed(event):
            if not isinstance(output, Outcome):
                continue
            rounds += 1
            record = record_of(output)
            if records is not None:
                records(record)
            for i, monitor in enumerate(monitors):
                for found in monitor.outcome(record):
                    if seen is not None and seen(i, found):
                        return rounds
    return rounds


# -- 1. false alarms --------------------------------------------------------------------------


@dataclass
class FalseAlarms:
    game: Game
    rounds: int = 0
    seconds: float = 0.0
    found: Counter[str] = field(default_factory=Counter)
    loose: Counter[str] = field(default_factory=Counter)
    allowed: dict[str, float] = field(default_factory=dict)
    allowed_loose: dict[str, float] = field(default_factory=dict)
    rates: dict[str, list[float]] = field(default_factory=dict)  # observed, exact
    examples: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"game": self.game, "rounds": self.rounds, "seconds": round(self.seconds, 1),
                "false_alarms": dict(self.found), "allowed": self.allowed,
                "loose_false_alarms": dict(self.loose), "loose_allowed": self.allowed_loose,
                "rates": self.rates, "examples": self.examples}


def allowed(game: Game, settings: Settings, rounds: int, shoes: int) -> dict[str, float]:
    """The most false alarms each statistical monitor may raise on average over ``rounds``
    rounds (``shoes`` shoes) by the bound its threshold comes from."""
    c = calibrate(game, None, settings)
    out: dict[str, float] = {}
    for monitor in MONITORS:
        m = monitor_statistics(monitor, game)
        if not m or not settings.runs(monitor, game):
            continue
        if monitor in ("dice", "frequency"):
            # each CUSUM: N exp(-h) over its N updates; N per round is the group's
            per_round = max((g.per_round for g in c.frequency), default=1.0) \
                if monitor == "frequency" else 1.0
            out[monitor] = c.per_statistic * m * rounds * per_round / (
                c.pace.assumed_pace * TABLE_HOURS * per_round)
        else:
            out[monitor] = c.shoe(8).alpha * m * shoes
    return out


def false_alarms(game: Game, rounds: int, seed: int) -> FalseAlarms:
    """A fair stream through the monitors at the default budget and at one 1,000 times
    looser."""
    loose_settings = replace(DEFAULT_SETTINGS, false_alarms_per_10k_hours=LOOSE)
    strict = TableMonitors(game, table="fair", slugs=slug_index())
    loose = TableMonitors(game, table="fair", settings=loose_settings,
                          slugs=slug_index(loose_settings))
    result = FalseAlarms(game)
    counts: Counter[str] = Counter()

    def seen(i: int, found: Finding) -> bool:
        (result.found if i == 0 else result.loose)[found.monitor] += 1
        if i == 0 and len(result.examples) < 5:
            result.examples.append(found.to_json())
        return False

    def count(typed: OutcomeRecord) -> None:
        record: dict[str, Any] = msgspec.to_builtins(typed)
        if record["status"] != "complete" or record.get("demo"):
            return
        counts["rounds"] += 1
        r = record["result"]
        if game == "baccarat":
            counts[r["winner"]] += 1
            counts["natural"] += bool(r["natural"])
            for side in ("player", "banker"):
                cards = r[f"{side}_cards"]
                counts[f"{side}_pair"] += cards[0][0] == cards[1][0]
        elif game == "craps":
            counts[str(r["total"])] += 1
        else:
            counts["dealer_qualifies"] += bool(r["dealer"]["qualifies"])
            for hand in (*(seat["hand"] for seat in r["seats"].values()), r["dealer"]["hand"]):
                counts["hands"] += 1
                counts[hand] += 1

    started = time.process_time()
    result.rounds = play(game, stream(game, random.Random(seed), rounds), [strict, loose],
                         seen, count)
    result.seconds = time.process_time() - started
    shoes = strict.shoe.shoes if strict.shoe is not None else 0
    result.allowed = allowed(game, DEFAULT_SETTINGS, result.rounds, shoes)
    result.allowed_loose = allowed(game, loose_settings, result.rounds, shoes)
    exact = calibrate(game)
    for group in exact.frequency:
        every = counts["hands"] if group.observation == "hand" and game == "qpoker" \
            else counts["rounds"]
        for name, p0 in zip(group.names, group.p0, strict=True):
            if every:
                result.rates[name] = [counts[name] / every, p0]
    return result


# -- 2. detection delays ----------------------------------------------------------------------


@dataclass
class Delays:
    case: str
    unit: str
    delays: list[int] = field(default_factory=list)
    missed: int = 0
    note: str = ""

    def summary(self) -> dict[str, Any]:
        d = sorted(self.delays)
        return {"case": self.case, "unit": self.unit, "replications": len(d) + self.missed,
                "detected": len(d), "missed": self.missed,
                "median": statistics.median(d) if d else None,
                "p95": d[min(len(d) - 1, int(0.95 * len(d)))] if d else None,
                "mean": round(statistics.fmean(d), 1) if d else None, "note": self.note}


class _First:
    """The round of the first finding that ``wanted`` accepts."""

    def __init__(self, wanted: Callable[[Finding], bool]) -> None:
        self.wanted = wanted
        self.round: int | None = None

    def __call__(self, i: int, found: Finding) -> bool:
        if self.wanted(found):
            self.round = found.round
            return True
        return False


def die_delay(seed: int) -> int | None:
    """Rolls until the dice monitor names die 1's six, loaded at 1/4."""
    first = _First(lambda f: f.monitor == "dice" and f.subject == "die 1 face 6")
    monitors = TableMonitors("craps", table="loaded")
    play("craps", craps_events(random.Random(seed), CAP, "6:0.25"), [monitors], first)
    return first.round


def _shoe_delay(monitors: TableMonitors, events: Iterable[Event], monitor: str,
                affected: Callable[[int], bool], shoe: int = 1) -> int | None:
    """Feed ``events``; the rounds from the one in progress when card ``affected(position)``
    of shoe number ``shoe`` came out, to the first ``monitor`` finding."""
    state = {"shoes": 0, "position": -1, "start": None}

    def counting(events: Iterable[Event]) -> Iterator[Event]:
        for event in events:
            if event.type == "shoe_start":
                state["shoes"] = int(state["shoes"] or 0) + 1  # type: ignore[call-overload]
                state["position"] = -1
            elif event.type in ("card", "burn") or (
                    event.type == "fault" and getattr(event, "code", "") == "unreadable_card"):
                state["position"] = int(state["position"] or 0) + 1  # type: ignore
                if state["shoes"] == shoe and state["start"] is None \
                        and affected(int(state["position"] or 0)):  # type: ignore
                    state["start"] = monitors.next_round
            yield event

    first = _First(lambda f: f.monitor == monitor and state["start"] is not None)
    play("baccarat", counting(events), [monitors], first)
    if first.round is None or state["start"] is None:
        return None
    return first.round - int(state["start"]) + 1  # type: ignore[call-overload]


def replay_delay(seed: int) -> int | None:
    """A 20-card block of a shoe dealt earlier at another table of the floor, replayed at a
    random place: rounds from the one the block starts in to the ``slug`` finding."""
    rng = random.Random(seed)
    index = slug_index()
    source_seed = rng.randrange(2**31)
    other = TableMonitors("baccarat", table="source", slugs=index)
    # the source shoe enters the floor's index when it ends: at that table's next shoe_start
    play("baccarat", itertools.chain(baccarat_events(random.Random(source_seed), None, shoes=1),
                                     [ShoeStart(decks=8)]), [other])
    start = rng.randint(20, 360)
    preset = Preset("replay", source_seed, start, 20)
    monitors = TableMonitors("baccarat", table="slugged", slugs=index)
    return _shoe_delay(monitors, baccarat_events(rng, None, shoes=1, preset=preset), "slug",
                       lambda position: position == start)


def riffle_delay(seed: int) -> int | None:
    """A shoe given one riffle of the previous shoe's order: rounds from its first to the
    ``riffle`` finding."""
    monitors = TableMonitors("baccarat", table="riffled", slugs=slug_index())
    return _shoe_delay(monitors, baccarat_events(random.Random(seed), None, shoes=2,
                                                 preset=Preset("riffle")),
                       "riffle", lambda position: position == 0, shoe=2)


def sorted_delay(seed: int) -> int | None:
    """A block of 52 cards in a new deck's order at a random place: rounds from the one it
    starts in to the ``shoe_runs`` finding."""
    rng = random.Random(seed)
    start = rng.randint(20, 340)
    monitors = TableMonitors("baccarat", table="sorted", slugs=slug_index())
    return _shoe_delay(monitors, baccarat_events(rng, None, shoes=1,
                                                 preset=Preset("sorted", 0, start, 52)),
                       "shoe_runs", lambda position: position == start)


def banker_pools(seed: int, hands: int) -> dict[str, list[BaccaratOutcome]]:
    """Real hands of fair shoes by winner: the biased stream draws its winners, then a hand."""
    pools: dict[str, list[BaccaratOutcome]] = {"banker": [], "player": [], "tie": []}

    def keep(record: OutcomeRecord) -> None:
        if isinstance(record, BaccaratOutcome) and record.status == "complete" \
                and record.demo is not True and record.result.winner is not None:
            pools[record.result.winner].append(record)

    play("baccarat", baccarat_events(random.Random(seed), hands),
         [TableMonitors("baccarat", settings=replace(DEFAULT_SETTINGS,
                                                     monitors=frozenset({"pace"})))],
         records=keep)
    return pools


def banker_delay(seed: int, pools: dict[str, list[BaccaratOutcome]]) -> int | None:
    """Hands until the frequency monitor says Banker wins too often (or Player too seldom),
    the Banker rate raised by :data:`BANKER_SHIFT`, ties as the odds say."""
    rng = random.Random(seed)
    p = calibrate("baccarat").frequency[0]
    banker, player, tie = p.p0[0] + BANKER_SHIFT, p.p0[1] - BANKER_SHIFT, p.p0[2]
    monitors = TableMonitors("baccarat", table="biased")
    for number in range(1, CAP + 1):
        winner = rng.choices(("banker", "player", "tie"), (banker, player, tie))[0]
        record = msgspec.structs.replace(rng.choice(pools[winner]), round=number)
        for found in monitors.outcome(record):
            if found.monitor == "frequency" and found.subject in ("banker up", "player down"):
                return number
    return None


def delays(replications: int, seed: int, pool_hands: int) -> list[Delays]:
    out = []
    cases: list[tuple[str, str, Callable[[int], int | None], str]] = [
        ("a die with one face at 1/4 (die 1, six)", "rolls", die_delay,
         "from the first roll"),
        ("a shoe with a replayed 20-card block", "hands", replay_delay,
         "from the hand the block starts in; the block is from a shoe of another table"),
        ("a shoe given a single riffle instead of a shuffle", "hands", riffle_delay,
         "from the shoe's first hand; one Gilbert-Shannon-Reeds riffle of the previous shoe"),
        ("a shoe with a 52-card block in new-deck order", "hands", sorted_delay,
         "from the hand the block starts in"),
    ]
    for case, unit, measure, note in cases:
        result = Delays(case, unit, note=note)
        for r in range(replications):
            delay = measure(seed * 1_000_003 + r)
            if delay is None:
                result.missed += 1
            else:
                result.delays.append(delay)
        out.append(result)
    pools = banker_pools(seed, pool_hands)
    result = Delays(f"a Banker rate {BANKER_SHIFT * 100:g} points above the odds", "hands",
                    note="from the first hand; real hands of fair shoes, winners drawn at "
                         "the biased rates")
    for r in range(replications):
        delay = banker_delay(seed * 7_919 + r, pools)
        if delay is None:
            result.missed += 1
        else:
            result.delays.append(delay)
    out.append(result)
    return out


# -- 3. throughput ----------------------------------------------------------------------------


def throughput(game: Game, rounds: int, seed: int) -> dict[str, Any]:
    """CPU time through one table's monitors alone (events and records made beforehand), and
    through the whole ``tabled integrity`` pipeline (parse, rules core, monitors)."""
    events = list(stream(game, random.Random(seed), rounds))
    table = make_table(game)
    sequence: list[tuple[bool, Any]] = []
    for event in events:
        sequence.append((True, event))
        sequence.extend((False, record_of(o)) for o in table.feed(event)
                        if isinstance(o, Outcome))
    best = float("inf")
    for _ in range(3):
        monitors = TableMonitors(game, slugs=slug_index())
        event_of, outcome_of = monitors.event, monitors.outcome
        started = time.process_time()
        for is_event, item in sequence:
            if is_event:
                event_of(item)
            else:
                outcome_of(item)
        best = min(best, time.process_time() - started)
    lines = [encode_event(e) + "\n" for e in events]
    started = time.process_time()
    for _ in findings(game, None, lines):
        pass
    pipeline = time.process_time() - started
    outcomes = sum(1 for is_event, _ in sequence if not is_event)
    return {"game": game, "events": len(events), "outcomes": outcomes,
            "messages_per_s": round(len(sequence) / best),
            "events_per_s": round(len(events) / best), "rounds_per_s": round(outcomes / best),
            "command_lines_per_s": round(len(lines) / pipeline)}


# -- the report --------------------------------------------------------------------------------


def _n(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def render(results: dict[str, Any]) -> str:
    lines = [BEGIN, "",
             f"Measured with `python -m bench.integrity` ({results['machine']}; "
             f"seed {results['seed']}), every figure at full speed through the monitors.", "",
             "**False alarms on fair streams** (budget 1 per 10,000 table-hours at the assumed "
             "pace; the looser run: 1,000 per 10,000 table-hours, to check the bounds with "
             "counts large enough to see):", "",
             "| game | fair rounds | monitor | false alarms | allowed (bound) | looser budget: "
             "false alarms | allowed |", "|---|---:|---|---:|---:|---:|---:|"]
    for fa in results["false_alarms"]:
        for monitor in fa["allowed"]:
            lines.append(
                f"| {fa['game']} | {fa['rounds']:,} | {monitor} | "
                f"{fa['false_alarms'].get(monitor, 0)} | {_n(fa['allowed'][monitor])} | "
                f"{fa['loose_false_alarms'].get(monitor, 0)} | "
                f"{_n(fa['loose_allowed'][monitor])} |")
        other = {k: v for k, v in fa["false_alarms"].items() if k not in fa["allowed"]}
        for monitor, count in sorted(other.items()):
            lines.append(f"| {fa['game']} | {fa['rounds']:,} | {monitor} | {count} | 0 | | |")
    lines += ["", "Observed rates over those fair rounds against the exact odds "
              "(`tabled odds`):", "", "| game | rate | observed | exact |", "|---|---|---:|---:|"]
    for fa in results["false_alarms"]:
        for name, (seen, exact) in fa["rates"].items():
            lines.append(f"| {fa['game']} | {name} | {seen * 100:.3f} % | {exact * 100:.3f} % |")
    lines += ["", "**Detection delays** (rounds until the alert; median and 95th percentile):",
              "", "| case | replications | detected | median | 95th percentile | mean | "
              "counted |", "|---|---:|---:|---:|---:|---:|---|"]
    for d in results["delays"]:
        lines.append(f"| {d['case']} | {d['replications']} | {d['detected']} | "
                     f"{d['median']:g} {d['unit']} | {d['p95']:g} {d['unit']} | "
                     f"{d['mean']:g} | {d['note']} |")
    lines += ["", "**Throughput** (one table's monitors, CPU time, best of 3; the whole "
              "`tabled integrity` pipeline — parsing, rules core, monitors — for scale):", "",
              "| game | messages/s (events + outcomes) | events/s | rounds/s | "
              "`tabled integrity` lines/s |", "|---|---:|---:|---:|---:|"]
    for t in results["throughput"]:
        lines.append(f"| {t['game']} | {t['messages_per_s']:,} | {t['events_per_s']:,} | "
                     f"{t['rounds_per_s']:,} | {t['command_lines_per_s']:,} |")
    lines += ["", END]
    return "\n".join(lines)


def thresholds_markdown(settings: Settings = DEFAULT_SETTINGS) -> str:
    """Every threshold the default settings give (docs/integrity.md, "Thresholds"; a test
    checks the document holds exactly this)."""
    lines = [THRESHOLDS[0], "",
             "| game | assumed pace (rounds/h) | statistics (m) | per statistic, false alarms "
             "/ 10,000 h | CUSUM threshold h |", "|---|---:|---:|---:|---|"]
    for game in GAMES:
        c = calibrate(game, None, settings)
        hs = [f"dice {c.dice_h:.2f}"] if c.part.dice else []
        hs += [f"frequency per {g.observation} {g.h:.2f}" for g in c.frequency]
        lines.append(f"| {game} | {c.pace.assumed_pace:g} | {c.statistics} | "
                     f"{c.per_statistic:.4f} | {'; '.join(hs)} |")
    lines += ["", "| rate | p0 (tabled odds) | tuned to, up | tuned to, down | "
              "evidence/observation | delay at the tuned shift (Wald) |",
              "|---|---:|---:|---:|---:|---:|"]
    for game in GAMES:
        c = calibrate(game, None, settings)
        for g in c.frequency:
            for rate, p0, up, down in zip(g.rates, g.p0, g.up, g.down, strict=True):
                label = f"{game} {rate.subject or rate.name} (per {g.observation})"
                low = f"{down * 100:.3f} %" if down > 1e-6 else \
                    f"drought: none in {g.h / -math.log(1 - p0):,.0f}"
                lines.append(f"| {label} | {p0 * 100:.3f} % | {up * 100:.3f} % | {low} | "
                             f"0.005 | {g.h / 0.005:,.0f} {g.observation}s |")
    for game in GAMES:
        c = calibrate(game, None, settings)
        if c.part.dice:
            lines.append(f"| {game} die face (per roll) | 16.667 % | 25.000 % | (not tested) | "
                         f"{kl(0.25, 1 / 6):.4f} | {c.dice_h / kl(0.25, 1 / 6):,.0f} rolls |")
    # the shoe tests of the (first) game dealt from a watched shoe
    b = next(c for c in (calibrate(game, None, settings) for game in GAMES) if c.part.shoe)
    lines += ["", "| shoe of | fewest hands | per-shoe false-alarm share (each test) | rank run "
              "alerts at | suit run alerts at | riffle SPRT threshold | slug block |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for decks in (6, 8, 10, 12):
        limits = b.shoe(decks)
        lines.append(f"| {decks} decks | {hands_per_shoe(decks):.0f} | {limits.alpha:.2e} | "
                     f"{limits.rank_run} cards | {limits.suit_run} cards | "
                     f"{limits.riffle_h:.2f} | {b.slug_length} cards |")
    lines += ["", THRESHOLDS[1]]
    return "\n".join(lines)


def _replace(text: str, markers: tuple[str, str], block: str) -> str:
    if markers[0] not in text or markers[1] not in text:
        return text
    head, _, rest = text.partition(markers[0])
    _, _, tail = rest.partition(markers[1])
    return head + block + tail


def write_docs(results: dict[str, Any] | None, doc: Path = DOC) -> None:
    """The measured figures (``results``; None: keep the document's) and the thresholds."""
    text = doc.read_text()
    if results is not None:
        text = _replace(text, (BEGIN, END), render(results))
    doc.write_text(_replace(text, THRESHOLDS, thresholds_markdown()))


def run(rounds: int, replications: int, seed: int, pool_hands: int,
        throughput_rounds: int, say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    import os
    import platform

    from bench.measure import _cpu_model, load_average

    results: dict[str, Any] = {
        "seed": seed, "rounds": rounds, "replications": replications,
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores shared, Python "
                   f"{platform.python_version()}, load {load_average()} at the start"}
    results["false_alarms"] = []
    for game in GAMES:
        say(f"false alarms: {rounds:,} fair {game} rounds")
        results["false_alarms"].append(false_alarms(game, rounds, seed).to_json())
    say(f"detection delays: {replications} replications of each case")
    results["delays"] = [d.summary() for d in delays(replications, seed, pool_hands)]
    say("throughput")
    results["throughput"] = [throughput(g, throughput_rounds, seed) for g in GAMES]
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.integrity", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1_000_000, help="fair rounds per game")
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--pool-hands", type=int, default=100_000,
                        help="fair hands the biased Banker stream draws from")
    parser.add_argument("--throughput-rounds", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--write-docs", action="store_true",
                        help="write docs/integrity.md's figures and bench/integrity.json")
    parser.add_argument("--render", type=Path, metavar="JSON",
                        help="measure nothing: write docs/integrity.md from saved results")
    args = parser.parse_args(argv)
    if args.render is not None:
        write_docs(json.loads(args.render.read_text()))
        return 0
    started = time.monotonic()
    results = run(args.rounds, args.replications, args.seed, args.pool_hands,
                  args.throughput_rounds,
                  say=lambda text: print(f"[{time.monotonic() - started:7.1f} s] {text}",
                                         file=sys.stderr, flush=True))
    print(render(results))
    if args.write_docs:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        write_docs(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
