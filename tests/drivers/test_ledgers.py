"""The simulators' ledgers (docs/protocols/ledger.md): one line per round as the device dealt it,
checked against the device's own reports, so that a comparison with the daemon's outcomes rests
on what the device did and not on what a host made of it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tabled.contract.outcome import Outcome
from tabled.drivers.shoe.driver import normalize
from tabled.drivers.shoe.protocol import CardOut, DeviceFault, FaultCode
from tabled.games.registry import make_table
from tabled.simulators.ledger import Ledger, read_ledger
from tabled.simulators.shoe import Dealer, ShoeFault, ShoeReader
from tabled.simulators.shuffler import (
    MachineFault,
    baccarat_script,
    ledger_records,
    qpoker_script,
)


def test_a_ledger_file_is_json_lines_flushed_one_by_one_and_numbered(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.jsonl", device="shoe", serial="SN-1")
    ledger.write({"game": "baccarat", "round": 1})
    assert read_ledger(tmp_path / "l.jsonl") == [
        {"v": 1, "device": "shoe", "serial": "SN-1", "index": 1, "game": "baccarat", "round": 1}]
    ledger.write({"game": "baccarat", "round": 2})
    ledger.close()
    with (tmp_path / "l.jsonl").open("a") as out:
        out.write('{"half a line')  # a writer killed mid-line: the reader leaves it out
    assert [r["index"] for r in read_ledger(tmp_path / "l.jsonl")] == [1, 2]


def shoe_ledger(seed: int, hands: int, *faults: ShoeFault) -> tuple[list[dict[str, Any]], list]:
    records: list[dict[str, Any]] = []
    dealer = Dealer(ShoeReader(), rng=random.Random(seed), hands=hands, shoes=None,
                    faults=list(faults), ledger=records.append)
    return records, list(dealer.reports())


def test_the_shoe_s_ledger_is_every_hand_it_dealt_card_by_card() -> None:
    """Each line's cards are the cards out of the shoe, in order, between burns and hands; its
    outcome is what a fresh rules core makes of the shoe's reports."""
    records, reports = shoe_ledger(5, 8, ShoeFault("unreadable", 18), ShoeFault("void", 30))
    table = make_table("baccarat")
    outcomes = [o.to_record() for r in reports if (e := normalize(r)) is not None
                for o in table.feed(e) if isinstance(o, Outcome)]
    assert [r["outcome"] for r in records] == outcomes
    dealt = [(r.card_no, r.card if isinstance(r, CardOut) else None) for r in reports
             if (isinstance(r, CardOut) or (isinstance(r, DeviceFault)
                                            and r.code is FaultCode.UNREADABLE_CARD))
             and not r.burn]
    in_hands = [(no, card) for r in records for no, card in zip(r["card_nos"], r["cards"],
                                                                 strict=True)]
    assert in_hands == [d for d in dealt if d[0] >= in_hands[0][0]]
    third = records[2]  # the unreadable@18: the first card of hand 3
    assert (third["cards"], third["faults"], third["interrupted"]) == ([None], ["unreadable@18"],
                                                                       True)
    assert records[2]["outcome"]["article"] == "baccarat.art10"
    assert [r["round"] for r in records] == list(range(1, len(records) + 1))
    assert json.loads(json.dumps(records)) == records


def test_the_shuffler_s_ledger_shows_a_round_its_failure_cut_before_the_first_card() -> None:
    """Issue 16, item 3: failure@4 with seed 1 halts the machine at the start of round 2."""
    script = qpoker_script(random.Random(1), rounds=3, faults=[MachineFault("failure", 4)])
    rounds = [record for _, record in ledger_records(script)]
    assert [(r["round"], r["halted"], r["hands"]) for r in rounds][1] == (2, "failure", {})
    assert all(len(cards) == 3 for r in rounds for cards in r["hands"].values())
    assert [sorted(r["hands"]) for r in rounds if r["halted"] is None] == [
        sorted([*map(str, r["seats"]), "dealer"]) for r in rounds if r["halted"] is None]


def test_the_shuffler_s_baccarat_ledger_voids_the_hand_a_halt_cut() -> None:
    script = baccarat_script(random.Random(1), hands=4, faults=[MachineFault("jam", 2)])
    hands = [record for _, record in ledger_records(script)]
    assert [(h["round"], h["outcome"]["status"], h["faults"]) for h in hands] == [
        (1, "complete", []), (2, "void", ["jam"]), (3, "complete", []), (4, "complete", [])]
    assert hands[1]["interrupted"] is True
