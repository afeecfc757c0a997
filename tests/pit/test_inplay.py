"""The hand in progress and the shoe's count (issue 29): a baccarat table's cards reach its panel
as they are dealt (public out of the shoe), each to Player or Banker as the rules deal it, and
are cleared by the outcome; the shoe's penetration and cut card; no Q Poker card event reaches
a panel before its outcome; the tile's round count over the real minutes; "1 seat"."""

from __future__ import annotations

import json
import random
from typing import Any

from tabled.contract.events import CardDealt, ShoeStart
from tabled.contract.outcome import Outcome
from tabled.games import registry
from tabled.games.baccarat.pit import view
from tabled.games.baccarat.rules import BaccaratTable
from tabled.pit.model import Floor, pit_part
from tests.pit.conftest import baccarat_outcome, birth, event, msg

RANKS, SUITS = "A23456789TJQK", "SHCD"


def floor_with_shoe(decks: int = 8) -> Floor:
    floor = Floor()
    floor.apply(birth())
    floor.apply(event({"type": "shoe_start", "decks": decks}, 0))
    return floor


def in_play(floor: Floor) -> Any:
    panel = floor.panel("lab", "t1")
    assert panel is not None
    return panel["in_play"]


def count(floor: Floor) -> dict[str, Any]:
    panel = floor.panel("lab", "t1")
    assert panel is not None
    return dict(view(panel)["shoe_count"])


def test_each_card_shows_as_it_is_dealt_on_the_side_the_rules_give_it() -> None:
    """A seeded shoe dealt through the rules core: after every card the hand in progress is
    the rules' hand so far (Art. 7 and 9: the lower hand draws first, a tie both), and the
    outcome clears it."""
    rng = random.Random(29)
    shoe = [r + s for _ in range(8) for r in RANKS for s in SUITS]
    rng.shuffle(shoe)
    table = BaccaratTable()
    table.feed(ShoeStart(decks=8))
    floor = floor_with_shoe()
    seq, outcome_seq, hands, dealt = 1, 0, 0, 0
    sixth_to_player = 0
    for card in shoe[:300]:
        number = table.next_round
        outputs = table.feed(CardDealt(card=card))
        floor.apply(event({"type": "card", "card": card, "round": number}, seq))
        seq += 1
        dealt += 1
        shown = in_play(floor)
        assert shown is not None and shown["round"] == number
        assert shown["order"][-1]["card"] == card
        assert len(shown["player"]) + len(shown["banker"]) == len(shown["order"])
        for output in outputs:
            assert isinstance(output, Outcome) and output.status == "complete"
            record = output.to_record()
            result = record["result"]
            # the last card in: the hand shown is the hand the outcome settles
            assert (shown["player"], shown["banker"]) == (result["player_cards"],
                                                          result["banker_cards"])
            if len(shown["order"]) == 6 and shown["order"][5]["side"] == "player":
                sixth_to_player += 1
            floor.apply(msg("outcome", record, outcome_seq))
            outcome_seq += 1
            hands += 1
            assert in_play(floor) is None  # cleared with its outcome
    assert hands > 50 and sixth_to_player > 0  # the banker drew first in some hands
    assert count(floor)["out"] == dealt and count(floor)["exact"] is True


def test_a_card_of_a_settled_hand_is_not_shown_and_the_next_hand_keeps_its_cards() -> None:
    floor = floor_with_shoe()
    for seq, card in enumerate(["2S", "9D", "3H", "KC"], start=1):
        floor.apply(event({"type": "card", "card": card, "round": 1}, seq))
    # the next hand's first card before hand 1's outcome (another path, another order)
    floor.apply(event({"type": "card", "card": "4D", "round": 2}, 5))
    assert in_play(floor)["round"] == 2 and in_play(floor)["player"] == ["4D"]
    floor.apply(baccarat_outcome(1, 0))
    assert in_play(floor)["round"] == 2  # hand 1's outcome leaves hand 2 alone
    floor.apply(baccarat_outcome(2, 1))
    assert in_play(floor) is None
    floor.apply(event({"type": "card", "card": "5D", "round": 2}, 6))  # late: settled
    assert in_play(floor) is None
    assert count(floor)["out"] == 6


def test_a_hand_a_card_of_which_did_not_come_says_so() -> None:
    """The shoe numbers its cards: a jump means a card did not reach the pit (lost on the way,
    fetched later from the journal, or unreadable): the hand shows its cards in the order they
    came, marked, and not split between Player and Banker."""
    floor = floor_with_shoe()
    floor.apply(event({"type": "burn", "card": "5S", "card_no": 1}, 1))
    floor.apply(event({"type": "card", "card": "2C", "round": 1, "card_no": 2}, 2))
    assert in_play(floor)["missing"] is False
    floor.apply(event({"type": "card", "card": "AH", "round": 1, "card_no": 5}, 5))
    shown = in_play(floor)
    assert shown["missing"] is True and [o["card"] for o in shown["order"]] == ["2C", "AH"]
    assert count(floor)["out"] == 5 and count(floor)["exact"] is True


def test_a_demonstration_hand_is_marked_and_a_new_shoe_clears_the_hand() -> None:
    floor = floor_with_shoe()
    floor.apply(event({"type": "demo"}, 1))
    floor.apply(event({"type": "card", "card": "2S", "round": 1}, 2))
    assert in_play(floor)["demo"] is True
    floor.apply(event({"type": "shoe_start", "decks": 6}, 3))
    assert in_play(floor) is None
    assert count(floor)["cards"] == 312
    assert count(floor)["out"] == 0


def test_the_penetration_counts_burns_and_cards_and_the_cut_card_says_where_it_came_out() -> None:
    floor = floor_with_shoe(8)
    c = count(floor)
    assert (c["cards"], c["out"], c["percent"], c["cut_out"], c["cut_at"]) == (
        416, 0, 0, False, None)
    floor.apply(event({"type": "burn", "card": "5S"}, 1))
    for seq in range(2, 7):
        floor.apply(event({"type": "burn"}, seq))  # burned unseen: counted all the same
    for seq in range(7, 111):
        floor.apply(event({"type": "card", "card": "2S", "round": seq}, seq))
    c = count(floor)
    assert c["out"] == 110 and c["penetration"] == round(110 / 416, 4) and c["percent"] == 26
    floor.apply(event({"type": "cut_card"}, 111))
    c = count(floor)
    assert c["cut_out"] is True and c["cut_at"] == 110 and c["cut_percent"] == 26
    # the shoe's own card number (the shoe driver's ``card_no``) is the count when it is given
    floor.apply(event({"type": "card", "card": "3S", "round": 200, "card_no": 400}, 112))
    floor.apply(event({"type": "cut_card", "card_no": 401}, 113))
    c = count(floor)
    assert (c["out"], c["cut_at"], c["percent"], c["cut_percent"]) == (400, 401, 96, 96)


def test_a_panel_rebuilt_from_outcomes_counts_their_cards_as_approximate() -> None:
    """The record keeps a shoe's start and its outcomes, not its cards: rebuilt from it, the
    count is the outcomes' cards (burns unknown) until the shoe numbers a card again."""
    floor = floor_with_shoe()
    floor.apply(baccarat_outcome(1, 0))
    floor.apply(baccarat_outcome(2, 1))
    c = count(floor)
    assert c["out"] == 8 and c["exact"] is False
    floor.apply(event({"type": "card", "card": "3S", "round": 3, "card_no": 12}, 1))
    assert count(floor)["out"] == 12 and count(floor)["exact"] is True


def test_only_a_game_whose_cards_are_public_lists_card_events() -> None:
    """A part may read card events only when its game deals them face up (baccarat, out of
    the shoe); Q Poker withholds the dealer's until the reveal: its part lists none."""
    carded = {"card", "hand", "withheld", "burn"}
    listed = {name: set(part.events) & carded for name in registry.games()
              if (part := pit_part(name)) is not None}
    assert listed["qpoker"] == set()
    assert listed["baccarat"] == {"card", "burn"}
    assert {name for name, kinds in listed.items() if kinds} == {"baccarat"}


def test_no_qpoker_card_event_reaches_the_panel_or_the_floor_before_its_outcome() -> None:
    floor = Floor()
    floor.apply(birth("qpoker", devices=[{"id": "shuffler-1", "family": "shuffler"}]))
    dealer = ["KS", "KH", "4D"]
    stream = [
        event({"type": "round_start", "seats": [1], "round": 1}, 0),
        *[event({"type": "card", "card": c, "seat": 1, "round": 1}, n)
          for n, c in enumerate(["2S", "2H", "9C"], start=1)],
        *[event({"type": "card", "card": c, "seat": "dealer", "round": 1}, n)
          for n, c in enumerate(dealer, start=4)],
        event({"type": "hand", "seat": "dealer", "cards": dealer, "round": 1}, 7),
        event({"type": "decision", "seat": 1, "play": True, "round": 1}, 8),
    ]
    for message in stream:
        assert floor.apply(message) is False  # nothing of it changed the panel or the tile
        model = floor.table("lab", "t1")
        assert model is not None and model.panel_event_seq is None  # the panel read none
        shown = json.dumps(floor.snapshot())
        assert not any(card in shown for card in dealer)
    floor.apply(msg("outcome", {
        "v": 2, "type": "outcome", "game": "qpoker", "round": 1, "status": "complete",
        "result": {"dealer": {"cards": dealer, "hand": "pair", "qualifies": True},
                   "seats": {"1": {"cards": ["2S", "2H", "9C"], "hand": "pair",
                                   "status": "active"}}},
        "bets": {"1": {"dobo": {"result": "lose"}, "play": {"result": "lose"}}}}, 0))
    tile = floor.tile("lab", "t1")
    assert tile is not None and tile["last_outcome"]["line"].endswith(", 1 seat")
    assert all(card in json.dumps(floor.snapshot()) for card in dealer)  # shown at its outcome


def test_the_rounds_of_less_than_an_hour_are_counted_over_the_minutes_that_passed() -> None:
    now = [1_800_000_000.0]
    floor = Floor(clock=lambda: now[0])
    floor.apply(birth())
    for n in range(1, 41):
        floor.apply(baccarat_outcome(n, n - 1, at=now[0] + n * 10))
    now[0] += 7 * 60 + 30
    tile = floor.tile("lab", "t1")
    assert tile is not None
    assert (tile["rounds_last_hour"], tile["rounds_minutes"]) == (40, 7)
    now[0] += 3 * 3600
    for n in range(41, 51):
        floor.apply(baccarat_outcome(n, n - 1, at=now[0] - 600 + n))
    tile = floor.tile("lab", "t1")
    assert tile is not None and (tile["rounds_last_hour"], tile["rounds_minutes"]) == (10, 60)
