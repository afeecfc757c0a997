"""Issue 16, item 4: exposure is per card. One card of a hand seen face up (a shuffler-dealer's
``exposed`` mask) is that card exposed, not the hand: the record lists it alone (Art. 11.2),
only it is public before the deal is complete, and on the dealer's hand it voids the round
(Art. 11.3) naming it alone.

The rules core and its Publication are owned with the rules; these tests cover the change the
drivers' fix needed there (``tabled.contract.events.exposed_cards``)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import (
    DEALER,
    EXPOSED,
    CardDealt,
    Decision,
    Event,
    HandDealt,
    Reveal,
    RoundStart,
    Seat,
    Withheld,
    encode_event,
    event_to_dict,
    exposed_cards,
    parse_event,
)
from tabled.contract.outcome import Outcome
from tabled.games.qpoker.rules import Publication, QPokerTable

DEAL: dict[Seat, tuple[str, ...]] = {1: ("AS", "KS", "QS"), 3: ("2C", "7D", "QH"),
                                     DEALER: ("QD", "4C", "9H")}


def hand(seat: Seat, exposed: tuple[str, ...] = (), face_up: bool = False) -> HandDealt:
    return HandDealt(seat=seat, cards=DEAL[seat], face_up=face_up,
                     extra={EXPOSED: list(exposed)} if exposed else {})


def run(events: list[Event]) -> tuple[list[dict[str, Any]], list[list[Event]]]:
    """Feed a table and its Publication: the records, and what was published for each event."""
    table = QPokerTable()
    publication = Publication(table)
    records, published = [], []
    for event in events:
        outputs = table.feed(event)
        published.append(publication.admit(event, outputs))
        records += [o.to_record() for o in outputs if isinstance(o, Outcome)]
    return records, published


def records_of(events: list[Event]) -> list[dict[str, Any]]:
    table = QPokerTable()
    return [o.to_record() for e in events for o in table.feed(e) if isinstance(o, Outcome)]


def test_one_exposed_card_of_a_players_hand_is_that_card_alone_on_the_record() -> None:
    events = [RoundStart(seats=(1, 3)), hand(1), hand(3, exposed=("7D",)), hand(DEALER),
              Decision(seat=1, play=True), Decision(seat=3, play=True), Reveal()]
    (record,), _ = run(events)
    assert record["status"] == "complete"  # Art. 11.2: the round stands
    assert record["result"]["seats"]["3"]["exposed"] == ["7D"]
    assert "exposed" not in record["result"]["seats"]["1"]


def test_only_the_exposed_card_is_published_before_the_deal_is_complete() -> None:
    events = [RoundStart(seats=(1, 3)), hand(1), hand(3, exposed=("7D",)), hand(DEALER)]
    _, published = run(events)
    (placeholder,) = published[2]
    assert placeholder == Withheld(seat=3, count=3)
    assert placeholder.extra == {EXPOSED: ["7D"]}
    text = "".join(encode_event(e) for batch in published[:3] for e in batch)
    assert "7D" in text and "2C" not in text and "QH" not in text
    # once the dealer's hand completes the deal, the players open their cards (Art. 9.1)
    assert [e.cards for e in published[3] if isinstance(e, HandDealt)] == [DEAL[1], DEAL[3]]


def test_the_published_stream_records_the_same_exposure() -> None:
    events = [RoundStart(seats=(1, 3)), hand(1), hand(3, exposed=("7D",)), hand(DEALER),
              Decision(seat=3, play=False), Reveal()]
    records, published = run(events)
    again = [parse_event(event_to_dict(e)) for batch in published for e in batch]
    assert records_of(again) == records
    assert records[0]["result"]["seats"]["3"]["exposed"] == ["7D"]


def test_one_exposed_card_of_the_dealers_hand_voids_the_round_naming_it_alone() -> None:
    events = [RoundStart(seats=(1,)), hand(1), hand(DEALER, exposed=("4C",))]
    (record,), published = run(events)
    assert record["status"] == "void" and record["article"] == "qpoker.art11.3"
    assert record["void_reason"] == "the dealer's 4C exposed"
    assert record["result"]["dealer"]["exposed"] == ["4C"]
    # the round is over: the held cards and the event itself are published now
    assert published[2][-1] is events[2]


def test_a_hand_face_up_without_a_list_exposes_every_card() -> None:
    assert exposed_cards(hand(3, face_up=True)) == DEAL[3]
    assert exposed_cards(CardDealt(card="7D", seat=3, face_up=True)) == ("7D",)
    assert exposed_cards(CardDealt(card="7D", seat=3)) == ()


def test_the_first_drivers_form_face_up_with_a_list_exposes_the_list_only() -> None:
    """Journals written before the fix hold ``face_up: true`` with ``exposed: [one card]``: a
    table rebuilt from them reads the one card, not the hand."""
    old = hand(3, exposed=("7D",), face_up=True)
    assert exposed_cards(old) == ("7D",)
    _, published = run([RoundStart(seats=(3,)), old])
    assert published[1] == [Withheld(seat=3, count=3)]


def test_a_list_that_names_no_card_of_the_event_does_not_hide_a_face_up_one() -> None:
    bogus = HandDealt(seat=DEALER, cards=DEAL[DEALER], face_up=True, extra={EXPOSED: ["AS"]})
    assert exposed_cards(bogus) == DEAL[DEALER]
    assert exposed_cards(Withheld(seat=3, count=3, extra={EXPOSED: ["7D", "7D", "XX", 5]})) \
        == ("7D",)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 7), min_size=4, max_size=4))
def test_no_unexposed_card_is_published_early_whatever_the_masks(seed: int,
                                                                 masks: list[int]) -> None:
    """Any mask on any hand: a player's unexposed card appears in no published event before
    the deal is complete, a dealer's in none before its round ends; the published stream
    gives the same records."""
    rng = random.Random(seed)
    deck = [r + s for r in "A23456789TJQK" for s in "SHCD"]
    rng.shuffle(deck)
    seats: list[Seat] = [1, 2, 3, DEALER]
    events: list[Event] = [RoundStart(seats=(1, 2, 3))]
    secret: dict[Seat, set[str]] = {}
    for seat, mask in zip(seats, masks, strict=True):
        cards = tuple(deck.pop() for _ in range(3))
        shown = [c for i, c in enumerate(cards) if mask >> i & 1]
        secret[seat] = set(cards) - set(shown)
        events.append(HandDealt(seat=seat, cards=cards, face_up=mask == 7,
                                extra={EXPOSED: shown} if shown else {}))
    events += [Decision(seat=1, play=True), Reveal()]
    records, published = run(events)
    dealer_index = 4
    for index, batch in enumerate(published):
        text = "".join(encode_event(e) for e in batch)
        if index < dealer_index:
            assert not any(c in text for s in (1, 2, 3) for c in secret[s])
        if not any(isinstance(e, Reveal) for e in batch) and not records_before(index, events):
            assert not any(c in text for c in secret[DEALER])
    again = [parse_event(event_to_dict(e)) for batch in published for e in batch]
    assert records_of(again) == records


def records_before(index: int, events: list[Event]) -> bool:
    """Whether the round has ended by event ``index`` (the dealer's exposed card voids it)."""
    return bool(records_of(events[: index + 1]))
