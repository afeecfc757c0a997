"""The dealer console's pure parts: keystrokes to commands (:class:`Keys`), the open round as the
console shows it (:class:`RoundView`, never a dealer's card), the daemon's replies (:class:`Reply`),
and the outcome lines of the demos (``tools/show.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tabled.contract.events import parse_event
from tabled.contract.outcome import Outcome
from tabled.games.registry import make_table
from tabled.tools.console import (
    Action,
    AutoDealer,
    ConsoleTarget,
    Keys,
    Reply,
    RoundView,
    for_round,
)
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


# -- the round a command is for ----------------------------------------------------------------


def outcome(game: str, number: int, *events: dict[str, Any]) -> dict[str, Any]:
    """A real outcome record of ``game`` (the rules core's), numbered ``number``."""
    table = make_table(game)
    (record,) = [o.to_record() for e in events
                 for o in table.feed(parse_event({"v": 1, **e})) if isinstance(o, Outcome)]
    return {**record, "round": number}


QPOKER_VOID = ({"type": "round_start", "seats": [1]}, {"type": "void"})


def test_the_view_names_the_round_it_shows_from_the_published_events() -> None:
    """Every published event names its round: the console sends the round it shows, and the
    daemon declines a command that arrives in another round. The campaign's round 16: its
    dealer's card is exposed (void at once), and a reveal typed while the console still shows
    it is for round 16, whatever round is open when it arrives."""
    view = RoundView("qpoker")
    assert view.command_round is None  # nothing seen: the command names no round
    view.apply("event", {"type": "withheld", "seat": 3, "count": 3, "round": 16})
    assert view.phase == "waiting" and view.command_round == 16  # begun before the console
    view.apply("event", {"type": "round_start", "seats": [4, 5], "round": 16})
    for seat in (4, 5):
        view.apply("event", {"type": "withheld", "seat": seat, "count": 3, "round": 16})
    view.apply("event", {"type": "hand", "seat": "dealer", "cards": ["QD", "4C", "9H"],
                         "face_up": True, "round": 16})
    assert view.phase == "deciding" and view.command_round == 16
    assert "round 16: dealt" in "\n".join(view.lines(TARGET))
    view.apply("outcome", outcome("qpoker", 16, *QPOKER_VOID))
    assert view.phase == "settled" and view.command_round == 16
    view.apply("event", {"type": "round_start", "seats": [4, 5, 6], "round": 17})
    assert view.command_round == 17 and "round 17: dealing" in "\n".join(view.lines(TARGET))
    # a command's own round is not the table's: a late reveal for 16 changes nothing here
    view.apply("event", {"type": "reveal", "round": 16, "source": "console:x"})
    assert view.command_round == 17


def test_without_published_rounds_the_view_counts_outcomes() -> None:
    """A daemon that does not name rounds on its events: the round after the last outcome."""
    view = RoundView("qpoker")
    view.apply("outcome", outcome("qpoker", 4, *QPOKER_VOID))
    view.apply("event", {"type": "round_start", "seats": [1]})
    assert view.command_round == 5


def test_baccarat_and_craps_name_the_hand_or_throw_at_the_table() -> None:
    view = RoundView("baccarat")
    view.apply("event", {"type": "card", "card": "9S", "round": 8})
    assert view.command_round == 8
    view.apply("outcome", outcome("baccarat", 8, *({"type": "card", "card": c}
                                                    for c in ("9S", "2H", "KD", "3C"))))
    assert view.command_round == 9  # hand 8 is over: a void now is for the next hand
    craps = RoundView("craps")
    craps.apply("event", {"type": "roll", "dice": [3, 4], "round": 2})
    craps.apply("outcome", outcome("craps", 2, {"type": "roll", "dice": [3, 4]}))
    assert craps.command_round == 3


def test_a_typed_command_is_for_the_round_shown_when_the_key_is_pressed() -> None:
    keys = Keys()
    (reveal,) = [a for a in keys.feed("r") if a.kind == "command"]
    assert for_round(reveal, 16).args == {"round": 16}
    assert for_round(reveal, None).args == {}
    (decision,) = [a for a in keys.feed("3p") if a.kind == "command"]
    assert for_round(decision, 7).args == {"seat": 3, "play": True, "round": 7}
    assert for_round(Action("command", "new_shoe", {"decks": 8}), 7).args == {"decks": 8}


async def test_the_demos_dealer_names_the_round_whose_deal_it_saw() -> None:
    """The AutoDealer decides and reveals once a deal is complete; all of it for that round,
    even if the table moves on while the players think."""
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recorder:
        target = TARGET  # the dealer reads the table's game from its console's target

        async def command(self, name: str, args: dict[str, Any]) -> Reply:
            sent.append((name, args))
            dealer.view.apply("event", {"type": "round_start", "seats": [9], "round": 17})
            return Reply(command=name, ok=True)

    dealer = AutoDealer(Recorder(), seed=1)  # type: ignore[arg-type]
    for event in ({"type": "round_start", "seats": [4, 5], "round": 16},
                  {"type": "withheld", "seat": 4, "count": 3, "round": 16},
                  {"type": "withheld", "seat": 5, "count": 3, "round": 16},
                  {"type": "withheld", "seat": "dealer", "count": 3, "round": 16}):
        dealer.view.apply("event", event)
    assert dealer.view.phase == "deciding"
    await dealer._play()
    assert [(name, args.get("round")) for name, args in sent] == [
        ("decision", 16), ("decision", 16), ("reveal", 16)]
