"""``tabled demo`` — the README's main job — for each game: simulators, daemon and a private
broker come up, N outcomes are published and received, and it exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("game", ["baccarat", "craps", "qpoker"])
def test_the_demo_runs_every_game_to_the_end(game: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tabled.tools.cli", "demo", "--game", game, "--rounds", "6",
         "--pace", "0.01", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.lstrip().startswith(("round",
                                                                                   "roll"))]
    assert len(lines) == 6
    assert "6 outcomes published and received" in proc.stdout
    assert (tmp_path / "journal.sqlite").exists()


def test_the_demo_runs_against_a_given_broker(tmp_path: Path) -> None:
    """``tabled demo --broker mqtt://HOST:PORT`` uses that broker and starts none of its own."""
    from tabled.daemon.broker import Mosquitto

    with Mosquitto(workdir=tmp_path / "broker") as broker:
        proc = subprocess.run(
            [sys.executable, "-m", "tabled.tools.cli", "demo", "--game", "craps", "--rounds", "5",
             "--pace", "0.01", "--broker", broker.url, "--workdir", str(tmp_path / "w")],
            capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "private Mosquitto" not in proc.stdout
    assert "5 outcomes published and received" in proc.stdout
