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
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from tabled.contract.events import (
    encode_event,
)
from tabled.contract.outcome import Game, Outcome, OutcomeRecord
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
from tests.oracle.integrity import (
    BANKER_SHIFT,
    banker_delay,
    banker_pools,
    die_delay,
    play,
    replay_delay,
    riffle_delay,
    sorted_delay,
    stream,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "integrity.md"
RESULTS = ROOT / "bench" / "integrity.json"
BEGIN, END = "<!-- integrity:figures:begin -->", "<!-- integrity:figures:end -->"
THRESHOLDS = ("<!-- integrity:thresholds:begin -->", "<!-- integrity:thresholds:end -->")
GAMES: tuple[Game, ...] = ("craps", "baccarat", "qpoker")
#: How much looser the budget of the check run is.
LOOSE = 1000.0


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
