"""The electronic dice sensor, simulated: ``tabled-sim dice``.

Owns the device's side of docs/protocols/dice.md: a script of throws (seeded random or given
with ``--rolls``), the numbered reports it keeps until the host acknowledges them, its STATUS
heartbeat, its answers to the vendor control requests, and fault injection. It is served on the
simulated USB bus of :mod:`tabled.simulators.usb_backend`, so a driver reaches it through pyusb
exactly
as it reaches the real sensor. It never decides what a driver should see: it only plays the
device, encoding with the driver's own :mod:`tabled.drivers.dice.protocol`.

A loaded die (``--bias FACE:P[,FACE:P...]``, with ``--biased-die 1|2|both``): the listed faces
come up with those probabilities, the faces not listed share what is left equally
(``--bias 6:0.25``: a six one throw in four, each other face 0.15). Without it both dice are fair.
:func:`random_rolls` is the one place rolls are drawn: the simulator and the integrity
calibration (``bench/integrity.py``) both use it.

Faults (``--fault KIND@N[:ARG]``, repeatable) name the N-th event report the sensor produces
(1-based; heartbeats and resends do not count):

- what happens at the table: ``off_table@N[:DICE]`` (report N is a no-roll: DICE 1, 2 or 3 for
  both left the table; default 2), ``cocked@N[:DICE]`` (roll N has a cocked die, default 2),
  ``sensor@N[:CODE]`` (report N is a sensor fault, CODE 1-5, default 1). A no-roll and a
  sensor fault are extra reports: the scripted rolls all still come, in order;
- what happens to report N on its way: ``drop@N`` (lost), ``corrupt@N`` (one bit flipped),
  ``truncate@N`` (half a packet), ``garbage@N[:LEN]`` (LEN junk bytes first, default 8),
  ``stall@N[:SECS]`` (the endpoint answers nothing for SECS, default 1), ``unplug@N[:SECS]`` or
  ``disconnect@N[:SECS]`` (the device is gone for SECS, default 1, then enumerates again).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from tabled.contract.events import Event
from tabled.contract.faults import COCKED_DIE, SENSOR_FAULT
from tabled.drivers.dice.driver import normalize
from tabled.drivers.dice.protocol import (
    INTERFACE,
    NUMBER_MODULO,
    POLL_INTERVAL_MS,
    PRODUCT_ID,
    PROTOCOL_VERSION,
    REPORT_ENDPOINT,
    REPORT_SIZE,
    REQUEST_TYPE_IN,
    REQUEST_TYPE_OUT,
    RETAINED_REPORTS,
    T_STATUS,
    VENDOR_ID,
    DeviceInfo,
    EventReport,
    NoRollReport,
    Request,
    ResendReply,
    RollReport,
    SensorFaultCode,
    SensorFaultReport,
    SensorState,
    StatusReport,
    encode_info,
    encode_report,
    encode_resend_reply,
    join_number,
    number_is_ahead,
)
from tabled.simulators.faults import FaultSpecError, parse_spec
from tabled.simulators.games import played_on
from tabled.simulators.ledger import Ledger
from tabled.simulators.registry import DeviceScript, DeviceSide, SimulatorPlugin
from tabled.simulators.usb_backend import SimulatedUsbDevice, UsbSimError, UsbSimServer

TABLE_FAULTS: Final = ("off_table", "cocked", "sensor")
LINK_FAULTS: Final = ("drop", "corrupt", "truncate", "garbage", "stall", "unplug", "disconnect")
_DEFAULT_ARG: Final = {"off_table": 2.0, "cocked": 2.0, "sensor": 1.0, "drop": 0.0,
                       "corrupt": 0.0, "truncate": 0.0, "garbage": 8.0, "stall": 1.0,
                       "unplug": 1.0, "disconnect": 1.0}
_SENSOR_CODES: Final = frozenset(int(code) for code in SensorFaultCode)
_FACES: Final = frozenset("123456")
#: The firmware version and serial number the simulated sensor reports by default.
#: The device family this simulates (the game thrown on it is the one whose demo recipe names it).
SIMULATOR_FAMILY: Final = "dice"
FIRMWARE: Final = (2, 1, 0)
SERIAL: Final = "DS-0001"


@dataclass(frozen=True, slots=True)
class DiceFault:
    """One injected fault on the ``at``-th event report."""

    kind: str
    at: int
    arg: float = 0.0

    @classmethod
    def parse(cls, text: str) -> DiceFault:
        kind, at, arg = parse_spec(text, _DEFAULT_ARG)
        if kind in ("off_table", "cocked") and arg not in (1, 2, 3):
            raise FaultSpecError(f"{text!r}: DICE is 1, 2 or 3 (both)")
        if kind == "sensor" and (arg != int(arg) or int(arg) not in _SENSOR_CODES):
            raise FaultSpecError(f"{text!r}: CODE is one of {[int(c) for c in SensorFaultCode]}")
        return cls(kind, at, arg)


#: The six faces of a die, as :func:`random_rolls` draws them.
FACES: Final = (1, 2, 3, 4, 5, 6)
#: Six face probabilities (faces 1 to 6), summing to 1.
Weights = tuple[float, float, float, float, float, float]


def parse_bias(text: str) -> Weights:
    """``"6:0.25"`` -> the six face probabilities of that loaded die: the listed faces at their
    probability, the others sharing the rest equally. FaultSpecError for a face outside 1-6, a
    face listed twice, a probability outside 0-1, or listed probabilities above 1 (or not 1
    when all six are listed)."""
    listed: dict[int, float] = {}
    for item in text.split(","):
        face_text, sep, p_text = item.strip().partition(":")
        try:
            face, p = int(face_text), float(p_text)
        except ValueError:
            face, p = 0, -1.0
        if not sep or face not in FACES or not 0.0 <= p <= 1.0 or face in listed:
            raise FaultSpecError(f"{item!r}: a bias is FACE:P, a face 1-6 listed once and a "
                                 "probability 0-1, like 6:0.25")
        listed[face] = p
    rest = 1.0 - sum(listed.values())
    others = [f for f in FACES if f not in listed]
    if rest < -1e-9 or (not others and abs(rest) > 1e-9):
        raise FaultSpecError(f"{text!r}: the probabilities add up to {1.0 - rest:g}, not 1")
    share = max(rest, 0.0) / len(others) if others else 0.0
    weights = tuple(listed.get(face, share) for face in FACES)
    return (weights[0], weights[1], weights[2], weights[3], weights[4], weights[5])


def random_rolls(rng: random.Random, count: int, die_1: Weights | None = None,
                 die_2: Weights | None = None) -> list[tuple[int, int]]:
    """``count`` throws of two dice: fair (``None``) or loaded with the given face
    probabilities. Two fair dice draw exactly as the simulator always has (``randint``), so a
    seed gives the same rolls it gave before loaded dice existed."""
    if die_1 is None and die_2 is None:
        return [(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(count)]
    choices = rng.choices

    def die(weights: Weights | None) -> Callable[[], int]:
        if weights is None:
            return lambda: rng.randint(1, 6)
        cumulative = list(itertools.accumulate(weights))
        return lambda: choices(FACES, cum_weights=cumulative)[0]

    first, second = die(die_1), die(die_2)
    return [(first(), second()) for _ in range(count)]


def parse_rolls(text: str) -> list[tuple[int, int]]:
    """``"3-4,6-6"`` -> ``[(3, 4), (6, 6)]``."""
    rolls = []
    for item in text.split(","):
        a, sep, b = item.strip().partition("-")
        if not sep or a not in _FACES or b not in _FACES:
            raise FaultSpecError(f"{item!r}: a roll is two faces 1-6, like 3-4")
        rolls.append((int(a), int(b)))
    return rolls


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """One event report the sensor will produce (numbered when it is produced),
    and what happens to it on the way to the host."""

    report: EventReport
    faults: tuple[DiceFault, ...] = ()


def build_script(rolls: list[tuple[int, int]], faults: list[DiceFault],
                 rng: random.Random) -> list[ScriptStep]:
    """The sensor's reports: the rolls in order, with the table faults' no-rolls and sensor
    faults inserted at their numbers, and each report's link faults attached."""
    inserted = {f.at: f for f in faults if f.kind in ("off_table", "sensor")}
    if len(inserted) != sum(f.kind in ("off_table", "sensor") for f in faults):
        raise FaultSpecError("two no-roll or sensor faults name the same report")
    total = len(rolls) + len(inserted)
    for fault in faults:
        if fault.at > total:
            raise FaultSpecError(f"{fault.kind}@{fault.at}: the script has {total} reports")
        if fault.kind == "cocked" and fault.at in inserted:
            raise FaultSpecError(f"cocked@{fault.at}: report {fault.at} is not a roll")
    cocked = {f.at: int(f.arg) for f in faults if f.kind == "cocked"}
    remaining = iter(rolls)
    steps = []
    for number in range(1, total + 1):
        report: EventReport
        insert = inserted.get(number)
        if insert is not None and insert.kind == "off_table":
            report = NoRollReport(0, int(insert.arg))
        elif insert is not None:
            report = SensorFaultReport(0, SensorFaultCode(int(insert.arg)))
        else:
            a, b = next(remaining)
            # A cocked die is read with less certainty than one lying flat.
            confidence = rng.randint(55, 80) if number in cocked else rng.randint(93, 100)
            report = RollReport(0, a, b, confidence, cocked.get(number, 0))
        link = tuple(f for f in faults if f.kind in LINK_FAULTS and f.at == number)
        steps.append(ScriptStep(report, link))
    return steps


class ReportMemory:
    """The sensor's numbered event reports, kept until the host acknowledges them (sans-IO).

    The oldest is forgotten when more than ``capacity`` wait: a host that stays away that
    long learns from the RESEND reply which reports it lost.
    """

    def __init__(self, capacity: int = RETAINED_REPORTS) -> None:
        self.capacity = capacity
        self.next_number = 0
        self.forgotten = 0
        self._kept: deque[EventReport] = deque()

    @property
    def unacked_from(self) -> int:
        return self._kept[0].number if self._kept else self.next_number

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, report: EventReport) -> EventReport:
        """Number ``report`` and keep it; return it numbered."""
        numbered = replace(report, number=self.next_number)
        self.next_number = (self.next_number + 1) % NUMBER_MODULO
        if len(self._kept) == self.capacity:
            self._kept.popleft()
            self.forgotten += 1
        self._kept.append(numbered)
        return numbered

    def acknowledge(self, next_expected: int) -> None:
        """The host has every report before ``next_expected``."""
        while self._kept and number_is_ahead(self._kept[0].number, next_expected):
            self._kept.popleft()

    def resend(self, from_number: int) -> tuple[ResendReply, list[EventReport]]:
        """The reports kept from ``from_number`` on, and the reply that says where they start."""
        reports = [r for r in self._kept
                   if r.number == from_number or number_is_ahead(from_number, r.number)]
        first = reports[0].number if reports else self.next_number
        return ResendReply(first, len(reports)), reports


def ledger_record(report: EventReport, step: ScriptStep) -> dict[str, Any]:
    """What the sensor saw at the table for one report (docs/protocols/ledger.md): ``kind``
    (``roll``, ``no_roll`` or ``sensor_fault``), the report's ``number``, ``dice`` and
    ``cocked`` for a roll, ``off_table`` for a no-roll, ``code`` for a sensor fault, and
    ``faults``: what happens to the report on its way (``KIND@N``)."""
    # the game thrown on the sensor: the one whose demo recipe names the dice family
    record: dict[str, Any] = {"game": played_on(SIMULATOR_FAMILY), "number": report.number,
                              "faults": [f"{f.kind}@{f.at}" for f in step.faults]}
    if isinstance(report, RollReport):
        record.update(kind="roll", dice=[report.die_1, report.die_2], cocked=report.cocked)
    elif isinstance(report, NoRollReport):
        record.update(kind="no_roll", off_table=report.off_table)
    else:
        record.update(kind="sensor_fault", code=int(report.code))
    return record


class DiceSensor(SimulatedUsbDevice):
    """The simulated sensor: plays its script, keeps its reports, answers the host."""

    def __init__(
        self,
        script: list[ScriptStep],
        *,
        pace: float = 1.0,
        serial: str = SERIAL,
        firmware: tuple[int, int, int] = FIRMWARE,
        t_status: float = T_STATUS,
        retained: int = RETAINED_REPORTS,
        seed: int = 0,
        ledger: Ledger | None = None,
    ) -> None:
        super().__init__()
        self.script = script
        self.ledger = ledger
        self.pace = pace
        # A new boot id at every start, as at a power-on: report numbers restart at 0.
        self.info = DeviceInfo(PROTOCOL_VERSION, firmware,
                               int.from_bytes(os.urandom(4), "big"), serial)
        self.t_status = t_status
        self.memory = ReportMemory(retained)
        self.rng = random.Random(seed)
        #: Every scripted report produced and acknowledged by a host.
        self.delivered = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._started = self._loop.time()
        self._endpoint: deque[bytes] = deque()
        self._frozen_until = 0.0
        self._last_tx = self._started
        self._fault: SensorFaultCode | None = None
        self._script_done = False

    # -- the table ---------------------------------------------------------------------------

    async def run_script(self) -> None:
        """Produce the scripted reports, one every ``pace`` seconds."""
        for step in self.script:
            await asyncio.sleep(self.pace)
            await self._produce(step)
        self._script_done = True
        self._check_delivered()

    async def _produce(self, step: ScriptStep) -> None:
        report = self.memory.keep(step.report)
        if self.ledger is not None:
            self.ledger.write(ledger_record(report, step))
        if isinstance(report, SensorFaultReport):
            self._fault = report.code  # latched in STATUS until a RESET request
        packets = [encode_report(report)]
        unplug_for = 0.0
        for fault in step.faults:
            packet = packets[-1]
            if fault.kind == "drop":
                packets.pop()
            elif fault.kind == "corrupt":
                bit = self.rng.randrange(8 * (REPORT_SIZE - 2))
                flipped = packet[bit // 8] ^ (1 << bit % 8)
                packets[-1] = packet[: bit // 8] + bytes((flipped,)) + packet[bit // 8 + 1:]
            elif fault.kind == "truncate":
                packets[-1] = packet[: REPORT_SIZE // 2]
            elif fault.kind == "garbage":
                noise = self.rng.randbytes(int(fault.arg))
                chunks = [noise[i:i + REPORT_SIZE] for i in range(0, len(noise), REPORT_SIZE)]
                packets[:0] = chunks
            elif fault.kind == "stall":
                self._frozen_until = self._loop.time() + fault.arg
            else:  # unplug / disconnect: the endpoint's contents go with the device
                unplug_for = fault.arg
                packets = []
        self._endpoint.extend(packets)
        self.notify()
        if unplug_for:
            self.unplug()
            await asyncio.sleep(unplug_for)
            self.plug()

    def status(self) -> StatusReport:
        return StatusReport(
            next_number=self.memory.next_number,
            unacked_from=self.memory.unacked_from,
            state=SensorState.READY if self._fault is None else SensorState.FAULT,
            fault=self._fault,
            uptime=int(self._loop.time() - self._started),
        )

    def _check_delivered(self) -> None:
        if self._script_done and not len(self.memory):
            self.delivered.set()

    # -- the USB device ----------------------------------------------------------------------

    def descriptors(self) -> dict[str, Any]:
        endpoint = {"bLength": 7, "bDescriptorType": 5, "bEndpointAddress": REPORT_ENDPOINT,
                    "bmAttributes": 0x03, "wMaxPacketSize": REPORT_SIZE,
                    "bInterval": POLL_INTERVAL_MS, "bRefresh": 0, "bSynchAddress": 0,
                    "extra_descriptors": []}
        interface = {"bLength": 9, "bDescriptorType": 4, "bInterfaceNumber": INTERFACE,
                     "bAlternateSetting": 0, "bNumEndpoints": 1, "bInterfaceClass": 0xFF,
                     "bInterfaceSubClass": 0, "bInterfaceProtocol": 0, "iInterface": 0,
                     "extra_descriptors": []}
        configuration = {"bLength": 9, "bDescriptorType": 2, "wTotalLength": 9 + 9 + 7,
                         "bNumInterfaces": 1, "bConfigurationValue": 1, "iConfiguration": 0,
                         "bmAttributes": 0xC0, "bMaxPower": 50, "extra_descriptors": []}
        major, minor, _ = self.info.firmware
        device = {"bLength": 18, "bDescriptorType": 1, "bcdUSB": 0x0200, "bDeviceClass": 0,
                  "bDeviceSubClass": 0, "bDeviceProtocol": 0, "bMaxPacketSize0": 64,
                  "idVendor": VENDOR_ID, "idProduct": PRODUCT_ID,
                  "bcdDevice": major << 8 | minor, "iManufacturer": 1, "iProduct": 2,
                  "iSerialNumber": 3, "bNumConfigurations": 1, "bus": 1,
                  # a replugged device enumerates at a new address
                  "address": self.generation % 127 + 1, "port_number": 1,
                  "port_numbers": [1], "speed": 2}
        return {"device": device, "configurations": [{
            "descriptor": configuration,
            "interfaces": [[{"descriptor": interface, "endpoints": [endpoint]}]],
        }]}

    def strings(self) -> dict[int, str]:
        return {1: "tabled", 2: "Electronic dice sensor", 3: self.info.serial}

    def configuration_set(self, value: int) -> None:
        super().configuration_set(value)
        self._endpoint.clear()  # a new host: what waited for the old one is resent on request

    def unplug(self) -> None:
        self._endpoint.clear()
        super().unplug()

    async def read_endpoint(self, endpoint: int, length: int, within: float) -> bytes | None:
        if endpoint != REPORT_ENDPOINT:
            raise UsbSimError("invalid", f"no IN endpoint {endpoint:#04x}")
        deadline = self._loop.time() + within
        while True:
            now = self._loop.time()
            if now >= self._frozen_until:
                if self._endpoint:
                    self._last_tx = now
                    return self._endpoint.popleft()[:length]
                if now - self._last_tx >= self.t_status:
                    self._last_tx = now
                    return encode_report(self.status())[:length]
                wake = min(deadline, self._last_tx + self.t_status)
            else:
                wake = min(deadline, self._frozen_until)
            if now >= deadline:
                return None
            await self.changed(wake - now)

    def control(self, request_type: int, request: int, value: int, index: int,
                data: bytes, length: int) -> bytes:
        if request_type == REQUEST_TYPE_IN:
            if request == Request.GET_INFO:
                return encode_info(self.info)
            if request == Request.GET_STATUS:
                return encode_report(self.status())
            if request == Request.RESEND:
                reply, reports = self.memory.resend(join_number(value, index))
                self._endpoint.clear()  # go-back-N: everything from the asked number, in order
                self._endpoint.extend(encode_report(r) for r in reports)
                self.notify()
                return encode_resend_reply(reply)
        elif request_type == REQUEST_TYPE_OUT:
            if request == Request.ACK:
                self.memory.acknowledge(join_number(value, index))
                self._check_delivered()
                return b""
            if request == Request.RESET:
                self._fault = None
                return b""
        raise UsbSimError("stall", f"request {request_type:#04x}/{request:#04x} not supported")


# -- tabled-sim dice ---------------------------------------------------------------------------


def _fault_arg(text: str) -> DiceFault:
    try:
        return DiceFault.parse(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bias_arg(text: str) -> Weights:
    try:
        return parse_bias(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _rolls_arg(text: str) -> list[tuple[int, int]]:
    try:
        return parse_rolls(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tabled-sim dice``."""
    parser.add_argument("--socket", "--link", dest="socket", metavar="PATH",
                        help="the Unix socket the simulated USB bus listens on "
                             "(default: a new one in the temporary directory)")
    parser.add_argument("--seed", type=int, default=0, help="seed for random rolls and faults")
    parser.add_argument("--rolls", type=_rolls_arg, metavar="A-B,...",
                        help="the rolls to report, in order (default: --count random rolls)")
    parser.add_argument("--count", type=int, default=10, help="how many random rolls")
    parser.add_argument("--bias", type=_bias_arg, metavar="FACE:P,...",
                        help="a loaded die for the random rolls: these faces at these "
                             "probabilities, the others sharing the rest (6:0.25)")
    parser.add_argument("--biased-die", choices=("1", "2", "both"), default="1",
                        help="which die --bias loads (default 1)")
    parser.add_argument("--pace", type=float, default=1.0, metavar="SECONDS",
                        help="time between reports")
    parser.add_argument("--fault", type=_fault_arg, action="append", default=[],
                        metavar="KIND@N[:ARG]",
                        help=f"inject a fault at the N-th report: {', '.join(TABLE_FAULTS)}, "
                             f"{', '.join(LINK_FAULTS)}")
    parser.add_argument("--serial", default=SERIAL, help="the sensor's serial number")
    parser.add_argument("--forever", action="store_true",
                        help="keep serving after the script has been delivered")
    parser.add_argument("--ledger", metavar="FILE",
                        help="write one JSON line per report as thrown (docs/protocols/ledger.md)")


def device_url(socket_path: str, serial: str = SERIAL) -> str:
    """The URL a driver opens to reach the simulated sensor."""
    return (f"usb://{VENDOR_ID:04x}:{PRODUCT_ID:04x}?serial={serial}"
            f"&backend=sim:{socket_path}")


async def serve(args: argparse.Namespace) -> int:
    """Serve one sensor until its script is delivered (or forever); 0 on success, 2 when the
    options do not make a script."""
    rng = random.Random(args.seed)
    loaded = args.bias
    rolls = args.rolls or random_rolls(
        rng, args.count, loaded if args.biased_die in ("1", "both") else None,
        loaded if args.biased_die in ("2", "both") else None)
    try:
        script = build_script(rolls, args.fault, rng)
    except FaultSpecError as exc:
        print(f"tabled-sim dice: {exc}", file=sys.stderr)
        return 2
    path = args.socket or os.path.join(tempfile.gettempdir(), f"tabled-dice-{os.getpid()}.sock")
    ledger = None if args.ledger is None else Ledger(args.ledger, device="dice",
                                                      serial=args.serial)
    sensor = DiceSensor(script, pace=args.pace, serial=args.serial, seed=args.seed,
                        ledger=ledger)
    server = UsbSimServer(sensor, path)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    tasks: list[asyncio.Task[Any]] = []
    try:  # from the socket's creation on: whatever happens, the socket goes with the sensor
        await server.start()
        print(f"socket: {path}")
        print(f"url: {device_url(path, args.serial)}", flush=True)
        player = asyncio.create_task(sensor.run_script(), name="dice-script")
        waiters = {asyncio.create_task(stop.wait())}
        if not args.forever:
            waiters.add(asyncio.create_task(sensor.delivered.wait()))
        tasks = [player, *waiters]
        pending: set[asyncio.Task[Any]] = {player, *waiters}
        while True:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if player in done:
                player.result()  # a script that failed ends the sensor (and raises)
            if done - {player}:
                break
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.close()
        if ledger is not None:
            ledger.close()
    return 0


# -- the conformance kit's sensor (tabled.tools.conformance) -----------------------------------

#: The kit's table faults, and the fault codes their events must carry (a die off the table is a
#: no_roll, not a fault). Each happens at the kit's second report.
KIT_FAULTS: Final = {"sensor": SENSOR_FAULT, "cocked": COCKED_DIE}
_KIT_FAULT_AT: Final = 2
#: The link faults the kit may ask for (the others are a stall and an unplug, which the kit
#: does itself).
_KIT_WIRE_FAULTS: Final = frozenset({"corrupt", "truncate", "garbage", "drop"})
_NO_CHUNKING: Final = ("its reports are whole 20-byte USB interrupt packets: there is no byte "
                       "stream to split")


#: The kit's sensor reports at most one throw this often (a real table takes seconds): a host
#: resynchronising after a damaged report must not find the next damaged one already queued
#: (a RESEND empties the endpoint, and with it the kit's damage).
_KIT_MIN_PACE: Final = 0.01


class _HostAwareSensor(DiceSensor):
    """The sensor, noting when a host first reads its reports (the kit's script starts then)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.host_reading = asyncio.Event()

    async def read_endpoint(self, endpoint: int, length: int, within: float) -> bytes | None:
        self.host_reading.set()
        return await super().read_endpoint(endpoint, length, within)


class KitSensor:
    """The simulated sensor as the conformance kit drives it: on the simulated USB bus, served
    from the kit's own process on a socket in the kit's folder. Its script starts once a host
    reads its reports: before, they would wait in an endpoint that the host's SET_CONFIGURATION
    and first RESEND empty (the sensor resends them clean from its memory), and the kit's link
    faults would never reach a driver."""

    def __init__(self, sensor: _HostAwareSensor, socket_path: str,
                 expected: Sequence[Event]) -> None:
        self.sensor = sensor
        self.server = UsbSimServer(sensor, socket_path)
        self._expected = tuple(expected)
        self._player: asyncio.Task[None] | None = None

    async def start(self) -> KitSensor:
        await self.server.start()
        self._player = asyncio.create_task(self._play(), name="kit-dice-script")
        return self

    async def _play(self) -> None:
        await self.sensor.host_reading.wait()
        await self.sensor.run_script()

    @property
    def url(self) -> str:
        return device_url(self.server.socket_path, self.sensor.info.serial)

    @property
    def serial(self) -> str:
        return self.sensor.info.serial

    @property
    def expected(self) -> Sequence[Event]:
        return self._expected

    @property
    def pending(self) -> int:
        return len(self.sensor.memory)

    @property
    def done(self) -> bool:
        if self._player is not None and self._player.done() and not self._player.cancelled():
            self._player.result()  # a script that failed says so
        return self.sensor.delivered.is_set()

    @property
    def injected(self) -> Sequence[str]:
        produced = self.sensor.memory.next_number  # (reports are numbered from 0 at start)
        return [f"{fault.kind}@{fault.at}" for step in self.sensor.script[:produced]
                for fault in step.faults]

    async def unplug(self) -> None:
        self.sensor.unplug()

    async def plug(self) -> None:
        if not self.sensor.plugged:
            self.sensor.plug()

    async def stop(self) -> None:
        if self._player is not None:
            self._player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._player
        await self.server.close()


async def start_for_kit(script: DeviceScript, folder: Path) -> KitSensor:
    """A sensor throwing ``script.length`` seeded rolls, ``script.pace`` apart (at least
    10 ms), with the script's table faults at its second report and its link faults where the
    kit says."""
    rng = random.Random(script.seed)
    faults = [DiceFault(kind, _KIT_FAULT_AT, _DEFAULT_ARG[kind]) for kind in script.faults]
    faults += [DiceFault(fault.kind, fault.at, fault.arg or _DEFAULT_ARG[fault.kind])
               for fault in script.wire_faults]
    steps = build_script(random_rolls(rng, max(1, script.length)), faults, rng)
    expected = [event for step in steps for event in normalize(step.report)]
    sensor = _HostAwareSensor(steps, pace=max(script.pace, _KIT_MIN_PACE), seed=script.seed)
    return await KitSensor(sensor, str(folder / "bus.sock"), expected).start()


SIMULATOR = SimulatorPlugin(
    family=SIMULATOR_FAMILY,
    summary="an electronic dice sensor (USB, through the simulated pyusb backend)",
    description="""\
A simulated electronic dice sensor behind a pyusb backend reached over a local socket: each
throw's two faces, no-rolls (a die off the table), cocked dice and sensor faults, seeded or from
--rolls, optionally loaded (--bias). It prints the usb:// URL to open first (tabled run, tabled
listen --driver dice URL). Any way it ends removes its socket.""",
    add_arguments=add_arguments,
    serve=serve,
    conformance=DeviceSide(start=start_for_kit, faults=KIT_FAULTS, wire_faults=_KIT_WIRE_FAULTS,
                           no_chunking=_NO_CHUNKING),
)
