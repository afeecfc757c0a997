"""docs/performance.md from a run's figures: every figure with its baseline, every goal of issue 6
with its verdict, and for a goal not met the measured reason.

Owns the wording and layout only; it computes nothing a benchmark did not measure (ratios and
ceilings are arithmetic on measured figures, and say so).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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
    out = ["## Latency: device byte to subscriber", "",
           f"{plan['count']:,} events per pipeline and family (after {plan['warmup']} not "
           f"counted), one every {1000 / plan['rate']:.0f} ms, QoS 1 end to end. The three "
           f"pipelines of a family run side by side and are driven in turn, {plan['block']} "
           "events at a time, so a drift of the machine (its disk above all) falls on all "
           "three alike. Milliseconds:", ""]
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
                f"{ratios['p50_vs_a']:.2f}× and {ratios['p99_vs_a']:.2f}×.", ""]
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
    "the pit decode through the same structs (tests/test_one_decoder.py). An outcome is "
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
    "write's own outputs instead of a SELECT. Publishing through paho's own `publish` inside "
    "the commit (past aiomqtt's three loop turns, 0.2-0.3 ms of every event) was tried and "
    "taken out again: it rests on aiomqtt's private client and on swapping paho's callbacks, "
    "and one disk-trouble campaign under heavy load saw a session that did not come back "
    "after a status change; until that is understood the durable stream goes through "
    "aiomqtt's `publish`.", "",
]


def _not_met(r: dict[str, Any], goals: list[tuple[str, str, str, bool]]) -> list[str]:
    missed = [g for g in goals if not g[3]]
    if not missed:
        return []
    out = ["## Goals not met, and the measured reason", ""]
    for name, goal, measured, _ in missed:
        out.append(f"- **{name}** (goal {goal}, measured {measured}): {_reason(r, name)}")
    return [*out, ""]


def _reason(r: dict[str, Any], name: str) -> str:
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
                    "driver's reader thread to the loop, and every ACK (a control transfer "
                    "the baselines never make) goes out through its control thread and the "
                    "simulated backend's socket." if family == "dice" else ""))
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
    return "see the figures above."


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
           "could do the job, measured in the same run (issue 6). Generated by the benchmark "
           f"harness on {run.get('date', '?')} in {run.get('seconds', 0) / 60:.0f} minutes"
           f"{merged}"
           f"{' (quick form: sizes too small to mean anything)' if run.get('quick') else ''}; "
           "do not edit by hand.", "",
           "Reproduce: `make bench` (or `.venv/bin/python -m bench`; `--quick` for the smallest "
           "form, `--only latency replay …` for some). It needs Mosquitto (installed by "
           "`make system-deps`) and writes this file and `bench/results.json`.", "",
           "## Machine", ""]
    out += _machine(r)
    out += ["## Goals", ""]
    out += _table(("figure", "goal", "measured", "verdict"),
                  [(n, g, m, _verdict(ok)) for n, g, m, ok in goals])
    for key, part in (("latency", _latency), ("throughput", _throughput),
                      ("footprint", _footprint), ("replay", _replay), ("floor", _floor)):
        if key in r:
            out += part(r)
    out += _not_met(r, goals)
    out += PROFILES
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
