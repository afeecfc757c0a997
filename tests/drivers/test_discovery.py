"""Discovery and hot-plug (drivers/discovery.py, issue 3): matching configured devices, tracking
their presence, the async stream from injected records and from pyudev's real netlink monitor,
and the udev rules' syntax (config/99-tabled.rules).

The real-monitor tests inject genuine libudev-format uevents over netlink (tests/uevents.py), so
pyudev's real kernel filter and parser are on the path; they need root and are skipped with
the reason where that cannot run.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pyudev
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.discovery import (
    BY_ID_DIR,
    DeviceChange,
    DeviceMatch,
    DeviceRecord,
    DeviceTracker,
    Discovery,
    UdevSource,
    parse_hex_id,
    record_from_pyudev,
)
from tabled.drivers.errors import DeviceError
from tests.uevents import UeventInjector, injection_unavailable, monitor_unavailable

RULES = Path(__file__).resolve().parents[2] / "config" / "99-tabled.rules"
SHOE_BY_ID = f"{BY_ID_DIR}usb-FTDI_tabled_shoe_A1B2-if00-port0"
T_EVENT = 5.0  # how long a test waits for an injected uevent to come through


def tty(action: str = "add", n: int = 0, *, vendor: str | None = "0403",
        model: str | None = "6001", serial: str | None = "A1B2",
        links: tuple[str, ...] = (SHOE_BY_ID,)) -> DeviceRecord:
    return DeviceRecord(action=action,  # type: ignore[arg-type]
                        subsystem="tty", device_node=f"/dev/ttyUSB{n}", links=links,
                        vendor_id=vendor, model_id=model, serial=serial,
                        sys_path=f"/sys/devices/pci0000:00/usb1/1-{n}/ttyUSB{n}/tty/ttyUSB{n}")


def dice(action: str = "add", serial: str | None = "D1") -> DeviceRecord:
    return DeviceRecord(action=action,  # type: ignore[arg-type]
                        subsystem="usb", device_node="/dev/bus/usb/001/007", vendor_id="1209",
                        model_id="D1CE", serial=serial, sys_path="/sys/devices/pci0000:00/usb1/1-7")


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# -- matching -------------------------------------------------------------------------------


def spellings(value: int) -> st.SearchStrategy[str]:
    """Every way a config or udev may write a 16-bit id: any case, padding, ``0x``."""
    return st.builds(
        lambda width, upper, prefix: (prefix + f"{value:0{width}x}".upper()
                                      if upper else prefix + f"{value:0{width}x}"),
        st.integers(1, 6), st.booleans(), st.sampled_from(["", "0x", "0X"]),
    )


@settings(max_examples=200)
@given(st.integers(0, 0xFFFF).flatmap(lambda v: st.tuples(spellings(v), spellings(v))))
def test_hex_ids_match_whatever_the_case_or_leading_zeros(pair: tuple[str, str]) -> None:
    configured, reported = pair
    assert DeviceMatch(vendor_id=configured).matches(tty(vendor=reported))
    assert DeviceMatch(model_id=configured).matches(tty(model=reported))


@settings(max_examples=200)
@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF))
def test_different_hex_ids_never_match(a: int, b: int) -> None:
    assert DeviceMatch(vendor_id=f"{a:x}").matches(tty(vendor=f"{b:04X}")) == (a == b)


@pytest.mark.parametrize("text", ["", "0x", "+403", "4_03", "\u0663", "10000", "g403", "04 03"])
def test_a_bad_configured_id_is_refused_at_load(text: str) -> None:
    with pytest.raises(ValueError):
        parse_hex_id(text)
    with pytest.raises(ValueError):
        DeviceMatch(vendor_id=text)


def test_a_device_reporting_a_garbage_id_matches_no_configured_id() -> None:
    assert not DeviceMatch(vendor_id="0403").matches(tty(vendor="zz"))
    assert not DeviceMatch(vendor_id="0403").matches(tty(vendor=None))


def test_a_match_must_identify_something() -> None:
    with pytest.raises(ValueError, match="needs"):
        DeviceMatch()
    with pytest.raises(ValueError, match="needs"):
        DeviceMatch(subsystem="tty")
    with pytest.raises(ValueError, match="subsystem"):
        DeviceMatch(serial="A1B2", subsystem="block")  # type: ignore[arg-type]


def test_serial_is_compared_exactly() -> None:
    assert DeviceMatch(serial="A1B2").matches(tty(serial="A1B2"))
    assert not DeviceMatch(serial="A1B2").matches(tty(serial="a1b2"))
    assert not DeviceMatch(serial="A1B2").matches(tty(serial=None))


@pytest.mark.parametrize(
    ("by_id", "expected"),
    [
        ("usb-FTDI_tabled_shoe_A1B2-if00-port0", True),
        ("usb-FTDI_*_A1B2-if00-port0", True),
        ("usb-FTDI_*_XXXX-if00-port0", False),
        (SHOE_BY_ID, True),
        ("/dev/serial/by-id/*shoe*", True),
        ("/dev/tabled/shoe-*", True),
        ("shoe-A1B2", False),  # a bare name is looked for in /dev/serial/by-id only
    ],
)
def test_by_id_names_and_globs(by_id: str, expected: bool) -> None:
    record = tty(links=(SHOE_BY_ID, "/dev/tabled/shoe-A1B2"))
    assert DeviceMatch(by_id=by_id).matches(record) is expected


def test_subsystem_tells_a_serial_port_from_its_usb_device() -> None:
    port = tty(vendor="1209", model="d1ce", serial="D1")
    either = DeviceMatch(vendor_id="1209", model_id="D1CE")
    usb_only = DeviceMatch(vendor_id="1209", model_id="D1CE", subsystem="usb")
    assert either.matches(port) and either.matches(dice())
    assert not usb_only.matches(port)
    assert usb_only.matches(dice())


records = st.builds(
    DeviceRecord,
    action=st.just("add"),
    subsystem=st.sampled_from(["tty", "usb"]),
    device_node=st.just("/dev/ttyUSB0"),
    links=st.lists(st.sampled_from([SHOE_BY_ID, f"{BY_ID_DIR}usb-other", "/dev/tabled/x"]),
                   max_size=2).map(tuple),
    vendor_id=st.sampled_from([None, "0403", "403", "1209"]),
    model_id=st.sampled_from([None, "6001", "d1ce"]),
    serial=st.sampled_from([None, "A1B2", "D1"]),
)
criteria = st.fixed_dictionaries({}, optional={
    "vendor_id": st.sampled_from(["0403", "1209"]),
    "model_id": st.sampled_from(["6001", "D1CE"]),
    "serial": st.sampled_from(["A1B2", "D1"]),
    "by_id": st.sampled_from(["usb-FTDI_*", "usb-other", "/dev/tabled/*"]),
    "subsystem": st.sampled_from(["tty", "usb"]),
})


@settings(max_examples=300)
@given(records, criteria.filter(lambda given: given.keys() - {"subsystem"}))
def test_a_match_is_the_conjunction_of_its_criteria(record: DeviceRecord,
                                                    given: dict[str, Any]) -> None:
    each = [record.subsystem == value if key == "subsystem"
            else DeviceMatch(**{key: value}).matches(record) for key, value in given.items()]
    assert DeviceMatch(**given).matches(record) == all(each)


# -- records and URLs -----------------------------------------------------------------------


def test_url_prefers_the_by_id_link_to_the_node() -> None:
    assert tty(links=("/dev/tabled/shoe-A1B2", SHOE_BY_ID)).url() == SHOE_BY_ID
    assert tty(links=("/dev/tabled/shoe-A1B2",)).url() == "/dev/ttyUSB0"


def test_usb_url_names_the_ids_and_the_serial() -> None:
    assert dice().url() == "usb://1209:d1ce?serial=D1"
    assert dice(serial=None).url() == "usb://1209:d1ce"
    odd = DeviceRecord(action="add", subsystem="usb", device_node=None, vendor_id="403",
                       model_id="6001", serial="A B&C", sys_path="/sys/x")
    assert odd.url() == "usb://0403:6001?serial=A+B%26C"


def test_a_record_without_anything_to_open_has_no_url() -> None:
    with pytest.raises(ValueError, match="vendor/model"):
        DeviceRecord(action="add", subsystem="usb", device_node="/dev/bus/usb/001/002").url()
    with pytest.raises(ValueError, match="node"):
        DeviceRecord(action="add", subsystem="tty", device_node=None, sys_path="/sys/x").url()


def test_a_record_is_validated() -> None:
    with pytest.raises(ValueError, match="action"):
        tty(action="change")
    with pytest.raises(ValueError, match="subsystem"):
        DeviceRecord(action="add", subsystem="block",  # type: ignore[arg-type]
                     device_node="/dev/sda")
    with pytest.raises(ValueError, match="sys_path or a device_node"):
        DeviceRecord(action="add", subsystem="tty", device_node=None)


class FakeUdevDevice:
    """The pyudev.Device members record_from_pyudev reads: this machine has no USB device to
    show the sysfs fallback (no udev, so no ID_* properties) for real."""

    def __init__(self, properties: dict[str, str], *, subsystem: str = "tty",
                 device_type: str | None = None, attributes: dict[str, str] | None = None,
                 usb_parent: FakeUdevDevice | None = None) -> None:
        self.properties = properties
        self.subsystem = subsystem
        self.device_type = device_type
        self.device_node = "/dev/ttyUSB3"
        self.device_links = iter([SHOE_BY_ID])
        self.sys_path = "/sys/devices/x/ttyUSB3"
        self.attributes = self
        self._attributes = attributes or {}
        self._usb_parent = usb_parent

    def asstring(self, name: str) -> str:
        return self._attributes[name]

    def find_parent(self, subsystem: str, device_type: str) -> FakeUdevDevice | None:
        assert (subsystem, device_type) == ("usb", "usb_device")
        return self._usb_parent


def test_record_from_pyudev_reads_udev_properties() -> None:
    device = FakeUdevDevice({"ID_VENDOR_ID": "0403", "ID_MODEL_ID": "6001",
                             "ID_SERIAL_SHORT": "A1B2"})
    assert record_from_pyudev(device, "add") == replace(tty(n=3), sys_path=device.sys_path)


def test_without_udev_ids_come_from_the_usb_device_in_sysfs() -> None:
    usb = FakeUdevDevice({}, subsystem="usb", device_type="usb_device",
                         attributes={"idVendor": "0403", "idProduct": "6001", "serial": "A1B2"})
    record = record_from_pyudev(FakeUdevDevice({}, usb_parent=usb), "present")
    assert (record.vendor_id, record.model_id, record.serial) == ("0403", "6001", "A1B2")
    itself = record_from_pyudev(usb, "present")
    assert (itself.subsystem, itself.vendor_id, itself.serial) == ("usb", "0403", "A1B2")
    no_usb = record_from_pyudev(FakeUdevDevice({}), "present")  # a built-in UART
    assert (no_usb.vendor_id, no_usb.model_id, no_usb.serial) == (None, None, None)
    no_serial = FakeUdevDevice({}, subsystem="usb", device_type="usb_device",
                               attributes={"idVendor": "1209", "idProduct": "d1ce"})
    assert record_from_pyudev(no_serial, "present").serial is None


# -- presence tracking (sans-IO) ------------------------------------------------------------

MATCHES = {
    "shoe-1": DeviceMatch(vendor_id="0403", model_id="6001", serial="A1B2", subsystem="tty"),
    "dice-1": DeviceMatch(vendor_id="1209", model_id="d1ce", subsystem="usb"),
}


def test_tracker_answers_adds_and_removes_of_configured_devices() -> None:
    tracker = DeviceTracker(MATCHES)
    added = tracker.feed(tty())
    assert added == DeviceChange("shoe-1", tty())
    assert dict(tracker.present) == {tty().key: added}
    assert tracker.feed(tty(serial="ZZZZ", n=1)) is None
    assert tracker.feed(tty()) is None  # seen by the monitor and by enumeration
    # A kernel remove carries no ids or links: the change repeats what was added.
    bare_remove = DeviceRecord(action="remove", subsystem="tty", device_node="/dev/ttyUSB0",
                               sys_path=tty().sys_path)
    assert tracker.feed(bare_remove) == DeviceChange("shoe-1", tty(action="remove"))
    assert tracker.feed(tty(action="remove")) is None
    assert tracker.feed(tty(action="remove", n=5, serial="QQ")) is None
    assert tracker.present == {}
    assert tracker.counters == {"unmatched": 2, "duplicate_add": 1, "unknown_remove": 1}


def test_tracker_gives_an_ambiguous_record_to_the_first_configured_device() -> None:
    tracker = DeviceTracker({"a": DeviceMatch(vendor_id="0403"), "b": DeviceMatch(serial="A1B2")})
    change = tracker.feed(tty())
    assert change is not None and change.device_id == "a"
    assert tracker.counters["ambiguous"] == 1


tracked = st.lists(
    st.builds(lambda action, n, serial: tty(action, n, serial=serial),
              st.sampled_from(["add", "present", "remove"]), st.integers(0, 3),
              st.sampled_from(["A1B2", "OTHER"])),
    max_size=40,
)


@settings(max_examples=300)
@given(tracked)
def test_tracker_stream_alternates_and_accounts_for_every_record(
    fed: list[DeviceRecord],
) -> None:
    """Per device, changes alternate found/removed starting with found; every record is either
    a change or a counted drop; what is present is what was found and not removed since."""
    tracker = DeviceTracker({"shoe-1": DeviceMatch(serial="A1B2")})
    changes = [c for c in map(tracker.feed, fed) if c is not None]
    last: dict[str, str] = {}
    for change in changes:
        removing = change.record.action == "remove"
        assert (last.get(change.record.key) == "in") == removing
        last[change.record.key] = "out" if removing else "in"
        assert change.record.serial == "A1B2"
    assert len(changes) + sum(tracker.counters.values()) == len(fed)
    assert set(tracker.present) == {key for key, state in last.items() if state == "in"}


# -- the async stream, injected -------------------------------------------------------------


async def collect(discovery: Discovery) -> list[DeviceChange]:
    async with asyncio.timeout(T_EVENT):
        return [change async for change in discovery]


async def test_injected_records_give_the_configured_devices_changes() -> None:
    fds_before = open_fds()
    async with Discovery(MATCHES) as discovery:
        consumer = asyncio.create_task(collect(discovery))
        for record in (tty(), tty(n=1, serial="OTHER"), tty(), dice(),
                       tty(action="remove", n=2), tty(action="remove"), dice(action="remove")):
            discovery.inject(record)
            await asyncio.sleep(0)  # the consumer sees each as it comes
    assert await consumer == [
        DeviceChange("shoe-1", tty()),
        DeviceChange("dice-1", dice()),
        DeviceChange("shoe-1", tty(action="remove")),
        DeviceChange("dice-1", dice(action="remove")),
    ]
    assert discovery.counters() == {"unmatched": 1, "duplicate_add": 1, "unknown_remove": 1}
    assert discovery.present == {}
    assert open_fds() == fds_before


async def test_a_closed_discovery_ends_and_refuses_more() -> None:
    discovery = Discovery(MATCHES)
    discovery.start()
    with pytest.raises(RuntimeError, match="once"):
        discovery.start()
    discovery.inject(tty())
    discovery.close()
    discovery.close()
    assert await collect(discovery) == [DeviceChange("shoe-1", tty())]
    assert await collect(discovery) == []  # every later iteration ends at once
    with pytest.raises(RuntimeError, match="closed"):
        discovery.inject(tty(n=1))


def test_subsystems_listened_to_follow_the_matches() -> None:
    assert Discovery.subsystems(MATCHES.values()) == {"tty", "usb"}
    assert Discovery.subsystems([MATCHES["shoe-1"]]) == {"tty"}
    assert Discovery.subsystems([DeviceMatch(serial="A1B2")]) == {"tty", "usb"}


# -- the real pyudev source -----------------------------------------------------------------

@pytest.fixture
def injector() -> Iterator[UeventInjector]:
    reason = injection_unavailable()
    if reason:
        pytest.skip(reason)
    sender = UeventInjector()
    yield sender
    sender.close()


def enumerated_count() -> int:
    context = pyudev.Context()
    return (len(list(context.list_devices(subsystem="tty")))
            + len(list(context.list_devices(subsystem="usb", DEVTYPE="usb_device"))))


async def test_real_enumeration_does_not_crash_nor_leak() -> None:
    reason = monitor_unavailable()
    if reason:
        pytest.skip(reason)
    fds_before = open_fds()
    matches = {"shoe-1": DeviceMatch(serial=uuid.uuid4().hex)}
    async with Discovery(matches, udev=True) as discovery:
        assert discovery.present == {}
        assert discovery.counters()["unmatched"] == enumerated_count() > 0
    assert await collect(discovery) == []
    assert open_fds() == fds_before
    # Every real tty gives a record a driver could open.
    for device in pyudev.Context().list_devices(subsystem="tty"):
        assert record_from_pyudev(device, "present").url().startswith("/dev/")


async def test_a_real_uevent_reaches_discovery_through_pyudevs_filter(
    injector: UeventInjector,
) -> None:
    fds_before = open_fds()
    matches = {"shoe-1": DeviceMatch(vendor_id="403", model_id="6001", serial=injector.tag,
                                     subsystem="tty")}
    async with Discovery(matches, udev=True) as discovery:
        unmatched = discovery.counters()["unmatched"]
        # The kernel drops this one (filter: tty only) before it reaches the process.
        injector.send("add", f"sdTABLED{injector.tag}", subsystem="block",
                      ID_SERIAL_SHORT=injector.tag)
        injector.send("change", f"ttyTABLED{injector.tag}")  # not a presence change
        injector.send("add", f"ttyTABLED{injector.tag}", SEQNUM="")  # malformed: no seqnum
        injector.shoe("add")
        async with asyncio.timeout(T_EVENT):
            found = await anext(discovery)
        name = f"ttyTABLED{injector.tag}"
        by_id = f"{BY_ID_DIR}usb-FTDI_tabled_{injector.tag}-if00-port0"
        assert found == DeviceChange("shoe-1", DeviceRecord(
            action="add", subsystem="tty", device_node=f"/dev/{name}",
            links=(by_id, f"/dev/tabled/shoe-{injector.tag}"), vendor_id="0403",
            model_id="6001", serial=injector.tag, sys_path=f"/sys/devices/virtual/tty/{name}",
        ))
        assert found.record.url() == by_id
        injector.shoe("add")  # udev says it twice: still one device
        injector.shoe("remove")
        async with asyncio.timeout(T_EVENT):
            gone = await anext(discovery)
        assert gone == DeviceChange("shoe-1", replace(found.record, action="remove"))
        counters = discovery.counters()
        assert counters["unmatched"] == unmatched
        assert (counters["ignored_action"], counters["duplicate_add"]) == (1, 1)
        assert counters["bad_message"] == 1
    assert open_fds() == fds_before


async def test_a_remove_lost_to_overflow_is_recovered_by_reenumeration(
    injector: UeventInjector,
) -> None:
    matches = {"shoe-1": DeviceMatch(serial=injector.tag, subsystem="tty")}
    # The kernel's smallest receive buffer holds a couple of events: a burst overflows it.
    async with Discovery(matches, udev=True, receive_buffer_size=1) as discovery:
        injector.shoe("add")
        async with asyncio.timeout(T_EVENT):
            found = await anext(discovery)
        for n in range(30):  # sent while the loop is busy here: nobody reads them
            injector.send("add", f"ttyBURST{injector.tag}{n}")
        injector.shoe("remove")  # lost: the buffer is full
        async with asyncio.timeout(T_EVENT):
            gone = await anext(discovery)
        assert gone == DeviceChange("shoe-1", replace(found.record, action="remove"))
        assert discovery.counters()["monitor_overflow"] >= 1
        assert discovery.present == {}


class BreakingSource(UdevSource):
    """A real udev source whose socket is swapped, once open, for one with a pending error
    that is not an overflow (a Unix socket whose peer closed with data unread: ECONNRESET)."""

    def open(self) -> list[DeviceRecord]:
        records = super().open()
        broken, peer = socket.socketpair()
        broken.send(b"unread")
        peer.close()
        os.dup2(broken.fileno(), self.fileno())
        broken.close()
        return records


async def test_a_broken_monitor_ends_the_iteration_with_a_device_error() -> None:
    reason = monitor_unavailable()
    if reason:
        pytest.skip(reason)
    fds_before = open_fds()
    discovery = Discovery({"shoe-1": DeviceMatch(serial="A1B2")}, udev=True)
    discovery.source = BreakingSource(["tty"])
    async with discovery:
        with pytest.raises(DeviceError) as failed:
            await collect(discovery)
        assert failed.value.reason == "udev_monitor_failed"
        with pytest.raises(RuntimeError, match="closed"):
            discovery.inject(tty())
    assert open_fds() == fds_before


# -- udev rules -----------------------------------------------------------------------------

MATCH_KEYS = {"ACTION", "DEVPATH", "KERNEL", "KERNELS", "NAME", "SYMLINK", "SUBSYSTEM",
              "SUBSYSTEMS", "DRIVER", "DRIVERS", "ATTR", "ATTRS", "SYSCTL", "ENV", "CONST",
              "TAG", "TAGS", "TEST", "PROGRAM", "RESULT"}
ASSIGN_KEYS = {"NAME", "SYMLINK", "OWNER", "GROUP", "MODE", "SECLABEL", "ATTR", "SYSCTL", "ENV",
               "TAG", "RUN", "LABEL", "GOTO", "IMPORT", "OPTIONS"}
KEYS_WITH_ATTRIBUTE = {"ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TEST", "IMPORT", "RUN",
                       "SECLABEL"}
KEYS_NEEDING_ATTRIBUTE = {"ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "SECLABEL"}
RULE_TOKEN = re.compile(
    r'(?P<key>[A-Z]+)(?:\{(?P<attribute>[^{}]+)\})?\s*(?P<op>==|!=|\+=|-=|:=|=)\s*'
    r'"(?P<value>(?:[^"\\]|\\.)*)"\s*(?:,\s*|$)'
)


def rule_lines(text: str) -> list[str]:
    """Logical rule lines: continuations joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def parse_rule(line: str) -> list[tuple[str, str | None, str, str]]:
    tokens, pos = [], 0
    while pos < len(line):
        token = RULE_TOKEN.match(line, pos)
        assert token, f"not key/operator/value at {line[pos:]!r}"
        tokens.append((token["key"], token["attribute"], token["op"], token["value"]))
        pos = token.end()
    return tokens


def test_udev_rules_parse_key_operator_value() -> None:
    rules = [parse_rule(line) for line in rule_lines(RULES.read_text())]
    assert rules
    labels = {value for rule in rules for key, _, _, value in rule if key == "LABEL"}
    for rule in rules:
        for key, attribute, op, value in rule:
            matching = op in ("==", "!=")
            assert key in (MATCH_KEYS if matching else ASSIGN_KEYS), (key, op)
            if attribute is not None:
                assert key in KEYS_WITH_ATTRIBUTE, key
            if key in KEYS_NEEDING_ATTRIBUTE:
                assert attribute, key
            if key == "GOTO":
                assert value in labels
            if key == "MODE":
                assert value == "0660"
            if key == "GROUP":
                assert value == "tabled"


def test_udev_rules_give_the_devices_group_access_and_stable_names() -> None:
    rules = [parse_rule(line) for line in rule_lines(RULES.read_text())]
    grants = [rule for rule in rules if ("GROUP", None, "=", "tabled") in rule]
    matched_ttys = [rule for rule in grants if ("SUBSYSTEM", None, "==", "tty") in rule]
    dice_rules = [rule for rule in grants if ("SUBSYSTEM", None, "==", "usb") in rule]
    assert len(matched_ttys) == 2  # the shoe and the shuffler
    assert len(dice_rules) == 1 and ("ATTRS", "idVendor", "==", "1209") in dice_rules[0]
    for rule in grants:
        assert ("MODE", None, "=", "0660") in rule
    symlinks = [value for rule in rules for key, _, op, value in rule
                if key == "SYMLINK" and op == "+="]
    assert symlinks == ["tabled/$env{TABLED_FAMILY}-$env{ID_SERIAL_SHORT}"]


def test_udevadm_verify_accepts_the_rules() -> None:
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        pytest.skip("udevadm is not installed here")
    probe = subprocess.run([udevadm, "verify", "--help"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("this udevadm has no verify (systemd < 253)")
    result = subprocess.run([udevadm, "verify", str(RULES)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
