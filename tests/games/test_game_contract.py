"""A game's part of the contract is its declaration's (issue 28): a game installed as a plugin —
here ``threedice``, a tiny game registered through a real ``tabled.games`` entry point in a
temporary directory — has its events checked by its own declaration (its required fields, its
declared words, its three dice), its outcomes decoded with its own typed record and checked by
its own part of the outcome schema, and is a game a table's config may name; craps still
refuses a roll that is not two dice, and a config naming no installed game is refused naming
the installed ones."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tabled.contract.events import EventError, Roll, parse_line, read_events
from tabled.contract.outcome import OutcomeError, UntypedRecord
from tabled.daemon.config import ConfigError, parse_config
from tabled.games import registry

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
"""A three-dice game for the tests: only its part of the contract is real."""
from dataclasses import dataclass
from typing import ClassVar

import msgspec

from tabled.contract.events import Event, EventError, Roll
from tabled.contract.outcome import Bet, DieFace, GameRecord
from tabled.games.registry import GameDeclaration, make_table


@dataclass(frozen=True, slots=True)
class ThreeDiceOptions:
    pass


class ThreeDiceResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    dice: tuple[DieFace, DieFace, DieFace]


class ThreeDiceOutcome(GameRecord, frozen=True, kw_only=True, gc=False, tag="threedice"):
    MAPPED: ClassVar = {"bets": Bet}
    result: ThreeDiceResult
    bets: dict[str, Bet]


def three_dice(event: Event) -> None:
    if isinstance(event, Roll) and len(event.dice) != 3:
        raise EventError(f"dice {list(event.dice)!r} is not three dice")


GAME = GameDeclaration(
    name="threedice", title="Three dice", summary="a test game of three dice",
    options=ThreeDiceOptions, table=lambda options: make_table("craps"),
    odds=lambda options, *more: None,
    declarations=("big", "small", "triple"),
    required={"round_start": ("seats",)},
    checks={"roll": three_dice},
    record=ThreeDiceOutcome,
    schema="tabled_threedice:outcome.schema.json",
)
'''

SCHEMA_PART = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "threedice's part of the outcome record",
    "properties": {
        "result": {"required": ["dice"], "properties": {"dice": {
            "type": "array", "minItems": 3, "maxItems": 3,
            "items": {"type": "integer", "minimum": 1, "maximum": 6}}}},
        "bets": {"additionalProperties": {"$ref": "#/$defs/bet"}},
    },
}

RECORD = {"v": 2, "type": "outcome", "game": "threedice", "round": 3, "status": "complete",
          "result": {"dice": [2, 2, 5]},
          "bets": {"big": {"result": "lose"}, "small": {"result": "win", "pays": "1:1"}}}


def install(where: Path) -> Path:
    """The plugin as an installed distribution would be: a package and its entry point."""
    package = where / "tabled_threedice"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (package / "outcome.schema.json").write_text(json.dumps(SCHEMA_PART))
    info = where / "tabled_threedice-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tabled-threedice\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[tabled.games]\nthreedice = tabled_threedice:GAME\n")
    return where


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(install(tmp_path)))
    registry.reload()
    yield tmp_path
    monkeypatch.undo()
    sys.modules.pop("tabled_threedice", None)
    registry.reload()


def test_a_plugin_games_declaration_checks_its_events(plugin: Path) -> None:
    assert "threedice" in registry.game_names()
    checks = registry.event_checks("threedice")
    assert parse_line('{"v":2,"type":"roll","dice":[1,2,3]}', checks) == Roll(dice=(1, 2, 3))
    with pytest.raises(EventError, match=r"^dice \[1, 2\] is not three dice$"):
        parse_line('{"v":2,"type":"roll","dice":[1,2]}', checks)
    assert parse_line('{"v":2,"type":"declare","result":"triple"}', checks).extra == {}
    # its words join the installed games' (another game's word passes: the pit judges the call)
    assert "triple" in registry.declared_words() and "banker" in registry.declared_words()
    with pytest.raises(EventError, match=r"^result 'trip' is not one of .*\btriple\b"):
        parse_line('{"v":2,"type":"declare","result":"trip"}', checks)
    with pytest.raises(EventError, match=r"missing required field 'seats' \(required in "
                                         r"threedice\)"):
        parse_line('{"v":2,"type":"round_start"}', checks)
    # and not another game's: craps still throws two
    with pytest.raises(EventError, match=r"^dice \[1, 2, 3\] is not two integers 1-6$"):
        registry.check_event(Roll(dice=(1, 2, 3)), "craps")


def test_a_plugin_games_outcome_decodes_with_its_own_record_and_schema(plugin: Path) -> None:
    typed = registry.decode_outcome(RECORD)
    assert type(typed).__name__ == "ThreeDiceOutcome" and typed.game == "threedice"
    assert registry.decode_outcome(json.dumps(RECORD).encode()) == typed
    validator = Draft202012Validator(registry.outcome_schema())
    assert validator.is_valid(RECORD)
    four = {**RECORD, "result": {"dice": [1, 2, 3, 4]}}
    with pytest.raises(OutcomeError) as refused:
        registry.decode_outcome(four)
    assert refused.value.field == "result.dice"
    assert not validator.is_valid(four)
    bad_bet = {**RECORD, "bets": {**RECORD["bets"], "big": {"result": "win"}}}
    with pytest.raises(OutcomeError, match=r"^bets\.big\.pays: missing"):
        registry.decode_outcome(bad_bet)
    assert not validator.is_valid(bad_bet)


def test_without_the_plugin_its_outcome_is_read_for_the_envelope() -> None:
    assert "threedice" not in registry.game_names()
    untyped = registry.decode_outcome(RECORD)
    assert isinstance(untyped, UntypedRecord) and untyped.game == "threedice"
    assert untyped.result == RECORD["result"]
    with pytest.raises(registry.UnknownGame, match=r"unknown game 'threedice' \(known: "):
        registry.event_checks("threedice")


def test_a_config_names_an_installed_game(plugin: Path) -> None:
    doc = {"table": {"site": "s", "id": "t", "game": "threedice"},
           "devices": [{"id": "d", "family": "dice", "url": "usb://1209:0001"}]}
    assert parse_config(doc).table.game == "threedice"


def test_a_config_naming_no_installed_game_is_refused_naming_the_installed_ones() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"table": {"site": "s", "id": "t", "game": "threedice"}})
    installed = ", ".join(registry.game_names())
    assert ("table.game", f"unknown game 'threedice' (installed: {installed})") in \
        refused.value.errors


def test_tabled_replay_refuses_a_craps_roll_of_three_dice() -> None:
    stream = ('{"v":2,"type":"roll","dice":[3,4]}\n{"v":2,"type":"roll","dice":[3,4,5]}\n'
              '{"v":2,"type":"roll","dice":[3,4]}\n')
    done = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "replay", "--game",
                           "craps", "-"], input=stream, capture_output=True, text=True,
                          check=False, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr == "line 2: dice [3, 4, 5] is not two integers 1-6\n"
    assert len(done.stdout.splitlines()) == 1  # the first roll's outcome, nothing after
    with pytest.raises(EventError):
        list(read_events(stream.splitlines(), registry.event_checks("craps")))


def test_the_contract_reads_a_roll_of_two_or_more_dice_and_no_fewer() -> None:
    assert parse_line('{"v":2,"type":"roll","dice":[6,6,6]}') == Roll(dice=(6, 6, 6))
    with pytest.raises(EventError, match=r"^dice \[6\] is not two integers 1-6 \(or more"):
        parse_line('{"v":2,"type":"roll","dice":[6]}')
    with pytest.raises(EventError, match=r"^dice \[6, 7, 1\] is not"):
        parse_line('{"v":2,"type":"roll","dice":[6,7,1]}')


# -- the ground floor and the table service name no game -----------------------------------------

#: Strings that name a game and are a device's own words, not a game's table (a device kind's
#: description).
DEVICE_WORDS = {("contract/devices.py", "shuffler")}


def _literals(path: Path) -> Iterator[tuple[int, str]]:
    """Each string literal of a module that is not a docstring, with its line."""
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    before: tokenize.TokenInfo | None = None
    for token in tokens:
        if token.type == tokenize.STRING and before is not None and before.type not in (
                tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            yield token.start[0], token.string
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            before = token


def _schema_values(value: object, key: str = "") -> Iterator[str]:
    """The values a schema checks (enum, const, pattern): not its descriptions."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in ("description", "title", "$comment"):
                yield from _schema_values(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from _schema_values(item, key)
    elif isinstance(value, str) and key in ("enum", "const", "pattern", ""):
        yield value


def test_the_contract_and_the_table_service_name_no_game() -> None:
    """No per-game table, literal or test outside the game packages: the ground floor
    (contract/), the table service (daemon/) and the contract's schemas know no game by name
    (comments and docstrings citing articles are fine)."""
    named = re.compile(rf"\b({'|'.join(registry.game_names())})\b", re.IGNORECASE)
    found = []
    for folder in ("contract", "daemon"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            found += [f"{where}:{line} {text}" for line, text in _literals(path)
                      if named.search(text) and not any(
                          where == w and key in text for w, key in DEVICE_WORDS)]
    for path in sorted((ROOT / "contract" / "schemas").glob("*.json")):
        found += [f"{path.name}: {value}" for value in _schema_values(json.loads(
            path.read_text())) if named.search(value)]
    assert not found, found


def test_tabled_integrity_refuses_a_craps_roll_of_three_dice_as_malformed() -> None:
    """``tabled integrity`` reads a stream as replay does: a roll craps refuses is malformed
    (exit 2, naming the line), never a crash of the rules core that cannot unpack it."""
    from tabled.pit.integrity.command import write_findings

    text = '{"v":2,"type":"roll","dice":[3,4]}\n{"v":2,"type":"roll","dice":[3,4,5]}\n'
    out, err = io.StringIO(), io.StringIO()
    assert write_findings("craps", None, io.StringIO(text), out, err) == 2
    assert err.getvalue() == "line 2: dice [3, 4, 5] is not two integers 1-6\n"
