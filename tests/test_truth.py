"""The audit against the devices can fail (tests/truth.py).

Each game's simulator plays a seeded script in process: its ledger is written exactly as
``tabled-sim ... --ledger`` writes it, and the rules core, fed the events the device's messages
stand for, makes the publication. That publication passes the comparison; then the bugs the
audit exists for are put into it — a voided hand's remaining cards dealt into the next hand
(issue 16, item 1), a throw that never reached the daemon, a round dealt from another's cards —
and each must fail it, although every one of those publications is self-consistent: a replay
of its events gives its outcomes.
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from msgspec.structs import replace as replace_event

from tabled.contract.events import Decision, Event, Fault, Reveal, Void, event_to_dict
from tabled.contract.outcome import Outcome
from tabled.drivers.dice.driver import normalize as dice_normalize
from tabled.drivers.shoe.driver import normalize as shoe_normalize
from tabled.drivers.shuffler import protocol as p
from tabled.drivers.shuffler.driver import normalize as shuffler_normalize
from tabled.games.registry import make_table
from tabled.simulators import dice, shoe, shuffler
from tabled.simulators.ledger import Ledger, read_ledger
from tests.truth import compare, expected_outcomes

# -- publications: the rules core over what the device's messages stand for ------------------


def publish(game: str, events: list[Event]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events (as published, numbered) and the outcomes the rules core makes of them."""
    table = make_table(game)
    published, outcomes = [], []
    for event in events:
        published.append({**event_to_dict(event), "table_seq": len(published)})
        outcomes += [{**o.to_record(), "table_seq": len(outcomes)}
                     for o in table.feed(event) if isinstance(o, Outcome)]
    return published, outcomes


def replayed(game: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the existing audit checks: a replay of the published events."""
    from tabled.contract.events import parse_event

    table = make_table(game)
    out = []
    for event in events:
        body = {k: v for k, v in event.items() if k != "table_seq"}
        out += [o.to_record() for o in table.feed(parse_event(body)) if isinstance(o, Outcome)]
    return out


def without_envelope(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "table_seq"} for r in records]


def shoe_session(tmp_path: Path, hands: int = 8, seed: int = 5) -> tuple[list[Event], list[dict]]:
    ledger = Ledger(tmp_path / "shoe.jsonl", device="shoe", serial="SHOE-SIM-0001")
    dealer = shoe.Dealer(shoe.ShoeReader(), rng=random.Random(seed), hands=hands, shoes=None,
                         ledger=ledger.write)
    events = [e for r in dealer.reports() if (e := shoe_normalize(r)) is not None]
    ledger.close()
    return events, read_ledger(tmp_path / "shoe.jsonl")


def dice_session(tmp_path: Path, count: int = 30, faults: tuple[str, ...] = ()
                 ) -> tuple[list[Event], list[dict]]:
    rng = random.Random(7)
    rolls = [(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(count)]
    script = dice.build_script(rolls, [dice.DiceFault.parse(f) for f in faults], rng)
    ledger = Ledger(tmp_path / "dice.jsonl", device="dice", serial="DS-0001")
    events: list[Event] = []
    for number, step in enumerate(script):
        report = replace(step.report, number=number)
        ledger.write(dice.ledger_record(report, step))
        events += [replace_event(e, extra={**e.extra, "device_boot": 1, "device_msg": number})
                   for e in dice_normalize(report)]
    ledger.close()
    return events, read_ledger(tmp_path / "dice.jsonl")


def qpoker_session(tmp_path: Path, rounds: int = 6, faults: tuple[str, ...] = ()
                   ) -> tuple[list[Event], list[dict]]:
    """The machine's rounds, and after each complete deal the console's decisions (every seat
    plays) and reveal."""
    script = shuffler.qpoker_script(
        random.Random(3), rounds=rounds,
        faults=[f for f in map(shuffler.parse_fault, faults)
                if isinstance(f, shuffler.MachineFault)])
    ledger = Ledger(tmp_path / "shuffler.jsonl", device="shuffler", serial="SD7-004217")
    for _, record in shuffler.ledger_records(script):
        ledger.write(record)
    ledger.close()
    events: list[Event] = []
    seats: tuple[int, ...] = ()
    for msg in script:
        events += shuffler_normalize(msg)
        if isinstance(msg, p.RoundSeats):
            seats = msg.seats
        if isinstance(msg, p.Hand) and msg.seat == "dealer":
            events += [Decision(seat=s, play=True) for s in seats] + [Reveal()]
    return events, read_ledger(tmp_path / "shuffler.jsonl")


# -- the publication as dealt passes ----------------------------------------------------------


def test_what_the_devices_dealt_passes(tmp_path: Path) -> None:
    for game, (events, ledger) in [
        ("baccarat", shoe_session(tmp_path)),
        ("craps", dice_session(tmp_path, faults=("off_table@4", "sensor@9", "cocked@12"))),
        ("qpoker", qpoker_session(tmp_path, faults=("jam@5", "exposed@dealer:4"))),
    ]:
        published, outcomes = publish(game, events)
        truth = compare(game, outcomes, ledger, published)
        assert truth.ok, truth.report()
        assert truth.matched == len(outcomes) == expected_outcomes(game, ledger, published)
    # the faults made their voids, and the audit saw them as the device's own
    assert truth.voided_by_device == {"qpoker.art11.5": 1, "qpoker.art11.3": 1}


# -- item 1: a voided hand's remaining cards dealt into the next hand ------------------------


def test_a_shifted_hand_fails_the_audit_though_replay_agrees(tmp_path: Path) -> None:
    """The old bug: the shoe lost mid-hand 3, the hand voided, and its remaining cards, sent
    when the shoe came back, dealt into hand 4 — and every hand after shifted with it. A void
    that does not mark the device's loss makes the rules core do exactly that."""
    events, ledger = shoe_session(tmp_path)
    cards = [i for i, e in enumerate(events) if e.type == "card"]
    hand_3 = ledger[2]["card_nos"]
    at = next(i for i in cards if events[i].extra["card_no"] == hand_3[2])
    shifted = [*events[:at], Void(reason="device_lost: the shoe was away 6 s"), *events[at:]]
    published, outcomes = publish("baccarat", shifted)
    assert without_envelope(outcomes) == replayed("baccarat", published)  # self-consistent

    truth = compare("baccarat", outcomes, ledger, published)
    assert not truth.ok
    assert truth.voided_by_host == {"baccarat.art10": 1}  # hand 3: void, and it says why
    assert truth.wrong >= 1
    assert truth.problems[0].startswith("round 4 ")
    assert "the device dealt" in truth.problems[0]


def test_a_complete_hand_published_void_without_a_cause_fails(tmp_path: Path) -> None:
    events, ledger = shoe_session(tmp_path)
    published, outcomes = publish("baccarat", events)
    outcomes[1] = {**outcomes[1], "status": "void", "article": "baccarat.art10",
                   "void_reason": "misdeal"}
    truth = compare("baccarat", outcomes, ledger, published)
    assert (truth.ok, truth.wrong) == (False, 1)
    assert "void for no cause" in truth.problems[0]


def test_a_hand_lost_or_invented_fails(tmp_path: Path) -> None:
    events, ledger = shoe_session(tmp_path)
    published, outcomes = publish("baccarat", events)
    truth = compare("baccarat", outcomes[:-1], ledger, published)
    assert (truth.ok, truth.lost) == (False, 1)
    truth = compare("baccarat", [*outcomes, {**outcomes[-1], "round": 9}], ledger, published)
    assert (truth.ok, truth.invented) == (False, 1)


# -- craps: a dropped throw -------------------------------------------------------------------


def test_a_dropped_throw_fails_the_audit_though_replay_agrees(tmp_path: Path) -> None:
    """The daemon never got report 10 and said nothing: its outcomes are one throw short, each
    later round renumbered, and a replay of what it published agrees with them."""
    events, ledger = dice_session(tmp_path)
    dropped = [e for e in events if e.extra.get("device_msg") != 10]
    published, outcomes = publish("craps", dropped)
    assert without_envelope(outcomes) == replayed("craps", published)

    truth = compare("craps", outcomes, ledger, published)
    assert (truth.ok, truth.lost, truth.wrong, truth.invented) == (False, 1, 0, 0)
    assert "(report 10)" in truth.problems[0]


def test_a_throw_the_sensor_says_it_lost_is_accounted_for(tmp_path: Path) -> None:
    """What the daemon can know of a throw it never got: the sensor's RESEND reply says the
    report is gone, and the driver publishes it (fault link_errors, "dice reports 10-10 lost")."""
    events, ledger = dice_session(tmp_path)
    named = Fault(code="link_errors", detail="dice reports 10-10 lost",
                  extra={"lost_reports": 1})
    at = next(i for i, e in enumerate(events) if e.extra.get("device_msg") == 10)
    published, outcomes = publish("craps", [*events[:at], named, *events[at + 1:]])
    truth = compare("craps", outcomes, ledger, published)
    assert truth.ok, truth.report()
    assert (truth.named_lost, truth.matched) == (1, len(ledger) - 1)
    assert expected_outcomes("craps", ledger, published) == len(outcomes)


def test_wrong_invented_or_duplicated_throws_fail(tmp_path: Path) -> None:
    events, ledger = dice_session(tmp_path)
    published, outcomes = publish("craps", events)
    wrong = copy.deepcopy(outcomes)
    a, b = wrong[4]["result"]["dice"]
    wrong[4]["result"]["dice"] = [b % 6 + 1, a]
    assert compare("craps", wrong, ledger, published).wrong == 1
    extra = [*outcomes[:5], {**outcomes[5], "round": 99}, *outcomes[5:]]
    assert compare("craps", extra, ledger, published).invented == 1
    assert compare("craps", [*outcomes, outcomes[3]], ledger, published).duplicated == 1
    # an event that claims a report the sensor never made
    forged = [*published, {**published[3], "device_msg": 500, "table_seq": len(published)}]
    assert compare("craps", outcomes, ledger, forged).invented == 1


def test_a_sensor_fault_not_published_fails(tmp_path: Path) -> None:
    events, ledger = dice_session(tmp_path, faults=("sensor@9",))
    published, outcomes = publish("craps", [e for e in events if e.type != "fault"])
    truth = compare("craps", outcomes, ledger, published)
    assert (truth.ok, truth.lost) == (False, 1)
    assert "sensor fault report 8" in truth.problems[0]


# -- Q Poker ----------------------------------------------------------------------------------


def test_a_round_dealt_from_another_rounds_cards_fails(tmp_path: Path) -> None:
    """The same shape as item 1 at a shuffler: what is left of a deal cut short dealt into the
    next round. Here round 3's seats get round 2's hands."""
    events, ledger = qpoker_session(tmp_path)
    published, outcomes = publish("qpoker", events)
    shifted = copy.deepcopy(outcomes)
    for seat, result in shifted[2]["result"]["seats"].items():
        result["cards"] = outcomes[1]["result"]["seats"].get(seat, {}).get("cards",
                                                                            result["cards"])
    shifted[2]["result"]["dealer"]["cards"] = outcomes[1]["result"]["dealer"]["cards"]
    truth = compare("qpoker", shifted, ledger, published)
    assert (truth.ok, truth.wrong) == (False, 1)
    assert truth.problems[0].startswith("round 3 is not what was dealt")


def test_a_halted_round_must_be_void_under_art_11_5(tmp_path: Path) -> None:
    events, ledger = qpoker_session(tmp_path, faults=("jam@5",))
    halted = next(line["round"] for line in ledger if line["halted"])
    published, outcomes = publish("qpoker", events)
    assert outcomes[halted - 1]["article"] == "qpoker.art11.5"
    other = copy.deepcopy(outcomes)
    other[halted - 1]["article"] = "qpoker.art11.1"
    assert not compare("qpoker", other, ledger, published).ok
    complete = copy.deepcopy(outcomes)
    complete[halted - 1]["status"] = "complete"
    assert "though the machine halted" in compare("qpoker", complete, ledger,
                                                  published).problems[0]


def test_a_round_lost_or_a_void_for_no_cause_fails(tmp_path: Path) -> None:
    events, ledger = qpoker_session(tmp_path)
    published, outcomes = publish("qpoker", events)
    assert compare("qpoker", outcomes[:-1], ledger, published).lost == 1
    void = copy.deepcopy(outcomes)
    void[0].update(status="void", article="qpoker.art11.1", void_reason="a new round began first")
    assert "void for no cause" in compare("qpoker", void, ledger, published).problems[0]
    void[0]["void_reason"] = "the shuffling machine failed while dealing: device_lost"
    assert compare("qpoker", void, ledger, published).voided_by_host == {"qpoker.art11.1": 1}
