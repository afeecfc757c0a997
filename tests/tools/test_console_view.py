"""The dealer console's pure parts: keystrokes to commands (:class:`Keys`), the open round as the
console shows it (:class:`RoundView`, never a dealer's card), the daemon's replies (:class:`Reply`),
and the outcome lines of the demos (``tools/show.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tabled.tools.console import Action, ConsoleTarget, Keys, Reply, RoundView
from tabled.tools.show import describe

TARGET = ConsoleTarget(config_path="t.toml", site="lab", table="t1", game="qpoker",
                       prefix="tabled", url="mqtt://127.0.0.1:1883", client_id="c",
                       console_id="console-t1", reply_timeout=5.0, key=b"k" * 64)


def commands(keys: Keys, text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(a.name, a.args) for a in keys.feed(text) if a.kind == "command"]


def test_keys_make_decisions_reveal_and_void() -> None:
    keys = Keys()
    assert commands(keys, "3p12f") == [("decision", {"seat": 3, "play": True}),
                                       ("decision", {"seat": 12, "play": False})]
    assert commands(keys, "r") == [("reveal", {})]
    assert commands(keys, "vdealer error\n") == [("void", {"reason": "dealer error"})]
    # from a pipe, lines: the newline after "v" does not send an empty reason
    assert commands(keys, "v\nshoe fell\n") == [("void", {"reason": "shoe fell"})]


def test_keys_correct_cancel_and_refuse_what_is_not_a_command() -> None:
    keys = Keys()
    assert commands(keys, "34\x7fp") == [("decision", {"seat": 3, "play": True})]
    assert commands(keys, "5\x1bp") == []  # Esc dropped the seat: p alone is no decision
    assert commands(keys, "v\x1b") == [] and keys.mode == "keys"
    said = [a.text for a in keys.feed("x") if a.kind == "say"]
    assert said and "unknown key" in said[0]
    assert [a.kind for a in keys.feed("q")] == ["quit"]


def test_a_reveal_that_would_void_or_fold_asks_first() -> None:
    reasons = ["the deal is not complete"]
    keys = Keys(lambda: reasons[0] if reasons else None)
    said = list(keys.feed("r"))
    assert said == [Action("say", text="the deal is not complete")] and keys.mode == "confirm"
    assert commands(keys, "\nn") == [] and keys.mode == "keys"
    list(keys.feed("r"))
    assert commands(keys, "y") == [("reveal", {})]


def qpoker_round(view: RoundView) -> None:
    events: list[dict[str, Any]] = [
        {"type": "round_start", "seats": [2, 5]},
        {"type": "withheld", "seat": 2, "count": 3},
        {"type": "withheld", "seat": 5, "count": 3},
        {"type": "withheld", "seat": "dealer", "count": 3},
        # the players open their cards once the deal is complete (Art. 9.1)
        {"type": "hand", "seat": 2, "cards": ["AS", "KS", "QS"], "withheld": True},
        {"type": "hand", "seat": 5, "cards": ["2D", "3C", "9H"], "withheld": True},
        {"type": "decision", "seat": 2, "play": True},
    ]
    for event in events:
        view.apply("event", event)


def test_the_view_shows_the_round_and_never_a_dealer_card() -> None:
    view = RoundView("qpoker")
    view.apply("status", {"state": "online", "commands": True})
    qpoker_round(view)
    assert view.phase == "deciding" and view.undecided == [5]
    assert view.confirm_reveal() is not None and "seat 5" in view.confirm_reveal()  # type: ignore[operator]
    text = "\n".join(view.lines(TARGET))
    assert "AS KS QS" in text and "PLAY" in text and "3 card(s), face down" in text
    # at the reveal the daemon publishes the dealer's identified hand, then the reveal
    view.apply("event", {"type": "hand", "seat": "dealer", "cards": ["JH", "JD", "4C"],
                         "withheld": True})
    view.apply("event", {"type": "reveal"})
    text = "\n".join(view.lines(TARGET))
    assert not any(card in text for card in ("JH", "JD", "4C"))
    assert view.dealer_cards == 3 and view.phase == "revealed"


def test_an_unfinished_deal_makes_the_reveal_a_void_and_says_so() -> None:
    view = RoundView("qpoker")
    view.apply("event", {"type": "round_start", "seats": [1]})
    view.apply("event", {"type": "withheld", "seat": 1, "count": 3})
    assert "qpoker.art11.1" in (view.confirm_reveal() or "")


def test_replies_accepted_refused_and_declined() -> None:
    ok = Reply.from_body("reveal", {"ok": True, "command": "reveal", "nonce": "n",
                                    "rounds": [7], "notices": []})
    assert ok.accepted and ok.describe() == "ok (round 7 settled)"
    refused = Reply.from_body("reveal", {"ok": False, "command": "reveal", "error": "forged",
                                         "detail": "the mac does not match the content"})
    assert not refused.accepted and refused.describe().startswith("refused: forged")
    declined = Reply.from_body("decision", {"ok": True, "notices": [
        {"code": "decision_repeated", "message": "seat 3 already decided"}]})
    assert not declined.accepted and "declined by the rules: decision_repeated" in \
        declined.describe()


def replay(game: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    text = "".join(json.dumps({"v": 1, **e}) + "\n" for e in events)
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "replay", "--game", game],
                          input=text, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_craps_lines_show_the_roll_the_point_and_the_line_bets() -> None:
    rolls = [[3, 4], [2, 2], [5, 3], [6, 2], [3, 4]]
    lines = [describe(o) for o in replay("craps", [{"type": "roll", "dice": d}
                                                   for d in rolls])]
    assert "come-out " in lines[0] and "pass win 1:1, don't pass lose" in lines[0]
    assert "come-out, point 4" in lines[1] and "come" not in lines[1].split("point 4")[1]
    assert "point 4" in lines[2] and "come to 8, don't come to 8" in lines[2]
    assert "point 4, seven out" in lines[4]
    assert "pass lose, don't pass win 1:1, come win 1:1, don't come lose" in lines[4]
    # the hypothetical bets (a wager already on every number) are not in the main line
    assert not any("dont_come_4" in line or "come 4" in line for line in lines)
    everything = describe(replay("craps", [{"type": "roll", "dice": [3, 4]}])[0], "all")
    head, bets = everything.split("\n", 1)
    assert head == lines[0]
    assert "dont_come_4 win 1:1" in bets and "big7 win 9:2" in bets and "hard8 lose" in bets
