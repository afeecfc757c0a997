"""The installed layout: every folder with an ``__init__.py`` is a listed ``tabled.*`` package.

pyproject.toml maps each of the design card's folders to ``tabled.<folder>`` and lists every
package by hand (setuptools cannot discover packages under a mapped name); a subpackage left off
the list would be missing from the wheel and the Debian package while every test here passed.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
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


def test_the_folders_import_nothing_by_their_folder_name(tmp_path: Path) -> None:
    """From outside the repository, where a folder name is not importable by accident, every
    family's simulator and driver loads (a module imported by its folder name works only from
    the repository's root, and there it is a second copy of the module)."""
    code = (
        "import asyncio, sys\n"
        "from tabled.simulators import cli\n"
        "from tabled.drivers.registry import FAMILIES, open_device\n"
        "for family in FAMILIES:\n"
        "    try:\n"
        "        asyncio.run(open_device(family, '/nonexistent/port', device_id='x',"
        " emit=lambda e: None))\n"
        "    except Exception as exc:\n"
        "        assert type(exc).__module__.startswith('tabled.'), repr(exc)\n"
        "    try:\n"
        "        cli.main([family, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in FOLDERS)\n"
        "assert not bad, bad\n"
    )
    folders = repr(tuple(SETUPTOOLS["package-dir"].values()))
    done = subprocess.run([sys.executable, "-c", f"FOLDERS = {folders}\n{code}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
