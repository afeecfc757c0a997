"""Fuzz targets of the rules core: random orders of valid and invalid events, for every game and
every option set, and Q Poker's published stream.

Owns the corpus (the oracle streams of ``tests/oracle/streams.py``, realistic shoes, rolls and
rounds with their irregularities, one per option set), the pool of well-formed but
game-impossible events slipped into them, and the promises a run checks after every ``feed``:
no exception escapes, every outcome record satisfies ``contract/schemas/outcome.schema.json`` and
can be published as UTF-8 JSON, rounds go up by one, every notice names its article. For Q
Poker's :class:`~tabled.games.qpoker.rules.Publication`: no face-down card is published before the
rules open it, and a fresh table fed the published stream gives the same records. It must
never judge whether an outcome is *right* (the oracles of ``tests/oracle`` do that), only that
it is well-formed and in order.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from msgspec.structs import replace as replace_event

from bench.fuzz.contract import InvariantBroken, check_record
from bench.fuzz.engine import Target
from bench.fuzz.mutate import mutate_sequence
from tabled.contract.events import (
    CARD_CODES,
    DEALER,
    CardDealt,
    Event,
    HandDealt,
    Roll,
    RoundStart,
    ShoeStart,
    Withheld,
    encode_event,
    parse_event,
)
from tabled.contract.faults import DESCRIPTIONS
from tabled.contract.outcome import Notice, Outcome, Output
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.craps.options import CrapsOptions
from tabled.games.options import GameOptions
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.rules import WITHHELD_MARK, Publication, QPokerTable
from tabled.games.registry import make_table
from tabled.games.table import Table
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream

CARDS = sorted(CARD_CODES)
ARTICLE = re.compile(r"^(baccarat|craps|qpoker)\.art[0-9]+(\.[0-9]+)*$")
CODE = re.compile(r"^[a-z][a-z0-9_]*$")
#: The most positions one 52-card deck deals three cards each, the dealer's included.
SEATS_ONE_DECK = 52 // 3 - 1
#: Longest window of a stream one case feeds (a whole stream when run intact).
MAX_WINDOW = 150


def option_sets() -> list[tuple[str, GameOptions]]:
    """Every game with every regulated option set it can be configured with."""
    baccarat = [BaccaratOptions(method, commission, last_hand, decks)  # type: ignore[arg-type]
                for method, commission, last_hand, decks in itertools.product(
                    (1, 2), ("five_percent", "half_on_four"), ("this", "one_more"),
                    range(6, 13))]
    return [*(("baccarat", options) for options in baccarat),
            *(("craps", CrapsOptions(big)) for big in (True, False)),
            *(("qpoker", QPokerOptions(positions)) for positions in range(7, 21))]


@dataclass(frozen=True)
class RulesCase:
    """Events for a fresh table of ``game`` with ``options``."""

    game: str
    options: GameOptions
    events: tuple[Event, ...]


def _stream(rng: random.Random, game: str, options: GameOptions) -> list[dict[str, Any]]:
    if isinstance(options, BaccaratOptions):
        return baccarat_stream(rng, rng.randint(10, 40), options.method, options.last_hand)
    if isinstance(options, QPokerOptions):
        # One deck deals at most 16 positions and the dealer: the oracle's stream bets on up to
        # 16, and the respun seats of the mutations reach the others.
        return qpoker_stream(rng, rng.randint(8, 25), min(options.positions, SEATS_ONE_DECK))
    return craps_stream(rng, rng.randint(50, 200))


def _rules_corpus(rng: random.Random) -> list[RulesCase]:
    return [RulesCase(game, options, tuple(parse_event(e) for e in _stream(rng, game, options)))
            for game, options in option_sets()]


def _qpoker_corpus(rng: random.Random) -> list[RulesCase]:
    return [case for case in _rules_corpus(rng) if case.game == "qpoker"]


# -- well-formed, game-impossible events --------------------------------------------------------

_FAULTS = [{"type": "fault", "code": code} for code in sorted(DESCRIPTIONS)]
#: Every event type with fields the contract allows but a game may not: another game's events,
#: seats without a bet or beyond the table, hands of two or four, shoes of 1 or 500 decks, the
#: publication's placeholders and identities, faults no game knows.
_IMPOSSIBLE_FIELDS: tuple[dict[str, Any], ...] = (
    *_FAULTS,
    *({"type": "fault", "code": "device_lost", "family": family}
      for family in ("shuffler", "shoe", "dice")),
    {"type": "fault", "code": "no_such_fault", "detail": "\u00e9\u4e2d"},
    {"type": "void"}, {"type": "void", "reason": "dealer_call"}, {"type": "void", "reason": ""},
    {"type": "void", "reason": "\u00e9\U0001f0a1"},
    {"type": "no_roll", "reason": "off_table"}, {"type": "no_roll", "reason": "\u00e9"},
    {"type": "roll", "dice": [1, 1]}, {"type": "roll", "dice": [6, 5]},
    {"type": "round_start"}, {"type": "round_start", "seats": []},
    {"type": "round_start", "seats": [1]}, {"type": "round_start", "seats": [7, 3, 1]},
    {"type": "round_start", "seats": list(range(1, 21))}, {"type": "round_start", "seats": [99]},
    {"type": "card", "card": "AS"}, {"type": "card", "card": "KD", "face_up": True},
    {"type": "card", "card": "2C", "seat": 1, "face_up": False},
    {"type": "card", "card": "QH", "seat": "dealer"}, {"type": "card", "card": "5S", "seat": 25},
    {"type": "card", "card": "9D", "seat": 3, "withheld": True},
    {"type": "hand", "seat": 1, "cards": ["AS", "KD"]},
    {"type": "hand", "seat": 2, "cards": ["AS", "KD", "QH", "2C"]},
    {"type": "hand", "seat": "dealer", "cards": ["3S", "3H", "3D"], "face_up": False},
    {"type": "hand", "seat": 30, "cards": ["4S", "5S", "6S"]},
    {"type": "hand", "seat": 1, "cards": ["7C", "8C", "9C"], "withheld": True},
    {"type": "decision", "seat": 1, "play": True}, {"type": "decision", "seat": 7, "play": False},
    {"type": "decision", "seat": 40, "play": True},
    {"type": "reveal"},
    {"type": "shoe_start", "decks": 1}, {"type": "shoe_start", "decks": 8},
    {"type": "shoe_start", "decks": 13}, {"type": "shoe_start", "decks": 500},
    {"type": "burn"}, {"type": "burn", "card": "TD"}, {"type": "cut_card"}, {"type": "demo"},
    {"type": "withheld", "seat": "dealer", "count": 3}, {"type": "withheld", "seat": 2, "count": 1},
    {"type": "declare", "result": "banker"}, {"type": "declare", "result": "tie", "round": 3},
    {"type": "declare", "result": "seven_out"},
    {"type": "declare", "result": "dealer_does_not_qualify", "round": 1},
)
IMPOSSIBLE: tuple[Event, ...] = tuple(parse_event({"v": 1, **fields})
                                      for fields in _IMPOSSIBLE_FIELDS)


def _respun(rng: random.Random, event: Event) -> Event:
    """``event`` with one field drawn again: another card (a duplicate, in one deck), seat, face,
    die or shoe size."""
    if isinstance(event, CardDealt):
        if rng.random() < 0.6:
            return replace_event(event, card=rng.choice(CARDS))
        return replace_event(event, face_up=rng.choice((None, True, False)),
                             seat=rng.choice((event.seat, None, DEALER, rng.randint(1, 21))))
    if isinstance(event, HandDealt):
        cards = tuple(rng.choice(CARDS) if rng.random() < 0.3 else c for c in event.cards)
        return replace_event(event, cards=cards, seat=rng.choice((event.seat, DEALER,
                                                                  rng.randint(1, 21))))
    if isinstance(event, Roll):
        return replace_event(event, dice=(rng.randint(1, 6), rng.randint(1, 6)))
    if isinstance(event, RoundStart) and event.seats:
        return replace_event(event, seats=tuple(rng.sample(range(1, 22), len(event.seats))))
    if isinstance(event, ShoeStart):
        return replace_event(event, decks=rng.choice((1, 6, 8, 12, 13)))
    return event


def _mutate_rules(rng: random.Random, case: RulesCase, corpus: Sequence[RulesCase]) -> RulesCase:
    """A window of the stream, its events reordered, dropped, repeated, respun, and mixed with
    impossible events and with events of another stream."""
    starts = [0, *(i for i, e in enumerate(case.events) if isinstance(e, RoundStart | ShoeStart))]
    start = rng.choice(starts) if rng.random() < 0.7 else rng.randrange(len(case.events))
    events = list(case.events[start:start + rng.randint(1, MAX_WINDOW)])
    pool = [*IMPOSSIBLE, *rng.choice(corpus).events[:40]]
    events = mutate_sequence(rng, events, pool)
    for _ in range(rng.choice((0, 1, 2, 4))):
        if events:
            at = rng.randrange(len(events))
            events[at] = _respun(rng, events[at])
    return replace(case, events=tuple(events))


def _fresh_rules(rng: random.Random) -> RulesCase:
    game, options = rng.choice(option_sets())
    events = [_respun(rng, rng.choice(IMPOSSIBLE)) for _ in range(rng.randint(1, 60))]
    return RulesCase(game, options, tuple(events))


# -- the checks ---------------------------------------------------------------------------------


class _Ledger:
    """What a table has answered so far, checked as it comes: records valid and numbered one
    after the other, notices with a code and an article."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.next_round = table.next_round
        self.records: list[dict[str, Any]] = []
        self.labels: set[str] = set()

    def take(self, event: Event, outputs: list[Output]) -> None:
        game = self.table.game
        for output in outputs:
            if isinstance(output, Outcome):
                record = output.to_record()
                check_record(record)
                if record["game"] != game or record["round"] != self.next_round:
                    raise InvariantBroken(f"round {record['round']} of {record['game']} after "
                                          f"{encode_event(event)}, expected {self.next_round}")
                self.next_round += 1
                self.records.append(record)
                self.labels.add(f"{game}:{record['status']}:{record.get('article')}")
                self.labels.update(f"{game}:bet:{bet['article']}" for bet in _bets(record)
                                   if "article" in bet)
            elif isinstance(output, Notice):
                if not CODE.match(output.code) or (output.article is not None
                                                   and not ARTICLE.match(output.article)):
                    raise InvariantBroken(f"notice {output} for {encode_event(event)}")
                self.labels.add(f"{game}:notice:{output.code}:{output.article}")
            else:
                raise InvariantBroken(f"feed returned {output!r}")
        if self.table.next_round != self.next_round:
            raise InvariantBroken(f"next_round {self.table.next_round} after round "
                                  f"{self.next_round - 1}")
        if not isinstance(self.table.round_open, bool):
            raise InvariantBroken(f"round_open is {self.table.round_open!r}")


def _bets(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every bet result of a record, Q Poker's per-seat bets included."""
    bets = []
    for value in record["bets"].values():
        bets += [value] if "result" in value else list(value.values())
    return bets


def _run_rules(case: RulesCase, rng: random.Random) -> set[str]:
    ledger = _Ledger(make_table(case.game, case.options))
    for event in case.events:
        ledger.take(event, ledger.table.feed(event))
    return ledger.labels


RULES = Target[RulesCase](
    name="rules",
    summary="tabled.daemon.rules.make_table(game, options).feed, every game and option set",
    corpus=_rules_corpus, mutate=_mutate_rules, run=_run_rules, fresh=_fresh_rules,
    fresh_share=0.05, size=lambda case: len(case.events), unit="event",
)

_Dealing = CardDealt | HandDealt


def _published_only(event: Event) -> bool:
    """A placeholder or an identity: what the publication writes, never what a device sends."""
    return isinstance(event, Withheld) or (isinstance(event, _Dealing)
                                           and event.extra.get(WITHHELD_MARK) is True)


def _mutate_real_stream(rng: random.Random, case: RulesCase,
                        corpus: Sequence[RulesCase]) -> RulesCase:
    """As for the rules core, less the publication's own events: the publication takes the
    stream the devices and the console make, and promises nothing for its output fed back in."""
    case = _mutate_rules(rng, case, corpus)
    return replace(case, events=tuple(e for e in case.events if not _published_only(e)))


def _run_publication(case: RulesCase, rng: random.Random) -> set[str]:
    assert isinstance(case.options, QPokerOptions)
    table = QPokerTable(case.options)
    ledger = _Ledger(table)
    publication = Publication(table)
    published: list[Event] = []
    for event in case.events:
        outputs = table.feed(event)
        ledger.take(event, outputs)
        batch = publication.admit(event, outputs)
        ended = any(isinstance(output, Outcome) for output in outputs)
        for shown in batch:
            # A card the publication opens (not one it passes through as it came).
            if shown is not event and isinstance(shown, _Dealing) and shown.face_up is not True:
                early = not ended if shown.seat == DEALER else not (ended
                                                                    or table.dealing_complete)
                if early:
                    raise InvariantBroken(f"{encode_event(shown)} published before its time")
        published += batch
    # Through JSON, as a consumer reads the published stream.
    again = _Ledger(QPokerTable(case.options))
    for event in published:
        event = parse_event(json.loads(encode_event(event)))
        again.take(event, again.table.feed(event))
    if again.records != ledger.records:
        raise InvariantBroken("the published stream gives other records than the real one")
    return {"published", *ledger.labels}


PUBLICATION = Target[RulesCase](
    name="qpoker_publication",
    summary="tabled.games.qpoker.rules.Publication.admit, then the published stream replayed",
    corpus=_qpoker_corpus, mutate=_mutate_real_stream, run=_run_publication,
    size=lambda case: len(case.events), unit="event",
)

TARGETS: tuple[Target[Any], ...] = (RULES, PUBLICATION)
