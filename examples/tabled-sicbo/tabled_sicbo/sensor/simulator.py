"""The three-dice sensor, simulated (``tabled-sim sicbo_dice``), and its side of the
conformance kit.

Owns the sensor's side: :func:`shake` writes a session as the sensor reports it (seeded
shakes of three dice, the unreadable shakes and the alarms a fault names), :class:`DiceSensor`
plays it on a pseudo-terminal with tabled's own link
(:class:`~tabled.simulators.pty_device.PtyDevice`: byte faults, unplug and replug come with it)
and answers STATE_REQUEST. :data:`SIMULATOR` registers both uses in the ``tabled.simulators``
entry-point group. It never decides what a driver should emit: what the script stands for is
the driver's own :func:`~tabled_sicbo.sensor.driver.normalize`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tabled.contract.faults import SENSOR_FAULT
from tabled.drivers.errors import ProtocolError
from tabled.simulators.conformance import PtySide
from tabled.simulators.faults import BYTE_FAULTS, ByteFault, FaultSpecError
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.registry import DeviceScript, DeviceSide, SimulatorPlugin

from tabled_sicbo.sensor.driver import normalize
from tabled_sicbo.sensor.protocol import (
    MODEL,
    Alarm,
    AlarmRaised,
    Hello,
    Report,
    RollRead,
    State,
    StateRequest,
    Unreadable,
    Why,
    decode,
    encode,
)

FIRMWARE: Final = (1, 4)
SERIAL: Final = "SB3D-000128"
#: The sensor's alarms a script can raise before the N-th shake (``KIND@N``), and the fault
#: code each must arrive as.
ALARMS: Final = {"camera": SENSOR_FAULT, "light": SENSOR_FAULT, "jam": SENSOR_FAULT}
_ALARM_CODES: Final = {"camera": Alarm.CAMERA_OBSCURED, "light": Alarm.LIGHT_FAILURE,
                       "jam": Alarm.SHAKER_JAMMED}
#: Shakes a script can make unreadable (``KIND@N``): the N-th shake is read as none.
UNREADABLE: Final = {"not_flat": Why.NOT_FLAT, "stacked": Why.STACKED, "missing": Why.MISSING}


@dataclass(frozen=True, slots=True)
class SensorFault:
    """``kind`` (an alarm, or an unreadable shake) at the ``at``-th shake (from 1)."""

    kind: str
    at: int


def shake(rng: random.Random, *, shakes: int = 30,
          faults: Sequence[SensorFault] = ()) -> list[Report]:
    """Every report of a session, in order: ``shakes`` shakes of three fair dice drawn from
    ``rng``, each read (or, where a fault says so, unreadable), and the alarms raised before
    the shakes their faults name."""
    planned: dict[int, list[str]] = {}
    for fault in faults:
        planned.setdefault(fault.at, []).append(fault.kind)
    reports: list[Report] = []
    for number in range(1, shakes + 1):
        kinds = planned.get(number, [])
        reports.extend(AlarmRaised(_ALARM_CODES[k]) for k in kinds if k in _ALARM_CODES)
        dice = (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))
        why = next((UNREADABLE[k] for k in kinds if k in UNREADABLE), None)
        if why is None:
            reports.append(RollRead(number, dice, rng.randint(90, 100)))
        else:
            mask = 0 if why is Why.MISSING else 1 << rng.randrange(3)
            reports.append(Unreadable(number, why, mask))
    return reports


class DiceSensor(PtyDevice):
    """The sensor's electronics on a pseudo-terminal: it says who it is in the link handshake,
    sends its reports, and answers STATE_REQUEST with its state."""

    def __init__(self, *, serial: str = SERIAL, link_path: str | None = None,
                 faults: list[ByteFault] | None = None, seed: int = 0,
                 chunked: bool = False) -> None:
        self.hello = Hello(MODEL, FIRMWARE, serial)
        super().__init__(link_path=link_path, faults=faults, seed=seed,
                         identity=encode(self.hello), chunked=chunked)
        self.state = State(0)

    def report(self, report: Report) -> None:
        match report:
            case RollRead(shake=number) | Unreadable(shake=number):
                self.state = State(number, self.state.alarms)
            case AlarmRaised(code=code):
                self.state = State(self.state.shakes, self.state.alarms | 1 << (code - 1))
        self.send(*encode(report))

    def message_received(self, kind: int, payload: bytes) -> None:
        try:
            request = decode(kind, payload)
        except ProtocolError:
            return  # a garbled or unknown request goes unanswered
        if isinstance(request, StateRequest):
            self.send(*encode(self.state))

    async def play(self, reports: Sequence[Report], pace: float) -> None:
        """Send ``reports``, ``pace`` seconds apart (the sensor keeps them for a host)."""
        for report in reports:
            self.report(report)
            await asyncio.sleep(pace)


# -- tabled-sim sicbo_dice ---------------------------------------------------------------------


def parse_fault(text: str) -> SensorFault | ByteFault:
    """``--fault``: an alarm or unreadable shake ``KIND@N`` (N counts shakes from 1) or a byte
    fault of tabled.simulators.faults (N counts data frames)."""
    kind, sep, at = text.partition("@")
    if kind in BYTE_FAULTS:
        return ByteFault.parse(text)
    if kind not in (*ALARMS, *UNREADABLE) or not sep or not at.isdigit() or int(at) < 1:
        raise FaultSpecError(f"{text!r}: expected KIND@N with KIND in "
                             f"{(*ALARMS, *UNREADABLE, *BYTE_FAULTS)} and N from 1")
    return SensorFault(kind, int(at))


def _fault_arg(text: str) -> SensorFault | ByteFault:
    try:
        return parse_fault(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number {low}-{high}")
        return int(text)
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tabled-sim sicbo_dice``."""
    parser.add_argument("--seed", type=int, default=0, help="seed of the dice (default 0)")
    parser.add_argument("--shakes", type=_count(1, 100_000), default=30, metavar="N",
                        help="shakes to play (default 30)")
    parser.add_argument("--pace", type=float, default=1.0, metavar="SECONDS",
                        help="seconds between two reports (default 1)")
    parser.add_argument("--fault", type=_fault_arg, action="append", default=[],
                        metavar="KIND@N[:ARG]",
                        help=f"alarms {', '.join(ALARMS)} or unreadable shakes "
                             f"{', '.join(UNREADABLE)} at the N-th shake, or byte faults "
                             f"{', '.join(BYTE_FAULTS)} at the N-th data frame")
    parser.add_argument("--link", metavar="PATH",
                        help="a stable symlink to the pty that follows replugs")
    parser.add_argument("--serial", default=SERIAL,
                        help=f"the serial number the sensor reports (default {SERIAL})")
    parser.add_argument("--forever", action="store_true",
                        help="stay plugged in after the session")


async def serve(args: argparse.Namespace) -> int:
    """Serve one sensor: print ``path: ...``, play the session, wait until a host has every
    report, then end (or stay, with ``--forever``)."""
    reports = shake(random.Random(args.seed), shakes=args.shakes,
                    faults=[f for f in args.fault if isinstance(f, SensorFault)])
    device = DiceSensor(serial=args.serial, link_path=args.link, seed=args.seed,
                        faults=[f for f in args.fault if isinstance(f, ByteFault)])
    path = await device.start()
    print(f"path: {path}", flush=True)
    try:
        await device.play(reports, args.pace)
        await device.drain()
        if args.forever:
            await asyncio.Event().wait()
    finally:
        await device.stop()
    print(f"served {device.messages_sent} messages", file=sys.stderr)
    return 0


# -- the conformance kit's sensor ---------------------------------------------------------------

#: The shake before which the kit's alarms are raised.
KIT_ALARM_SHAKE: Final = 4


async def start_for_kit(script: DeviceScript, folder: Path) -> PtySide:
    """A sensor on a pty in ``folder`` playing about ``script.length`` events: seeded shakes,
    one of them unreadable, with the script's alarms."""
    faults = [SensorFault(kind, KIT_ALARM_SHAKE) for kind in script.faults]
    faults.append(SensorFault("not_flat", KIT_ALARM_SHAKE + 2))
    reports = shake(random.Random(script.seed), shakes=max(12, script.length), faults=faults)
    expected = [event for report in reports for event in normalize(report)]
    device = DiceSensor(link_path=str(folder / "sb3d"), faults=list(script.wire_faults),
                        seed=script.seed, chunked=script.chunked)
    return await PtySide(device, lambda: device.play(reports, script.pace), expected,
                         device.hello.serial).start()


SIMULATOR = SimulatorPlugin(
    family="sicbo_dice",
    summary="a three-dice sensor for sic bo (serial; example family)",
    description="""\
A simulated three-dice sensor on a pseudo-terminal: the dealer shakes three fair dice (seeded)
and the camera reads each shake. It prints "path: /dev/pts/N" (or the --link path) first: open
that with the sicbo_dice family (tabled listen --driver sicbo_dice PATH). Alarms and unreadable
shakes at the N-th shake (--fault camera@N, light@N, jam@N, not_flat@N, stacked@N, missing@N)
and byte faults on the wire.""",
    add_arguments=add_arguments,
    serve=serve,
    conformance=DeviceSide(start=start_for_kit, faults=ALARMS,
                           wire_faults=frozenset(BYTE_FAULTS)),
)
