"""Sic bo's demo and console parts: the recipe's simulator arguments are what ``tabled-sim
sicbo_dice`` takes, its faults are the simulator's, and the headline of a throw."""

from __future__ import annotations

import argparse
import json
from typing import Any, cast

import pytest
from tabled.contract.events import Roll
from tabled.contract.outcome import Outcome

pytest.importorskip("tabled.games.parts.demo", reason="the demo part's protocol (issue 28)")

from tabled.games import registry
from tabled.games.parts.demo import SimulatorRun

from tabled_sicbo.console import CONSOLE, headline
from tabled_sicbo.demo import DEMO, simulator_args
from tabled_sicbo.rules import SicBoTable
from tabled_sicbo.sensor.simulator import SIMULATOR, parse_fault


def test_the_game_names_its_demo_and_console_parts() -> None:
    assert (DEMO.family, DEMO.device_id, DEMO.url_line) == ("sicbo_dice", "dice-1", 1)
    assert CONSOLE.round_word == "throw"
    assert registry.part("sicbo", "demo") is DEMO
    assert registry.part("sicbo", "console") is CONSOLE


def test_the_simulator_takes_the_recipes_arguments() -> None:
    run = SimulatorRun(seed=7, pace="0.25", folder="/tmp/x", rounds=None,
                       table="sicbo-table-number-12", faults=("not_flat@3",))
    args = simulator_args(run)
    assert args[0] == SIMULATOR.family
    parser = argparse.ArgumentParser()
    SIMULATOR.add_arguments(parser)
    parsed = parser.parse_args(args[1:])
    assert (parsed.seed, parsed.pace, parsed.link, parsed.forever) == (
        7, 0.25, "/tmp/x/sb3d", True)
    assert parsed.shakes == 100_000 and len(parsed.serial) <= 16
    assert [f.kind for f in parsed.fault] == ["not_flat"]
    for table in DEMO.faults:
        for spec, _ in table:
            parse_fault(spec.format(n=5))
    assert registry.options_of("sicbo", DEMO.options) is not None


def test_the_headline_of_a_throw() -> None:
    [outcome] = SicBoTable().feed(Roll(dice=cast(Any, (6, 6, 5))))
    assert isinstance(outcome, Outcome)
    record = json.loads(outcome.to_json())
    assert headline(record) == ("throw    1  6-6-5 = 17  Big      "
                                "small lose, big win 1:1, any triple lose")
    [triple] = SicBoTable().feed(Roll(dice=cast(Any, (2, 2, 2))))
    assert isinstance(triple, Outcome)
    assert "=  6  triple   small lose, big lose, any triple win 24:1" in headline(
        json.loads(triple.to_json()))
