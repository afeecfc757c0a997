"""A dealer's command names the round it is for (``round`` on ``decision``, ``reveal``,
``void``): the rules decline it in any other round, with the notice ``for_another_round``, and
change nothing; without ``round`` it acts on the open round, as before.

The defect these pin (docs/reliability.md, "What the audit against the ledgers found"): the
broker campaign, Q Poker, seed 2, ``exposed@dealer:16``. The console decided and revealed on
round 16, which its exposed dealer's card had already voided (qpoker.art11.3); the machine
began round 17 before the commands reached the daemon, and the reveal, naming no round, voided
round 17 under qpoker.art11.1. The events here are parsed from JSON, as the daemon and ``tabled
replay`` read them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tabled.contract.events import (
    Decision,
    EventError,
    Reveal,
    Void,
    encode_event,
    parse_event,
    parse_line,
)
from tabled.contract.outcome import FOR_ANOTHER_ROUND, Notice, Outcome
from tabled.games.registry import make_table
from tabled.games.table import Table

ROUND_16_DEALER_EXPOSED = [  # seats 4 and 5 bet; the dealer's hand comes out face up
    {"type": "round_start", "seats": [4, 5]},
    {"type": "hand", "seat": 4, "cards": ["AS", "KS", "QS"]},
    {"type": "hand", "seat": 5, "cards": ["2D", "2H", "5C"]},
    {"type": "hand", "seat": "dealer", "cards": ["QD", "4C", "9H"], "face_up": True},
]
ROUND_17_START = [
    {"type": "round_start", "seats": [4, 5]},
    {"type": "hand", "seat": 4, "cards": ["5D", "6H", "KH"]},
]
ROUND_17_REST = [
    {"type": "hand", "seat": 5, "cards": ["2C", "JS", "6C"]},
    {"type": "hand", "seat": "dealer", "cards": ["KC", "4H", "TC"]},
]


class Fed:
    """A fresh table of ``game`` fed event objects; its outcome records and notices."""

    def __init__(self, game: str, *events: dict[str, Any]) -> None:
        self.table: Table = make_table(game)
        self.records: list[dict[str, Any]] = []
        self.notices: list[Notice] = []
        self.feed(*events)

    def feed(self, *events: dict[str, Any]) -> Fed:
        for obj in events:
            for output in self.table.feed(parse_line(json.dumps({"v": 1, **obj}))):
                if isinstance(output, Outcome):
                    self.records.append(output.to_record())
                else:
                    self.notices.append(output)
        return self

    @property
    def codes(self) -> list[str]:
        return [notice.code for notice in self.notices]


def qpoker_at_round_16() -> Fed:
    """A Q Poker table whose 15 rounds are over (each voided by the dealer at once)."""
    fed = Fed("qpoker")
    for _ in range(15):
        fed.feed({"type": "round_start", "seats": [1]}, {"type": "void"})
    assert fed.table.next_round == 16
    fed.records.clear()
    return fed


def test_a_late_reveal_for_a_voided_round_does_not_void_the_next_one() -> None:
    """The campaign's round 17: the console's decisions and reveal for round 16 arrive while
    round 17 is being dealt. Declined; round 17 is dealt, decided and settled as it was played."""
    fed = qpoker_at_round_16().feed(*ROUND_16_DEALER_EXPOSED)
    assert [(r["round"], r["status"], r["article"]) for r in fed.records] == [
        (16, "void", "qpoker.art11.3")]
    fed.feed(*ROUND_17_START,
             {"type": "decision", "seat": 4, "play": True, "round": 16},
             {"type": "decision", "seat": 5, "play": True, "round": 16},
             {"type": "reveal", "round": 16})
    assert len(fed.records) == 1, "the late reveal must not end round 17"
    assert fed.codes == [FOR_ANOTHER_ROUND] * 3
    assert [n.article for n in fed.notices] == ["qpoker.art9.2", "qpoker.art9.2", "qpoker.art9"]
    assert "for round 16, while round 17 is open" in fed.notices[-1].message
    fed.feed(*ROUND_17_REST,
             {"type": "decision", "seat": 4, "play": True, "round": 17},
             {"type": "decision", "seat": 5, "play": False, "round": 17},
             {"type": "reveal", "round": 17})
    round_17 = fed.records[-1]
    assert (round_17["round"], round_17["status"]) == (17, "complete")
    assert round_17["bets"]["4"]["play"]["result"] != "fold"  # the decision for 17 counted
    assert round_17["bets"]["5"]["play"]["result"] == "fold"


def test_without_a_round_a_late_reveal_still_lands_in_the_open_round() -> None:
    """The old behaviour, which old journals and streams replay to: a command without ``round``
    acts on whatever round is open (here it voids round 17, qpoker.art11.1)."""
    fed = qpoker_at_round_16().feed(*ROUND_16_DEALER_EXPOSED, *ROUND_17_START,
                                    {"type": "reveal"})
    assert [(r["round"], r["article"]) for r in fed.records] == [
        (16, "qpoker.art11.3"), (17, "qpoker.art11.1")]


def test_qpoker_a_late_void_and_a_command_between_rounds() -> None:
    fed = qpoker_at_round_16().feed(*ROUND_16_DEALER_EXPOSED)
    # between rounds 16 and 17: a command for round 16 is for another round, one for round 17
    # (the next) meets no round open, as one without a round does
    fed.feed({"type": "reveal", "round": 16}, {"type": "reveal", "round": 17},
             {"type": "void", "round": 16, "reason": "qpoker.art11.3"})
    assert fed.codes == [FOR_ANOTHER_ROUND, "nothing_to_reveal", FOR_ANOTHER_ROUND]
    assert "round 17 is next (none is open)" in fed.notices[0].message
    assert fed.notices[2].article == "qpoker.art11"
    fed.feed(*ROUND_17_START, {"type": "void", "round": 16, "reason": "qpoker.art11.3"})
    assert len(fed.records) == 1  # round 17 stands
    fed.feed({"type": "void", "round": 17, "reason": "dealer_call"})
    assert [(r["round"], r["status"]) for r in fed.records] == [(16, "void"), (17, "void")]


def test_qpoker_a_command_for_a_later_round_is_declined_too() -> None:
    fed = Fed("qpoker", {"type": "round_start", "seats": [1]},
              {"type": "hand", "seat": 1, "cards": ["AS", "KS", "QS"]},
              {"type": "hand", "seat": "dealer", "cards": ["QD", "4C", "9H"]},
              {"type": "decision", "seat": 1, "play": True, "round": 2},
              {"type": "reveal", "round": 2})
    assert fed.codes == [FOR_ANOTHER_ROUND, FOR_ANOTHER_ROUND] and not fed.records
    fed.feed({"type": "decision", "seat": 1, "play": True, "round": 1},
             {"type": "reveal", "round": 1})
    (record,) = fed.records
    assert record["status"] == "complete" and record["bets"]["1"]["play"]["result"] == "win"


def test_baccarat_a_late_void_does_not_void_the_hand_being_dealt() -> None:
    # hand 1: P 9S KD, B 2H 3C: a natural, complete on four cards
    fed = Fed("baccarat", *({"type": "card", "card": c} for c in ["9S", "2H", "KD", "3C"]),
              {"type": "card", "card": "4S"}, {"type": "card", "card": "4H"},
              {"type": "void", "round": 1, "reason": "misdeal"})
    assert fed.codes == [FOR_ANOTHER_ROUND] and fed.notices[0].article == "baccarat.art10"
    assert "round 2 is being dealt" in fed.notices[0].message
    fed.feed({"type": "void", "round": 2, "reason": "misdeal"})
    assert [(r["round"], r["status"]) for r in fed.records] == [(1, "complete"), (2, "void")]
    fed.feed({"type": "void", "round": 2})  # again: hand 2 is over, and none is being dealt
    assert fed.codes[-1] == FOR_ANOTHER_ROUND
    fed.feed({"type": "void", "round": 3})
    assert fed.codes[-1] == "nothing_to_void"


@pytest.mark.parametrize("named", [1, 2])
def test_baccarat_the_hand_the_daemon_voided_and_is_still_dealt_is_at_the_table(
        named: int) -> None:
    """While a hand the daemon voided (the shoe stayed lost) is still being dealt, the dealer's
    void for it — by its own number, or by the next, as a console counting outcomes sees it —
    ends it: the next card begins a new hand."""
    fed = Fed("baccarat", {"type": "card", "card": "2S"}, {"type": "card", "card": "3H"},
              {"type": "void", "reason": "device_lost: shoe-1", "device_lost": True,
               "round": 1},
              {"type": "card", "card": "4S"},
              {"type": "void", "round": named, "reason": "dealer_call"})
    assert fed.codes == ["dealt_after_void", "already_void"]
    assert fed.table.round_of(parse_event({"v": 1, "type": "card", "card": "5S"})) == 2


def test_craps_a_late_void_does_not_void_the_next_throw() -> None:
    fed = Fed("craps", {"type": "roll", "dice": [3, 4]},
              {"type": "void", "round": 1, "reason": "dice_off_table"})
    assert fed.codes == [FOR_ANOTHER_ROUND] and fed.notices[0].article == "craps.art1"
    fed.feed({"type": "void", "round": 2, "reason": "dice_off_table"})
    assert [(r["round"], r["status"]) for r in fed.records] == [(1, "complete"), (2, "void")]


def test_round_of_names_the_round_an_event_belongs_to() -> None:
    def of(table: Table, **obj: Any) -> int | None:
        return table.round_of(parse_event({"v": 1, **obj}))

    fed = Fed("qpoker", {"type": "round_start", "seats": [1, 2]},
              {"type": "hand", "seat": 1, "cards": ["AS", "KS", "QS"]})
    table = fed.table
    assert of(table, type="hand", seat=2, cards=["2S", "3S", "4S"]) == 1
    assert of(table, type="reveal") == 1
    assert of(table, type="round_start", seats=[1]) == 2  # it voids round 1 and begins round 2
    fed.feed({"type": "void"})  # round 1 voided in the middle of its deal
    assert of(table, type="hand", seat=2, cards=["2S", "3S", "4S"]) == 1  # its rest is its own
    assert of(table, type="round_start", seats=[1]) == 2
    assert of(table, type="reveal") == 2
    fed = Fed("baccarat", {"type": "card", "card": "2S"})
    assert of(fed.table, type="card", card="3S") == 1
    assert of(fed.table, type="round_start") == of(fed.table, type="shoe_start", decks=8) == 2
    assert of(make_table("craps"), type="roll", dice=[1, 1]) == 1


@pytest.mark.parametrize("value", [0, -1, True, False, 1.0, "3", [3], {"n": 3}])
@pytest.mark.parametrize("etype", ["decision", "reveal", "void"])
def test_round_is_a_positive_integer(etype: str, value: Any) -> None:
    fields = {"seat": 3, "play": True} if etype == "decision" else {}
    with pytest.raises(EventError, match="round"):
        parse_event({"v": 1, "type": etype, **fields, "round": value})


def test_round_is_null_never() -> None:
    with pytest.raises(EventError, match="null"):
        parse_line('{"v":1,"type":"reveal","round":null}')


def test_round_parses_and_encodes() -> None:
    assert parse_line('{"v":1,"type":"decision","seat":3,"play":false,"round":17}') == Decision(
        seat=3, play=False, round=17)
    assert parse_line('{"v":1,"type":"reveal","round":17}') == Reveal(round=17)
    assert parse_line('{"v":1,"type":"void","reason":"x","round":2}') == Void(reason="x", round=2)
    assert encode_event(Reveal(round=17)) == '{"v":2,"type":"reveal","round":17}'
    assert encode_event(Reveal()) == '{"v":2,"type":"reveal"}'  # as before: no round, none
