"""The pit's shift and day reports: figures from the record (:mod:`.figures`), rendered as HTML,
CSV or PDF (:mod:`.render_html`, :mod:`.render_csv`, :mod:`.render_pdf`), for a period asked on
the command line or the page, and written per shift into a folder (:mod:`.schedule`).

Owns the report; never the live model (a report reads the store only) and never a device.
"""

from __future__ import annotations

from tabled.pit.report.figures import Report, ReportRecord, gather

__all__ = ["Report", "ReportRecord", "gather", "render"]

FORMATS = ("html", "csv", "pdf")
MEDIA_TYPES = {"html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8",
               "pdf": "application/pdf"}


def render(report: Report, fmt: str, language: str) -> bytes:
    """``report`` as a file of format ``fmt`` (:data:`FORMATS`) in ``language``."""
    if fmt == "html":
        from tabled.pit.report.render_html import document

        return document(report, language).encode()
    if fmt == "csv":
        from tabled.pit.report.render_csv import csv_text

        return csv_text(report).encode()
    if fmt == "pdf":
        from tabled.pit.report.render_pdf import pdf_bytes

        return pdf_bytes(report, language)
    raise ValueError(f"no report format {fmt!r}: one of {', '.join(FORMATS)}")
