"""Sic bo's pit part: the panel the floor keeps of a table (its scoreboard, its counts), the tile's
line, the view, and its templates rendered as the pit renders them (strict about undefined
names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import jinja2
import pytest
from tabled.contract.events import NoRoll, Roll, Void
from tabled.contract.outcome import Outcome

pytest.importorskip("tabled.games.parts.pit", reason="the pit part's protocol (issue 28)")

from tabled.games import registry

from tabled_sicbo.pit import PIT, SicBoPanel, describe, mark, view
from tabled_sicbo.rules import SicBoTable

TEMPLATES = Path(__file__).parents[1] / "tabled_sicbo" / "templates"


class Record:
    """An outcome record as the pit hands it to a panel: the published record's fields."""

    def __init__(self, outcome: Outcome) -> None:
        record = json.loads(outcome.to_json())
        self.game = record["game"]
        self.round = record["round"]
        self.status = record["status"]
        self.article = record.get("article")
        self.result = record["result"]
        self.bets = record["bets"]


def play(*events: Any) -> list[Any]:
    table = SicBoTable()
    return [Record(o) for e in events for o in table.feed(e) if isinstance(o, Outcome)]


def roll(*dice: int) -> Roll:
    return Roll(dice=cast(Any, dice))


def test_the_game_names_its_pit_part() -> None:
    assert PIT.package == "tabled_sicbo"
    assert (TEMPLATES / PIT.panel_template).is_file()
    assert PIT.recall_template is not None and (TEMPLATES / PIT.recall_template).is_file()
    assert PIT.stylesheet is not None
    css = (TEMPLATES / PIT.stylesheet).read_text(encoding="utf-8")
    assert ".game.g-sicbo" in css
    # every rule is scoped to the game's classes (the page's stylesheet holds every game's)
    rules = [line for line in css.splitlines() if line and line[0] not in " /"]
    assert rules and all(r.startswith((".sicbo ", ".sicbo{", ".game.g-sicbo")) for r in rules)
    assert registry.part("sicbo", "pit") is PIT


def test_the_panel_keeps_the_scoreboard_and_the_counts() -> None:
    panel = SicBoPanel()
    for record in play(roll(1, 2, 3), roll(6, 6, 5), roll(4, 4, 4), NoRoll(reason="die_not_flat"),
                       roll(2, 2, 1), Void()):
        panel.add(cast(Any, record))
    data = panel.to_dict()
    assert json.loads(json.dumps(data)) == data  # JSON-ready
    assert data["game"] == "sicbo" and data["road"] == "SBTS"
    session = data["session"]
    assert (session["throws"], session["voids"], session["big"], session["small"],
            session["triples"]) == (4, 2, 1, 2, 1)
    assert session["totals"]["12"] == 1 and session["faces"]["4"] == 3
    assert [t.get("void", False) for t in data["throws"]] == [False] * 3 + [True] + [False, True]
    assert data["throws"][3]["article"] == "sicbo.art2.1"
    panel.new_session()
    assert panel.to_dict()["road"] == "" and panel.to_dict()["session"]["throws"] == 0


def test_the_tile_line() -> None:
    big, void = play(roll(6, 6, 5), Void())
    assert describe(cast(Any, big)) == "#1 6-6-5 = 17 Big"
    assert describe(cast(Any, void)) == "#2 void"
    assert [mark(d) for d in ((1, 1, 1), (3, 4, 4), (3, 3, 4))] == ["T", "B", "S"]


def _environment() -> jinja2.Environment:
    marks = ('{% macro die(n) %}<span class="die" data-pip="{{ n }}">{{ n }}</span>'
             '{% endmacro %}')
    loader = jinja2.DictLoader({
        "_marks.html": marks,
        **{f"sicbo/{p.name}": p.read_text(encoding="utf-8") for p in TEMPLATES.iterdir()},
    })
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, autoescape=True)


def test_the_templates_render() -> None:
    panel = SicBoPanel()
    records = play(*(roll(a, b, c) for a, b, c in ((1, 2, 3), (5, 5, 5), (6, 4, 2))),
                   NoRoll(reason="dice_stacked"))
    for record in records:
        panel.add(cast(Any, record))
    env = _environment()
    page = env.get_template("sicbo/panel.html").render(view=view(panel.to_dict()), tile={})
    assert [page.count(f'data-mark="{m}"') for m in "TSB"] == [1, 1, 1]
    assert 'data-dice="6-4-2"' in page and 'data-throws="3"' in page
    empty = env.get_template("sicbo/panel.html").render(view=view(SicBoPanel().to_dict()),
                                                        tile={})
    assert "no throw yet" in empty
    recall = env.get_template("sicbo/recall.html")
    assert 'data-pip="5"' in recall.render(o={"status": "complete"}, res=records[1].result)
    assert "triple" in recall.render(o={"status": "complete"}, res=records[1].result)
    assert recall.render(o={"status": "void"}, res=records[3].result).strip() == ""
