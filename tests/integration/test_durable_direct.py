"""The durable stream written on the spot (daemon/mqtt/client.py), against a real Mosquitto:
every row, in journal order, each on the socket before the call that started it returns; the
acknowledged position moved by the PUBACKs; aiomqtt's own publishes on the same connection
interleaved without losing a byte; no writer callback left registered (a loop that would spin);
and no write from inside paho's callback lock (a write there waits for itself for ever). The
private names of aiomqtt and paho under it: tests/integration/test_mqtt_private.py."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import paho.mqtt.client as mqtt

from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.broker import Mosquitto
from tabled.daemon.journal import InputEntry, Journal, OutputEntry
from tabled.daemon.mqtt.client import OWN_PUBLISHES, TableClient
from tabled.daemon.mqtt.publisher import DurablePublisher
from tabled.daemon.mqtt.topics import Topics
from tests.integration.harness import Subscriber, assert_contiguous
from tests.waiting import until

TOPICS = Topics("tabled", "lab", "t1")


def write(journal: Journal, first: int, count: int) -> None:
    for n in range(first, first + count):
        journal.events.write([InputEntry("device:shoe-1", {"type": "card", "n": n}),
                              OutputEntry("event", {"type": "card", "n": n})], rfc3339_now())


def no_writer_left(loop: asyncio.AbstractEventLoop, paho: mqtt.Client) -> bool:
    """Nothing queued for the socket and no writer callback registered for it."""
    sock = paho.socket()
    assert sock is not None
    return not paho.want_write() and loop.remove_writer(sock.fileno()) is False


class Acks:
    """The message ids the client reported acknowledged (its ``on_acked``)."""

    def __init__(self, client: TableClient) -> None:
        self.mids: set[int] = set()
        self._changed = asyncio.Event()
        client.on_acked = self._acked

    def _acked(self, mid: int) -> None:
        self.mids.add(mid)
        self._changed.set()

    async def wait(self, mids: set[int]) -> None:
        while not mids <= self.mids:
            await self._changed.wait()
            self._changed.clear()


async def test_the_durable_stream_goes_out_in_order_each_row_written_at_once(
        tmp_path: Path, broker: Mosquitto) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    write(journal, 0, 50)  # a backlog from before the connection
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=8, puback_timeout=5)
    loop = asyncio.get_running_loop()
    async with (Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub,
                TableClient("127.0.0.1", broker.port, durable_inflight=8) as client):
        serving = asyncio.create_task(publisher.serve(client))
        async with asyncio.timeout(20):
            await publisher.drain()
            for n in range(50, 250, 10):
                write(journal, n, 10)
                before = publisher.counters["published"]
                publisher.notify()  # from the commit, as the runtime does
                # on the socket already: nothing waits for the loop to write it
                assert not client.paho.want_write()
                assert publisher.counters["published"] == before  # (the PUBACKs come later)
                # aiomqtt's own publishes on the same connection, between ours
                await client.publish("tabled/lab/t1/metrics", f'{{"n":{n}}}', qos=1)
            await publisher.drain()
            events = await sub.wait_for("/event", 250)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        publisher.on_disconnect()
        assert no_writer_left(loop, client.paho)
    assert_contiguous(events)
    assert [e["n"] for e in events][:250] == list(range(250))
    assert publisher.backlog == 0 and publisher.acked_id == journal.last_id
    assert publisher.counters["published"] == 250
    journal.close()
    assert DurablePublisher(Journal(tmp_path / "j.sqlite").delivery, TOPICS, max_inflight=8,
                            puback_timeout=5).backlog == 0


async def test_a_publish_inside_paho_s_callback_lock_is_left_to_the_writer(
        tmp_path: Path, broker: Mosquitto) -> None:
    loop = asyncio.get_running_loop()
    async with (Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub,
                TableClient("127.0.0.1", broker.port) as client):
        acks = Acks(client)
        # aiomqtt's QoS 0 publish queued, then ours inside the lock paho's write of a QoS 0
        # message takes: written there, it would wait for itself for ever
        await client.publish("tabled/lab/t1/metrics", '{"n":0}', qos=0)
        with client.paho._in_callback_mutex:
            mid = client.publish_now("tabled/lab/t1/event", '{"n":1}')
            assert client.paho.want_write()  # not written here: the writer callback will
        async with asyncio.timeout(10):
            got = await sub.wait_for("/event", 1)
            await acks.wait({mid})
        assert got == [{"n": 1}]
        assert no_writer_left(loop, client.paho)


async def test_what_the_socket_does_not_take_at_once_goes_through_the_writer(
        tmp_path: Path, broker: Mosquitto) -> None:
    loop = asyncio.get_running_loop()
    big = "x" * (4 * 1024 * 1024)  # more than a loopback socket's send buffer
    assert broker.process is not None
    async with (Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub,
                TableClient("127.0.0.1", broker.port) as client):
        acks = Acks(client)
        sock = client.paho.socket()
        assert sock is not None
        broker.process.send_signal(signal.SIGSTOP)  # the broker reads nothing for a while
        try:
            mids = [client.publish_now("tabled/lab/t1/event", f'{{"n":{n},"pad":"{big}"}}')
                    for n in range(2)]
            assert client.paho.want_write()  # some of it is left: a writer must be there
            writer = loop._selector.get_key(sock.fileno()).data[1]  # type: ignore[attr-defined]
            assert writer is not None
            mids.append(client.publish_now("tabled/lab/t1/event", '{"n":2}'))  # behind them
        finally:
            broker.process.send_signal(signal.SIGCONT)
        async with asyncio.timeout(30):
            got = await sub.wait_for("/event", 3)
            await acks.wait(set(mids))
        assert [m["n"] for m in got] == [0, 1, 2]
        assert no_writer_left(loop, client.paho)


async def test_aiomqtt_s_own_publishes_take_no_slot_of_the_durable_stream(
        tmp_path: Path, broker: Mosquitto) -> None:
    # the CI failure this came from: with paho's window the durable stream's size, a metrics
    # publish awaiting its PUBACK held a slot, paho queued a durable row instead of writing it,
    # and the row waited for a PUBACK to free the slot
    journal = Journal(tmp_path / "j.sqlite")
    publisher = DurablePublisher(journal.delivery, TOPICS, max_inflight=8, puback_timeout=5)
    assert broker.process is not None
    async with (Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub,
                TableClient("127.0.0.1", broker.port, durable_inflight=8) as client):
        serving = asyncio.create_task(publisher.serve(client))
        async with asyncio.timeout(20):
            await until(lambda: publisher._pump is not None)
            broker.process.send_signal(signal.SIGSTOP)  # no PUBACK comes back for a while
            try:
                own = [asyncio.create_task(client.publish("tabled/lab/t1/metrics",
                                                          f'{{"n":{n}}}', qos=1))
                       for n in range(OWN_PUBLISHES)]
                # all of them waiting for their PUBACK
                await until(lambda: client.paho._inflight_messages == OWN_PUBLISHES)
                write(journal, 0, 8)
                publisher.notify()
                # every durable row written, none left queued inside paho for a free slot
                durable = [m for m in client.paho._out_messages.values()
                           if m.topic == "tabled/lab/t1/event"]
                assert len(durable) == 8
                assert all(m.state == mqtt.mqtt_ms_wait_for_puback for m in durable)
                assert not client.paho.want_write()
            finally:
                broker.process.send_signal(signal.SIGCONT)
            await asyncio.gather(*own)
            await publisher.drain()
            events = await sub.wait_for("/event", 8)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    assert [e["n"] for e in events] == list(range(8))
    assert publisher.acked_id == journal.last_id
    journal.close()
