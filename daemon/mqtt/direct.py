"""The durable stream's way onto the wire: paho's own ``publish()``, written to the socket at once.

Owns one thing: starting a QoS 1 publish from inside the journal commit that made the message
durable, so that it is on the broker's socket before the commit's callback returns, and hearing
of its PUBACK. aiomqtt's ``publish`` coroutine does the same in three turns of the event loop: a
task to run it, then paho queues the packet and aiomqtt registers a writer callback (through
``call_soon_threadsafe``), then the loop finds the socket writable and the callback writes; and it
waits for the PUBACK with an event, a ``wait_for`` task and a timer per message (measured: 0.2 to
0.3 ms of every event's device-to-subscriber latency, and the larger part of the publisher's CPU).

Everything here is paho's public API (``publish()`` and its ``MQTTMessageInfo``,
``want_write()``, ``socket()``, the ``on_publish`` and ``on_socket_register_write`` callbacks), on
the paho client aiomqtt keeps in ``Client._client``: aiomqtt (pinned below 3) has no public way to
it, and that is the one private fact used, checked (:func:`paho_client`): where it is not a paho
client, the publisher goes through aiomqtt's ``publish`` as before.

Writing at once is paho's own behaviour for a client that has no writer callback registered
(``_packet_queue`` then calls ``loop_write()``); so the publish runs with aiomqtt's
``on_socket_register_write`` unset and puts it back right after, and if paho could not write
everything (a full socket buffer, or a publish from inside a paho callback) the rest goes to
aiomqtt's writer callback exactly as paho would have handed it. When a write is already waiting
for that callback (``want_write()``: aiomqtt published something this turn), the message joins it
instead: the callback writes both, in order, and nothing is left registered behind paho's back.

It never reads the journal and never decides what is published.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt


def paho_client(client: object) -> mqtt.Client | None:
    """The paho client under an aiomqtt ``client``, or None where it cannot be found (another
    aiomqtt, or a test's stand-in): then the caller publishes through aiomqtt."""
    paho = getattr(client, "_client", None)
    return paho if isinstance(paho, mqtt.Client) else None


class DirectPublish:
    """QoS 1 publishes straight through paho on one connection; ``on_acked(mid)`` is called (on
    the event loop, from paho's read of the PUBACK) for every message paho reports delivered."""

    __slots__ = ("paho",)

    def __init__(self, paho: mqtt.Client, on_acked: Callable[[int], None]) -> None:
        self.paho = paho
        previous = paho.on_publish  # aiomqtt's: it completes its own publishes' waits

        def published(client: mqtt.Client, userdata: Any, mid: int, *args: Any) -> None:
            if previous is not None:
                previous(client, userdata, mid, *args)
            on_acked(mid)

        paho.on_publish = published

    def publish(self, topic: str, payload: str) -> mqtt.MQTTMessageInfo:
        """Queue ``payload`` at QoS 1 and write it now; raises MqttError if paho refuses it
        (the connection is gone)."""
        paho = self.paho
        if paho.want_write():
            info = paho.publish(topic, payload, qos=1)  # behind what is waiting: written with it
        else:
            register = paho.on_socket_register_write
            paho.on_socket_register_write = None
            try:
                info = paho.publish(topic, payload, qos=1)
            finally:
                paho.on_socket_register_write = register
            sock = paho.socket()
            if paho.want_write() and register is not None and sock is not None:
                register(paho, paho.user_data_get(), sock)  # the rest, as paho would have
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        return info
