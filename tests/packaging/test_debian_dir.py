"""debian/ and the test's own helpers, checked without building anything (no root needed)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
import tomllib
from pathlib import Path
from types import ModuleType

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


def _units_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("debian_units", DEBIAN / "units.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


PIT_UNIT = """\
[Unit]
Description=tabled pit monitor (the floor's record)

[Service]
ExecStartPre=/opt/tabled/venv/bin/tabled pit check-config /etc/tabled/pit.toml
ExecStart=/opt/tabled/venv/bin/tabled pit --config /etc/tabled/pit.toml
User=tabled-pit
Group=tabled-pit
StateDirectory=tabled-pit
StateDirectoryMode=0700
ConfigurationDirectory=tabled
ConfigurationDirectoryMode=0750
"""


def test_the_packaging_reads_users_directories_and_readers_from_the_units() -> None:
    units = _units_module()
    services = units.read_services(ROOT / "systemd")
    assert "tabled:tabled:0700:/var/lib/tabled" in units.statedirs(services)
    assert "/etc/tabled/tabled.toml:tabled" in units.conffiles(services, ROOT / "config")
    assert units.configdir(services) == "tabled:0750"
    assert 'u tabled - "tabled casino table daemon" /var/lib/tabled /usr/sbin/nologin' \
        in units.sysusers(services).splitlines()


def test_a_new_service_brings_its_user_and_owns_the_config_it_names(tmp_path: Path) -> None:
    units = _units_module()
    (tmp_path / "systemd").mkdir()
    (tmp_path / "config").mkdir()
    shutil.copy(ROOT / "systemd" / "tabled.service", tmp_path / "systemd")
    (tmp_path / "systemd" / "tabled-pit.service").write_text(PIT_UNIT)
    for name in ("tabled", "pit", "floor"):
        (tmp_path / "config" / f"{name}.example.toml").write_text("")
    services = units.read_services(tmp_path / "systemd")
    # the pit reaches /etc/tabled (root:tabled 0750), which its unit shares, through the group
    assert units.sysusers(services).splitlines()[1:] == [
        'u tabled-pit - "tabled pit monitor" /var/lib/tabled-pit /usr/sbin/nologin',
        'u tabled - "tabled casino table daemon" /var/lib/tabled /usr/sbin/nologin',
        "m tabled-pit tabled",
    ]
    assert units.statedirs(services) == ["tabled-pit:tabled-pit:0700:/var/lib/tabled-pit",
                                         "tabled:tabled:0700:/var/lib/tabled"]
    # the pit's config is its own; one no unit names goes to the main service's group
    assert units.conffiles(services, tmp_path / "config") == [
        "/etc/tabled/floor.toml:tabled", "/etc/tabled/pit.toml:tabled-pit",
        "/etc/tabled/tabled.toml:tabled"]
    assert units.configdir(services) == "tabled:0750"


def test_nothing_of_examples_goes_into_the_package() -> None:
    """examples/ holds a vendor family of its own (its own pyproject): the package builds tabled's
    pyproject.toml only, and no file of debian/ names examples/ or installs the tree wholesale."""
    for path in sorted(p for p in DEBIAN.rglob("*") if p.is_file()):
        assert "examples" not in path.read_text(errors="replace"), path
    sources = [line.split()[0] for line in (DEBIAN / "tabled.install").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert all(not source.startswith(("*", ".", "examples")) for source in sources), sources
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not any("example" in package
                   for package in project["tool"]["setuptools"]["packages"])

