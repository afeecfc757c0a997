"""docs/performance.md from a run's figures: every figure with its baseline, every goal of issue 6
with its verdict, and for a goal not met the measured reason.

Owns the wording and layout only; it computes nothing a benchmark did not measure (ratios and
ceilings are arithmetic on measured figures, and say so).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bench import smallpc

FAMILY_NAMES = {"shoe": "card-reading shoe (pty)", "shuffler": "shuffler-dealer (pty)",
                "dice": "dice sensor (simulated USB)"}
PIPELINE_NAMES = {"tabled": "tabled", "baseline_a": "(a) pty/USB read + paho publish",
                  "baseline_b": "(b) (a) + fsync'd SQLite WAL insert per frame"}
#: The serial link's window (drivers/link.py WINDOW): frames a device may have unacknowledged.
LINK_WINDOW = 4


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _ms(value: float) -> str:
    return f"{value:.2f}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _goals(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    goals: list[tuple[str, str, str, bool]] = []
    lat = r.get("latency")
    if lat:
        for family in ("shoe", "shuffler", "dice"):
            ratios = lat[family]["ratios"]
            goals.append((f"latency, {family}: p50 / p99 vs baseline (b)", "≤ 1.3× / ≤ 1.5×",
                          f"{ratios['p50_vs_b']:.2f}× / {ratios['p99_vs_b']:.2f}×",
                          ratios["p50_vs_b"] <= 1.3 and ratios["p99_vs_b"] <= 1.5))
    tput = r.get("throughput")
    if tput:
        best = max(tput[f]["events_per_s"] for f in tput)
        lost = sum(t["lost"] for t in tput.values())
        goals.append(("throughput, fsync'd, nothing lost", "≥ 2,000 events/s",
                      f"{best:,.0f} events/s (best family), lost {lost}",
                      best >= 2000 and lost == 0))
    foot = r.get("footprint")
    if foot:
        goals.append(("RSS, a table's devices", "< 60 MB", f"{foot['peak_rss_mb']:.1f} MB (peak)",
                      foot["peak_rss_mb"] < 60))
        goals.append(("CPU idle", "< 0.5 % of a core", f"{foot['idle']['cpu_percent']:.2f} %",
                      foot["idle"]["cpu_percent"] < 0.5))
        goals.append(("READY after start", "≤ 1.5 s", f"{foot['ready_s']['max']:.2f} s (worst)",
                      foot["ready_s"]["max"] <= 1.5))
    rep = r.get("replay")
    if rep:
        rate = rep["baccarat"]["tabled"]["rounds_per_s"]
        goals.append(("replay, baccarat, one core", "≥ 75,000 rounds/s", f"{rate:,.0f} rounds/s",
                      rate >= 75_000))
    fl = r.get("floor")
    if fl:
        lost = sum(run["lost"] for run in fl["runs"])
        sizes = "/".join(str(run["tables"]) for run in fl["runs"])
        goals.append((f"floor, {sizes} tables: loss", "0", str(lost), lost == 0))
    goals += _pit_goals(r)
    goals += smallpc.goals(r)
    goals += _scale_goals(r)
    return goals


STORE_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _pit_goals(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """Issue 14, item 3: per store, the record, publish → DOM, the first paint, RSS after a
    day; the monitors once."""
    goals: list[tuple[str, str, str, bool]] = []
    for store, out in r.get("pit", {}).get("stores", {}).items():
        fl, name = out.get("floor"), STORE_NAMES.get(store, store)
        if not fl:
            continue
        rec = fl["record"]
        tables = fl["tables"]
        goals.append((f"pit ({name}), {tables} tables at 10× pace: record", "0 lost, 0 dup.",
                      f"{rec['lost']} lost, {rec['duplicated']} dup. of {rec['published']:,}",
                      rec["lost"] == 0 and rec["duplicated"] == 0 and rec["unexpected"] == 0))
        dom = (fl.get("dom") or {}).get("floor")
        if dom and dom.get("count"):
            goals.append((f"pit ({name}): publish → floor page DOM, p50 / p99",
                          "≤ 100 / ≤ 250 ms", f"{dom['p50']:.0f} / {dom['p99']:.0f} ms",
                          dom["p50"] <= 100 and dom["p99"] <= 250
                          and dom["count"] == dom["published"]))
        paints = fl.get("paint") or []
        if paints:
            fcp = _median([p["floor_painted"] for p in paints]) / 1000
            goals.append((f"pit ({name}): floor page, {tables} tables, painted (median of "
                          f"{len(paints)})", "≤ 1 s", f"{fcp:.2f} s", fcp <= 1.0))
    for store, out in r.get("pit_day", {}).get("stores", {}).items():
        day, name = out.get("day"), STORE_NAMES.get(store, store)
        if not day:
            continue
        rss = day["memory_mb"]["VmRSS"]
        rec = day["record"]
        goals.append((f"pit ({name}): RSS after {day['hours']:g} h of {day['tables']} tables",
                      "≤ 150 MB", f"{rss:.0f} MB ({rec['lost']} lost, {rec['duplicated']} dup.)",
                      rss <= 150 and rec["lost"] == 0 and rec["duplicated"] == 0))
    mon = r.get("pit_monitors", {}).get("monitors")
    if mon:
        slowest = min(mon["pit"].items(), key=lambda kv: kv[1]["events_per_s"])
        goals.append(("pit: integrity monitors, one core (slowest game)", "≥ 50,000 events/s",
                      f"{slowest[1]['events_per_s']:,.0f} events/s ({slowest[0]})",
                      slowest[1]["events_per_s"] >= 50_000))
    return goals


def _scale_goals(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """Issue 30, item 3: the largest floor into the pit pair."""
    return scale_goals(r.get("scale", {}))


def scale_goals(sc: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    runs = sc.get("runs") or []
    if not runs:
        return []
    x = runs[-1]
    n, rec, dom = x["tables"], x["record"], x["dom"]
    rss = max(m["VmHWM"] for m in x["memory_mb"])
    goals = [(f"scale, {n} tables into a pit pair: record", "0 lost, 0 dup.",
              f"{rec['lost']} lost, {rec['duplicated']} dup. of {rec['published']:,}",
              rec["lost"] == 0 and rec["duplicated"] == 0 and rec["unexpected"] == 0)]
    if dom.get("count"):
        goals.append((f"scale, {n} tables: publish → floor page DOM, p99", "≤ 250 ms",
                      f"{dom['p99']:,.0f} ms ({dom['count']:,} of {dom['published']:,} seen)",
                      dom["p99"] <= 250 and dom["count"] == dom["published"]))
    goals.append((f"scale, {n} tables: RSS per pit (peak)", "≤ 300 MB", f"{rss:.0f} MB",
                  rss <= 300))
    return goals


def _load(r: dict[str, Any]) -> str:
    run = r.get("run", {})
    if "load_mean" not in run:
        return f"{r['machine'].get('load_at_start', '?')} at start"
    which = f" (the last run: {', '.join(run['only'])})" if run.get("merged") else ""
    return (f"mean {run['load_mean']:.2f}, max {run['load_max']:.2f}{which} (this harness alone "
            "keeps about one core busy; more is other work on the machine, which every figure "
            "here shares)")


def _machine(r: dict[str, Any]) -> list[str]:
    m = r["machine"]
    commit = m["durable_commit"]
    return _table(("", ""), [
        ("CPU", f"{m['cpu']}, {m['cores']} cores"), ("memory", f"{m['memory_gb']} GB"),
        ("kernel / Python", f"{m['kernel']} / {m['python']}"), ("broker", m["mosquitto"]),
        ("journal directory", m["journal_fs"]),
        ("one durable SQLite commit (WAL, synchronous=FULL)",
         f"p50 {_ms(commit['p50'])} ms, p99 {_ms(commit['p99'])} ms, max {_ms(commit['max'])} ms"),
        ("load average during the run", _load(r)),
    ])


def _latency(r: dict[str, Any]) -> list[str]:
    lat = r["latency"]
    plan = lat["plan"]
    each = ", in each process" if plan.get("cycles", 1) > 1 else ""
    out = ["## Latency: device byte to subscriber", "",
           f"{plan['count']:,} events per pipeline and family (after {plan['warmup']} not "
           f"counted{each}), one every {1000 / plan['rate']:.0f} ms, QoS 1 end to end. The three "
           f"pipelines of a family run side by side and are driven in turn, {plan['block']} "
           "events at a time, so a drift of the machine (its disk above all) falls on all "
           "three alike."]
    if plan.get("orders"):
        out[-1] += (" The order changes from round to round so that each pipeline runs after "
                    "each of the other two, and after one, two and three blocks idle, equally "
                    "often (bench/latency.py, `ORDERS`): what ran just before a block moves its "
                    "latency, and a fixed order had tabled always after (b).")
    if plan.get("cycles", 1) > 1:
        out[-1] += (f" Each of the {plan['cycles']} cycles of those orders has processes of its "
                    "own (every pipeline started afresh: process, journal file, device), and "
                    "the figures pool them: one process of the same code differs from the next "
                    "by tens of microseconds at the p50 for as long as it runs, and with one "
                    "process per pipeline a run's ratio was a draw of that (Profiles: One "
                    "process, one draw).")
    if plan.get("host_bytes_at_sends"):
        out[-1] += (" tabled's simulated shoe and shuffler take the daemon's ACKs just before "
                    "their next send, not as they arrive: a real device's link runs in its own "
                    "hardware, and the simulated one, handling frame k's ACK in the collector's "
                    "process while the collector waited to stamp frame k, put a cost of the "
                    "simulation on tabled's side alone (the baselines acknowledge nothing; "
                    "measured under Profiles: The harness). The dice sensor answers the ACK at "
                    "once: a USB control transfer is a request the daemon waits on.")
    out[-1] += " Milliseconds:"
    out.append("")
    for family in ("shoe", "shuffler", "dice"):
        res = lat[family]
        out += [f"### {FAMILY_NAMES[family]}", ""]
        out += _table(("pipeline", "p50", "p99", "p99.9", "max", "mean", "lost"), [
            (PIPELINE_NAMES[p], _ms(res[p]["p50"]), _ms(res[p]["p99"]), _ms(res[p]["p999"]),
             _ms(res[p]["max"]), _ms(res[p]["mean"]), res[p]["lost"])
            for p in ("tabled", "baseline_a", "baseline_b")])
        ratios = res["ratios"]
        out += [f"Ratios: tabled / (b) = **{ratios['p50_vs_b']:.2f}×** at p50 and "
                f"**{ratios['p99_vs_b']:.2f}×** at p99 (goal 1.3× and 1.5×); tabled / (a) = "
                f"{ratios['p50_vs_a']:.2f}× and {ratios['p99_vs_a']:.2f}×."]
        cycles = list(zip(res["tabled"].get("cycles", []), res["baseline_b"].get("cycles", []),
                          strict=False))
        if len(cycles) > 1:
            out[-1] += (" Each cycle's processes alone, tabled / (b) at p50: "
                        + ", ".join(f"{t['p50'] / b['p50']:.2f}×" for t, b in cycles)
                        + "; at p99: " + ", ".join(f"{t['p99'] / b['p99']:.2f}×" for t, b in cycles)
                        + ".")
        out.append("")
    return out


def _throughput(r: dict[str, Any]) -> list[str]:
    tput = r["throughput"]
    best = max(t["events_per_s"] for t in tput.values())
    out = ["## Throughput: highest sustained event rate, journal fsync'd, nothing lost", "",
           "Each device offers its whole script at once; the daemon acknowledges a frame only "
           "after the journal commit that holds it, so the rate the device reaches is the rate "
           "the daemon takes. Lost and duplicated are counted at the subscriber.", ""]
    out += _table(("family", "events", "events/s", "lost", "duplicates", "daemon CPU"), [
        (FAMILY_NAMES[f], f"{t['events']:,}", f"{t['events_per_s']:,.0f}", t["lost"],
         t["duplicates"], f"{t['daemon_cpu_percent']:.0f} %") for f, t in tput.items()])
    out += [f"A serial device may have {LINK_WINDOW} frames unacknowledged "
            "(docs/protocols/framing.md) and the daemon acknowledges a frame only once the "
            f"commit holding it is fsync'd, so a device gets at most {LINK_WINDOW} events into "
            f"one durable commit: {best:,.0f} events/s means a commit (and its acknowledgement) "
            f"every {LINK_WINDOW / best * 1000:.2f} ms or less. The dice sensor's rate is that "
            "of the simulated USB bus (a JSON request over a Unix socket per transfer, and an "
            "acknowledgement per report), not of a real bus.", ""]
    return out


def _footprint(r: dict[str, Any]) -> list[str]:
    f = r["footprint"]
    idle, pace = f["idle"], f["table_pace"]
    starts = ", ".join(f"{s:.2f}" for s in f["ready_s"]["starts"])
    out = ["## Footprint: one daemon, its table's devices attached", "",
           f"A baccarat table with {', '.join(f['devices'])} on their simulators (three live "
           "links with heartbeats, the broker connection, metrics every 5 s). CPU is the "
           "daemon's user + system time over the window, 100 % = one core.", ""]
    out += _table(("state", "window", "CPU", "RSS"), [
        ("idle", f"{idle['seconds']:g} s", f"{idle['cpu_percent']:.2f} %",
         f"{idle['rss_mb']:.1f} MB"),
        (f"table pace (a card every {pace['card_every_s']:g} s)", f"{pace['seconds']:g} s",
         f"{pace['cpu_percent']:.2f} %", f"{pace['rss_mb']:.1f} MB"),
        ("peak", "", "", f"{f['peak_rss_mb']:.1f} MB"),
    ])
    out += [f"READY (spawn to `READY=1` on the notify socket): median "
            f"{f['ready_s']['median']:.2f} s, worst {f['ready_s']['max']:.2f} s over "
            f"{len(f['ready_s']['starts'])} starts ({starts} s). The service waits up to 1 s "
            "for its devices and broker before READY (daemon/service.py `T_READY`).", ""]
    return out


def _replay(r: dict[str, Any]) -> list[str]:
    rep = r["replay"]
    out = ["## Replay: `tabled replay` throughput, whole process, one core", "",
           "Seeded streams of the replay oracle tests (irregular events and events of other "
           "games included), read from a file, outcomes written to a file; wall time from spawn "
           "to exit, interpreter start included, best of the repeats. The reference is "
           "`python -m bench.reference`: the test oracles, a plain second reading of the rules.",
           ""]
    out += _table(("game", "rounds", "events", "tabled rounds/s", "reference rounds/s",
                   "tabled / reference", "tabled rounds per CPU-second"), [
        (g, f"{x['rounds']:,}", f"{x['events']:,}", f"{x['tabled']['rounds_per_s']:,.0f}",
         f"{x['reference']['rounds_per_s']:,.0f}", f"{x['ratio']:.2f}×",
         f"{x['tabled']['rounds_per_cpu_s']:,.0f}")
        for g, x in rep.items() if isinstance(x, dict) and "tabled" in x])
    out += ["Rounds per CPU-second is the same run measured by the process's own CPU time "
            "(user + system): what one core does when nothing else competes for it."
            + _replay_load(rep), ""]
    parts = rep.get("baccarat", {}).get("breakdown")
    if parts:
        out += ["Where a baccarat round's time goes (in process, µs per round, "
                f"{parts['events_per_round']:.2f} events per round):", ""]
        out += _table(("step", "µs/round"), [(k, f"{v:.2f}") for k, v in parts["us"].items()])
    return out


def _replay_load(rep: dict[str, Any]) -> str:
    loads = {g: x["load"] for g, x in rep.items() if isinstance(x, dict) and "load" in x}
    if not loads:
        return ""
    return (" The machine's load average (1 min) at the start and end of each game's runs: "
            + "; ".join(f"{g} {x['start']:.2f} to {x['end']:.2f}" for g, x in loads.items())
            + " (2.00 is both cores busy).")


def _floor(r: dict[str, Any]) -> list[str]:
    fl = r["floor"]
    out = ["## Floor scale: one broker, many tables", "",
           f"Each table is a whole daemon service (own config, journal fsync'd on disk, rules, "
           f"supervised shoe driver, MQTT connection) dealt by its own simulated shoe on a pty "
           f"at ten times a real table's pace (a card every {fl['card_every_s']:g} s), for "
           f"{fl['seconds']:g} s. The tables run as in-process table runtimes in "
           f"{fl['workers']} table-host processes, the shoes in {fl['device_hosts']} device-host "
           "processes; one consumer reads every table through a shared subscription "
           "(`$share/floor/tabled/bench/+/event` and `…/outcome`). Latency is shoe frame to "
           "consumer.", ""]
    out += _table(("tables", "events/s", "lost", "p50 ms", "p99 ms", "p99.9 ms", "broker CPU",
                   "table hosts CPU", "per table", "RSS per table"), [
        (x["tables"], f"{x['events_per_s']:.0f}", x["lost"], _ms(x["latency"]["p50"]),
         _ms(x["latency"]["p99"]), _ms(x["latency"]["p999"]),
         f"{x['cpu_percent']['broker']:.1f} %", f"{x['cpu_percent']['tables']:.0f} %",
         f"{x['tables_cpu_per_table']:.2f} %", f"{x['rss_per_table_mb']:.1f} MB")
        for x in fl["runs"]])
    runs = fl["runs"]
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        grow = (b["tables"] - a["tables"]) or 1
        broker_per = (b["cpu_percent"]["broker"] - a["cpu_percent"]["broker"]) / grow
        tables_per = (b["cpu_percent"]["tables"] - a["cpu_percent"]["tables"]) / grow
        out += [f"From {a['tables']} to {b['tables']} tables the broker's CPU grows by "
                f"{broker_per * 100:.2f} % of a core per 100 tables and the tables' own by "
                f"{tables_per * 100:.1f} % per 100 tables: linear in the number of tables (every "
                "table adds its own events, commits and one connection). See docs/deployment.md "
                "for the scale-out path beyond one broker.", ""]
    return out


def _scale(r: dict[str, Any]) -> list[str]:
    return scale_section(r["scale"])


def scale_section(sc: dict[str, Any]) -> list[str]:
    """The pit pair's section (bench/scale.py), between markers: ``python -m bench.scale
    --write-docs`` replaces it alone."""
    runs = sc["runs"]
    m = sc.get("machine", {})
    out = ["<!-- scale:figures -->", "## 200 to 1,000 tables into a pit pair", "",
           "Two `tabled pit` processes with one `mqtt.share_group` and one PostgreSQL "
           f"{sc.get('postgres', '')} record (a private server, durable defaults; docs/pit.md "
           "\"Several pit servers on one floor\"), one Mosquitto with the floor broker's "
           "settings, and Debian's Chromium signed in on pit A's floor page (every tile), "
           f"each size for {sc['seconds'] / 60:g} min of dealing at a real table's pace (bench/"
           "scale.py). **Simulated:** the tables. Each is a daemon's own rules runtime and "
           "message numbering over an in-memory journal, fed by the simulators' generation "
           "code (tests/pit/tablefeed.py), every message byte for byte what a daemon "
           "publishes: a baccarat card every 6 s (a hand about every 30 s), a craps roll every "
           "30 s, a Q Poker event every 5.5 s (a round a minute), each gap 0.5-1.5 times that, "
           "metrics every 5 s; three tables in five baccarat, one craps, one Q Poker. All of "
           "them run in one load process over four MQTT connections (each table's messages in "
           "order on one, QoS 1) instead of a daemon and a connection each. **Real:** the "
           "broker, both pits, PostgreSQL, the browser.", "",
           "The record is checked number by number per (site, table, stream, `table_seq`) "
           "against what was published (lost, duplicated, unexpected). Publish → DOM: the "
           "load stamps each outcome with `time.monotonic()` just before handing it to paho; "
           "a MutationObserver in the page stamps the tile's new `data-last-round` with "
           "`performance.timeOrigin + performance.now()`; both are CLOCK_MONOTONIC on this "
           "one machine, the page's offset measured by the tightest of 20 round trips before "
           "and after the dealing (uncertainty under 1 ms). The first seconds' outcomes are "
           "not counted. \"A's share\" are the outcomes pit A recorded itself (they reach "
           "its page straight from its subscription); \"B's share\" reached pit A's page "
           "through the shared record (`_follow_records`). A program reads pit A's floor "
           "stream beside the browser (so pit A serves two floor streams). CPU is % of one "
           "core over the "
           "dealing; RSS is each pit's VmHWM (the peak of the whole run).", "",
           f"Measured {sc.get('date', '?')} on {m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
           f"{m.get('memory_gb', '?')} GB, shared with other work: the machine's load average "
           "during each size is in the table (this benchmark alone keeps about one core "
           "busy). Reproduce: `.venv/bin/python -m bench.scale --tables 200,500,1000 "
           "--minutes 2 --experiment-follow 0.1 --write-docs` (this section and "
           "bench/scale.json; `--profile` runs pit A under cProfile), or `make bench` "
           "(`python -m bench --only scale`).", ""]
    out += _table(("figure", "goal", "measured", "verdict"),
                  [(n, g, v, _verdict(ok)) for n, g, v, ok in scale_goals(sc)])
    out += _table(("tables", "msg/s", "outcomes/s", "lost / dup.", "DOM p50 / p99 ms",
                   "p99, A's share", "p99, B's share", "pit A / B CPU", "pit A / B RSS peak",
                   "PostgreSQL CPU", "Mosquitto CPU", "load CPU", "Chromium CPU",
                   "load average"), [
        (x["tables"], f"{x['messages_per_s']:.0f}", f"{x['outcomes_per_s']:.1f}",
         f"{x['record']['lost']} / {x['record']['duplicated']} of {x['record']['published']:,}",
         f"{_lat(x['dom'])[0]} / {_lat(x['dom'])[1]} ({_lat(x['dom'])[2]})",
         _lat(x.get("dom_a"))[1], _lat(x.get("dom_b"))[1],
         f"{x['cpu_percent']['pit_a']:.0f} / {x['cpu_percent']['pit_b']:.0f} %",
         " / ".join(f"{m['VmHWM']:.0f}" for m in x["memory_mb"]) + " MB",
         f"{x['cpu_percent']['postgres']:.0f} %", f"{x['cpu_percent']['mosquitto']:.1f} %",
         f"{x['cpu_percent']['load']:.0f} %",
         f"{x['cpu_percent']['browser']:.0f} %" if "browser" in x["cpu_percent"] else "–",
         f"{x['load_average']['mean']:.1f} (max {x['load_average']['max']:.1f})")
        for x in runs])
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        per = (b["tables"] - a["tables"]) / 100 or 1

        def cpu(x: dict[str, Any]) -> float:
            return float(x["cpu_percent"]["pit_a"] + x["cpu_percent"]["pit_b"]) / 2

        def rss(x: dict[str, Any]) -> float:
            return sum(m["VmRSS"] for m in x["memory_mb"]) / len(x["memory_mb"])

        out += [f"From {a['tables']} to {b['tables']} tables each pit's CPU grows by "
                f"{(cpu(b) - cpu(a)) / per:.1f} % of a core per 100 tables (mean of the two "
                f"pits: {cpu(a):.0f} % → {cpu(b):.0f} %) and its resident memory at the end of "
                f"the dealing by {(rss(b) - rss(a)) / per:.1f} MB per 100 tables "
                f"({rss(a):.0f} → {rss(b):.0f} MB); PostgreSQL's CPU "
                f"{a['cpu_percent']['postgres']:.0f} % → {b['cpu_percent']['postgres']:.0f} %. "
                "The load generator ran behind its schedule by at most "
                f"{max(x['load_late']['late_max_s'] for x in runs):.1f} s (every "
                "publish time is taken when the message is really handed to paho, so a late "
                "load makes the pace lower, never the latency smaller).", ""]
    out += _scale_parts(sc)
    return [*out, "<!-- /scale:figures -->", ""]


def _buckets(pits: list[dict[str, Any]] | None, which: str = "p99") -> str:
    """Each pit's p99 (or max) as its histogram's bucket: "≤ 10 / ≤ 25 ms"."""
    if not pits:
        return "–"
    return " / ".join("–" if p.get(f"{which}_le_ms") is None else f"≤ {p[f'{which}_le_ms']:g}"
                      for p in pits) + " ms"


def _follow_words(sc: dict[str, Any]) -> str:
    """How pit A learned its partner's records in the run: by the poll or told by PostgreSQL."""
    if sc.get("follow") == "notify":
        return ("from the shared record when PostgreSQL tells of pit B's commit (`LISTEN`/"
                f"`NOTIFY`, read at most every `T_FOLLOW_MIN` = {sc.get('t_follow_min', 0):g} s; "
                "pit/service.py `_follow_records`)")
    return (f"by reading the shared record every `T_FOLLOW` = {sc.get('t_follow', 0.5):g} s "
            "(pit/service.py `_follow_records`)")


def _scale_parts(sc: dict[str, Any]) -> list[str]:
    """Where publish → DOM goes: the follow poll at the smallest size, the page's backlog at
    the largest, the memory peak, and what the follow interval costs."""
    runs = sc["runs"]
    small, x = runs[0], runs[-1]
    own, other = small.get("dom_a") or {}, small.get("dom_b") or {}
    out = ["**What the latency is made of.**"]
    if own.get("count") and other.get("count"):
        out.append(f"At {small['tables']} tables the outcomes pit A recorded itself reached its "
                   f"page with p50 {own['p50']:,.0f} ms, p99 {own['p99']:,.0f} ms; those pit B "
                   f"recorded, which pit A learns {_follow_words(sc)}, with p50 "
                   f"{other['p50']:,.0f} ms, p99 {other['p99']:,.0f} ms"
                   + (": half the floor waits for that poll before it is even in its model."
                      if sc.get("follow") != "notify" else
                      " (its receipt by pit B, B's commit, then pit A's read of the record)."))
    out.append("Along the way, p50 / p99 in ms (the broker's is a subscriber of the bench's "
               "own, no pit, stamped as it gets each outcome: the load generator and Mosquitto "
               "on this machine; the receipt is the record's `received_at` less the publish "
               "time, both on the wall clock; the stream is a program reading pit A's floor "
               "stream beside the browser; the script is the page's handler of the SSE "
               "message, before htmx swaps it in), with each pit's event-loop lag and its "
               "record's write time over the dealing (p99 within the bucket shown, from "
               "`pit_event_loop_lag_seconds` and `pit_store_seconds{operation=\"record_batch\"}`), "
               "the longest of its full garbage collections (`pit_gc_pause_seconds`) "
               "and the page's main thread (Chromium's own counters: the share of the window it "
               "was busy):")
    rows = [(y["tables"], *(f"{_lat(y.get(k))[0]} / {_lat(y.get(k))[1]}"
                             for k in ("broker_delivery", "broker_to_receipt", "received",
                                       "stream_reader", "sse_arrival", "dom")),
             _buckets(y.get("loop_lag")), _buckets(y.get("record_latency")),
             _buckets([g["2"] for g in y["gc_pause"]] if y.get("gc_pause") else None, "max"),
             f"{y['cpu_percent'].get('browser', float('nan')):.0f} %",
             (f"{y['page_main_thread']['task_percent']:.0f} %"
              if y.get("page_main_thread") else "–")) for y in runs
            if (y.get("received") or {}).get("count")]
    parts = [" ".join(out), ""]
    if rows:
        parts += _table(("tables", "publish → broker", "broker → pit's receipt",
                         "publish → receipt", "→ pit A's stream", "→ page script", "→ DOM",
                         "loop lag p99, A / B", "record write p99, A / B",
                         "full GC pause max, A / B", "Chromium CPU", "page main thread busy"),
                        rows)
    out = []
    late = [y for y in runs if (y.get("dom_a") or {}).get("p99", 0) > 1000]
    if late:
        y = late[-1]
        got, dom = y.get("received") or {}, y["dom"]
        where = ("the pits' receipt itself fell behind (publish → `received_at` p99 "
                 f"{got['p99']:,.0f} ms): they wanted more CPU than they got"
                 if got.get("count") and got["p99"] > dom["p99"] / 2 else
                 "the receipt kept up, the delay is in pit A's floor stream and the browser")
        base = runs[0]
        need = (base["cpu_percent"]["pit_a"] / base["messages_per_s"] * y["messages_per_s"])
        cores = sc.get("machine", {}).get("cores")
        fair = 100 * cores / y["load_average"]["mean"] if cores else None
        out.append(f"At {y['tables']} tables pit A's own share is late too (p99 "
                   f"{y['dom_a']['p99']:,.0f} ms), so the poll is not the cause: {where}. "
                   f"The browser saw {dom['count']:,} of the {dom['published']:,} outcomes of "
                   "the window before the run ended. By its CPU per message at "
                   f"{base['tables']} tables (arithmetic on the measured figures) pit A would "
                   f"have needed about {need:.0f} % of a core for {y['messages_per_s']:.0f} "
                   f"messages a second; it got {y['cpu_percent']['pit_a']:.0f} %"
                   + (f", about a fair share of {cores} cores at a load average "
                      f"of {y['load_average']['mean']:.1f} ({fair:.0f} %)" if fair else "")
                   + ".")
    born, signed = x.get("born_memory_mb"), x.get("page_memory_mb")
    if born and signed:
        out.append(f"Pit A's peak memory is a sign-in's: its VmHWM was {born[0]['VmHWM']:.0f} MB "
                   f"with every table born and {signed[0]['VmHWM']:.0f} MB once the browser had "
                   "signed in (one argon2id verification; argon2-cffi's default profile takes "
                   "64 MiB); pit B, never signed in to, peaked at "
                   f"{x['memory_mb'][1]['VmHWM']:.0f} MB. Sign-ins at the same moment add "
                   "64 MiB each (they run in threads).")
    prof = sc.get("profile")
    if prof:
        shares = ", ".join(f"{part} {share * 100:.0f} %" for part, share in sorted(
            prof["own_share"].items(), key=lambda kv: -kv[1]))
        top = "; ".join(f"`{t['function']}` {t['own_s'] / prof['total_s'] * 100:.0f} %"
                        for t in prof["top"][:6])
        out.append(f"Where pit A's time goes ({prof['tables']} tables, its page and the "
                   f"program's stream open; cProfile, `--profile`: {prof['total_s']:.0f} s "
                   "busy in its main thread, the wait in epoll left out). By the code's own "
                   f"time: {shares}; the rest is asyncio, JSON and the interpreter. The "
                   f"largest single functions: {top}."
                   + (f" `incidents()` (pit/alerts.py: every alert of the floor grouped and "
                      "sorted into incidents, for each render of the page's alerts panel) took "
                      f"{prof['incidents']['cumulative_s'] / prof['total_s'] * 100:.0f} % of "
                      f"it in {prof['incidents']['calls']:,} calls."
                      if prof.get("incidents", {}).get("calls") else "")
                   + (f" That run's pits were stopped {prof['seconds']:g} s into the dealing "
                      "plus a minute's wait while still behind (pit A under cProfile is "
                      "slower): {lost} of the {published:,} numbers published were not in the "
                      "record when they stopped.".format(**prof["record_at_stop"])
                      if prof.get("record_at_stop", {}).get("lost") else ""))
    exp = sc.get("follow_experiment")
    if exp and exp.get("dom", {}).get("count"):
        out.append(f"The same {exp['tables']} tables with the pits' `T_FOLLOW` set to "
                   f"{exp['follow_every']:g} s (an experiment, `--experiment-follow`; not the "
                   f"pit as shipped): publish → DOM p50 {exp['dom']['p50']:,.0f} ms, p99 "
                   f"{exp['dom']['p99']:,.0f} ms; B's share p50 "
                   f"{_lat(exp.get('dom_b'))[0]} ms (shipped: {_lat(small.get('dom_b'))[0]} ms), "
                   "its p99 lost in this run's load; each pit's CPU "
                   f"{exp['cpu_percent']['pit_a']:.0f} / {exp['cpu_percent']['pit_b']:.0f} %, "
                   f"PostgreSQL {exp['cpu_percent']['postgres']:.0f} %, load average "
                   f"{exp['load_average']['mean']:.1f}.")
    return [*parts, " ".join(out), ""]


def _lat(x: dict[str, Any] | None) -> tuple[str, str, str]:
    if not x or not x.get("count"):
        return ("–", "–", "–")
    return (f"{x['p50']:,.0f}", f"{x['p99']:,.0f}",
            f"{x['count']:,} of {x.get('published', x['count']):,}")


def _pit(r: dict[str, Any]) -> list[str]:
    p = r["pit"]
    plan = p["plan"]
    out = ["## The pit keeps up with a floor", "",
           f"`tabled pit` as systemd runs it (its own process, TOML config, JSON logs), its "
           f"record in SQLite or in PostgreSQL {p.get('postgres', '')} (a server of its own, "
           "durable defaults), one Mosquitto, and a floor of "
           f"{plan['tables']} tables (three baccarat in five, one craps, one Q Poker) at ten "
           "times a real pace for "
           f"{plan['seconds']:g} s: each table a daemon's own runtime and journal, its messages "
           "read back from the journal and published byte for byte (bench/pitload.py). "
           f"Debian's Chromium ({p.get('browser')}) is signed in on the floor page and on one "
           "baccarat table's page; a MutationObserver stamps each outcome's first appearance "
           "in the DOM, the load generator stamped it just before handing it to paho, both on "
           "this machine's CLOCK_MONOTONIC (each page's clock offset measured before and after "
           "the dealing and taken off; the wall clock is slewed here, about 5 ms a second). "
           "**Bare relay** (the baseline): a paho subscriber pushing "
           "each outcome over server-sent events to a page that writes it into its DOM, no "
           "record, no model, running at the same time. After the latency window the floor "
           f"page is loaded afresh {plan['paints']} times, the load still running: "
           "'painted' is the first frame after every tile is in the document, FCP the "
           "browser's first contentful paint. Then the pit is stopped and its record compared "
           "with what was published, number by number.", ""]
    rows = []
    for store, o in p["stores"].items():
        fl = o.get("floor")
        if not fl:
            continue
        dom, sse = fl.get("dom") or {}, fl.get("sse_arrival") or {}
        for page in ("floor", "table", "relay"):
            if page in dom:
                rows.append((STORE_NAMES.get(store, store),
                             {"floor": "floor page", "table": "table page",
                              "relay": "bare relay (baseline)"}[page],
                             *_lat(dom.get(page)), _lat(sse.get(page))[1]))
    out += _table(("store", "page", "publish → DOM p50 ms", "p99 ms", "outcomes seen",
                   "p99 ms, SSE event arrived"), rows)
    rows = []
    for store, o in p["stores"].items():
        fl = o.get("floor")
        if not fl:
            continue
        rec, paints = fl["record"], fl.get("paint") or []
        painted = [x["floor_painted"] / 1000 for x in paints]
        fcp = [x["fcp"] / 1000 for x in paints if x.get("fcp")]
        rows.append((STORE_NAMES.get(store, store), f"{fl['messages_per_s']:.0f}",
                     f"{rec['published']:,}", rec["lost"], rec["duplicated"], rec["unexpected"],
                     f"{fl['pit_cpu_percent']:.0f} %", f"{fl['memory_mb']['VmRSS']:.0f} MB",
                     f"{_median(painted):.2f} / {max(painted):.2f} s" if painted else "–",
                     f"{_median(fcp):.2f} s" if fcp else "–",
                     f"{fl['load_average']['mean']:.1f}"))
    out += _table(("store", "messages/s", "numbers published", "lost", "duplicated",
                   "unexpected", "pit CPU", "pit RSS", "painted, median / worst", "FCP median",
                   "load avg"), rows)
    rows = []
    for store, o in p["stores"].items():
        rec = o.get("simplest_recorder")
        fl = o.get("floor")
        if rec and fl:
            rows.append((STORE_NAMES.get(store, store), f"{rec['per_s']:,.0f}",
                         f"{fl['messages_per_s']:.0f}",
                         f"{rec['per_s'] / fl['messages_per_s']:.0f}×"))
    if rows:
        out += ["The simplest recorder (the baseline of messages per second): a loop inserting "
                "each of the floor's messages into the store, one commit each, nothing else. "
                "The floor at ten times a real pace needs the rate in the third column.", ""]
        out += _table(("store", "simplest recorder, messages/s", "the floor sends, messages/s",
                       "headroom"), rows)
    return out


def _pit_day(r: dict[str, Any]) -> list[str]:
    p = r["pit_day"]
    plan = p["plan"]
    out = ["## The pit after a simulated day", "",
           f"{plan['day_hours']:g} h of table time for {plan['day_tables']} tables, dealt as "
           "fast as the pit takes it (at most a window of messages ahead of what it has "
           "taken), table clocks in the past day; a floor page's live stream read all along. "
           "Baseline: the same pit just started with an empty record.", ""]
    rows = []
    for store, o in p["stores"].items():
        day = o.get("day")
        if not day:
            continue
        rec, size = day["record"], day["record_size"]
        rows.append((STORE_NAMES.get(store, store), f"{day['messages']:,}",
                     f"{day['seconds']:.0f} s", f"{day['messages_per_s']:,.0f}",
                     f"{day['pit_cpu_percent']:.0f} %", rec["lost"], rec["duplicated"],
                     f"{day['idle_memory_mb']['VmRSS']:.0f} MB",
                     f"{day['memory_mb']['VmRSS']:.0f} MB", f"{day['memory_mb']['VmHWM']:.0f} MB",
                     f"{size['bytes'] / 2**20:,.0f} MB ({size['bytes_per_message']:.0f} B/msg)"))
    return [*out, *_table(("store", "messages", "took", "messages/s", "pit CPU", "lost",
                           "duplicated", "RSS idle (baseline)", "RSS after", "peak RSS",
                           "record on disk"), rows)]


def _pit_monitors(r: dict[str, Any]) -> list[str]:
    mon = r["pit_monitors"]["monitors"]
    out = ["## The pit's integrity monitors", "",
           "Events per CPU-second through one table's monitors as the pit runs them "
           "(`pit.watch` fed the payloads the pit received), against the monitors alone "
           "(bench/integrity.py's throughput, events made beforehand: the baseline).", ""]
    alone = {x["game"]: x for x in mon["alone"]}
    rows = [(game, f"{x['events_per_s']:,.0f}", f"{x['messages_per_s']:,.0f}",
             f"{alone[game]['events_per_s']:,.0f}" if game in alone else "–")
            for game, x in mon["pit"].items()]
    return [*out, *_table(("game", "events/s, as the pit runs them", "messages/s",
                           "events/s, monitors alone"), rows)]


#: What profiling the daemon showed, and what was changed before the figures above were recorded.
#: Written by hand (each item is dated): the tables above are the only generated figures.
PROFILES = [
    "## Profiles, and what they changed", "",
    "Each hot path was profiled with py-spy (`py-spy record --rate 1000 --format raw --pid "
    "<daemon>` during the latency benchmark) or a per-stage trace, and fixed, before the "
    "figures above were recorded (all on 2026-11-29):", "",
    "- **Latency tail, 35 ms**: a full garbage collection walked the objects made at start-up "
    "on the event loop. They are frozen (`gc.freeze()`) before READY.",
    "- **Latency tail, 40 ms**: Nagle's algorithm held the second of two back-to-back QoS 1 "
    "publishes until the peer's delayed ACK. TCP_NODELAY on the daemon's socket and "
    "`set_tcp_nodelay true` on the broker: p99.9 from 40 ms to 4-6 ms.",
    "- **Commit stalls**: SQLite's automatic WAL checkpoint ran inside a commit every 1,000 "
    "pages (a copy and a second fsync on the event loop). Checkpoints run in a thread of their "
    "own.",
    "- **Idle CPU**: link heartbeats every 2 s instead of every second (0.53 % to 0.45 % of a "
    "core).",
    "- **Publish hand-off**: the publisher woke through `wait_for` on an event, a task and a "
    "second, empty journal read after each commit. A commit now starts its messages' "
    "publishes itself (about 0.1 ms of p50).",
    "- **One page less per commit**: the broker's acknowledged position, recorded with every "
    "commit, went to a table of its own, one more page in every commit's WAL: 0.1-0.15 ms of "
    "a commit on this disk (a commit of three journal rows alone: +0.07 ms over one bare row). "
    "It now rides in a column of the commit's last journal row.",
    "- **Replay parsing**: the standard library's JSON scanner called directly, one parser per "
    "event type, slot setters, orjson for records: parsing three times faster, output byte "
    "for byte the same (replaced by the next item).",
    "- **Replay, issue 14** (2026-12-01; the parsing above was still half of a round): each "
    "event is decoded and validated in one msgspec pass, in C, into typed structs (a tagged "
    "union on `type`; the contract's rules for each field are the structs' annotations, and "
    "what msgspec cannot say is checked off the common path); the daemon's journal rebuild and "
    "the pit decode through the same structs (tests/contract/test_one_decoder.py). An outcome is "
    "encoded in one msgspec call from parts made once (baccarat's and craps' bet mappings "
    "carry their JSON from when the rules build them; the result parts are msgspec structs) "
    "instead of a record of dicts per round for orjson. Outcome lines go out 64 to a write: "
    "with standard output unbuffered (`PYTHONUNBUFFERED`, set in this machine's environment) "
    "each line had been two system calls, a third of the run. Baccarat counts a dealt card "
    "without two method calls. Whole-process CPU time on the same streams as the table above, "
    "the two run back to back, before (main's replay) → after: baccarat 38,900 → 115,300 "
    "rounds per CPU-second, craps 48,200 → 205,000, Q Poker 6,650 → 9,830 (Q Poker's time is "
    "its rules': ranking hands and following the deal). Output byte for byte the same.", "",
    "Where the rest of tabled's p50 goes, from a per-stage trace of 1,000 shoe events "
    "(perf_counter marks in the daemon, p50, taken before the page-per-commit change above): "
    "the link, driver, rules and staging 0.17-0.19 ms; the journal commit 0.55-0.63 ms (three"
    " or four rows, their JSON and hash chain, the acknowledged position then in a table of "
    "its own, one fsync; one bare durable commit is about 0.3 ms); commit to the publish "
    "task's start 0.14 ms (one turn of the event loop); paho's `publish` call 0.07 ms; and "
    "one more turn of the loop before paho writes the socket (aiomqtt writes from a writer "
    "callback) 0.1 ms. In the py-spy profile the fsync of the COMMIT is about a quarter of "
    "the daemon's samples and the rest of the journal write an eighth; no single function "
    "beyond them stands out.", "",
    "Issue 14 (2026-12-01), the latency's second round, stage by stage along an event's path "
    "(the journal measured with `python -m bench.journal_cost`, the rest with py-spy and "
    "the per-stage trace):", "",
    "- **Device to loop (dice)**: pyusb blocks, and every interrupt read and every ACK went "
    "through a worker thread and back to the loop. Now a reader thread and a control thread "
    "per connection: packets go to the loop with `call_soon_threadsafe`, the packets that "
    "arrive together are made durable in one commit and acknowledged by one cumulative ACK "
    "(queued ACKs merge); a RESEND holds the packets behind it until its reply.",
    "- **Staging**: an outcome's and a notice's log line was written while the event was "
    "staged, before its commit: 35 µs of CPU of every outcome event ahead of its publish "
    "(stage p90 50 → 15 µs on shoe events). It is written after the commit and the publish, "
    "and only for what was made durable. The event is encoded once (`event_to_dict`) and "
    "copied once (the driver's stamp) — already so before this round.",
    "- **Commit**: the journal's unique index on each output's (topic, number) puts its leaf "
    "pages into every commit's WAL — one page more per commit, two with an outcome (WAL bytes "
    "per shoe-event commit: 11.2 kB with it, 6.7 kB without; (b) writes 4.2 kB). Dropping it "
    "was tried (a journal format 3) and measured no faster on this disk, where raw fsyncs of "
    "4, 8 and 12 KiB cost the same; the index stays, as the database's own guard against a "
    "number given twice.",
    "- **Commit to publish**: the publisher's read right after a commit is answered from that "
    "write's own outputs instead of a SELECT, and the message is written to the broker's "
    "socket inside the commit's callback, before it returns (daemon/mqtt/client.py, "
    "`TableClient.publish_now`: paho's `publish` and `loop_write`). aiomqtt's `publish` took "
    "three turns of the loop (a task, a writer registered through `call_soon_threadsafe`, a "
    "turn for the socket to be found writable): 0.2-0.3 ms of every event, and for the dice "
    "each turn queued for the GIL behind the control thread's ACK. A first version, which "
    "swapped paho's write callback around each publish, was taken out after one disk-trouble "
    "campaign under heavy load saw a session that did not come back after a status change "
    "(not reproduced in 16 runs, not explained). The one kept swaps nothing: aiomqtt's writer "
    "registration is made synchronous on the loop's thread (so a writer can never be added "
    "after the write it was for, which under `call_soon_threadsafe` could leave a callback "
    "spinning on a writable socket), a publish writes nothing inside paho's callback lock "
    "(paho's write takes that plain lock for a QoS 0 message: a write there would wait for "
    "itself), and the PUBACKs come from paho's `on_publish`; tests/integration/"
    "test_durable_direct.py checks each of these against a real Mosquitto, and aiomqtt's "
    "private names it relies on.",
    "- **What is left ahead of the publish**, by py-spy on the daemon during the latency run "
    "(2026-12-01): paho's writer registration per message (two `epoll_ctl` calls) 10 % of "
    "the CPU between the device's byte and the publish, the journal bodies' `json.dumps` 5 %, "
    "`datetime.isoformat` for the timestamps 3 %. Now a writer is added only for what the "
    "socket does not take at once, the bodies are encoded by msgspec (the same text, "
    "checked by property), and a timestamp is made from `time.time_ns()` with the "
    "second's text remembered. Measured on this machine, Python work right after the loop "
    "has slept costs four to five times what it costs warm (a `publish_now` takes 52 µs "
    "with 1 ms between calls, 229 µs with 10 ms, a table's pace being slower still): every "
    "line between the device's byte and the broker's socket counts several times over.",
    "- **Checkpoints** (p99): the journal's WAL was copied into the database every second. "
    "After a checkpoint that copied everything the next commit starts the WAL again and, "
    "with `synchronous=FULL`, SQLite syncs the new WAL header before the commit's frames: "
    "two fsyncs (strace counts them; +0.19 ms at p50 on this disk). At a hundred events a "
    "second that was 1 % of the commits, the p99 itself. The checkpointer now copies after "
    "250 commits, or a minute after the last copy if any commit is waiting (0.4 %). 1,000 "
    "commits (0.1 %, the rhythm of baseline (b)'s own SQLite) was tried first and taken back: "
    "the WAL file keeps the size it reaches, 11 MB at 1,000 shoe commits, and on the fault "
    "campaign's 8 MB journal disk it filled the space a full disk had freed (the daemon "
    "stayed degraded); 250 commits keep it near 3 MB at any pace. And a write that failed, "
    "or a probe of the disk, has the WAL copied at the checkpointer's next look, so that a WAL "
    "at a full disk's last block starts again instead of needing more space (without it the "
    "same campaign stayed degraded at 250 commits too: the probes' 256 KiB go through the "
    "WAL).",
    "- **Device to loop (serial)**: pyserial's `read()` wraps the port's read in two `select` "
    "calls and a timeout object: 58 µs against 21 µs for one `os.read` of a frame 10 ms after "
    "the last. The transport now reads a port that has a file descriptor with one `os.read` "
    "when the loop finds it readable (pyserial's words kept for its failures; "
    "tests/drivers/test_port_transport.py).",
    "- **Where the p50 still differs from (b)'s**. Full runs of this benchmark after the "
    "changes above, tabled / (b), p50 and p99 for shoe, shuffler and dice, the simulated "
    "device taking the daemon's ACKs as they arrived: 1.28/1.44, 1.29/1.45, 1.28/1.41 "
    "(2026-12-01 23:12, (b)'s shoe p50 0.88 ms); 1.33/1.53, 1.30/1.50, 1.24/1.36 (2026-12-02 "
    "00:54; (b)'s shoe p50 1.13 ms: the disk was slower that hour); 1.34/1.45, 1.28/1.41, "
    "1.24/1.37 (01:30, (b)'s shoe p50 0.88 ms again). The shuffler and the dice met the goal "
    "in every run; the shoe's p50, whose (b) is the fastest of the three, was 0.25-0.38 ms "
    "over (b)'s and 1.33-1.34× in two runs of three. Per stage (2,000 shoe "
    "events, perf_counter marks in the daemon, p50): link and framing 87-104 µs, the driver's "
    "decode and stamp 32 µs, rules and staging 69-74 µs, the journal's write 660-690 µs "
    "(BEGIN 45, the check of the file's last row 14, the INSERTs 58, the COMMIT and its fsync "
    "430, the rows' Python about 90), the publish 228-274 µs (paho's `publish` 85, its "
    "`loop_write` 156, the loopback send inside it). On this VM the first call of a function "
    "after the loop has slept 10 ms costs about 13 times its warm cost and the second call "
    "almost nothing more (a hash-chain link: 17.4 µs, then 2.3; warm 1.3): the cost follows "
    "how much distinct code and data an event's path touches, not how much work it repeats, "
    "so fewer, cheaper calls of the same code barely show. Made after the first of these "
    "runs: each commit checks "
    "the file's last row against its own last write only when SQLite's `data_version` says "
    "another connection committed (cold: 17 µs for the pragma, 32 µs for the indexed read), "
    "and the health check of a quiet journal no longer writes while commits flow (it wrote "
    "the failing disk's 256 KiB probe every 10 s, with a WAL copy after it). Storing an "
    "event's published copy by reference to its input (a journal format 3) was measured "
    "first: `bench.journal_cost` commits the input row alone 0.01-0.06 ms faster than the "
    "rows as staged, depending on the hour, and a reference row keeps its index entry, so "
    "about half of that at best; not made.",
    "- **The harness** (2026-12-02): the simulated shoe and shuffler run their link in "
    "Python, in the collector's process, on the two cores every pipeline shares, and they "
    "took each of the daemon's ACKs as it arrived. The daemon writes frame k's ACK right after "
    "frame k's publish, so the device's Python handled it just while the collector waited to "
    "stamp frame k's arrival: a cost of the simulation, on tabled's side only (the baselines "
    "acknowledge nothing, and a real device's link runs in its own hardware). Measured with "
    "two tabled pipelines in one run, one device taking the ACKs at once and one just before "
    "its next send, with (b), 3,000 shoe events each, block by block, the two swapped every "
    "other block (whichever ran first after (b)'s block measured 0.06-0.10 ms slower, "
    "whatever it was, so a fixed order would have decided the result): p50 1.52 ms at once "
    "against 1.40 ms at the next send (1.32× and 1.22× (b)), p99 2.69 against 2.48 ms. The "
    "device now takes them just before its next send, before that frame's wire stamp "
    "(bench/devices.py, `hold_host_bytes`); the daemon's own ACK write is measured as "
    "before. A collector in a process of its own, tried first, did not remove the cost: a "
    "third process then waited for a core. Full runs with the change: 1.24/1.12, 1.27/1.07, "
    "1.24/1.38 (03:04; a slow hour: (b)'s shoe p50 1.25 ms, (a)'s 0.69 ms, one durable "
    "commit 0.43 ms); 1.30/1.35, 1.21/1.29, 1.29/1.37 (03:23; (b)'s shoe p50 1.08 ms, the "
    "shoe's 1.303 just over the goal); 1.22/1.26, 1.22/1.44, 1.24/1.38 (03:53; (b)'s shoe "
    "p50 1.22 ms); 1.23/1.28, 1.27/1.29, 1.27/1.66 (04:09; (b)'s shoe p50 1.24 ms; the "
    "dice's p99, 1.36-1.38× in every run before, at 4.2 ms against (b)'s 2.5). The goal "
    "met by every family in two runs of four, the shoe's p50 over it by 0.003 in one and "
    "the dice's p99 in another: closer than before the change, not met with a margin. "
    "Measured the same order-balanced way and not kept: the ACK frames made once instead of "
    "per frame, with the link's timer kept while it is due no later than the link's next "
    "deadline (instead of a cancelled timer and a new one per frame): 1.471 against 1.474 ms, "
    "nothing; the daemon pinned to one core: 1.456 against 1.477 ms, inside the noise.",
    "- **The order of the blocks** (2026-12-02): it was fixed, tabled, (a), (b), round after "
    "round, so tabled always ran just after (b), and (b) just after (a). Run in a balanced "
    "order (each pipeline after each of the other two, after one, two and three blocks idle, "
    "equally often), 12,000 shoe events per pipeline: tabled's p50 1.03 ms after (b) and 0.95 "
    "after (a); (b)'s 0.80 after (a) and 0.77 after tabled. The fixed order gave each its "
    "slower predecessor: about 1.28× where the balanced order gives 1.26×. For the dice, no "
    "difference (tabled 1.44 ms after (b), 1.42 after (a); (b) 1.10 after either). A small "
    "bias, but one a design removes: the rounds now cycle through six orders that balance "
    "both (bench/latency.py, `ORDERS`), and a run is a whole number of cycles (24 rounds of "
    "425). Full runs with it, p50/p99 for shoe, shuffler, dice: 1.23/1.39, 1.27/1.40, "
    "1.25/1.34 (06:10; a quiet hour: one durable commit 0.17 ms, (b)'s shoe p50 1.01 ms); "
    "1.33/1.40, 1.26/1.33, 1.15/1.38 (06:27; (b)'s shoe p50 0.85 ms). In both, tabled's p50 "
    "was 0.22-0.28 ms above (b)'s in every family; the ratio moves with (b)'s own speed: at "
    "0.28 ms above, the shoe meets 1.3× only while (b)'s p50 is 0.92 ms or more. Measured "
    "and not kept: the dice's reader asking for the next report only once "
    "the loop has made the last one durable, so that its pyusb Python does not hold the GIL "
    "while the loop wakes for the report. The loop's wake-up after the hand-over went from "
    "p50 98 and p99 337 µs to 73 and 154, but end to end five order-balanced runs of "
    "3,000-4,000 dice events gave -0.10 to +0.09 ms, no difference (the next read's request "
    "then reached the simulated bus, in the collector's process, just as the collector "
    "stamped the arrival), and a reader that always waits cut the dice's saturation rate "
    "from about 2,900 to 850 events/s. The journal's WAL checkpoint (every 250 commits, in "
    "its own thread) overlapped 5 of 3,100 commits in a dice run: not what makes the p99; "
    "without checkpoints the WAL only grows and the shoe's p50 was slower (1.09 against 0.97 ms).",
    "- **One process, one draw** (2026-12-02): three daemons of the same code, driven in the "
    "same run in turn (3,000 shoe events each), had p50s of 1.169, 1.124 and 1.151 ms; in "
    "another run 1.286, 1.257 and 1.197, and their commits' p50 398, 395 and 371 µs, the "
    "fastest commit in the fastest daemon (where each journal file lies on the disk is part "
    "of it). With address-space randomisation off and one hash seed they still differed: "
    "1.311, 1.209, 1.296. The dice's three: 1.509, 1.562, 1.669. A process keeps its draw for "
    "as long as it runs, so with one process per pipeline a run's ratio was partly that draw "
    "(tens of microseconds, the margin the shoe's p50 has). The benchmark now starts new "
    "processes for each cycle of orders, four in a full run, and pools them "
    "(bench/latency.py); the estimate is the same, its spread smaller. Two full runs so, "
    "p50/p99 for shoe, shuffler, dice: 1.21/1.31, 1.26/1.15, 1.25/1.34 (08:26; (b)'s shoe p50 "
    "1.30 ms, a slow hour) and 1.24/1.36, 1.24/1.32, 1.29/1.34 (08:44). "
    "Every goal met in both, but not with a margin: each cycle's processes alone gave the "
    "dice 1.08-1.40 at the p50 and the shoe 1.19-1.33 (08:44), and tabled's p50 "
    "stays 0.24-0.29 ms above (b)'s.",
    "- **Less ahead of the publish, third round** (2026-12-02): what an event does before "
    "its publish reaches the socket, cut again: the link queues the ACK frame and encodes it "
    "when it is written (after the commit and the publish; it was encoded, a CRC and a "
    "byte scan, before the message was handled); a write's rows go to SQLite in one INSERT "
    "(one run of its program instead of one per row); the journal's checks before a write "
    "(a failed write's leftovers, a writer behind its back) are inline, one read of SQLite's "
    "`data_version`; a row's hash is one SHA-256 call over its text (the same bytes "
    "as before: tests/daemon/test_journal.py); the shoe's and the shuffler's frame is decoded "
    "once for its check and its handling; a device's progress object is made once, not per "
    "event. Against main, same runs, order rotated: p50 -61 µs (8,000 shoe events, one "
    "process each), -73, -4 and -22 µs (4,000), and -17 µs pooled over three processes each "
    "(2,000 events each). Measured and not kept: uvloop as the daemon's event loop, on top of "
    "that: shoe -7, +38, +2, -11 and -64 µs in five runs, dice -19 µs (three processes each), "
    "inside the spread between processes; a compiled dependency and another event loop under "
    "the daemon, for no gain that shows. Noticed and left: a young-generation garbage "
    "collection runs about every 20 shoe events (p50 110 µs) and a middle one every 200 "
    "(1.4 ms): the tail's, not the p50's.",
    "- **The journal's pages, and its event stream's index** (2026-12-02): a commit writes "
    "every page it changed to the WAL, whole, and fsyncs it. A shoe event's rows are a few "
    "hundred bytes, but at SQLite's default 4 KiB page its commit wrote 11.6 KiB (the "
    "table's last leaf, the leaf of the index of every stream's numbers, now and then a "
    "split's pages and the file's header page), against (b)'s 4.2 KiB. Two changes: new "
    "journals are made with 1 KiB pages (daemon/journal.py, `PAGE_SIZE`; an existing "
    "journal keeps its size), and journal format 3 leaves the event stream out of that "
    "index (`UNINDEXED_TOPIC`: nearly every commit holds one event, and its entry was a "
    "page more; the stream's next number is its last row's, read back from the journal's "
    "end, and `tabled journal verify` now checks that every stream's numbers run 0, 1, 2 "
    "... in order, which finds a skipped number as well as a repeated one; the outcome and "
    "fault streams keep their unique index). `python -m bench.journal_cost` (1,500 shoe "
    "events, every variant interleaved commit by commit, as it now does: one variant's "
    "whole run after another's measured the disk's drift as much as the variants), p50 per "
    "commit: the journal as it was this morning 0.426 ms and 11.6 KiB of WAL, with 1 KiB "
    "pages 0.408 ms and 5.1 KiB, with format 3 too 0.386 ms and 3.6 KiB; (b) 0.343 ms. "
    "The page size alone measured 23-29 µs in four such runs. 512 B pages gave a few µs "
    "more and would put an outcome's row (about 650 bytes) on overflow pages. What is left "
    "of the journal's commit over (b)'s is the event's published copy, a second row: the "
    "input row alone commits in 0.315 ms, under (b)'s. End to end, tens of microseconds "
    "are inside what one process differs from the next: a run with the same code on new "
    "1 KiB journals and on files made with 4 KiB pages (5,000 events, two cycles each) gave "
    "the shoe -166 µs and the dice +49 µs, and one variant's two dice processes were 1.92 "
    "and 2.24 ms apart at the p50. This machine was slow all afternoon: a full run before "
    "both changes (12:30) gave p50/p99 1.21/1.04, 1.30/1.38 and 1.28/1.27 for shoe, "
    "shuffler and dice ((b)'s shoe p50 1.38 ms, its dice 1.85 ms), one with 1 KiB pages "
    "(12:55, one durable commit 0.47 ms against 0.22 in the morning) 1.27/1.17, 1.26/1.50 "
    "and 1.26/1.27, single cycles 1.14-1.48 at the p50; with both (13:36) "
    "1.28/1.24, 1.23/1.18 and 1.22/1.39, single cycles 1.24-1.39 (shoe), 1.16-1.26 "
    "(shuffler) and 1.18-1.27 (dice) at the p50. The goal is met in every pooled figure of "
    "the three runs, the shoe's p50 by 0.02 in the last, and tabled's p50 is still 0.28-0.34 "
    "ms above (b)'s on this slower machine ((b)'s dice p50 1.57 ms against 1.00 in the "
    "morning): not yet with a margin. Throughput, measured again after both the same hour, "
    "events/s in runs of this code against the code before them, alternated: shoe "
    "2,089-2,591 (five runs) against 2,016-2,639 (four), shuffler 2,143-2,400 against "
    "2,104-2,548, dice 1,619-2,133 against 1,914-2,323. The serial families the same; the "
    "dice, whose daemon is CPU-bound at saturation (101 %), perhaps a tenth lower (more and "
    "smaller pages in the large commits of a backlog), inside the spread of two runs: "
    "noted, not resolved. The earlier 2,994 and 3,196 for shoe and shuffler (2026-11-29) "
    "were a faster machine's: the code before measured 2,016-2,639 this afternoon.",
    "- **One row for an event published as itself** (2026-12-02, journal format 4): the "
    "event's published copy, the second row of nearly every commit, is gone. An input the "
    "table publishes as it came is one row, both the input and its message: the row's "
    "stream number and the round its message adds are columns inside the hash chain, and "
    "the message is made from them when it is read (daemon/journal.py, "
    "`InputEntry.published`, `_message`: the same text byte for byte, checked by property "
    "in tests/daemon/test_journal_json.py). Q Poker's withheld hands and the cards a reveal "
    "opens keep the input and their copies. The index of rounds now covers outputs only "
    "(migration 3 to 4), so the round costs no index page; `tabled journal verify` numbers "
    "both kinds of row in the event stream. `python -m bench.journal_cost` (1,500 shoe "
    "events, interleaved, 17:47, a slow hour: (b) 0.475 ms): format 4 0.516 ms and 2.6 KiB "
    "of WAL per commit, format 3 0.594 ms and 3.6 KiB, this morning's journal (format 2 at "
    "4 KiB pages) 0.686 ms and 11.6 KiB; in CPU alone (synchronous off, on a RAM disk) "
    "0.109 against 0.148 ms. What the journal's commit adds over (b)'s is now 41 µs, "
    "against 211 µs this morning. The full latency run after it (17:26-17:43): p50/p99 "
    "1.14/0.89, 1.18/1.15 and 1.19/1.24 for shoe, shuffler and dice, and "
    "each cycle's processes alone 1.12-1.15 (shoe), 1.16-1.19 (shuffler) and 1.16-1.23 "
    "(dice) at the p50, where the runs before it gave single cycles up to 1.39. It ran in "
    "the slowest hour of the day ((b)'s shoe p50 1.87 ms; (a)'s 0.91 against 0.66 in the "
    "afternoon, so the CPU was slower, not only the disk), with tabled's p50 0.26, 0.36 and "
    "0.53 ms above (b)'s. Throughput the same hour, this code against the code before it, "
    "alternated, four runs each, events/s: shoe 1,120-1,286 against 782-1,471, shuffler "
    "1,161-1,339 against 829-1,335, dice 811-963 against 830-963. No difference shows, and "
    "both are far under the 2,000-2,600 they made this afternoon: at that hour the machine "
    "set the throughput, not the code. The twelve fault campaigns ran green "
    "on this code (`python -m tests.campaigns`, 18:18).",
    "- **Measured again, in quiet hours** (2026-12-03; no change to the event path since the "
    "bullet above, only the two below). Throughput at 00:57: shoe 2,209, shuffler 2,247, "
    "dice 1,164 events/s; the dice's figure, against 1,619-2,133 the afternoon before, was "
    "checked against that afternoon's code (de96f3b), alternated, three runs each of 20,000 "
    "events (05:15): 1,539-1,609 against 1,534-1,581 for this code, no difference; the "
    "machine's. Latency at 00:58-01:15: p50/p99 1.11/1.16, 1.15/1.11 and 1.31/1.37 for shoe, "
    "shuffler and dice: the dice's p50 over its goal by 0.01, one cycle's processes at 1.39 "
    "((b)'s dice p50 1.03 ms, tabled's 0.31 ms above it). The dice alone twice more with the "
    "same plan (05:03-05:15): 1.25/1.28 and 1.20/1.20, single cycles 1.10-1.31. The full run "
    "after them (05:19-05:36, the tables above): 1.15/1.21, 1.13/1.23 and 1.21/1.28, single "
    "cycles 1.11-1.16, 1.13-1.17 and 1.20-1.22 at the p50; throughput 2,600, 2,547 and "
    "1,662 events/s. Four runs of the dice so: p50 1.20-1.31, tabled 0.19-0.31 ms above (b): "
    "the goal is met in three and missed by 0.01 in one. The dice keep the least margin of "
    "the three families (pyusb's blocking read on a thread of its own, handed to the loop), "
    "and a slow process draw can still take a single run over 1.3.",
    "- **A durable message held back by a metrics one** (2026-12-03, found by CI): the "
    "connection's window of QoS 1 messages in flight (paho's) was the durable stream's size, "
    "`mqtt.max_inflight`. The status, device statuses, metrics and replies go through "
    "aiomqtt on the same connection, so one of them waiting for its PUBACK held a slot; with "
    "the stream's window full, paho then queued a durable row instead of writing it and sent "
    "it from the PUBACK that freed a slot, a turn of the loop later, through the writer. "
    "Nothing lost, but an event waited behind a metrics message. The window is now the "
    "stream's and 16 more (daemon/mqtt/client.py, `OWN_PUBLISHES`); "
    "tests/integration/test_durable_direct.py stops the broker with 16 own publishes in "
    "flight and checks every durable row is on the socket at once (it fails with the old "
    "window). Only a saturated stream fills its window, so no figure above moves.",
    "- **A stop that never ended** (2026-12-03): a daemon hung on SIGTERM once in CI. "
    "aiomqtt's waits use `asyncio.wait_for`, which on Python 3.11 returns the result and "
    "drops a cancellation that arrives in the same turn as the PUBACK (CPython gh-86296): "
    "the metrics task lived on and the task group waited for it. contract/mqttprivate.py "
    "waits with `asyncio.timeout` instead (docs/reliability.md). The wait is not on an "
    "event's path.",
    "- **Private library uses** (2026-12-04, issue 28): what each private name of aiomqtt "
    'and paho buys, measured before keeping it (docs/design.md, "Private library uses"; all'
    " now in contract/mqttprivate.py). The direct publish (`TableClient.publish_now`) "
    "against aiomqtt's own publish (a task and three turns of the loop per message): two "
    "daemons of the same code, one with each client, driven block by block beside (b) with "
    "this benchmark's plan, 3,000 events each, six shoe runs and five dice runs on a "
    "machine shared with other work (load average 2-7 on 2 cores, (b)'s shoe p50 1.6-5.7 ms"
    " against 0.80 in the table above, so only the pairs compare). Shoe p50 direct / "
    "aiomqtt, ms: 1.63/2.18, 3.08/3.18, 4.58/4.55, 2.02/2.60, 8.74/11.05, 4.47/5.49; p99: "
    "10.2/19.9, 13.1/19.1, 19.5/40.1, 16.9/21.7, 39.4/69.0, 19.3/37.6. Dice p50: 3.24/3.16,"
    " 2.41/3.19, 2.35/2.48, 5.30/5.97, 8.46/10.77. With aiomqtt's publish the shoe's p99 "
    "was 1.7-2.7× (b)'s in four runs of six, over the goal's 1.5×; direct 0.9-1.3× in "
    "those. Kept, and the publisher's second path (aiomqtt's publish) removed. The pit's "
    "batch of received messages: 20,000 queued messages drained through aiomqtt's iterator "
    "cost 14.5-18.3 µs of CPU each, taken from the queue 1.1-2.0 µs (three runs); kept, "
    "through aiomqtt's public `queue_type` instead of its private `_queue`.",
    '- **Games as packages** (2026-12-04, issue 28): the rules core moved out of the table '
    'service into one package per game, found through entry points. The code before (46caf1e) '
    'and after, each from its own checkout and virtual environment on this machine, '
    'alternated in the same run, otherwise idle (load average 0.5), both byte-compiled first. '
    "Latency (this benchmark's plan, 1,000 events per pipeline, one cycle each, 2026-12-04 "
    'morning), p50/p99 against (b), before → after: shoe 1.16/1.40 → 1.14/1.30, shuffler '
    "1.16/1.28 → 1.27/1.36, dice 1.21/1.20 → 1.16/1.31: within one run's spread, every goal "
    'met. Replay (the streams of the table above, 100,000 baccarat and craps rounds, 20,000 Q '
    'Poker, whole process, best of fifteen alternated pairs, 2026-12-04 15:59-16:06 UTC, '
    'load average 6-11 from other work on the machine), rounds per CPU-second before → '
    'after: baccarat 69,140 → 69,933 (1.446 against 1.430 s), Q Poker 7,592 → 7,646 '
    '(2.634 against 2.616 s), craps 124,410 → 124,083 (0.804 against 0.806 s): within the'
    ' run\'s spread; the outputs byte for byte the same. An earlier run (13:47 UTC, idle) '
    'had craps 4.6 % slower: the contract now carries a roll of two or more dice (sic bo '
    'throws three) and craps refused any other than two (Art. 1) with a check per line. A'
    ' game now states its number of dice as data (`dice=2` in its declaration), and its '
    'streams are read by a decoder of its own where the roll is a pair and each checked '
    'type\'s wire runs its checks as it makes its event (`contract.events.GameChecks`): no'
    ' per-line check is left, and reading 100,000 craps lines takes 61.3-62.9 ms against '
    '70.1-75.7 ms before the change of games to packages (best of nine, in process, three'
    ' alternated runs). '
    'Found and fixed on the way: listing the games '
    "loaded every game's rules core and combinatorics (25 ms a start; now a game's rules load "
    "with its first table, its odds when asked); the installed distributions' entry points "
    'were read four times a command (games, device families, simulators; a few ms each), now '
    "once (`contract/plugins.py`); a game's event checks cost a dict lookup on every event "
    '(now a set lookup of the class, 12 ns); and this machine sets `PYTHONDONTWRITEBYTECODE`, '
    'so every `tabled replay` compiled each module it imports from source, a cost that grew '
    'with the code moved into packages and that no installed table pays: the benchmark '
    'byte-compiles tabled first (`bench/replay.py`).',
    "",
]


#: What profiling and measuring the pit showed, and what was changed (issue 14, item 3). Written
#: by hand, dated; the pit's tables above are the generated figures.
PIT_PROFILES = [
    "## The pit: what was measured, and what it changed", "",
    "Each change below was found with bench/pit.py (the floor of 200 tables at ten times a "
    "real pace, SQLite, 30-60 s windows, on 2026-12-01) and kept because the next run "
    "showed it. At the first run the pit recorded everything (0 lost, 0 duplicated) but the "
    "floor page showed an outcome p50 275 ms and p99 2,222 ms after its publish, with the "
    "bare relay at 9 / 132 ms on the same machine. (Those runs stamped on the wall clock, "
    "which is slewed on this machine: their figures may be off by a few tens of ms; the "
    "tables above are on CLOCK_MONOTONIC.)", "",
    "- **One transaction per arrival, not per message**: what the broker delivered together "
    "is checked, recorded in one transaction (`record_many`) and then applied in order; each "
    "event is parsed once (the typed event travels with the message to the model and the "
    "monitors).",
    "- **No second of CPU on the event loop at start**: the exact odds behind the monitors' "
    "thresholds (about a second for craps and Q Poker) are computed on a thread, so the "
    "first table of each game heard no longer holds every DOM update for 1-2 s.",
    "- **SQLite checkpoints on a thread**: the automatic WAL checkpoint ran inside a commit "
    "(a copy and an fsync on the pit's loop).",
    "- **Only the tiles that changed**: a batch used to re-render and re-send the whole "
    "floor (200 tiles, about 200 kB) to every floor page; now it sends the tiles it changed "
    "(p50 105 → 47 ms, p99 831 → 389 ms).",
    "- **Only what the page does not show yet**: the summary went with every batch and a "
    "tile whose model changed without its face changing (a new shoe) was sent again; each "
    "stream now remembers what its page shows. The browser lays out and paints only the "
    "tiles on screen (`content-visibility: auto`: a swap off screen costs no layout) and "
    "writes an 'ago' label only when its text changes. The tables above are the first "
    "run after this change.",
    "- **Memory over a day**: a table's rounds of the last hour were a deque of every "
    "outcome's time (at ten times a real pace, hundreds a table); they are 60 counters by "
    "the minute. The floor-wide slug index (every 9-card block of the last 500-1,000 shoes) "
    "keeps its older generation as a sorted array of 8-byte keys instead of a set: about "
    "16 MB instead of 30. Before it, a SQLite day of the same harness (2026-12-01) held "
    "about 149 MB from the 12th hour on and ended at 153 MB.",
    "- **Each outcome number applied once** to the live model (a QoS 1 re-delivery or "
    "another copy under a number already applied changes nothing), whatever order the "
    "numbers come in.",
    "- **A floor of 1,000 tables into a pit pair** (2026-12-04 evening, issue 30; "
    "`python -m bench.scale --tables 1000 --minutes 1`, one-minute windows, each change kept "
    "because the next run showed it; the quiet-machine run before them, 2 min, had publish → "
    "DOM p99 5,497 ms, Chromium at 73 % of a core, pit A at 40 %). (1) The page: each tile's "
    "swap ran the page script's three document-wide selectors twice (the bulk selection, the "
    "mute button, the escalations), tens of thousands of elements at 1,000 tiles; they now "
    "look inside what was swapped in. Chromium 73 → 32 %, its main thread busy 14 % of the "
    "window (CDP Profiler, `--profile-page`), DOM p99 315 ms. (2) The pit's live streams "
    "(py-spy: a quarter of pit A's busy time with the page and one program reading): each "
    "stream rendered every changed tile and, after every batch, the summary, whose counts "
    "by state walked 1,000 tables (10 % of the samples); a batch's events now go in one "
    "write, the summary is rendered only when its figures change and its counts are kept "
    "between changes of a state, and the streams of a language share one rendering of a tile "
    "while its table is unchanged that second. Pit A 39 → 31 %. (3) The partner's share: "
    "read every 0.1 s, it reached pit A's page at p50 89-95 ms against 26-37 ms for A's own; "
    "PostgreSQL's `NOTIFY` in the recording transaction now wakes the follower, which reads "
    "at most every 30 ms: p50 47-57 ms, for PostgreSQL at 22-27 % of a core instead of 12-15 "
    "% (reads up to 33 a second a pit instead of 10). (4) Pauses: `pit_gc_pause_seconds` "
    "showed full collections of 100-250 ms in both pits, about two a minute; what survives "
    "one is now frozen out of the collector's sight and all of it thawed every 10 minutes: "
    "at most 25 ms (8 in a minute). A watchdog that dumped the main thread whenever the loop "
    "was 180 ms late (`faulthandler`, a one-off) found, during the dealing, the process "
    "waiting in epoll (not given the CPU on this 2-core machine shared by the load, both "
    "pits, PostgreSQL, Mosquitto and Chromium) and one floor render. Publish → DOM p99 in "
    "the one-minute runs: 315 ms after (1), 220-301 ms with (2) (four runs), 235 and 303 ms "
    "with (3), "
    "286, 295 and 502 ms with (4) (the 502 ms run: pit A's receipt after the broker's "
    "delivery had p99 210 ms with its loop's lag at most 250 ms once): one stall of the machine "
    "shows in a minute's 660 outcomes. The full run of the section above (two minutes a size, "
    "19:53-20:00 UTC, with the templates no longer checked on disk at each render) gave 136 ms "
    "at 1,000 tables.", ""]


def _not_met(r: dict[str, Any], goals: list[tuple[str, str, str, bool]]) -> list[str]:
    missed = [g for g in goals if not g[3]]
    if not missed:
        return []
    out = ["## Goals not met, and the measured reason", ""]
    for name, goal, measured, _ in missed:
        out.append(f"- **{name}** (goal {goal}, measured {measured}): {_reason(r, name)}")
    return [*out, ""]


def _reason(r: dict[str, Any], name: str) -> str:
    if name.startswith("table PC"):
        return smallpc.reason(r, name)
    commit = r["machine"]["durable_commit"]
    if name.startswith("latency"):
        family = name.split(",")[1].split(":")[0].strip()
        res = r["latency"][family]
        extra = res["tabled"]["p50"] - res["baseline_b"]["p50"]
        tput = r.get("throughput", {}).get(family)
        cpu = ""
        if tput:
            per_event = tput["daemon_cpu_percent"] / 100 / tput["events_per_s"] * 1000
            cpu = (f"; at saturation the daemon spends {per_event:.2f} ms of CPU per event "
                   "(several events share a commit there)")
        return (f"tabled's p50 is {extra:.2f} ms above (b)'s. Both pay one fsync'd commit; "
                "on top of it tabled runs, on one Python thread, the link (CRC, ACK), the "
                "driver, the rules, two to four journal rows each with its JSON and hash-chain "
                "link, and the publish through paho" + cpu + ". The "
                f"p99 follows the disk (one durable commit alone: p99 {commit['p99']:.2f} ms, "
                f"max {commit['max']:.2f} ms in this run). At p99.9 tabled has "
                f"{res['tabled']['p999']:.0f} ms where (b) has {res['baseline_b']['p999']:.0f} "
                "(40 ms before TCP_NODELAY). Where each part of the p50 goes is under "
                "Profiles below." + (
                    " The dice pay more: pyusb blocks, so every report crosses from the "
                    "driver's reader thread to the loop; its ACK (a control transfer the "
                    "baselines never make) goes out through the control thread after the "
                    "publish." if family == "dice" else ""))
    if name.startswith("throughput"):
        return (f"one device cannot have more than {LINK_WINDOW} frames unacknowledged and "
                "each is acknowledged only once durable, so a device is held to about "
                f"{LINK_WINDOW} events per fsync'd commit (this run's commit p50 "
                f"{commit['p50']:.2f} ms). Raising the window is a protocol change "
                "(docs/protocols/framing.md), not a daemon one.")
    if name.startswith("replay"):
        bac = r["replay"]["baccarat"]["tabled"]
        waited = bac["rounds_per_cpu_s"] > 1.1 * bac["rounds_per_s"]
        steps = r["replay"]["baccarat"].get("breakdown", {}).get("us", {})
        largest = max(steps, key=steps.__getitem__) if steps else None
        return (f"by its own CPU time the process does {bac['rounds_per_cpu_s']:,.0f} rounds per "
                "second" + ("; the rest of the wall time it waited for other work on the "
                            "machine" if waited else ", so the wall time is all its own work")
                + ". A round is five to six events, each decoded and validated by msgspec into "
                "a typed event and fed to the rules, then its outcome encoded in one msgspec "
                "call" + (f"; the largest step is {largest}, {steps[largest]:.2f} µs of a round"
                          if largest else "")
                + " (the per-step costs are in the replay section), in CPython on one core of "
                "this CPU.")
    if name.startswith("READY"):
        return "the start-up times listed under Footprint."
    if name.startswith("CPU idle"):
        return ("an idle daemon with its devices still runs their links: each serial link "
                "sends and receives a heartbeat frame every 2 s, the dice driver reads the "
                "sensor's STATUS report every second through a worker thread, and metrics "
                "(with their sequence number written to the journal) go out every 5 s: a few "
                "milliseconds of CPU each second in CPython.")
    if name.startswith("scale"):
        return _scale_reason(r, name)
    if name.startswith("pit") and "RSS after" in name:
        store = next(k for k, v in STORE_NAMES.items() if f"({v})" in name)
        day = r["pit_day"]["stores"][store]["day"]
        return (f"the pit's RSS went from {day['idle_memory_mb']['VmRSS']:.0f} MB idle to "
                f"{day['memory_mb']['VmRSS']:.0f} MB after the day (samples every 5 s in "
                "bench/results.json); what grows over a day and what was changed for it is "
                "under 'The pit: what was measured'.")
    if name.startswith("pit"):
        return ("the pit's tables above give its CPU, the machine's load average and the bare "
                "relay's figures on the same machine at the same time; what was changed is "
                "under 'The pit: what was measured'.")
    return "see the figures above."


#: The pit started late against tables that dealt without it: measured by its own command
#: (``python -m bench.reconcile``), not by ``make bench``; kept here so that the generated
#: document keeps it.
RECONCILE = [
    '## The pit started an hour late',
    '',
    'Six real `tabled run` daemons (baccarat, a simulated shoe each, `[fetch]` on) deal 720 rounds',
    'each (an hour at a round every five seconds) with no pit listening; then `tabled pit` starts',
    'with an empty SQLite record and `[reconcile]` on. From its start to a record holding every',
    'number of every stream of the six journals: **12.3 s and 13.6 s** in two runs (26,367',
    'messages, 60 fetch requests, no `seq_gap` raised; of it ~1.5 s the interpreter starting and',
    "~2.5 s waiting for the tables' next `…/metrics` with their high-water marks: these tables "
    "were",
    'born with an empty journal, so their retained birth announced nothing; the rest, ~2,500',
    'messages a second, is the tables serving at their pace of requests). 2-core machine shared',
    'with other work, 2026-12-04.',
    '`python -m bench.reconcile` (`--tables 6 --rounds 720`) reproduces it; docs/pit.md',
    '"Reconciliation" says how it works.',
    "",
]
def _scale_reason(r: dict[str, Any], name: str) -> str:
    x = r["scale"]["runs"][-1]
    if "DOM" in name:
        own, other = _lat(x.get("dom_a"))[1], _lat(x.get("dom_b"))[1]
        arrival = _lat(x.get("sse_arrival"))[1]
        follow = float(r["scale"].get("t_follow", 0.5))
        head = (f"the outcomes pit A recorded itself reach its page with p99 {own} ms; those "
                f"its partner recorded, which it learns {_follow_words(r['scale'])}, with p99 "
                f"{other} ms (the page's stream had them with p99 {arrival} ms)")
        mine, theirs = (x.get("dom_a") or {}).get("p99"), (x.get("dom_b") or {}).get("p99")
        if mine and theirs and theirs > mine + 1000 * follow:
            return (head + ": the partner's share waits for that poll before it is even in "
                    "the model. See \"What the latency is made of\" in the section of 200 to "
                    "1,000 tables.")
        return (head + ": both alike, so the poll is not the cause; where the time goes, from "
                "the publish to the pit's receipt, its floor stream, the page's script and the "
                "DOM, is under \"What the latency is made of\" in the section of 200 to 1,000 "
                "tables.")
    if "RSS" in name:
        return "each pit's peak is in the table above, with its CPU and the machine's load."
    return (f"the record's check: {x['record']}; the pits' handler errors: "
            f"{x['handler_errors']}.")


def render(r: dict[str, Any]) -> str:
    """The whole of docs/performance.md for the figures of one run."""
    run = r.get("run", {})
    goals = _goals(r)
    merged = ""
    measured = r.get("measured", {})
    if run.get("merged") and measured:
        when = "; ".join(f"{name} {date}" for name, date in measured.items())
        merged = (f", some sections measured again after changes their earlier runs showed "
                  f"were needed (each section's run: {when})")
    out = ["# Performance", "",
           "How fast and how light tabled is, each figure against the simplest thing that "
           "could do the job, measured in the same run (issues 6 and 14). Generated by the "
           f"benchmark harness on {run.get('date', '?')} in {run.get('seconds', 0) / 60:.0f}"
           f" minutes{merged}"
           f"{' (quick form: sizes too small to mean anything)' if run.get('quick') else ''}; "
           "do not edit by hand.", "",
           "Reproduce: `make bench` (or `.venv/bin/python -m bench`; `--quick` for the smallest "
           "form, `--only latency replay …` for some). It needs Mosquitto (installed by "
           "`make system-deps`; the pit's sections also PostgreSQL and Chromium) and writes this "
           "file and `bench/results.json`.", "",
           "## Machine", ""]
    out += _machine(r)
    out += ["## Goals", ""]
    out += _table(("figure", "goal", "measured", "verdict"),
                  [(n, g, m, _verdict(ok)) for n, g, m, ok in goals])
    for key, part in (("latency", _latency), ("throughput", _throughput),
                      ("footprint", _footprint), ("replay", _replay), ("floor", _floor),
                      ("pit", _pit), ("pit_day", _pit_day), ("pit_monitors", _pit_monitors),
                      ("scale", _scale)):
        if key in r:
            out += part(r)
        if key == "pit_day":
            out += RECONCILE
    if "smallpc" in r:
        out += smallpc.section(r)
    out += _not_met(r, goals)
    out += PROFILES
    if any(k in r for k in ("pit", "pit_day", "pit_monitors")):
        out += PIT_PROFILES
    out += ["## How it is measured", "",
            "- Real processes only: `tabled run` with a TOML config as systemd runs it (JSON "
            "logs at `info`, metrics every 5 s), Mosquitto on loopback, the project's own "
            "simulators (bench/devices.py), the journal on the machine's disk with fsync.",
            "- Times are CLOCK_MONOTONIC, one clock for every process. A serial frame is "
            "stamped when its first transmission is written to the pty master; a dice report "
            "when the sensor puts it on its interrupt endpoint; an arrival when the subscriber's "
            "paho thread receives it. A QoS 1 re-delivery is not a new sample.",
            "- The baselines (bench/baseline.py) read the same frames from the same kind of "
            "device and publish one message per frame with paho; (b) commits one SQLite row "
            "per frame first (WAL, synchronous=FULL). They acknowledge nothing and apply no "
            "rule: they are the floor, not an alternative.",
            "- Percentiles are nearest-rank over every counted sample.", ""]
    return "\n".join(out)
