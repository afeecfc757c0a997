"""A report as PDF: the charts a manager looks at (outcome frequencies against the exact odds
with their intervals, downtime per table, incidents per hour) and the figures as tables, drawn
with matplotlib (Agg, its own PDF backend ``PdfPages``).

Owns the document's pages; never a figure (:mod:`.figures`). Printed in black and white it
still reads: series differ by hatching and marker, never by colour alone. Chinese needs a CJK
font: "WenQuanYi Micro Hei" (Debian's fonts-wqy-microhei) when installed, else matplotlib's
default (which draws no Chinese; the report says so in its log, once).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import matplotlib

matplotlib.use("Agg")

import structlog
from matplotlib import font_manager, rc_context
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tabled.pit.i18n import N_, translations
from tabled.pit.report.figures import FrequencyTable, Report, Section, by_count

log = structlog.get_logger("tabled.pit.report")

#: The CJK-capable font the report asks for first.
CJK_FONT = "WenQuanYi Micro Hei"
#: A4 portrait, inches.
PAGE = (8.27, 11.69)
#: Rows of a table page.
ROWS_PER_PAGE = 40

TITLES = {
    "cover": N_("Shift report"),
    "frequencies": N_("Outcome frequencies against the exact odds"),
    "downtime": N_("Downtime per table"),
    "hours": N_("Incidents per hour"),
    "days": N_("Incidents per day"),
}


@cache
def fonts() -> tuple[str, ...]:
    """The font families the report asks for, the CJK one first when installed."""
    try:
        font_manager.findfont(font_manager.FontProperties(family=CJK_FONT),
                              fallback_to_default=False)
    except ValueError:
        log.warning("report_no_cjk_font", font=CJK_FONT,
                    hint="install fonts-wqy-microhei (make system-deps)")
        return ("DejaVu Sans",)
    return (CJK_FONT, "DejaVu Sans")


def _save(pdf: PdfPages, fig: Figure) -> None:
    pdf.savefig(fig)  # type: ignore[no-untyped-call]


def _text_page(pdf: PdfPages, title: str, lines: Sequence[str]) -> None:
    fig = Figure(figsize=PAGE)
    fig.text(0.08, 0.94, title, fontsize=18, va="top")
    for i, line in enumerate(lines):
        fig.text(0.08, 0.88 - i * 0.03, line, fontsize=11, va="top")
    _save(pdf, fig)


def _table_pages(pdf: PdfPages, title: str, header: Sequence[str],
                 rows: Sequence[Sequence[str]], empty: str) -> None:
    """Rows as matplotlib tables, :data:`ROWS_PER_PAGE` a page."""
    chunks = [rows[i:i + ROWS_PER_PAGE] for i in range(0, len(rows), ROWS_PER_PAGE)] or [[]]
    for chunk in chunks:
        fig = Figure(figsize=PAGE)
        fig.text(0.06, 0.96, title, fontsize=15, va="top")
        if not chunk:
            fig.text(0.06, 0.9, empty, fontsize=11, va="top")
        else:
            ax = fig.add_axes((0.04, 0.04, 0.92, 0.88))
            ax.axis("off")
            table = ax.table(cellText=[list(r) for r in chunk], colLabels=list(header),
                             loc="upper center", cellLoc="left", colLoc="left")
            table.auto_set_font_size(False)
            table.set_fontsize(8)
            table.scale(1, 1.3)
            for (row, _), cell in table.get_celld().items():
                if row == 0:
                    cell.set_facecolor("#dddddd")
        _save(pdf, fig)


def _frequency_page(pdf: PdfPages, t: Callable[[str], str], heading: str,
                    table: FrequencyTable) -> None:
    """Observed rate (black dot, the interval as a bar) beside the exact probability
    (a hollow diamond on a hatched bar) for each outcome class."""
    fig = Figure(figsize=PAGE)
    ax = fig.add_axes((0.3, 0.1, 0.62, 0.78))
    ax.set_axisbelow(True)
    names = [t(r.spoken) for r in table.rows]
    ys = list(range(len(table.rows)))[::-1]
    expected = [r.expected for r in table.rows]
    ax.barh(ys, expected, height=0.5, color="white", edgecolor="black", hatch="///",
            label=t(N_("expected (exact odds)")))
    ax.scatter(expected, ys, marker="D", facecolors="white", edgecolors="black", zorder=3, s=30)
    observed = [r.observed if r.observed is not None else 0.0 for r in table.rows]
    low = [max(0.0, o - r.low) for o, r in zip(observed, table.rows, strict=True)]
    high = [max(0.0, r.high - o) for o, r in zip(observed, table.rows, strict=True)]
    ax.errorbar(observed, ys, xerr=[low, high], fmt="o", color="black", ecolor="black",
                capsize=4, markersize=6, zorder=4,
                label=t(N_("observed, 95 %% interval")) % {})
    for y, r in zip(ys, table.rows, strict=True):
        if not r.within:
            ax.annotate("!", (r.high, y), xytext=(6, -4), textcoords="offset points",
                        fontsize=14)
    ax.set_yticks(ys, names)
    rare = min(expected) > 0 and max(expected) / min(expected) > 100
    if rare:
        ax.set_xscale("log")
    ax.set_xlabel(t(N_("share of observations")) + (" (log)" if rare else ""))
    ax.grid(axis="x", linestyle=":", color="black", linewidth=0.5)
    ax.legend(loc="lower right", fontsize=9)
    fig.text(0.06, 0.96, t(TITLES["frequencies"]), fontsize=15, va="top")
    fig.text(0.06, 0.925, heading, fontsize=11, va="top")
    _save(pdf, fig)


def _downtime_page(pdf: PdfPages, t: Callable[[str], str], tables: Sequence[Section]) -> None:
    fig = Figure(figsize=PAGE)
    fig.text(0.06, 0.96, t(TITLES["downtime"]), fontsize=15, va="top")
    if not tables:
        fig.text(0.06, 0.9, t(N_("No table in the period.")), fontsize=11, va="top")
        _save(pdf, fig)
        return
    high = min(0.8, 0.05 * len(tables) + 0.1)
    ax = fig.add_axes((0.3, 0.9 - high, 0.62, high))
    ax.set_axisbelow(True)
    ys = list(range(len(tables)))[::-1]
    offline = [s.offline / 60 for s in tables]
    degraded = [s.degraded / 60 for s in tables]
    ax.barh(ys, offline, height=0.6, color="#444444", edgecolor="black", hatch="xx",
            label=t(N_("offline")))
    ax.barh(ys, degraded, left=offline, height=0.6, color="white", edgecolor="black",
            hatch="..", label=t(N_("degraded")))
    ax.set_yticks(ys, [s.name for s in tables])
    ax.set_xlabel(t(N_("minutes")))
    ax.set_xlim(0, max([1.0, *(o + d for o, d in zip(offline, degraded, strict=True))]) * 1.1)
    ax.grid(axis="x", linestyle=":", color="black", linewidth=0.5)
    ax.legend(loc="lower right", fontsize=9)
    _save(pdf, fig)


def _hours_page(pdf: PdfPages, t: Callable[[str], str], report: Report) -> None:
    fig = Figure(figsize=(PAGE[1], PAGE[0]))  # landscape: a day's hours side by side
    hourly = report.bucket == 3600
    fig.text(0.06, 0.95, t(TITLES["hours" if hourly else "days"]), fontsize=15,
             va="top")
    ax = fig.add_axes((0.08, 0.18, 0.88, 0.7))
    ax.set_axisbelow(True)
    labels = [report.local(s).strftime("%H:%M" if hourly else "%m-%d")
              for s, _ in report.incidents]
    xs = list(range(len(report.incidents)))
    ax.bar(xs, [n for _, n in report.incidents], color="white", edgecolor="black",
           hatch="//", width=0.8)
    step = max(1, len(xs) // 24)
    ax.set_xticks(xs[::step], labels[::step], rotation=60, fontsize=8)
    ax.set_ylabel(t(N_("alerts opened")))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="y", linestyle=":", color="black", linewidth=0.5)
    _save(pdf, fig)


def pdf_bytes(report: Report, language: str) -> bytes:
    """The report as a PDF document in ``language``."""
    t = translations(language).gettext
    when = report.local
    out = io.BytesIO()
    metadata = {"Title": t(TITLES["cover"]), "Creator": "tabled pit", "CreationDate": None,
                "ModDate": None}
    with rc_context({"font.family": list(fonts()), "pdf.fonttype": 42,
                     "hatch.linewidth": 0.6, "axes.unicode_minus": False}), \
            PdfPages(out, metadata=metadata) as pdf:
        floor = report.floor
        median = floor.ack_median
        _text_page(pdf, t(TITLES["cover"]) + (f" · {report.scope}" if report.scope else ""), [
            t(N_("From %(since)s to %(until)s (%(zone)s)")) % {
                "since": when(report.since).strftime("%Y-%m-%d %H:%M"),
                "until": when(report.until).strftime("%Y-%m-%d %H:%M"),
                "zone": report.timezone},
            t(N_("Made %(made)s from the pit's record.")) % {
                "made": when(report.made_at).strftime("%Y-%m-%d %H:%M")},
            "",
            f"{t(N_('Tables'))}: {len(report.tables)}",
            f"{t(N_('Rounds'))}: {floor.rounds}",
            f"{t(N_('Voids'))}: {floor.void_count}",
            f"{t(N_('Faults'))}: {floor.fault_count}",
            f"{t(N_('Offline (min)'))}: {floor.offline / 60:.1f}",
            f"{t(N_('Degraded (min)'))}: {floor.degraded / 60:.1f}",
            f"{t(N_('Alerts'))}: {floor.alert_count}",
            f"{t(N_('Incidents'))}: {floor.incident_count}",
            f"{t(N_('Not acknowledged'))}: {floor.unacknowledged}",
            f"{t(N_('Median time to acknowledge'))}: "
            + ("—" if median is None else f"{median:.0f} s"),
            f"{t(N_('Integrity findings'))}: {len(floor.findings)}",
            "",
            t(N_("Intervals: Wilson score, 95 %% confidence.")) % {},
        ])
        sections = report.tables if report.scope else [*report.tables, floor]
        for s in sections:
            for table in s.frequencies:
                where = s.name if s.table else t(N_("Floor"))
                _frequency_page(pdf, t, f"{where} · {t(table.title)} · " + t(
                    N_("%(n)s observations")) % {"n": table.n}, table)
        _downtime_page(pdf, t, report.tables)
        _hours_page(pdf, t, report)
        _table_pages(pdf, t(N_("Tables")), [
            t(N_("Table")), t(N_("Game")), t(N_("Rounds")), t(N_("Voids")),
            t(N_("Faults")), t(N_("Offline (min)")), t(N_("Degraded (min)")),
            t(N_("Alerts")), t(N_("Incidents"))],
                     [_summary_row(s, t) for s in [*report.tables, floor]], "")
        _table_pages(pdf, t(N_("Voids by article")),
                     [t(N_("Table")), t(N_("Article")), t(N_("Voids"))],
                     [[s.name, a, str(n)] for s in report.tables
                      for a, n in by_count(s.voids)], t(N_("No void round.")))
        _table_pages(pdf, t(N_("Faults by kind")),
                     [t(N_("Table")), t(N_("Fault")), t(N_("Count"))],
                     [[s.name, c, str(n)] for s in report.tables
                      for c, n in by_count(s.faults)], t(N_("No fault.")))
        _table_pages(pdf, t(N_("Integrity findings")),
                     [t(N_("Time")), t(N_("Table")), t(N_("Finding")), t(N_("Message"))],
                     [[when(f.opened_at).strftime("%m-%d %H:%M"), f"{f.site}/{f.table}",
                       f"{f.kind} {f.subject}", f.message[:60]]
                      for f in floor.findings], t(N_("No integrity finding.")))
    return out.getvalue()


def _summary_row(s: Section, t: Callable[[str], str]) -> list[str]:
    name: Any = s.name if s.table else t(N_("Floor"))
    return [str(name), s.game or "", str(s.rounds), str(s.void_count), str(s.fault_count),
            f"{s.offline / 60:.1f}", f"{s.degraded / 60:.1f}", str(s.alert_count),
            str(s.incident_count)]
