"""Q Poker rounds (docs/rules/qpoker.md): one example per article and Reading, asserting exact
records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from tabled.contract.events import (
    DEALER,
    CardDealt,
    Decision,
    Event,
    Fault,
    HandDealt,
    NoRoll,
    Reveal,
    Roll,
    RoundStart,
    Seat,
    ShoeStart,
    Void,
    Withheld,
    parse_line,
)
from tabled.contract.outcome import BetResult, Notice, Outcome
from tabled.games.money import settle
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.qpoker.rules import Publication, QPokerTable
from tabled.games.registry import make_table

# The standard round: seats 1 and 3 bet; the dealer holds Q-high and qualifies (Art. 9.4).
SF_SPADES = "AS KS QS"
PAIR_TWOS = "2D 2H 5C"
QUEEN_HIGH = "QD 4C 9H"


def cards(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def hands(deal: Mapping[Any, str], face_up: bool | None = None) -> list[Event]:
    """Art. 7(2): one ``hand`` event per position, in the mapping's order."""
    return [HandDealt(seat=seat, cards=cards(text), face_up=face_up) for seat, text in deal.items()]


def shoe(deal: Mapping[Any, str]) -> list[Event]:
    """Art. 7(1): one card at a time to each position in the mapping's order, three rotations."""
    return [CardDealt(seat=seat, card=cards(text)[rotation])
            for rotation in range(3) for seat, text in deal.items()]


STANDARD: dict[Seat, str] = {1: SF_SPADES, 3: PAIR_TWOS, DEALER: QUEEN_HIGH}


class Run:
    """A table fed a stream: its outcome records and its notices."""

    def __init__(self, events: Iterable[Event], positions: int = 7) -> None:
        self.table = QPokerTable(QPokerOptions(positions))
        self.records: list[dict[str, Any]] = []
        self.notices: list[Notice] = []
        self.outcomes: list[Outcome] = []
        for event in events:
            for output in self.table.feed(event):
                if isinstance(output, Outcome):
                    self.outcomes.append(output)
                    self.records.append(output.to_record())
                else:
                    self.notices.append(output)

    @property
    def record(self) -> dict[str, Any]:
        assert len(self.records) == 1, self.records
        return self.records[0]

    @property
    def codes(self) -> list[str]:
        return [notice.code for notice in self.notices]


def bet(result: str, article: str, pays: str | None = None) -> dict[str, str]:
    out = {"result": result}
    if pays is not None:
        out["pays"] = pays
    out["article"] = article
    return out


def void_bets(article: str, *seats: int) -> dict[str, Any]:
    return {str(seat): {"dobo": bet("void", article), "play": bet("void", article)}
            for seat in seats}


def seat_result(text: str, hand: str | None, status: str = "active") -> dict[str, Any]:
    return {"cards": list(cards(text)), "hand": hand, "status": status}


def dealer_result(text: str, hand: str | None, qualifies: bool | None) -> dict[str, Any]:
    return {"cards": list(cards(text)), "hand": hand, "qualifies": qualifies}


def void_record(article: str, reason: str, result: dict[str, Any],
                bets: dict[str, Any], round_number: int = 1) -> dict[str, Any]:
    return {"v": 2, "type": "outcome", "game": "qpoker", "round": round_number,
            "status": "void", "void_reason": reason, "article": article,
            "result": result, "bets": bets}


STANDARD_COMPLETE: dict[str, Any] = {
    "v": 2, "type": "outcome", "game": "qpoker", "round": 1, "status": "complete",
    "result": {
        "dealer": dealer_result(QUEEN_HIGH, "high_card", True),
        "seats": {"1": seat_result(SF_SPADES, "straight_flush"),
                  "3": seat_result(PAIR_TWOS, "pair")},
    },
    "bets": {
        "1": {"dobo": bet("win", "qpoker.art10", "40:1"),
              "play": bet("win", "qpoker.art9.7", "3:1")},
        "3": {"dobo": bet("win", "qpoker.art10", "1:1"),
              "play": bet("fold", "qpoker.art9.3")},
    },
}


def standard_round(dealing: list[Event]) -> list[Event]:
    return [RoundStart(seats=(1, 3)), *dealing, Decision(seat=1, play=True),
            Decision(seat=3, play=False), Reveal()]


# -- Art. 7: dealing ----------------------------------------------------------------------------


def test_art7_2_shuffler_deals_three_cards_at_a_time_dealer_last() -> None:
    """Art. 7(2): one hand per position with a bet, ascending, the dealer last: exact record."""
    assert Run(standard_round(hands(STANDARD))).record == STANDARD_COMPLETE


def test_art7_1_shoe_deals_one_card_at_a_time_in_three_rotations() -> None:
    """Art. 7(1): one card at a time, seat 1, seat 3, dealer, three times: the same record."""
    assert Run(standard_round(shoe(STANDARD))).record == STANDARD_COMPLETE


def test_art7_without_a_seat_list_the_seats_dealt_before_the_dealer_bet() -> None:
    """Art. 7 with no round_start: seats 1 and 3 dealt before the dealer's first card are the
    positions with a bet; the round settles exactly as with the list."""
    for dealing in (hands(STANDARD), shoe(STANDARD)):
        events = standard_round(dealing)[1:]
        assert Run(events).record == STANDARD_COMPLETE
        assert Run([RoundStart(), *events]).record == STANDARD_COMPLETE


@pytest.mark.parametrize("dealing", ["hand", "card"])
def test_art7_out_of_order_dealing_voids_the_round(dealing: str) -> None:
    """Art. 7 and 11.1: seat 3 dealt before seat 1 voids the round, all bets void."""
    deal = {3: PAIR_TWOS, 1: SF_SPADES, DEALER: QUEEN_HIGH}
    events = hands(deal) if dealing == "hand" else shoe(deal)
    run = Run([RoundStart(seats=(1, 3)), *events])
    what = "hand 2D 2H 5C to seat 3" if dealing == "hand" else "card 2D to seat 3"
    assert run.record == void_record(
        "qpoker.art11.1", f"{what}: seat 3 dealt out of order, seat 1 was due",
        {"dealer": dealer_result("", None, None),
         "seats": {"1": seat_result("", None), "3": seat_result("", None)}},
        void_bets("qpoker.art11.1", 1, 3),
    )


def test_art7_without_a_seat_list_positions_must_still_ascend() -> None:
    """Art. 7 with no seat list: seat 1 after seat 3 (before the dealer) breaks the order."""
    run = Run(hands({3: PAIR_TWOS, 1: SF_SPADES}))
    assert run.record["article"] == "qpoker.art11.1"
    assert run.record["void_reason"] == ("hand AS KS QS to seat 1: seat 1 dealt after seat 3: "
                                         "positions are dealt in ascending order")
    assert run.record["result"]["seats"] == {"3": seat_result(PAIR_TWOS, "pair")}


# -- Art. 1, 2, 6 -------------------------------------------------------------------------------


def test_art1_a_card_dealt_twice_voids_the_round() -> None:
    """Art. 1: one deck; the second AS (to the dealer) voids the round, and shows where it went."""
    deal = shoe({1: "AS 5D 6D", 3: "2C 7C 8C", DEALER: "AS 9H TH"})[:3]
    run = Run([RoundStart(seats=(1, 3)), *deal])
    assert run.record == void_record(
        "qpoker.art1", "AS dealt twice from one deck",
        {"dealer": dealer_result("AS", None, None),
         "seats": {"1": seat_result("AS", None), "3": seat_result("2C", None)}},
        void_bets("qpoker.art1", 1, 3),
    )


def test_art1_a_hand_holding_one_card_twice_voids_the_round() -> None:
    """Art. 1: a shuffler hand of KD KD 2S cannot come from one deck."""
    run = Run([HandDealt(seat=2, cards=("KD", "KD", "2S"))])
    assert run.record["article"] == "qpoker.art1"
    assert run.record["result"]["seats"] == {"2": {"cards": ["KD", "KD", "2S"], "hand": None,
                                                   "status": "active"}}


def test_art2_seats_beyond_the_table_void_the_round_at_its_start() -> None:
    """Art. 2: a 7-position table has no seat 8; with positions=9 it does."""
    run = Run([RoundStart(seats=(2, 8))])
    assert run.record == void_record(
        "qpoker.art2", "seats [2, 8] outside positions 1-7",
        {"dealer": dealer_result("", None, None),
         "seats": {"2": seat_result("", None), "8": seat_result("", None)}},
        void_bets("qpoker.art2", 2, 8),
    )
    assert Run([RoundStart(seats=(2, 8))], positions=9).records == []


def test_art2_no_position_with_a_bet_is_no_round() -> None:
    """Art. 2, 7: an empty seat list, or the dealer dealt first with none, voids the round."""
    assert Run([RoundStart(seats=())]).record["void_reason"] == "no position has a bet"
    run = Run([HandDealt(seat=DEALER, cards=cards(QUEEN_HIGH))])
    assert run.record["article"] == "qpoker.art2"
    assert run.record["void_reason"] == ("hand QD 4C 9H to the dealer before any position "
                                         "with a bet")
    assert run.record["result"] == {"dealer": dealer_result("", None, None), "seats": {}}


def test_art2_a_card_to_a_seat_beyond_the_table_voids_the_round() -> None:
    run = Run([RoundStart(seats=(1,)), CardDealt(seat=9, card="AS")])
    assert run.record["article"] == "qpoker.art2"
    assert run.record["void_reason"] == "card AS to seat 9: the table has positions 1-7"


def test_art6_no_bet_joins_a_round_after_its_first_card() -> None:
    """Art. 6(2): after the first card no bet is accepted: a later round_start cannot add seat 2
    to the round being dealt; it voids it (Art. 11.1) and starts the next round."""
    run = Run([RoundStart(seats=(1,)), CardDealt(seat=1, card="AS"), RoundStart(seats=(1, 2)),
               *hands({1: SF_SPADES, 2: PAIR_TWOS, DEALER: QUEEN_HIGH}), Reveal()])
    first, second = run.records
    assert first["status"] == "void" and first["article"] == "qpoker.art11.1"
    assert first["void_reason"] == ("a new round began first: seat 1 has 1, the dealer has 0 "
                                    "of 3 cards")
    assert second["round"] == 2 and second["status"] == "complete"
    assert set(second["bets"]) == {"1", "2"}


def test_art11_1_a_new_round_before_the_reveal_voids_a_fully_dealt_round() -> None:
    """Art. 11.1: a round_start once the cards are out but before the reveal voids the round."""
    run = Run([RoundStart(seats=(1, 3)), *hands(STANDARD), RoundStart(seats=(2,))])
    assert run.record["void_reason"] == ("a new round began first: the deal was complete, "
                                         "the reveal was due")
    assert run.record["result"]["dealer"] == dealer_result(QUEEN_HIGH, "high_card", True)
    assert run.table.round_open and run.table.next_round == 2


def test_art6_only_positions_with_a_bet_decide() -> None:
    """Art. 6: seat 2 dealt without a bet (Art. 11.4) does not play."""
    run = Run([RoundStart(seats=(1,)), *hands({1: SF_SPADES, 2: PAIR_TWOS, DEALER: QUEEN_HIGH}),
               Decision(seat=2, play=True), Decision(seat=5, play=True)])
    assert run.codes == ["decision_without_bet", "decision_without_bet"]


# -- Art. 9 and 10: the round and its payouts ---------------------------------------------------


def settled(player: str, dealer: str, played: bool = True) -> dict[str, Any]:
    """Seat 1's bets when it holds ``player`` against ``dealer``."""
    events = [*hands({1: player, DEALER: dealer}), Decision(seat=1, play=played), Reveal()]
    seat_bets: dict[str, Any] = Run(events).record["bets"]["1"]
    return seat_bets


def test_art9_1_dobo_is_settled_on_the_players_own_hand_high_card_loses() -> None:
    """Art. 9.1: Dobo depends on the player's hand only; a high card loses it, fold or not."""
    assert settled("AS 8D 5C", QUEEN_HIGH)["dobo"] == bet("lose", "qpoker.art9.1")
    assert settled("AS 9D 4C", "2S 3H 7C", played=False)["dobo"] == bet("lose", "qpoker.art9.1")
    assert settled(SF_SPADES, "2S 3H 7C", played=False)["dobo"] == bet("win", "qpoker.art10",
                                                                       "40:1")


@pytest.mark.parametrize(
    ("player", "pays"),
    [("5H 6H 7H", "40:1"), ("8S 8H 8C", "30:1"), ("JS TH 9C", "6:1"), ("2S 7S KS", "4:1"),
     ("3S 3H 2C", "1:1")],
)
def test_art10_dobo_pays_by_the_players_hand(player: str, pays: str) -> None:
    """Art. 10: straight flush 40:1, three of a kind 30:1, straight 6:1, flush 4:1, pair 1:1."""
    assert settled(player, QUEEN_HIGH)["dobo"] == bet("win", "qpoker.art10", pays)


def test_art9_2_a_decision_needs_the_seats_three_cards_before_or_after_the_dealers() -> None:
    """Art. 9.2: a seat decides once its cards are open, before or after the dealer's cards
    are dealt (the contract holds the dealer's back); not before its own third card."""
    early = Decision(seat=1, play=True)
    events = [RoundStart(seats=(1, 3)), *shoe(STANDARD)[:4], early,  # seat 1 has 2 cards
              *shoe(STANDARD)[4:7], Decision(seat=1, play=True),  # seat 1 has 3, dealer 2
              *shoe(STANDARD)[7:], Decision(seat=3, play=True), Reveal()]
    run = Run(events)
    assert run.codes == ["decision_before_cards"]
    assert run.notices[0].article == "qpoker.art9.2"
    assert run.record["bets"]["1"]["play"] == bet("win", "qpoker.art9.7", "3:1")
    assert run.record["bets"]["3"]["play"] == bet("win", "qpoker.art9.7", "1:1")


def test_art9_3_fold_loses_half_and_a_decision_cannot_be_withdrawn() -> None:
    """Art. 9.3: seat 3 folds, then tries to play: declined; it loses half its Play wager."""
    events = [RoundStart(seats=(1, 3)), *hands(STANDARD), Decision(seat=3, play=False),
              Decision(seat=3, play=True), Decision(seat=1, play=True), Reveal()]
    run = Run(events)
    assert run.codes == ["decision_repeated"]
    assert run.notices[0].article == "qpoker.art9.3"
    assert run.record == STANDARD_COMPLETE
    folded = run.outcomes[0].bets["3"]
    assert isinstance(folded, Mapping)
    assert settle(folded["play"], 1_000).paid == 500


def test_reading_r_q2_no_decision_by_the_reveal_is_a_fold() -> None:
    """Reading R-Q2: seat 3 never decides; at the reveal it has not played: it folds."""
    events = [RoundStart(seats=(1, 3)), *hands(STANDARD), Decision(seat=1, play=True), Reveal()]
    assert Run(events).record == STANDARD_COMPLETE


def test_art9_4_dealer_qualifies_with_queen_high_not_jack_high() -> None:
    """Art. 9.4: Q-3-2 qualifies (the player is then compared); J-T-8 does not."""
    queen = Run([*hands({1: "AS 9D 4C", DEALER: "QD 3C 2H"}), Decision(seat=1, play=True),
                 Reveal()]).record
    assert queen["result"]["dealer"] == dealer_result("QD 3C 2H", "high_card", True)
    assert queen["bets"]["1"]["play"] == bet("win", "qpoker.art9.7", "1:1")
    jack = Run([*hands({1: "AS 9D 4C", DEALER: "JS TS 8H"}), Decision(seat=1, play=True),
                Reveal()]).record
    assert jack["result"]["dealer"] == dealer_result("JS TS 8H", "high_card", False)


def test_art9_5_a_dealer_who_does_not_qualify_pays_playing_players_half() -> None:
    """Art. 9.5: the dealer's J-high does not qualify: Play wins 1:2, whatever the hands."""
    assert settled("5S 3H 2D", "JS TS 8H")["play"] == bet("win", "qpoker.art9.5", "1:2")
    assert settled(SF_SPADES, "JS TS 8H")["play"] == bet("win", "qpoker.art9.5", "1:2")


def test_art9_6_a_qualifying_dealer_who_beats_the_player_takes_the_play_wager() -> None:
    """Art. 9.6: the dealer's pair of kings beats the player's pair of twos."""
    assert settled(PAIR_TWOS, "KS KD 3C")["play"] == bet("lose", "qpoker.art9.6")


@pytest.mark.parametrize(
    ("player", "pays"),
    [("5H 6H 7H", "3:1"), ("8S 8H 8C", "2:1"), ("JS TH 9C", "3:2"), ("2S 7S KS", "1:1"),
     ("3S 3H 2C", "1:1"), ("AS 2H 5C", "1:1")],
)
def test_art9_7_a_player_beating_a_qualifying_dealer_is_paid_by_the_players_hand(
    player: str, pays: str
) -> None:
    """Art. 9.7: straight flush 3:1, three of a kind 2:1, straight 3:2, anything else 1:1."""
    assert settled(player, QUEEN_HIGH)["play"] == bet("win", "qpoker.art9.7", pays)


# -- Art. 11: irregularities --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        ([*hands(STANDARD), HandDealt(seat=1, cards=("7D", "8D", "9D"))],
         "hand 7D 8D 9D to seat 1: more than 3 cards to seat 1"),
        ([*shoe(STANDARD), CardDealt(seat=DEALER, card="7D")],
         "card 7D to the dealer: more than 3 cards to the dealer"),
        ([HandDealt(seat=1, cards=("7D", "8D"))],
         "hand 7D 8D to seat 1: a hand of 2 cards"),
        ([HandDealt(seat=1, cards=cards(SF_SPADES)), CardDealt(seat=3, card="2D")],
         "card 2D to seat 3: a card event in a round dealt by hand events (Art. 7)"),
        ([*hands(STANDARD)[:2], Reveal()],
         "reveal before the deal was complete: the dealer has 0 of 3 cards"),
        ([CardDealt(card="7D")], "card 7D dealt to no position"),
    ],
    ids=["fourth-hand", "fourth-card", "hand-of-two", "modes-mixed", "reveal-short",
         "no-position"],
)
def test_art11_1_a_wrong_number_of_cards_or_order_voids_the_round(
    events: list[Event], reason: str
) -> None:
    """Art. 11.1: a position given the wrong number of cards, or cards out of order: void."""
    run = Run([RoundStart(seats=(1, 3)), *events])
    assert run.record["status"] == "void"
    assert run.record["article"] == "qpoker.art11.1"
    assert run.record["void_reason"] == reason
    assert run.record["bets"] == void_bets("qpoker.art11.1", 1, 3)
    assert not run.table.round_open


def test_art11_1_the_dealers_void_names_an_article_of_11_or_defaults_to_11_1() -> None:
    """Art. 11: a ``void`` event voids the open round, citing its reason when it is one of
    qpoker.art11.1-11.5, else Art. 11.1."""
    run = Run([RoundStart(seats=(1,)), CardDealt(seat=1, card="AS"), Void(reason="qpoker.art11.3"),
               RoundStart(seats=(1,)), CardDealt(seat=1, card="AS"),
               Void(reason="spilled drink"), RoundStart(), Void(), Void()])
    assert [(r["round"], r["article"], r["void_reason"]) for r in run.records] == [
        (1, "qpoker.art11.3", "voided by the dealer: qpoker.art11.3"),
        (2, "qpoker.art11.1", "voided by the dealer: spilled drink"),
        (3, "qpoker.art11.1", "voided by the dealer"),
    ]
    assert run.codes == ["nothing_to_void"]


def test_art11_5_the_rest_of_a_deal_voided_midway_belongs_to_the_void_round() -> None:
    """Art. 11.5: the shuffler's link drops while it deals, so the round is void; the machine
    kept dealing and the rest of that deal arrives when the link is back. Those hands belong to
    the void round, not to a new one: declined (noticed) until the next round_start."""
    lost = Fault(code="device_lost", extra={"family": "shuffler"})
    run = Run([RoundStart(seats=(1, 2)), HandDealt(seat=1, cards=("AS", "KS", "QS")), lost,
               HandDealt(seat=2, cards=("2C", "2D", "7H")),
               HandDealt(seat="dealer", cards=("QD", "5C", "3H")),
               RoundStart(seats=(1,)), *hands({1: PAIR_TWOS, DEALER: QUEEN_HIGH}), Reveal()])
    first, second = run.records
    assert first["status"] == "void" and first["article"] == "qpoker.art11.5"
    assert second["round"] == 2 and second["status"] == "complete"
    assert run.codes == ["dealt_after_void", "dealt_after_void"]


def test_art11_2_an_exposed_player_card_stands_and_is_recorded() -> None:
    """Art. 11.2: seat 3's 5C dealt face up: the round continues and settles as usual."""
    events = shoe(STANDARD)
    events[4] = CardDealt(seat=3, card="2H", face_up=True)
    record = Run(standard_round(events)).record
    expected = {**STANDARD_COMPLETE, "result": {
        **STANDARD_COMPLETE["result"],
        "seats": {"1": seat_result(SF_SPADES, "straight_flush"),
                  "3": {**seat_result(PAIR_TWOS, "pair"), "exposed": ["2H"]}},
    }}
    assert record == expected


def test_art11_3_an_exposed_dealer_card_voids_the_round() -> None:
    """Art. 11.3: the dealer's first card comes face up: void, all bets void."""
    events = [RoundStart(seats=(1, 3)), *shoe(STANDARD)[:2],
              CardDealt(seat=DEALER, card="QD", face_up=True)]
    assert Run(events).record == void_record(
        "qpoker.art11.3", "the dealer's QD exposed",
        {"dealer": {**dealer_result("QD", None, None), "exposed": ["QD"]},
         "seats": {"1": seat_result("AS", None), "3": seat_result("2D", None)}},
        void_bets("qpoker.art11.3", 1, 3),
    )


def test_art11_4_a_card_to_a_position_without_a_bet_voids_that_position_only() -> None:
    """Art. 11.4: seat 2 has no bet but gets a hand: seat 2 is void, the round goes on."""
    events = [RoundStart(seats=(1, 3)), *hands({1: SF_SPADES, 2: "7C 7D JH", 3: PAIR_TWOS,
                                                DEALER: QUEEN_HIGH}),
              Decision(seat=1, play=True), Reveal()]
    expected = {**STANDARD_COMPLETE,
                "result": {**STANDARD_COMPLETE["result"], "seats": {
                    "1": seat_result(SF_SPADES, "straight_flush"),
                    "2": seat_result("7C 7D JH", "pair", "void"),
                    "3": seat_result(PAIR_TWOS, "pair")}},
                "bets": {**STANDARD_COMPLETE["bets"],
                         "2": {"dobo": bet("void", "qpoker.art11.4"),
                               "play": bet("void", "qpoker.art11.4")}}}
    assert Run(events).record == expected


def test_art11_4_without_a_seat_list_a_seat_first_dealt_after_the_dealer_is_void() -> None:
    """Art. 11.4 with inferred bets: seat 5's first card comes after the dealer's first."""
    deal = shoe(STANDARD)
    events = [*deal[:3], CardDealt(seat=5, card="7C"), *deal[3:],
              Decision(seat=1, play=True), Reveal()]
    record = Run(events).record
    assert record["result"]["seats"]["5"] == seat_result("7C", None, "void")
    assert record["bets"]["5"] == {"dobo": bet("void", "qpoker.art11.4"),
                                   "play": bet("void", "qpoker.art11.4")}
    assert record["bets"]["1"] == STANDARD_COMPLETE["bets"]["1"]


@pytest.mark.parametrize(
    "fault",
    [Fault(code="shuffler_jam"), Fault(code="shuffler_failure", detail="E42"),
     Fault(code="shuffler_door_open"), Fault(code="device_lost", extra={"family": "shuffler"})],
    ids=lambda fault: fault.code,
)
def test_art11_5_the_shuffling_machine_failing_while_dealing_voids_the_round(fault: Fault) -> None:
    """Art. 11.5: a shuffler failure (or its lost link) between the first and the last card."""
    run = Run([RoundStart(seats=(1, 3)), *hands(STANDARD)[:1], fault])
    detail = " (E42)" if fault.detail else ""
    assert run.record == void_record(
        "qpoker.art11.5", f"the shuffling machine failed while dealing: {fault.code}{detail}",
        {"dealer": dealer_result("", None, None),
         "seats": {"1": seat_result(SF_SPADES, "straight_flush"), "3": seat_result("", None)}},
        void_bets("qpoker.art11.5", 1, 3),
    )


def test_art11_5_only_a_shuffler_failure_during_the_deal_counts() -> None:
    """Art. 11.5 is about dealing: after the last card, outside a round, or another device's
    loss, a fault changes nothing."""
    jam = Fault(code="shuffler_jam")
    events = [jam, RoundStart(seats=(1, 3)), *hands(STANDARD)[:1],
              Fault(code="device_lost", extra={"family": "shoe"}), Fault(code="link_errors"),
              *hands(STANDARD)[1:], jam, Decision(seat=1, play=True), Reveal(), jam]
    run = Run(events)
    assert run.records == [STANDARD_COMPLETE]
    assert run.notices == []


@pytest.mark.parametrize(
    "fault",
    [Fault(code="shuffler_failure", detail="2 failure: round 2, dealing seat 4"),
     Fault(code="device_lost", extra={"family": "shuffler"})],
    ids=lambda fault: fault.code,
)
def test_art11_5_a_failure_before_the_first_card_of_a_round_voids_it(fault: Fault) -> None:
    """Issue 16, item 3: the machine announced round 2 (its seats) and failed before its first
    card (tabled-sim shuffler failure@4). The round is void under Art. 11.5, not silently
    replaced by the next round_start; cards of its deal that still come are declined."""
    run = Run([RoundStart(seats=(1, 3)), fault, *hands(STANDARD)[:1],
               *standard_round(hands(STANDARD))])
    detail = f" ({fault.detail})" if fault.detail else ""
    assert run.records[0] == void_record(
        "qpoker.art11.5", f"the shuffling machine failed while dealing: {fault.code}{detail}",
        {"dealer": dealer_result("", None, None),
         "seats": {"1": seat_result("", None), "3": seat_result("", None)}},
        void_bets("qpoker.art11.5", 1, 3),
    )
    assert run.codes == ["dealt_after_void"]
    assert run.records[1] == {**STANDARD_COMPLETE, "round": 2}


# -- the table's other events -------------------------------------------------------------------


def test_other_games_events_are_declined() -> None:
    run = Run([Roll(dice=(1, 2)), NoRoll(), ShoeStart(decks=8)])
    assert run.codes == ["not_for_game"] * 3
    assert run.records == []


def test_events_outside_a_round_are_declined_without_an_outcome() -> None:
    run = Run([Decision(seat=1, play=True), Reveal(), Void()])
    assert run.codes == ["decision_without_round", "nothing_to_reveal", "nothing_to_void"]
    assert run.table.next_round == 1 and not run.table.round_open


def test_a_round_start_while_a_round_is_open_closes_it_void_even_before_any_card() -> None:
    """Issue 16, item 3: a round is never dropped. A round_start finds round 1 open, its seats
    announced and not one card dealt: round 1 is void (Art. 11.1, its positions lack their
    cards), and round 2 is dealt on its own seats."""
    run = Run([RoundStart(seats=(2,)), *standard_round(hands(STANDARD))])
    assert run.records[0] == void_record(
        "qpoker.art11.1", "a new round began first: seat 2 has 0, the dealer has 0 of 3 cards",
        {"dealer": dealer_result("", None, None), "seats": {"2": seat_result("", None)}},
        void_bets("qpoker.art11.1", 2),
    )
    assert run.records[1] == {**STANDARD_COMPLETE, "round": 2}


def test_rounds_are_numbered_from_one_and_the_table_reports_its_state() -> None:
    table = QPokerTable()
    assert (table.next_round, table.round_open, table.dealing_complete) == (1, False, False)
    table.feed(RoundStart(seats=(1, 3)))
    assert table.round_open and not table.dealing_complete
    for event in hands(STANDARD):
        table.feed(event)
    assert table.dealing_complete
    assert [o.round for o in table.feed(Reveal()) if isinstance(o, Outcome)] == [1]
    assert (table.next_round, table.round_open) == (2, False)


def test_make_table_builds_a_qpoker_table_with_its_options() -> None:
    table = make_table("qpoker", {"positions": "9"})
    assert isinstance(table, QPokerTable) and table.options == QPokerOptions(9)


def test_bet_results_carry_their_article() -> None:
    outcome = Run(standard_round(hands(STANDARD))).outcomes[0]
    for seat_bets in outcome.bets.values():
        assert isinstance(seat_bets, Mapping)
        assert all(isinstance(b, BetResult) and b.article for b in seat_bets.values())


# -- the published stream -----------------------------------------------------------------------


def publish(events: Iterable[Event]) -> list[tuple[Event, list[Event]]]:
    table = QPokerTable()
    publication = Publication(table)
    return [(event, publication.admit(event, table.feed(event))) for event in events]


def test_publication_withholds_cards_until_the_rules_open_them() -> None:
    """docs/contract.md: players' cards are published when the deal is complete (Art. 9.1), the
    dealer's just before the reveal; until then each is a placeholder at its place."""
    deal = hands(STANDARD)
    events = [RoundStart(seats=(1, 3)), *deal, Decision(seat=1, play=True), Reveal()]
    seat1, seat3, dealer = (replace_extra(event) for event in deal)
    assert [batch for _, batch in publish(events)] == [
        [events[0]],
        [Withheld(seat=1, count=3)],
        [Withheld(seat=3, count=3)],
        [Withheld(seat=DEALER, count=3), seat1, seat3],
        [events[4]],
        [dealer, events[5]],
    ]
    assert all(event.extra == {"withheld": True} for event in (seat1, seat3, dealer))


def replace_extra(event: Event) -> Event:
    """The held event as published: the same event marked ``"withheld": true``."""
    from tabled.contract.events import event_to_dict, parse_event

    return parse_event({**event_to_dict(event), "withheld": True})


def test_publication_of_a_voided_round_publishes_its_held_cards_before_the_void() -> None:
    """The round ends on the dealer's exposed card: the held cards come first, then the event."""
    events = [RoundStart(seats=(1,)), CardDealt(seat=1, card="AS"),
              CardDealt(seat=DEALER, card="KD"), CardDealt(seat=1, card="KS", face_up=True),
              CardDealt(seat=DEALER, card="QD", face_up=True)]
    batches = [batch for _, batch in publish(events)]
    assert batches[1:4] == [[Withheld(seat=1, count=1)], [Withheld(seat=DEALER, count=1)],
                            [events[3]]]
    assert [event.extra for event in batches[4]] == [{"withheld": True}] * 2 + [{}]
    assert batches[4][2] is events[4]


def test_publication_keeps_the_events_metadata_on_the_placeholder() -> None:
    event = parse_line('{"v":1,"type":"hand","seat":2,"cards":["AS","KS","QS"],'
                       '"device":"shuffler-1","seq":7,"ts":"2026-01-01T00:00:00Z"}')
    ((_, batch),) = publish([event])
    assert batch == [Withheld(seat=2, count=3, meta=event.meta)]


def test_withheld_placeholders_hold_the_order_and_their_identities_fill_them_in() -> None:
    """A table fed placeholders checks the order with them and settles once they are filled."""
    run = Run([RoundStart(seats=(1, 3)), Withheld(seat=1, count=3), Withheld(seat=3, count=3),
               Decision(seat=3, play=False), Withheld(seat=DEALER, count=3),
               *(replace_extra(event) for event in hands(STANDARD)), Decision(seat=1, play=True),
               Reveal()])
    assert run.records == [STANDARD_COMPLETE]
    unknown = Run([Withheld(seat=1, count=3), replace_extra(HandDealt(seat=2, cards=("AS",)))])
    assert unknown.codes == ["nothing_withheld"]
    out_of_order = Run([RoundStart(seats=(1, 3)), Withheld(seat=3, count=3)])
    assert out_of_order.record["article"] == "qpoker.art11.1"


def test_a_reveal_with_identities_never_published_is_void() -> None:
    """A published stream cut before the fill-ins cannot be settled: the round is void."""
    run = Run([RoundStart(seats=(1,)), Withheld(seat=1, count=3),
               Withheld(seat=DEALER, count=3), Reveal()])
    assert run.record["void_reason"] == "reveal while withheld cards were never identified"


def test_the_rest_of_an_unlisted_deal_voided_midway_is_that_round_s_until_the_dealer_s_cards(
) -> None:
    """Found looking for issue 16's class: a round without a seat list, voided after its first
    card while the deal went on, used to hand the rest of its deal to a new round, which could
    complete: seat 3's K K K settled as three of a kind in a round the table had voided. The
    rest is the void round's until the dealer, dealt last (Art. 7), has had its three cards."""
    rotation = [(1, "AS"), (3, "KS"), ("dealer", "2H"), (1, "AH"), (3, "KH"), ("dealer", "3C"),
                (1, "AD"), (3, "KD"), ("dealer", "9S")]
    dealt = [CardDealt(card=card, seat=seat) for seat, card in rotation]  # type: ignore[arg-type]
    run = Run([dealt[0], Void(reason="dealer_call"), *dealt[1:], Decision(seat=3, play=True),
               Reveal(), *standard_round(hands(STANDARD))])
    assert [(r["round"], r["status"]) for r in run.records] == [(1, "void"), (2, "complete")]
    assert run.codes == ["dealt_after_void"] * 8 + ["decision_without_round",
                                                     "nothing_to_reveal"]
    assert run.records[1] == {**STANDARD_COMPLETE, "round": 2}
