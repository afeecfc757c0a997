"""A report as CSV: one long table a spreadsheet or a script reads back (the column names and
items are data, in English; the page and the PDF are translated).

Columns: ``section, table, game, item, count, value, expected, low, high``. ``table`` is
``SITE/TABLE`` or ``floor``; times are ISO 8601 in the report's zone; minutes and seconds are
decimals; a frequency row (item ``observation:rate``) has its count, the observations in
``value``, the exact probability in ``expected`` and the Wilson interval in ``low``, ``high``;
a finding's (item ``kind:subject``) ``value`` is its time and message.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from tabled.pit.report.figures import Report, Section, by_count

COLUMNS = ("section", "table", "game", "item", "count", "value", "expected", "low", "high")


def _rows(report: Report, s: Section) -> list[list[Any]]:
    name = s.name or "floor"
    game = s.game or ""
    rows: list[list[Any]] = [
        ["rounds", name, game, "rounds", s.rounds, "", "", "", ""],
        ["rounds", name, game, "complete", s.complete, "", "", "", ""],
        ["rounds", name, game, "void", s.void_count, "", "", "", ""],
    ]
    rows += [["void", name, game, article, n, "", "", "", ""] for article, n in by_count(s.voids)]
    rows += [["fault", name, game, code, n, "", "", "", ""] for code, n in by_count(s.faults)]
    rows += [["downtime", name, game, "offline_minutes", "", round(s.offline / 60, 2), "", "",
              ""],
             ["downtime", name, game, "degraded_minutes", "", round(s.degraded / 60, 2), "", "",
              ""]]
    rows += [["alert", name, game, kind, n, "", "", "", ""] for kind, n in by_count(s.alerts)]
    rows += [["incident", name, game, "incidents", s.incident_count, "", "", "", ""]]
    median, longest = s.ack_median, s.ack_max
    rows += [["acknowledgement", name, game, "acknowledged", len(s.ack_waits), "", "", "", ""],
             ["acknowledgement", name, game, "unacknowledged", s.unacknowledged, "", "", "", ""],
             ["acknowledgement", name, game, "median_seconds", "",
              "" if median is None else round(median, 1), "", "", ""],
             ["acknowledgement", name, game, "max_seconds", "",
              "" if longest is None else round(longest, 1), "", "", ""]]
    for table in s.frequencies:
        for f in table.rows:
            rows.append(["frequency", name, table.game, f"{table.observation}:{f.name}", f.count,
                         f.n, f"{f.expected:.6f}", f"{f.low:.6f}", f"{f.high:.6f}"])
    for finding in s.findings if s.table is not None else ():  # the floor's are the tables'
        rows.append(["finding", name,
                     game, f"{finding.kind}:{finding.subject}", 1,
                     f"{report.local(finding.opened_at).isoformat(timespec='seconds')} "
                     f"{finding.message}", "", "", ""])
    return rows


def csv_text(report: Report) -> str:
    """The report as CSV text (``\\r\\n`` line ends, as the csv module writes)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(COLUMNS)
    w.writerow(["period", report.scope or "floor", "", "from", "",
                report.local(report.since).isoformat(timespec="seconds"), "", "", ""])
    w.writerow(["period", report.scope or "floor", "", "to", "",
                report.local(report.until).isoformat(timespec="seconds"), "", "", ""])
    w.writerow(["period", report.scope or "floor", "", "timezone", "", report.timezone, "", "",
                ""])
    for section in [*report.tables, report.floor]:
        w.writerows(_rows(report, section))
    for start, n in report.incidents:
        w.writerow(["alerts_per_hour" if report.bucket == 3600 else "alerts_per_day",
                    report.scope or "floor", "",
                    report.local(start).isoformat(timespec="seconds"), n, "", "", "", ""])
    return out.getvalue()
