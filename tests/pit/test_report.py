"""Shift and day reports, against a known stream written into a real store (SQLite and
PostgreSQL): each figure checked against the record and the exact odds; the CSV parsed back;
the PDF rendered to PNG with pdftoppm and looked at (non-blank; with TABLED_SCREENSHOTS=1 kept
as docs/images/pit-report-*.png); the scheduled writer with a hand-moved clock; the command
line as a real subprocess."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tabled.contract import CONTRACT_VERSION
from tabled.games import registry
from tabled.pit.config import parse_config
from tabled.pit.messages import Message
from tabled.pit.report import render
from tabled.pit.report.figures import Z, gather, wilson
from tabled.pit.report.period import PeriodError, ended_shifts, parse_period
from tabled.pit.report.schedule import ShiftWriter
from tabled.pit.store import AlertSpec, Store
from tests.pit.conftest import (
    all_bets,
    baccarat_outcome,
    birth,
    fault,
    msg,
    void_outcome,
    will,
)

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
PIT = "pit:test"
ZONE = "Asia/Macau"
#: the shift: 2026-12-04 07:00 to 15:00 in Macau
T0 = datetime(2026, 12, 4, 7, 0, tzinfo=ZoneInfo(ZONE)).timestamp()
T1 = T0 + 8 * 3600
#: the known stream's baccarat winners at lab/t1 in the shift (a void between)
WINNERS = ["banker"] * 6 + ["player"] * 3


def status(state: str, seq: int, at: float, table: str = "t2", **extra: Any) -> Message:
    if state == "online":
        return birth("qpoker", seq, started_at="2026-12-04T00:00:00.000Z", table=table, at=at,
                     devices=[{"id": "shuffler-1", "family": "shuffler"}])
    if state == "offline":
        return will(seq, table=table, at=at)
    return msg("status", {"state": state, "reason": "shuffler_lost", **extra}, seq,
               table=table, at=at)


def stream() -> list[Message]:
    """A shift at two tables: lab/t1 (baccarat, 9 hands and a void; one hand either side of
    the shift), lab/t2 (Q Poker: offline 10 minutes from the start, degraded 5 minutes, two
    void rounds, two shuffler jams)."""
    out = [birth("baccarat", 0, table="t1", at=T0 - 100),
           baccarat_outcome(1, 0, at=T0 - 10)]  # before the shift: not counted
    seq = 1
    for i, winner in enumerate(WINNERS):
        out.append(baccarat_outcome(seq + 1, seq, winner=winner, at=T0 + 1000 + 60 * i))
        seq += 1
    void = {"v": CONTRACT_VERSION, "type": "outcome", "game": "baccarat", "round": seq + 1,
            "status": "void", "void_reason": "misdeal", "article": "baccarat.art9",
            "result": {"player_cards": [], "banker_cards": [], "player_total": 0,
                       "banker_total": 0, "winner": None, "natural": False},
            "bets": all_bets("baccarat")}
    out.append(msg("outcome", void, seq, table="t1", at=T0 + 1700))
    out.append(baccarat_outcome(seq + 2, seq + 1, at=T1 + 5))  # after the shift
    out.append(fault("unreadable_card", 0, device_id="shoe-1", table="t1", at=T0 + 2000))
    out += [status("online", 0, T0 - 200), status("offline", 1, T0 - 50),
            status("online", 2, T0 + 600), status("degraded", 3, T0 + 3600),
            status("online", 4, T0 + 3900)]
    out += [void_outcome(1, 0, table="t2", at=T0 + 4000),
            void_outcome(2, 1, table="t2", at=T0 + 4100)]
    out += [fault("shuffler_jam", 0, table="t2", at=T0 + 700),
            fault("shuffler_jam", 1, table="t2", at=T0 + 800)]
    return out


async def write_known(store: Store) -> None:
    for m in stream():
        assert (await store.record(m, PIT)).new
    spec = AlertSpec
    # opened before the shift: not the shift's
    await store.raise_alert(spec("lab", "t2", "offline", "", "critical", "table offline"),
                            PIT, T0 - 50)
    void = await store.raise_alert(spec("lab", "t1", "void", "3", "major", "void round",
                                        transient=True), PIT, T0 + 1500)
    jam = await store.raise_alert(spec("lab", "t2", "fault", "shuffler_jam", "major",
                                       "shuffler jam", transient=True), PIT, T0 + 700)
    await store.raise_alert(spec("lab", "t1", "integrity:frequency", "banker up", "major",
                                 "Banker wins more often than the odds allow"), PIT, T0 + 5000)
    await store.raise_alert(spec("lab", "t1", "silent", "", "major", "silent"), PIT, T1 + 100)
    assert void is not None and jam is not None
    await store.acknowledge(void.alert.id, "sam", "seen", T0 + 1560)
    await store.acknowledge(jam.alert.id, "sam", None, T0 + 1000)


def within_wilson(count: int, n: int, p: float) -> bool:
    """Independently of the formula: p is in the Wilson interval when the score statistic
    |p̂ - p| / sqrt(p(1-p)/n) is at most z."""
    return abs(count / n - p) <= Z * (p * (1 - p) / n) ** 0.5 + 1e-12


async def test_an_incident_counts_once_however_many_alerts_it_holds(store: Store) -> None:
    """A void and the fault that caused it are one incident (pit/alerts.py groups them): the
    report counts two alerts and one incident, in the hour its first alert opened."""
    void = await store.raise_alert(AlertSpec("lab", "t1", "void", "3", "major", "void round",
                                             transient=True), PIT, T0 + 100)
    assert void is not None
    await store.raise_alert(AlertSpec("lab", "t1", "fault", "unreadable_card", "major",
                                      "card unreadable", transient=True,
                                      incident=void.alert.id), PIT, T0 + 101)
    await store.raise_alert(AlertSpec("lab", "t2", "fault", "shuffler_jam", "major", "jam",
                                      transient=True), PIT, T0 + 4000)
    report = await gather(store, T0, T1, made_at=T1, timezone=ZONE)
    by_table = {s.name: s for s in report.tables}
    assert (by_table["lab/t1"].alert_count, by_table["lab/t1"].incident_count) == (2, 1)
    assert (by_table["lab/t2"].alert_count, by_table["lab/t2"].incident_count) == (1, 1)
    assert (report.floor.alert_count, report.floor.incident_count) == (3, 2)
    assert sum(n for _, n in report.incidents) == 2
    assert 'data-figure="incidents">1<' in render(report, "html", "en").decode()


async def test_every_figure_comes_from_the_record_and_the_exact_odds(store: Store) -> None:
    await write_known(store)
    report = await gather(store, T0, T1, made_at=T1 + 600, timezone=ZONE)
    t1, t2 = report.tables
    assert (t1.name, t1.game, t2.name, t2.game) == ("lab/t1", "baccarat", "lab/t2", "qpoker")
    # rounds and voids by article (the hands either side of the shift are not its own)
    assert (t1.rounds, t1.complete, dict(t1.voids)) == (10, 9, {"baccarat.art9": 1})
    assert (t2.rounds, t2.complete, dict(t2.voids)) == (2, 0, {"qpoker.art11.5": 2})
    assert report.floor.rounds == 12 and dict(report.floor.voids) == {
        "baccarat.art9": 1, "qpoker.art11.5": 2}
    # faults by code
    assert dict(t1.faults) == {"unreadable_card": 1}
    assert dict(t2.faults) == {"shuffler_jam": 2}
    # downtime: offline from the shift's start (the will came before it) to the birth at
    # +600 s, degraded from +3600 s to +3900 s
    assert (t2.offline, t2.degraded) == (600.0, 300.0)
    assert (t1.offline, t1.degraded) == (0.0, 0.0)
    assert report.floor.offline == 600.0
    # alerts opened in the shift and their time to acknowledge (the offline one opened
    # before, the silent one after)
    assert dict(report.floor.alerts) == {"void": 1, "fault": 1, "integrity:frequency": 1}
    assert sorted(report.floor.ack_waits) == [60.0, 300.0]
    assert (report.floor.ack_median, report.floor.ack_max) == (180.0, 300.0)
    assert report.floor.unacknowledged == 1
    # integrity findings
    assert [(f.table, f.kind, f.subject) for f in report.floor.findings] == [
        ("t1", "integrity:frequency", "banker up")]
    # alerts per local hour: 07:00 two (+700 s, +1500 s), 08:00 one (+5000 s)
    assert len(report.incidents) == 8 and report.bucket == 3600
    assert [n for _, n in report.incidents] == [2, 1, 0, 0, 0, 0, 0, 0]
    assert report.incidents[0][0] == T0
    # outcome frequencies against the exact odds (tabled odds), 9 hands counted
    odds = registry.odds("baccarat").probabilities
    (table,) = t1.frequencies
    rows = {r.name: r for r in table.rows}
    assert table.n == 9 and set(rows) == {"banker", "player", "tie", "natural", "player_pair",
                                          "banker_pair"}
    counts = {"banker": 6, "player": 3, "tie": 0, "natural": 9, "player_pair": 0,
              "banker_pair": 0}
    for name, row in rows.items():
        assert (row.count, row.n) == (counts[name], 9), name
        assert row.expected == float(odds[name]), name
        assert row.low <= row.count / 9 <= row.high
        assert row.within == within_wilson(row.count, 9, row.expected), name
    assert not rows["natural"].within and rows["banker"].within
    assert t2.frequencies == []  # Q Poker's void rounds count no hand
    assert report.floor.frequencies == t1.frequencies
    # one table's report is that table's figures only
    alone = await gather(store, T0, T1, made_at=T1 + 600, timezone=ZONE, site="lab",
                         table="t2")
    assert [s.name for s in alone.tables] == ["lab/t2"] and alone.scope == "lab/t2"
    assert (alone.floor.offline, alone.floor.rounds, alone.floor.alert_count) == (600.0, 2, 1)


def test_the_wilson_interval() -> None:
    low, high = wilson(6, 9)
    for p in (low, high):  # the ends are where the score statistic is exactly z
        assert abs(abs(6 / 9 - p) - Z * (p * (1 - p) / 9) ** 0.5) < 1e-9
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0 and wilson(0, 0) == (0.0, 1.0)


def _parsed(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def test_the_csv_reads_back_to_the_same_figures(sqlite_store: Store) -> None:
    await write_known(sqlite_store)
    report = await gather(sqlite_store, T0, T1, made_at=T1 + 600, timezone=ZONE)
    rows = _parsed(render(report, "csv", "en").decode())

    def value(section: str, table: str, item: str, column: str = "count") -> str:
        (row,) = [r for r in rows if (r["section"], r["table"], r["item"]) ==
                  (section, table, item)]
        return row[column]

    assert value("period", "floor", "from", "value") == "2026-12-04T07:00:00+08:00"
    assert value("rounds", "lab/t1", "rounds") == "10"
    assert value("void", "floor", "qpoker.art11.5") == "2"
    assert value("fault", "lab/t2", "shuffler_jam") == "2"
    assert value("downtime", "lab/t2", "offline_minutes", "value") == "10.0"
    assert value("downtime", "lab/t2", "degraded_minutes", "value") == "5.0"
    assert value("acknowledgement", "floor", "median_seconds", "value") == "180.0"
    assert value("acknowledgement", "floor", "unacknowledged") == "1"
    banker = next(r for r in rows if r["section"] == "frequency" and r["table"] == "lab/t1"
              and r["item"] == "hand:banker")
    assert (banker["count"], banker["value"]) == ("6", "9")
    assert float(banker["expected"]) == pytest.approx(float(
        registry.odds("baccarat").probabilities["banker"]), abs=1e-6)
    assert [int(r["count"]) for r in rows if r["section"] == "alerts_per_hour"] == [
        2, 1, 0, 0, 0, 0, 0, 0]
    assert value("finding", "lab/t1", "integrity:frequency:banker up") == "1"
    html = render(report, "html", "en").decode()
    for shown in ("lab/t1", "baccarat.art9", "shuffler_jam", "Banker wins", "banker up",
                  "66.67 %", "10.0"):
        assert shown in html, shown


def _png(pdf: bytes, tmp_path: Path, name: str) -> list[Path]:
    """The PDF's pages as PNGs (pdftoppm -png -r 50); with TABLED_SCREENSHOTS=1 also kept as
    docs/images/pit-report-NAME-N.png."""
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm is not installed (make system-deps: poppler-utils)")
    source = tmp_path / f"{name}.pdf"
    source.write_bytes(pdf)
    subprocess.run(["pdftoppm", "-png", "-r", "50", str(source), str(tmp_path / name)],
                   check=True, timeout=60)
    pages = sorted(tmp_path.glob(f"{name}-*.png"))
    if os.environ.get("TABLED_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        for i, page in enumerate(pages[:4], start=1):
            shutil.copy(page, IMAGES / f"pit-report-{name}-{i}.png")
    return pages


def _ink(png: Path) -> float:
    """The share of a page's pixels that are not white."""
    from matplotlib.image import imread

    pixels = imread(str(png))[..., :3]
    return float((pixels.mean(axis=2) < 0.9).mean())


@pytest.mark.parametrize("language", ["zh_Hant", "en"])
async def test_the_pdf_renders_to_pages_with_charts(sqlite_store: Store, tmp_path: Path,
                                                    language: str) -> None:
    await write_known(sqlite_store)
    report = await gather(sqlite_store, T0, T1, made_at=T1 + 600, timezone=ZONE)
    pdf = render(report, "pdf", language)
    assert pdf.startswith(b"%PDF-")
    pages = _png(pdf, tmp_path, language)
    # the cover, the floor's and t1's frequencies, downtime, alerts per hour, four tables
    assert len(pages) == 9
    inks = [_ink(p) for p in pages]
    assert all(ink > 0.002 for ink in inks), inks
    assert max(inks[1:5]) > 0.02  # the charts draw bars, hatching and markers
    if language == "zh_Hant":  # a CJK font is embedded when installed
        from tabled.pit.report.render_pdf import CJK_FONT, fonts

        if fonts()[0] == CJK_FONT:
            assert b"WenQuanYi" in pdf


async def test_an_empty_period_still_makes_every_format(sqlite_store: Store) -> None:
    report = await gather(sqlite_store, T0, T1, made_at=T1, timezone=ZONE)
    assert report.tables == [] and report.floor.rounds == 0
    for fmt in ("html", "csv", "pdf"):
        assert render(report, fmt, "pt")
    assert "No round counted." in render(report, "html", "en").decode()


def test_periods_and_shifts() -> None:
    assert parse_period("2026-12-04T07:00", "2026-12-04 15:00", ZONE) == (T0, T1)
    assert parse_period("2026-12-03T23:00Z", "2026-12-04", ZONE) == (T0, T0 + 17 * 3600)
    assert parse_period("2026-12-04", "2026-12-04", ZONE) == (T0 - 7 * 3600, T0 + 17 * 3600)
    with pytest.raises(PeriodError, match=r"^from: not a date"):
        parse_period("yesterday", "2026-12-04", ZONE)
    with pytest.raises(PeriodError, match=r"^to: the end must come after"):
        parse_period("2026-12-04T07:00", "2026-12-04T07:00", ZONE)
    shifts = ["07:00", "15:00", "23:00"]
    assert ended_shifts(shifts, ZONE, T1 - 1)[-1] == (T0 - 8 * 3600, T0)
    assert ended_shifts(shifts, ZONE, T1)[-1] == (T0, T1)
    assert len(ended_shifts(shifts, ZONE, T1)) == 3  # a day's worth, for a pit that was down


async def test_the_scheduled_writer_writes_each_shift_once(sqlite_store: Store,
                                                           tmp_path: Path) -> None:
    await write_known(sqlite_store)
    folder = tmp_path / "reports"
    settings = parse_config({"mqtt": {"url": "mqtt://127.0.0.1"}, "reports": {
        "folder": str(folder), "formats": ["csv", "pdf"], "timezone": ZONE}}).reports
    now = T0 + 3600
    writer = ShiftWriter(settings, sqlite_store, clock=lambda: now)
    first = await writer.tick()  # the three shifts that ended in the day before
    assert [p.name for p in first] == [
        "shift-2026-12-03-0700.csv", "shift-2026-12-03-0700.pdf",
        "shift-2026-12-03-1500.csv", "shift-2026-12-03-1500.pdf",
        "shift-2026-12-03-2300.csv", "shift-2026-12-03-2300.pdf"]
    assert await writer.tick() == []
    now = T1 - 1  # the shift not over: nothing new
    assert await writer.tick() == []
    kept = folder / "shift-2026-12-04-0700.csv"
    kept.write_text("a supervisor's copy\n")  # a file already there is kept
    now = T1
    written = await writer.tick()
    assert [p.name for p in written] == ["shift-2026-12-04-0700.pdf"]
    assert kept.read_text() == "a supervisor's copy\n"
    kept.unlink()
    assert [p.name for p in await writer.tick()] == ["shift-2026-12-04-0700.csv"]
    rows = _parsed(kept.read_text())
    assert [r["value"] for r in rows if r["item"] == "from"] == ["2026-12-04T07:00:00+08:00"]
    assert [r["count"] for r in rows if (r["section"], r["table"], r["item"]) ==
            ("rounds", "floor", "rounds")] == ["12"]
    assert not list(folder.glob(".*part"))


def tabled(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, check=False, timeout=120)


async def test_the_command_line(sqlite_store: Store, tmp_path: Path) -> None:
    await write_known(sqlite_store)
    config = tmp_path / "pit.toml"
    config.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:1883"\n[store]\nsqlite = '
                      f'"{tmp_path / "pit.sqlite"}"\n[reports]\ntimezone = "{ZONE}"\n')
    period = ["--from", "2026-12-04T07:00", "--to", "2026-12-04T15:00"]
    out = tmp_path / "t2.html"
    pdf = tmp_path / "floor.pdf"
    nowhere = tmp_path / "none.toml"
    nowhere.write_text(f'[mqtt]\nurl = "mqtt://127.0.0.1:1883"\n[store]\nsqlite = '
                       f'"{tmp_path / "none.sqlite"}"\n')
    # seven commands, each of its own: run side by side (each mostly a Python start-up)
    with ThreadPoolExecutor(4) as pool:
        csv_, html_, pdf_, bad_date, bad_table, bad_format, none_ = pool.map(lambda a: tabled(*a), [
            ("pit", "report", "--config", str(config), *period, "--format", "csv"),
            ("pit", "report", "--config", str(config), *period, "--table", "lab/t2",
             "--format", "html", "--lang", "en", "--output", str(out)),
            ("pit", "report", "-c", str(config), *period, "--format", "pdf", "-o", str(pdf)),
            ("pit", "report", "--config", str(config), "--from", "last tuesday", "--to",
             "2026-12-04"),
            ("pit", "report", "--config", str(config), *period, "--table", "t2"),
            ("pit", "report", "--config", str(config), *period, "--format", "doc"),
            ("pit", "report", "--config", str(nowhere), *period)])
    done = csv_
    assert done.returncode == 0, done.stderr
    rows = _parsed(done.stdout.decode())
    assert [r["count"] for r in rows if (r["section"], r["item"]) == ("rounds", "rounds")] == [
        "10", "2", "12"]
    done = html_
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert "lab/t2" in html and "lab/t1" not in html and "qpoker.art11.5" in html
    done = pdf_
    assert done.returncode == 0 and pdf.read_bytes().startswith(b"%PDF-")
    bad = bad_date
    assert bad.returncode == 2 and bad.stdout == b""
    assert b"--from: not a date and time" in bad.stderr and b"last tuesday" in bad.stderr
    bad = bad_table
    assert bad.returncode == 2 and b"SITE/TABLE" in bad.stderr
    bad = bad_format
    assert bad.returncode == 2
    assert none_.returncode == 1


def test_a_bad_reports_section_names_the_key() -> None:
    from tabled.pit.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config({"mqtt": {"url": "mqtt://127.0.0.1"}, "reports": {
            "shifts": ["7:00", "15:00"], "timezone": "Asia/Nowhere", "formats": ["doc"],
            "folders": "/tmp"}})
    keys = dict(caught.value.errors)
    assert "HH:MM" in keys["reports.shifts"] and "7:00" in keys["reports.shifts"]
    assert "Asia/Nowhere" in keys["reports.timezone"]
    assert "reports.formats.0" in keys and "reports.folders" in keys



async def test_the_pit_service_writes_the_shift_that_just_ended(broker: Any,
                                                                 tmp_path: Path) -> None:
    """The running service's report task: two shifts a minute apart — today's first one just
    over, and yesterday's second, which ended when today's first began."""
    from datetime import timedelta

    from tabled.pit.service import PitService
    from tests.pit.conftest import running

    now = datetime.now(ZoneInfo(ZONE))
    shifts = [(now - timedelta(minutes=m)).strftime("%H:%M") for m in (2, 1)]
    folder = tmp_path / "reports"
    config = parse_config({
        "mqtt": {"url": broker.url, "reconnect_min": 0.1, "reconnect_max": 1.0},
        "store": {"sqlite": str(tmp_path / "pit.sqlite")},
        "reports": {"folder": str(folder), "shifts": shifts, "formats": ["csv"],
                    "timezone": ZONE, "language": "pt"}})
    service = PitService(config)
    assert service.reports is not None
    async with running(service):
        for _ in range(100):
            written = sorted(folder.glob("shift-*.csv"))
            if len(written) == 2:
                break
            await asyncio.sleep(0.1)
    first = (now - timedelta(minutes=2)).strftime("%Y-%m-%d-%H%M")
    second = (now - timedelta(days=1, minutes=1)).strftime("%Y-%m-%d-%H%M")
    assert [p.name for p in written] == [f"shift-{second}.csv", f"shift-{first}.csv"]
    rows = _parsed(written[-1].read_text())
    assert [r["item"] for r in rows[:3]] == ["from", "to", "timezone"]
    assert PitService(parse_config({"mqtt": {"url": broker.url}})).reports is None


async def test_the_outcomes_and_the_game_are_named_in_the_reports_language(store: Store) -> None:
    """The frequency tables' outcome names and game titles come from the games (their
    integrity parts' rates, their declarations) and are translated like the rest."""
    await write_known(store)
    report = await gather(store, T0, T1, made_at=T1 + 600, timezone=ZONE)
    zh = render(report, "html", "zh_Hant").decode()
    assert "莊贏" in zh and "閒對" in zh and "百家樂" in zh
    # (an integrity finding's message is the record's text, in English)
    assert "<td>Banker wins</td>" not in zh and "<td>Player pairs</td>" not in zh
    pt = render(report, "html", "pt").decode()
    assert "<td>vitórias da Banca</td>" in pt and "<td>Banker wins</td>" not in pt
