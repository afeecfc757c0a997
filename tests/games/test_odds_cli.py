"""``tabled odds``: the JSON object, the human table, exit codes, and the docs/rules/ tables that
must be exactly what the code prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from tabled.games.baccarat.rules import BET_NAMES
from tabled.games.craps.rules import BET_KEYS
from tabled.games.odds.render import percent
from tabled.games.registry import game_names, odds_markdown
from tabled.tools.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["odds", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert out.count("\n") == 1  # one object
    return json.loads(out)


def check_bets(bets: dict, names: tuple[str, ...] | list[str]) -> None:
    assert list(bets) == list(names)
    for name, bet in bets.items():
        assert set(bet) == {"house_edge", "exact"}, name
        assert re.fullmatch(r"-?\d+/\d+", bet["exact"]), bet
        assert isinstance(bet["house_edge"], float)
        assert bet["house_edge"] == float(Fraction(bet["exact"]))


def test_json_baccarat(capsys: pytest.CaptureFixture[str]) -> None:
    obj = as_json(capsys, "--game", "baccarat")
    assert list(obj) == ["game", "options", "decks", "probabilities", "bets"]
    assert obj["game"] == "baccarat" and obj["decks"] == 8
    assert obj["options"] == {"method": 1, "commission": "five_percent", "last_hand": "this",
                              "decks": 8}
    assert list(obj["probabilities"]) == ["player", "banker", "tie", "natural", "player_pair",
                                          "banker_pair"]
    p = obj["probabilities"]
    assert p["player"] + p["banker"] + p["tie"] == pytest.approx(1)
    assert p["player_pair"] == 31 / 415
    check_bets(obj["bets"], BET_NAMES)
    assert obj["bets"]["player_pair"]["exact"] == "43/415"


def test_json_baccarat_options_and_decks(capsys: pytest.CaptureFixture[str]) -> None:
    obj = as_json(capsys, "--game", "baccarat", "--option", "method=2", "--option",
                  "commission=half_on_four", "--decks", "6")
    assert obj["decks"] == 6 and obj["options"]["decks"] == 6
    assert obj["options"]["method"] == 2 and obj["options"]["commission"] == "half_on_four"
    # Art. 16, Method 2: Tie pays 9:1
    assert obj["bets"]["tie"]["house_edge"] == pytest.approx(1 - 10 * obj["probabilities"]["tie"])
    same = as_json(capsys, "--game", "baccarat", "--option", "method=2", "--option",
                   "commission=half_on_four", "--option", "decks=6")
    assert same == obj


def test_json_craps(capsys: pytest.CaptureFixture[str]) -> None:
    obj = as_json(capsys, "--game", "craps", "--option", "big_bets_on_come_out=false")
    assert list(obj) == ["game", "options", "probabilities", "bets"]
    assert obj["options"] == {"big_bets_on_come_out": False}
    assert list(obj["probabilities"]) == [str(t) for t in range(2, 13)]
    check_bets(obj["bets"], BET_KEYS)
    assert obj["bets"]["pass"]["exact"] == "7/495"
    assert obj["bets"]["dont_pass"]["exact"] == "3/220"
    assert obj["bets"]["field"]["exact"] == "1/18"
    assert obj["bets"]["any_craps"]["exact"] == "1/9"
    assert obj["bets"]["pass_odds"]["exact"] == "0/1"


def test_json_qpoker(capsys: pytest.CaptureFixture[str]) -> None:
    obj = as_json(capsys, "--game", "qpoker")
    assert list(obj) == ["game", "options", "probabilities", "bets", "strategy"]
    assert list(obj["probabilities"]) == [
        "straight_flush", "three_of_a_kind", "straight", "flush", "pair", "high_card",
        "dealer_qualifies"]
    check_bets(obj["bets"], ["dobo", "play"])
    assert obj["bets"]["dobo"]["exact"] == "128/5525"
    assert obj["strategy"] == {"threshold": ["QS", "6D", "3C"], "class": "high_card",
                               "plays_from": ["QD", "6D", "4C"], "hands_played": 14_906}


def test_the_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--game", "qpoker")
    assert code == 0
    assert re.search(r"^dobo +2\.3167 % +128/5525 +qpoker\.art9\.1, art10$", out, re.M)
    assert "house edge = the house's expected gain per unit staked" in out
    assert "QS 6D 3C (high_card)" in out
    code, out, _ = run(capsys, "--game", "craps")
    assert re.search(r"^pass +1\.4141 % +7/495 +craps\.art2\.1$", out, re.M)
    assert re.search(r"^dont_come_4 +-33\.3333 % +-1/3 ", out, re.M)
    code, out, _ = run(capsys, "--game", "baccarat", "--decks", "6")
    assert out.startswith("baccarat: method=1 commission=five_percent last_hand=this decks=6\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["--game", "baccarat", "--option", "method=3"], "option method: 3 is not 1 or 2"),
    (["--game", "baccarat", "--option", "colour=red"], "option colour: unknown for baccarat"),
    (["--game", "craps", "--option", "big_bets_on_come_out=maybe"], "is not true or false"),
    (["--game", "baccarat", "--decks", "5"], "option decks: 5 is not 6 to 12"),
    (["--game", "baccarat", "--decks", "6", "--option", "decks=8"],
     "--decks 6 disagrees with --option decks=8"),
    (["--game", "craps", "--decks", "8"], "--decks is for a game dealt from a shoe"),
    (["--game", "qpoker", "--option", "decks=8"], "option decks: unknown for qpoker"),
    (["--game", "craps", "--markdown", "--json"], "--markdown shows every option combination"),
])
def test_bad_options_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("tabled odds: ") and message in err


def test_argparse_refusals_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--game", "roulette"], ["--game", "baccarat", "--decks", "eight"], []):
        with pytest.raises(SystemExit) as exc:
            main(["odds", *argv])
        assert exc.value.code == 2
    capsys.readouterr()


def test_the_installed_command_runs() -> None:
    """The real entry point, in a process of its own."""
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "odds", "--game", "craps",
                           "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bets"]["pass"] == {"house_edge": 7 / 495, "exact": "7/495"}


def test_percent_rounds_half_away_from_zero() -> None:
    assert percent(Fraction(1, 200_000)) == "0.0005 %"
    assert percent(Fraction(-1, 3)) == "-33.3333 %"
    assert percent(Fraction(0)) == "0.0000 %"
    assert percent(Fraction(-1, 10**9)) == "0.0000 %"


#: The games documented under docs/rules/ (tabled's own; a game installed as a plugin keeps its
#: rules document in its own package).
DOCUMENTED = [game for game in game_names() if (DOCS / f"{game}.md").exists()]


def test_every_built_in_game_is_documented() -> None:
    assert {"baccarat", "craps", "qpoker"} <= set(DOCUMENTED)


@pytest.mark.parametrize("game", DOCUMENTED)
def test_the_documented_tables_are_what_the_command_prints(
    capsys: pytest.CaptureFixture[str], game: str
) -> None:
    """docs/rules/<game>.md holds ``tabled odds --game GAME --markdown`` verbatim, between
    markers, so the document cannot drift from the code."""
    code, out, _ = run(capsys, "--game", game, "--markdown")
    assert code == 0 and out == f"{odds_markdown(game)}\n"
    doc = (DOCS / f"{game}.md").read_text(encoding="utf-8")
    begin = f"<!-- tabled odds --game {game} --markdown -->\n"
    end = "<!-- end of tabled odds output -->"
    assert begin in doc, f"docs/rules/{game}.md has no generated odds table"
    documented = doc.split(begin, 1)[1].split(end, 1)[0]
    assert documented == out, (
        f"docs/rules/{game}.md is stale: paste `tabled odds --game {game} --markdown`")
