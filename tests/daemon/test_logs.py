"""Log lines (issue 10, item 2): a broker error at warning is one short line, and no traceback at
any level shows a frame's local variables, in JSON (under systemd) or on a terminal, whoever
logs it (the daemon through structlog, paho and aiomqtt through the standard library)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Literal

import aiomqtt
import pytest
import structlog

from tabled.contract.logs import configure

#: A local variable of the failing frame: it must never reach a log line.
SECRET = "hunter2-face-down-AS"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    mqtt_level = logging.getLogger("mqtt").level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("mqtt").setLevel(mqtt_level)


def broker_fails() -> None:
    password = SECRET  # noqa: F841 - a local the traceback must not show
    raise aiomqtt.MqttError("[Errno 111] Connection refused")


def lines_of(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_a_broker_error_at_warning_is_one_short_line(fmt: Literal["json", "console"]) -> None:
    stream = io.StringIO()
    configure("info", fmt, stream=stream, static={"table": "lab/t1"})
    log = structlog.get_logger("tabled.test")
    try:
        broker_fails()
    except aiomqtt.MqttError:
        log.warning("broker_lost", url="mqtt://127.0.0.1:1883", exc_info=True)
        logging.getLogger("mqtt").warning("paho: connection failed", exc_info=True)
    lines = lines_of(stream)
    assert len(lines) == 2, lines
    for line in lines:
        assert len(line.encode()) < 400, line
        assert "MqttError: [Errno 111] Connection refused" in line
        assert SECRET not in line and "Traceback" not in line
    if fmt == "json":
        first = json.loads(lines[0].removeprefix("<4>"))
        assert first["event"] == "broker_lost" and first["table"] == "lab/t1"
        assert first["error"] == "MqttError: [Errno 111] Connection refused"
        assert lines[1].startswith("<4>")


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_a_bug_keeps_its_traceback_without_locals(fmt: Literal["json", "console"]) -> None:
    stream = io.StringIO()
    configure("info", fmt, stream=stream)
    log = structlog.get_logger("tabled.test")
    try:
        broker_fails()
    except aiomqtt.MqttError:
        log.exception("task_failed", task="mqtt")
        logging.getLogger("mqtt").error("paho: callback failed", exc_info=True)
    text = stream.getvalue()
    assert "broker_fails" in text  # the frames are there
    assert SECRET not in text  # their locals are not
    if fmt == "json":
        assert all(line.startswith("<3>{") for line in lines_of(stream))


def test_at_debug_the_traceback_is_there_without_locals() -> None:
    stream = io.StringIO()
    configure("debug", "json", stream=stream)
    try:
        broker_fails()
    except aiomqtt.MqttError:
        structlog.get_logger("tabled.test").debug("broker_detail", exc_info=True)
    (line,) = lines_of(stream)
    assert "broker_fails" in line and SECRET not in line
