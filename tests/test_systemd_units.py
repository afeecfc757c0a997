"""The two systemd units, the table daemon's and the pit's: each verifies without a word, its
exposure is "OK", and the figure its comment (and, for the daemon, docs/install.md) states is
the one measured, and the only one stated (issue 10, item 8: they once disagreed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ANALYZE = shutil.which("systemd-analyze")
pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
#: Each unit, and the documents besides its own comment that state its exposure.
UNITS = {"tabled.service": ("docs/install.md",), "tabled-pit.service": ()}


def installed_unit(name: str, tmp_path: Path) -> Path:
    """The unit as an install would have it: ExecStart pointing at a real tabled."""
    tabled = Path(sys.executable).with_name("tabled")
    unit = tmp_path / name
    unit.write_text((ROOT / "systemd" / name).read_text()
                    .replace("/opt/tabled/venv/bin/tabled", str(tabled)))
    return unit


@pytest.mark.parametrize("name", UNITS)
def test_the_unit_verifies_without_a_word(name: str, tmp_path: Path) -> None:
    assert ANALYZE is not None
    proc = subprocess.run([ANALYZE, "verify", str(installed_unit(name, tmp_path))],
                          capture_output=True, text=True, check=False)
    # systemd-analyze verify exits 0 even with warnings: any output is a failure
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("name", UNITS)
def test_the_exposure_is_ok_and_stated_as_measured(name: str, tmp_path: Path) -> None:
    assert ANALYZE is not None
    proc = subprocess.run([ANALYZE, "security", "--offline=true", "--threshold=20",
                           str(installed_unit(name, tmp_path))],
                          capture_output=True, text=True, check=False)
    match = re.search(rf"Overall exposure level for {re.escape(name)}: (\d+\.\d+) (\w+)",
                      proc.stdout)
    assert match, proc.stdout[-2000:] + proc.stderr
    assert float(match.group(1)) <= 2.0 and match.group(2) == "OK", match.group(0)
    assert proc.returncode == 0
    measured = f'{match.group(1)} "{match.group(2)}"'
    for where in (f"systemd/{name}", *UNITS[name]):
        figures = set(re.findall(r'\b\d\.\d "(?:OK|MEDIUM|EXPOSED|UNSAFE)"',
                                 (ROOT / where).read_text()))
        assert figures == {measured}, (where, figures, measured)


@pytest.mark.parametrize(("name", "lines", "absent"), [
    ("tabled.service",
     ("Type=notify", "WatchdogSec=", "User=tabled", "ProtectSystem=strict",
      "DevicePolicy=closed", "NoNewPrivileges=yes", "StateDirectory=tabled"), ()),
    ("tabled-pit.service",
     ("Type=notify", "WatchdogSec=", "User=tabled-pit", "ProtectSystem=strict",
      "PrivateDevices=yes", "DevicePolicy=closed", "NoNewPrivileges=yes",
      "StateDirectory=tabled-pit", "tabled pit --config", "tabled pit check-config"),
     ("DeviceAllow", "AF_NETLINK")),  # the pit touches no device
])
def test_the_unit_is_a_hardened_notify_service(name: str, lines: tuple[str, ...],
                                               absent: tuple[str, ...]) -> None:
    text = (ROOT / "systemd" / name).read_text()
    for line in lines:
        assert line in text, line
    for word in absent:
        assert word not in text, word


def test_the_daemons_resource_limits_are_the_measured_ones_and_install_md_says_them() -> None:
    """The table unit's CPUQuota= is the smallest quota bench/smallpc.py found to meet every
    goal (bench/results.json), its MemoryMax= the limit that was measured under, and
    docs/install.md recommends both."""
    import json

    figures = json.loads((ROOT / "bench" / "results.json").read_text())["smallpc"]
    met = [step for step in figures["steps"] if step["met"]]
    assert met, "no quota measured met the goals: nothing to recommend"
    best = min(met, key=lambda step: step["cpu_percent"])
    assert figures["smallest_quota_met"] == best["cpu_percent"]
    quota = f"CPUQuota={best['cpu_percent']:g}%"
    memory = f"MemoryMax={best['memory_bytes'] // 2**20}M"
    unit = (ROOT / "systemd" / "tabled.service").read_text().splitlines()
    assert [line for line in unit if line.startswith(("CPUQuota=", "MemoryMax="))] == [
        quota, memory]
    install = (ROOT / "docs" / "install.md").read_text()
    assert f"`{quota}`" in install and f"`{memory}`" in install
