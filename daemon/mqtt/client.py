"""The table's MQTT client: aiomqtt's, with paho's writes made on the spot.

Owns one thing: how bytes paho has queued reach the broker's socket. aiomqtt runs paho on the
event loop and writes through a writer callback that it registers with
``call_soon_threadsafe(loop.add_writer, …)``, so a publish costs three turns of the loop before
its first byte is on the socket: the task that runs ``publish``, the turn that registers the
writer, the turn that finds the socket writable (measured: 0.2-0.3 ms of every event's
device-to-subscriber latency, with a wake-up byte through the loop's self-pipe on top).
:class:`TableClient` changes two things and nothing else:

- paho's "register write" callback, when it comes on the loop's own thread (it always does
  once connected: aiomqtt calls paho only from the loop), adds the writer at once instead of a
  turn later; from any other thread (paho's connect runs in an executor) it is aiomqtt's own.
  Registering and unregistering are then both synchronous, so a writer is never added after
  the write it was for (which would leave a callback that finds nothing to write and is never
  removed: a loop spinning on a writable socket);
- :meth:`TableClient.publish_now`: a QoS 1 publish through paho's ``publish()``, written to the
  socket before it returns (paho's ``loop_write()``, as the writer callback would call it); a
  writer is added only for what does not fit in the socket's buffer; and the PUBACKs reported
  to one listener (:attr:`TableClient.on_acked`) from paho's ``on_publish``.

Never while paho holds its callback lock: paho's write takes that lock (a plain, non-reentrant
one) to report a QoS 0 publish, so a write from inside a paho callback on the loop's thread
would wait for itself for ever. :meth:`publish_now` then leaves the write to the writer callback,
and ``on_acked`` listeners must not publish (they are called inside that lock).

aiomqtt (pinned below 3) keeps paho in ``Client._client`` and the loop in ``Client._loop``, and
names the callbacks extended here ``_on_socket_register_write``, ``_on_socket_unregister_write``
and ``_on_publish``; paho's callback lock is ``_in_callback_mutex``: the private facts this
module relies on, checked by tests/integration/test_durable_direct.py against the installed
aiomqtt and paho.
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

    @property
    def paho(self) -> mqtt.Client:
        """The paho client under aiomqtt's."""
        return self._client

    def publish_now(self, topic: str, payload: str | bytes) -> int:
        """Queue ``payload`` on ``topic`` at QoS 1 and write it to the socket now; return paho's
        message id (its PUBACK goes to :attr:`on_acked`). Raises MqttCodeError where paho
        refuses it (the connection is gone).

        The writer paho asks for while it queues the message is not added to the loop if this
        call writes everything itself (two ``epoll_ctl`` calls and a handle less per message:
        a tenth of the daemon's CPU per shoe event, measured with py-spy); it is added where
        something is left to write, or where this call may not write (inside paho's callback
        lock)."""
        paho = self._client
        self._queueing = True
        try:
            info = paho.publish(topic, payload, qos=1)
        finally:
            self._queueing = False
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise MqttCodeError(info.rc, "Could not publish message")
        if paho.want_write() and not paho._in_callback_mutex.locked():
            self._write()
        if self._writer_owed:  # paho holds a writer registered: if bytes are left, it is
            self._writer_owed = False
            sock = paho.socket()
            if sock is not None:
                self._loop.add_writer(sock.fileno(), self._write)
        return info.mid

    # -- aiomqtt's paho callbacks, made synchronous on the loop's thread ----------------------

    def _on_socket_register_write(self, client: mqtt.Client, userdata: Any,
                                  sock: Any) -> None:
        if threading.get_ident() != self._loop_thread:
            super()._on_socket_register_write(client, userdata, sock)
        elif self._queueing:
            self._writer_owed = True
        else:
            self._loop.add_writer(sock.fileno(), self._write)

    def _on_socket_unregister_write(self, client: mqtt.Client, userdata: Any,
                                    sock: Any) -> None:
        self._writer_owed = False
        super()._on_socket_unregister_write(client, userdata, sock)

    def _write(self) -> None:
        """What aiomqtt's writer callback does: paho writes what it has queued; an exception
        (a broken pipe) is the connection's end."""
        try:
            self._client.loop_write()
        except Exception as exc:
            if not self._disconnected.done():
                self._disconnected.set_exception(exc)

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason_code: Any,
                    properties: Any) -> None:
        super()._on_publish(client, userdata, mid, reason_code, properties)
        listener = self.on_acked
        if listener is not None:
            listener(mid)
