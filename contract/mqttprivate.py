"""Every private name of aiomqtt and paho-mqtt that tabled uses, and nothing else.

Owns :class:`AdaptedClient`, an :class:`aiomqtt.Client` that gives the few library internals
tabled needs public names of its own, so that no other module touches a private one:

- a wait for an acknowledgement that a cancellation always stops (``_wait_for``);
- the paho client and the event loop under aiomqtt's (``_client``, ``_loop``), and paho's
  callback lock (``_in_callback_mutex``): the table's direct publish;
- paho's writer registration and PUBACK callbacks as aiomqtt handles them
  (``_on_socket_register_write``, ``_on_socket_unregister_write``, ``_on_publish``), handed to
  hooks a subclass may override (:meth:`AdaptedClient.writer_wanted`, ...);
- how the connection ended (``_disconnected``): the table's status numbers.

Why each is kept, with what it was measured to buy: docs/design.md, "Private library uses". The
versions it was written against are pinned in pyproject.toml, and
tests/integration/test_mqtt_private.py fails when an installed aiomqtt or paho no longer has a
name, a signature or a behaviour relied on here. It never adds behaviour of its own: every hook
does what aiomqtt does unless a subclass says otherwise.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiomqtt
import paho.mqtt.client as mqtt
from aiomqtt.exceptions import MqttError

T = TypeVar("T")


class AdaptedClient(aiomqtt.Client):
    """aiomqtt's client, its internals reached only through the public names below."""

    # -- 1. the acknowledgement wait: a cancellation always stops it -------------------------

    async def _wait_for(self, fut: Awaitable[T], timeout: float | None) -> T:  # noqa: ASYNC109 (aiomqtt's)
        """aiomqtt waits for every acknowledgement (PUBACK, SUBACK, CONNACK, the end of a
        DISCONNECT) with :func:`asyncio.wait_for`, which on Python 3.11 loses a cancellation
        that arrives in the same turn of the loop as the acknowledgement (CPython gh-86296):
        here the wait is 3.12's, a timeout around the awaited future itself."""
        if timeout is None:
            timeout = self.timeout
        try:
            async with asyncio.timeout(None if timeout == math.inf else timeout):
                return await fut
        except TimeoutError:
            raise MqttError("Operation timed out") from None

    # -- 2. what is under the client -----------------------------------------------------------

    @property
    def paho(self) -> mqtt.Client:
        """The paho client under aiomqtt's."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop aiomqtt runs paho on (the one running when the client was made)."""
        return self._loop

    def in_paho_callback(self) -> bool:
        """Does paho hold its callback lock (a plain, non-reentrant lock that its write takes
        to report a QoS 0 publish)? A write from here would then wait for itself for ever."""
        return bool(self._client._in_callback_mutex.locked())

    def end_connection(self, exc: BaseException) -> None:
        """End the connection with ``exc``, as aiomqtt does when paho's write fails: the
        message iterator and every wait for an acknowledgement raise it."""
        if not self._disconnected.done():
            self._disconnected.set_exception(exc)

    # -- 3. how the connection ended -----------------------------------------------------------

    def left_cleanly(self) -> bool:
        """Did the connection end with our DISCONNECT (so that the broker dropped the will)?"""
        ended = self._disconnected
        return ended.done() and not ended.cancelled() and ended.exception() is None

    def may_hold_will(self) -> bool:
        """After a connection attempt without a CONNACK: may the broker have taken our
        CONNECT, and with it the will? Not if paho has no socket (no connection was made, or
        it was closed: a broker does not close a connection it accepted without a CONNACK)."""
        return self._client.socket() is not None

    # -- 4. paho's callbacks, as hooks -----------------------------------------------------------

    def writer_wanted(self, sock: Any) -> None:
        """paho has bytes for ``sock``: aiomqtt adds a writer callback to the loop, through
        ``call_soon_threadsafe`` (paho's connect runs in an executor thread)."""
        super()._on_socket_register_write(self._client, None, sock)

    def writer_not_wanted(self, sock: Any) -> None:
        """paho has nothing left for ``sock``: aiomqtt removes the writer callback."""
        super()._on_socket_unregister_write(self._client, None, sock)

    def write_now(self) -> None:
        """What aiomqtt's writer callback does: paho writes what it has queued; an exception
        (a broken pipe) is the connection's end."""
        try:
            self._client.loop_write()
        except Exception as exc:
            self.end_connection(exc)

    def acknowledged(self, mid: int) -> None:
        """paho read the acknowledgement of message ``mid`` (a PUBACK), inside its callback
        lock, after aiomqtt's own waiter was told. Nothing by default."""

    def _on_socket_register_write(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        self.writer_wanted(sock)

    def _on_socket_unregister_write(self, client: mqtt.Client, userdata: Any,
                                    sock: Any) -> None:
        self.writer_not_wanted(sock)

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason_code: Any,
                    properties: Any) -> None:
        super()._on_publish(client, userdata, mid, reason_code, properties)
        self.acknowledged(mid)
