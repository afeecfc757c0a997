"""A report as HTML: the body the page shows inside its frame (``/reports/view``), and a
stand-alone document (``--format html``, the scheduled reports) with its own small stylesheet.

Owns the report's markup (``templates/report_body.html``, translated with the pit's catalogue);
never a figure (:mod:`.figures` computes them).
"""

from __future__ import annotations

from pathlib import Path

import jinja2
from markupsafe import Markup

from tabled.pit.i18n import translations
from tabled.pit.report.figures import Report, by_count

HERE = Path(__file__).parent

_STYLE = """
body { font-family: "WenQuanYi Micro Hei", "Noto Sans CJK TC", sans-serif; margin: 2em;
       color: #111; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid #999; padding: .2em .6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #555; } .off { font-weight: bold; }
"""


def _environment(language: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             extensions=["jinja2.ext.i18n"], autoescape=True,
                             trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.install_gettext_translations(translations(language),  # type: ignore[attr-defined]
                                     newstyle=True)
    env.filters.update(minutes=lambda s: f"{s / 60:.1f}",
                       percent=lambda p: "—" if p is None else f"{100 * p:.2f} %",
                       seconds=lambda s: "—" if s is None else f"{s:.0f} s")
    env.globals.update(by_count=by_count)
    return env


def body(report: Report, language: str) -> Markup:
    """The report's markup, for the page's frame."""
    env = _environment(language)
    when = report.local
    return Markup(env.get_template("report_body.html").render(
        report=report, when=lambda t: when(t).strftime("%Y-%m-%d %H:%M"),
        hour=lambda t: when(t).strftime("%m-%d %H:%M")))


def document(report: Report, language: str) -> str:
    """The report as one stand-alone HTML document."""
    env = _environment(language)
    return env.from_string(
        '<!doctype html>\n<html lang="{{ lang }}">\n<head>\n<meta charset="utf-8">\n'
        '<title>{{ _("Shift report") }}</title>\n<style>{{ style }}</style>\n</head>\n'
        '<body>\n{{ content }}\n</body>\n</html>\n').render(
        lang=language.replace("_", "-"), style=Markup(_STYLE), content=body(report, language))
