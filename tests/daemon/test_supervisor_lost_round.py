"""The supervisor's own void for a device that stays lost is for the round it was lost in.

A shoe lost mid-hand arms a timer (``lost_void_after``); if the shoe is not back by then, the
daemon voids the hand (baccarat.art10). The timer used to check only that *a* round was open
when it fired: if the lost hand ended meanwhile (the dealer voided it) and another began (dealt
from a second shoe), it voided that one — a hand nobody lost. The same class as a dealer's
command that names no round (docs/reliability.md). Real pty shoe, real journal, real runtime.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tabled.contract.events import CardDealt, Fault, Meta, Void
from tabled.daemon import supervisor as supervisor_module
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import Degraded, TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor
from tabled.simulators.shoe import ShoeDevice

LOST_VOID_AFTER = 0.5


async def shoe_dealing_hand_1(tmp_path: Path) -> tuple[
        ShoeDevice, TableRuntime, DeviceSupervisor, list[dict[str, Any]], asyncio.Task[None]]:
    """A baccarat table's supervisor with shoe 1 connected, which has dealt two cards of hand 1:
    the shoe, the runtime, the supervisor, the statuses it said and its task."""
    device = ShoeDevice(link_path=str(tmp_path / "shoe"))
    await device.start()
    config = parse_config({
        "table": {"site": "s", "id": "t", "game": "baccarat"},
        "devices": [{"id": "shoe-1", "family": "shoe", "url": device.path,
                     "reconnect_min": 0.05, "reconnect_max": 0.2,
                     "lost_void_after": LOST_VOID_AFTER}],
        "journal": {"path": str(tmp_path / "j.sqlite")}})
    runtime = TableRuntime(config, Journal(tmp_path / "j.sqlite").events)
    statuses: list[dict[str, Any]] = []
    supervisor = DeviceSupervisor(config.devices[0], runtime,
                                  on_status=lambda _, body: statuses.append(body))
    task = asyncio.create_task(supervisor.run())
    async with asyncio.timeout(10):
        await supervisor.connected.wait()
        device.report(device.reader.load(8))
        device.report(device.reader.card_out("2S"))
        device.report(device.reader.card_out("3H"))
        while not runtime.table.round_open:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return device, runtime, supervisor, statuses, task


async def lose_the_shoe_mid_hand(tmp_path: Path) -> tuple[TableRuntime, DeviceSupervisor,
                                                           asyncio.Task[None]]:
    """Shoe 1 deals two cards of hand 1 and is unplugged: the supervisor arms its timer."""
    device, runtime, supervisor, statuses, task = await shoe_dealing_hand_1(tmp_path)
    async with asyncio.timeout(10):
        await device.stop()
        while not any(s["state"] == "lost" for s in statuses):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    return runtime, supervisor, task


async def stop_everything(runtime: TableRuntime, supervisor: DeviceSupervisor,
                          task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await supervisor.stop()
    runtime.events.owner.close()


def outcomes(runtime: TableRuntime) -> list[dict[str, Any]]:
    return [json.loads(o.payload) for o in runtime.events.outputs_after(0, 1000)
            if o.topic == "outcome"]


async def test_the_lost_shoe_s_timer_does_not_void_a_hand_begun_since(tmp_path: Path) -> None:
    runtime, supervisor, task = await lose_the_shoe_mid_hand(tmp_path)
    try:
        assert runtime.table.next_round == 1 and runtime.table.round_open
        # before the timer fires: the dealer voids hand 1, and hand 2 is dealt from shoe 2
        runtime.accept(Void(reason="misdeal", round=1), "console:pit-1")
        for seq, card in enumerate(("9S", "KH")):
            runtime.accept(CardDealt(card=card, meta=Meta(device="shoe-2", seq=seq)),
                           "device:shoe-2")
        assert runtime.table.next_round == 2 and runtime.table.round_open
        await asyncio.sleep(LOST_VOID_AFTER * 2)
        assert runtime.table.round_open, "hand 2 was voided for shoe 1's loss in hand 1"
        for seq, card in enumerate(("KD", "3C"), start=2):
            runtime.accept(CardDealt(card=card, meta=Meta(device="shoe-2", seq=seq)),
                           "device:shoe-2")
        assert [(o["round"], o["status"]) for o in outcomes(runtime)] == [
            (1, "void"), (2, "complete")]
    finally:
        await stop_everything(runtime, supervisor, task)


async def test_the_lost_shoe_s_timer_still_voids_the_hand_it_was_lost_in(
        tmp_path: Path) -> None:
    runtime, supervisor, task = await lose_the_shoe_mid_hand(tmp_path)
    try:
        await asyncio.sleep(LOST_VOID_AFTER * 2)
        (void,) = outcomes(runtime)
        assert (void["round"], void["status"], void["article"]) == (1, "void", "baccarat.art10")
        assert "device_lost" in void["void_reason"]
        events = [json.loads(o.payload) for o in runtime.events.outputs_after(0, 1000)
                  if o.topic == "event"]
        assert events[-1]["type"] == "void" and events[-1]["round"] == 1  # the round it is for
    finally:
        await stop_everything(runtime, supervisor, task)


def fill_the_disk(runtime: TableRuntime) -> None:
    """The journal's file may not grow (SQLite's max_page_count): the next write fails as on a
    full disk, and the runtime is degraded."""
    db = runtime.events.owner._db
    db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(Degraded):
        runtime.accept(Fault(code="x", detail="y" * 100_000), "daemon")


def make_room(runtime: TableRuntime) -> None:
    """Room again, and the probe (the service's housekeeping does it) ends the degradation."""
    runtime.events.owner._db.execute("PRAGMA max_page_count = 1073741823")
    assert runtime.probe()


async def test_a_void_the_full_journal_refused_is_recorded_once_the_journal_is_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timer fires while the disk is full: the void is not lost (it used to be: logged as
    ``consequence_not_recorded`` and forgotten, so the hand stayed open for ever). It is tried
    again until the journal takes it, and recorded once."""
    monkeypatch.setattr(supervisor_module, "CONSEQUENCE_RETRY_S", 0.1)
    runtime, supervisor, task = await lose_the_shoe_mid_hand(tmp_path)
    try:
        fill_the_disk(runtime)
        await asyncio.sleep(LOST_VOID_AFTER * 2)
        assert outcomes(runtime) == [] and runtime.table.round_open
        make_room(runtime)
        async with asyncio.timeout(5):
            while not outcomes(runtime):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # (three more retry periods: it is not recorded twice)
        (void,) = outcomes(runtime)
        assert (void["round"], void["status"], void["article"]) == (1, "void", "baccarat.art10")
        assert not runtime.table.round_open
    finally:
        await stop_everything(runtime, supervisor, task)


async def test_a_refused_void_is_not_recorded_once_the_shoe_is_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A void that waits for the journal is for a device still away: when the shoe returns
    first, its cards finish the hand and the void is not recorded."""
    monkeypatch.setattr(supervisor_module, "CONSEQUENCE_RETRY_S", 0.1)
    runtime, supervisor, task = await lose_the_shoe_mid_hand(tmp_path)
    try:
        fill_the_disk(runtime)
        await asyncio.sleep(LOST_VOID_AFTER * 2)
        assert supervisor._retries, "the refused void waits for the journal"
        supervisor.connected.set()  # the shoe is back (as the run loop marks it)
        make_room(runtime)
        await asyncio.sleep(0.5)
        assert outcomes(runtime) == [] and runtime.table.round_open
        assert not supervisor._retries
    finally:
        await stop_everything(runtime, supervisor, task)


async def test_a_link_dropped_because_the_journal_is_full_is_no_loss_of_the_shoe(
        tmp_path: Path) -> None:
    """The journal cannot make the shoe's next card durable: the driver drops the link (the
    shoe keeps the card). That is the host's failure, not the shoe's: no timer, no void
    (baccarat.art10 is about the device). When the journal is back the shoe sends the card
    again and the hand ends as dealt. (With the supervisor's consequences retried after a full
    disk, a void decided for such a "loss" reached the journal: the disk campaign's Q Poker
    round dealt whole and voided by the daemon.)"""
    device, runtime, supervisor, statuses, task = await shoe_dealing_hand_1(tmp_path)
    try:
        fill_the_disk(runtime)
        device.report(device.reader.card_out("4D"))
        async with asyncio.timeout(10):
            while not any(s["state"] == "lost" for s in statuses):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert supervisor._lost_timer is None
        await asyncio.sleep(LOST_VOID_AFTER * 2)
        assert outcomes(runtime) == [] and not supervisor._retries
        make_room(runtime)
        device.report(device.reader.card_out("5C"))
        async with asyncio.timeout(10):
            while not outcomes(runtime):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        (outcome,) = outcomes(runtime)
        assert outcome["status"] == "complete", outcome
        assert (outcome["result"]["player_cards"], outcome["result"]["banker_cards"]) == (
            ["2S", "4D"], ["3H", "5C"])
    finally:
        await device.stop()
        await stop_everything(runtime, supervisor, task)
