"""``tabled replay`` and malformed input (docs/contract.md, "Malformed input"; issue 16, item 8).

Each line docs/contract.md calls malformed stops the command with exit status 2 and one message on
standard error naming the line, after exactly the outcomes completed before it: the replay of
the well-formed lines before it, with any round the bad line left open neither settled nor
voided. Driven through the real command line (a subprocess) for every case of the issue, and
through :func:`tabled.daemon.replay.replay` (the same code, in process) under hypothesis.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.contract.events import EventError, parse_line
from tabled.daemon.replay import replay
from tabled.games.registry import event_checks

Stream = list[str]


def line(**fields: Any) -> str:
    return json.dumps({"v": 1, **fields}, separators=(",", ":")) + "\n"


def card(code: str, **more: Any) -> str:
    return line(type="card", card=code, **more)


# For each game: two complete rounds, then the start of a third that the bad line interrupts.
ROUNDS: dict[str, tuple[Stream, Stream]] = {
    "baccarat": (
        [line(type="shoe_start", decks=8), card("9S"), card("2H"), card("KD"), card("3C"),
         card("AS"), card("AH"), card("KS"), card("KH"), card("5D"), card("4C")],
        [card("2S"), card("3S")],
    ),
    "craps": (
        [line(type="roll", dice=[3, 4]), line(type="roll", dice=[2, 2]),
         line(type="no_roll", reason="off_table"), line(type="roll", dice=[6, 5])],
        [],
    ),
    "qpoker": (
        [line(type="round_start", seats=[1]),
         line(type="hand", seat=1, cards=["AS", "KS", "QS"]),
         line(type="hand", seat="dealer", cards=["2H", "3H", "9C"]),
         line(type="decision", seat=1, play=True), line(type="reveal"),
         line(type="round_start", seats=[2]), card("5D", seat=2), card("6D", seat="dealer"),
         card("7D", seat=2), card("8D", seat="dealer"), card("9D", seat=2),
         card("TD", seat="dealer"), line(type="reveal")],
        [line(type="round_start", seats=[1, 3]), card("JC", seat=1)],
    ),
}
# How many outcomes the complete rounds make (each craps roll is a round).
OUTCOMES = {"baccarat": 2, "craps": 4, "qpoker": 2}
# Well-formed events after the bad line, that must not be read.
AFTER: dict[str, Stream] = {
    "baccarat": [card("TC"), card("TH"), card("QC"), card("QH")],
    "craps": [line(type="roll", dice=[1, 1])],
    "qpoker": [line(type="void", reason="dealer")],
}

# The cases of issue 16, item 8, and more of their kind: (game, bad line, what stderr says).
CASES = [
    *((game, '{"v":true,"type":"void"}\n', "contract version v=true") for game in ROUNDS),
    *((game, '{"v":1.0,"type":"void"}\n', "contract version v=1.0") for game in ROUNDS),
    ("craps", '{"v":1,"type":"no_roll"}\n', "missing required field 'reason'"),
    ("craps", '{"v":1,"type":"no_roll","reason":""}\n', "reason '' is not a non-empty string"),
    *((game, "\n", "blank line") for game in ROUNDS),
    *((game, "  \t \n", "blank line") for game in ROUNDS),
    ("qpoker", '{"v":1,"type":"card","card":"AS"}\n',
     "missing required field 'seat' (required in qpoker)"),
    ("qpoker", '{"v":1,"type":"round_start"}\n',
     "missing required field 'seats' (required in qpoker)"),
    ("qpoker", '{"v":1,"type":"card","card":"AS","seat":null}\n', "seat is null"),
    ("baccarat", '{"v":1,"type":"shoe_start","decks":8.0}\n', "decks 8.0"),
    ("baccarat", '{"v":1,"type":"card","card":"AS","face_up":1}\n', "face_up 1"),
    ("craps", '{"v":1,"type":"roll","dice":[3.0,4]}\n', "two integers 1-6"),
    ("qpoker", '{"v":1,"type":"decision","seat":1,"play":0}\n', "play 0"),
    ("qpoker", '{"v":1,"type":"decision","seat":true,"play":true}\n', "seat True"),
    ("craps", '{"v":1,"type":"roll","dice":[3,4],"x":NaN}\n', "NaN is not a JSON value"),
    ("craps", '{"v":1,"type":"roll","dice":[3,4],"seq":"7"}\n', "seq '7'"),
    # what a game refuses that the contract allows (issue 28: the game's declaration says it)
    ("craps", '{"v":1,"type":"roll","dice":[1,2,3]}\n', "dice [1, 2, 3] is not two integers 1-6"),
    ("craps", '{"v":1,"type":"declare","result":"bankers"}\n',
     "result 'bankers' is not one of banker, "),
    ("qpoker", '{"v":1,"type":"declare","result":"dealer qualifies"}\n',
     "result 'dealer qualifies' is not a declared word"),
]


def run_command(game: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", "replay", "--game", game,
                           "-"], input=text, capture_output=True, text=True, check=False,
                          timeout=60)


def run_inline(game: str, lines: Stream) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = replay(game, None, lines, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("game", "bad", "reason"), CASES,
                         ids=[f"{g}:{b.strip() or repr(b)}" for g, b, _ in CASES])
def test_the_command_stops_at_a_malformed_line_with_what_came_before(
        game: str, bad: str, reason: str) -> None:
    complete, open_round = ROUNDS[game]
    before = complete + open_round
    proc = run_command(game, "".join([*before, bad, *AFTER[game]]))
    assert proc.returncode == 2, proc.stderr
    (message,) = proc.stderr.splitlines()  # one line, naming the bad one
    assert message.startswith(f"line {len(before) + 1}: ") and reason in message
    # exactly the outcomes of the complete rounds: the open one is neither settled nor voided
    expected = run_command(game, "".join(complete))
    assert expected.returncode == 0 and expected.stdout.count("\n") == OUTCOMES[game]
    assert proc.stdout == expected.stdout


def test_the_same_lines_well_formed_replay_to_the_end() -> None:
    """The streams around the bad lines are well formed: without one, every round is there
    (the interrupted one completes, or is voided, by the events after it)."""
    for game, (complete, open_round) in ROUNDS.items():
        proc = run_command(game, "".join([*complete, *open_round, *AFTER[game]]))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("\n") == OUTCOMES[game] + 1


@pytest.mark.parametrize("game", sorted(ROUNDS))
def test_a_trailing_blank_line_is_malformed_too(game: str) -> None:
    """One event object per line: a blank line at the end is no exception (every outcome
    before it is written)."""
    complete, _ = ROUNDS[game]
    proc = run_command(game, "".join(complete) + "\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"line {len(complete) + 1}: a blank line")
    assert proc.stdout.count("\n") == OUTCOMES[game]


# Any line at all in place of the bad one: the command either reads on (the parser took it) or
# stops there with what came before, never anything in between.
any_line = st.one_of(
    st.text(max_size=30),
    st.sampled_from([c[1] for c in CASES]),
    st.builds(lambda obj: json.dumps(obj), st.dictionaries(
        st.sampled_from(["v", "type", "card", "seat", "seats", "reason", "dice", "decks",
                         "play", "cards", "code", "count", "face_up"]),
        st.one_of(st.none(), st.booleans(), st.integers(-1, 9), st.floats(0, 9),
                  st.sampled_from(["AS", "dealer", "no_roll", "card", "round_start", "roll",
                                   "reveal", "void", ""]),
                  st.lists(st.integers(1, 6), max_size=3)),
        max_size=5).map(lambda d: {"v": 1, **d})),
)


@settings(max_examples=300, deadline=None)
@given(game=st.sampled_from(sorted(ROUNDS)), bad=any_line)
def test_any_line_is_read_on_or_stops_the_replay_there(game: str, bad: str) -> None:
    complete, open_round = ROUNDS[game]
    before = complete + open_round
    bad = bad.replace("\n", " ") + "\n"
    status, out, err = run_inline(game, [*before, bad, *AFTER[game]])
    try:
        parse_line(bad, event_checks(game))
    except EventError as exc:
        assert status == 2
        assert err == f"line {len(before) + 1}: {exc}\n"
        assert out == run_inline(game, complete)[1]
    else:
        assert status == 0
        assert out.startswith(run_inline(game, complete)[1])
