"""The conformance kit (issue 11 item 6): every installed family passes every check, and the kit
fails the families that break what it checks.

Every installed device family — the three built-ins and the example vendor family of
``examples/tabled-acme-shoe`` (``make test`` installs it) — runs every check of
:mod:`tabled.tools.conformance`, one test each. Then the kit is turned on families broken on
purpose (the shoe's driver with one duty undone, its simulator with a wrong declaration): a
kit that passed them would prove nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tabled.contract.events import Event
from tabled.drivers.registry import Device, family, family_names
from tabled.drivers.sink import EventSink
from tabled.simulators.registry import simulators
from tabled.tools import cli
from tabled.tools.conformance import CHECKS, CheckResult, KitOptions, Subject, run_check

#: The example vendor family (examples/tabled-acme-shoe), which CI installs and checks.
EXAMPLE = "acme_shoe"
FAMILIES = family_names()


def test_the_example_family_is_installed() -> None:
    assert EXAMPLE in FAMILIES, (
        "the example family is not installed: `make venv` installs it "
        "(pip install -e examples/tabled-acme-shoe)")


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("name", FAMILIES)
async def test_every_installed_family_passes_the_kit(name: str, check: str) -> None:
    result = await run_check(name, check)
    if result.outcome == "skip":
        pytest.skip(f"{name} {check}: {result.detail}")
    assert result.outcome == "pass", f"{name} {check}: {result.detail}"
    assert not result.leaks, f"{name} {check} left behind: {result.leaks}"


# -- the kit fails what it must -------------------------------------------------------------------

SHOE = family("shoe")
SHOE_SIMULATOR = simulators()["shoe"]
Open = Callable[..., Any]


class FilteringSink:
    """A sink in front of the kit's journal that changes what the driver's events or commits
    become (the driver under it is the real one)."""

    def __init__(self, inner: EventSink, *, drop: int | None = None,
                 commit_always: bool = False) -> None:
        self.inner = inner
        self.emitted = 0
        self._drop = drop
        self._commit_always = commit_always

    def emit(self, event: Event) -> None:
        self.emitted += 1
        if self.emitted != self._drop:
            self.inner.emit(event)

    def commit(self) -> bool:
        made = self.inner.commit()
        return True if self._commit_always else made


def broken_shoe(wrap: Callable[[Open], Open]) -> Subject:
    """The shoe family, its ``open`` wrapped."""
    return Subject(dataclasses.replace(SHOE, open=wrap(SHOE.open)), SHOE_SIMULATOR)


def loses_the_fifth_event(open_: Open) -> Open:
    async def opened(url: str, *, sink: EventSink, **options: Any) -> Device:
        return await open_(url, sink=FilteringSink(sink, drop=5), **options)
    return opened


def ignores(option: str) -> Callable[[Open], Open]:
    def wrap(open_: Open) -> Open:
        async def opened(url: str, **options: Any) -> Device:
            options.pop(option, None)
            return await open_(url, **options)
        return opened
    return wrap


def ignores_the_barrier(open_: Open) -> Open:
    async def opened(url: str, *, sink: EventSink, **options: Any) -> Device:
        return await open_(url, sink=FilteringSink(sink, commit_always=True), **options)
    return opened


def leaves_a_task(open_: Open) -> Open:
    async def opened(url: str, **options: Any) -> Device:
        stray = asyncio.create_task(asyncio.sleep(60), name="stray-poller")
        stray.add_done_callback(lambda task: None)
        return await open_(url, **options)
    return opened


async def failed(subject: Subject, check: str) -> CheckResult:
    result = await run_check(subject, check, KitOptions(timeout=5.0))
    assert result.outcome == "fail", result
    return result


async def test_a_driver_that_loses_an_event_fails_the_round_trip() -> None:
    result = await failed(broken_shoe(loses_the_fifth_event), "framing_round_trip")
    assert result.detail.startswith("event 4 is ")
    assert "(expected event 4 is missing)" in result.detail


async def test_a_driver_that_ignores_resume_fails_the_durability_barrier() -> None:
    result = await failed(broken_shoe(ignores("resume")), "durability_barrier")
    assert "a duplicate of expected event" in result.detail


async def test_a_driver_that_acknowledges_what_its_sink_refused_fails() -> None:
    result = await failed(broken_shoe(ignores_the_barrier), "durability_barrier")
    assert "kept its link after its sink's commit() returned False" in result.detail


async def test_a_driver_that_ignores_the_pinned_serial_fails_the_identity_check() -> None:
    result = await failed(broken_shoe(ignores("serial")), "identity_check")
    assert result.detail.endswith("where 'SHOE-SIM-0002' is pinned: the driver took it (its "
                                  "link came up; a device is identified before its link is up)")


async def test_a_wrongly_declared_fault_code_fails_fault_events() -> None:
    side = SHOE_SIMULATOR.conformance
    assert side is not None
    wrong = dataclasses.replace(side, faults={"unreadable": "shoe_empty"})
    subject = Subject(SHOE, dataclasses.replace(SHOE_SIMULATOR, conformance=wrong))
    result = await failed(subject, "fault_events")
    assert result.detail == ("family fault 'unreadable' brought no fault event with code "
                             "'shoe_empty' (fault codes seen: ['unreadable_card'])")


async def test_a_fault_code_the_contract_does_not_know_fails_fault_events() -> None:
    side = SHOE_SIMULATOR.conformance
    assert side is not None
    wrong = dataclasses.replace(side, faults={"unreadable": "card_unreadable"})
    subject = Subject(SHOE, dataclasses.replace(SHOE_SIMULATOR, conformance=wrong))
    result = await failed(subject, "fault_events")
    assert "['card_unreadable'] are not codes of tabled.contract.faults" in result.detail


async def test_a_task_left_running_is_a_leak() -> None:
    result = await run_check(broken_shoe(leaves_a_task), "framing_round_trip",
                             KitOptions(timeout=5.0))
    assert result.outcome == "pass" and result.failed
    assert len(result.leaks) == 1 and result.leaks[0].startswith("task stray-poller")
    for task in asyncio.all_tasks():
        if task.get_name() == "stray-poller":
            task.cancel()


async def test_a_family_without_a_simulator_fails_every_check() -> None:
    result = await failed(Subject(SHOE, None), "framing_round_trip")
    assert "no simulator for family 'shoe'" in result.detail
    bare = dataclasses.replace(SHOE_SIMULATOR, conformance=None)
    result = await failed(Subject(SHOE, bare), "fault_events")
    assert "declares no conformance side" in result.detail


# -- tabled conformance ----------------------------------------------------------------------------


def test_an_unknown_family_is_refused_naming_the_installed_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conformance", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err == (f"tabled conformance: unknown device family 'nosuch' "
                   f"(installed: {', '.join(FAMILIES)})\n")


def test_an_unknown_check_is_refused_naming_the_checks(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conformance", "shoe", "--check", "nosuch"]) == 2
    assert "unknown check 'nosuch' (checks: framing_round_trip, " in capsys.readouterr().err


def test_tabled_conformance_prints_each_check_and_exits_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["conformance", "dice", "--check", "framing_round_trip",
                     "--check", "any_chunking"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert out[0] == "dice: an electronic dice sensor (USB) (kind dice, usb)"
    assert out[1].startswith("  PASS  framing_round_trip ")
    assert out[2].startswith("  SKIP  any_chunking ")
    assert out[2].endswith("there is no byte stream to split")
    assert out[3].startswith("  PASS  no_leaks ")
    assert out[4] == "  dice: 2 passed, 0 failed, 1 skipped"


def test_tabled_conformance_exits_1_on_a_failure(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    broken = broken_shoe(loses_the_fifth_event)
    monkeypatch.setattr("tabled.tools.conformance.subject", lambda name: broken)
    assert cli.main(["conformance", "shoe", "--check", "framing_round_trip"]) == 1
    out = capsys.readouterr().out
    assert "  FAIL  framing_round_trip " in out
    assert "shoe: 1 passed, 1 failed, 0 skipped" in out


def test_the_families_argument_names_the_installed_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["conformance", "--help"])
    assert f"installed device families ({', '.join(FAMILIES)})" in " ".join(
        capsys.readouterr().out.split())


def test_checks_are_the_documented_ones() -> None:
    assert list(CHECKS) == ["framing_round_trip", "any_chunking", "corrupt_frames",
                            "disconnect_reconnect", "durability_barrier", "identity_check",
                            "fault_events"]


def test_the_kit_is_not_loaded_to_build_the_command_line() -> None:
    """``tabled replay`` must start without the device stacks (tools/cli.py)."""
    import subprocess
    import sys

    probe = ("import sys, tabled.tools.cli as c; c.build_parser(); "
             "print(sorted(m for m in sys.modules if m.startswith(('tabled.tools.conformance', "
             "'tabled.simulators'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert out.strip() == "[]"

