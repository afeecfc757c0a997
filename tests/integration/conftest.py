"""Fixtures of the end-to-end tests: a real Mosquitto on a free port, per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabled.daemon.broker import Mosquitto


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    with Mosquitto(workdir=tmp_path / "broker") as mosquitto:
        yield mosquitto
