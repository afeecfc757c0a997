"""The serial transport's read (drivers/serial_device.py ``_PortTransport``: one ``os.read`` when
the loop finds the port readable, instead of pyserial's ``read()``), on a real pseudo-terminal:
every byte arrives, in order; a port whose other side goes away ends the connection with
the words pyserial's own read has for it."""

from __future__ import annotations

import asyncio
import os
import pty

import serial

from tabled.drivers.serial_device import _connect, _PortTransport


class Recorder(asyncio.Protocol):
    def __init__(self) -> None:
        self.data = bytearray()
        self.transport: asyncio.BaseTransport | None = None
        self.arrived = asyncio.Event()
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.data += data
        self.arrived.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set_result(exc)


async def test_every_byte_arrives_and_a_vanished_peer_ends_the_connection() -> None:
    master, slave = pty.openpty()
    name = os.ttyname(slave)
    recorder = Recorder()
    protocol = await _connect(asyncio.get_running_loop(), lambda: recorder,  # type: ignore[arg-type,return-value]
                              name, baudrate=115200, exclusive=True)
    assert protocol is recorder
    sent = bytearray()
    async with asyncio.timeout(10):
        for n in range(50):
            chunk = bytes([n]) * (1 + n % 7)
            os.write(master, chunk)
            sent += chunk
            while len(recorder.data) < len(sent):
                recorder.arrived.clear()
                await recorder.arrived.wait()
        assert isinstance(recorder.transport, _PortTransport)
        assert bytes(recorder.data) == bytes(sent)
        os.close(slave)
        os.close(master)  # the device side is gone: the port reads EIO
        exc = await recorder.lost
    assert isinstance(exc, serial.SerialException)
    assert str(exc) == what_pyserial_says_of_a_vanished_peer()


def what_pyserial_says_of_a_vanished_peer() -> str:
    master, slave = pty.openpty()
    port = serial.Serial(os.ttyname(slave), timeout=0)
    os.close(slave)
    os.close(master)
    try:
        port.read(1024)
    except serial.SerialException as exc:
        return str(exc)
    finally:
        port.close()
    raise AssertionError("pyserial read a vanished pty without an error")
