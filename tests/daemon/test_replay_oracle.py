"""``tabled replay`` against independent reference oracles, over long random streams.

For each game and every regulated option combination, a seeded stream of thousands of rounds
(irregular events included) is written to a file and run through the real command line; every
outcome record must agree with the oracle of ``tests/oracle`` (see
:func:`tests.oracle.record_differences` for what is compared). The oracles themselves are first
checked against the rules: exhaustively where the space is small, by exact house edges and a long
simulation where it is not.

Size: ``TABLED_ORACLE_ROUNDS`` rounds per option combination (default 5000). The long run is
``TABLED_ORACLE_ROUNDS=200000 .venv/bin/pytest tests/daemon/test_replay_oracle.py``; set
``TABLED_ORACLE_SEED`` to explore other streams.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import parse_event
from tabled.games.registry import event_checks
from tests.oracle import OutOfScope, Record, baccarat, craps, qpoker, stream_differences
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream, write_jsonl

ROUNDS = int(os.environ.get("TABLED_ORACLE_ROUNDS", "5000"))
SEED = int(os.environ.get("TABLED_ORACLE_SEED", "20261129"))
ROOT = Path(__file__).resolve().parents[2]

Oracle = Callable[[Sequence[Mapping[str, Any]], Mapping[str, str]], list[Record]]
ORACLES: dict[str, Oracle] = {
    "baccarat": baccarat.replay, "craps": craps.replay, "qpoker": qpoker.replay,
}


def make_stream(game: str, options: Mapping[str, str], rounds: int, seed: int) -> list[Record]:
    """The seeded stream of ``rounds`` rounds for one game and option combination."""
    rng = random.Random(seed)
    if game == "baccarat":
        return baccarat_stream(rng, rounds, int(options["method"]), options["last_hand"])
    if game == "craps":
        return craps_stream(rng, rounds)
    return qpoker_stream(rng, rounds)


def events(*fields: Mapping[str, Any]) -> list[Record]:
    return [{"v": 1, **f} for f in fields]


def cards(*codes: str) -> list[Record]:
    return events(*({"type": "card", "card": c} for c in codes))


# -- the baccarat oracle against Art. 5, 9, 11, 12, 16, 17 --------------------------------------

CARD_OF_POINTS = {0: "TS", 1: "AS", **{n: f"{n}S" for n in range(2, 10)}}


def play_out(player: int, banker: int, third: int, fourth: int, method: int
             ) -> tuple[baccarat.Deal, int]:
    """Deal two-card totals ``player`` and ``banker``, then ``third`` and ``fourth`` as the next
    cards, until the oracle says the hand is complete; return it and the cards it took."""
    shoe = [CARD_OF_POINTS[player], CARD_OF_POINTS[banker], "KH", "KD",
            CARD_OF_POINTS[third], CARD_OF_POINTS[fourth]]
    for used in range(4, 7):
        hand = baccarat.deal(shoe[:used], method)
        if hand.complete:
            return hand, used
    raise AssertionError(f"not complete after six cards: {shoe}")


@pytest.mark.parametrize("method", [1, 2])
def test_baccarat_oracle_draws_as_art9_words_it_for_every_total(method: int) -> None:
    """Art. 9 (both methods), by brute force over every pair of two-card totals and every value
    of the next two cards: the text's sentences, checked one by one."""
    for player, banker, third, fourth in itertools.product(range(10), repeat=4):
        hand, used = play_out(player, banker, third, fourth, method)
        p, b = baccarat.total(hand.player), baccarat.total(hand.banker)
        assert baccarat.winner(hand) == ("tie" if p == b else "player" if p > b else "banker")
        assert hand.natural == (player >= 8 or banker >= 8)
        if hand.natural:  # 9.1: decided on two cards
            assert used == 4
            continue
        if player == banker:  # 9.2: both draw, Player first
            assert used == 6 and hand.player[2] == CARD_OF_POINTS[third]
            continue
        lower, other = (hand.player, banker) if player < banker else (hand.banker, player)
        assert lower[2] == CARD_OF_POINTS[third]  # 9.3: the lower hand draws first
        new = baccarat.total(lower)
        if new < other:  # 9.3.1: the other does not draw and wins
            assert used == 5 and baccarat.winner(hand) == ("banker" if lower is hand.player
                                                           else "player")
        elif new == other and method == 2:  # Method 2, 3.2: no draw, a tie
            assert used == 5 and baccarat.winner(hand) == "tie"
        else:  # 9.3.2 (Method 1), 3.3 (Method 2): the other must draw
            assert used == 6


def test_baccarat_oracle_lower_banker_draws_first_art9_3() -> None:
    """Art. 9.3 / R-B1: Player 4, Banker 1: the fifth card is Banker's; still lower, so Player
    wins without drawing."""
    hand = baccarat.deal(["9S", "2D", "5H", "9H", "TD"], 1)
    assert (hand.player, hand.banker, hand.complete) == (("9S", "5H"), ("2D", "9H", "TD"), True)
    assert baccarat.winner(hand) == "player"


def test_baccarat_oracle_method2_equal_new_total_is_a_tie_art9_m2_3_2() -> None:
    """Method 2, 3.2: Player 3 draws a 2 to equal Banker's 5: Banker does not draw, a tie.
    Method 1 (3.2) makes Banker draw."""
    shoe = ["3S", "5S", "KH", "KD", "2C"]
    assert baccarat.deal(shoe, 2).complete
    assert baccarat.winner(baccarat.deal(shoe, 2)) == "tie"
    assert not baccarat.deal(shoe, 1).complete


@pytest.mark.parametrize(("shoe", "method", "commission", "expected"), [
    # Art. 17.1: a win on 7, 8 or 9 pays 1:1 less 5 %.
    (["2S", "7S", "KH", "KD", "4C"], 1, "five_percent", {"banker": "19:20"}),
    # Art. 17.2: a win on 4 pays half; no commission otherwise.
    (["4S", "2S", "KH", "KD", "KC", "KS"], 1, "half_on_four", {"player": "1:2"}),
    (["2S", "7S", "KH", "KD", "4C"], 1, "half_on_four", {"banker": "1:1"}),
    # Art. 16.1 / 16.2: the tie's pay follows the method; Art. 11: Player and Banker push.
    (["8S", "8H", "KH", "KD"], 1, "five_percent", {"tie": "14:1"}),
    (["8S", "8H", "KH", "KD"], 2, "five_percent", {"tie": "9:1"}),
    # Art. 12: J-J is a pair (11:1), J-Q is not.
    (["JS", "JH", "JD", "QC"], 1, "five_percent", {"player_pair": "11:1", "tie": "14:1"}),
])
def test_baccarat_oracle_pays_art11_12_16_17(
    shoe: list[str], method: int, commission: str, expected: dict[str, str]
) -> None:
    bets = baccarat.settle(baccarat.deal(shoe, method), method, commission)
    assert {name: bet["pays"] for name, bet in bets.items() if bet["result"] == "win"} == expected
    if "tie" in expected:
        assert bets["player"] == bets["banker"] == {"result": "push"}


def shoe_with_cut(last_hand: str, cut_before_hand: int, hands: int) -> list[Record]:
    """A shoe of naturals (four cards each) with the cut card before hand ``cut_before_hand``'s
    second card."""
    stream = events({"type": "shoe_start", "decks": 8})
    for number in range(1, hands + 1):
        dealt = cards("9S", "KD", "KH", "KC")
        if number == cut_before_hand:
            dealt.insert(1, {"v": 1, "type": "cut_card"})
        stream += dealt
    return stream


@pytest.mark.parametrize(("last_hand", "voided"), [("this", [4, 5]), ("one_more", [5])])
def test_baccarat_oracle_cut_card_reading_rb2(last_hand: str, voided: list[int]) -> None:
    """Reading R-B2 and Art. 3: the cut card out during hand 3 makes hand 3 the last (``this``)
    or hand 4 (``one_more``); later hands before a new shoe are void, ``baccarat.art3``."""
    records = baccarat.replay(shoe_with_cut(last_hand, 3, 5), {"last_hand": last_hand})
    assert [r["round"] for r in records if r.get("article") == "baccarat.art3"] == voided
    assert all(r["status"] == ("void" if r["round"] in voided else "complete") for r in records)


def test_baccarat_oracle_demo_and_misdeal_art2_2_art10() -> None:
    """Art. 2.2: a demonstration hand settles nothing; Art. 10: a hand short of cards when
    ``round_start`` arrives is void with what was dealt so far."""
    records = baccarat.replay(
        events({"type": "shoe_start", "decks": 6}, {"type": "demo"})
        + cards("9S", "KD", "KH", "KC", "2S", "3S") + events({"type": "round_start"}),
        {},
    )
    demo, misdeal = records
    assert demo["demo"] is True and demo["status"] == "complete"
    assert demo["result"]["winner"] == "player"
    assert {bet["result"] for bet in demo["bets"].values()} == {"void"}
    assert (misdeal["status"], misdeal["article"]) == ("void", "baccarat.art10")
    assert misdeal["result"] == {"player_cards": ["2S"], "banker_cards": ["3S"],
                                 "player_total": 2, "banker_total": 3, "winner": None}


def test_baccarat_oracle_declines_a_copy_the_shoe_cannot_hold() -> None:
    """Card-count integrity (Art. 1) is asserted, not modelled: the streams never break it."""
    with pytest.raises(OutOfScope):
        baccarat.replay(events({"type": "shoe_start", "decks": 6}) + cards(*["AS"] * 7), {})


# -- the craps oracle: exact house edges, and a long simulation ---------------------------------

DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]


def ratio(pays: str) -> Fraction:
    winnings, stake = pays.split(":")
    return Fraction(int(winnings), int(stake))


def resolved_ev(name: str, point: int | None) -> Fraction:
    """Expected gain per unit staked of a wager that is re-rolled until decided, the state
    staying ``point`` (true for every wager below while it is working)."""
    gain = decided = Fraction(0)
    for dice in DICE:
        bet = craps.roll_bets(dice, point, True)[name]
        if bet["result"] in ("open", "off"):
            continue
        decided += 1
        if bet["result"] == "win":
            gain += ratio(bet["pays"])
        elif bet["result"] == "lose":
            gain -= 1
    return gain / decided


def line_ev(name: str) -> Fraction:
    """Pass or Don't Pass from the come-out roll (Art. 2.1, 3.1), exactly."""
    ev = Fraction(0)
    for dice in DICE:
        bet = craps.roll_bets(dice, None, True)[name]
        if bet["result"] == "win":
            ev += ratio(bet["pays"])
        elif bet["result"] == "lose":
            ev -= 1
        elif bet["result"] == "open":
            ev += resolved_ev(name, dice[0] + dice[1])
    return ev / 36


@pytest.mark.parametrize(("name", "point", "edge"), [
    ("field", None, Fraction(-1, 18)),  # Art. 4: 2 and 12 pay 2:1
    ("big7", None, Fraction(-1, 12)),  # Art. 6
    ("eleven", None, Fraction(-1, 9)),  # Art. 7
    ("any_craps", None, Fraction(-1, 9)),  # Art. 8
    ("hard4", None, Fraction(-1, 9)),  # Art. 5
    ("hard6", None, Fraction(-1, 11)),
    ("big6", 4, Fraction(-1, 66)),  # Art. 9: each 6 wins 7
    ("big5", 4, Fraction(-1, 25)),  # Art. 10: each 5 wins 7
    ("big4", 5, Fraction(-1, 15)),  # Art. 11: each 5 wins 9
    ("come_5", 8, Fraction(-1, 5)),  # Art. 2.3: on 5 at 1:1, 4 ways to win against 6
    ("pass_odds", 4, Fraction(0)),  # Art. 2.2: true odds
    ("dont_pass_odds", 9, Fraction(0)),  # Art. 3.2: true lay odds
    ("come_odds_6", 10, Fraction(0)),
    ("dont_come_odds_10", 6, Fraction(0)),
])
def test_craps_oracle_house_edges_are_the_known_ones(
    name: str, point: int | None, edge: Fraction
) -> None:
    """Art. 2-11: each wager's exact expected value from the oracle's per-throw table."""
    assert resolved_ev(name, point) == edge


def test_craps_oracle_pass_and_dont_pass_exactly() -> None:
    """Art. 2.1 (R-C0): the pass line wins 244/495 of decisions, an edge of 7/495; Art. 3.1:
    Don't Pass, with 12 a push, gives up 3/220."""
    assert line_ev("pass") == Fraction(2 * 244, 495) - 1 == Fraction(-7, 495)
    assert line_ev("dont_pass") == Fraction(-3, 220)


def test_craps_oracle_pass_line_wins_244_of_495_in_a_long_simulation() -> None:
    """The whole oracle over a long seeded stream: the share of pass-line decisions won."""
    records = craps.replay(craps_stream(random.Random(SEED), 60_000), {})
    decided = Counter(r["bets"]["pass"]["result"] for r in records
                      if r["bets"]["pass"]["result"] in ("win", "lose"))
    share = decided["win"] / (decided["win"] + decided["lose"])
    assert abs(share - 244 / 495) < 0.015, (share, decided)


def test_craps_oracle_come_out_odds_and_idle_throws_art1() -> None:
    """Come odds are off on a come-out, returned when their wager is decided; a no roll (Art. 1)
    decides nothing and keeps the point; Big bets follow R-C4's option."""
    come_out_seven = craps.roll_bets((3, 4), None, False)
    assert come_out_seven["come_odds_6"] == {"result": "push"}
    assert come_out_seven["come_6"] == {"result": "lose"}
    assert come_out_seven["big6"] == {"result": "off"}
    assert craps.roll_bets((2, 4), 8, True)["come"] == {"result": "open", "moves_to": 6}
    assert craps.roll_bets((3, 3), 8, True)["big6"] == {"result": "win", "pays": "7:6", "unit": 6}
    (idle,) = craps.replay(events({"type": "no_roll"}), {})
    assert idle["no_roll"] and idle["article"] == "craps.art1"
    assert idle["bets"]["pass_odds"] == {"result": "off"}
    assert idle["bets"]["pass"] == {"result": "open"}
    assert set(idle["bets"]) == set(craps.bet_names())


# -- the qpoker oracle against Art. 4, 8, 9, 10 --------------------------------------------------

DECK = [rank + suit for rank in "A23456789TJQK" for suit in "SHCD"]
ALL_HANDS = list(itertools.combinations(DECK, 3))


def test_qpoker_oracle_class_counts_over_all_22100_hands() -> None:
    """Art. 8 with Art. 4's straights (A-2-3 counts, K-A-2 does not): the known counts."""
    counts = Counter(qpoker.hand_class(hand) for hand in ALL_HANDS)
    assert counts == {"straight_flush": 48, "three_of_a_kind": 52, "straight": 720,
                      "flush": 1096, "pair": 3744, "high_card": 16440}


def test_qpoker_oracle_two_hands_from_one_deck_never_tie() -> None:
    """Art. 8: "with one deck and suits ranked, two hands can never tie": hands sharing a key
    always share a card."""
    by_key: dict[tuple[int, ...], list[tuple[str, ...]]] = {}
    for hand in ALL_HANDS:
        by_key.setdefault(qpoker.hand_key(hand), []).append(hand)
    for group in by_key.values():
        for a, b in itertools.combinations(group, 2):
            assert set(a) & set(b), (a, b)


@pytest.mark.parametrize(("higher", "lower"), [
    (["AS", "KS", "QS"], ["AH", "KH", "QH"]),  # Art. 8(1): equal straights, the higher suit
    (["4D", "3D", "2D"], ["AS", "2S", "3S"]),  # Art. 4: A-2-3 is the lowest straight
    (["AS", "2H", "3C"], ["AH", "2S", "3D"]),  # R-Q1: A-2-3's suit is the Ace's
    (["2C", "2D", "2H"], ["AS", "KS", "QH"]),  # three of a kind over a straight
    (["KS", "AH", "2C"], ["QS", "JH", "9D"]),  # K-A-2 is an A-high high card, not a straight
    (["9S", "9H", "3C"], ["9C", "9D", "2S"]),  # Art. 8(5): pair, then the odd card's rank
    (["9S", "9H", "3S"], ["9C", "9D", "3C"]),  # ... then the odd card's suit
    (["KD", "7D", "2D"], ["QS", "JS", "9S"]),  # Art. 8(4): flush by the highest card
    (["KS", "7H", "2D"], ["KH", "7S", "2C"]),  # Art. 8(6): equal ranks, the top card's suit
])
def test_qpoker_oracle_ranks_hands_as_art8_says(higher: list[str], lower: list[str]) -> None:
    assert qpoker.hand_key(higher) > qpoker.hand_key(lower)


def test_qpoker_oracle_dealer_qualifies_with_q_high_art9_4() -> None:
    assert qpoker.qualifies(["QS", "7H", "2D"]) and not qpoker.qualifies(["JS", "9H", "7D"])
    assert qpoker.qualifies(["2S", "2H", "3D"])


@pytest.mark.parametrize(("player", "dealer", "play"), [
    (["JS", "9H", "7D"], ["JH", "9S", "8C"], {"result": "win", "pays": "1:2"}),  # Art. 9.5
    (["2S", "2H", "3D"], ["AS", "AH", "9C"], {"result": "lose"}),  # Art. 9.6
    (["AS", "KS", "QS"], ["AH", "AD", "3C"], {"result": "win", "pays": "3:1"}),  # Art. 9.7
    (["5S", "5H", "5D"], ["AH", "AD", "3C"], {"result": "win", "pays": "2:1"}),
    (["5S", "6H", "7D"], ["AH", "AD", "3C"], {"result": "win", "pays": "3:2"}),
    (["KS", "KH", "7D"], ["QH", "QD", "3C"], {"result": "win", "pays": "1:1"}),
])
def test_qpoker_oracle_play_pays_art9(player: list[str], dealer: list[str],
                                      play: dict[str, str]) -> None:
    assert qpoker.play_bet(player, dealer) == play


def test_qpoker_oracle_round_with_a_stray_seat_and_a_missing_decision_art11_4_rq2() -> None:
    """Art. 11.4: cards to seat 5 (no bet) void that seat only; Reading R-Q2: seat 4 never
    decided, so it folds; Art. 10: seat 2's pair wins Dobo 1:1."""
    stream = events(
        {"type": "round_start", "seats": [2, 4]},
        {"type": "hand", "seat": 2, "cards": ["9S", "9H", "3C"]},
        {"type": "hand", "seat": 5, "cards": ["AS", "AH", "AD"]},
        {"type": "decision", "seat": 2, "play": True},
        {"type": "hand", "seat": 4, "cards": ["KS", "7H", "2D"]},
        {"type": "hand", "seat": "dealer", "cards": ["JS", "9D", "7C"]},
        {"type": "reveal"},
    )
    (record,) = qpoker.replay(stream, {})
    assert record["result"]["seats"]["5"] == {"cards": ["AS", "AH", "AD"], "status": "void"}
    assert record["result"]["dealer"]["qualifies"] is False
    assert record["bets"] == {
        "2": {"dobo": {"result": "win", "pays": "1:1"}, "play": {"result": "win", "pays": "1:2"}},
        "4": {"dobo": {"result": "lose"}, "play": {"result": "fold"}},
    }


@pytest.mark.parametrize(("interruption", "article"), [
    ({"type": "fault", "code": "shuffler_jam"}, "qpoker.art11.5"),
    ({"type": "fault", "code": "device_lost", "family": "shuffler"}, "qpoker.art11.5"),
    ({"type": "void", "reason": "qpoker.art11.3"}, "qpoker.art11.3"),
    ({"type": "void", "reason": "spilled drink"}, "qpoker.art11.1"),
    ({"type": "reveal"}, "qpoker.art11.1"),
    ({"type": "card", "seat": 1, "card": "AS"}, "qpoker.art1"),
    ({"type": "card", "seat": "dealer", "card": "2C"}, "qpoker.art11.1"),
    ({"type": "card", "seat": 3, "card": "2C", "face_up": True}, None),
])
def test_qpoker_oracle_voids_mid_deal_art1_art11(interruption: Record, article: str | None
                                                 ) -> None:
    """Art. 1 (one deck), 11.1 (order, cards short), 11.3, 11.5: a shoe-dealt round interrupted
    after seat 1's first card; a player card exposed (Art. 11.2) voids nothing."""
    stream = events({"type": "round_start", "seats": [1, 3]},
                    {"type": "card", "seat": 1, "card": "AS"}, interruption)
    records = qpoker.replay(stream, {})
    assert [(r["status"], r["article"]) for r in records] == ([("void", article)] if article
                                                             else [])


# -- the generators -------------------------------------------------------------------------------

GAME_GRID = [(game, dict(options)) for game, module in (("baccarat", baccarat),
                                                        ("craps", craps), ("qpoker", qpoker))
             for options in module.OPTION_GRID]
GRID_IDS = ["-".join([game, *(f"{k}={v}" for k, v in options.items())])
            for game, options in GAME_GRID]


@pytest.mark.parametrize(("game", "options"), GAME_GRID, ids=GRID_IDS)
def test_streams_are_seeded_valid_and_one_outcome_per_round(
    game: str, options: dict[str, str], event_validator: Any
) -> None:
    """Same seed, same stream; every event passes the contract's parser (for its game) and
    schema; each generated round gives exactly one outcome."""
    stream = make_stream(game, options, 400, SEED)
    assert stream == make_stream(game, options, 400, SEED)
    for event in stream:
        parse_event(event, event_checks(game))
        event_validator.validate(event)
    assert len(ORACLES[game](stream, options)) == 400


@pytest.mark.parametrize(("game", "options", "wanted"), [
    ("baccarat", {"method": "1", "last_hand": "this"},
     {"baccarat.art10", "baccarat.art3", "demo", "complete"}),
    ("baccarat", {"method": "2", "last_hand": "one_more"},
     {"baccarat.art10", "baccarat.art3", "demo", "complete"}),
    ("craps", {}, {"craps.art1", "no_roll", "complete"}),
    ("qpoker", {}, {"qpoker.art1", "qpoker.art11.1", "qpoker.art11.3", "qpoker.art11.5",
                    "stray seat", "complete"}),
])
def test_streams_reach_every_irregularity(game: str, options: dict[str, str],
                                          wanted: set[str]) -> None:
    """The streams of the replay check do exercise the voids, demos, no rolls and stray seats
    (otherwise agreeing on them would prove nothing)."""
    records = ORACLES[game](make_stream(game, options, 5000, SEED), options)
    seen = {r.get("article") or r["status"] for r in records}
    seen |= {flag for r in records for flag in ("demo", "no_roll") if r.get(flag)}
    if any(seat.get("status") == "void" for r in records
           for seat in r["result"].get("seats", {}).values()):
        seen.add("stray seat")
    assert wanted <= seen


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), method=st.sampled_from([1, 2]),
       last_hand=st.sampled_from(["this", "one_more"]))
def test_baccarat_streams_stay_in_the_oracles_scope(seed: int, method: int, last_hand: str
                                                    ) -> None:
    """Any seed: a shoe never shows more copies than it holds, demos stay within Art. 2.2, and
    the cut card never falls in a demonstration hand (the oracle would raise OutOfScope)."""
    stream = baccarat_stream(random.Random(seed), 150, method, last_hand)
    assert len(baccarat.replay(stream, {"method": str(method), "last_hand": last_hand})) == 150


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_qpoker_streams_one_outcome_per_round_for_any_seed(seed: int) -> None:
    assert len(qpoker.replay(qpoker_stream(random.Random(seed), 150), {})) == 150


# -- the check: tabled replay against the oracles ------------------------------------------------


def run_replay(game: str, options: Mapping[str, str], path: Path
               ) -> subprocess.CompletedProcess[str]:
    """The real command line, as an operator would run it."""
    command = [sys.executable, "-m", "tabled.tools.cli", "replay", "--game", game]
    for key, value in options.items():
        command += ["--option", f"{key}={value}"]
    return subprocess.run([*command, str(path)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, check=False)


@pytest.mark.parametrize(("game", "options"), GAME_GRID, ids=GRID_IDS)
def test_replay_agrees_with_the_oracle(game: str, options: dict[str, str],
                                       tmp_path: Path) -> None:
    """``tabled replay`` over a long random stream gives, record by record, the outcomes the
    oracle derives from the rules."""
    seed = SEED ^ zlib.crc32(repr((game, sorted(options.items()))).encode())
    stream = make_stream(game, options, ROUNDS, seed)
    path = tmp_path / f"{game}.jsonl"
    write_jsonl(path, stream)
    done = run_replay(game, options, path)
    assert done.returncode == 0, done.stderr[-2000:]
    actual = [json.loads(line) for line in done.stdout.splitlines()]
    expected = ORACLES[game](stream, options)
    problems = stream_differences(expected, actual)
    assert not problems, "\n".join([f"stream {path} (seed {seed}):", *problems])
