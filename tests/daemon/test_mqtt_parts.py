"""The parts of the broker connection, each on its own, without a broker (issue 11: the MQTT
service split into session, durable publisher, command gate and metrics). A real journal file
under each; the broker's side is a small recording client with aiomqtt's ``publish`` signature.
The whole, against a real Mosquitto, is tests/integration (test_status_numbering.py and every
daemon test)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import MQTTSettings
from tabled.daemon.journal import InputEntry, Journal, OutputEntry
from tabled.daemon.mqtt.numbers import Sequences, StatusNumbers
from tabled.daemon.mqtt.publisher import DurablePublisher
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.topics import Topics
from tabled.daemon.mqtt.volatile import VolatilePublisher

TOPICS = Topics("tabled", "lab", "t1")


class RecordingClient:
    """Takes publishes like the table's client: aiomqtt's ``publish`` and TableClient's
    ``publish_now`` (its PUBACK reported to ``on_acked`` a turn later), each acknowledged, or
    failing with MqttError while ``down``."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, Any], bool]] = []
        self.down = False
        self.on_acked: Callable[[int], None] | None = None
        self._mid = 0

    async def publish(self, topic: str, payload: str, *, qos: int = 0, retain: bool = False,
                      timeout: float | None = None) -> None:
        await asyncio.sleep(0)
        if self.down:
            raise aiomqtt.MqttError("the broker is gone")
        self.published.append((topic, json.loads(payload), retain))

    def publish_now(self, topic: str, payload: str | bytes) -> int:
        if self.down:
            raise aiomqtt.MqttCodeError(4, "Could not publish message")
        self.published.append((topic, json.loads(payload), False))
        self._mid += 1
        asyncio.get_running_loop().call_soon(self._ack, self._mid)
        return self._mid

    def _ack(self, mid: int) -> None:
        if self.on_acked is not None:
            self.on_acked(mid)


def write_events(journal: Journal, count: int) -> None:
    for n in range(count):
        journal.events.write([InputEntry("device:shoe-1", {"type": "card", "n": n}),
                              OutputEntry("event", {"type": "card", "n": n})], rfc3339_now())


def test_status_numbers_spend_only_what_may_have_reached_a_subscriber(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    numbers = StatusNumbers(journal.delivery)
    assert numbers.for_connection() == (0, 1)
    assert numbers.spent == -1  # a refused attempt spends nothing
    assert numbers.for_connection() == (0, 1)
    numbers.accepted(1)  # the broker holds the will: it may publish it
    numbers.sent = 0  # the birth went out
    numbers.left_cleanly()  # our DISCONNECT: the will was dropped, its number comes back
    assert numbers.spent == 0
    assert numbers.for_connection() == (1, 2)
    numbers.accepted(2)  # and this connection is lost: its will may have gone out
    journal.close()
    again = StatusNumbers(Journal(tmp_path / "j.sqlite").delivery)
    assert again.for_connection() == (3, 4)  # a restart goes on after the will


def test_sequences_number_each_kind_on_its_own_and_survive_a_restart(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    sequences = Sequences(journal.delivery)
    assert [sequences.next("device") for _ in range(3)] == [0, 1, 2]
    assert sequences.next("reply") == 0
    journal.close()
    assert Sequences(Journal(tmp_path / "j.sqlite").delivery).next("device") == 3


async def test_the_durable_publisher_sends_the_journal_in_order_and_remembers_the_broker_s_ack(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    write_events(journal, 5)
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=2, puback_timeout=1)
    client = RecordingClient()
    serving = asyncio.create_task(publisher.serve(client))  # type: ignore[arg-type]
    await asyncio.sleep(0)  # connected: serving
    async with asyncio.timeout(5):
        await publisher.drain()
        write_events(journal, 2)  # committed while connected: started from the commit itself
        publisher.notify()
        await publisher.drain()
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    publisher.on_disconnect()
    assert [p["n"] for _, p, _ in client.published] == [0, 1, 2, 3, 4, 0, 1]
    assert [p["table_seq"] for _, p, _ in client.published] == list(range(7))
    assert {t for t, _, _ in client.published} == {TOPICS.event}
    assert publisher.backlog == 0
    journal.close()
    reopened = Journal(tmp_path / "j.sqlite")  # the acknowledged position was made durable
    assert DurablePublisher(reopened.delivery, TOPICS, max_inflight=2,
                            puback_timeout=1).backlog == 0


async def test_a_publish_that_fails_ends_the_connection_and_nothing_is_skipped(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    write_events(journal, 3)
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=8, puback_timeout=1)
    client = RecordingClient()
    client.down = True
    with pytest.raises(aiomqtt.MqttError):
        async with asyncio.timeout(5):
            await publisher.serve(client)  # type: ignore[arg-type]
    assert publisher.backlog == 3  # nothing acknowledged: all of it goes on the next connection
    again = RecordingClient()
    serving = asyncio.create_task(publisher.serve(again))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    async with asyncio.timeout(5):
        await publisher.drain()
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    assert [p["table_seq"] for _, p, _ in again.published] == [0, 1, 2]


async def test_the_durable_publisher_takes_only_a_client_that_publishes_directly(
        tmp_path: Path) -> None:
    # aiomqtt's own publish (a task and three turns of the loop per row) does not meet the
    # latency goal: docs/design.md, "Private library uses"
    journal = Journal(tmp_path / "j.sqlite")
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=8, puback_timeout=1)
    with pytest.raises(TypeError, match="does not publish directly"):
        await publisher.serve(aiomqtt.Client("127.0.0.1", 1))
    journal.close()


async def test_a_volatile_message_whose_publish_failed_goes_again_with_its_number(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    session = BrokerSession(MQTTSettings(), "mqtt://127.0.0.1:1", TOPICS,
                            StatusNumbers(journal.delivery), client_id="t", birth=dict)
    volatile = VolatilePublisher(session, Sequences(journal.delivery), puback_timeout=1)
    client = RecordingClient()
    session._client = client  # type: ignore[assignment]
    session.connected.set()
    volatile.set_device_status("shoe-1", {"state": "connected"})
    await asyncio.sleep(0.01)
    client.down = True
    sent = await volatile.publish(TOPICS.device_status("shoe-1"), {"state": "lost"},
                                  kind="device", retain=True)
    assert sent is False
    session.connected.clear()
    nothing = await volatile.publish(TOPICS.metrics, {"x": 1}, kind="metrics")
    assert nothing is False  # not connected: not sent, and no number spent
    fresh = RecordingClient()
    await volatile.on_connect(fresh)  # type: ignore[arg-type]
    session._client = fresh  # type: ignore[assignment]
    session.connected.set()
    await volatile.serve(fresh)  # type: ignore[arg-type]
    # the failed one first, same number; then every device's current state, a new number
    assert [(p["state"], p["table_seq"], retain) for _, p, retain in fresh.published] == [
        ("lost", 1, True), ("connected", 2, True)]
    assert Sequences(journal.delivery).next("metrics") == 0


async def test_a_device_status_set_while_a_connection_is_set_up_is_not_lost(
        tmp_path: Path) -> None:
    """Found by the latency benchmark: a device that came up while the session was still
    sending what it owed (before it said it was connected) stayed unpublished until the next
    connection."""
    journal = Journal(tmp_path / "j.sqlite")
    session = BrokerSession(MQTTSettings(), "mqtt://127.0.0.1:1", TOPICS,
                            StatusNumbers(journal.delivery), client_id="t", birth=dict)
    volatile = VolatilePublisher(session, Sequences(journal.delivery), puback_timeout=1)
    client = RecordingClient()
    volatile.set_device_status("shoe-1", {"state": "connecting"})
    await volatile.on_connect(client)  # type: ignore[arg-type]
    volatile.set_device_status("shoe-1", {"state": "connected"})  # not connected yet
    session._client = client  # type: ignore[assignment]
    session.connected.set()
    await volatile.serve(client)  # type: ignore[arg-type]
    assert [p["state"] for _, p, _ in client.published] == ["connected"]
