"""The games' integrity parts (games/parts/integrity.py) and the monitors that read them: every
built-in game's part fits its own odds and declaration; the monitors name no game; a game
installed without an integrity part (a real entry point of a small test game) is simply not
monitored — no monitor, no threshold, no pace key, no crash."""

from __future__ import annotations

import ast
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tabled.contract.events import Declare, Event, Roll
from tabled.contract.outcome import Game, Outcome, OutcomeRecord
from tabled.games import registry
from tabled.games.parts.integrity import IntegrityPart, Pace
from tabled.pit.config import ConfigError, IntegritySettings, parse_config
from tabled.pit.integrity import (
    MONITORS,
    NotMonitored,
    Settings,
    TableMonitors,
    calibrate,
    monitored,
    slug_index,
)
from tabled.pit.integrity.calibration import DEFAULT_SETTINGS, integrity_part, statistics_of
from tabled.pit.integrity.command import record_of
from tabled.pit.watch import settings_of
from tests.oracle.integrity import baccarat_events, craps_events, qpoker_events

ROOT = Path(__file__).resolve().parents[3]
BUILT_IN = ("baccarat", "craps", "qpoker")


def _records(game: str, events: Iterator[Event]) -> list[OutcomeRecord]:
    table = registry.make_table(game)
    return [record_of(o) for e in events for o in table.feed(e) if isinstance(o, Outcome)]


@pytest.mark.parametrize("game", BUILT_IN)
def test_each_built_in_game_declares_a_part_that_fits_its_odds_and_words(game: str) -> None:
    part = integrity_part(game)
    assert isinstance(part, IntegrityPart)
    declared = registry.game(game)
    options = declared.options()
    probabilities = registry.odds(game, options).probabilities
    for group in part.rates(options):
        for rate in group.rates:
            assert rate.name in probabilities, (game, rate.name)  # the odds' own key
    events = {"baccarat": lambda: baccarat_events(random.Random(1), 300),
              "craps": lambda: craps_events(random.Random(1), 300),
              "qpoker": lambda: qpoker_events(random.Random(1), 60)}[game]()
    records = _records(game, events)
    assert records
    groups = part.rates(options)
    for record in records:
        seen = part.observe(record)
        if record.status == "complete" and seen is not None:
            assert len(seen) == len(groups)
            for group, observations in zip(groups, seen, strict=True):
                assert len(observations) <= group.per_round
                for observation in observations:
                    if isinstance(observation, int):
                        assert 0 <= observation < len(group.rates)
                    else:
                        assert len(observation) == len(group.rates)
            word, account = part.decided(record)
            assert word in (*declared.declarations, "no_roll") and account
        if part.throw is not None:
            faces = part.throw(record)
            assert faces is None or (len(faces) == part.dice
                                     and all(1 <= f <= 6 for f in faces))
    # a record of another game is not this game's to count
    other = _records("craps" if game != "craps" else "baccarat",
                     craps_events(random.Random(2), 5) if game != "craps"
                     else baccarat_events(random.Random(2), 5))
    assert all(part.observe(r) is None for r in other)


def test_the_monitors_name_no_game() -> None:
    """No string of pit/integrity's code (docstrings and comments aside) names a game."""
    for path in sorted((ROOT / "pit" / "integrity").glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                for game in BUILT_IN:
                    assert game not in node.value, f"{path.name}:{node.lineno}: {node.value!r}"


def test_a_part_is_refused_when_it_does_not_add_up() -> None:
    with pytest.raises(ValueError):
        Pace(60.0, 100.0, 50.0)
    with pytest.raises(ValueError):
        IntegrityPart(pace=Pace(60.0, 10.0, 120.0), rates=lambda o: (),
                      observe=lambda r: None, decided=lambda r: ("", ""), dice=2)


# -- a game without an integrity part -------------------------------------------------------------

_PLAIN = '''
"""A test game with no integrity part: craps' rules under another name."""
from tabled.games.craps.odds import craps_odds
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import CrapsTable
from tabled.games.registry import GameDeclaration

GAME = GameDeclaration(name="plain", title="Plain", summary="no integrity part",
                       options=CrapsOptions, table=CrapsTable, odds=craps_odds,
                       declarations=("natural", "craps", "point", "seven_out", "point_made",
                                     "no_decision"))
'''


@pytest.fixture
def plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Game]:
    """A game installed through a real ``tabled.games`` entry point, declaring no parts."""
    (tmp_path / "tabled_plain").mkdir()
    (tmp_path / "tabled_plain" / "__init__.py").write_text(_PLAIN)
    info = tmp_path / "tabled_plain-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tabled-plain\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[tabled.games]\nplain = tabled_plain:GAME\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.reload()
    try:
        assert "plain" in registry.game_names()
        yield cast(Game, "plain")
    finally:
        monkeypatch.undo()
        sys.modules.pop("tabled_plain", None)
        registry.reload()


def test_a_game_without_an_integrity_part_is_not_monitored(plain: Game) -> None:
    assert not monitored(plain) and integrity_part(plain) is None
    assert all(monitored(game) for game in BUILT_IN)
    assert not any(DEFAULT_SETTINGS.runs(monitor, plain) for monitor in MONITORS)
    assert statistics_of(plain, DEFAULT_SETTINGS) == 0
    with pytest.raises(NotMonitored, match="plain declares no integrity part"):
        calibrate(plain)
    with pytest.raises(NotMonitored):
        DEFAULT_SETTINGS.game(plain)
    monitors = TableMonitors(plain, table="lab/plain-1", slugs=slug_index())
    assert not monitors.monitored and monitors.calibration is None
    table = registry.make_table(plain)
    found: list[Any] = []
    for event in [*craps_events(random.Random(4), 3_000, "6:0.6"), Declare(result="craps"),
                  Roll(dice=(1, 1))]:
        found += monitors.event(event, 1.0)
        for output in table.feed(event):
            if isinstance(output, Outcome):
                found += monitors.outcome(record_of(output), 1.0)
    monitors.gap()
    assert found == []
    # the built-in games' thresholds are what they were: the extra game changes no budget
    assert calibrate("craps").statistics == 34 and slug_index() is not None


def test_the_pit_config_has_a_pace_table_for_each_monitored_game_only(plain: Game) -> None:
    config = IntegritySettings()
    # the built-in games and any installed plugin with an integrity part (the example sic bo)
    assert set(BUILT_IN) <= set(config.paces())
    assert all(registry.part(name, "integrity") is not None for name in config.paces())
    assert config.paces()["qpoker"].assumed_pace == 60  # the part's default
    with pytest.raises(ConfigError) as caught:
        parse_config({"mqtt": {"url": "mqtt://127.0.0.1:1883"},
                      "integrity": {plain: {"assumed_pace": 60, "pace_min": 1, "pace_max": 99},
                                    "crapz": {}}})
    assert dict(caught.value.errors) == {"integrity.plain": "Extra inputs are not permitted",
                                         "integrity.crapz": "Extra inputs are not permitted"}
    given = parse_config({"mqtt": {"url": "mqtt://127.0.0.1:1883"}, "integrity": {
        "craps": {"assumed_pace": 60, "pace_min": 30, "pace_max": 250}}}).integrity
    settings = settings_of(given)
    assert settings.game("craps") == Pace(60.0, 30.0, 250.0)
    assert settings.game("baccarat") == Pace(120.0, 20.0, 200.0)
    assert settings == Settings().with_pace("craps", Pace(60.0, 30.0, 250.0))
    assert settings_of(IntegritySettings()) == DEFAULT_SETTINGS
