"""The pit's languages: 繁體中文 first, then English and Português — one message catalogue
(gettext, made with Babel) for the page, the displays and the reports.

Owns the list of languages, the choice of one (:func:`choose`, :func:`negotiate`), the
translations of each (:func:`translations`, read from ``locale/<language>/LC_MESSAGES/
tabled.po`` at first use and kept: nothing is compiled or committed but the ``.po``), the
callables a Jinja render binds (:func:`jinja_gettext`) and the names of the rules' articles
(:func:`article`); never the text of the record (alert messages, outcomes and the audit stay as
they were written: a page translates what it shows of them). Strings in Python code that a page,
a display or a report shows are marked with :func:`N_` where they are written and translated
where they are shown (``_()`` in a template, ``translations(language).gettext`` in a report).
The English text is the msgid; English has no catalogue.
"""

from __future__ import annotations

import functools
import gettext
import io
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from babel.messages import mofile, pofile
from babel.support import Translations
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup

#: The languages a user may choose, the floor's first.
LANGUAGES = ("zh_Hant", "en", "pt")
#: The language of a page, a display or a report when nobody chose one.
DEFAULT = "zh_Hant"
#: Each language in its own words (the page's language chooser).
NAMES: Mapping[str, str] = {"zh_Hant": "繁體中文", "en": "English", "pt": "Português"}
#: Each language as HTML's ``lang`` attribute names it.
HTML_LANG: Mapping[str, str] = {"zh_Hant": "zh-Hant", "en": "en", "pt": "pt"}
#: The catalogues: ``LOCALE/<language>/LC_MESSAGES/DOMAIN.po``.
LOCALE = Path(__file__).resolve().parent / "locale"
DOMAIN = "tabled"

_lock = threading.Lock()


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue; it is translated where it is shown."""
    return message


def catalogue_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def _load(language: str) -> gettext.NullTranslations:
    if language not in LANGUAGES or language == "en":
        return gettext.NullTranslations()
    with catalogue_path(language).open("rb") as po:
        catalog = pofile.read_po(po, locale=language, domain=DOMAIN)
    compiled = io.BytesIO()
    mofile.write_mo(compiled, catalog)  # fuzzy entries are left out, as msgfmt does
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


def translations(language: str) -> gettext.NullTranslations:
    """The catalogue of ``language`` (a :data:`LANGUAGES` entry; another is English, the
    msgids). Read at first use and kept for the life of the process; thread-safe."""
    with _lock:
        return _load(choose(language))


def choose(language: object, default: str = DEFAULT) -> str:
    """``language`` if it is one of :data:`LANGUAGES`, else ``default``."""
    return language if isinstance(language, str) and language in LANGUAGES else default


_TAG = re.compile(r"^\s*([A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9.]+))?")


def _language_of_tag(tag: str) -> str | None:
    primary = tag.replace("_", "-").lower().split("-")[0]
    return {"zh": "zh_Hant", "en": "en", "pt": "pt"}.get(primary)


def negotiate(accept_language: str | None) -> str | None:
    """The language of an HTTP ``Accept-Language`` header the pit speaks best (any Chinese is
    繁體中文), or None: none of them."""
    best: tuple[float, int, str] | None = None
    for order, item in enumerate((accept_language or "").split(",")[:32]):
        match = _TAG.match(item)
        if not match:
            continue
        try:
            q = float(match.group(2)) if match.group(2) else 1.0
        except ValueError:
            continue
        language = _language_of_tag(match.group(1))
        if language is None or q <= 0:
            continue
        if best is None or (q, -order) > (best[0], best[1]):
            best = (q, -order, language)
    return None if best is None else best[2]


# -- templates ----------------------------------------------------------------------------------


def jinja_gettext(language: str) -> dict[str, Callable[..., str]]:
    """The gettext callables of ``language`` for one Jinja render, newstyle (the i18n
    extension's ``_("%(n)s rounds", n=3)``, ``ngettext(s, p, n)``, autoescaped values): pass
    them in the render's context (``template.render(**jinja_gettext(lang), ...)``); the
    environment is shared, so they are never installed on it per request."""
    t = translations(language)

    @pass_context
    def _gettext(__context: Context, __string: str, **variables: Any) -> str:
        text = t.gettext(__string)
        if __context.eval_ctx.autoescape:
            text = Markup(text)
        return text % variables

    @pass_context
    def _ngettext(__context: Context, __singular: str, __plural: str, __num: int,
                  **variables: Any) -> str:
        variables.setdefault("num", __num)
        text = t.ngettext(__singular, __plural, __num)
        if __context.eval_ctx.autoescape:
            text = Markup(text)
        return text % variables

    @pass_context
    def _pgettext(__context: Context, __msgctxt: str, __string: str, **variables: Any) -> str:
        text = t.pgettext(__msgctxt, __string)
        if __context.eval_ctx.autoescape:
            text = Markup(text)
        return text % variables

    @pass_context
    def _npgettext(__context: Context, __msgctxt: str, __singular: str, __plural: str,
                   __num: int, **variables: Any) -> str:
        variables.setdefault("num", __num)
        text = t.npgettext(__msgctxt, __singular, __plural, __num)
        if __context.eval_ctx.autoescape:
            text = Markup(text)
        return text % variables

    return {"_": _gettext, "gettext": _gettext, "ngettext": _ngettext,
            "pgettext": _pgettext, "npgettext": _npgettext}


def phrase(line: Any, language: str) -> str:
    """A line the pit keeps as ``[msgid, values]`` (a tile's last outcome, ``PitPart.phrase``)
    in ``language``: the msgid translated, each value that is a word (a msgid) translated
    too, an ``article`` named as the rules name it, numbers as they are; anything else is
    shown as it is (a line kept as text)."""
    if not (isinstance(line, list | tuple) and len(line) == 2 and isinstance(line[0], str)
            and isinstance(line[1], Mapping)):
        return str(line)
    t = translations(language)
    values = {}
    for key, value in line[1].items():
        if key == "article":
            values[key] = article(value, language) if value else "—"
        elif isinstance(value, str):
            values[key] = t.gettext(value.replace("_", " "))
        else:
            values[key] = "—" if value is None else value
    for message in (t.gettext(line[0]), line[0]):
        try:
            return message % values
        except (KeyError, TypeError, ValueError):  # values that do not fit: the next, as is
            continue
    return line[0]


# -- the rules' articles ------------------------------------------------------------------------

_DIGITS = "〇一二三四五六七八九"
_ARTICLE = re.compile(r"^(?:(?P<game>[a-z][a-z0-9_]*)\.)?art(?P<article>\d+)"
                      r"(?:\.(?P<paragraph>\d+))?$")


def chinese_numeral(n: int) -> str:
    """``11`` → ``十一``, ``20`` → ``二十``, ``105`` → ``一百零五`` (as the rules number
    their articles and paragraphs), for 0 ≤ n < 1000."""
    if n < 10:
        return _DIGITS[n]
    if n < 20:
        return "十" + (_DIGITS[n % 10] if n % 10 else "")
    if n < 100:
        return _DIGITS[n // 10] + "十" + (_DIGITS[n % 10] if n % 10 else "")
    if n < 1000:
        rest = n % 100
        tail = "" if rest == 0 else ("零" + _DIGITS[rest] if rest < 10
                                     else ("一" + chinese_numeral(rest) if rest < 20
                                           else chinese_numeral(rest)))
        return _DIGITS[n // 100] + "百" + tail
    return str(n)


def _items(game: str | None, number: int) -> bool:
    """Whether game ``game``'s Chinese rules number article ``number``'s parts as items
    (its pit part's ``article_items``)."""
    if game is None:
        return False
    from tabled.games import registry  # the games' registry, at first use only
    from tabled.games.parts.pit import PitPart
    try:
        part = registry.part(game, "pit")
    except (registry.UnknownGame, registry.BadGame):
        return False
    return isinstance(part, PitPart) and number in part.article_items


def article(code: object, language: str) -> str:
    """A rule's article as the rules of ``language`` name it: ``baccarat.art16.2`` is
    ``第十六條第二款`` (the Chinese originals; an article whose parts they number as items,
    its game's pit part's ``article_items``: ``第十一條（五）項``, ``Art. 11.º, alínea 5)``),
    ``Art. 16.º, n.º 2`` (Portuguese), ``Art. 16.2`` (English); a code that is not an
    article is shown as it is."""
    text = str(code)
    match = _ARTICLE.match(text)
    if match is None:
        return text
    number, paragraph = int(match["article"]), match["paragraph"]
    chinese = choose(language) == "zh_Hant"
    values = {"article": chinese_numeral(number) if chinese else str(number)}
    t = translations(language)
    if paragraph is None:
        return t.gettext(N_("Art. %(article)s")) % values
    values["paragraph"] = chinese_numeral(int(paragraph)) if chinese else paragraph
    if _items(match["game"], number):
        items = N_("Art. %(article)s(%(paragraph)s)")
        named = t.gettext(items)
        if named != items:  # English names an item as it names a paragraph: Art. 11.5
            return named % values
    return t.gettext(N_("Art. %(article)s.%(paragraph)s")) % values
