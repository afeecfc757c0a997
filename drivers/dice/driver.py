"""The electronic dice sensor's driver: USB reports in, CONTRACT events out.

Owns the asyncio side of one sensor connection: the handshake (GET_INFO, GET_STATUS), the one
reader task that polls the interrupt endpoint and runs every transfer off the event loop
(``asyncio.to_thread``, each with a finite timeout), acknowledging and normalizing reports, and
a clean close when the device goes away. Sequencing lives in :mod:`tabled.drivers.dice.link`, bytes
in
:mod:`tabled.drivers.dice.protocol`, pyusb in :mod:`tabled.drivers.dice.usb_transport`. It knows no
craps
rules and never reconnects: when the device is lost :meth:`DiceDriver.wait_closed` returns
and the supervisor decides what next.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import ClassVar

from msgspec.structs import replace

from tabled.contract.events import Event, Fault, Meta, NoRoll, Roll
from tabled.contract.faults import COCKED_DIE, DEVICE_LOST, LINK_ERRORS, SENSOR_FAULT, WRONG_DEVICE
from tabled.contract.timeutil import rfc3339_now
from tabled.drivers.dice.link import (
    AlreadyDurable,
    Deliver,
    LinkDown,
    Output,
    ReportSequencer,
    ReportsLost,
    RequestResend,
)
from tabled.drivers.dice.protocol import (
    INFO_SIZE,
    INTERFACE,
    MAX_RESENDS,
    NUMBER_MODULO,
    PROTOCOL_VERSION,
    REPORT_ENDPOINT,
    REPORT_SIZE,
    REQUEST_TYPE_IN,
    REQUEST_TYPE_OUT,
    RESEND_REPLY_SIZE,
    T_RESEND,
    T_SILENCE,
    EventReport,
    NoRollReport,
    Request,
    RollReport,
    StatusReport,
    decode_info,
    decode_report,
    decode_resend_reply,
    dice_in_mask,
    split_number,
)
from tabled.drivers.dice.usb_transport import InterfaceShape, UsbTransport, parse_usb_url
from tabled.drivers.errors import DeviceError, ProtocolError
from tabled.drivers.link import Resume
from tabled.drivers.sink import EventSink, as_sink

#: The interrupt read's timeout: how often the reader wakes to fire timers and notice a
#: close, so shutdown never waits longer than this on a quiet device.
READ_TIMEOUT = 0.2
#: The sensor's interface (docs/protocols/dice.md "Identity"): vendor-specific, its reports on
#: an interrupt IN endpoint of REPORT_SIZE-byte packets. 1209:0001 is a shared test id: another
#: prototype with it is not a dice sensor.
SENSOR_INTERFACE = InterfaceShape(interface_class=0xFF, endpoint=REPORT_ENDPOINT,
                                  transfer_type=0x03, max_packet=REPORT_SIZE)


def normalize(report: EventReport) -> list[Event]:
    """The CONTRACT events one event report means (pure)."""
    if isinstance(report, RollReport):
        cocked = dice_in_mask(report.cocked)
        extra: dict[str, object] = {"confidence": report.confidence / 100}
        if cocked:
            # which dice: a roll with one die cocked is not a cocked roll
            extra["cocked"] = True
            extra["cocked_dice"] = list(cocked)
        events: list[Event] = [Roll(dice=(report.die_1, report.die_2), extra=extra)]
        if cocked:
            which = " and ".join(f"die {n}" for n in cocked)
            events.append(Fault(
                code=COCKED_DIE,
                detail=f"{which} not lying flat, read by the face most clearly up (craps.art1)",
                extra={"cocked_dice": list(cocked)},
            ))
        return events
    if isinstance(report, NoRollReport):
        off_table = list(dice_in_mask(report.off_table))
        return [NoRoll(reason="off_table", extra={"dice_off_table": off_table})]
    return [Fault(code=SENSOR_FAULT, detail=f"device code {report.code}: {report.code.text}",
                  extra={"device_code": int(report.code)})]


class DiceDriver:
    """One connected dice sensor. Made by :func:`open_device`, which runs :meth:`start`."""

    family: ClassVar[str] = "dice"

    def __init__(
        self,
        transport: UsbTransport,
        device_id: str,
        sink: EventSink | Callable[[Event], object],
        *,
        first_seq: int = 0,
        clock: Callable[[], float] = time.monotonic,
        read_timeout: float = READ_TIMEOUT,
        t_silence: float = T_SILENCE,
        t_resend: float = T_RESEND,
        max_resends: int = MAX_RESENDS,
        resume: Resume | None = None,
        serial: str | None = None,
    ) -> None:
        self.device_id = device_id
        self.next_seq = first_seq
        #: The serial number the configuration pins, if any: a sensor with another is refused.
        self.serial = serial
        #: What the host already made durable from this sensor (its journal knows): reports of
        #: that boot up to ``resume.last`` are acknowledged at connect, not emitted again.
        self.resume = resume
        #: ``firmware`` and ``serial`` (and ``protocol``, ``usb`` ids) once the handshake ran.
        self.info: dict[str, str] = {}
        self.connected = asyncio.Event()
        self.close_reason: str | None = None
        self.counters: Counter[str] = Counter()
        self._transport = transport
        self._sink = as_sink(sink)
        self._clock = clock
        self._read_timeout = read_timeout
        self._sequencer = ReportSequencer(now=clock(), t_silence=t_silence, t_resend=t_resend,
                                          max_resends=max_resends)
        self._closing = False
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self._resets: list[asyncio.Future[None]] = []
        self._boot_id: int | None = None
        self._report: int | None = None  # the number of the report being emitted

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Handshake (identity: protocol version, firmware, serial; where to resume), then
        read. A device that does not answer it as a dice sensor of this protocol (a request it
        refuses, a reply that does not decode, another protocol), or whose serial number is not
        the configured one, is refused (DeviceError ``wrong_device``): nothing of it has been
        acknowledged."""
        try:
            try:
                info = decode_info(await self._control_in(Request.GET_INFO, 0, INFO_SIZE))
                status = decode_report(await self._control_in(Request.GET_STATUS, 0,
                                                              REPORT_SIZE))
            except DeviceError as exc:
                if exc.reason != "stall":
                    raise
                raise ProtocolError(f"it refuses the sensor's requests ({exc})") from exc
            if not isinstance(status, StatusReport):
                raise ProtocolError("GET_STATUS did not answer with a status report")
            if info.protocol != PROTOCOL_VERSION:
                raise ProtocolError(f"it speaks protocol {info.protocol}, not "
                                    f"{PROTOCOL_VERSION}")
            for pinned, where in ((self.serial, "the configured"),
                                  (self._transport.address.serial, "its USB")):
                if pinned is not None and info.serial != pinned:
                    raise ProtocolError(f"a dice sensor with serial number {info.serial!r}, "
                                        f"not {where} {pinned!r}")
        except (DeviceError, ProtocolError) as exc:
            await asyncio.to_thread(self._transport.close)
            if isinstance(exc, DeviceError):
                exc.device = self.device_id
                raise
            raise DeviceError(f"not the expected dice sensor: {exc}", device=self.device_id,
                              reason=WRONG_DEVICE) from exc
        self.info = {"firmware": info.firmware_text, "serial": info.serial,
                     "protocol": str(info.protocol), "usb": self._transport.address.ids}
        self._boot_id = info.boot_id
        resume = self.resume
        durable_from = (None if resume is None or resume.boot_id != info.boot_id
                        else (resume.last + 1) % NUMBER_MODULO)
        outputs = self._sequencer.synchronise(status, self._clock(), durable_from)
        self.connected.set()
        self._task = asyncio.create_task(self._run(outputs), name=f"dice-{self.device_id}")

    async def wait_closed(self) -> None:
        """Return when the connection is gone (device lost, link down, or :meth:`close`)."""
        await asyncio.shield(self._closed)

    def close(self, reason: str = "closed") -> None:
        """Stop reading; the interface is released within one read timeout."""
        if self.close_reason is None:
            self.close_reason = reason
        self._closing = True
        if self._task is None and not self._closed.done():
            self._closed.set_result(None)

    @property
    def status(self) -> StatusReport | None:
        """The sensor's last STATUS (state, latched fault, uptime), from a heartbeat."""
        return self._sequencer.last_status

    def lost_fault(self) -> Fault:
        """The fault event that says this device is gone (the supervisor emits it)."""
        return Fault(code=DEVICE_LOST, detail=self.close_reason, extra={"family": self.family})

    def link_counters(self) -> dict[str, int]:
        """Every error and traffic counter of this connection: reports, gaps, resends..."""
        return {**self.counters, **self._sequencer.counters}

    async def reset_sensor(self) -> None:
        """Ask the sensor to clear its latched fault and recalibrate (the RESET request)."""
        if self._task is None or self._closing:
            raise DeviceError("not connected", device=self.device_id, reason="not_connected")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._resets.append(done)  # sent by the reader task: one transfer at a time
        await done

    def emit(self, event: Event) -> None:
        """Stamp ``event`` with device id, sequence number and time (and the sensor's boot id
        and report number, when it comes from a report), and hand it on."""
        from_report = self._report is not None
        meta = Meta(device=self.device_id, seq=self.next_seq, ts=rfc3339_now(),
                    boot=self._boot_id if from_report else None, msg=self._report)
        self.next_seq += 1
        self.counters["events"] += 1
        self._sink.emit(replace(event, meta=meta))  # one copy: the event with where it came from

    # -- the reader task --------------------------------------------------------------------

    async def _run(self, outputs: list[Output]) -> None:
        try:
            await self._act(outputs)
            while not self._closing:
                await self._send_resets()
                data = await asyncio.to_thread(self._transport.read, REPORT_ENDPOINT,
                                               REPORT_SIZE, self._read_timeout)
                now = self._clock()
                outputs = [] if data is None else self._sequencer.packet_received(data, now)
                await self._act([*outputs, *self._sequencer.poll(now)])
        except DeviceError as exc:
            self.close(f"{exc.reason}: {exc}")
        finally:
            self.connected.clear()
            for done in self._resets:
                if not done.done():
                    done.set_exception(DeviceError("connection closed", device=self.device_id,
                                                   reason="not_connected"))
            try:
                await asyncio.to_thread(self._transport.close)
            finally:
                if not self._closed.done():
                    self._closed.set_result(None)

    async def _act(self, outputs: list[Output]) -> None:
        for output in outputs:
            if self._closing:
                return  # an unacknowledged report stays with the device for the next host
            if isinstance(output, Deliver):
                self._report = output.report.number
                try:
                    for event in normalize(output.report):
                        self.emit(event)
                finally:
                    self._report = None
                if not self._made_durable():
                    return  # no ACK: the sensor keeps the report for the next connection
                await self._control_out(Request.ACK, output.ack)
            elif isinstance(output, AlreadyDurable):
                await self._control_out(Request.ACK, output.ack)
            elif isinstance(output, ReportsLost):
                last = (output.first + output.count - 1) % NUMBER_MODULO
                self.emit(Fault(code=LINK_ERRORS,
                                detail=f"dice reports {output.first}-{last} lost",
                                extra={"lost_reports": output.count}))
                if not self._made_durable():
                    return
            elif isinstance(output, LinkDown):
                self.close(f"link_down: {output.reason}")
            elif isinstance(output, RequestResend):
                raw = await self._control_in(Request.RESEND, output.from_number,
                                             RESEND_REPLY_SIZE)
                try:
                    reply = decode_resend_reply(raw)
                except ProtocolError:
                    self.counters["bad_reply"] += 1  # the resend timer asks again
                    continue
                await self._act(self._sequencer.resend_answered(reply))

    def _made_durable(self) -> bool:
        """Run the sink's durability barrier, if it has one; close the link if it failed."""
        if self._sink.commit():
            return True
        self.close("link_down: not_durable")
        return False

    async def _send_resets(self) -> None:
        while self._resets:
            done = self._resets.pop(0)
            await self._control_out(Request.RESET, 0)
            if not done.done():
                done.set_result(None)

    async def _control_in(self, request: Request, number: int, length: int) -> bytes:
        value, index = split_number(number)
        return await asyncio.to_thread(self._transport.control_in, REQUEST_TYPE_IN, request,
                                       value, index, length)

    async def _control_out(self, request: Request, number: int) -> None:
        value, index = split_number(number)
        await asyncio.to_thread(self._transport.control_out, REQUEST_TYPE_OUT, request, value,
                                index)


async def open_device(
    url: str,
    *,
    device_id: str,
    sink: EventSink | Callable[[Event], object],
    first_seq: int = 0,
    backend: object | None = None,
    read_timeout: float = READ_TIMEOUT,
    t_silence: float = T_SILENCE,
    t_resend: float = T_RESEND,
    max_resends: int = MAX_RESENDS,
    resume: Resume | None = None,
    serial: str | None = None,
) -> DiceDriver:
    """Open the sensor at ``usb://VVVV:PPPP[?serial=...&backend=sim:PATH]`` and start reading.

    ``backend`` is a pyusb backend object (it wins over the URL's); ``resume`` what the daemon
    already made durable from this sensor (tabled.drivers.link.Resume); ``serial`` the serial
    number the configuration pins; the timing options exist for tests. Raises
    :class:`~tabled.drivers.errors.DeviceError` (``reason``: ``bad_url``, ``not_found``,
    ``no_backend``, ``device_gone``, ``usb_error``, ``wrong_device``...): a device with the
    sensor's ids that is not a dice sensor (another interface, requests it refuses, replies
    that do not decode, another protocol) or not the configured one is ``wrong_device``.
    """
    try:
        address = parse_usb_url(url)
    except ValueError as exc:
        raise DeviceError(str(exc), device=device_id, url=url, reason="bad_url") from exc
    try:
        transport = await asyncio.to_thread(UsbTransport.open, address, interface=INTERFACE,
                                            backend=backend, shape=SENSOR_INTERFACE)
    except DeviceError as exc:
        exc.device, exc.url = device_id, url
        raise
    driver = DiceDriver(transport, device_id, sink, first_seq=first_seq,
                        read_timeout=read_timeout, t_silence=t_silence, t_resend=t_resend,
                        max_resends=max_resends, resume=resume, serial=serial)
    await driver.start()
    return driver
