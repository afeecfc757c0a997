"""debian/ and the test's own helpers, checked without building anything (no root needed)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.packaging.debroot import MirrorNotFound, mirror_in

ROOT = Path(__file__).resolve().parents[2]
DEBIAN = ROOT / "debian"


def test_the_changelog_has_the_version_of_pyproject() -> None:
    # the .deb is named after the changelog, `tabled --version` after pyproject: one version
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    first = (DEBIAN / "changelog").read_text().splitlines()[0]
    assert re.match(rf"tabled \({re.escape(version)}\) ", first), first


def test_every_lintian_override_says_why() -> None:
    # each paragraph of the file: the comment that justifies them, then the overrides
    text = (DEBIAN / "tabled.lintian-overrides").read_text()
    for paragraph in filter(None, (p.strip() for p in text.split("\n\n"))):
        lines = paragraph.splitlines()
        comments = [line for line in lines if line.startswith("#")]
        assert comments and lines[: len(comments)] == comments, \
            f"overrides without a comment above them:\n{paragraph}"


DEB822 = """\
Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_the_mirror_comes_from_a_deb822_source() -> None:
    assert mirror_in([("debian.sources", DEB822)]) == "http://mirror.example/debian"


def test_a_disabled_or_source_only_stanza_is_not_the_mirror() -> None:
    disabled = "Enabled: no\n" + DEB822.split("\n\n")[0]
    sources_only = DEB822.split("\n\n")[0].replace("Types: deb", "Types: deb-src")
    with pytest.raises(MirrorNotFound):
        mirror_in([("a.sources", disabled), ("b.sources", sources_only)])


def test_the_mirror_comes_from_a_one_line_source_with_options() -> None:
    text = ("# deb http://old.example/debian bookworm main\n"
            "deb-src http://src.example/debian bookworm main\n"
            "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n")
    assert mirror_in([("sources.list", text)]) == "http://mirror.example/debian"


def test_another_suite_is_not_the_mirror() -> None:
    with pytest.raises(MirrorNotFound):
        mirror_in([("sources.list", "deb http://mirror.example/debian trixie main\n")])
