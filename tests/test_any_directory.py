"""The installed commands work from any working directory, as systemd starts them (from /), not
only from the repository, where the source folders shadow the installed ``tabled.*`` names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tabled.drivers.registry import family, family_names

PROBE = """
import asyncio, sys
from tabled.drivers.errors import DeviceError
from tabled.drivers.registry import open_device

async def main(family, url):
    try:
        await open_device(family, url, device_id="x", sink=print)
    except DeviceError as exc:
        print("device_error", exc.reason)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.parametrize("name", family_names())
def test_every_family_opens_from_outside_the_source_tree(name: str, tmp_path: Path) -> None:
    """Regression: the registry imported ``drivers.<family>`` (the source folder's name), which
    only resolved with the repository as the working directory: ``tabled run`` started by
    systemd from / could open no device at all (ModuleNotFoundError)."""
    usb = family(name).transport == "usb"
    url = "usb://1209:0001" if usb else str(tmp_path / "no-such-port")
    proc = subprocess.run([sys.executable, "-c", PROBE, name, url], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("device_error "), proc.stdout


def test_tabled_sim_starts_from_outside_the_source_tree(tmp_path: Path) -> None:
    """Regression: ``tabled-sim`` imported ``simulators.<family>`` the same way."""
    proc = subprocess.run([sys.executable, "-m", "tabled.simulators.cli", "shoe", "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "--link" in proc.stdout
