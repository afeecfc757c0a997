"""The installed layout: every folder with an ``__init__.py`` is a listed ``tabled.*`` package.

pyproject.toml maps each of the design card's folders to ``tabled.<folder>`` and lists every
package by hand (setuptools cannot discover packages under a mapped name); a subpackage left off
the list would be missing from the wheel and the Debian package while every test here passed.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _on_disk() -> set[str]:
    found = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            parts = init.parent.relative_to(base).parts
            found.add(".".join((name, *parts)))
    return found


def test_every_package_folder_is_listed() -> None:
    assert set(SETUPTOOLS["packages"]) == _on_disk()


def test_listed_packages_import_from_their_folders() -> None:
    for name, folder in SETUPTOOLS["package-dir"].items():
        module = importlib.import_module(name)
        assert Path(module.__file__).parent == ROOT / folder, name


def test_no_generic_top_level_name_is_installed() -> None:
    assert all(name.startswith("tabled.") for name in SETUPTOOLS["packages"])

