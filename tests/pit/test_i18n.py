"""The pit's message catalogue (tabled.pit.i18n, docs/pit.md "Languages"): every string the
sources mark is translated into 繁體中文 and Português, placeholders survive translation, every
article the games cite is named as the seeds name it, and a request's language is chosen as
documented — with the real catalogues, Babel's real extractor over the real sources and
``babel.cfg``, and the pit's real Jinja environment."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from tabled.pit import i18n
from tabled.pit.web import app as web_app
from tabled.pit.web import present

ROOT = Path(__file__).resolve().parents[2]
TRANSLATED = ("zh_Hant", "pt")
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")
#: an article cited in the games' code: ``"qpoker.art11.5"``
CITED = re.compile(r"""["']((baccarat|craps|qpoker)\.art\d+(?:\.\d+)?)["']""")
CHINESE_GAME_RULES = {g: ROOT / "docs" / "rules" / f"{g}-rules-zh.txt"
                      for g in ("baccarat", "craps", "qpoker")}


def extracted(root: Path) -> dict[str, list[str]]:
    """Every msgid the sources under ``root`` mark, as ``make messages`` extracts them (the
    repository's babel.cfg, its paths from ``root``), with where each is."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found: dict[str, list[str]] = {}
    for filename, lineno, message, _comments, _context in extract_from_dir(
            root, method_map, options_map):
        msgids = message if isinstance(message, tuple) else (message,)
        for msgid in msgids:
            if msgid:
                found.setdefault(msgid, []).append(f"{filename}:{lineno}")
    return found


def catalogue(language: str) -> dict[str, str]:
    """A language's .po as gettext reads it: msgid → msgstr, fuzzy and obsolete left out."""
    with i18n.catalogue_path(language).open("rb") as po:
        cat = read_po(po, locale=language)
    out: dict[str, str] = {}
    for message in cat:
        if not message.id or message.fuzzy:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for msgid in ids:
            out[msgid] = "" if any(not s for s in strings) else strings[0]
    return out


def untranslated(msgids: Iterable[str]) -> dict[str, list[str]]:
    """Per language, the msgids with no (or an empty) translation."""
    missing: dict[str, list[str]] = {}
    for language in TRANSLATED:
        cat = catalogue(language)
        gaps = sorted(m for m in msgids if not cat.get(m))
        if gaps:
            missing[language] = gaps
    return missing


# -- the catalogue ------------------------------------------------------------------------------


def test_every_string_the_sources_mark_is_translated() -> None:
    found = extracted(ROOT)
    # the extraction reads the templates, the pit's Python and the games' marks
    assert "Regulated options" in found and "Big road" in found and "device lost" in found
    assert any("games/" in where for where in found["Big road"])
    assert untranslated(found) == {}, "run `make messages` and translate the empty msgstrs"


def test_a_new_string_without_its_translation_fails(tmp_path: Path) -> None:
    # a helper adds a template with a string nobody translated: the check above names it
    templates = tmp_path / "pit" / "web" / "templates"
    templates.mkdir(parents=True)
    (templates / "new.html").write_text(
        '<h2>{{ _("Alerts") }}</h2><p>{{ _("A string nobody translated, %(n)s", n=2) }}</p>\n'
        "{{ ngettext('%(num)s new seat', '%(num)s new seats', 3) }}\n", encoding="utf-8")
    (tmp_path / "pit" / "new.py").write_text(
        'from tabled.pit.i18n import N_\nLABEL = N_("Another new label")\n', encoding="utf-8")
    found = extracted(tmp_path)
    assert set(found) == {"Alerts", "A string nobody translated, %(n)s", "%(num)s new seat",
                          "%(num)s new seats", "Another new label"}
    gaps = untranslated(found)
    assert set(gaps) == {"zh_Hant", "pt"}
    for language in TRANSLATED:
        assert gaps[language] == ["%(num)s new seat", "%(num)s new seats",
                                  "A string nobody translated, %(n)s", "Another new label"]


@pytest.mark.parametrize("language", TRANSLATED)
def test_placeholders_survive_translation(language: str) -> None:
    with i18n.catalogue_path(language).open("rb") as po:
        cat = read_po(po, locale=language)
    for message in cat:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        named = {name for msgid in ids for name in PLACEHOLDER.findall(msgid)}
        for msgstr in strings:
            found = set(PLACEHOLDER.findall(msgstr))
            # a plural's form may leave out the count (``num``), never another value
            assert found <= named and named - {"num"} <= found, (language, ids, msgstr)
            if len(ids) == 1:
                assert found == named, (language, ids, msgstr)
            assert msgstr.count("%") - msgstr.count("%%") * 2 == len(
                PLACEHOLDER.findall(msgstr)), (language, ids, msgstr)


@pytest.mark.parametrize("language", TRANSLATED)
def test_one_entry_per_msgid(language: str) -> None:
    # everyone appends to the .po files: a msgid twice (in one context) is a merge gone wrong
    text = i18n.catalogue_path(language).read_text(encoding="utf-8")
    keys = re.findall(r'^(?:msgctxt "(.*)"\n)?msgid "(.*)"$', text, flags=re.MULTILINE)
    twice = sorted({k for k in keys if k[1] and keys.count(k) > 1})
    assert twice == []


def test_the_catalogues_load_with_babel_and_are_kept() -> None:
    zh, pt = i18n.translations("zh_Hant"), i18n.translations("pt")
    assert zh.gettext("Big road") == "大路" and pt.gettext("Big road") == "Estrada grande"
    assert i18n.translations("en").gettext("Big road") == "Big road"
    assert i18n.translations("fr").gettext("Big road") == i18n.translations(i18n.DEFAULT) \
        .gettext("Big road") == "大路"  # an unknown language is the default
    assert i18n.translations("zh_Hant") is zh  # read once
    assert zh.gettext("%(n)s tables") == "%(n)s 張賭枱"
    # every record word the page shows through |tr is in both catalogues
    assert untranslated(present.WORDS + present.EVENT_WORDS) == {}


# -- the rules' articles ------------------------------------------------------------------------


def cited_articles() -> set[str]:
    codes = set()
    for path in (ROOT / "games").rglob("*.py"):
        codes.update(m.group(1) for m in CITED.finditer(path.read_text(encoding="utf-8")))
    return codes


def chinese_article_text(game: str, number: int) -> str:
    """Article ``number`` of the Chinese original: from its heading ``第N條`` (on a line of
    its own, or starting one: ``第二條、一、…``) to the next; the rules' own, after the decree
    that approves them."""
    text = CHINESE_GAME_RULES[game].read_text(encoding="utf-8")
    headings = [(m.start(), m.group(1)) for m in re.finditer(
        r"^第([一二三四五六七八九十百零]+)條", text, flags=re.MULTILINE)]
    numeral = i18n.chinese_numeral(number)
    starts = [at for at, n in headings if n == numeral]
    assert starts, f"{game}: no 第{numeral}條"
    start = starts[-1]
    following = [at for at, _ in headings if at > start]
    return text[start:following[0] if following else len(text)]


def test_every_article_the_games_cite_is_named_as_the_seeds_name_it() -> None:
    codes = cited_articles()
    assert {"qpoker.art11.5", "baccarat.art9", "craps.art2.1"} <= codes | {"baccarat.art9"}
    assert len(codes) > 30
    for code in sorted(codes):
        match = re.fullmatch(r"(\w+)\.art(\d+)(?:\.(\d+))?", code)
        assert match is not None
        game, number, paragraph = match[1], int(match[2]), match[3]
        zh, en, pt = (i18n.article(code, language) for language in ("zh_Hant", "en", "pt"))
        article_text = chinese_article_text(game, number)  # the article exists in the seed
        if paragraph is None:
            assert (zh, en, pt) == (f"第{i18n.chinese_numeral(number)}條", f"Art. {number}",
                                    f"Art. {number}.º")
        else:
            n = int(paragraph)
            numeral = i18n.chinese_numeral(n)
            assert en == f"Art. {number}.{n}"
            if f"（{numeral}）" in article_text:  # the seed's article has items: "（五）…"
                assert zh == f"第{i18n.chinese_numeral(number)}條（{numeral}）項", code
                assert pt == f"Art. {number}.º, alínea {n})"
            else:  # its paragraphs: "五、…"
                assert re.search(rf"(?:^|[、.．\s]){numeral}、", article_text, re.MULTILINE), code
                assert zh == f"第{i18n.chinese_numeral(number)}條第{numeral}款", code
                assert pt == f"Art. {number}.º, n.º {n}"
    assert i18n.article("qpoker.art11.5", "zh_Hant") == "第十一條（五）項"
    assert i18n.article("qpoker.art11.5", "pt") == "Art. 11.º, alínea 5)"
    assert i18n.article("qpoker.art11.5", "en") == "Art. 11.5"
    assert i18n.article("baccarat.art16.2", "zh_Hant") == "第十六條第二款"
    assert i18n.article("baccarat.art16.2", "pt") == "Art. 16.º, n.º 2"
    assert i18n.article("not an article", "zh_Hant") == "not an article"


def test_chinese_numerals() -> None:
    assert [i18n.chinese_numeral(n) for n in (1, 9, 10, 11, 16, 20, 21, 99, 100, 105, 110)] == [
        "一", "九", "十", "十一", "十六", "二十", "二十一", "九十九", "一百", "一百零五",
        "一百一十"]


# -- a request's language -----------------------------------------------------------------------


def scope(query: str = "", cookie: str | None = None, accept: str | None = None) -> dict:
    headers = []
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    if accept is not None:
        headers.append((b"accept-language", accept.encode()))
    return {"type": "http", "query_string": query.encode(), "headers": headers}


def test_a_requests_language_is_its_choice_then_its_cookie_then_its_browsers_then_the_config(
) -> None:
    choose = web_app.request_language
    assert choose(scope("lang=pt", "pit_lang=en", "zh-TW"), "zh_Hant") == "pt"
    assert choose(scope("lang=xx", "pit_lang=en", "pt"), "zh_Hant") == "en"
    assert choose(scope("", "pit_lang=bogus", "pt-PT,pt;q=0.9,en;q=0.8"), "zh_Hant") == "pt"
    assert choose(scope("", None, "fr-FR, en;q=0.5, zh-Hant;q=0.7"), "pt") == "zh_Hant"
    assert choose(scope("", None, "fr-FR, de"), "pt") == "pt"
    assert choose(scope(), "en") == "en"
    assert i18n.negotiate("zh-HK") == "zh_Hant" and i18n.negotiate("en;q=0, pt;q=0.1") == "pt"
    assert i18n.negotiate("*;q=0.5") is None and i18n.negotiate(";;;,q=") is None


def test_renders_in_different_languages_at_once_do_not_mix() -> None:
    # the environment is shared: each render binds its own language's gettext
    env = web_app._environment()
    template = env.from_string('{{ _("Big road") }}|'
                               '{{ ngettext("%(num)s seat", "%(num)s seats", 2) }}|'
                               '{{ "qpoker.art11.5"|article }}|{{ "device_lost"|tr }}|'
                               '{{ _("%(n)s tables", n="<b>") }}')
    out: dict[str, set[str]] = {language: set() for language in i18n.LANGUAGES}

    def render(language: str) -> None:
        for _ in range(200):
            out[language].add(template.render(**i18n.jinja_gettext(language), language=language))

    threads = [threading.Thread(target=render, args=(language,)) for language in i18n.LANGUAGES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert out == {
        "zh_Hant": {"大路|2 seats|第十一條（五）項|設備失去連接|&lt;b&gt; 張賭枱"},
        "en": {"Big road|2 seats|Art. 11.5|device lost|&lt;b&gt; tables"},
        "pt": {"Estrada grande|2 seats|Art. 11.º, alínea 5)|dispositivo perdido|&lt;b&gt; mesas"},
    }
    # without a language bound, a template is in English (the null translations)
    assert env.from_string('{{ _("Big road") }}').render() == "Big road"


def test_a_language_the_pit_does_not_speak_is_a_config_error_named_by_its_key() -> None:
    from tabled.pit.config import ConfigError, parse_config

    base = {"store": {"sqlite": "/x"}, "mqtt": {"url": "mqtt://127.0.0.1:1883"}}
    assert parse_config({**base, "web": {}}).web.language == i18n.DEFAULT
    assert parse_config({**base, "web": {"language": "pt"}}).web.language == "pt"
    with pytest.raises(ConfigError) as caught:
        parse_config({**base, "web": {"language": "fr"}})
    keys = dict(caught.value.errors)
    assert "web.language" in keys and "zh_Hant" in keys["web.language"], keys


def test_how_long_ago_and_how_long_to_wait_are_in_the_language() -> None:
    from tabled.pit.web import present

    zh = i18n.translations("zh_Hant").gettext
    assert present.ago(100.0, 142.0, zh) == "42秒"
    assert present.ago(0.0, 425.0, zh) == "7分05秒"
    assert present.ago(0.0, 3 * 3600 + 300, zh) == "3小時05分"
    assert present.ago(0.0, 2 * 86400 + 4 * 3600, zh) == "2日4小時"
    assert present.ago(0.0, 425.0) == "7m 05s"  # English: the msgid itself
    assert present.duration(250, zh) == "4 分 10 秒"
    assert present.duration(250) == "4 min 10 s"
