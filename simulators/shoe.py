"""The card-reading shoe, simulated (``tabled-sim shoe``): a dealer plays real baccarat through a
reading shoe served on a pseudo-terminal.

Owns three parts of the table, each playing one role: :class:`ShoeReader` is the shoe's
electronics (counts the cards, arms a burn, keeps the status, answers the host);
:class:`Dealer` is the dealer's hands on the shoe (loads it, burns, deals demonstration and real
hands, meets the cut card, presses the buttons the family faults call for); :class:`ShoeDevice`
puts the reader on a pty. It never decides what a driver should emit: the dealer asks the rules
core (``tabled.games.table``) only when a hand is complete, feeding it the very events the shoe's
reports stand for (:func:`tabled.drivers.shoe.driver.normalize`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from tabled.contract.events import CARD_CODES, RANKS, SUITS
from tabled.contract.faults import SHOE_EMPTY, SHOE_SENSOR_DIRTY, UNREADABLE_CARD
from tabled.contract.outcome import Outcome
from tabled.drivers.errors import ProtocolError
from tabled.drivers.shoe.driver import normalize
from tabled.drivers.shoe.protocol import (
    Button,
    ButtonPressed,
    CardOut,
    CutCardOut,
    DeviceFault,
    DeviceInfo,
    FaultCode,
    InfoRequest,
    Report,
    ShoeLoaded,
    ShoeState,
    ShoeStatus,
    StatusRequest,
    decode,
    encode,
)
from tabled.games.registry import make_table, options_of
from tabled.games.table import Table
from tabled.simulators.conformance import PtySide
from tabled.simulators.faults import BYTE_FAULTS, ByteFault, FaultSpecError
from tabled.simulators.games import played_on
from tabled.simulators.ledger import Ledger
from tabled.simulators.pty_device import PtyDevice
from tabled.simulators.registry import DeviceScript, DeviceSide, SimulatorPlugin

#: The device family this simulates (the game it deals is the one whose demo recipe names it).
FAMILY: Final = "shoe"
FIRMWARE: Final = "shoe-sim 1.0"
SERIAL: Final = "SHOE-SIM-0001"
#: Art. 2: the cut card goes in about 12 cards from the end; the simulator draws 12 to 16.
CUT_CARD_FROM_END: Final = (12, 16)
#: Art. 2 "as many as the first card's value says": tens and court cards burn ten (common
#: practice; Art. 5's zero is a hand's value, not a count).
BURN_COUNT: Final = {rank: min(i + 1, 10) for i, rank in enumerate(RANKS)}
#: Family faults, each at the N-th pull at the shoe (``KIND@N``).
SHOE_FAULTS: Final = ("unreadable", "dirty", "empty", "burn", "void")
#: How many reports the shoe keeps for a host that is not listening before the dealer waits.
MAX_BACKLOG: Final = 256

BurnRule = Literal["value", "decks"]


def shuffled_shoe(rng: random.Random, decks: int) -> list[str]:
    """A shoe of ``decks`` 52-card decks in the order ``rng`` shuffles it."""
    cards = [rank + suit for _ in range(decks) for rank in RANKS for suit in SUITS]
    rng.shuffle(cards)
    return cards


# -- shoes that were not properly shuffled (``--preset``) -------------------------------------

#: A new deck's order, as the packs come: A to K of spades, then hearts, clubs, diamonds.
NEW_DECK_ORDER: Final = tuple(rank + suit for suit in SUITS for rank in RANKS)
PresetKind = Literal["replay", "sorted", "riffle"]


@dataclass(frozen=True, slots=True)
class Preset:
    """A shoe not shuffled as it should be (the integrity monitors' test cases):

    - ``replay``: the cards at positions ``start`` .. ``start + length - 1`` (from 0, burns
      included) are those of the same positions of the first shoe ``--seed seed`` deals (a
      replayed "slug" of an earlier shoe, in its order);
    - ``sorted``: those positions hold cards in a new deck's order (AS 2S … KS AH … KD, again
      from AS after 52), an unshuffled block;
    - ``riffle``: every shoe after the first is the previous shoe's order given one riffle
      (Gilbert-Shannon-Reeds) instead of a shuffle, so its sequences persist.

    A block is made of cards taken from the shuffled shoe itself, so the shoe still holds
    exactly ``decks`` of every card."""

    kind: PresetKind
    seed: int = 0
    start: int = 0
    length: int = 0


def parse_preset(text: str) -> Preset:
    """``replay:SEED:START:LEN``, ``sorted:START:LEN`` or ``riffle``; FaultSpecError else."""
    kind, *numbers = text.split(":")
    arity = {"replay": 3, "sorted": 2, "riffle": 0}
    if kind not in arity or len(numbers) != arity[kind] or not all(
            n.isdigit() for n in numbers):
        raise FaultSpecError(f"{text!r}: expected replay:SEED:START:LEN, sorted:START:LEN or "
                             "riffle (whole numbers)")
    values = [int(n) for n in numbers]
    if kind == "riffle":
        return Preset("riffle")
    if values[-1] < 1:
        raise FaultSpecError(f"{text!r}: the block needs at least one card")
    if kind == "replay":
        return Preset("replay", values[0], values[1], values[2])
    return Preset("sorted", 0, values[0], values[1])


def place_block(cards: Sequence[str], block: Sequence[str], start: int) -> list[str]:
    """``cards`` with ``block`` at positions ``start`` on, its cards taken out of the rest (one
    copy each), so the shoe's composition is unchanged. ValueError when the shoe does not hold
    the block's cards or the block does not fit."""
    if start + len(block) > len(cards):
        raise ValueError(f"a block of {len(block)} at {start} does not fit a shoe of "
                         f"{len(cards)} cards")
    rest = list(cards)
    for card in block:
        rest.remove(card)  # ValueError: more copies than the shoe holds
    return rest[:start] + list(block) + rest[start:]


def riffle(rng: random.Random, cards: Sequence[str]) -> list[str]:
    """One Gilbert-Shannon-Reeds riffle: cut binomially, then drop cards from the two packets,
    each next card from a packet with probability proportional to its size."""
    n = len(cards)
    cut = sum(rng.random() < 0.5 for _ in range(n))
    left, right = list(cards[:cut]), list(cards[cut:])
    out: list[str] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if rng.random() * (len(left) - i + len(right) - j) < len(left) - i:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def preset_shoe(rng: random.Random, decks: int, preset: Preset | None,
                previous: Sequence[str] | None = None) -> list[str]:
    """The next shoe's order: shuffled by ``rng``, or as ``preset`` spoils it (``previous``:
    the order of the shoe before, which ``riffle`` riffles; a first shoe is shuffled)."""
    if preset is not None and preset.kind == "riffle" and previous:
        return riffle(rng, previous)
    cards = shuffled_shoe(rng, decks)
    if preset is None or preset.kind == "riffle":
        return cards
    if preset.kind == "replay":
        block = shuffled_shoe(random.Random(preset.seed), decks)[
            preset.start:preset.start + preset.length]
    else:
        block = [NEW_DECK_ORDER[i % len(NEW_DECK_ORDER)] for i in range(preset.length)]
    return place_block(cards, block, preset.start)


# -- the shoe's electronics ----------------------------------------------------------------------


class ShoeReader:
    """What the shoe itself knows: the cards out of this shoe, whether BURN is armed, its state.

    Each method is one physical happening and returns the report the shoe sends for it.
    """

    def __init__(self, *, firmware: str = FIRMWARE, serial: str = SERIAL) -> None:
        self.info = DeviceInfo(firmware, serial)
        self.state = ShoeState.NO_SHOE
        self.decks = 0
        self.cards_out = 0
        self.cut_card_out = False
        self.burn_armed = False
        self.sensor_dirty = False

    def load(self, decks: int) -> ShoeLoaded:
        """A new shoe is in and the dealer pressed NEW SHOE."""
        self.state, self.decks, self.cards_out = ShoeState.DEALING, decks, 0
        self.cut_card_out = self.burn_armed = False
        return ShoeLoaded(decks)

    def press(self, button: Button) -> ButtonPressed:
        if button is Button.BURN:
            self.burn_armed = True
        return ButtonPressed(button)

    def card_out(self, card: str | None) -> CardOut | DeviceFault:
        """A card left the shoe, read as ``card`` or unreadable (None); an armed burn is spent."""
        self.cards_out += 1
        burn, self.burn_armed = self.burn_armed, False
        if card is None:
            return DeviceFault(FaultCode.UNREADABLE_CARD, self.cards_out, burn)
        return CardOut(self.cards_out, card, burn)

    def cut_card(self) -> CutCardOut:
        self.cut_card_out = True
        return CutCardOut(self.cards_out)

    def fault(self, code: Literal[FaultCode.SENSOR_DIRTY, FaultCode.SHOE_EMPTY]) -> DeviceFault:
        if code is FaultCode.SENSOR_DIRTY:
            self.sensor_dirty = True
        else:
            self.state = ShoeState.EMPTY
        return DeviceFault(code, self.cards_out)

    def status(self) -> ShoeStatus:
        return ShoeStatus(self.state, self.decks, self.cards_out, self.cut_card_out,
                          self.burn_armed, self.sensor_dirty)

    def request_received(self, kind: int, payload: bytes) -> Report | None:
        """The reply to a host request, or None for a message that is not one (ignored)."""
        try:
            request = decode(kind, payload)
        except ProtocolError:
            return None
        if isinstance(request, InfoRequest):
            return self.info
        if isinstance(request, StatusRequest):
            return self.status()
        return None


# -- the dealer ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShoeFault:
    """A family fault at the ``at``-th pull at the shoe (every pull, burns included, counted
    from 1 across shoes): ``unreadable`` (that card cannot be read), ``dirty`` (the reader
    reports a dirty sensor first), ``empty`` (the shoe is found empty; the dealer loads the next
    shoe), ``burn`` / ``void`` (the dealer presses that button first)."""

    kind: str
    at: int


def parse_fault(text: str) -> ShoeFault | ByteFault:
    """A ``--fault`` value: a family fault ``KIND@N`` or a byte fault of
    tabled.simulators.faults."""
    kind, sep, at_text = text.partition("@")
    if kind not in SHOE_FAULTS:
        if kind in BYTE_FAULTS:
            return ByteFault.parse(text)
        raise FaultSpecError(f"{text!r}: expected KIND@N with KIND in {SHOE_FAULTS + BYTE_FAULTS}")
    if not sep or not at_text.isdigit() or int(at_text) < 1:
        raise FaultSpecError(f"{text!r}: expected {kind}@N with N counting pulls from 1")
    return ShoeFault(kind, int(at_text))


def parse_cards(text: str) -> list[str]:
    """``AS,KH,...`` as card codes; ValueError names the first that is not one."""
    cards = [c.strip().upper() for c in text.split(",") if c.strip()]
    bad = [c for c in cards if c not in CARD_CODES]
    if bad or not cards:
        raise ValueError(f"{bad[0] if bad else text!r} is not a card code (e.g. AS, TD, 9H)")
    return cards


class Dealer:
    """The dealer at the shoe: yields, in order, every report the shoe sends.

    Seeded baccarat (``cards`` None): per shoe a fresh shuffle of ``decks`` decks with the cut
    card 12-16 cards from the end; NEW SHOE; the burns of Art. 2 (``burn="value"``: the first
    card, then as many as its value; ``"decks"``: as many as there are decks); ``demos``
    demonstration hands (DEMO pressed before each); then hands, each card pulled until the rules
    core settles the hand (Art. 9 under ``method``); the cut card's hand is the last, or one
    more (Art. 3, ``last_hand``). It stops after ``hands`` hands (every outcome counts:
    demonstrations and voids too) or after ``shoes`` shoes, whichever comes first (None: no
    limit).

    Explicit (``cards``): NEW SHOE, then each card out in order, nothing else.

    ``preset`` deals shoes that were not properly shuffled (:class:`Preset`).

    ``ledger``, if given, is called with one record per hand as the dealer dealt it, when the
    dealer's rules core settles or voids it (docs/protocols/ledger.md): ``shoe`` (from 1),
    ``round``, ``cards`` (in the order they left the shoe, ``None`` for an unread one),
    ``card_nos``, ``burns`` (card numbers burned during the hand), ``faults`` (the family
    faults injected at its pulls, ``KIND@N``), ``interrupted`` (void, with a fault injected)
    and ``outcome`` (the record the dealer's rules core made of it).
    """

    def __init__(
        self,
        reader: ShoeReader,
        *,
        rng: random.Random,
        decks: int = 8,
        demos: int = 0,
        burn: BurnRule = "value",
        method: int = 1,
        last_hand: str = "this",
        hands: int | None = None,
        shoes: int | None = 1,
        cards: Sequence[str] | None = None,
        faults: Sequence[ShoeFault] = (),
        preset: Preset | None = None,
        ledger: Callable[[dict[str, Any]], object] | None = None,
        cut_card: int | None = None,
    ) -> None:
        self.reader = reader
        self._cut_card = cut_card
        self._rng = rng
        self._decks = decks
        self._demos = demos
        self._burn_rule = burn
        self._hands = hands
        self._shoes = shoes
        self._explicit = None if cards is None else list(cards)
        self._preset = preset
        self._previous_order: list[str] | None = None
        self._one_more = last_hand == "one_more"
        self._plan: dict[int, set[str]] = {}
        for fault in faults:
            self._plan.setdefault(fault.at, set()).add(fault.kind)
        self._table: Table | None = None
        if cards is None or ledger is not None:  # explicit cards: the table only keeps the ledger
            # the rules of the game the shoe deals (its demo recipe names the shoe family)
            game = played_on(FAMILY)
            self._table = make_table(game, options_of(
                game, {"method": method, "last_hand": last_hand, "decks": decks}))
        self._pulls = 0
        self._cards: deque[str] = deque()
        self._cut_behind: int | None = None  # cards behind the cut card, until it comes out
        self._empty = False
        self._last_round: int | None = None
        self._ledger = ledger
        self._shoe_number = 0
        self._hand_cards: list[tuple[int, str | None]] = []
        self._hand_burns: list[int] = []
        self._hand_faults: list[str] = []

    def reports(self) -> Iterator[Report]:
        """Every report of the script, in order."""
        if self._explicit is not None:
            yield from self._explicit_sequence(self._explicit)
            return
        shoes = 0
        while (self._shoes is None or shoes < self._shoes) and not self._enough_hands():
            shoes += 1
            yield from self._deal_shoe()

    # -- the script's parts

    def _explicit_sequence(self, cards: list[str]) -> Iterator[Report]:
        self._new_shoe(cards, cut_behind=None)
        yield from self._report(self.reader.load(self._decks))
        while self._cards and not self._empty:
            yield from self._pull()

    def _deal_shoe(self) -> Iterator[Report]:
        table = self._table
        assert table is not None
        cards = preset_shoe(self._rng, self._decks, self._preset, self._previous_order)
        self._previous_order = cards
        behind = self._rng.randint(*CUT_CARD_FROM_END)  # drawn always: the same shoes follow
        self._new_shoe(cards, cut_behind=behind if self._cut_card is None else self._cut_card)
        yield from self._report(self.reader.load(self._decks))
        yield from self._burn_at_start()
        demos = self._demos
        while not self._shoe_over(table):
            if not table.round_open:
                if self._enough_hands():
                    return
                if demos > 0:
                    demos -= 1
                    yield from self._report(self.reader.press(Button.DEMO))
            yield from self._pull()

    def _burn_at_start(self) -> Iterator[Report]:
        first = yield from self._pull(burn=True)
        if self._burn_rule == "value" and first is not None:
            more = BURN_COUNT[first[0]]
        else:  # by the deck count, also when the first card could not be read
            more = self._decks - 1
        for _ in range(more):
            if self._empty:
                return
            yield from self._pull(burn=True)

    def _pull(self, *, burn: bool = False) -> Generator[Report, None, str | None]:
        """One pull at the shoe, with the faults planned for it: the card read, or None
        (unreadable, or the shoe is empty)."""
        self._pulls += 1
        planned = self._plan.get(self._pulls, set())
        self._hand_faults.extend(f"{kind}@{self._pulls}" for kind in sorted(planned))
        if self._cut_behind is not None and len(self._cards) == self._cut_behind:
            self._cut_behind = None
            yield from self._report(self.reader.cut_card())
            # Reading R-B2: the hand in progress, or else the next, is the cut card's hand.
            assert self._table is not None
            self._last_round = self._table.next_round + (1 if self._one_more else 0)
        if "dirty" in planned:
            yield from self._report(self.reader.fault(FaultCode.SENSOR_DIRTY))
        if burn or "burn" in planned:
            yield from self._report(self.reader.press(Button.BURN))
        if "void" in planned:
            yield from self._report(self.reader.press(Button.VOID))
        if not self._cards or "empty" in planned:
            self._empty = True
            yield from self._report(self.reader.fault(FaultCode.SHOE_EMPTY))
            return None
        card = self._cards.popleft()
        read = None if "unreadable" in planned else card
        yield from self._report(self.reader.card_out(read))
        return read

    def _report(self, report: Report) -> Iterator[Report]:
        yield report
        self._keep(report)
        event = normalize(report)
        if event is not None and self._table is not None:
            for output in self._table.feed(event):
                if isinstance(output, Outcome):
                    self._write_ledger(output)

    # -- the ledger

    def _keep(self, report: Report) -> None:
        """Note a card (or unread card) that left the shoe in the hand being dealt."""
        if (isinstance(report, CardOut) and report.burn) or (
                isinstance(report, DeviceFault) and report.burn):
            if self._hand_cards:
                self._hand_burns.append(report.card_no)
        elif isinstance(report, CardOut):
            self._hand_cards.append((report.card_no, report.card))
        elif isinstance(report, DeviceFault) and report.code is FaultCode.UNREADABLE_CARD:
            self._hand_cards.append((report.card_no, None))

    def _write_ledger(self, outcome: Outcome) -> None:
        record = outcome.to_record()
        faults, self._hand_faults = self._hand_faults, []
        cards, self._hand_cards = self._hand_cards, []
        burns, self._hand_burns = self._hand_burns, []
        if self._ledger is None:
            return
        self._ledger({
            "game": played_on(FAMILY), "shoe": self._shoe_number, "round": outcome.round,
            "cards": [card for _, card in cards], "card_nos": [no for no, _ in cards],
            "burns": burns, "faults": faults,
            "interrupted": outcome.status == "void" and bool(faults),
            "outcome": record,
        })

    # -- bookkeeping

    def _new_shoe(self, cards: list[str], cut_behind: int | None) -> None:
        self._shoe_number += 1
        self._cards = deque(cards)
        self._cut_behind = cut_behind
        self._empty = False
        self._last_round = None

    def _shoe_over(self, table: Table) -> bool:
        if self._empty:
            return True
        if self._last_round is None or table.round_open:
            return False
        return table.next_round > self._last_round

    def _enough_hands(self) -> bool:
        assert self._table is not None
        return self._hands is not None and self._table.next_round > self._hands


# -- the device on a pty -------------------------------------------------------------------------


class ShoeDevice(PtyDevice):
    """The shoe's reader on a pseudo-terminal: sends reports, answers the host's requests, and
    sends its status whenever a host opens the link."""

    def __init__(
        self,
        reader: ShoeReader | None = None,
        *,
        link_path: str | None = None,
        faults: list[ByteFault] | None = None,
        seed: int = 0,
        chunked: bool = False,
    ) -> None:
        reader = reader or ShoeReader()
        # The link handshake says who the shoe is (its DEVICE_INFO): a host of another family
        # refuses it before taking any of its reports.
        super().__init__(link_path=link_path, faults=faults, seed=seed,
                         identity=encode(reader.info), chunked=chunked)
        self.reader = reader
        self.ignored = 0

    def report(self, report: Report) -> None:
        self.send(*encode(report))

    def link_established(self) -> None:
        self.report(self.reader.status())

    def message_received(self, kind: int, payload: bytes) -> None:
        reply = self.reader.request_received(kind, payload)
        if reply is None:
            self.ignored += 1
        else:
            self.report(reply)


def takes_a_card(report: Report) -> bool:
    """Whether ``report`` is a card leaving the shoe (read or not): what ``--pace`` spaces."""
    return isinstance(report, CardOut) or (
        isinstance(report, DeviceFault) and report.code is FaultCode.UNREADABLE_CARD
    )


# -- tabled-sim shoe -----------------------------------------------------------------------------


def _fault_arg(text: str) -> ShoeFault | ByteFault:
    try:
        return parse_fault(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= {minimum}")
        return value
    return parse


def _preset_arg(text: str) -> Preset:
    try:
        return parse_preset(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cards_arg(text: str) -> list[str]:
    try:
        return parse_cards(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tabled-sim shoe``."""
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffles (default 0)")
    parser.add_argument("--decks", type=int, default=8, choices=range(6, 13), metavar="6-12",
                        help="decks per shoe (Art. 1; default 8)")
    parser.add_argument("--demo", type=_at_least(0), default=0, metavar="N",
                        help="demonstration hands at the start of each shoe (Art. 2.2)")
    parser.add_argument("--burn", choices=("value", "decks"), default="value",
                        help="burn at the start: the first card's value, or the deck count")
    parser.add_argument("--method", type=int, choices=(1, 2), default=1,
                        help="Art. 9 drawing method the dealer follows (default 1)")
    parser.add_argument("--last-hand", choices=("this", "one_more"), default="this",
                        help="Art. 3: the cut card's hand is the last, or one more follows")
    parser.add_argument("--cut-card", type=_at_least(1), metavar="N",
                        help="the cut card N cards from the end instead of 12 to 16: a short "
                             "shoe, for a test or a demonstration that needs one soon")
    parser.add_argument("--hands", type=_at_least(1), metavar="N",
                        help="stop after N hands (demonstrations and voids count)")
    parser.add_argument("--shoes", type=_at_least(1), metavar="N",
                        help="stop after N shoes (default 1 unless --hands)")
    parser.add_argument("--cards", type=_cards_arg, metavar="AS,KH,...",
                        help="an explicit sequence instead: each card out in order")
    parser.add_argument("--preset", type=_preset_arg, metavar="KIND",
                        help="deal shoes not properly shuffled: replay:SEED:START:LEN (a block "
                             "of the first shoe --seed SEED deals, at the same positions), "
                             "sorted:START:LEN (a block in new-deck order), riffle (each shoe "
                             "the previous one given a single riffle)")
    parser.add_argument("--pace", type=float, default=0.0, metavar="SECONDS",
                        help="seconds between two cards")
    parser.add_argument("--fault", type=_fault_arg, action="append", default=[],
                        metavar="KIND@N[:ARG]",
                        help=f"family faults {', '.join(SHOE_FAULTS)} at the N-th pull, or byte "
                             f"faults {', '.join(BYTE_FAULTS)} at the N-th data frame")
    parser.add_argument("--link", metavar="PATH",
                        help="a stable symlink to the pty that follows replugs")
    parser.add_argument("--serial", default=SERIAL, help="the serial number the shoe reports")
    parser.add_argument("--forever", action="store_true",
                        help="never end: with no --hands/--shoes deal shoe after shoe; after a "
                             "finite script stay plugged in")
    parser.add_argument("--ledger", metavar="FILE",
                        help="write one JSON line per hand as dealt (docs/protocols/ledger.md)")


def dealer_from_args(args: argparse.Namespace, reader: ShoeReader,
                     ledger: Ledger | None = None) -> Dealer:
    """The dealer ``args`` describe (the same script for the same arguments)."""
    if args.shoes is not None:
        shoes = args.shoes
    elif args.hands is not None or args.forever:
        shoes = None  # until the hands are dealt, or for ever
    else:
        shoes = 1
    return Dealer(reader, rng=random.Random(args.seed), decks=args.decks, demos=args.demo,
                  burn=args.burn, method=args.method, last_hand=args.last_hand,
                  hands=args.hands, shoes=shoes, cards=args.cards,
                  faults=[f for f in args.fault if isinstance(f, ShoeFault)],
                  preset=args.preset, cut_card=args.cut_card,
                  ledger=None if ledger is None else ledger.write)


async def serve(args: argparse.Namespace) -> int:
    """Serve one simulated shoe: print ``path: ...``, play the script, wait until the host has
    every report, then end (or stay with ``--forever``)."""
    reader = ShoeReader(serial=args.serial)
    ledger = None if args.ledger is None else Ledger(args.ledger, device="shoe",
                                                      serial=args.serial)
    dealer = dealer_from_args(args, reader, ledger)
    device = ShoeDevice(reader, link_path=args.link, seed=args.seed,
                        faults=[f for f in args.fault if isinstance(f, ByteFault)])
    path = await device.start()
    print(f"path: {path}", flush=True)
    try:
        for report in dealer.reports():
            device.report(report)
            if device.backlog >= MAX_BACKLOG:
                await device.drain()  # nobody is reading: the dealer waits, memory stays bounded
            if args.pace and takes_a_card(report):
                await asyncio.sleep(args.pace)
        await device.drain()
        if args.forever:
            await asyncio.Event().wait()
    finally:
        await device.stop()
        if ledger is not None:
            ledger.close()
    print(f"served {device.messages_sent} messages", file=sys.stderr)
    return 0


# -- the conformance kit's shoe (tabled.tools.conformance) ---------------------------------------

#: The pull at which the kit's family faults happen: a hand's card (the burns of Art. 2 take at
#: most 11 pulls; the kit's hands take more than 14).
KIT_FAULT_PULL: Final = 14
#: The kit's shoes: the fewest decks Art. 1 allows, hands enough for the script's length.
KIT_DECKS: Final = 6
#: The kit's family faults and the fault codes their events must carry (burn and void are
#: dealer buttons, not faults).
KIT_FAULTS: Final = {"unreadable": UNREADABLE_CARD, "dirty": SHOE_SENSOR_DIRTY,
                     "empty": SHOE_EMPTY}


async def start_for_kit(script: DeviceScript, folder: Path) -> PtySide:
    """A shoe on a pty in ``folder`` whose dealer deals about ``script.length`` events of
    seeded baccarat, with the script's faults; the expected events come from a twin dealer."""
    options: dict[str, Any] = {
        "decks": KIT_DECKS, "hands": max(2, script.length // 5), "shoes": None,
        "faults": [ShoeFault(kind, KIT_FAULT_PULL) for kind in script.faults],
    }
    twin = Dealer(ShoeReader(), rng=random.Random(script.seed), **options)
    expected = [event for event in map(normalize, twin.reports()) if event is not None]
    reader = ShoeReader()
    dealer = Dealer(reader, rng=random.Random(script.seed), **options)
    device = ShoeDevice(reader, link_path=str(folder / "shoe"), seed=script.seed,
                        faults=list(script.wire_faults), chunked=script.chunked)

    async def play() -> None:
        for report in dealer.reports():
            device.report(report)
            await asyncio.sleep(script.pace)

    return await PtySide(device, play, expected, reader.info.serial).start()


SIMULATOR = SimulatorPlugin(
    family=FAMILY,
    summary="a card-reading shoe (serial)",
    description="""\
A dealer plays the shoe's game (the installed game whose demo recipe names the shoe family)
through a simulated card-reading shoe on a pseudo-terminal: new shoe,
burns, demonstration hands, real hands dealt by the drawing rules, the cut card, and the
dealer's buttons. It prints "path: /dev/pts/N" (or the --link path) first: open that with the
shoe family's driver (tabled run, tabled listen --driver shoe PATH). Faults at the N-th card
pulled (--fault KIND@N): unreadable, dirty, empty, burn, void, and byte faults on the wire. It
ends when its hands are dealt (or never, with --forever); any way it ends removes its --link.""",
    add_arguments=add_arguments,
    serve=serve,
    conformance=DeviceSide(start=start_for_kit, faults=KIT_FAULTS,
                           wire_faults=frozenset(BYTE_FAULTS)),
)
