"""The tools name no game: ``tabled demo``, ``tabled floor``, the outcome lines and the console
read each game's ``demo`` and ``console`` parts (tabled.games.parts.demo) through the registry,
so a game installed as a plugin is listed and played without a change to the tools (issue 28).

The built-in games' simulator arguments are pinned here as the tools wrote them before the
recipes moved into the games: the same devices, the same scripts, the same faults.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tabled.games import registry
from tabled.games.parts.demo import SimulatorRun
from tabled.tools import floor
from tabled.tools.cli import build_parser
from tabled.tools.console import RoundView
from tabled.tools.demo import DemoError, playable, recipe_of
from tabled.tools.show import describe

PLUGIN = '''
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import CrapsTable
from tabled.games.parts.demo import ConsoleVocabulary, DemoRecipe, SimulatorRun
from tabled.games.registry import GameDeclaration


def simulator_args(run: SimulatorRun) -> list[str]:
    return ["dice", "--seed", str(run.seed), "--count", str(run.rounds or 7), "--pace",
            run.pace, "--socket", f"{run.folder}/two.sock", *[
                arg for spec in run.faults for arg in ("--fault", spec)]]


DEMO = DemoRecipe(family="dice", device_id="dice-1", simulator_args=simulator_args,
                  options={"big_bets_on_come_out": False}, url_line=2, short="two",
                  describes="two dice, a test game", pace_divisor=4, script=(10, 20),
                  script_unit="round", faults=((("cocked@{n}", 1.0),),))
CONSOLE = ConsoleVocabulary(
    headline=lambda outcome: f"throw {outcome['round']}: {outcome['result']['dice']}",
    round_word="throw")

GAME = GameDeclaration(
    name="twodice", title="Two dice", summary="a test game", options=CrapsOptions,
    table=CrapsTable, odds="tabled.games.craps.odds:craps_odds",
    parts={"demo": "tabled_twodice:DEMO", "console": "tabled_twodice:CONSOLE"})
'''


def _reload() -> None:
    importlib.invalidate_caches()
    registry.reload()


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fourth game as an installed distribution would be: a module and its entry point."""
    (tmp_path / "tabled_twodice.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "tabled_twodice-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tabled-twodice\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tabled.games]\ntwodice = tabled_twodice:GAME\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _reload()
    yield tmp_path
    monkeypatch.undo()
    sys.modules.pop("tabled_twodice", None)
    _reload()


def test_a_plugin_game_is_a_choice_of_demo_and_floor(plugin: Path) -> None:
    parser = build_parser()
    assert parser.parse_args(["demo", "--game", "twodice"]).game == "twodice"
    assert parser.parse_args(["floor", "--game", "twodice"]).game == ["twodice"]
    assert parser.parse_args(["integrity", "--game", "twodice"]).game == "twodice"
    assert parser.parse_args(["demo"]).game == "baccarat"  # the first installed, as before
    assert "twodice" in playable()


def test_a_plugin_games_floor_tables_are_its_recipes(plugin: Path) -> None:
    games = floor.floor_games()
    # every installed game with a demo part: the built-in three, this one, and any other plugin
    assert [g.name for g in games] == [
        name for name in registry.game_names() if registry.part(name, "demo") is not None]
    assert {"baccarat", "craps", "qpoker", "twodice"} <= {g.name for g in games}
    two = floor.floor_games(["twodice"])[0]
    assert (two.short, two.family, two.rules, two.describes) == (
        "two", "dice", {"big_bets_on_come_out": False}, "two dice, a test game")
    assert two.device_pace(8.0) == 2.0
    args = _device_args(two, plugin / "floor", index=0, pace=8.0)
    assert args[:10] == ["dice", "--seed", "101", "--count", "20", "--pace", "2.000",
                         "--socket", "/floor/two-1/two.sock", "--fault"]
    assert args[10].startswith("cocked@")


def test_a_plugin_games_outcome_is_worded_by_it(plugin: Path) -> None:
    outcome = {"game": "twodice", "round": 4, "status": "complete",
               "result": {"dice": [2, 5]}, "bets": {"pass": {"result": "lose"}}}
    assert describe(outcome) == "throw 4: [2, 5]"
    assert describe(outcome, "all") == "throw 4: [2, 5]\n        bets: pass lose"
    void = {**outcome, "status": "void", "void_reason": "x", "article": "a.art1"}
    assert describe(void) == "throw    4  VOID  x  [a.art1]"
    assert RoundView("twodice").seated is None


def test_a_game_without_a_demo_part_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = registry.GameDeclaration(name="bare", title="Bare", summary="", options=object,
                                    table=lambda options: None,  # type: ignore[arg-type,return-value]
                                    odds="tabled.games.craps.odds:craps_odds")

    def game(name: str) -> registry.GameDeclaration:
        if name != "bare":
            raise registry.UnknownGame(f"unknown game {name!r} (known: bare)")
        return bare

    monkeypatch.setattr(registry, "games", lambda: {"bare": bare})
    monkeypatch.setattr(registry, "game_names", lambda: ["bare"])
    monkeypatch.setattr(registry, "game", game)
    with pytest.raises(DemoError, match="bare cannot be played in the demos"):
        recipe_of("bare")
    with pytest.raises(DemoError, match="unknown game 'nine'"):
        recipe_of("nine")


def _device_args(game: floor.Game, work: Path, *, index: int, pace: float,
                 faults: bool = True) -> list[str]:
    """The ``tabled-sim`` arguments the floor starts table ``index`` of ``game`` with (its
    folder in ``work`` written as ``/floor``)."""
    spawned: list[list[str]] = []

    class Fleet:
        def spawn(self, name: str, argv: list[str], **kw: Any) -> object:
            spawned.append(argv)
            return object()

    table = floor.Table(game, f"{game.short}-{index + 1}", index,
                        work / f"{game.short}-{index + 1}")
    floor._device_part(Fleet(), table, pace, faults, 1)  # type: ignore[arg-type]
    (argv,) = spawned
    return [arg.replace(str(work), "/floor") for arg in
            argv[argv.index("tabled.simulators.cli") + 1:]]


#: What the floor started for the first two tables of each game at the default pace, seed 1,
#: before the recipes moved into the games (tools/floor.py's own tables then).
FLOOR_ARGS = {
    ("baccarat", 0): ["shoe", "--seed", "101", "--pace", "1.000", "--link",
                      "/floor/bac-1/shoe", "--serial", "SHOE-bac-1", "--forever"],
    ("baccarat", 1): ["shoe", "--seed", "102", "--pace", "1.000", "--link",
                      "/floor/bac-2/shoe", "--serial", "SHOE-bac-2", "--forever"],
    ("craps", 0): ["dice", "--seed", "101", "--count", "8640", "--pace", "2.500", "--socket",
                   "/floor/craps-1/dice.sock", "--serial", "DS-craps-1", "--forever"],
    ("craps", 1): ["dice", "--seed", "102", "--count", "8640", "--pace", "2.500", "--socket",
                   "/floor/craps-2/dice.sock", "--serial", "DS-craps-2", "--forever"],
    ("qpoker", 0): ["shuffler", "--game", "qpoker", "--seed", "101", "--rounds", "4320",
                    "--pace", "0.250", "--link", "/floor/qpoker-1/shuffler", "--step",
                    "--forever"],
    ("qpoker", 1): ["shuffler", "--game", "qpoker", "--seed", "102", "--rounds", "4320",
                    "--pace", "0.250", "--link", "/floor/qpoker-2/shuffler", "--step",
                    "--forever"],
}
#: Their faults: the first two, how many, and a digest of all of them (the plan is seeded).
FAULTS = {
    ("baccarat", 0): (["disconnect@21:3", "disconnect@191:3"], 65, "c47c5675a8cbd89f"),
    ("baccarat", 1): (["unreadable@24", "dirty@26"], 124, "70439bc5ed131359"),
    ("craps", 0): (["cocked@3", "cocked@31"], 65, "823a061e7ba938fa"),
    ("craps", 1): (["unplug@4:2", "off_table@5"], 124, "523681ebf5d295af"),
    ("qpoker", 0): (["jam@18", "jam@159"], 65, "a8b437f43f2f1ff8"),
    ("qpoker", 1): (["door@24", "door@169"], 64, "adc2e3d7ee6cf4a2"),
}


@pytest.mark.parametrize(("game", "index"), sorted(FLOOR_ARGS))
def test_the_floor_starts_the_devices_it_started_before(game: str, index: int,
                                                       tmp_path: Path) -> None:
    (chosen,) = floor.floor_games([game])
    expected = FLOOR_ARGS[game, index]
    assert _device_args(chosen, tmp_path, index=index, pace=5.0, faults=False) == expected
    with_faults = _device_args(chosen, tmp_path, index=index, pace=5.0)
    assert with_faults[:len(expected)] == expected
    flags, specs = with_faults[len(expected)::2], with_faults[len(expected) + 1::2]
    assert set(flags) == {"--fault"}
    first, count, digest = FAULTS[game, index]
    assert (specs[:2], len(specs)) == (first, count)
    assert hashlib.sha256(" ".join(specs).encode()).hexdigest()[:16] == digest


def test_the_demo_starts_the_devices_it_started_before() -> None:
    run = SimulatorRun(seed=1, pace="0.05", folder="/w", rounds=20)
    assert recipe_of("baccarat").simulator_args(run) == [
        "shoe", "--seed", "1", "--hands", "20", "--pace", "0.05", "--link", "/w/shoe",
        "--forever"]
    assert recipe_of("craps").simulator_args(run) == [
        "dice", "--seed", "1", "--count", "20", "--pace", "0.05", "--socket", "/w/dice.sock",
        "--forever"]
    assert recipe_of("qpoker").simulator_args(run) == [
        "shuffler", "--game", "qpoker", "--seed", "1", "--rounds", "20", "--pace", "0.05",
        "--link", "/w/shuffler", "--step", "--forever"]
    assert [recipe_of(g).dealer for g in ("baccarat", "craps", "qpoker")] == [False, False, True]
