"""The pit's languages: 繁體中文 first, then English and Português — one message catalogue
(gettext, made with Babel) for the page, the displays and the reports.

Owns the list of languages, the choice of one, and the translations of each; never the text of
the record (alert messages, outcomes and the audit stay as they were written: a page translates
what it shows of them). Strings in Python code that a page, a display or a report shows are
marked with :func:`N_` where they are written and translated where they are shown (``_()`` in a
template, :func:`translations` in a report).
"""

from __future__ import annotations

import gettext

#: The languages a user may choose, the floor's first.
LANGUAGES = ("zh_Hant", "en", "pt")
#: The language of a page, a display or a report when nobody chose one.
DEFAULT = "zh_Hant"


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue; it is translated where it is shown."""
    return message


def translations(language: str) -> gettext.NullTranslations:
    """The catalogue of ``language`` (a :data:`LANGUAGES` entry)."""
    return gettext.NullTranslations()
