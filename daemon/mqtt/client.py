"""The table's MQTT client: aiomqtt's, with paho's writes made on the spot.

Owns one thing: how bytes paho has queued reach the broker's socket. aiomqtt registers its
writer callback with ``call_soon_threadsafe(loop.add_writer, …)``, so its publish costs three
turns of the loop before the first byte is on the socket. :class:`TableClient` changes two
things and nothing else:

- paho's wish for a writer, when it comes on the loop's own thread (it always does once
  connected), adds the writer at once instead of a turn later; from any other thread (paho's
  connect runs in an executor) it is aiomqtt's own. Adding and removing are then both
  synchronous, so a writer is never added after the write it was for (which would leave a
  callback spinning on a writable socket);
- :meth:`TableClient.publish_now`: a QoS 1 publish through paho's ``publish()``, written to the
  socket before it returns; a writer is added only for what the socket does not take at once;
  the PUBACKs go to one listener (:attr:`TableClient.on_acked`).

Never while paho holds its callback lock (a write there would wait for itself for ever): then
:meth:`publish_now` leaves the write to the writer callback, and ``on_acked`` listeners must
not publish. The library internals this needs are :mod:`tabled.contract.mqttprivate`'s; what
they buy is measured in docs/design.md, "Private library uses".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from aiomqtt.exceptions import MqttCodeError

from tabled.contract.asyncmqtt import Client

#: paho's window of QoS 1 messages in flight is the durable stream's and this many more: the
#: status, device statuses, metrics and replies go through aiomqtt on the same connection, and
#: in a window of the durable stream's size alone one of them could take a slot, so that paho
#: queues a durable row instead of writing it (it goes out a turn later, from the PUBACK that
#: frees a slot). Mosquitto sets no limit on what a client has in flight towards it (MQTT 3.1.1).
OWN_PUBLISHES = 16


class TableClient(Client):
    """An :class:`aiomqtt.Client` whose writes happen on the spot (module docstring), and that
    a cancellation always stops (:class:`tabled.contract.asyncmqtt.Client`)."""

    def __init__(self, *args: Any, durable_inflight: int | None = None, **kwargs: Any) -> None:
        """aiomqtt's arguments; ``durable_inflight``, the durable stream's window, sets paho's
        (that and :data:`OWN_PUBLISHES` more) and the pending calls aiomqtt warns about."""
        if durable_inflight is not None:
            kwargs["max_inflight_messages"] = durable_inflight + OWN_PUBLISHES
        super().__init__(*args, **kwargs)
        if durable_inflight is not None:  # they wait for their PUBACK by design: no warning
            self.pending_calls_threshold = durable_inflight + OWN_PUBLISHES
        self._loop_thread = threading.get_ident()  # aiomqtt took the running loop: this one
        #: publish_now is queueing a message: a writer paho asks for now is publish_now's
        self._queueing = False
        #: paho asked for a writer that publish_now has not added (yet)
        self._writer_owed = False
        #: Called with paho's message id of every QoS 1/2 publish the broker acknowledged,
        #: inside paho's callback lock (it must not publish).
        self.on_acked: Callable[[int], None] | None = None

    def publish_now(self, topic: str, payload: str | bytes) -> int:
        """Queue ``payload`` on ``topic`` at QoS 1 and write it to the socket now; return paho's
        message id (its PUBACK goes to :attr:`on_acked`). Raises MqttCodeError where paho
        refuses it (the connection is gone).

        The writer paho asks for while it queues the message is not added to the loop if this
        call writes everything itself (two ``epoll_ctl`` calls and a handle less per message);
        it is added where something is left to write, or where this call may not write
        (inside paho's callback lock)."""
        paho = self.paho
        self._queueing = True
        try:
            info = paho.publish(topic, payload, qos=1)
        finally:
            self._queueing = False
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise MqttCodeError(info.rc, "Could not publish message")
        if paho.want_write() and not self.in_paho_callback():
            self.write_now()
        if self._writer_owed:  # paho holds a writer registered: if bytes are left, it is
            self._writer_owed = False
            sock = paho.socket()
            if sock is not None:
                self.loop.add_writer(sock.fileno(), self.write_now)
        return info.mid

    # -- the adapter's hooks, made synchronous on the loop's thread ----------------------------

    def writer_wanted(self, sock: Any) -> None:
        if threading.get_ident() != self._loop_thread:
            super().writer_wanted(sock)
        elif self._queueing:
            self._writer_owed = True
        else:
            self.loop.add_writer(sock.fileno(), self.write_now)

    def writer_not_wanted(self, sock: Any) -> None:
        self._writer_owed = False
        super().writer_not_wanted(sock)

    def acknowledged(self, mid: int) -> None:
        listener = self.on_acked
        if listener is not None:
            listener(mid)
