"""An outcome is judged by the contract's decoder (``decode_outcome``): a record of the wrong
types is malformed, named by field, and neither recorded nor shown (issue 27: it was recorded
and shown as "#7 5 wins None-None"); records of contract version 1 and 2 are both taken (an
upgrade leaves old tables on the floor for a while)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from typing import Any

import aiomqtt
import pytest

from tabled.daemon.broker import Mosquitto
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.pit.config import parse_config
from tabled.pit.messages import Malformed, parse_message
from tabled.pit.service import PitService
from tests.pit.conftest import PREFIX, all_bets, running


def hand(round_no: int, seq: int, v: int = 2, **result: Any) -> dict[str, Any]:
    return {"v": v, "type": "outcome", "game": "baccarat", "round": round_no,
            "status": "complete",
            "result": {"player_cards": ["2S", "3H"], "banker_cards": ["9D", "KC"],
                       "player_total": 5, "banker_total": 9, "winner": "banker",
                       "natural": True, **result},
            "bets": all_bets("baccarat", banker={"result": "win", "pays": "19:20"}),
            "table_seq": seq, "ts": "2026-12-01T10:00:02.000Z"}


#: The record that was shown as "#7 5 wins None-None": a winner that is a number, totals that
#: are not there.
WRONG_TYPES = {"v": 1, "type": "outcome", "game": "baccarat", "round": 7, "status": "complete",
               "result": {"winner": 5}, "bets": {}, "table_seq": 6}


def parse(body: dict[str, Any]) -> Any:
    return parse_message(PREFIX, f"{PREFIX}/lab/t1/outcome", json.dumps(body).encode(),
                         time.time())


@pytest.mark.parametrize(("body", "field"), [
    (WRONG_TYPES, "outcome: result."),
    (hand(7, 6, player_total="5"), "outcome: result.player_total: '5'"),
    (hand(7, 6, winner=5), "outcome: result.winner: 5"),
    ({**hand(7, 6), "round": "7"}, "outcome: round: '7'"),
    ({**hand(7, 6), "bets": {}}, "outcome: bets: lacks player, banker"),
    ({**hand(7, 6), "v": 3}, "outcome: v: unsupported contract version 3"),
])
def test_an_outcome_of_the_wrong_types_is_malformed_naming_the_field(body: dict[str, Any],
                                                                     field: str) -> None:
    with pytest.raises(Malformed) as refused:
        parse(body)
    assert str(refused.value).startswith(field), str(refused.value)


@pytest.mark.parametrize("v", [1, 2])
def test_outcomes_of_contract_version_1_and_2_are_taken_typed(v: int) -> None:
    message = parse(hand(7, 6, v=v))
    assert isinstance(message.outcome, BaccaratOutcome) and message.outcome.v == v
    assert message.round == 7 and message.kind == "complete" and message.event is None


async def test_a_wrong_typed_outcome_is_in_malformed_not_recorded_nor_shown(
        broker: Mosquitto, tmp_path: Any) -> None:
    path = tmp_path / "pit.sqlite"
    cfg = parse_config({"pit": {"id": "pit-t"},
                        "mqtt": {"url": broker.url, "reconnect_min": 0.1, "reconnect_max": 1.0},
                        "store": {"sqlite": str(path)}})
    service = PitService(cfg)
    async with running(service), aiomqtt.Client("127.0.0.1", broker.port) as table:
        birth = {"version": "0.1.0", "contract": 2, "site": "lab", "table": "t1",
                 "game": "baccarat", "options": {}, "devices": [{"id": "shoe-1", "family": "shoe"}],
                 "started_at": "2026-12-01T10:00:00.000Z", "pid": 1, "commands": False,
                 "state": "online", "table_seq": 0}
        await table.publish("tabled/lab/t1/status", json.dumps(birth), qos=1, retain=True)
        for n in range(1, 7):  # rounds 1-6 from a table of each version
            await table.publish("tabled/lab/t1/outcome",
                                json.dumps(hand(n, n - 1, v=1 if n % 2 else 2)), qos=1)
        await table.publish("tabled/lab/t1/outcome", json.dumps(WRONG_TYPES), qos=1)

        deadline = time.monotonic() + 15
        while await service.store.malformed_count() < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        recorded = await service.store.recent_outcomes("lab", "t1", 100)
        assert [m.round for m in recorded] == [1, 2, 3, 4, 5, 6]
        assert [m.outcome is not None and m.outcome.v for m in recorded] == [1, 2, 1, 2, 1, 2]
        tile = service.floor.tile("lab", "t1")
        assert tile is not None and tile["last_outcome"]["round"] == 6
        assert tile["last_outcome"]["line"] == "#6 banker wins 5-9 natural"
        shown = json.dumps(service.floor.snapshot())
        assert "None-None" not in shown and "5 wins" not in shown
        panel = service.floor.panel("lab", "t1")
        assert panel is not None and [h["round"] for h in panel["hands"]] == [1, 2, 3, 4, 5, 6]
    with sqlite3.connect(path) as conn:
        (reason,) = conn.execute("SELECT reason FROM malformed").fetchone()
    assert reason.startswith("outcome: result."), reason
