"""Craps properties over any sequence of throws (docs/rules/craps.md, docs/contract.md "craps")."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tabled.contract.events import Event, Fault, NoRoll, Roll, Void
from tabled.contract.outcome import BetResult, Outcome
from tabled.games.craps.options import CrapsOptions
from tabled.games.craps.rules import BET_KEYS, POINTS, CrapsTable
from tabled.games.money import settle

ARTICLE_PREFIX = "craps.art"

dice = st.tuples(st.integers(1, 6), st.integers(1, 6))
events: st.SearchStrategy[Event] = st.one_of(
    dice.map(lambda d: Roll(dice=d)),
    dice.map(lambda d: Roll(dice=d)),  # throws twice as likely as the rest: points get made
    st.just(NoRoll()),
    st.just(Void()),
    st.sampled_from(["sensor_fault", "device_lost"]).map(lambda c: Fault(code=c)),
)
options = st.builds(CrapsOptions, big_bets_on_come_out=st.booleans())


def outcomes_of(table: CrapsTable, stream: list[Event]) -> list[Outcome]:
    out = []
    for event in stream:
        for output in table.feed(event):
            assert isinstance(output, Outcome)
            out.append(output)
    return out


def bets_of(outcome: Outcome) -> dict[str, BetResult]:
    bets = {}
    for key, bet in outcome.bets.items():
        assert isinstance(bet, BetResult)
        bets[key] = bet
    return bets


@settings(max_examples=300, deadline=None)
@given(stream=st.lists(events, max_size=60), opts=options)
def test_the_point_state_machine_stays_consistent(stream: list[Event], opts: CrapsOptions) -> None:
    """Art. 1, 2.1: the point is None or a point number, carried from one throw to the next;
    rounds count from 1; a throw that is not a roll never moves the point."""
    table = CrapsTable(opts)
    outcomes = outcomes_of(table, stream)
    assert len(outcomes) == sum(not isinstance(e, Fault) for e in stream)
    point: int | None = None
    for number, outcome in enumerate(outcomes, 1):
        result = outcome.to_record()["result"]
        assert outcome.round == number
        assert result["point_before"] == point
        assert result["point_after"] is None or result["point_after"] in POINTS
        if result["dice"] is None:
            assert result["point_after"] == point and result["total"] is None
        else:
            assert result["total"] == sum(result["dice"])
        point = result["point_after"]
    assert table.point == point
    assert table.next_round == len(outcomes) + 1 and table.round_open is False


# jsonschema is the slow part: fewer, shorter streams keep this one near a second.
@settings(max_examples=80, deadline=None)
@given(stream=st.lists(events, max_size=25), opts=options)
def test_every_record_has_every_key_and_pays_only_on_a_win(
    stream: list[Event], opts: CrapsOptions, outcome_validator: Draft202012Validator
) -> None:
    """docs/contract.md: every bet key on every record, each citing its article; a win always has
    its pays, nothing else has one; each record validates against the outcome schema."""
    for outcome in outcomes_of(CrapsTable(opts), stream):
        bets = bets_of(outcome)
        assert tuple(bets) == BET_KEYS
        for bet in bets.values():
            assert (bet.pays is not None) == (bet.result == "win")
            assert bet.article is not None and bet.article.startswith(ARTICLE_PREFIX)
            assert bet.result in ("win", "lose", "push", "open", "off")
        outcome_validator.validate(outcome.to_record())


@settings(max_examples=200, deadline=None)
@given(stream=st.lists(events, max_size=40), stake=st.integers(0, 10**7))
def test_settlement_never_pays_a_losing_bet(stream: list[Event], stake: int) -> None:
    """money.settle on every result: a loss pays nothing; a win pays at least the stake back;
    a push returns it; open and off wagers stay on the layout."""
    for outcome in outcomes_of(CrapsTable(), stream):
        for bet in bets_of(outcome).values():
            money = settle(bet, stake)
            if bet.result == "lose":
                assert (money.paid, money.net) == (0, -stake)
            elif bet.result == "win":
                assert money.paid >= stake and money.net >= 0 and not money.stays
            elif bet.result == "push":
                assert (money.paid, money.net) == (stake, 0)
            else:
                assert money.stays and money.paid == 0


@settings(max_examples=200, deadline=None)
@given(stream=st.lists(events, max_size=40))
def test_pass_and_dont_pass_mirror_each_other_but_for_the_come_out_twelve(
    stream: list[Event],
) -> None:
    """Art. 2.1 / 3.1: one side's win is the other's loss, except 12 on the come-out (a push
    for Don't Pass, Art. 3.1); the same for Come and Don't Come (Art. 2.3 / 3.3)."""
    mirror = {"win": "lose", "lose": "win", "open": "open", "off": "off"}
    for outcome in outcomes_of(CrapsTable(), stream):
        bets = bets_of(outcome)
        record: dict[str, Any] = outcome.to_record()["result"]
        for right, wrong, own_come_out in (
            ("pass", "dont_pass", record["point_before"] is None),
            ("come", "dont_come", record["point_before"] is not None),
        ):
            if own_come_out and record["total"] == 12:
                assert (bets[right].result, bets[wrong].result) == ("lose", "push")
            else:
                assert bets[wrong].result == mirror[bets[right].result]


@settings(max_examples=100, deadline=None)
@given(stream=st.lists(events, max_size=40))
def test_the_big_bet_option_changes_only_big_bets_on_come_out_rolls(stream: list[Event]) -> None:
    """R-C4: ``big_bets_on_come_out=False`` turns the Big bets off on a come-out roll, and
    touches nothing else."""
    working = outcomes_of(CrapsTable(), stream)
    configured = outcomes_of(CrapsTable(CrapsOptions(big_bets_on_come_out=False)), stream)
    for a, b in zip(working, configured, strict=True):
        assert a.result == b.result
        come_out = a.to_record()["result"]["point_before"] is None
        for key, bet in bets_of(a).items():
            if come_out and key.startswith("big") and key != "big7":
                assert bets_of(b)[key].result == "off"
            else:
                assert bets_of(b)[key] == bet
