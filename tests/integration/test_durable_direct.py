"""The durable stream through paho's own publish (daemon/mqtt/direct.py), against a real
Mosquitto: every row, in journal order, each written to the socket from inside the call that
started it; the acknowledged position moved by the PUBACKs; other publishes on the same
connection (aiomqtt's, through its writer callback) interleaved with them without losing a
byte; and no writer callback left registered behind paho's back (a loop that would spin)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiomqtt

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import InputEntry, Journal, OutputEntry
from tabled.daemon.mqtt.direct import paho_client
from tabled.daemon.mqtt.publisher import DurablePublisher
from tabled.daemon.mqtt.topics import Topics
from tests.integration.harness import Subscriber, assert_contiguous

TOPICS = Topics("tabled", "lab", "t1")


def write(journal: Journal, first: int, count: int) -> None:
    for n in range(first, first + count):
        journal.events.write([InputEntry("device:shoe-1", {"type": "card", "n": n}),
                              OutputEntry("event", {"type": "card", "n": n})], rfc3339_now())


async def test_the_durable_stream_goes_out_in_order_through_paho(
        tmp_path: Path, broker: Mosquitto) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    write(journal, 0, 50)  # a backlog from before the connection
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=8, puback_timeout=5)
    loop = asyncio.get_running_loop()
    async with (Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub,
                aiomqtt.Client("127.0.0.1", broker.port, max_inflight_messages=8) as client):
        paho = paho_client(client)
        assert paho is not None  # this aiomqtt: the direct path is the one taken
        serving = asyncio.create_task(publisher.serve(client))
        async with asyncio.timeout(20):
            await publisher.drain()
            for n in range(50, 250, 10):
                write(journal, n, 10)
                publisher.notify()  # from the commit, as the runtime does
                # aiomqtt's own publishes on the same connection, between ours
                await client.publish("tabled/lab/t1/metrics", f'{{"n":{n}}}', qos=1)
            await publisher.drain()
            events = await sub.wait_for("/event", 250)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        publisher.on_disconnect()
        sock = paho.socket()
        assert sock is not None and not paho.want_write()
        # nothing left for the loop to write: no writer registered for paho's socket
        assert loop.remove_writer(sock.fileno()) is False
    assert_contiguous(events)
    assert [e["n"] for e in events][:250] == list(range(250))
    assert publisher.backlog == 0 and publisher.acked_id == journal.last_id
    assert publisher.counters["published"] == 250
    journal.close()
    assert DurablePublisher(Journal(tmp_path / "j.sqlite").delivery, TOPICS, max_inflight=8,
                            puback_timeout=5).backlog == 0
