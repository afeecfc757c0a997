"""The electronic dice sensor's USB protocol (sans-IO): reports and control-request payloads.

Owns bytes <-> messages for the sensor of docs/protocols/dice.md and nothing else: no pyusb,
no asyncio, no clock. It must never accept a report it cannot represent faithfully: a damaged
or invalid packet raises :class:`ReportDamaged` (a :class:`~tabled.drivers.errors.ProtocolError`)
naming the counter it belongs to.

Report layout (the interrupt IN endpoint, always :data:`REPORT_SIZE` bytes, big-endian)::

    KIND | NUMBER[4] | BODY[13] | CRC16[2]

``NUMBER`` numbers the event reports (roll, no roll, sensor fault) from 0 at the device's
power-on, modulo 2**32; re-sent reports keep their number. A STATUS report is not itself
numbered: its NUMBER field carries the number the device will give its next event report, so a
host that missed the last report learns it from the next heartbeat. ``CRC16`` is
CRC-16/CCITT-FALSE (as in :mod:`tabled.drivers.framing`) over the 18 bytes before it. Unused body
bytes
are sent as zero and a report whose reserved bytes are not zero is refused: it comes from a
firmware this host does not understand.

A report number in a control request (RESEND, ACK) is split over the setup packet: the low 16
bits in ``wValue``, the high 16 bits in ``wIndex`` (see :func:`split_number`).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Final

from tabled.drivers.errors import ProtocolError
from tabled.drivers.framing import crc16

# -- the device on the bus (docs/protocols/dice.md "Identity") ---------------------------------

#: pid.codes' vendor id, whose product id 0x0001 is reserved for testing and prototypes.
VENDOR_ID: Final = 0x1209
PRODUCT_ID: Final = 0x0001
INTERFACE: Final = 0
#: The interrupt IN endpoint that carries every report.
REPORT_ENDPOINT: Final = 0x81
REPORT_SIZE: Final = 20
#: The interrupt endpoint's polling interval (bInterval), in milliseconds.
POLL_INTERVAL_MS: Final = 10
PROTOCOL_VERSION: Final = 1

# -- control requests (vendor type, device recipient) ------------------------------------------

REQUEST_TYPE_IN: Final = 0xC0  # device-to-host | vendor | device
REQUEST_TYPE_OUT: Final = 0x40  # host-to-device | vendor | device


class Request(enum.IntEnum):
    """bRequest codes of the sensor's vendor control requests."""

    GET_INFO = 0x01  # IN, wLength INFO_SIZE: protocol, firmware, boot id, serial number
    GET_STATUS = 0x02  # IN, wLength REPORT_SIZE: a STATUS report, made now
    RESEND = 0x03  # IN, number = first report wanted, wLength RESEND_REPLY_SIZE
    ACK = 0x04  # OUT, number = next report expected: every report before it is durable
    RESET = 0x05  # OUT: clear the latched sensor fault and recalibrate


INFO_SIZE: Final = 24
RESEND_REPLY_SIZE: Final = 6
SERIAL_SIZE: Final = 16

# -- timing and limits (seconds / counts), as docs/protocols/dice.md names them ----------------

#: The device sends a STATUS report when it has sent nothing else for this long.
T_STATUS: Final = 1.0
#: The host declares the device silent (link down) after hearing nothing for this long.
T_SILENCE: Final = 3.5
#: The host repeats a RESEND when the report it asked for has not come within this time.
T_RESEND: Final = 0.5
#: RESENDs for one gap before the host gives the link up.
MAX_RESENDS: Final = 4
#: Event reports the device keeps until the host acknowledges them.
RETAINED_REPORTS: Final = 64

NUMBER_MODULO: Final = 1 << 32


def number_distance(a: int, b: int) -> int:
    """How far report number ``b`` is ahead of ``a`` (modulo 2**32)."""
    return (b - a) % NUMBER_MODULO


def number_is_ahead(a: int, b: int) -> bool:
    """True when ``b`` is strictly ahead of ``a`` (within half the number space)."""
    return 0 < number_distance(a, b) < NUMBER_MODULO // 2


def split_number(number: int) -> tuple[int, int]:
    """A report number as a control request's ``(wValue, wIndex)``: low and high 16 bits."""
    return number & 0xFFFF, number >> 16


def join_number(value: int, index: int) -> int:
    """The report number a control request's ``wValue`` and ``wIndex`` carry."""
    return (index & 0xFFFF) << 16 | (value & 0xFFFF)


# -- messages ----------------------------------------------------------------------------------


class ReportKind(enum.IntEnum):
    """The KIND byte of a report. 0x00 is never valid: an all-zero packet is a dead device."""

    ROLL = 0x01
    NO_ROLL = 0x02
    SENSOR_FAULT = 0x03
    STATUS = 0x04


class SensorFaultCode(enum.IntEnum):
    """The sensor's numbered fault codes; every one maps to
    ``tabled.contract.faults.SENSOR_FAULT``."""

    LENS_OBSCURED = 1
    ILLUMINATION_FAILURE = 2
    CALIBRATION_LOST = 3
    OVER_TEMPERATURE = 4
    WATCHDOG_RESET = 5

    @property
    def text(self) -> str:
        return self.name.lower().replace("_", " ")


class SensorState(enum.IntEnum):
    """The STATUS report's state byte."""

    READY = 0
    FAULT = 1  # a sensor fault is latched until a RESET request


#: Bits of a ROLL's ``cocked`` byte and a NO_ROLL's ``off_table`` byte: die 1, die 2.
DIE_1: Final = 0x01
DIE_2: Final = 0x02
_DICE_MASK: Final = DIE_1 | DIE_2


def dice_in_mask(mask: int) -> tuple[int, ...]:
    """The die numbers (1, 2) set in a per-die bit mask."""
    return tuple(n for n, bit in ((1, DIE_1), (2, DIE_2)) if mask & bit)


@dataclass(frozen=True, slots=True)
class RollReport:
    """A throw came to rest: both faces, the read's confidence in percent, and which dice
    were cocked (read by the face most clearly up, craps Art. 1)."""

    number: int
    die_1: int
    die_2: int
    confidence: int
    cocked: int = 0


@dataclass(frozen=True, slots=True)
class NoRollReport:
    """One or both dice left the table: no roll, throw again (craps Art. 1)."""

    number: int
    off_table: int


@dataclass(frozen=True, slots=True)
class SensorFaultReport:
    """The sensor detected a fault of its own (numbered :class:`SensorFaultCode`)."""

    number: int
    code: SensorFaultCode


@dataclass(frozen=True, slots=True)
class StatusReport:
    """The heartbeat: the number the device will give its next event report, the first number
    no host has acknowledged, the sensor's state, its latched fault and its uptime in seconds."""

    next_number: int
    unacked_from: int
    state: SensorState = SensorState.READY
    fault: SensorFaultCode | None = None
    uptime: int = 0


EventReport = RollReport | NoRollReport | SensorFaultReport
Report = EventReport | StatusReport


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """The GET_INFO reply. ``boot_id`` is random at each power-on: report numbers are only
    comparable within one boot."""

    protocol: int
    firmware: tuple[int, int, int]
    boot_id: int
    serial: str

    @property
    def firmware_text(self) -> str:
        return ".".join(str(part) for part in self.firmware)


@dataclass(frozen=True, slots=True)
class ResendReply:
    """The RESEND reply: the first report queued again (later than asked when the device no
    longer holds the older ones: those are lost) and how many reports were queued."""

    first: int
    count: int


class ReportDamaged(ProtocolError):
    """A packet that is not a valid report; ``reason`` names the host's counter for it:
    ``bad_length``, ``bad_crc``, ``bad_kind`` or ``bad_content``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# -- reports -----------------------------------------------------------------------------------

_BODY_SIZE: Final = REPORT_SIZE - 7
_STATUS_BODY: Final = struct.Struct(">BBII")


def _body(report: Report) -> tuple[ReportKind, int, bytes]:
    if isinstance(report, RollReport):
        fields = (report.die_1, report.die_2, report.confidence, report.cocked)
        return ReportKind.ROLL, report.number, bytes(fields)
    if isinstance(report, NoRollReport):
        return ReportKind.NO_ROLL, report.number, bytes((report.off_table,))
    if isinstance(report, SensorFaultReport):
        return ReportKind.SENSOR_FAULT, report.number, bytes((report.code,))
    fault = 0 if report.fault is None else report.fault  # 0: no fault latched
    body = _STATUS_BODY.pack(report.state, fault, report.unacked_from, report.uptime)
    return ReportKind.STATUS, report.next_number, body


def encode_report(report: Report) -> bytes:
    """The :data:`REPORT_SIZE` bytes of ``report`` on the interrupt endpoint."""
    kind, number, body = _body(report)
    head = bytes((kind,)) + number.to_bytes(4, "big") + body.ljust(_BODY_SIZE, b"\x00")
    return head + crc16(head).to_bytes(2, "big")


def _die(value: int) -> int:
    if not 1 <= value <= 6:
        raise ReportDamaged("bad_content", f"die face {value} is not 1-6")
    return value


def _dice_mask(value: int, what: str, *, empty_ok: bool) -> int:
    if value & ~_DICE_MASK or (value == 0 and not empty_ok):
        raise ReportDamaged("bad_content", f"{what} mask {value:#04x} is not a set of dice")
    return value


def _fault_code(value: int) -> SensorFaultCode:
    try:
        return SensorFaultCode(value)
    except ValueError:
        raise ReportDamaged("bad_content", f"unknown sensor fault code {value}") from None


def _reserved(body: bytes, used: int) -> None:
    if any(body[used:]):
        raise ReportDamaged("bad_content", "reserved bytes are not zero")


def decode_report(data: bytes) -> Report:
    """The report in one interrupt packet, or :class:`ReportDamaged`."""
    if len(data) != REPORT_SIZE:
        raise ReportDamaged("bad_length", f"report of {len(data)} bytes, not {REPORT_SIZE}")
    if crc16(data[:-2]) != int.from_bytes(data[-2:], "big"):
        raise ReportDamaged("bad_crc", "report CRC does not match")
    kind, number, body = data[0], int.from_bytes(data[1:5], "big"), data[5:-2]
    if kind == ReportKind.ROLL:
        _reserved(body, 4)
        if body[2] > 100:
            raise ReportDamaged("bad_content", f"confidence {body[2]} % is over 100")
        return RollReport(number, _die(body[0]), _die(body[1]), body[2],
                          _dice_mask(body[3], "cocked", empty_ok=True))
    if kind == ReportKind.NO_ROLL:
        _reserved(body, 1)
        return NoRollReport(number, _dice_mask(body[0], "off-table", empty_ok=False))
    if kind == ReportKind.SENSOR_FAULT:
        _reserved(body, 1)
        return SensorFaultReport(number, _fault_code(body[0]))
    if kind == ReportKind.STATUS:
        _reserved(body, _STATUS_BODY.size)
        state, fault, unacked_from, uptime = _STATUS_BODY.unpack(body[: _STATUS_BODY.size])
        try:
            sensor_state = SensorState(state)
        except ValueError:
            raise ReportDamaged("bad_content", f"unknown sensor state {state}") from None
        return StatusReport(number, unacked_from, sensor_state,
                            _fault_code(fault) if fault else None, uptime)
    raise ReportDamaged("bad_kind", f"unknown report kind {kind:#04x}")


# -- control-request payloads ------------------------------------------------------------------

_INFO: Final = struct.Struct(f">B3BI{SERIAL_SIZE}s")
_RESEND_REPLY: Final = struct.Struct(">IH")


def encode_info(info: DeviceInfo) -> bytes:
    """The GET_INFO reply: protocol, firmware major.minor.patch, boot id, serial number
    (ASCII, NUL padded)."""
    serial = info.serial.encode("ascii")
    if len(serial) > SERIAL_SIZE:
        raise ValueError(f"serial {info.serial!r} is longer than {SERIAL_SIZE} bytes")
    return _INFO.pack(info.protocol, *info.firmware, info.boot_id, serial)


def decode_info(data: bytes) -> DeviceInfo:
    """The GET_INFO reply, or :class:`~tabled.drivers.errors.ProtocolError`."""
    if len(data) != INFO_SIZE:
        raise ProtocolError(f"device info of {len(data)} bytes, not {INFO_SIZE}")
    protocol, major, minor, patch, boot_id, raw_serial = _INFO.unpack(data)
    serial = raw_serial.rstrip(b"\x00")
    if not serial or not all(0x21 <= b <= 0x7E for b in serial):
        raise ProtocolError(f"serial number {raw_serial!r} is not printable ASCII")
    return DeviceInfo(protocol, (major, minor, patch), boot_id, serial.decode("ascii"))


def encode_resend_reply(reply: ResendReply) -> bytes:
    """The RESEND reply: the first report number queued again (u32), how many (u16)."""
    return _RESEND_REPLY.pack(reply.first, reply.count)


def decode_resend_reply(data: bytes) -> ResendReply:
    """The RESEND reply, or :class:`~tabled.drivers.errors.ProtocolError`."""
    if len(data) != RESEND_REPLY_SIZE:
        raise ProtocolError(f"resend reply of {len(data)} bytes, not {RESEND_REPLY_SIZE}")
    first, count = _RESEND_REPLY.unpack(data)
    if count > RETAINED_REPORTS:
        raise ProtocolError(f"resend of {count} reports exceeds the {RETAINED_REPORTS} kept")
    return ResendReply(first, count)
