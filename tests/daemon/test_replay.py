"""``tabled replay`` on malformed input (docs/contract.md): exit 2 naming the line, after exactly
the outcomes completed before it; a round the bad line leaves open is neither settled nor voided."""

from __future__ import annotations

import io
import json

from tabled.daemon.replay import EXIT_BAD_INPUT, EXIT_OK, replay

NATURAL = ['{"v":1,"type":"card","card":"9S"}', '{"v":1,"type":"card","card":"KD"}',
           '{"v":1,"type":"card","card":"KH"}', '{"v":1,"type":"card","card":"KC"}']


def run(lines: list[str]) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    status = replay("baccarat", None, [line + "\n" for line in lines], out, err)
    return status, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_a_malformed_line_stops_the_replay_after_the_outcomes_before_it() -> None:
    # (no blank line: one is malformed itself, tests/daemon/test_replay_malformed.py)
    lines = ['{"v":1,"type":"shoe_start","decks":8}', *NATURAL, '{"v":1,"type":"roll",'
             '"dice":[1,2]}', *NATURAL[:2], '{"v":1,"type":"card","card":"ZZ"}', *NATURAL]
    status, records, err = run(lines)
    assert status == EXIT_BAD_INPUT
    assert [r["round"] for r in records] == [1]  # the hand cut short by line 9 is not voided
    assert err.splitlines() == [
        "line 6: notice not_for_game: a roll event is not part of baccarat",
        "line 9: card 'ZZ' is not a card code (rank A23456789TJQK + suit SHCD)",
    ]


def test_a_well_formed_stream_exits_0() -> None:
    status, records, err = run(NATURAL * 2)
    assert (status, [r["round"] for r in records], err) == (EXIT_OK, [1, 2], "")


def test_replay_writes_contract_version_2_from_a_stream_of_either_version() -> None:
    """A stream recorded under contract version 1 replays to the same outcomes as the same
    stream at version 2, and every record says ``"v": 2`` (docs/contract.md, "From version 1 to
    2"): nothing but ``v`` distinguishes the versions."""
    version_2 = [line.replace('"v":1', '"v":2') for line in NATURAL * 2]
    old, new = run(NATURAL * 2), run(version_2)
    assert old == new and old[0] == EXIT_OK
    assert [r["v"] for r in old[1]] == [2, 2]
