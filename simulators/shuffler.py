"""The automatic shuffler-dealer simulator (``tabled-sim shuffler``): the machine's side on a pty.

Owns the machine's scripted behaviour: Q Poker rounds (a fresh seeded shuffle of one deck, the
deck check, the round's seats, hands of three cards in ascending seat order with the dealer's
last, Art. 7(2)) or baccarat mode (a seeded shoe dealt one card at a time, face up), and the
machine faults injected into it (jam, failure, door open, an exposed card, a short or long
deck). The session is built first as a plain list of protocol messages (:func:`qpoker_script`,
:func:`baccarat_script`, deterministic for a seed) and then played on a
:class:`~tabled.simulators.pty_device.PtyDevice` with the production protocol and link, so a driver
sees exactly the bytes a table would. It never decides what a driver should emit.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, TypeVar

from tabled.contract.events import CARD_CODES, DEALER, RANKS, SUITS, CardDealt, Seat, ShoeStart
from tabled.contract.faults import (
    CARD_EXPOSED,
    DECK_COUNT,
    SHUFFLER_DOOR_OPEN,
    SHUFFLER_FAILURE,
    SHUFFLER_JAM,
)
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import ProtocolError
from tabled.drivers.shuffler import protocol as p
from tabled.drivers.shuffler.driver import normalize
from tabled.games import registry
from tabled.games.options import OptionError
from tabled.games.parts.demo import DemoRecipe
from tabled.games.table import Table
from tabled.simulators.conformance import PtySide
from tabled.simulators.errors import SimulatorError
from tabled.simulators.faults import BYTE_FAULTS, ByteFault, FaultSpecError
from tabled.simulators.games import played_on
from tabled.simulators.ledger import Ledger
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.registry import DeviceScript, DeviceSide, SimulatorPlugin

#: The device family this simulates.
FAMILY: Final = "shuffler"
FIRMWARE: Final = "QSD-3.2.0"
SERIAL_NUMBER: Final = "SD7-004217"
DECK: Final = tuple(rank + suit for suit in SUITS for rank in RANKS)
#: Q Poker player positions when seats are drawn at random (QPokerOptions' default, Art. 2).
DEFAULT_POSITIONS: Final = 7
DEFAULT_ROUNDS: Final = 3  # Q Poker rounds, or baccarat hands
DEFAULT_DECKS: Final = 8
DEFAULT_PACE: Final = 0.2
#: Baccarat: the most cards one hand can take (two each, a third each, Art. 9); the machine
#: reshuffles before a hand when fewer remain.
MAX_BACCARAT_HAND: Final = 6

#: Machine faults that stop the machine mid-deal, and the fault number it reports for each.
HALTS: Final = {"jam": p.DeviceFault.JAM, "failure": p.DeviceFault.FAILURE,
                "door": p.DeviceFault.DOOR_OPEN}
#: Deck-count faults and how far off the count they make the check.
MISCOUNTS: Final = {"short_deck": -1, "long_deck": +1}
MACHINE_FAULTS: Final = (*HALTS, "exposed", *MISCOUNTS)


T = TypeVar("T")


class ScriptError(SimulatorError, ValueError):
    """A session that cannot be played: bad cards, seats, counts or fault specifications."""


@dataclass(frozen=True, slots=True)
class MachineFault:
    """A fault of the machine itself. ``at`` counts hands from 1 over the whole session (jam,
    failure, door, exposed), or rounds / shoes (short_deck, long_deck); ``dealer`` makes
    ``exposed`` hit the dealer's hand of round ``at``."""

    kind: str
    at: int
    dealer: bool = False


def parse_fault(text: str) -> ByteFault | MachineFault:
    """``--fault`` in either form: a byte fault (``corrupt@5``, see tabled.simulators.faults) or a
    machine fault ``KIND@N``, with ``exposed@dealer[:R]`` for the dealer's hand of round R."""
    kind, sep, rest = text.partition("@")
    if kind in BYTE_FAULTS:
        return ByteFault.parse(text)
    if kind not in MACHINE_FAULTS or not sep:
        raise FaultSpecError(f"{text!r}: expected KIND@N with KIND in "
                             f"{(*BYTE_FAULTS, *MACHINE_FAULTS)}")
    if kind == "exposed" and rest.partition(":")[0] == "dealer":
        round_text = rest.partition(":")[2] or "1"
        dealer = True
    else:
        round_text, dealer = rest, False
    if not round_text.isdigit() or int(round_text) < 1:
        raise FaultSpecError(f"{text!r}: N counts from 1")
    return MachineFault(kind, int(round_text), dealer)


def parse_cards(text: str) -> list[str]:
    cards = [c.strip().upper() for c in text.split(",") if c.strip()]
    bad = [c for c in cards if c not in CARD_CODES]
    if bad:
        raise ScriptError(f"not card codes: {', '.join(bad)} (rank {RANKS} + suit {SUITS})")
    return cards


def parse_seats(text: str) -> tuple[int, ...]:
    try:
        seats = tuple(sorted({int(s) for s in text.split(",") if s.strip()}))
    except ValueError:
        raise ScriptError(f"--seats {text!r}: expected numbers like 1,3,5") from None
    if not seats or not 1 <= seats[0] <= seats[-1] < p.NO_SEAT_BYTE:
        raise ScriptError(f"--seats {text!r}: seats are 1-254, at least one")
    return seats


class _Machine:
    """Writes down what the machine says, keeping its status as the machine would."""

    def __init__(self, mode: p.Mode, decks: int, faults: Sequence[MachineFault]) -> None:
        self.mode = mode
        self.decks = decks
        self.faults = list(faults)
        self.status = p.Status(p.MachineState.IDLE, mode)
        self.messages: list[p.Message] = []
        self.hands = 0  # hands begun in the session, the N of jam@N and exposed@N

    def say(self, msg: p.Message) -> None:
        self.status = self.status.after(msg)
        self.messages.append(msg)

    def shuffle(self, number: int) -> None:
        """Shuffle and count for round (or shoe) ``number``. A miscount halts the machine until
        the dealer replaces the deck; then it shuffles and counts again."""
        expected = self.decks * p.CARDS_PER_DECK
        counts = [expected + MISCOUNTS[f.kind] for f in self.faults
                  if f.kind in MISCOUNTS and f.at == number]
        for found in (*counts, expected):
            self.say(p.ShuffleStarted(self.mode, self.decks))
            self.say(p.ShuffleComplete())
            self.say(p.DeckCheck(self.mode, self.decks, found))

    def begin_hand(self) -> p.DeviceFault | None:
        """Count a hand begun; the fault that stops the machine while dealing it, if any."""
        self.hands += 1
        return next((HALTS[f.kind] for f in self.faults
                     if f.kind in HALTS and f.at == self.hands), None)

    def halt(self, code: p.DeviceFault, number: int = 0, seat: Seat | None = None) -> None:
        """The machine stops on ``code``; the dealer clears it and the machine says so."""
        self.say(p.Fault(code, number, seat))
        self.say(replace(self.status, state=p.MachineState.IDLE, fault=0))

    def exposed(self, rng: random.Random, number: int, seat: Seat) -> tuple[bool, ...]:
        """Which cards of this hand the machine sees turned face up (one, chosen by the seed,
        when an ``exposed`` fault names the hand)."""
        hit = any(
            f.kind == "exposed"
            and ((f.at == number and seat == DEALER) if f.dealer else f.at == self.hands)
            for f in self.faults
        )
        face_up = rng.randrange(p.CARDS_PER_HAND) if hit else -1
        return tuple(i == face_up for i in range(p.CARDS_PER_HAND))


def qpoker_script(
    rng: random.Random,
    *,
    rounds: int | None = DEFAULT_ROUNDS,
    seats: tuple[int, ...] | None = None,
    positions: int = DEFAULT_POSITIONS,
    cards: Sequence[str] = (),
    faults: Sequence[MachineFault] = (),
) -> list[p.Message]:
    """Every message of a Q Poker session, in order. Each round: a fresh shuffle of one deck
    and its check, the round's seats (``seats``, or drawn from 1..``positions``), then the
    hands of three, ascending seats, dealer last (Art. 7(2)). ``cards`` gives the deal order
    (each round takes the next cards it needs; with ``rounds`` None, the rounds go on until
    the cards are used). A halt stops the round: its remaining hands never come."""
    machine = _Machine(p.Mode.QPOKER, 1, faults)
    explicit = deque(cards)
    number = 0
    while explicit if rounds is None else number < rounds:
        number += 1
        machine.shuffle(number)
        round_seats = seats or tuple(sorted(
            rng.sample(range(1, positions + 1), rng.randint(1, positions))))
        order: tuple[Seat, ...] = (*round_seats, DEALER)
        need = p.CARDS_PER_HAND * len(order)
        if explicit and len(explicit) < need:
            raise ScriptError(f"round {number} needs {need} cards; --cards has "
                              f"{len(explicit)} left")
        deal = ([explicit.popleft() for _ in range(need)] if explicit
                else rng.sample(DECK, need))
        machine.say(p.RoundSeats(number, round_seats))
        for i, seat in enumerate(order):
            halt = machine.begin_hand()
            if halt is not None:
                machine.halt(halt, number, seat)
                break
            hand = tuple(deal[p.CARDS_PER_HAND * i: p.CARDS_PER_HAND * (i + 1)])
            machine.say(p.Hand(number, seat, hand, machine.exposed(rng, number, seat)))
    return machine.messages


@dataclass(slots=True)
class _Shoe:
    """Baccarat mode: the set the machine shuffled, what is left of it, and the rules core
    that tells where a hand ends."""

    number: int
    cards: deque[str]
    table: Table
    explicit: bool
    dealt: int = 0


def baccarat_script(
    rng: random.Random,
    *,
    hands: int | None = DEFAULT_ROUNDS,
    decks: int = DEFAULT_DECKS,
    cards: Sequence[str] = (),
    faults: Sequence[MachineFault] = (),
) -> list[p.Message]:
    """Every message of a baccarat-mode session: a seeded shoe of ``decks`` decks (the first
    shoe in the order ``cards`` gives, if any), shuffled and counted, dealt one card at a time,
    face up. A hand ends when the rules core says it is complete (baccarat.art9); the machine
    reshuffles when a hand might not fit in what is left (an explicit shoe is dealt to its
    last card). With ``hands`` None, the first shoe is dealt to its end. A halt stops the
    machine after the hand's first card; to recover, it reshuffles the whole set.
    ``short_deck@N`` and ``long_deck@N`` count shoes."""
    if any(f.kind == "exposed" for f in faults):
        raise ScriptError("exposed applies to Q Poker: every baccarat card comes out face up "
                          "(baccarat.art7)")
    game = dealt_in(p.Mode.BACCARAT)
    try:
        options = registry.options_of(game, {"decks": decks})
    except OptionError as exc:
        raise ScriptError(f"--decks: {exc}") from None
    machine = _Machine(p.Mode.BACCARAT, decks, faults)
    full_set = DECK * decks

    def new_shoe(number: int, order: Sequence[str] = ()) -> _Shoe:
        machine.shuffle(number)
        return _Shoe(number, deque(order or rng.sample(full_set, len(full_set))),
                     registry.make_table(game, options), explicit=bool(order))

    shoe = new_shoe(1, cards)
    hand = 0
    while hands is None or hand < hands:
        if not shoe.cards or (len(shoe.cards) < MAX_BACCARAT_HAND and not shoe.explicit):
            if hands is None:
                break
            shoe = new_shoe(shoe.number + 1)
        hand += 1
        halt = machine.begin_hand()
        while True:
            if not shoe.cards:
                raise ScriptError(f"--cards end in the middle of hand {hand}")
            card = shoe.cards.popleft()
            shoe.dealt += 1
            machine.say(p.Card(shoe.dealt, card))
            if halt is not None:
                machine.halt(halt)
                shoe = new_shoe(shoe.number + 1)  # to recover, the whole set is reshuffled
                break
            outputs = shoe.table.feed(CardDealt(card=card, face_up=True))
            if any(isinstance(out, Outcome) for out in outputs):
                break
    return machine.messages


def _fault_name(code: int) -> str:
    try:
        return p.DeviceFault(code).name.lower()
    except ValueError:
        return f"fault_{code}"


def ledger_records(script: Sequence[p.Message]) -> list[tuple[int, dict[str, Any]]]:
    """What the machine deals in ``script``, one ledger record per round (Q Poker) or hand
    (baccarat mode), each with the index of the message after which it is dealt
    (docs/protocols/ledger.md).

    Q Poker: ``round`` (the machine's), ``seats``, ``hands`` (seat -> its three cards, in
    dealing order, the dealer last), ``exposed`` (seat -> cards seen face up), ``faults`` (the
    machine's: ``short_deck``/``long_deck`` at its deck check, a halt's ``jam``/``failure``/
    ``door_open``, ``card_exposed``) and ``halted`` (the halt that cut the deal short, or None).
    Baccarat mode: ``shoe``, ``round``, ``cards``, ``faults``, ``interrupted`` and the
    ``outcome`` the machine's rules core makes of the hand (it deals face up, one card at a
    time, so a halt mid-hand voids it at the reshuffle: baccarat.art10)."""
    out: list[tuple[int, dict[str, Any]]] = []
    faults: list[str] = []
    qround: dict[str, Any] | None = None
    table: Table | None = None
    shoe = 0
    cards: list[str] = []
    for index, msg in enumerate(script):
        if isinstance(msg, p.DeckCheck):
            if msg.found != msg.expected:
                faults.append("short_deck" if msg.found < msg.expected else "long_deck")
            elif msg.mode is p.Mode.BACCARAT:
                shoe += 1
                if table is None:
                    game = dealt_in(p.Mode.BACCARAT)
                    options = registry.options_of(game, {"decks": msg.decks})
                    table = registry.make_table(game, options)
                outputs = table.feed(ShoeStart(decks=msg.decks))
                out += _baccarat_records(index, outputs, shoe - 1, cards, faults)
        elif isinstance(msg, p.RoundSeats):
            qround = {"game": dealt_in(p.Mode.QPOKER), "round": msg.round, "seats": list(msg.seats),
                      "hands": {}, "exposed": {}, "faults": faults, "halted": None}
            faults = []
        elif isinstance(msg, p.Hand) and qround is not None:
            qround["hands"][str(msg.seat)] = list(msg.cards)
            if msg.exposed_cards:
                qround["exposed"][str(msg.seat)] = list(msg.exposed_cards)
                qround["faults"].append("card_exposed")
            if msg.seat == DEALER:
                out.append((index, qround))
                qround = None
        elif isinstance(msg, p.Fault):
            if qround is not None:
                qround["faults"].append(_fault_name(msg.code))
                qround["halted"] = _fault_name(msg.code)
                out.append((index, qround))
                qround = None
            else:
                faults.append(_fault_name(msg.code))
        elif isinstance(msg, p.Card) and table is not None:
            cards.append(msg.card)
            outputs = table.feed(CardDealt(card=msg.card, face_up=True))
            out += _baccarat_records(index, outputs, shoe, cards, faults)
    return out


def _baccarat_records(index: int, outputs: Sequence[object], shoe: int, cards: list[str],
                      faults: list[str]) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for output in outputs:
        if isinstance(output, Outcome):
            records.append((index, {
                "game": dealt_in(p.Mode.BACCARAT), "shoe": shoe, "round": output.round,
                "cards": list(cards),
                "faults": list(faults),
                "interrupted": output.status == "void" and bool(faults),
                "outcome": output.to_record()}))
            cards.clear()
            faults.clear()
    return records


def reply(request: p.Message, status: p.Status,
          info: p.Info = p.Info(FIRMWARE, SERIAL_NUMBER)) -> p.Message | None:  # noqa: B008
    """The machine's answer to a host message: INFO, STATUS, or nothing."""
    if isinstance(request, p.InfoRequest):
        return info
    if isinstance(request, p.StatusRequest):
        return status
    return None


class ShufflerSimulator(PtyDevice):
    """The machine on a pseudo-terminal: plays a script, answers INFO and STATUS requests."""

    def __init__(self, mode: p.Mode, *, link_path: str | None = None,
                 faults: list[ByteFault] | None = None, seed: int = 0,
                 serial: str = SERIAL_NUMBER, chunked: bool = False) -> None:
        self.info = p.Info(FIRMWARE, serial)
        # The link handshake says who the machine is (its INFO): a host of another family, or
        # one configured for another serial number, refuses it before taking any message.
        super().__init__(link_path=link_path, faults=faults, seed=seed,
                         identity=p.encode(self.info), chunked=chunked)
        self.status = p.Status(p.MachineState.IDLE, mode)

    def message_received(self, kind: int, payload: bytes) -> None:
        try:
            answer = reply(p.decode(kind, payload), self.status, self.info)
        except ProtocolError:
            return  # a garbled request goes unanswered, as on the real machine
        if answer is not None:
            self.send(*p.encode(answer))

    async def play(self, script: Sequence[p.Message], pace: float = 0.0,
                   next_round: Callable[[], Awaitable[bool]] | None = None,
                   ledger: Ledger | None = None) -> None:
        """Send the script's messages, ``pace`` seconds apart (kept for the host across
        disconnects: the link delivers each exactly once). With ``next_round``, every shuffle
        after the first waits for it, as the machine waits for the dealer's "deal" button
        (False: no more rounds). With ``ledger``, each round is written as it is dealt."""
        records: dict[int, list[dict[str, Any]]] = {}
        for index, record in ledger_records(script) if ledger is not None else ():
            records.setdefault(index, []).append(record)
        first = True
        for index, msg in enumerate(script):
            if (isinstance(msg, p.ShuffleStarted) and next_round is not None and not first
                    and not await next_round()):
                return
            first = first and not isinstance(msg, p.ShuffleStarted)
            self.status = self.status.after(msg)
            self.send(*p.encode(msg))
            if ledger is not None:
                for record in records.get(index, ()):
                    ledger.write(record)
            await asyncio.sleep(pace)


# -- tabled-sim shuffler -----------------------------------------------------------------------


def _option(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse ``type`` that shows our reason, not "invalid value"."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__
    return convert


@functools.cache
def modes() -> dict[str, p.Mode]:
    """The games a shuffler-dealer deals, each with the machine's mode that deals it (as each
    game's demo recipe names it: ``modes``)."""
    found: dict[str, p.Mode] = {}
    for name in registry.games():
        recipe = registry.part(name, "demo")
        word = recipe.modes.get(FAMILY) if isinstance(recipe, DemoRecipe) else None
        if word is not None and word.upper() in p.Mode.__members__:
            found[name] = p.Mode[word.upper()]
    return found


def dealt_in(mode: p.Mode) -> str:
    """The game the machine's ``mode`` deals (its rules tell where a hand ends; its name is
    the ledger's ``game``)."""
    for name, its in modes().items():
        if its is mode:
            return name
    raise ScriptError(f"no installed game is dealt in the machine's {mode.name.lower()} mode")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tabled-sim shuffler``."""
    dealt = modes()
    default = played_on(FAMILY)
    parser.add_argument("--game", choices=sorted(dealt), default=default,
                        help="the game to deal, in the machine's mode for it: "
                        + ", ".join(f"{name} ({mode.name.lower()} mode)"
                                    for name, mode in dealt.items())
                        + f" (default: {default})")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"Q Poker rounds / baccarat hands (default {DEFAULT_ROUNDS}, or as "
                             "many as --cards fill)")
    parser.add_argument("--seats", type=_option(parse_seats), default=None,
                        help="Q Poker seats with a bet, e.g. 1,3,5 (default: drawn per round)")
    parser.add_argument("--positions", type=int, default=DEFAULT_POSITIONS,
                        help="Q Poker player positions to draw seats from (default 7)")
    parser.add_argument("--decks", type=int, default=DEFAULT_DECKS,
                        help="baccarat: decks in the shoe (default 8)")
    parser.add_argument("--cards", type=_option(parse_cards), default=[],
                        help="explicit deal order, e.g. AS,KH,7D,... (the first shoe in "
                             "baccarat mode)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for shuffles and seats (default: random, printed on stderr)")
    parser.add_argument("--pace", type=float, default=DEFAULT_PACE,
                        help=f"seconds between messages (default {DEFAULT_PACE})")
    parser.add_argument("--fault", action="append", default=[], type=_option(parse_fault),
                        help="inject a fault, repeatable: jam@N, failure@N, door@N, exposed@N, "
                             "exposed@dealer[:R], short_deck@R, long_deck@R (N counts hands), "
                             "or a byte fault: corrupt@N, truncate@N, drop@N[:K], garbage@N[:K], "
                             "stall@N[:S], disconnect@N[:S] (N counts data frames)")
    parser.add_argument("--link", default=None,
                        help="a stable symlink to the pty that follows replugs")
    parser.add_argument("--serial", default=SERIAL_NUMBER,
                        help=f"the serial number the machine reports (default {SERIAL_NUMBER})")
    parser.add_argument("--forever", action="store_true",
                        help="keep serving requests after the script ends")
    parser.add_argument("--ledger", metavar="FILE",
                        help="write one JSON line per round as dealt (docs/protocols/ledger.md)")
    parser.add_argument("--step", action="store_true",
                        help="wait for a line on standard input before each shuffle after the "
                        "first (the dealer's deal button: a console settles the round first)")


def build_script(args: argparse.Namespace, rng: random.Random) -> list[p.Message]:
    """The session ``args`` describe (ScriptError if it cannot be played)."""
    faults = [f for f in args.fault if isinstance(f, MachineFault)]
    rounds = args.rounds if args.rounds is not None or args.cards else DEFAULT_ROUNDS
    if modes()[args.game] is p.Mode.BACCARAT:
        return baccarat_script(rng, hands=rounds, decks=args.decks, cards=args.cards,
                               faults=faults)
    return qpoker_script(rng, rounds=rounds, seats=args.seats, positions=args.positions,
                         cards=args.cards, faults=faults)


class DealButton:
    """The dealer's "deal" button: a line on standard input (end of input: no more rounds).

    A pipe or a terminal is read by the event loop, not by a worker thread: a simulator stopped
    while it waits for the dealer must not wait for a line that never comes (asyncio.run joins
    its threads) before it exits. A file or /dev/null, which the loop cannot watch, never
    blocks: it is read directly."""

    def __init__(self) -> None:
        self._reader: asyncio.StreamReader | None = None
        self._direct = False

    async def pressed(self) -> bool:
        if self._reader is None and not self._direct:
            reader = asyncio.StreamReader()
            try:
                await asyncio.get_running_loop().connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
            except (ValueError, OSError):
                self._direct = True
            else:
                self._reader = reader
        if self._reader is None:
            return bool(sys.stdin.readline())
        return bool(await self._reader.readline())


async def serve(args: argparse.Namespace) -> int:
    """Run ``tabled-sim shuffler``: print ``path: ...``, wait for a host, play the session,
    wait until the host has every message, then exit (or keep serving with ``--forever``)."""
    seed = random.SystemRandom().randrange(2**32) if args.seed is None else args.seed
    print(f"seed: {seed}", file=sys.stderr)
    try:
        script = build_script(args, random.Random(seed))
    except ScriptError as exc:
        print(f"tabled-sim shuffler: {exc}", file=sys.stderr)
        return 2
    mode = modes()[args.game]
    device = ShufflerSimulator(
        mode, link_path=args.link, seed=seed,
        faults=[f for f in args.fault if isinstance(f, ByteFault)], serial=args.serial,
    )
    path = await device.start()
    print(f"path: {path}", flush=True)
    ledger = None if args.ledger is None else Ledger(args.ledger, device="shuffler",
                                                      serial=args.serial)
    try:
        await device.host_connected.wait()
        await device.play(script, args.pace,
                          next_round=DealButton().pressed if args.step else None,
                          ledger=ledger)
        await device.drain()
        if args.forever:
            await asyncio.Event().wait()
    finally:
        await device.stop()
        if ledger is not None:
            ledger.close()
    return 0


# -- the conformance kit's machine (tabled.tools.conformance) ----------------------------------

#: The kit's Q Poker seats: three players and the dealer, four hands a round.
KIT_SEATS: Final = (1, 2, 3)
#: The kit's machine faults: each one's fault code, and where it happens (the N of ``KIND@N``:
#: the second hand of the session, or the first round's deck check).
KIT_FAULTS: Final = {"jam": SHUFFLER_JAM, "failure": SHUFFLER_FAILURE,
                     "door": SHUFFLER_DOOR_OPEN, "exposed": CARD_EXPOSED,
                     "short_deck": DECK_COUNT, "long_deck": DECK_COUNT}
_KIT_FAULT_AT: Final = {"short_deck": 1, "long_deck": 1}


async def start_for_kit(script: DeviceScript, folder: Path) -> PtySide:
    """A machine in Q Poker mode on a pty in ``folder``, dealing rounds of four hands until
    about ``script.length`` events, with the script's machine faults."""
    machine_faults = [MachineFault(kind, _KIT_FAULT_AT.get(kind, 2)) for kind in script.faults]
    messages = qpoker_script(random.Random(script.seed), rounds=max(2, script.length // 5),
                             seats=KIT_SEATS, faults=machine_faults)
    expected = [event for msg in messages for event in normalize(msg)]
    device = ShufflerSimulator(p.Mode.QPOKER, link_path=str(folder / "shuffler"),
                               faults=list(script.wire_faults), seed=script.seed,
                               chunked=script.chunked)
    return await PtySide(device, lambda: device.play(messages, script.pace), expected,
                         device.info.serial).start()


SIMULATOR = SimulatorPlugin(
    family=FAMILY,
    summary="an automatic shuffler-dealer, Q Poker or baccarat mode (serial)",
    description="""\
A simulated automatic shuffler-dealer on a pseudo-terminal: in Q Poker mode it shuffles a deck
per round and deals each seat with a bet three cards at a time, the dealer last; in baccarat
mode it deals one card at a time face up from an 8-deck set. It prints "path: /dev/pts/N" (or
the --link path) first. Faults (--fault KIND@N): jam, failure, door, exposed, short and long
decks, and byte faults on the wire. Any way it ends removes its --link.""",
    add_arguments=add_arguments,
    serve=serve,
    conformance=DeviceSide(start=start_for_kit, faults=KIT_FAULTS,
                           wire_faults=frozenset(BYTE_FAULTS)),
)
