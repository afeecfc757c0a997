"""The event path is one transaction: whatever raises on it, the live rules state is what a replay
of the journal gives, and the failure is journaled as a fault the rules core answers.

The runtime runs on a real journal (SQLite) with the real rules core. Failures are injected where
they happen in real life: in the rules core (before or after it changed its state), in the
logging that follows, and on a full disk. After every event the live table is compared, field by
field, with a table rebuilt from the journal alone.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabled.daemon.runtime as runtime_module
from tabled.contract.events import (
    Burn,
    CardDealt,
    CutCard,
    Decision,
    Demo,
    Event,
    Fault,
    HandDealt,
    Meta,
    Reveal,
    Roll,
    RoundStart,
    ShoeStart,
    Void,
    parse_event,
)
from tabled.contract.outcome import Output
from tabled.daemon.config import parse_config
from tabled.daemon.journal import Journal
from tabled.daemon.runtime import Degraded, TableRuntime
from tabled.games.registry import make_table


def runtime_for(game: str, path: Path) -> TableRuntime:
    config = parse_config({"table": {"site": "s", "id": "t", "game": game},
                           "journal": {"path": str(path)}})
    return TableRuntime(config, Journal(path).events)


def state(value: Any, seen: frozenset[int] = frozenset()) -> Any:
    """Everything an object holds, as plain data (slots and ``__dict__`` alike), for equality."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if id(value) in seen:
        return "<cycle>"
    seen = seen | {id(value)}
    if isinstance(value, (Mapping, MappingProxyType)):
        return {repr(k): state(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [state(v, seen) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    fields: dict[str, Any] = {}
    for klass in type(value).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if hasattr(value, name):
                fields[name] = state(getattr(value, name), seen)
    for name, item in getattr(value, "__dict__", {}).items():
        if not callable(item):
            fields[name] = state(item, seen)
    return {"type": type(value).__name__, **fields}


def assert_live_equals_journal(runtime: TableRuntime) -> None:
    """The live table and publication equal those rebuilt from the journal's inputs alone."""
    assert runtime.commit()
    table = make_table(runtime.game, runtime.options)
    rebuilt = runtime_for_replay(runtime, table)
    assert state(runtime.table) == state(rebuilt)


def runtime_for_replay(runtime: TableRuntime, table: Any) -> Any:
    for stored in runtime.events.owner.inputs():
        table.feed(parse_event(stored.body))
    return table


def journal_rows(runtime: TableRuntime, kind: str) -> list[dict[str, Any]]:
    if kind == "input":
        return [stored.body for stored in runtime.events.owner.inputs()]
    return [json.loads(o.payload) for o in runtime.events.outputs_after(0, 100_000)
            if o.topic == kind]


# -- injected failures ------------------------------------------------------------------------


class FailingFeed:
    """The real table, whose next ``feed`` raises: before it changes anything (``before``) or
    after it has (``after``): a rules core that breaks half-way leaves its state half-changed."""

    def __init__(self, table: Any, when: str) -> None:
        self._table = table
        self._when = when

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def feed(self, event: Event) -> list[Output]:
        if self._when == "before":
            raise ZeroDivisionError("injected before the rules changed their state")
        self._table.feed(event)
        raise KeyError("AS")  # a message that could be a card: it must not be journaled


class FailingLog:
    """A logger whose every warning raises, as the notice logging did (TypeError)."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> None:
            raise TypeError("injected in the logging")
        return fail if name in ("warning", "info") else (lambda *a, **k: None)


# -- the regressions --------------------------------------------------------------------------


def test_a_fault_event_whose_notice_is_logged_is_journaled_and_applied(tmp_path: Path) -> None:
    """Issue 16, item 2: a notice for a ``fault`` event was logged with the event's fields,
    which already hold ``code``: TypeError after the rules core was fed, nothing journaled, the
    live state ahead of the journal. Here the shoe's unreadable card overflows a spent shoe."""
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    runtime.accept(ShoeStart(decks=6), "device:shoe-1")
    for seq in range(312):
        runtime.stage(Burn(meta=Meta(device="shoe-1", seq=seq)), "device:shoe-1")
    runtime.accept(CardDealt(card="9S"), "device:shoe-1")
    runtime.accept(Void(reason="device_lost: shoe not back", extra={"device_lost": True}),
                   "daemon")
    outputs = runtime.accept(Fault(code="unreadable_card", meta=Meta(device="shoe-1", seq=400)),
                             "device:shoe-1")
    assert [getattr(o, "code", None) for o in outputs] == ["dealt_after_void", "card_count"]
    inputs = journal_rows(runtime, "input")
    assert inputs[-1]["type"] == "fault" and inputs[-1]["seq"] == 400
    assert [f.get("code") for f in journal_rows(runtime, "fault")[-3:]] == [
        "unreadable_card", "dealt_after_void", "card_count"]
    assert runtime.devices["shoe-1"].next_seq == 401
    assert_live_equals_journal(runtime)


def test_an_unreadable_card_between_hands_reaches_the_journal_as_a_void_hand(
        tmp_path: Path) -> None:
    """The issue's scenario (unreadable@18, the first card of a hand): the fault is journaled,
    its hand is void (baccarat.art10), and device sequence numbers have no hole."""
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    for seq, code in enumerate(["2H", "6H", "7D", "JD"]):
        runtime.stage(CardDealt(card=code, meta=Meta(device="shoe-1", seq=seq)), "device:shoe-1")
    runtime.stage(Fault(code="unreadable_card", meta=Meta(device="shoe-1", seq=4)),
                  "device:shoe-1")
    runtime.stage(CardDealt(card="6D", meta=Meta(device="shoe-1", seq=5)), "device:shoe-1")
    assert runtime.commit()
    assert [i["seq"] for i in journal_rows(runtime, "input")] == [0, 1, 2, 3, 4, 5]
    outcomes = journal_rows(runtime, "outcome")
    assert [(o["round"], o["status"], o.get("article")) for o in outcomes] == [
        (1, "complete", None), (2, "void", "baccarat.art10")]
    assert runtime.table.round_open  # 6D is the Player's first card of hand 3
    assert_live_equals_journal(runtime)


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_rules_core_that_raises_leaves_the_state_the_journal_gives(
        tmp_path: Path, when: str) -> None:
    """A card the rules core failed on is not applied: the journal says so with an input fault
    that names no card, the hand it went to is void, and the rest of that hand is declined
    until the dealer marks a boundary."""
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    runtime.accept(CardDealt(card="2S", meta=Meta(device="shoe-1", seq=0)), "device:shoe-1")
    runtime.table = FailingFeed(runtime.table, when)  # type: ignore[assignment]
    outputs = runtime.accept(CardDealt(card="3D", meta=Meta(device="shoe-1", seq=1, boot=7,
                                                            msg=12)),
                             "device:shoe-1")
    assert [getattr(o, "status", None) for o in outputs] == ["void"]
    (fault,) = [f for f in journal_rows(runtime, "fault") if f["code"] == "event_not_applied"]
    assert fault["event_type"] == "card" and fault["source"] == "daemon"
    assert "3D" not in json.dumps(fault) and "'AS'" not in json.dumps(fault)
    assert runtime.devices["shoe-1"].last_message == 12  # the message counts as handled
    assert_live_equals_journal(runtime)
    declined = runtime.accept(CardDealt(card="4H"), "device:shoe-1")
    assert [getattr(o, "code", None) for o in declined] == ["card_not_followed"]
    assert_live_equals_journal(runtime)


def test_a_logging_failure_changes_nothing(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    monkeypatch.setattr(runtime_module, "log", FailingLog())
    for code in ["9S", "2H", "KD", "3C"]:
        runtime.accept(CardDealt(card=code), "device:shoe-1")
    runtime.accept(Void(), "console:pit")  # a notice: nothing to void
    assert [o["status"] for o in journal_rows(runtime, "outcome")] == ["complete"]
    assert runtime.counters["log_errors"] == 2 and runtime.counters["events_not_applied"] == 0
    assert_live_equals_journal(runtime)


def test_qpoker_a_failure_names_no_card_and_voids_the_round(tmp_path: Path) -> None:
    """Q Poker: the dealer's hand fails in the rules core; no card of it appears anywhere, the
    round is void (qpoker.art11.1) and the rest of its deal is declined."""
    runtime = runtime_for("qpoker", tmp_path / "j.sqlite")
    runtime.accept(RoundStart(seats=(1,)), "device:shuffler-1")
    runtime.accept(HandDealt(seat=1, cards=("AS", "KS", "QS")), "device:shuffler-1")
    runtime.table = FailingFeed(runtime.table, "after")  # type: ignore[assignment]
    runtime.publication = runtime.publication  # the publication keeps the real table
    outputs = runtime.accept(HandDealt(seat="dealer", cards=("2H", "7D", "9C")),
                             "device:shuffler-1")
    assert [(o.status, o.article) for o in outputs] == [  # type: ignore[union-attr]
        ("void", "qpoker.art11.1")]
    everything = json.dumps([journal_rows(runtime, t) for t in ("event", "fault", "outcome")])
    assert "2H" not in everything and "7D" not in everything and "9C" not in everything
    assert_live_equals_journal(runtime)


# -- the property -----------------------------------------------------------------------------

CARDS = [r + s for r in "A23456789TJQK" for s in "SHCD"]


def baccarat_events(rng: random.Random, count: int) -> Iterator[Event]:
    """A table's events: mostly cards, with every kind of irregular event among them."""
    for seq in range(count):
        meta = Meta(device="shoe-1", seq=seq)
        draw = rng.random()
        if draw < 0.70:
            yield CardDealt(card=rng.choice(CARDS), meta=meta)
        elif draw < 0.75:
            yield Fault(code="unreadable_card", meta=meta)
        elif draw < 0.79:
            yield Burn(card=rng.choice([None, rng.choice(CARDS)]), meta=meta)
        elif draw < 0.83:
            yield Void(reason="device_lost: shoe gone", extra={"device_lost": True})
        elif draw < 0.86:
            yield Void(reason="dealer_button", meta=meta)
        elif draw < 0.89:
            yield RoundStart()
        elif draw < 0.91:
            yield ShoeStart(decks=rng.choice([6, 8]), meta=meta)
        elif draw < 0.93:
            yield Demo(meta=meta)
        elif draw < 0.95:
            yield CutCard(meta=meta)
        elif draw < 0.97:
            yield Fault(code=rng.choice(["device_lost", "shoe_sensor_dirty"]), meta=meta)
        else:
            yield rng.choice([Roll(dice=(3, 4)), Decision(seat=1, play=True), Reveal()])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), failures=st.sets(st.integers(0, 59), max_size=6))
def test_after_every_event_and_every_failure_live_state_equals_the_journal_s(
        tmp_path_factory: pytest.TempPathFactory, seed: int, failures: set[int]) -> None:
    rng = random.Random(seed)
    runtime = runtime_for("baccarat", tmp_path_factory.mktemp("rt") / "j.sqlite")
    for index, event in enumerate(baccarat_events(rng, 60)):
        if index in failures:
            where = rng.choice(["before", "after", "log"])
            if where == "log":
                runtime_module.log, saved = FailingLog(), runtime_module.log  # type: ignore[assignment]
                try:
                    runtime.accept(event, "device:shoe-1")
                finally:
                    runtime_module.log = saved
            else:
                runtime.table = FailingFeed(runtime.table, where)  # type: ignore[assignment]
                runtime.accept(event, "device:shoe-1")
        else:
            runtime.accept(event, "device:shoe-1")
        assert not isinstance(runtime.table, FailingFeed)
        assert_live_equals_journal(runtime)
    # and a replay of the journal's inputs gives exactly the outcomes the journal holds
    table = make_table("baccarat")
    replayed = []
    for body in journal_rows(runtime, "input"):
        replayed += [o.to_record() for o in table.feed(parse_event(body))
                     if hasattr(o, "to_record")]
    published = [{k: v for k, v in o.items() if k not in ("ts", "table_seq")}
                 for o in journal_rows(runtime, "outcome")]
    assert published == replayed
    runtime.events.owner.close()


def test_a_full_disk_refuses_the_event_and_keeps_the_journal_s_state(tmp_path: Path) -> None:
    """The journal failing is the other way the path breaks: the event is refused (the device
    keeps it), and the rules state is the journal's."""
    runtime = runtime_for("baccarat", tmp_path / "j.sqlite")
    runtime.accept(CardDealt(card="9S"), "device:shoe-1")
    pages = runtime.events.owner._db.execute("PRAGMA page_count").fetchone()[0]
    runtime.events.owner._db.execute(f"PRAGMA max_page_count = {pages}")
    runtime.stage(CardDealt(card="2H", extra={"note": "x" * 100_000}), "device:shoe-1")
    assert runtime.commit() is False
    with pytest.raises(Degraded):
        runtime.stage(CardDealt(card="KD"), "device:shoe-1")
    runtime.events.owner._db.execute("PRAGMA max_page_count = 1073741823")
    assert runtime.probe()
    assert_live_equals_journal(runtime)
