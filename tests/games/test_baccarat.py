"""Baccarat rules core, by example: one test (or one parametrised family) per observable article of
docs/rules/baccarat.md and per project Reading, each asserting exact outcome records through
``feed``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from tabled.contract.events import (
    Burn,
    CardDealt,
    CutCard,
    Decision,
    Demo,
    Event,
    Fault,
    HandDealt,
    NoRoll,
    Reveal,
    Roll,
    RoundStart,
    ShoeStart,
    Void,
    Withheld,
)
from tabled.contract.outcome import Notice, Outcome
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.rules import BaccaratResult, BaccaratTable
from tabled.games.registry import make_table
from tabled.games.table import Table

BET_NAMES = ("player", "banker", "tie", "player_pair", "banker_pair")
ART16_1 = "baccarat.art16.1"
ART16_2 = "baccarat.art16.2"
PAIRS_LOSE = {
    "player_pair": {"result": "lose", "article": "baccarat.art12"},
    "banker_pair": {"result": "lose", "article": "baccarat.art12"},
}
PUSH = {"result": "push", "article": "baccarat.art11"}


# -- helpers ---------------------------------------------------------------------------------------


def cards(*codes: str) -> list[Event]:
    return [CardDealt(card=code) for code in codes]


def feed_all(table: Table, events: Iterable[Event]) -> list[Outcome | Notice]:
    out: list[Outcome | Notice] = []
    for event in events:
        out.extend(table.feed(event))
    return out


def records(events: Iterable[Event], **options: Any) -> list[dict[str, Any]]:
    """The outcome records of ``events`` on a fresh table; fails on any notice."""
    outputs = feed_all(BaccaratTable(BaccaratOptions(**options)), events)
    assert not [o for o in outputs if isinstance(o, Notice)]
    return [o.to_record() for o in outputs if isinstance(o, Outcome)]


def win(pays: str, article: str) -> dict[str, str]:
    return {"result": "win", "pays": pays, "article": article}


def lose(article: str) -> dict[str, str]:
    return {"result": "lose", "article": article}


def void_bets(article: str) -> dict[str, dict[str, str]]:
    return {name: {"result": "void", "article": article} for name in BET_NAMES}


def result(
    player: list[str], banker: list[str], player_total: int, banker_total: int,
    winner: str | None, natural: bool,
) -> dict[str, Any]:
    return {
        "player_cards": player, "banker_cards": banker, "player_total": player_total,
        "banker_total": banker_total, "winner": winner, "natural": natural,
    }


def complete(round_: int, res: dict[str, Any], bets: dict[str, Any], **extra: Any
             ) -> dict[str, Any]:
    return {"v": 2, "type": "outcome", "game": "baccarat", "round": round_, "status": "complete",
            **extra, "result": res, "bets": bets}


def void(round_: int, reason: str, article: str, res: dict[str, Any], **extra: Any
         ) -> dict[str, Any]:
    return {"v": 2, "type": "outcome", "game": "baccarat", "round": round_, "status": "void",
            "void_reason": reason, "article": article, **extra, "result": res,
            "bets": void_bets(article)}


# Hands by shoe order (P1 B1 P2 B2, then the third cards), reused across articles.
#: Player 6 against Banker 3: Banker draws first; 2H leaves it at 5, still lower (Art. 9, 3.1).
LOWER_STAYS_LOWER = ("2S", "3D", "4H", "KC", "2H")
#: Player 6 against Banker 3; Banker's 3H makes 6, equal (Method 1 3.2 / Method 2 3.2).
LOWER_DRAWS_EQUAL = ("2S", "3D", "4H", "KC", "3H")
#: Player 6 against Banker 3; Banker's 5H makes 8, greater; Player draws TC and stays 6.
LOWER_DRAWS_GREATER = ("2S", "3D", "4H", "KC", "5H", "TC")
#: Both 9 with two cards: a natural tie.
NATURAL_TIE = ("4S", "9D", "5H", "KC")


# -- Art. 1: equipment, the shoe's card count ------------------------------------------------------


def test_art1_a_card_beyond_the_decks_copies_voids_its_hand_when_dealt_out() -> None:
    """Art. 1 (6-12 decks of 52): a 7th AS in a 6-deck shoe voids the hand that holds it; burned
    copies count, and the hand is played out by Art. 9 before its void outcome."""
    table = BaccaratTable()
    assert feed_all(table, [ShoeStart(decks=6), *(Burn(card="AS") for _ in range(6))]) == []
    assert table.feed(CardDealt(card="AS")) == []
    assert table.round_open
    outputs = feed_all(table, cards("2D", "3H", "4C", "5S", "6S"))
    assert [o.to_record() for o in outputs if isinstance(o, Outcome)] == [void(
        1, "card AS is copy 7 in a shoe of 6 decks", "baccarat.art1",
        result(["AS", "3H", "5S"], ["2D", "4C", "6S"], 9, 2, None, False),
    )]
    assert not table.round_open


def test_art1_more_cards_than_the_shoe_holds_voids_the_hand_unknown_burns_included() -> None:
    """Art. 1: card 313 out of a 6-deck shoe (312 cards) voids its hand, counting burns without a
    card; the next shoe_start resets the count."""
    table = BaccaratTable()
    assert feed_all(table, [ShoeStart(decks=6), *(Burn() for _ in range(312))]) == []
    outputs = feed_all(table, cards(*NATURAL_TIE))
    assert [o.to_record() for o in outputs if isinstance(o, Outcome)] == [void(
        1, "card 4S is card 313 out of a shoe of 6 decks (312 cards)", "baccarat.art1",
        result(["4S", "5H"], ["9D", "KC"], 9, 9, None, True),
    )]
    outputs = feed_all(table, [ShoeStart(decks=6), *cards(*NATURAL_TIE)])
    assert [o.to_record()["status"] for o in outputs if isinstance(o, Outcome)] == ["complete"]


def test_art1_a_shoe_outside_6_to_12_decks_is_noticed_and_counted_as_it_is() -> None:
    """Art. 1: a 1-deck shoe_start is noticed, yet the shoe holds one deck: a second AS voids."""
    table = BaccaratTable()
    assert table.feed(ShoeStart(decks=1)) == [Notice(
        "decks_out_of_range", "a shoe of 1 decks; the rules allow 6 to 12", "baccarat.art1")]
    first = feed_all(table, cards("AS", "2D", "3H", "4C", "8S"))
    assert [o.to_record()["status"] for o in first if isinstance(o, Outcome)] == ["complete"]
    second = feed_all(table, cards("AS", "2C", "3C", "4D", "8C"))
    assert [(o.to_record()["article"], o.to_record()["void_reason"])
            for o in second if isinstance(o, Outcome)] == [
        ("baccarat.art1", "card AS is copy 2 in a shoe of 1 decks")]


def test_art1_a_burned_card_beyond_the_shoe_is_noticed_no_hand_holds_it() -> None:
    """Art. 1: an impossible burned card cannot void a hand (none holds it): it gives a notice."""
    table = BaccaratTable(BaccaratOptions(decks=6))
    assert feed_all(table, [Burn(card="QH") for _ in range(6)]) == []
    assert table.feed(Burn(card="QH")) == [Notice(
        "card_count", "burned: card QH is copy 7 in a shoe of 6 decks", "baccarat.art1")]
    assert not table.round_open


def test_art1_before_any_shoe_start_the_shoe_holds_the_option_decks() -> None:
    """Art. 1 with the table's ``decks`` option: before a shoe_start, 8 decks are counted."""
    table = BaccaratTable(BaccaratOptions(decks=8))
    assert feed_all(table, [Burn(card="7D") for _ in range(8)]) == []
    assert table.feed(Burn(card="7D"))[0].article == "baccarat.art1"


# -- Art. 2: the start of a shoe -------------------------------------------------------------------


def test_art2_1_burns_at_the_start_of_a_shoe_are_accepted_silently() -> None:
    """Art. 2.1: after shoe_start, burning as many cards as decks (known or not) outputs nothing,
    opens no round, and the first hand is round 1."""
    table = BaccaratTable()
    burns = [Burn(card="TS"), Burn(), Burn(card="3C"), Burn(), Burn(), Burn(card="KD")]
    assert feed_all(table, [ShoeStart(decks=6), *burns]) == []
    assert not table.round_open
    assert records([ShoeStart(decks=6), *burns, *cards(*NATURAL_TIE)])[0]["round"] == 1


def test_art2_2_three_demonstration_hands_settle_nothing_then_a_fourth_is_void() -> None:
    """Art. 2.2: up to 3 demonstration hands per shoe are complete with ``demo: true`` and every
    bet void; a 4th demo breaks the limit, so that hand is void, not dealt as a real hand."""
    demo_hand = [Demo(), *cards(*NATURAL_TIE)]
    got = records([ShoeStart(decks=8), *demo_hand * 4])
    natural_tie = result(["4S", "5H"], ["9D", "KC"], 9, 9, "tie", True)
    assert got == [
        *(complete(n, natural_tie, void_bets("baccarat.art2.2"), demo=True) for n in (1, 2, 3)),
        void(4, "demonstration hand 4 in one shoe; at most 3 are allowed", "baccarat.art2.2",
             result(["4S", "5H"], ["9D", "KC"], 9, 9, None, True), demo=True),
    ]


def test_art2_2_a_demonstration_after_the_first_real_hand_is_void_a_new_shoe_allows_it() -> None:
    """Art. 2.2: demonstrations only at the start of a shoe; the next shoe may have them again."""
    got = records([
        ShoeStart(decks=8), *cards(*NATURAL_TIE), Demo(), *cards(*NATURAL_TIE),
        ShoeStart(decks=8), Demo(), *cards(*NATURAL_TIE),
    ])
    assert [(r["status"], r.get("demo"), r.get("void_reason")) for r in got] == [
        ("complete", None, None),
        ("void", True, "a demonstration hand after the shoe's first real hand"),
        ("complete", True, None),
    ]


# -- Art. 3 and Reading R-B2: the last hand --------------------------------------------------------


@pytest.mark.parametrize(("last_hand", "statuses"), [
    ("this", ["complete", "complete", "void", "void"]),
    ("one_more", ["complete", "complete", "complete", "void"]),
])
def test_art3_reading_rb2_cut_card_during_a_hand_makes_it_the_last(
    last_hand: str, statuses: list[str]
) -> None:
    """Art. 3 / R-B2: the cut card out during hand 2 makes hand 2 the last (``this``) or hand 3
    (``one_more``); later hands are played out but void until the next shoe_start."""
    got = records([
        ShoeStart(decks=8), *cards(*NATURAL_TIE),
        *cards(*NATURAL_TIE[:2]), CutCard(), *cards(*NATURAL_TIE[2:]),
        *cards(*NATURAL_TIE), *cards(*LOWER_STAYS_LOWER),
        ShoeStart(decks=8), *cards(*NATURAL_TIE),
    ], last_hand=last_hand)
    assert [r["status"] for r in got] == [*statuses, "complete"]
    reason = ("a hand dealt after the shoe's last hand (cut card, last_hand="
              f"{last_hand}); the shoe must be reshuffled")
    assert got[3] == void(4, reason, "baccarat.art3",
                          result(["2S", "4H"], ["3D", "KC", "2H"], 6, 5, None, False))


@pytest.mark.parametrize(("last_hand", "statuses"), [
    ("this", ["complete", "complete", "void"]),
    ("one_more", ["complete", "complete", "complete"]),
])
def test_reading_rb2_cut_card_between_hands_makes_the_next_hand_the_last(
    last_hand: str, statuses: list[str]
) -> None:
    """R-B2: the cut card between hand 1's completion and hand 2's first card makes hand 2 the
    last (``this``), or hand 3 (``one_more``)."""
    got = records([
        ShoeStart(decks=8), *cards(*NATURAL_TIE), CutCard(),
        *cards(*NATURAL_TIE), *cards(*NATURAL_TIE),
    ], last_hand=last_hand)
    assert [r["status"] for r in got] == statuses


def test_art3_a_second_cut_card_in_a_shoe_is_noticed_and_moves_nothing() -> None:
    """Art. 3: the first cut card decides the last hand; a second one is reported."""
    table = BaccaratTable()
    feed_all(table, [ShoeStart(decks=8), CutCard()])
    assert table.feed(CutCard()) == [Notice(
        "cut_card_repeated",
        "the cut card already came out of this shoe; the last hand stays as it was set",
        "baccarat.art3")]
    statuses = [o.to_record()["status"] for o in feed_all(table, cards(*NATURAL_TIE * 2))
                if isinstance(o, Outcome)]
    assert statuses == ["complete", "void"]


# -- Art. 4, 5, 7: exposed cards, values, dealing order --------------------------------------------


def test_art4_an_exposed_card_stands_and_seat_does_not_steer_the_deal() -> None:
    """Art. 4: a card out of the shoe face up stands; the hand and its bets stand. The ``seat``
    a reader guessed does not move the card: the shoe's order deals it."""
    plain = records(cards(*LOWER_DRAWS_GREATER))
    exposed = records([
        CardDealt(card="2S", face_up=True, seat="dealer"), CardDealt(card="3D", seat=1),
        CardDealt(card="4H", face_up=True), Fault(code="card_exposed"),
        *cards(*LOWER_DRAWS_GREATER[3:]),
    ])
    assert exposed == plain
    assert exposed[0]["status"] == "complete"


def test_art5_faces_and_tens_count_zero_and_totals_are_mod_10() -> None:
    """Art. 5: 7+8 = 5, K+J = 0, 0+9 = 9, 5+6 = 1; ace counts 1 (A+8 = 9)."""
    got = records(cards("7S", "KS", "8H", "JD", "9C", "6D"))
    assert got[0]["result"] == result(["7S", "8H", "6D"], ["KS", "JD", "9C"], 1, 9, "banker",
                                      False)
    ace = records(cards("AS", "2D", "8H", "3C"))
    assert ace[0]["result"] == result(["AS", "8H"], ["2D", "3C"], 9, 5, "player", True)


def test_art7_cards_alternate_player_first() -> None:
    """Art. 7: P1 B1 P2 B2: the 1st and 3rd cards are Player's, the 2nd and 4th Banker's; the
    first card opens the round."""
    table = BaccaratTable()
    assert table.feed(CardDealt(card="5S")) == []
    assert table.round_open
    (outcome,) = feed_all(table, cards("9D", "3H", "JC"))
    assert isinstance(outcome, Outcome)
    assert outcome.result == BaccaratResult(("5S", "3H"), ("9D", "JC"), 8, 9, "banker", True)


# -- Art. 8: burning -------------------------------------------------------------------------------


def test_art8_burn_between_hands_is_fine_and_mid_hand_is_noticed_while_the_hand_goes_on() -> None:
    """Art. 8: burning at the start of any hand outputs nothing; a burn in the middle of a hand
    is a notice citing Art. 8 and the hand completes as if it had not happened."""
    table = BaccaratTable()
    assert feed_all(table, [*cards(*NATURAL_TIE), Burn(card="2C")]) != []  # hand 1's outcome
    assert table.feed(Burn(card="3C")) == []
    feed_all(table, cards("2S", "3D"))
    assert table.feed(Burn()) == [Notice(
        "burn_mid_hand",
        "a card was burned after 2 card(s) of the hand; burning is done at the start of a hand, "
        "the hand continues",
        "baccarat.art8")]
    (outcome,) = feed_all(table, cards(*LOWER_STAYS_LOWER[2:]))
    assert isinstance(outcome, Outcome)
    assert outcome.to_record() == complete(
        2, result(["2S", "4H"], ["3D", "KC", "2H"], 6, 5, "player", False),
        {"player": win("1:1", ART16_1), "banker": lose(ART16_1), "tie": lose(ART16_1),
         **PAIRS_LOSE})


# -- Art. 9: drawing, Method 1 and Method 2 --------------------------------------------------------


@pytest.mark.parametrize(("method", "article"), [(1, ART16_1), (2, ART16_2)])
def test_art9_1_a_natural_decides_the_hand_with_two_cards(method: int, article: str) -> None:
    """Art. 9, 1 (both methods): Player 8 against Banker 7 is a natural; no card is drawn, and
    the fifth card out of the shoe begins the next hand."""
    got = records(cards("5S", "3D", "3H", "4C", "TD"), method=method)
    assert got == [complete(
        1, result(["5S", "3H"], ["3D", "4C"], 8, 7, "player", True),
        {"player": win("19:20", "baccarat.art17.1"), "banker": lose(article),
         "tie": lose(article), **PAIRS_LOSE})]


@pytest.mark.parametrize(("method", "article"), [(1, ART16_1), (2, ART16_2)])
def test_art9_1_a_banker_natural_decides_against_a_lower_player(method: int, article: str) -> None:
    """Art. 9, 1: "either hand" — Banker's natural 9 decides, Player's 5 does not draw."""
    got = records(cards("2S", "4D", "3H", "5C"), method=method)
    assert got == [complete(
        1, result(["2S", "3H"], ["4D", "5C"], 5, 9, "banker", True),
        {"player": lose(article), "banker": win("19:20", "baccarat.art17.1"),
         "tie": lose(article), **PAIRS_LOSE})]


@pytest.mark.parametrize(("method", "article"), [(1, ART16_1), (2, ART16_2)])
def test_art9_2_equal_totals_both_draw_player_first(method: int, article: str) -> None:
    """Art. 9, 2 (both methods): 5 against 5, Player draws (2C: 7), then Banker (3S: 8)."""
    got = records(cards("2S", "4D", "3H", "AC", "2C", "3S"), method=method)
    assert got == [complete(
        1, result(["2S", "3H", "2C"], ["4D", "AC", "3S"], 7, 8, "banker", False),
        {"player": lose(article), "banker": win("19:20", "baccarat.art17.1"),
         "tie": lose(article), **PAIRS_LOSE})]


@pytest.mark.parametrize(("method", "article"), [(1, ART16_1), (2, ART16_2)])
def test_art9_3_1_the_lower_hand_still_lower_the_other_stands_and_wins(
    method: int, article: str
) -> None:
    """Art. 9, 3.1 (both methods): Banker 3 draws first to 5, still below Player's 6."""
    got = records(cards(*LOWER_STAYS_LOWER), method=method)
    assert got == [complete(
        1, result(["2S", "4H"], ["3D", "KC", "2H"], 6, 5, "player", False),
        {"player": win("1:1", article), "banker": lose(article), "tie": lose(article),
         **PAIRS_LOSE})]


def test_art9_3_1_when_player_is_lower_player_draws_first() -> None:
    """Art. 9, 3.1: Player 3 draws 9H (2), still below Banker's 6: Banker stands and wins."""
    got = records(cards("3S", "4D", "KH", "2C", "9H"))
    assert got[0]["result"] == result(["3S", "KH", "9H"], ["4D", "2C"], 2, 6, "banker", False)
    assert got[0]["bets"]["banker"] == win("1:1", ART16_1)


def test_art9_method1_3_2_lower_reaches_equal_so_the_other_must_draw() -> None:
    """Art. 9 Method 1, 3.2: Banker's new 6 equals Player's 6, so Player must draw (2C: 8)."""
    got = records([*cards(*LOWER_DRAWS_EQUAL), *cards("2C")], method=1)
    assert got == [complete(
        1, result(["2S", "4H", "2C"], ["3D", "KC", "3H"], 8, 6, "player", False),
        {"player": win("19:20", "baccarat.art17.1"), "banker": lose(ART16_1),
         "tie": lose(ART16_1), **PAIRS_LOSE})]


def test_art9_method1_3_2_lower_goes_above_so_the_other_must_draw() -> None:
    """Art. 9 Method 1, 3.2: Banker's new 8 is above Player's 6; Player draws TC, stays 6."""
    got = records(cards(*LOWER_DRAWS_GREATER), method=1)
    assert got == [complete(
        1, result(["2S", "4H", "TC"], ["3D", "KC", "5H"], 6, 8, "banker", False),
        {"player": lose(ART16_1), "banker": win("19:20", "baccarat.art17.1"),
         "tie": lose(ART16_1), **PAIRS_LOSE})]


def test_art9_method2_3_2_lower_reaches_equal_the_other_stands_tie() -> None:
    """Art. 9 Method 2, 3.2: Banker's new 6 equals Player's 6: Player does not draw, a tie
    (Tie pays 9:1 by Art. 16.2, Player and Banker push by Art. 11)."""
    got = records(cards(*LOWER_DRAWS_EQUAL), method=2)
    assert got == [complete(
        1, result(["2S", "4H"], ["3D", "KC", "3H"], 6, 6, "tie", False),
        {"player": PUSH, "banker": PUSH, "tie": win("9:1", ART16_2), **PAIRS_LOSE})]


def test_art9_method2_3_3_lower_goes_above_so_the_other_must_draw() -> None:
    """Art. 9 Method 2, 3.3: Banker's new 8 is above Player's 6; Player must draw (TC: 6)."""
    got = records(cards(*LOWER_DRAWS_GREATER), method=2)
    assert got == [complete(
        1, result(["2S", "4H", "TC"], ["3D", "KC", "5H"], 6, 8, "banker", False),
        {"player": lose(ART16_2), "banker": win("19:20", "baccarat.art17.1"),
         "tie": lose(ART16_2), **PAIRS_LOSE})]


def test_reading_rb1_third_cards_follow_the_method_not_player_first() -> None:
    """R-B1: after P1 B1 P2 B2 the third cards come in the order the method dictates: the lower
    Banker takes the 5th card, Player the 6th; a 7th card begins the next hand."""
    table = BaccaratTable()
    assert feed_all(table, cards(*LOWER_DRAWS_GREATER[:5])) == []
    (outcome,) = table.feed(CardDealt(card="TC"))
    assert isinstance(outcome, Outcome)
    assert outcome.result == BaccaratResult(("2S", "4H", "TC"), ("3D", "KC", "5H"), 6, 8,
                                            "banker", False)
    assert table.feed(CardDealt(card="AH")) == []
    assert table.round_open


# -- Art. 10: misdeals -----------------------------------------------------------------------------


@pytest.mark.parametrize(("interruption", "what"), [
    (RoundStart(), "round_start"),
    (ShoeStart(decks=8), "shoe_start"),
    (Void(), "a void event"),
    (Void(reason="dealer error"), "a void event (dealer error)"),
])
def test_art10_a_hand_missing_cards_is_void_on_round_start_shoe_start_or_void(
    interruption: Event, what: str
) -> None:
    """Art. 10: a hand still missing cards cannot be corrected, so it is void; the record shows
    what was dealt, totals as they stand, no winner."""
    table = BaccaratTable()
    feed_all(table, cards("2S", "3D", "4H"))
    (outcome,) = table.feed(interruption)
    assert isinstance(outcome, Outcome)
    assert outcome.to_record() == void(
        1, f"misdeal: {what} arrived after 3 card(s), before the hand had every card the drawing "
           "rules call for", "baccarat.art10", result(["2S", "4H"], ["3D"], 6, 3, None, False))
    assert not table.round_open
    assert table.next_round == 2


def test_art10_an_unreadable_card_during_a_hand_voids_it_and_counts_toward_the_shoe() -> None:
    """Art. 10: the shoe could not read card 5: it cannot be known, so the deal cannot be
    corrected; the unknown card still counts toward the shoe (Art. 1)."""
    table = BaccaratTable()
    feed_all(table, [ShoeStart(decks=6), *(Burn() for _ in range(307)), *cards(*NATURAL_TIE[:2])])
    feed_all(table, cards("2S", "3D"))
    (outcome,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(outcome, Outcome)
    assert outcome.to_record() == void(
        1, "misdeal: card 5 of the hand was unreadable (fault unreadable_card); the deal cannot "
           "be corrected", "baccarat.art10", result(["4S", "2S"], ["9D", "3D"], 6, 2, None, False))
    # 307 burns + 4 cards + 1 unreadable = 312: the shoe is spent, so one more card is too many.
    (over,) = feed_all(table, [*cards(*NATURAL_TIE)])
    assert isinstance(over, Outcome)
    assert over.void_reason == "card 4S is card 313 out of a shoe of 6 decks (312 cards)"


def test_art7_art10_an_unreadable_card_between_hands_is_the_player_s_first_so_its_hand_is_void(
) -> None:
    """Art. 7: a card out of the shoe between hands, not burned, is the Player's first; unread,
    its hand cannot be corrected and is void (Art. 10). It counts toward the shoe (Art. 1) and,
    like any unread card, ends its hand: the next card begins a new one."""
    table = BaccaratTable()
    assert table.feed(ShoeStart(decks=6)) == []
    (outcome,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(outcome, Outcome)
    assert outcome.to_record() == void(
        1, "misdeal: card 1 of the hand (the Player's first, Art. 7) was unreadable (fault "
           "unreadable_card); the deal cannot be corrected", "baccarat.art10",
        result([], [], 0, 0, None, False))
    assert not table.round_open
    (tie,) = feed_all(table, cards(*NATURAL_TIE))
    assert isinstance(tie, Outcome) and (tie.round, tie.status) == (2, "complete")
    # 1 unread + 4 cards + 306 burns = 311 of 312: one more unread card is the last; the next
    # overflows, and Art. 1 is the first cause of its hand's void.
    feed_all(table, [Burn() for _ in range(306)])
    (last,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(last, Outcome) and last.article == "baccarat.art10"
    (over,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(over, Outcome)
    assert (over.round, over.article, over.void_reason) == (
        4, "baccarat.art1", "an unknown card is card 313 out of a shoe of 6 decks (312 cards)")


def test_art2_2_an_unreadable_first_card_of_a_demonstration_hand_spends_the_mark() -> None:
    """The unread card begins the marked hand, which is void; the next hand is a real one."""
    table = BaccaratTable()
    table.feed(Demo())
    (outcome,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(outcome, Outcome)
    assert (outcome.status, outcome.article, outcome.extra.get("demo")) == (
        "void", "baccarat.art10", True)
    (real,) = feed_all(table, cards(*NATURAL_TIE))
    assert isinstance(real, Outcome) and "demo" not in real.to_record()


def test_art1_an_unreadable_card_beyond_the_shoe_voids_its_hand_by_art1_first() -> None:
    """Art. 1 before Art. 10: an unread card in a hand, beyond the shoe's 312 cards, is the first
    cause of the hand's void."""
    table = BaccaratTable()
    feed_all(table, [ShoeStart(decks=6), *(Burn() for _ in range(310)), *cards("2S", "3D")])
    (outcome,) = table.feed(Fault(code="unreadable_card"))
    assert isinstance(outcome, Outcome)
    assert (outcome.article, outcome.void_reason) == (
        "baccarat.art1", "an unknown card is card 313 out of a shoe of 6 decks (312 cards)")


def test_art10_void_with_no_hand_is_a_notice_and_round_start_between_hands_is_silent() -> None:
    table = BaccaratTable()
    assert table.feed(Void()) == [Notice(
        "nothing_to_void", "a void event with no hand being dealt", "baccarat.art10")]
    assert table.feed(RoundStart()) == []
    assert table.next_round == 1


@pytest.mark.parametrize("code", ["device_lost", "shoe_empty", "card_exposed", "link_errors"])
def test_art10_other_faults_output_nothing_and_the_hand_goes_on(code: str) -> None:
    table = BaccaratTable()
    feed_all(table, cards("2S", "3D"))
    assert table.feed(Fault(code=code, extra={"family": "shoe"})) == []
    assert [o.to_record()["status"] for o in feed_all(table, cards(*LOWER_STAYS_LOWER[2:]))
            if isinstance(o, Outcome)] == ["complete"]


def test_art10_a_hand_already_void_keeps_its_first_cause() -> None:
    """A hand condemned by Art. 1 and then cut short reports the Art. 1 cause, seen first."""
    table = BaccaratTable(BaccaratOptions(decks=6))
    feed_all(table, [Burn(card="AS") for _ in range(6)])
    feed_all(table, cards("AS", "2D"))
    (outcome,) = table.feed(RoundStart())
    assert isinstance(outcome, Outcome)
    assert (outcome.article, outcome.void_reason) == (
        "baccarat.art1", "card AS is copy 7 in a shoe of 6 decks")


# -- Art. 10: a hand voided while it is still being dealt (the daemon lost the shoe) -------------

LOST = Void(reason="device_lost: shoe shoe-1 not back within 3 s", extra={"device_lost": True})
#: The issue's shoe (seed 5): hand 3 is 5H 6D KD 2S (Player 5H KD, Banker 6D 2S: Banker's
#: natural 8), hand 4 is JD JC 7D TH 8D QC (Player 7, Banker 0: the lower, Banker, draws 8D and
#: reaches 8, so Player must draw QC and stays 7: Banker wins).
HAND_3 = ("5H", "6D", "KD", "2S")
HAND_4 = ("JD", "JC", "7D", "TH", "8D", "QC")


def test_art10_the_rest_of_a_hand_voided_for_a_lost_shoe_belongs_to_that_hand_not_the_next(
) -> None:
    """The daemon voided hand 3 after its first card because the shoe stayed lost; the dealer,
    who saw nothing, dealt on. The three cards the drawing rules still called for are hand 3's
    (declined with a notice), and hand 4 is dealt from its own first card."""
    table = BaccaratTable()
    feed_all(table, cards(*NATURAL_TIE, *NATURAL_TIE[::-1]))  # rounds 1 and 2
    table.feed(CardDealt(card=HAND_3[0]))
    (void3,) = table.feed(LOST)
    assert isinstance(void3, Outcome)
    assert (void3.round, void3.status, void3.article) == (3, "void", "baccarat.art10")
    assert not table.round_open  # its outcome is out: nothing for a lost-shoe timer to void
    follow = feed_all(table, cards(*HAND_3[1:]))
    assert [o.code for o in follow if isinstance(o, Notice)] == ["dealt_after_void"] * 3
    assert all(isinstance(o, Notice) and o.article == "baccarat.art10" for o in follow)
    assert "round 3" in follow[0].message and "fully dealt" in follow[-1].message
    (hand4,) = feed_all(table, cards(*HAND_4))
    assert hand4.to_record() == complete(4, result(["JD", "7D", "QC"], ["JC", "TH", "8D"], 7, 8,
                                                   "banker", False), {
        "player": lose(ART16_1), "banker": win("19:20", "baccarat.art17.1"),
        "tie": lose(ART16_1), **PAIRS_LOSE})


@pytest.mark.parametrize("boundary", [Void(reason="dealer_button"), RoundStart(),
                                      ShoeStart(decks=8), Fault(code="unreadable_card")])
def test_art10_the_dealer_s_boundary_ends_a_void_hand_still_being_dealt(boundary: Event) -> None:
    """The dealer stopped the void hand (VOID, a new round or shoe, an unread card): the next
    card begins a new hand, and the void hand gets no second outcome."""
    table = BaccaratTable()
    feed_all(table, cards(*HAND_3[:2]))
    (void1,) = table.feed(LOST)
    assert isinstance(void1, Outcome) and void1.round == 1
    assert not [o for o in table.feed(boundary) if isinstance(o, Outcome)]
    (hand,) = feed_all(table, cards(*HAND_4))
    assert isinstance(hand, Outcome)
    assert (hand.round, hand.status, hand.result.player_cards) == (
        2, "complete", ("JD", "7D", "QC"))


def test_art10_a_lost_shoe_void_with_no_hand_open_and_a_burn_in_the_void_hand() -> None:
    """A second lost-shoe void finds no hand to void; a burn in the void hand's rest is a burn
    in the middle of a hand (Art. 8), and the hand is still followed."""
    table = BaccaratTable()
    assert table.feed(LOST)[0] == Notice(
        "nothing_to_void", "a void event with no hand being dealt", "baccarat.art10")
    table.feed(CardDealt(card=HAND_3[0]))
    table.feed(LOST)
    assert [o.code for o in table.feed(LOST) if isinstance(o, Notice)] == ["nothing_to_void"]
    assert [o.code for o in table.feed(Burn(card="9S")) if isinstance(o, Notice)] == [
        "burn_mid_hand"]
    feed_all(table, cards(*HAND_3[1:]))
    (hand,) = feed_all(table, cards(*HAND_4))
    assert isinstance(hand, Outcome) and (hand.round, hand.status) == (2, "complete")


@pytest.mark.parametrize(("last_hand", "voided"), [("this", 2), ("one_more", 3)])
def test_reading_rb2_the_cut_card_in_a_void_hand_still_being_dealt_falls_in_that_hand(
        last_hand: str, voided: int) -> None:
    """The void hand is in progress at the table: the cut card coming out in its rest makes it
    the cut card's hand (R-B2), as it would had the shoe never been lost."""
    table = BaccaratTable(BaccaratOptions(last_hand=last_hand))  # type: ignore[arg-type]
    table.feed(CardDealt(card=HAND_3[0]))
    table.feed(LOST)
    table.feed(CutCard())
    feed_all(table, cards(*HAND_3[1:]))
    outcomes = [o for o in feed_all(table, cards(*HAND_4, *NATURAL_TIE)) if isinstance(o, Outcome)]
    assert [(o.round, o.status, o.article) for o in outcomes] == [
        (2, "complete" if voided == 3 else "void", None if voided == 3 else "baccarat.art3"),
        (3, "void", "baccarat.art3")]


def test_art10_an_old_recording_s_lost_shoe_void_without_the_mark_replays_as_it_was() -> None:
    """A void without ``device_lost`` (a recording made before the mark existed) is the dealer's:
    the next card begins a new hand, so old recordings give the outcomes they gave."""
    table = BaccaratTable()
    table.feed(CardDealt(card=HAND_3[0]))
    table.feed(Void(reason="device_lost: shoe shoe-1 not back within 3 s"))
    (hand,) = feed_all(table, cards(*HAND_3[1:], "9C", "9H"))
    assert isinstance(hand, Outcome) and hand.result.player_cards == ("6D", "2S")


# -- event_not_applied: what the daemon could not apply, it does not guess -----------------------


def not_applied(event_type: str, code: str | None = None) -> Fault:
    extra = {"event_type": event_type, **({"event_code": code} if code else {})}
    return Fault(code="event_not_applied", detail="TypeError in the runtime", extra=extra)


def test_a_card_not_applied_voids_its_hand_and_cards_are_declined_until_the_dealer_s_boundary(
) -> None:
    """A card the daemon could not apply cannot be counted in its hand, so the hand is void and
    the daemon cannot tell where the next begins: it declines cards until the dealer marks a
    boundary, rather than guess."""
    table = BaccaratTable()
    feed_all(table, cards(*HAND_3[:2]))
    (void1,) = table.feed(not_applied("card"))
    assert isinstance(void1, Outcome)
    assert (void1.status, void1.article) == ("void", "baccarat.art10")
    assert "could not apply a card event" in (void1.void_reason or "")
    declined = feed_all(table, cards(*HAND_3[2:], *HAND_4))
    assert {o.code for o in declined if isinstance(o, Notice)} == {"card_not_followed"}
    assert not [o for o in declined if isinstance(o, Outcome)]
    table.feed(Void(reason="dealer_button"))
    (hand,) = feed_all(table, cards(*NATURAL_TIE))
    assert isinstance(hand, Outcome) and (hand.round, hand.status) == (2, "complete")


def test_a_card_not_applied_between_hands_begins_a_void_hand() -> None:
    table = BaccaratTable()
    (void1,) = table.feed(not_applied("card"))
    assert isinstance(void1, Outcome) and (void1.round, void1.status) == (1, "void")
    assert table.feed(CardDealt(card="2S"))[0].code == "card_not_followed"  # type: ignore[union-attr]
    table.feed(RoundStart())
    assert [o.status for o in feed_all(table, cards(*NATURAL_TIE)) if isinstance(o, Outcome)] == [
        "complete"]


@pytest.mark.parametrize(("lost", "void_hands"), [
    ("demo", 1),  # the next hand may be a demonstration: void
    ("cut_card", 99),  # the last hand is not known: every hand of the shoe is void
    ("shoe_start", 99),
    ("fault", 0),  # a fault other than an unread card changes nothing
    ("burn", 0),  # counted, part of no hand
])
def test_an_event_not_applied_between_hands_voids_what_it_may_have_changed(
        lost: str, void_hands: int) -> None:
    table = BaccaratTable()
    assert not [o for o in table.feed(not_applied(lost)) if isinstance(o, Outcome)]
    if lost == "shoe_start":
        table.feed(RoundStart())  # a boundary for the cards, not for the shoe
    outcomes = [o for o in feed_all(table, cards(*NATURAL_TIE, *NATURAL_TIE[::-1]))
                if isinstance(o, Outcome)]
    assert [o.status for o in outcomes] == (["void"] * min(void_hands, 2)
                                            + ["complete"] * (2 - min(void_hands, 2)))
    table.feed(ShoeStart(decks=8))
    (fresh,) = feed_all(table, cards(*NATURAL_TIE))
    assert isinstance(fresh, Outcome) and fresh.status == "complete"


def test_an_unread_card_not_applied_is_a_card_not_applied() -> None:
    table = BaccaratTable()
    table.feed(CardDealt(card="2S"))
    (void1,) = table.feed(not_applied("fault", "unreadable_card"))
    assert isinstance(void1, Outcome) and void1.status == "void"
    assert table.feed(CardDealt(card="3S"))[0].code == "card_not_followed"  # type: ignore[union-attr]


def test_a_void_not_applied_mid_hand_voids_it_and_the_daemon_waits_for_a_boundary() -> None:
    table = BaccaratTable()
    table.feed(CardDealt(card="2S"))
    (void1,) = table.feed(not_applied("void"))
    assert isinstance(void1, Outcome) and void1.status == "void"
    assert table.feed(CardDealt(card="3S"))[0].code == "card_not_followed"  # type: ignore[union-attr]
    assert table.feed(Fault(code="unreadable_card"))[0].code == "dealt_after_void"  # type: ignore[union-attr]
    (hand,) = feed_all(table, cards(*NATURAL_TIE))
    assert isinstance(hand, Outcome) and (hand.round, hand.status) == (2, "complete")


# -- Art. 11, 12, 16, 17: settlement ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "tie_win"), [(1, win("14:1", ART16_1)), (2, win("9:1", ART16_2))]
)
def test_art11_art16_a_tie_pushes_player_and_banker_and_pays_the_tie(
    method: int, tie_win: dict[str, str]
) -> None:
    """Art. 11: after a tie Banker and Player wagers are not lost (push); Art. 16.1 pays the Tie
    14:1 with Method 1, Art. 16.2 pays it 9:1 with Method 2."""
    got = records(cards(*NATURAL_TIE), method=method)
    assert got == [complete(
        1, result(["4S", "5H"], ["9D", "KC"], 9, 9, "tie", True),
        {"player": PUSH, "banker": PUSH, "tie": tie_win, **PAIRS_LOSE})]


def test_art12_pairs_are_the_first_two_cards_of_the_same_rank() -> None:
    """Art. 12: 4S-4H is a Player Pair, J-J a Banker Pair (suits ignored), both paid 11:1."""
    got = records(cards("4S", "JD", "4H", "JC"))
    assert got == [complete(
        1, result(["4S", "4H"], ["JD", "JC"], 8, 0, "player", True),
        {"player": win("19:20", "baccarat.art17.1"), "banker": lose(ART16_1),
         "tie": lose(ART16_1), "player_pair": win("11:1", "baccarat.art12"),
         "banker_pair": win("11:1", "baccarat.art12")})]


def test_art12_j_q_is_not_a_pair_and_a_third_card_never_makes_one() -> None:
    """Art. 12: J-Q is not a pair; only the first two cards count (6-5 then 6 is no pair)."""
    got = records(cards("6S", "JD", "5H", "QC", "3D", "6D"))
    assert got[0]["result"]["player_cards"] == ["6S", "5H", "6D"]
    assert got[0]["bets"]["player_pair"] == lose("baccarat.art12")
    assert got[0]["bets"]["banker_pair"] == lose("baccarat.art12")


@pytest.mark.parametrize(("hand", "winner", "total"), [
    (("5S", "3D", "2H", "3C", "TD"), "player", 7),
    (("2S", "4D", "KH", "3C", "AC"), "banker", 7),
])
def test_art17_1_five_percent_commission_on_a_win_with_7_8_or_9(
    hand: tuple[str, ...], winner: str, total: int
) -> None:
    """Art. 17.1: a Player or Banker win with 7, 8 or 9 pays 1:1 less 5 % = 19:20."""
    got = records(cards(*hand), commission="five_percent")
    assert got[0]["result"]["winner"] == winner
    assert got[0]["result"][f"{winner}_total"] == total
    assert got[0]["bets"][winner] == win("19:20", "baccarat.art17.1")


def test_art17_1_five_percent_leaves_other_winning_totals_at_1_to_1() -> None:
    """Art. 17.1 applies to 7, 8, 9 only: a win with 6 is paid 1:1 (Art. 16.1)."""
    got = records(cards(*LOWER_STAYS_LOWER), commission="five_percent")
    assert got[0]["bets"]["player"] == win("1:1", ART16_1)


@pytest.mark.parametrize(("method", "article"), [(1, ART16_1), (2, ART16_2)])
def test_art17_2_half_on_four_pays_1_to_2_on_a_win_with_4_and_no_commission_otherwise(
    method: int, article: str
) -> None:
    """Art. 17.2: no commission, but a win with a total of 4 is paid half (1:2); a win with 8
    is paid 1:1 by the method's pay table."""
    four = records(cards("AS", "2D", "3H", "KC", "TC"), commission="half_on_four", method=method)
    assert four[0]["result"] == result(["AS", "3H"], ["2D", "KC", "TC"], 4, 2, "player", False)
    assert four[0]["bets"] == {"player": win("1:2", "baccarat.art17.2"), "banker": lose(article),
                               "tie": lose(article), **PAIRS_LOSE}
    eight = records(cards(*LOWER_DRAWS_GREATER), commission="half_on_four", method=method)
    assert eight[0]["bets"]["banker"] == win("1:1", article)


# -- the table's bookkeeping -----------------------------------------------------------------------


@pytest.mark.parametrize("event", [
    Roll(dice=(3, 4)), NoRoll(), Decision(seat=1, play=True), Reveal(),
    HandDealt(seat=1, cards=("AS", "2S", "3S")), Withheld(seat=1, count=3),
])
def test_events_of_other_games_are_noticed_and_change_nothing(event: Event) -> None:
    table = BaccaratTable()
    feed_all(table, cards("2S", "3D"))
    assert table.feed(event) == [Notice(
        "not_for_game", f"a {event.type} event is not part of baccarat")]
    assert table.round_open
    assert [o.to_record()["status"] for o in feed_all(table, cards(*LOWER_STAYS_LOWER[2:]))
            if isinstance(o, Outcome)] == ["complete"]


def test_rounds_count_from_1_and_every_outcome_takes_a_number() -> None:
    """Demonstration, void and complete hands each take the next round number."""
    table = make_table("baccarat")
    assert table.game == "baccarat"
    assert table.next_round == 1
    outputs = feed_all(table, [
        Demo(), *cards(*NATURAL_TIE), *cards("2S"), Void(), *cards(*NATURAL_TIE),
    ])
    assert [o.round for o in outputs if isinstance(o, Outcome)] == [1, 2, 3]
    assert table.next_round == 4


def test_options_are_the_table_s_and_fixed() -> None:
    """Art. 18: the table keeps the regulated options it was built with."""
    options = BaccaratOptions(method=2, commission="half_on_four", last_hand="one_more", decks=6)
    assert BaccaratTable(options).options is options
    assert BaccaratTable().options == BaccaratOptions()


# -- a shoe that numbers its cards: a gap is cards the daemon never saw ----------------------------


def numbered(start: int, *codes: str) -> list[Event]:
    return [CardDealt(card=code, extra={"card_no": start + i}) for i, code in enumerate(codes)]


def test_a_gap_in_the_shoe_s_card_numbers_voids_the_hand_and_waits_for_a_boundary() -> None:
    """Cards 3 and 4 left the shoe and never reached the daemon (a shoe that lost what it read):
    the hand they went to is void (Art. 10), they count toward the shoe (Art. 1), and the daemon
    cannot tell where the next hand begins, so it declines cards until the dealer marks one."""
    table = BaccaratTable(BaccaratOptions(decks=6))
    feed_all(table, [ShoeStart(decks=6), *numbered(1, "2S", "3D")])
    out = feed_all(table, numbered(5, "4H"))
    (void1,) = [o for o in out if isinstance(o, Outcome)]
    assert (void1.status, void1.article) == ("void", "baccarat.art10")
    assert "cards 3 to 4 of the shoe never reached the daemon" in (void1.void_reason or "")
    assert [o.code for o in out if isinstance(o, Notice)] == ["card_not_followed"]
    assert table._out_of_shoe == 5
    table.feed(Void(reason="dealer_button"))
    (hand,) = feed_all(table, numbered(6, *NATURAL_TIE))
    assert isinstance(hand, Outcome) and (hand.round, hand.status) == (2, "complete")


def test_numbered_cards_burns_and_unread_cards_in_order_change_nothing() -> None:
    table = BaccaratTable()
    feed_all(table, [ShoeStart(decks=8), Burn(card="KS", extra={"card_no": 1}),
                     Burn(card=None, extra={"card_no": 2, "unreadable": True})])
    (hand,) = feed_all(table, numbered(3, *NATURAL_TIE))
    assert isinstance(hand, Outcome) and hand.status == "complete"
    (unread,) = table.feed(Fault(code="unreadable_card", extra={"card_no": 7}))
    assert isinstance(unread, Outcome) and unread.article == "baccarat.art10"
    (next_hand,) = feed_all(table, [ShoeStart(decks=8), *numbered(1, *NATURAL_TIE)])
    assert isinstance(next_hand, Outcome) and next_hand.status == "complete"
