"""``Outcome.to_json`` writes exactly what the record's one JSON form is (``encode_record`` of
``to_record``), byte for byte, for every outcome the rules make: it is what ``tabled replay``
prints, made without building the record (contract/outcome.py)."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from typing import Any

import msgspec
import pytest

from tabled.contract.events import parse_event
from tabled.contract.outcome import BetResult, FixedBets, Outcome
from tabled.daemon.replay import encode_record
from tabled.games.baccarat.rules import BaccaratResult
from tabled.games.craps.rules import CrapsResult
from tabled.games.registry import make_table
from tests.oracle.streams import baccarat_stream, craps_stream, qpoker_stream


def reference(outcome: Outcome) -> bytes:
    return json.dumps(outcome.to_record(), separators=(",", ":"), ensure_ascii=False).encode()


def outcomes(game: str, options: dict[str, str], stream: list[dict[str, Any]]) -> list[Outcome]:
    table = make_table(game, options)
    return [o for event in stream for o in table.feed(parse_event(event))
            if isinstance(o, Outcome)]


STREAMS = {
    "baccarat method 1": ("baccarat", {"method": "1"},
                          lambda rng: baccarat_stream(rng, 3000, 1, "this")),
    "baccarat method 2, half on four": (
        "baccarat", {"method": "2", "commission": "half_on_four", "last_hand": "one_more"},
        lambda rng: baccarat_stream(rng, 3000, 2, "one_more")),
    "craps": ("craps", {}, lambda rng: craps_stream(rng, 5000)),
    "qpoker": ("qpoker", {}, lambda rng: qpoker_stream(rng, 1000)),
}


@pytest.mark.parametrize("name", STREAMS)
def test_every_outcome_of_a_long_stream_encodes_as_its_record(name: str) -> None:
    game, options, make = STREAMS[name]
    made = outcomes(game, options, make(random.Random(20261201)))
    statuses = {o.status for o in made}
    assert statuses == {"complete", "void"}  # (the stream has irregular rounds too)
    for outcome in made:
        assert outcome.to_json() == reference(outcome)
        assert outcome.to_json().decode() == encode_record(outcome.to_record())


def test_a_result_struct_encodes_as_its_to_dict() -> None:
    """The struct's own fields, in their order, are the record's ``result`` keys: ``hard`` left
    out when it is None, and every other None written as null."""
    results = [
        BaccaratResult(("AS", "9H"), ("KD", "2C", "5S"), 0, 7, None, False),
        BaccaratResult(("AS", "7H"), ("KD", "2C"), 8, 2, "player", True),
        CrapsResult((2, 2), 4, None, 4, True),
        CrapsResult((3, 4), 7, 4, None, False),
        CrapsResult(None, None, 6, 6),
    ]
    for result in results:
        assert msgspec.json.encode(result) == json.dumps(
            result.to_dict(), separators=(",", ":")).encode()


def test_bets_held_in_any_mapping_and_extra_fields_encode_as_the_record() -> None:
    win = BetResult("win", "Art. 8", Fraction(19, 20))
    cases = [
        Outcome("craps", 3, "complete", None, {"pass": win, "come": {"4": BetResult(
            "open", "Art. 4", moves_to=4)}}, extra={"no_roll": True}),
        Outcome("baccarat", 2, "void", None, FixedBets({"player": BetResult("void", "Art. 10")}),
                void_reason="misdeal: a café’s “card”", article="Art. 10",
                extra={"demo": True, "round": 99}),
        Outcome("qpoker", 2**70, "complete", None, {"1": win, "2": BetResult("fold")},
                article="Art. 9"),
    ]
    for outcome in cases:
        assert outcome.to_json() == reference(outcome)


def test_fixed_bets_read_as_the_mapping_they_were_made_of() -> None:
    bets = {"player": BetResult("lose", "Art. 9"), "tie": BetResult("win", "Art. 9",
                                                                     Fraction(8))}
    fixed = FixedBets(bets)
    assert dict(fixed) == bets
    assert len(fixed) == 2 and list(fixed) == ["player", "tie"] and fixed["tie"] == bets["tie"]
    assert bytes(fixed.json) == msgspec.json.encode({k: v.to_dict() for k, v in bets.items()})


def test_replay_writes_what_msgspec_cannot_encode_as_the_record_says() -> None:
    """Text no UTF-8 can carry is refused by msgspec; replay's encoding then falls back to the
    record's one JSON form rather than failing or writing something else."""
    from tabled.daemon.replay import _encode_outcome

    outcome = Outcome("craps", 1, "void", None, {}, void_reason="\ud800", article="Art. 1")
    with pytest.raises(UnicodeEncodeError):
        outcome.to_json()
    assert _encode_outcome(outcome) == encode_record(outcome.to_record())
