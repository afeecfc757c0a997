"""The private names of aiomqtt and paho that tabled relies on, checked against the installed
libraries (tabled.contract.mqttprivate, docs/design.md "Private library uses"): each name is
there with the signature the adapter overrides or calls, and behaves as relied on against a
real Mosquitto. Should a new aiomqtt or paho change one of them, a test here fails before the
daemon does; the versions installed must be those pyproject.toml pins.

Also the one library use that is public and was private before: the pit's batch of received
messages, through aiomqtt's documented ``queue_type``."""

from __future__ import annotations

import asyncio
import inspect
import re
import signal
import threading
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiomqtt
import paho.mqtt.client as mqtt
import pytest
from packaging.requirements import Requirement

from tabled.contract.asyncmqtt import Client
from tabled.contract.mqttprivate import AdaptedClient
from tabled.daemon.broker import Mosquitto
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_libraries_are_the_pinned_ones() -> None:
    pins = {Requirement(dep).name: Requirement(dep) for dep in
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name in ("aiomqtt", "paho-mqtt"):
        spec = pins[name].specifier
        assert spec.contains(version(name)), f"{name} {version(name)} is not {spec}"
        # narrow: no minor release outside what the adapter was checked against
        upper = [s for s in spec if s.operator in ("<", "<=", "==")]
        assert upper and re.fullmatch(r"\d+\.\d+(\.\d+)?(\.\*)?", upper[0].version)
        assert not any(s.operator == "<" and s.version.count(".") == 0 for s in spec), (
            f"{name}: a major-version bound is not narrow enough: {spec}")


def test_the_overridden_callbacks_and_the_wait_have_the_signatures_relied_on() -> None:
    def params(function: Any) -> list[str]:
        return list(inspect.signature(function).parameters)
    assert params(aiomqtt.Client._wait_for) == ["self", "fut", "timeout"]
    assert inspect.iscoroutinefunction(aiomqtt.Client._wait_for)
    for name in ("_on_socket_register_write", "_on_socket_unregister_write"):
        assert params(getattr(aiomqtt.Client, name)) == ["self", "client", "userdata", "sock"]
    assert params(aiomqtt.Client._on_publish) == [
        "self", "client", "userdata", "mid", "reason_code", "properties"]
    assert "queue_type" in params(aiomqtt.Client.__init__)


async def test_the_internals_are_where_the_adapter_reads_them() -> None:
    client = AdaptedClient("127.0.0.1", 1)
    assert isinstance(client.paho, mqtt.Client)
    assert client.loop is asyncio.get_running_loop()
    assert isinstance(client._disconnected, asyncio.Future)
    # paho calls the adapter's callbacks, which hand on to its hooks
    assert client.paho.on_publish == client._on_publish
    assert client.paho.on_socket_register_write == client._on_socket_register_write
    assert client.paho.on_socket_unregister_write == client._on_socket_unregister_write
    lock = client.paho._in_callback_mutex
    assert isinstance(lock, type(threading.Lock()))  # plain: a write inside it waits for ever
    assert not client.in_paho_callback()
    with lock:
        assert client.in_paho_callback()
    assert client.may_hold_will() is False  # no socket before a connection
    assert not client.left_cleanly()


class Hooked(Client):
    """The adapter's hooks, recorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, Any]] = []

    def writer_wanted(self, sock: Any) -> None:
        self.calls.append(("wanted", threading.get_ident()))
        super().writer_wanted(sock)

    def writer_not_wanted(self, sock: Any) -> None:
        self.calls.append(("not_wanted", None))
        super().writer_not_wanted(sock)

    def acknowledged(self, mid: int) -> None:
        self.calls.append(("acked", mid))


async def test_the_hooks_are_called_as_paho_writes_and_reads_its_acknowledgements(
        broker: Mosquitto) -> None:
    async with Hooked("127.0.0.1", broker.port) as client:
        assert client.may_hold_will()  # connected: paho has its socket
        client.calls.clear()
        info_mid = []
        original = client.paho.publish

        def publish(*args: Any, **kwargs: Any) -> mqtt.MQTTMessageInfo:
            info = original(*args, **kwargs)
            info_mid.append(info.mid)
            return info
        client.paho.publish = publish  # type: ignore[method-assign]
        async with asyncio.timeout(10):
            await client.publish("t/hooks", "x", qos=1)  # aiomqtt's way, through the hooks
        kinds = [kind for kind, _ in client.calls]
        assert "wanted" in kinds and "not_wanted" in kinds
        assert ("acked", info_mid[0]) in client.calls  # after aiomqtt's own waiter was told
        # and what the writer callback does, done by hand: paho writes what it has queued
        client.paho.publish("t/hooks", "y", qos=0)
        assert client.paho.want_write()
        client.write_now()
        assert not client.paho.want_write()
    assert client.left_cleanly()  # our DISCONNECT ended it


async def test_a_connection_the_broker_ends_did_not_end_cleanly(broker: Mosquitto) -> None:
    assert broker.process is not None
    client = Client("127.0.0.1", broker.port)
    with pytest.raises(aiomqtt.MqttError):
        async with client:
            broker.process.send_signal(signal.SIGKILL)
            async with asyncio.timeout(10):
                async for _ in client.messages:
                    pass
    assert not client.left_cleanly()


async def test_a_refused_connection_holds_no_will() -> None:
    client = Client("127.0.0.1", 1, timeout=2)  # nothing listens there
    with pytest.raises(aiomqtt.MqttError):
        async with client:
            pass
    assert client.may_hold_will() is False


async def test_end_connection_ends_the_message_iterator_with_its_error(
        broker: Mosquitto) -> None:
    async with Client("127.0.0.1", broker.port) as client:
        await client.subscribe("t/#", qos=1)
        client.end_connection(OSError("broken pipe"))
        with pytest.raises(aiomqtt.MqttError, match="Disconnected") as caught:
            async with asyncio.timeout(10):
                async for _ in client.messages:
                    pass
        assert isinstance(caught.value.__cause__, OSError)


async def test_the_received_messages_are_taken_without_a_wait_each(broker: Mosquitto) -> None:
    async with (Client("127.0.0.1", broker.port) as sub, Client("127.0.0.1", broker.port) as pub):
        await sub.subscribe("t/batch/#", qos=1)
        for n in range(5):
            await pub.publish(f"t/batch/{n}", str(n), qos=1)
        await until(lambda: len(sub.messages) == 5)
        first = await anext(sub.messages)
        rest = sub.waiting(3)
        assert [str(m.topic) for m in [first, *rest]] == [f"t/batch/{n}" for n in range(4)]
        assert len(sub.messages) == 1  # the queue aiomqtt reads is the one taken from
        assert [str(m.topic) for m in sub.waiting(10)] == ["t/batch/4"]
        assert sub.waiting(10) == []
