"""A game is a unit: no code outside a game's package names a game (issue 28, docs/games.md).

Everything a layer knows about one game lives in that game's package and is asked of the
registry (tabled.games.registry): so adding a game is installing a package, and no shared module
lists the games or branches on one. This test reads every module of the shared packages (the
ground floor, the drivers, the shared game modules, the table service, the simulators, the pit,
the tools) and the pit's templates and scripts, and finds the built-in games' names in code: a
string, a name, an attribute, an import. Comments and docstrings may cite articles
(``qpoker.art11.5``) and say what a game does: they are not read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tabled.games.registry import games

ROOT = Path(__file__).resolve().parents[1]
#: The shared packages: every folder of the installed layout but the games' own packages.
SHARED = ("contract", "daemon", "drivers", "games", "simulators", "pit", "tools")
#: The built-in games' packages, where their names belong.
GAME_PACKAGES = tuple(ROOT / "games" / name for name in ("baccarat", "craps", "qpoker"))
NAMES = re.compile(r"baccarat|craps|qpoker|q_poker|q poker", re.IGNORECASE)
#: An article cited (``craps.art1``, in a fault's detail) names the rule, not a game table.
ARTICLE = re.compile(r"\b(baccarat|craps|qpoker)\.art[0-9]+(\.[0-9]+)*")

#: Where a built-in game's name is a device's own word, not a game table: a shuffler-dealer's
#: modes are named as its manual names them (docs/protocols/shuffler.md), its frames carry them,
#: and its simulator sets them up; which game a mode deals is the game's (its demo recipe's
#: ``modes``).
DEVICE_WORDS: dict[str, str] = {
    "drivers/shuffler/protocol.py": "the machine's modes, as its protocol names them",
    "drivers/shuffler/driver.py": "a deck check in the machine's shoe mode",
    "simulators/shuffler.py": "the simulated machine's modes and their deal scripts",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        # an attribute's docstring: a string statement right after an assignment
        if isinstance(node, ast.Module | ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, str):
                    found.add(id(stmt.value))
    return found


def _names_in_python(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstrings(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        text: str | None = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.ImportFrom):
            text = " ".join([node.module or "", *(alias.name for alias in node.names)])
        elif isinstance(node, ast.Import):
            text = " ".join(alias.name for alias in node.names)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            text = node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            text = node.name
        if text and NAMES.search(ARTICLE.sub("", text)):
            found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {text!r}")
    return found


def _shared_files() -> list[Path]:
    files: list[Path] = []
    for folder in SHARED:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or any(path.is_relative_to(g) for g in GAME_PACKAGES):
                continue
            if path.suffix in (".py", ".html", ".js", ".css") and "vendor" not in path.parts:
                files.append(path)
    return files


def test_the_built_in_games_are_the_registered_ones() -> None:
    """The names this test looks for are the built-in games' (a renamed game must be added)."""
    built_in = {name for name in games() if (ROOT / "games" / name).is_dir()}
    assert built_in == {"baccarat", "craps", "qpoker"}


def test_no_shared_module_names_a_game() -> None:
    found: list[str] = []
    for path in _shared_files():
        if path.suffix == ".py":
            hits = _names_in_python(path)
        else:
            hits = [f"{path.relative_to(ROOT)}:{number}: {line.strip()!r}"
                    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                    if NAMES.search(ARTICLE.sub("", line))]
        reason = DEVICE_WORDS.get(str(path.relative_to(ROOT)))
        if hits and reason is None:
            found += hits
    assert not found, "a game's name outside its package:\n" + "\n".join(found)


@pytest.mark.parametrize("name", ["baccarat", "craps", "qpoker"])
def test_the_search_finds_a_game_named_in_code(name: str, tmp_path: Path) -> None:
    """The search itself: a string, a name, an import are found; a docstring and a comment
    are not."""
    module = tmp_path / "module.py"
    module.write_text(f'"""About {name}."""\n# {name}\nimport x\nGAME = "{name}"\n'
                      f"def f({name}_options: int) -> None:\n    '''{name}.'''\n"
                      f"from tabled.games.{name} import rules\nDETAIL = 'see {name}.art1'\n",
                      encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        hits = _names_in_python(module)
    finally:
        ROOT = saved
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [4, 5, 7]
