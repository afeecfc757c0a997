"""The ACME CardEye 2, simulated (``tabled-sim acme_shoe``), and its side of the conformance kit.

Owns the shoe's side: :func:`deal` writes the session as the shoe reports it (a seeded shoe,
the burns, the cards dealt, the cut card, and the errors injected at the pulls a fault names),
:class:`CardEye` plays it on a pseudo-terminal with tabled's own link
(:class:`~tabled.simulators.pty_device.PtyDevice`: byte faults, unplug and replug come with it)
and answers ``QRY``. :data:`SIMULATOR` registers both uses in the ``tabled.simulators``
entry-point group. It never decides what a driver should emit: what the script stands for is
the driver's own :func:`~tabled_acme_shoe.driver.normalize`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tabled.contract.events import RANKS, SUITS
from tabled.contract.faults import SHOE_EMPTY, SHOE_SENSOR_DIRTY, UNREADABLE_CARD
from tabled.drivers.errors import ProtocolError
from tabled.simulators.conformance import PtySide
from tabled.simulators.faults import BYTE_FAULTS, ByteFault, FaultSpecError
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.registry import DeviceScript, DeviceSide, SimulatorPlugin

from tabled_acme_shoe.driver import normalize
from tabled_acme_shoe.protocol import (
    MODEL,
    CutSeen,
    Drawn,
    Error,
    ErrorRaised,
    Ident,
    Message,
    Mode,
    NewShoe,
    Query,
    Report,
    Status,
    decode,
    encode,
)

FIRMWARE: Final = "2.3"
SERIAL: Final = "CE2-000417"
#: The shoe's errors a script can inject at the N-th pull (``KIND@N``), and the fault code each
#: must arrive as.
ERRORS: Final = {"misread": UNREADABLE_CARD, "window": SHOE_SENSOR_DIRTY, "empty": SHOE_EMPTY}
#: How many cards the dealer burns after the first burned card: its value (court cards ten).
BURN_MORE: Final = {rank: min(i + 1, 10) for i, rank in enumerate(RANKS)}


@dataclass(frozen=True, slots=True)
class ShoeError:
    """An error at the ``at``-th pull at the shoe (every card drawn, burns included, from 1):
    ``misread`` (that card is not read), ``window`` (the window error comes first), ``empty``
    (the shoe says it is empty; the dealer loads the next one)."""

    kind: str
    at: int


class _ShoeEmpty(Exception):
    """The shoe had no card to draw (or said so): the dealer loads the next shoe."""


class _Session:
    """Writes down what the shoe reports while a dealer deals from it."""

    def __init__(self, rng: random.Random, decks: int, errors: Sequence[ShoeError]) -> None:
        self.rng = rng
        self.decks = decks
        self.plan: dict[int, set[str]] = {}
        for error in errors:
            self.plan.setdefault(error.at, set()).add(error.kind)
        self.messages: list[Report] = []
        self.pulls = 0
        self.count = 0
        self.cut_after: int | None = None
        self.cards: deque[str] = deque()

    def new_shoe(self) -> None:
        cards = [rank + suit for _ in range(self.decks) for rank in RANKS for suit in SUITS]
        self.rng.shuffle(cards)
        self.cards, self.count, self.cut_after = deque(cards), 0, None
        self.messages.append(NewShoe(self.decks))

    def pull(self, *, burn: bool) -> str | None:
        """One card drawn: the card read, or None (misread); _ShoeEmpty if there is none."""
        self.pulls += 1
        planned = self.plan.get(self.pulls, set())
        if self.cut_after is not None and self.count >= self.cut_after:
            self.messages.append(CutSeen(self.count))
            self.cut_after = None
        if "window" in planned:
            self.messages.append(ErrorRaised(Error.WINDOW, self.count))
        if not self.cards or "empty" in planned:
            self.messages.append(ErrorRaised(Error.EMPTY, self.count))
            raise _ShoeEmpty
        card = self.cards.popleft()
        self.count += 1
        if "misread" in planned:
            self.messages.append(ErrorRaised(Error.MISREAD, self.count, burn))
            return None
        self.messages.append(Drawn(self.count, card, burn))
        return card


def deal(rng: random.Random, *, decks: int = 8, cards: int = 60,
         errors: Sequence[ShoeError] = ()) -> list[Report]:
    """Every report of a session, in order: a shoe of ``decks`` decks shuffled by ``rng``, the
    burns (the first card, then as many as its value), ``cards`` cards dealt, the cut card
    after two thirds of them, and the ``errors`` at their pulls. A shoe that runs out (or says
    so) is followed by the next one, burns and all, until the cards are dealt."""
    session = _Session(rng, decks, errors)
    dealt = 0
    while dealt < cards:
        session.new_shoe()
        try:
            first = session.pull(burn=True)
            for _ in range(BURN_MORE[first[0]] if first else 1):
                session.pull(burn=True)
            session.cut_after = session.count + 2 * (cards - dealt) // 3
            while dealt < cards:
                session.pull(burn=False)
                dealt += 1
        except _ShoeEmpty:
            continue
    return session.messages


class CardEye(PtyDevice):
    """The shoe's electronics on a pseudo-terminal: it says who it is in the link handshake
    (its ``ID`` sentence), sends its reports, and answers ``QRY`` with its ``STA``."""

    def __init__(self, *, serial: str = SERIAL, link_path: str | None = None,
                 faults: list[ByteFault] | None = None, seed: int = 0,
                 chunked: bool = False) -> None:
        self.ident = Ident(MODEL, FIRMWARE, serial)
        super().__init__(link_path=link_path, faults=faults, seed=seed,
                         identity=encode(self.ident), chunked=chunked)
        self.state = Status(Mode.IDLE, 0, 0)

    def report(self, report: Report) -> None:
        self.state = _after(self.state, report)
        self.send(*encode(report))

    def message_received(self, kind: int, payload: bytes) -> None:
        try:
            request = decode(kind, payload)
        except ProtocolError:
            return  # a garbled or unknown request goes unanswered
        if isinstance(request, Query):
            self.send(*encode(self.state))

    async def play(self, reports: Sequence[Report], pace: float) -> None:
        """Send ``reports``, ``pace`` seconds apart (the shoe keeps them for a host)."""
        for report in reports:
            self.report(report)
            await asyncio.sleep(pace)


def _after(state: Status, report: Message) -> Status:
    """The shoe's state once it has reported ``report``."""
    match report:
        case NewShoe(decks=decks):
            return Status(Mode.DEAL, decks, 0, state.window)
        case Drawn(count=count) | ErrorRaised(code=Error.MISREAD, count=count):
            return Status(state.mode, state.decks, count, state.window)
        case ErrorRaised(code=Error.WINDOW):
            return Status(state.mode, state.decks, state.count, True)
        case ErrorRaised(code=Error.EMPTY):
            return Status(Mode.EMPTY, state.decks, state.count, state.window)
        case _:
            return state


# -- tabled-sim acme_shoe ---------------------------------------------------------------------


def parse_fault(text: str) -> ShoeError | ByteFault:
    """``--fault``: an error ``KIND@N`` (N counts pulls from 1) or a byte fault of
    tabled.simulators.faults (N counts data frames)."""
    kind, sep, at = text.partition("@")
    if kind in BYTE_FAULTS:
        return ByteFault.parse(text)
    if kind not in ERRORS or not sep or not at.isdigit() or int(at) < 1:
        raise FaultSpecError(f"{text!r}: expected KIND@N with KIND in "
                             f"{(*ERRORS, *BYTE_FAULTS)} and N from 1")
    return ShoeError(kind, int(at))


def _fault_arg(text: str) -> ShoeError | ByteFault:
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
    """The options of ``tabled-sim acme_shoe``."""
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffles (default 0)")
    parser.add_argument("--decks", type=_count(1, 16), default=8, metavar="N",
                        help="decks per shoe (default 8)")
    parser.add_argument("--cards", type=_count(1, 10_000), default=60, metavar="N",
                        help="cards to deal after the burns (default 60)")
    parser.add_argument("--pace", type=float, default=0.5, metavar="SECONDS",
                        help="seconds between two reports (default 0.5)")
    parser.add_argument("--fault", type=_fault_arg, action="append", default=[],
                        metavar="KIND@N[:ARG]",
                        help=f"errors {', '.join(ERRORS)} at the N-th card drawn, or byte faults "
                             f"{', '.join(BYTE_FAULTS)} at the N-th data frame")
    parser.add_argument("--link", metavar="PATH",
                        help="a stable symlink to the pty that follows replugs")
    parser.add_argument("--serial", default=SERIAL,
                        help=f"the serial number the shoe reports (default {SERIAL})")
    parser.add_argument("--forever", action="store_true",
                        help="stay plugged in after the session")


async def serve(args: argparse.Namespace) -> int:
    """Serve one CardEye: print ``path: ...``, deal the session, wait until a host has every
    report, then end (or stay, with ``--forever``)."""
    reports = deal(random.Random(args.seed), decks=args.decks, cards=args.cards,
                   errors=[f for f in args.fault if isinstance(f, ShoeError)])
    device = CardEye(serial=args.serial, link_path=args.link, seed=args.seed,
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


# -- the conformance kit's CardEye --------------------------------------------------------------

#: The pull of the kit's errors: a dealt card (the burns take at most 11 pulls).
KIT_ERROR_PULL: Final = 12


async def start_for_kit(script: DeviceScript, folder: Path) -> PtySide:
    """A CardEye on a pty in ``folder`` dealing about ``script.length`` events: a seeded
    6-deck shoe, its burns and ``length - 6`` cards at least, with the script's errors."""
    reports = deal(random.Random(script.seed), decks=6, cards=max(6, script.length - 6),
                   errors=[ShoeError(kind, KIT_ERROR_PULL) for kind in script.faults])
    expected = [event for report in reports for event in normalize(report)]
    device = CardEye(link_path=str(folder / "cardeye"), faults=list(script.wire_faults),
                     seed=script.seed, chunked=script.chunked)
    return await PtySide(device, lambda: device.play(reports, script.pace), expected,
                         device.ident.serial).start()


SIMULATOR = SimulatorPlugin(
    family="acme_shoe",
    summary="an ACME CardEye 2 card-reading shoe (serial; example vendor family)",
    description="""\
A simulated ACME CardEye 2 on a pseudo-terminal: a seeded shoe is loaded, the dealer burns the
first card and as many as its value, deals the cards, and the cut card comes out after two
thirds of them. It prints "path: /dev/pts/N" (or the --link path) first: open that with the
acme_shoe family (tabled listen --driver acme_shoe PATH). Errors at the N-th card drawn
(--fault misread@N, window@N, empty@N) and byte faults on the wire.""",
    add_arguments=add_arguments,
    serve=serve,
    conformance=DeviceSide(start=start_for_kit, faults=ERRORS,
                           wire_faults=frozenset(BYTE_FAULTS)),
)
