"""The electronic dice sensor's driver: USB reports in, CONTRACT events out.

Owns the asyncio side of one sensor connection: the handshake (GET_INFO, GET_STATUS), the
reading and acknowledging of reports, their normalization, and a clean close when the device
goes away. Sequencing lives in :mod:`tabled.drivers.dice.link`, bytes in
:mod:`tabled.drivers.dice.protocol`, pyusb in :mod:`tabled.drivers.dice.usb_transport`. It knows
no craps rules and never reconnects: when the device is lost :meth:`DiceDriver.wait_closed`
returns and the supervisor decides what next.

pyusb blocks, so no transfer runs on the event loop. Two threads of the connection do them, each
with a finite timeout: a **reader** that does one interrupt read after the other and hands every
packet to the loop at once (``call_soon_threadsafe``), and a **control** thread that sends the
ACKs, RESENDs and RESETs the loop queues, in order. USB lets a host read the interrupt pipe
while it uses the control pipe (libusb's synchronous calls are thread-safe), so the next report
is being read while the last one is made durable, and neither waits for the other; a worker
thread's round trip per read and per ACK (``asyncio.to_thread``: a task wake-up each) is gone
from every report's path. The loop runs the sequencer on the packets in order, emits, makes the
events durable (the sink's ``commit()`` barrier: one commit for the packets that arrived
together) and only then queues the ACK; ACKs still waiting are merged (an ACK is cumulative).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter, deque
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
from tabled.drivers.sink import NOT_DURABLE, EventSink, as_sink

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
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        #: packets from the reader thread, oldest first (None: a read that timed out)
        self._inbox: deque[bytes | None] = deque()
        #: a RESEND waits for its reply: packets wait in the inbox
        self._resending = False
        #: events emitted and not yet made durable; the ACK that is due once they are
        self._unsettled = False
        self._ack_due: int | None = None
        self._control_ops: deque[_ControlOp | None] = deque()
        self._control_lock = threading.Condition()
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
                info = decode_info(await self._handshake_in(Request.GET_INFO, 0, INFO_SIZE))
                status = decode_report(await self._handshake_in(Request.GET_STATUS, 0,
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
        self._stop.set()
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
        self._resets.append(done)
        self._control(("reset", 0))  # sent by the control thread, in order with the ACKs
        await done

    def emit(self, event: Event) -> None:
        """Stamp ``event`` with device id, sequence number and time (and the sensor's boot id
        and report number, when it comes from a report), and hand it on."""
        from_report = self._report is not None
        meta = Meta(device=self.device_id, seq=self.next_seq, ts=rfc3339_now(),
                    boot=self._boot_id if from_report else None, msg=self._report)
        self.next_seq += 1
        self.counters["events"] += 1
        self._unsettled = True
        self._sink.emit(replace(event, meta=meta))  # one copy: the event with where it came from

    # -- the reader and control threads, and the loop's side of them -------------------------

    async def _run(self, outputs: list[Output]) -> None:
        """The connection's life: the threads run until :meth:`close` (or a transfer's error,
        which closes), then the interface is released."""
        self._loop = asyncio.get_running_loop()
        control = threading.Thread(target=self._control_forever, daemon=True,
                                   name=f"dice-{self.device_id}-control")
        reader = threading.Thread(target=self._read_forever, daemon=True,
                                  name=f"dice-{self.device_id}-reader")
        try:
            control.start()
            try:
                self._act(outputs)
            finally:
                self._settle()
            if not self._closing:
                reader.start()
                await self._stop.wait()
        finally:
            self._closing = True
            self.connected.clear()
            with self._control_lock:
                self._control_ops.append(None)  # the control thread's end
                self._control_lock.notify()
            await asyncio.to_thread(_join, reader, control)
            for done in self._resets:
                if not done.done():
                    done.set_exception(DeviceError("connection closed", device=self.device_id,
                                                   reason="not_connected"))
            try:
                await asyncio.to_thread(self._transport.close)
            finally:
                if not self._closed.done():
                    self._closed.set_result(None)

    def _post(self, callback: Callable[..., object], *args: object) -> None:
        """From a thread: run ``callback(*args)`` on the event loop (nothing once it closed)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is waiting
            self._loop.call_soon_threadsafe(callback, *args)

    def _read_forever(self) -> None:
        """The reader thread: one interrupt read after the other, each packet (None for a read
        that timed out: the sequencer's timers) handed to the loop at once. It never waits for
        the loop, so the next report is being read while the last one is made durable."""
        while not self._closing:
            try:
                data = self._transport.read(REPORT_ENDPOINT, REPORT_SIZE, self._read_timeout)
            except DeviceError as exc:
                self._post(self.close, f"{exc.reason}: {exc}")
                return
            self._inbox.append(data)
            self._post(self._drain)

    def _drain(self) -> None:
        """On the loop: every packet the reader handed over so far, in order, through the
        sequencer; what they delivered is made durable in one commit (the sink's barrier) and
        only then acknowledged, with one ACK for all of them (an ACK is cumulative). While a
        RESEND waits for its reply, packets wait too: the sequencer sees them after it, as it
        would have had they been read after it."""
        try:
            while self._inbox and not self._closing and not self._resending:
                data = self._inbox.popleft()
                now = self._clock()
                outputs = [] if data is None else self._sequencer.packet_received(data, now)
                self._act([*outputs, *self._sequencer.poll(now)])
        finally:
            self._settle()

    def _act(self, outputs: list[Output]) -> None:
        """What the sequencer said, in order. Events are emitted here and made durable by
        :meth:`_settle`, which the caller always runs after: an emitted event is never left
        uncommitted, even when the link goes down behind it."""
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
                self._ack_due = output.ack
            elif isinstance(output, AlreadyDurable):
                if not self._settle():
                    return
                self._control(("ack", output.ack))
            elif isinstance(output, ReportsLost):
                last = (output.first + output.count - 1) % NUMBER_MODULO
                self.emit(Fault(code=LINK_ERRORS,
                                detail=f"dice reports {output.first}-{last} lost",
                                extra={"lost_reports": output.count}))
            elif isinstance(output, LinkDown):
                self.close(f"link_down: {output.reason}")
            elif isinstance(output, RequestResend):
                if not self._settle():  # what came before it is acknowledged before it
                    return
                self._resending = True  # the packets after it wait for its reply
                self._control(("resend", output.from_number))

    def _settle(self) -> bool:
        """Make every event emitted so far durable (the sink's barrier) and then acknowledge
        the reports they came from; False (and the driver closed, nothing acknowledged) if
        the barrier failed: the sensor keeps the reports for the next connection."""
        if not self._unsettled:
            return True
        self._unsettled = False
        ack, self._ack_due = self._ack_due, None
        if not self._made_durable():
            return False
        if ack is not None:
            self._control(("ack", ack))
        return True

    def _resend_replied(self, raw: bytes) -> None:
        """On the loop: the RESEND's reply; then the packets that waited for it."""
        self._resending = False
        try:
            reply = decode_resend_reply(raw)
        except ProtocolError:
            self.counters["bad_reply"] += 1  # the resend timer asks again
        else:
            if not self._closing:
                self._act(self._sequencer.resend_answered(reply))
        self._drain()

    def _made_durable(self) -> bool:
        """Run the sink's durability barrier, if it has one; close the link if it failed."""
        if self._sink.commit():
            return True
        self.close(f"link_down: {NOT_DURABLE}")
        return False

    def _control(self, op: _ControlOp) -> None:
        """Queue a control transfer for the control thread, in order; an ACK right behind
        another that is still waiting replaces it (an ACK says every report before its number
        is durable: the later one says all the earlier one did)."""
        with self._control_lock:
            ops = self._control_ops
            if op[0] == "ack" and ops and ops[-1] is not None and ops[-1][0] == "ack":
                ops[-1] = op
                self.counters["acks_merged"] += 1
            else:
                ops.append(op)
                self._control_lock.notify()

    def _control_forever(self) -> None:
        """The control thread: ACKs, RESENDs and RESETs, one at a time, in the order queued;
        a RESEND's reply goes back to the loop. A transfer that fails closes the driver."""
        while True:
            with self._control_lock:
                while not self._control_ops:
                    self._control_lock.wait()
                op = self._control_ops.popleft()
            if op is None:
                return
            kind, arg = op
            try:
                if kind == "ack":
                    self._control_out(Request.ACK, arg)
                elif kind == "resend":
                    raw = self._control_in(Request.RESEND, arg, RESEND_REPLY_SIZE)
                    self._post(self._resend_replied, raw)
                else:
                    self._control_out(Request.RESET, 0)
                    self._post(self._reset_done)
            except DeviceError as exc:
                self._post(self.close, f"{exc.reason}: {exc}")
                return

    def _reset_done(self) -> None:
        done = self._resets.pop(0) if self._resets else None
        if done is not None and not done.done():
            done.set_result(None)

    def _control_in(self, request: Request, number: int, length: int) -> bytes:
        value, index = split_number(number)
        return self._transport.control_in(REQUEST_TYPE_IN, request, value, index, length)

    def _control_out(self, request: Request, number: int) -> None:
        value, index = split_number(number)
        self._transport.control_out(REQUEST_TYPE_OUT, request, value, index)

    async def _handshake_in(self, request: Request, number: int, length: int) -> bytes:
        return await asyncio.to_thread(self._control_in, request, number, length)


#: A control transfer for the control thread: ("ack", n), ("resend", n), ("reset", 0); None
#: ends the thread.
_ControlOp = tuple[str, int]


def _join(*threads: threading.Thread) -> None:
    for thread in threads:
        if thread.is_alive():
            thread.join()


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
