"""The games conformance kit (``tabled conformance --game``, docs/games.md): every installed game
passes it, and games broken on purpose (tests/tools/kit_games.py, registered through the
``tabled.games`` entry points as an outside game is) fail it, the property named."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabled.games import registry
from tabled.tools.game_conformance import CHECKS, GameKitOptions, run_check, run_game
from tests.tools.kit_games import ENTRY_POINTS

ROOT = Path(__file__).resolve().parents[2]
#: Fewer rounds than the command's default: the same checks, in less of a shared machine's time.
OPTIONS = GameKitOptions(seed=7, rounds=16)


def tabled(*args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``tabled ...`` as a process, with ``path`` (the test games' entry points) importable."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT, check=False)


def forget() -> None:
    """The registry forgets what it loaded: the next question finds the installed games."""
    for cached in ("games", "game", "_load"):
        clear = getattr(getattr(registry, cached, None), "cache_clear", None)
        if clear is not None:
            clear()
    reload = getattr(registry, "reload", None)
    if reload is not None:
        reload()


@pytest.fixture
def test_games(tmp_path: Path) -> Iterator[Path]:
    """The broken games, installed as a distribution's entry points (a ``.dist-info`` folder on
    the path), for this process and for the processes a test starts with the path."""
    info = tmp_path / "tabled_kit_test_games-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tabled-kit-test-games\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(
        "[tabled.games]\n" + "".join(f"{n} = {v}\n" for n, v in ENTRY_POINTS.items()))
    sys.path.insert(0, str(tmp_path))
    forget()
    try:
        assert set(ENTRY_POINTS) <= set(registry.games())
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        forget()


@pytest.mark.parametrize("name", ["baccarat", "craps", "qpoker"])
def test_every_built_in_game_passes_every_check(name: str) -> None:
    results = run_game(name, options=OPTIONS)
    assert [r.check for r in results] == list(CHECKS)
    assert [(r.check, r.outcome, r.detail) for r in results if r.outcome != "pass"] == []


def test_the_kit_sees_what_qpoker_withholds() -> None:
    (result,) = run_game("qpoker", ["withholding"], OPTIONS)
    assert result.outcome == "pass"
    assert "withheld, each published later" in result.detail  # not "withholds nothing"


def test_tabled_conformance_game_is_a_command() -> None:
    done = tabled("conformance", "--game", "qpoker", "--game", "craps", "--rounds", "12")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("qpoker: Q Poker: ")
    for check in CHECKS:
        assert sum(line.strip().startswith(f"PASS  {check} ") for line in lines) == 2, check
    assert "  qpoker: 5 passed, 0 failed" in lines
    assert "  craps: 5 passed, 0 failed" in lines


def test_an_unknown_game_or_check_is_a_usage_error() -> None:
    done = tabled("conformance", "--game", "no_such_game")
    assert done.returncode == 2
    assert "unknown game 'no_such_game'" in done.stderr and "qpoker" in done.stderr
    done = tabled("conformance", "--game", "craps", "--check", "no_such_check")
    assert done.returncode == 2 and "deterministic" in done.stderr
    done = tabled("conformance", "--game", "craps", "shoe")
    assert done.returncode == 2 and "not both" in done.stderr
    done = tabled("conformance", "--game", "craps", "--list")
    assert done.returncode == 0
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == list(CHECKS)


def test_an_outcome_naming_no_article_fails_rounds_closed(test_games: Path) -> None:
    result = run_check("kit_no_article", "rounds_closed", OPTIONS)
    assert result.outcome == "fail"
    assert result.detail.startswith("line 1 (roll): the outcome of round 1 cites no article")
    # the same through the command, in a process of its own: exit 1, the check named
    done = tabled("conformance", "--game", "kit_no_article", "--check", "rounds_closed",
                  "--check", "withholding", path=test_games)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  FAIL  rounds_closed " in done.stdout and "cites no article" in done.stdout
    assert "  PASS  withholding " in done.stdout
    assert "  kit_no_article: 1 passed, 1 failed" in done.stdout


def test_a_nondeterministic_game_fails_deterministic(test_games: Path) -> None:
    result = run_check("kit_random", "deterministic", OPTIONS)
    assert result.outcome == "fail"
    assert result.detail.startswith("two replays of one stream in one process differ: line ")
    assert run_check("kit_random", "rounds_closed", OPTIONS).outcome == "pass"


def test_a_game_leaking_what_it_withholds_fails_withholding(test_games: Path) -> None:
    result = run_check("kit_leaky", "withholding", OPTIONS)
    assert result.outcome == "fail"
    assert "line 2 (card) is withheld, but its card" in result.detail
    assert "in a message on …/fault at line 2 before the event is published" in result.detail
    assert "the dealer holds" in result.detail
    # the same game without the leak passes: the kit reads the publication, not the game
    for check in ("withholding", "rounds_closed", "journal_rebuild"):
        assert run_check("kit_hidden", check, OPTIONS).outcome == "pass", check


def test_a_game_keeping_state_outside_its_table_fails_journal_rebuild(test_games: Path) -> None:
    result = run_check("kit_amnesia", "journal_rebuild", OPTIONS)
    assert result.outcome == "fail"
    assert result.detail.startswith("rebuilt after line ")


def test_a_game_without_streams_fails_every_check(test_games: Path) -> None:
    results = run_game("kit_silent", options=OPTIONS)
    assert [r.outcome for r in results] == ["fail"] * len(CHECKS)
    assert all("kit_silent declares no streams" in r.detail for r in results)


def test_the_checks_are_the_documented_ones() -> None:
    """docs/games.md's table of checks names each check of the kit, in order."""
    text = (ROOT / "docs" / "games.md").read_text(encoding="utf-8")
    table = text.split("<!-- checks: game conformance -->", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[3:]]
    assert rows == list(CHECKS)
