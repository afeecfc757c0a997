"""A service told to stop stops: no cancellation is lost on the way (a table daemon's shutdown
once hung in CI, its metrics still going out once a second after its "offline": the metrics
task had lost its cancellation in aiomqtt's acknowledgement wait).

The client here is the one the table and the pit run (tabled.contract.asyncmqtt.Client); the
acknowledgement is a real future completed in the same turn of the loop as the cancellation,
which is the race, made certain."""

from __future__ import annotations

import asyncio
import sys

import aiomqtt
import pytest
import structlog
from structlog.testing import capture_logs

from tabled.contract.asyncmqtt import Client
from tabled.contract.backoff import cancel_all
from tabled.daemon.mqtt.client import TableClient


async def acknowledged_as_cancelled(client: aiomqtt.Client) -> asyncio.Task[object]:
    """A task waiting in ``client``'s acknowledgement wait, whose acknowledgement comes in the
    same turn as its cancellation; the task, once ended."""
    ack: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(client._wait_for(ack, timeout=5))
    await asyncio.sleep(0)  # it waits now
    ack.set_result("PUBACK")
    waiting.cancel()
    await asyncio.wait([waiting])
    return waiting


async def test_a_cancellation_that_comes_with_the_acknowledgement_is_not_lost() -> None:
    for client in (Client("127.0.0.1", 1), TableClient("127.0.0.1", 1)):
        waiting = await acknowledged_as_cancelled(client)
        assert waiting.cancelled()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="asyncio.wait_for keeps it from 3.12")
async def test_aiomqtts_own_wait_loses_it_on_this_python() -> None:
    """Why Client exists: should aiomqtt stop losing it, this fails and Client can go."""
    waiting = await acknowledged_as_cancelled(aiomqtt.Client("127.0.0.1", 1))
    assert not waiting.cancelled() and waiting.result() == "PUBACK"


async def test_the_client_wait_still_times_out_as_aiomqtts_does() -> None:
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(aiomqtt.MqttError, match="Operation timed out"):
        await Client("127.0.0.1", 1)._wait_for(never, timeout=0.05)
    assert never.cancelled()  # nothing left waiting


async def test_cancel_all_ends_a_part_that_lost_its_cancellation_and_names_it() -> None:
    lost = 0

    async def loses_one() -> None:
        nonlocal lost
        while True:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if lost:
                    raise
                lost += 1  # as a lost cancellation looks from here: it goes on

    async def behaves() -> None:
        await asyncio.sleep(3600)

    stubborn = asyncio.create_task(loses_one(), name="metrics")
    plain = asyncio.create_task(behaves(), name="housekeeping")
    finished = asyncio.create_task(asyncio.sleep(0), name="finished")
    await asyncio.sleep(0.02)
    with capture_logs() as logs:
        await asyncio.wait_for(cancel_all(structlog.get_logger("test"),
                                          [stubborn, plain, finished], grace=0.1), timeout=5)
    assert stubborn.cancelled() and plain.cancelled() and finished.done()
    assert lost == 1
    assert [(e["event"], e["task"], e["cancelled"]) for e in logs] == [
        ("task_still_running", "metrics", 1)]

