"""``tabled integrity --game G [--option KEY=VALUE ...] [FILE|-]``: one JSON line per finding,
exit 0 with or without findings, 2 for malformed input (after the findings before it), an
unreadable file or a bad option; the rules core's notices on standard error."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from pathlib import Path

from tabled.contract.events import encode_event
from tabled.pit.integrity.command import write_findings
from tabled.simulators.shoe import Preset
from tests.oracle.integrity import baccarat_events, craps_events


def tabled(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args],
                          capture_output=True, text=True, check=False, timeout=120,
                          input=stdin)


def lines_of(events: object) -> str:
    return "".join(encode_event(e) + "\n" for e in events)  # type: ignore[attr-defined]


def test_a_fair_stream_prints_nothing_and_exits_0() -> None:
    text = lines_of(craps_events(random.Random(1), 3_000))
    out, err = io.StringIO(), io.StringIO()
    assert write_findings("craps", None, io.StringIO(text), out, err) == 0
    assert out.getvalue() == "" and err.getvalue() == ""


def test_a_sorted_shoe_and_a_wrong_call_print_json_lines(tmp_path: Path) -> None:
    stream = tmp_path / "bac.jsonl"
    text = lines_of(baccarat_events(random.Random(3), None, shoes=1,
                                    preset=Preset("sorted", 0, 40, 52)))
    # the dealer calls each winner for the last hand: two calls at least are wrong
    text += "".join(f'{{"v":1,"type":"declare","result":"{w}"}}\n'
                    for w in ("banker", "player", "tie"))
    stream.write_text(text)
    proc = tabled("integrity", "--game", "baccarat", "--option", "decks=8", str(stream))
    assert proc.returncode == 0, proc.stderr
    found = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(list(f) == ["monitor", "round", "severity", "detail"] for f in found)
    monitors = [f["monitor"] for f in found]
    assert "shoe_runs" in monitors and monitors.count("result_mismatch") >= 2
    runs = next(f for f in found if f["monitor"] == "shoe_runs")
    assert runs["severity"] == "critical" and isinstance(runs["round"], int)
    assert runs["detail"]["cards"][:3] == ["AS", "2S", "3S"]
    assert "message" in runs["detail"] and "subject" in runs["detail"]
    # standard input, the same
    again = tabled("integrity", "--game", "baccarat", "-", stdin=text)
    assert again.returncode == 0 and again.stdout == proc.stdout


def test_loaded_dice_are_found_from_the_command_line() -> None:
    text = lines_of(craps_events(random.Random(5), 2_500, "6:0.3"))
    proc = tabled("integrity", "--game", "craps", stdin=text)
    assert proc.returncode == 0
    found = [json.loads(line) for line in proc.stdout.splitlines()]
    assert found and found[0]["monitor"] == "dice"
    assert found[0]["detail"]["subject"] == "die 1 face 6"


def test_malformed_input_exits_2_after_the_findings_before_it() -> None:
    good = lines_of(baccarat_events(random.Random(3), None, shoes=1,
                                    preset=Preset("sorted", 0, 40, 52)))
    text = good + '{"v":1,"type":"card","card":"ZZ"}\n' + good
    out, err = io.StringIO(), io.StringIO()
    assert write_findings("baccarat", None, io.StringIO(text), out, err) == 2
    before = out.getvalue().splitlines()
    assert before and all(json.loads(line)["round"] <= 100 for line in before)
    lineno = good.count("\n") + 1
    assert err.getvalue().endswith(f"line {lineno}: card 'ZZ' is not a card code "
                                   "(rank A23456789TJQK + suit SHCD)\n")


def test_notices_bad_options_and_unreadable_files(tmp_path: Path) -> None:
    proc = tabled("integrity", "--game", "craps",
                  stdin='{"v":1,"type":"card","card":"AS"}\n')
    assert proc.returncode == 0 and proc.stdout == ""
    assert "line 1: notice not_for_game" in proc.stderr
    bad = tabled("integrity", "--game", "baccarat", "--option", "method=3", stdin="")
    assert bad.returncode == 2 and "tabled integrity: option method" in bad.stderr
    missing = tabled("integrity", "--game", "qpoker", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "tabled integrity: cannot read" in missing.stderr
    assert tabled("integrity", "--game", "dominoes", stdin="").returncode == 2
