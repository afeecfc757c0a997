"""The integrity monitors' scenario streams, shared by their tests and by their calibration
(``bench.integrity``): fair streams made by the simulators' own generation code (the dice
simulator's :func:`~tabled.simulators.dice.random_rolls`, the shoe simulator's
:class:`~tabled.simulators.shoe.Dealer` and presets, the shuffler's
:func:`~tabled.simulators.shuffler.qpoker_script`) turned into events as the drivers normalize
them, played through the rules core and the monitors as ``tabled integrity`` feeds them; and
each tampering's delay to detection, in rounds.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

import msgspec

from tabled.contract.events import (
    DEALER,
    Decision,
    Event,
    HandDealt,
    Reveal,
    Roll,
    RoundStart,
    ShoeStart,
)
from tabled.contract.outcome import Game, Outcome, OutcomeRecord
from tabled.drivers.shoe.driver import normalize as shoe_events
from tabled.drivers.shuffler.driver import normalize as shuffler_events
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.registry import make_table
from tabled.pit.integrity import TableMonitors, calibrate, slug_index
from tabled.pit.integrity.calibration import DEFAULT_SETTINGS
from tabled.pit.integrity.command import record_of
from tabled.pit.integrity.findings import Finding
from tabled.simulators.dice import parse_bias, random_rolls
from tabled.simulators.shoe import Dealer, Preset, ShoeReader
from tabled.simulators.shuffler import qpoker_script

#: The Banker shift of the biased case, in probability.
BANKER_SHIFT = 0.05
#: A detection later than this many rounds counts as missed (the die, the Banker rate).
CAP = 60_000


# -- streams: the simulators' generation code, turned into events -------------------------------


def craps_events(rng: random.Random, rolls: int, die_1: str | None = None) -> Iterator[Event]:
    """``rolls`` throws of the dice simulator, die 1 loaded with ``die_1`` (``"6:0.25"``)."""
    weights = parse_bias(die_1) if die_1 else None
    left = rolls
    while left > 0:
        chunk = min(left, 10_000)
        left -= chunk
        for a, b in random_rolls(rng, chunk, weights):
            yield Roll(dice=(a, b))


def baccarat_events(rng: random.Random, hands: int | None, *, decks: int = 8,
                    shoes: int | None = None, preset: Preset | None = None) -> Iterator[Event]:
    """The shoe simulator's dealer: shoe after shoe until ``hands`` hands (or ``shoes``)."""
    dealer = Dealer(ShoeReader(), rng=rng, decks=decks, hands=hands, shoes=shoes, preset=preset)
    for report in dealer.reports():
        event = shoe_events(report)
        if event is not None:
            yield event


def qpoker_events(rng: random.Random, rounds: int) -> Iterator[Event]:
    """The shuffler's Q Poker rounds; after the dealer's hand every seat plays and the dealer
    reveals (the console's part: what is played changes no hand, and no monitor reads it)."""
    left = rounds
    while left > 0:
        chunk = min(left, 500)
        left -= chunk
        seats: tuple[int, ...] = ()
        for message in qpoker_script(rng, rounds=chunk):
            for event in shuffler_events(message):
                yield event
                if isinstance(event, RoundStart):
                    seats = event.seats or ()
                elif isinstance(event, HandDealt) and event.seat == DEALER:
                    for seat in seats:
                        yield Decision(seat=seat, play=True)
                    yield Reveal()


def stream(game: Game, rng: random.Random, rounds: int) -> Iterator[Event]:
    if game == "craps":
        return craps_events(rng, rounds)
    if game == "baccarat":
        return baccarat_events(rng, rounds)
    return qpoker_events(rng, rounds)


def play(game: Game, events: Iterable[Event], monitors: Sequence[TableMonitors],
         seen: Callable[[int, Finding], bool] | None = None,
         records: Callable[[OutcomeRecord], None] | None = None) -> int:
    """Feed ``events`` and the rules core's outcomes to every table of ``monitors`` in order;
    ``seen(i, finding)`` for each finding of table ``i`` (return True to stop). The rounds."""
    table = make_table(game, monitors[0].options)
    feed = table.feed
    rounds = 0
    for event in events:
        for i, monitor in enumerate(monitors):
            for found in monitor.event(event):
                if seen is not None and seen(i, found):
                    return rounds
        for output in feed(event):
            if not isinstance(output, Outcome):
                continue
            rounds += 1
            record = record_of(output)
            if records is not None:
                records(record)
            for i, monitor in enumerate(monitors):
                for found in monitor.outcome(record):
                    if seen is not None and seen(i, found):
                        return rounds
    return rounds




# -- delays to detection: each tampering, the rounds until its finding -----------------------


class _First:
    """The round of the first finding that ``wanted`` accepts."""

    def __init__(self, wanted: Callable[[Finding], bool]) -> None:
        self.wanted = wanted
        self.round: int | None = None

    def __call__(self, i: int, found: Finding) -> bool:
        if self.wanted(found):
            self.round = found.round
            return True
        return False


def die_delay(seed: int) -> int | None:
    """Rolls until the dice monitor names die 1's six, loaded at 1/4."""
    first = _First(lambda f: f.monitor == "dice" and f.subject == "die 1 face 6")
    monitors = TableMonitors("craps", table="loaded")
    play("craps", craps_events(random.Random(seed), CAP, "6:0.25"), [monitors], first)
    return first.round


def _shoe_delay(monitors: TableMonitors, events: Iterable[Event], monitor: str,
                affected: Callable[[int], bool], shoe: int = 1) -> int | None:
    """Feed ``events``; the rounds from the one in progress when card ``affected(position)``
    of shoe number ``shoe`` came out, to the first ``monitor`` finding."""
    state = {"shoes": 0, "position": -1, "start": None}

    def counting(events: Iterable[Event]) -> Iterator[Event]:
        for event in events:
            if event.type == "shoe_start":
                state["shoes"] = int(state["shoes"] or 0) + 1  # type: ignore[call-overload]
                state["position"] = -1
            elif event.type in ("card", "burn") or (
                    event.type == "fault" and getattr(event, "code", "") == "unreadable_card"):
                state["position"] = int(state["position"] or 0) + 1  # type: ignore
                if state["shoes"] == shoe and state["start"] is None \
                        and affected(int(state["position"] or 0)):  # type: ignore
                    state["start"] = monitors.next_round
            yield event

    first = _First(lambda f: f.monitor == monitor and state["start"] is not None)
    play("baccarat", counting(events), [monitors], first)
    if first.round is None or state["start"] is None:
        return None
    return first.round - int(state["start"]) + 1  # type: ignore[call-overload]


def replay_delay(seed: int) -> int | None:
    """A 20-card block of a shoe dealt earlier at another table of the floor, replayed at a
    random place: rounds from the one the block starts in to the ``slug`` finding."""
    rng = random.Random(seed)
    index = slug_index()
    source_seed = rng.randrange(2**31)
    other = TableMonitors("baccarat", table="source", slugs=index)
    # the source shoe enters the floor's index when it ends: at that table's next shoe_start
    play("baccarat", itertools.chain(baccarat_events(random.Random(source_seed), None, shoes=1),
                                     [ShoeStart(decks=8)]), [other])
    start = rng.randint(20, 360)
    preset = Preset("replay", source_seed, start, 20)
    monitors = TableMonitors("baccarat", table="slugged", slugs=index)
    return _shoe_delay(monitors, baccarat_events(rng, None, shoes=1, preset=preset), "slug",
                       lambda position: position == start)


def riffle_delay(seed: int) -> int | None:
    """A shoe given one riffle of the previous shoe's order: rounds from its first to the
    ``riffle`` finding."""
    monitors = TableMonitors("baccarat", table="riffled", slugs=slug_index())
    return _shoe_delay(monitors, baccarat_events(random.Random(seed), None, shoes=2,
                                                 preset=Preset("riffle")),
                       "riffle", lambda position: position == 0, shoe=2)


def sorted_delay(seed: int) -> int | None:
    """A block of 52 cards in a new deck's order at a random place: rounds from the one it
    starts in to the ``shoe_runs`` finding."""
    rng = random.Random(seed)
    start = rng.randint(20, 340)
    monitors = TableMonitors("baccarat", table="sorted", slugs=slug_index())
    return _shoe_delay(monitors, baccarat_events(rng, None, shoes=1,
                                                 preset=Preset("sorted", 0, start, 52)),
                       "shoe_runs", lambda position: position == start)


def banker_pools(seed: int, hands: int) -> dict[str, list[BaccaratOutcome]]:
    """Real hands of fair shoes by winner: the biased stream draws its winners, then a hand."""
    pools: dict[str, list[BaccaratOutcome]] = {"banker": [], "player": [], "tie": []}

    def keep(record: OutcomeRecord) -> None:
        if isinstance(record, BaccaratOutcome) and record.status == "complete" \
                and record.demo is not True and record.result.winner is not None:
            pools[record.result.winner].append(record)

    play("baccarat", baccarat_events(random.Random(seed), hands),
         [TableMonitors("baccarat", settings=replace(DEFAULT_SETTINGS,
                                                     monitors=frozenset({"pace"})))],
         records=keep)
    return pools


def banker_delay(seed: int, pools: dict[str, list[BaccaratOutcome]]) -> int | None:
    """Hands until the frequency monitor says Banker wins too often (or Player too seldom),
    the Banker rate raised by :data:`BANKER_SHIFT`, ties as the odds say."""
    rng = random.Random(seed)
    p = calibrate("baccarat").frequency[0]
    banker, player, tie = p.p0[0] + BANKER_SHIFT, p.p0[1] - BANKER_SHIFT, p.p0[2]
    monitors = TableMonitors("baccarat", table="biased")
    for number in range(1, CAP + 1):
        winner = rng.choices(("banker", "player", "tie"), (banker, player, tie))[0]
        record = msgspec.structs.replace(rng.choice(pools[winner]), round=number)
        for found in monitors.outcome(record):
            if found.monitor == "frequency" and found.subject in ("banker up", "player down"):
                return number
    return None


