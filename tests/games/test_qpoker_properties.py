"""Q Poker properties over random rounds (docs/rules/qpoker.md, docs/contract.md): the published
stream gives the real stream's outcomes and leaks no face-down card early; records keep the
contract's shape; settlement never pays a losing bet."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from tabled.contract.events import (
    CARD_CODES,
    DEALER,
    CardDealt,
    Decision,
    Event,
    Fault,
    HandDealt,
    Reveal,
    Roll,
    RoundStart,
    Seat,
    Void,
    event_to_dict,
    parse_event,
)
from tabled.contract.faults import SHUFFLER_FAILURES
from tabled.contract.outcome import BetResult, Notice, Outcome, Output
from tabled.games.money import settle
from tabled.games.qpoker.rules import DEALT_AFTER_VOID, Publication, QPokerTable

DECK = sorted(CARD_CODES)
POSITIONS = 7
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "daemon" / "schemas" / "outcome.schema.json"
HANDS = {"straight_flush", "three_of_a_kind", "straight", "flush", "pair", "high_card"}
RESULTS = {"win", "lose", "fold", "void"}
RATIO = re.compile(r"^[1-9][0-9]*:[1-9][0-9]*$")

Dealing = CardDealt | HandDealt

# -- random rounds ------------------------------------------------------------------------------


def _dealing_indices(events: list[Event], seat: Callable[[Seat | None], bool]) -> list[int]:
    return [i for i, event in enumerate(events)
            if isinstance(event, Dealing) and seat(event.seat)]


def _anywhere(rng: random.Random, events: list[Event]) -> int:
    return rng.randint(0, len(events))


def _expose(rng: random.Random, events: list[Event], dealer: bool) -> None:
    """Art. 11.2 / 11.3: a player's (or the dealer's) card comes face up."""
    indices = _dealing_indices(events, lambda seat: (seat == DEALER) == dealer)
    if indices:
        i = rng.choice(indices)
        event = events[i]
        assert isinstance(event, Dealing)
        events[i] = replace(event, face_up=True)


def _deal_to_a_seat_without_bet(rng: random.Random, events: list[Event], deck: list[str],
                                seats: list[int], mode: str) -> None:
    """Art. 11.4, mostly after the dealer's first card (before it, with no seat list, the seat
    may break the ascending order instead: Art. 11.1)."""
    free = [seat for seat in range(1, POSITIONS + 1) if seat not in seats]
    dealer_cards = _dealing_indices(events, lambda seat: seat == DEALER)
    if not free or not dealer_cards:
        return
    seat = rng.choice(free)
    face_up = rng.choice([None, True])
    event: Event = (HandDealt(seat=seat, cards=(deck.pop(), deck.pop(), deck.pop()),
                              face_up=face_up)
                    if mode == "hand" else CardDealt(seat=seat, card=deck.pop(), face_up=face_up))
    events.insert(rng.randint(dealer_cards[0] + 1, len(events)), event)


def _duplicate(rng: random.Random, events: list[Event]) -> None:
    """Art. 1: a later dealing event carries a card already dealt."""
    indices = _dealing_indices(events, lambda seat: True)
    if len(indices) < 2:
        return
    first, later = sorted(rng.sample(indices, 2))
    source, target = events[first], events[later]
    assert isinstance(source, Dealing) and isinstance(target, Dealing)
    card = source.card if isinstance(source, CardDealt) else rng.choice(source.cards)
    if isinstance(target, CardDealt):
        events[later] = replace(target, card=card)
    else:
        events[later] = replace(target, cards=(card, *target.cards[1:]))


def _swap(rng: random.Random, events: list[Event]) -> None:
    """Art. 11.1: two dealing events change places."""
    indices = _dealing_indices(events, lambda seat: True)
    if len(indices) >= 2:
        i, j = rng.sample(indices, 2)
        events[i], events[j] = events[j], events[i]


def _drop_dealing(rng: random.Random, events: list[Event]) -> None:
    """Art. 11.1: a card (or a hand) goes missing, or a hand is one card short."""
    indices = _dealing_indices(events, lambda seat: True)
    if not indices:
        return
    i = rng.choice(indices)
    event = events[i]
    if isinstance(event, HandDealt) and rng.random() < 0.5:
        events[i] = replace(event, cards=event.cards[:2])
    else:
        del events[i]


def _extra_dealing(rng: random.Random, events: list[Event], deck: list[str], seats: list[int],
                   mode: str) -> None:
    """Art. 11.1: a fourth card (or a second hand), maybe in the other mode."""
    positions: list[Seat] = [*seats, DEALER]
    seat = rng.choice(positions)
    event: Event = (HandDealt(seat=seat, cards=(deck.pop(), deck.pop(), deck.pop()))
                    if (mode == "hand") != (rng.random() < 0.3)
                    else CardDealt(seat=seat, card=deck.pop()))
    events.insert(_anywhere(rng, events), event)


def _noise(rng: random.Random, events: list[Event], seats: list[int]) -> None:
    """Events the round must decline or survive: faults, voids, new rounds, stray decisions."""
    family = rng.choice(["shuffler", "shoe", None])
    noise: Event = rng.choice([
        Fault(code=rng.choice(sorted(SHUFFLER_FAILURES))),
        Fault(code="device_lost", extra={} if family is None else {"family": family}),
        Fault(code="link_errors"),
        Void(reason=rng.choice([None, "qpoker.art11.2", "qpoker.art11.5", "spilled drink"])),
        RoundStart(seats=tuple(seats) if rng.random() < 0.5 else None),
        Decision(seat=rng.randint(1, POSITIONS), play=rng.random() < 0.5),
        Reveal(),
        Roll(dice=(3, 4)),
    ])
    events.insert(_anywhere(rng, events), noise)


def random_round(rng: random.Random) -> list[Event]:
    """One round as a table might see it: Art. 7 dealing in either mode, decisions before or
    after the dealer's cards (or missing: Reading R-Q2), a reveal; about half of the rounds carry
    one or two irregularities."""
    seats = sorted(rng.sample(range(1, POSITIONS + 1), rng.randint(1, POSITIONS)))
    order: list[Seat] = [*seats, DEALER]
    deck = DECK.copy()
    rng.shuffle(deck)
    holding = {seat: [deck.pop() for _ in range(3)] for seat in order}
    mode = rng.choice(["hand", "card"])
    events: list[Event]
    if mode == "hand":
        events = [HandDealt(seat=seat, cards=tuple(holding[seat])) for seat in order]
    else:
        events = [CardDealt(seat=seat, card=holding[seat][rotation])
                  for rotation in range(3) for seat in order]
    decisions: list[tuple[int, Event]] = []
    for seat in seats:
        third_card = max(i for i, event in enumerate(events)
                         if isinstance(event, Dealing) and event.seat == seat)
        for _ in range(rng.choice([0, 1, 1, 1, 2])):  # 0: R-Q2; 2: a withdrawal (Art. 9.3)
            decisions.append((rng.randint(third_card + 1, len(events)),
                              Decision(seat=seat, play=rng.random() < 0.7)))
    for index, decision in sorted(decisions, key=lambda pair: pair[0], reverse=True):
        events.insert(index, decision)
    events.append(Reveal())
    start = rng.choice(["listed", "listed", "bare", "none"])
    if start == "listed":
        events.insert(0, RoundStart(seats=tuple(seats)))
    elif start == "bare":
        events.insert(0, RoundStart())
    for _ in range(rng.choice([0, 0, 1, 2])):
        irregularity = rng.randrange(8)
        if irregularity == 0:
            _expose(rng, events, dealer=False)
        elif irregularity == 1:
            _expose(rng, events, dealer=True)
        elif irregularity == 2:
            _deal_to_a_seat_without_bet(rng, events, deck, seats, mode)
        elif irregularity == 3:
            _duplicate(rng, events)
        elif irregularity == 4:
            _swap(rng, events)
        elif irregularity == 5:
            _drop_dealing(rng, events)
        elif irregularity == 6:
            _extra_dealing(rng, events, deck, seats, mode)
        else:
            _noise(rng, events, seats)
    return events


rounds = st.builds(
    lambda rng, count: [event for _ in range(count) for event in random_round(rng)],
    st.randoms(use_true_random=False),
    st.integers(min_value=1, max_value=4),
)

# Arbitrary streams over a tiny deck and three seats: duplicates and misdeals everywhere.
_few_cards = st.sampled_from(["AS", "KS", "QS", "2D", "3D", "4D", "JH", "TC", "9C"])
_seat = st.sampled_from([1, 2, 3, DEALER])
_face = st.sampled_from([None, False, True])
garbage_streams = st.lists(
    st.one_of(
        st.builds(CardDealt, card=_few_cards, seat=st.one_of(_seat, st.none()), face_up=_face),
        st.builds(HandDealt, seat=_seat, face_up=_face,
                  cards=st.lists(_few_cards, min_size=1, max_size=4).map(tuple)),
        st.builds(Decision, seat=st.integers(1, 3), play=st.booleans()),
        st.just(Reveal()),
        st.builds(RoundStart, seats=st.one_of(
            st.none(), st.lists(st.integers(1, 8), unique=True, max_size=3).map(tuple))),
        st.builds(Fault, code=st.sampled_from(["shuffler_jam", "device_lost", "link_errors"]),
                  extra=st.sampled_from([{}, {"family": "shuffler"}])),
        st.builds(Void, reason=st.sampled_from([None, "qpoker.art11.4"])),
    ),
    max_size=40,
)


# -- helpers ------------------------------------------------------------------------------------


def feed_all(table: QPokerTable, events: Sequence[Event]) -> list[Output]:
    return [output for event in events for output in table.feed(event)]


def records(outputs: Sequence[Output]) -> list[dict[str, Any]]:
    return [output.to_record() for output in outputs if isinstance(output, Outcome)]


def publish(events: Sequence[Event]) -> tuple[list[Output], list[Event]]:
    """Feed the real stream; return its outputs and the published stream, checking as it goes
    that no face-down card is published before the rules open it."""
    table = QPokerTable()
    publication = Publication(table)
    outputs: list[Output] = []
    published: list[Event] = []
    for event in events:
        answered = table.feed(event)
        batch = publication.admit(event, answered)
        ended = any(isinstance(output, Outcome) for output in answered)
        # the rest of a deal voided midway: its round has ended already, nothing to hide
        void_round = any(isinstance(o, Notice) and o.code == DEALT_AFTER_VOID for o in answered)
        for shown in batch:
            if isinstance(shown, Dealing) and shown.face_up is not True:
                if shown.seat == DEALER:
                    assert ended or void_round, f"dealer's {shown} published before its end"
                else:
                    assert ended or void_round or table.dealing_complete, \
                        f"{shown} published mid-deal"
        outputs += answered
        published += batch
    return outputs, published


def check_equivalent(events: Sequence[Event]) -> None:
    real, published = publish(events)
    # Through JSON, as a consumer reads the published stream (and ``tabled replay`` would).
    published = [parse_event(json.loads(json.dumps(event_to_dict(e)))) for e in published]
    fresh = feed_all(QPokerTable(), published)
    assert records(fresh) == records(real)
    notices = [(o.code, o.article) for o in real if isinstance(o, Notice)]
    assert [(o.code, o.article) for o in fresh if isinstance(o, Notice)] == notices


# -- the published stream -----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(rounds)
def test_published_stream_gives_the_real_streams_outcomes(events: list[Event]) -> None:
    """docs/contract.md hidden information: the same outcomes from the real and the published
    stream, and no dealer card (nor a face-down player card mid-deal) published before its time."""
    check_equivalent(events)


@settings(max_examples=300, deadline=None)
@given(garbage_streams)
def test_published_stream_of_arbitrary_events_gives_the_same_outcomes(
    events: list[Event],
) -> None:
    check_equivalent(events)


# -- the contract's shape -----------------------------------------------------------------------


def check_contract_shape(record: dict[str, Any], round_number: int) -> None:
    assert record["v"] == 2 and record["type"] == "outcome" and record["game"] == "qpoker"
    assert record["round"] == round_number
    assert record["status"] in ("complete", "void")
    void = record["status"] == "void"
    assert ("void_reason" in record) == void
    if void:
        assert record["void_reason"] and record["article"].startswith("qpoker.art")
    result = record["result"]
    assert set(result) == {"dealer", "seats"}
    dealer = result["dealer"]
    assert set(dealer) - {"exposed"} == {"cards", "hand", "qualifies"}
    assert dealer["hand"] in HANDS | {None} and dealer["qualifies"] in (True, False, None)
    assert len(dealer["cards"]) <= 3
    assert set(record["bets"]) == set(result["seats"])
    for seat, seat_result in result["seats"].items():
        assert int(seat) >= 1 and str(int(seat)) == seat
        assert set(seat_result) - {"exposed"} == {"cards", "hand", "status"}
        assert seat_result["hand"] in HANDS | {None}
        assert seat_result["status"] in ("active", "void")
        assert all(card in CARD_CODES for card in seat_result["cards"])
        bets = record["bets"][seat]
        assert set(bets) == {"dobo", "play"}
        for name, bet in bets.items():
            assert bet["result"] in RESULTS and bet["article"].startswith("qpoker.art")
            assert ("pays" in bet) == (bet["result"] == "win")
            assert "pays" not in bet or RATIO.match(bet["pays"])
            if void or seat_result["status"] == "void":
                assert bet["result"] == "void"
            else:
                assert bet["result"] != "void" and (name == "play" or bet["result"] != "fold")
    if not void:
        assert dealer["hand"] is not None and len(dealer["cards"]) == 3


@settings(max_examples=200, deadline=None)
@given(rounds)
def test_rounds_of_random_seats_give_contract_shaped_records(events: list[Event]) -> None:
    table = QPokerTable()
    got = records(feed_all(table, events))
    for number, record in enumerate(got, 1):
        check_contract_shape(record, number)
    assert table.next_round == len(got) + 1


@pytest.mark.skipif(not SCHEMA_PATH.exists(), reason="contract/schemas/outcome.schema.json absent")
@settings(max_examples=150, deadline=None)
@given(rounds)
def test_records_validate_against_the_outcome_schema(events: list[Event]) -> None:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for record in records(feed_all(QPokerTable(), events)):
        validator.validate(record)


# -- money --------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(rounds, st.integers(min_value=0, max_value=10**9))
def test_settlement_never_pays_a_losing_bet(events: list[Event], stake: int) -> None:
    """Every Q Poker result settles as docs/rules/README.md "Money" says: a lost bet pays nothing, a
    fold
    returns half (rounded down), a void returns the stake, a win returns more than it."""
    for output in feed_all(QPokerTable(), events):
        if not isinstance(output, Outcome):
            continue
        for seat_bets in output.bets.values():
            assert not isinstance(seat_bets, BetResult)
            for bet in seat_bets.values():
                money = settle(bet, stake)
                if bet.result == "lose":
                    assert (money.paid, money.net) == (0, -stake)
                elif bet.result == "fold":
                    assert money.paid == stake // 2
                elif bet.result == "void":
                    assert money.paid == stake
                else:
                    assert bet.result == "win" and bet.pays is not None
                    assert money.paid == stake + math.floor(stake * bet.pays) >= stake
