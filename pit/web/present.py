"""How the page draws what the model holds: road grids, cards, dice, times, histograms.

Pure functions from the model's dicts to plain values the templates lay out; no I/O, no
request, no clock but the ``now`` a caller passes. The roads are drawn from
:mod:`tabled.pit.roads` output (the model's baccarat panel), never recomputed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: Rows of every scoreboard road.
ROAD_ROWS = 6
#: Columns each road shows: the latest ones, as a physical scoreboard scrolls left.
BEAD_COLUMNS = 14
BIG_ROAD_COLUMNS = 36
DERIVED_COLUMNS = 30

SUITS = {"S": ("♠", False), "H": ("♥", True), "C": ("♣", False), "D": ("♦", True)}
RANKS = {"T": "10"}

#: Where a die's pips go on its 20×20 face.
PIPS: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((10, 10),),
    2: ((6, 6), (14, 14)),
    3: ((5, 5), (10, 10), (15, 15)),
    4: ((6, 6), (14, 6), (6, 14), (14, 14)),
    5: ((5, 5), (15, 5), (10, 10), (5, 15), (15, 15)),
    6: ((6, 5), (14, 5), (6, 10), (14, 10), (6, 15), (14, 15)),
}

#: Chance of each craps total with two fair dice, for the histogram's expected marks.
TOTAL_CHANCE = {t: (6 - abs(t - 7)) / 36 for t in range(2, 13)}


@dataclass(frozen=True, slots=True)
class Card:
    code: str
    rank: str
    suit: str
    red: bool


def card(code: Any) -> Card:
    """A contract card code (``TD``) as the page shows it (``10♦``, red)."""
    text = str(code)
    if len(text) != 2 or text[1] not in SUITS:
        return Card(text, text, "", False)
    symbol, red = SUITS[text[1]]
    return Card(text, RANKS.get(text[0], text[0]), symbol, red)


def cards(codes: Iterable[Any] | None) -> list[Card]:
    return [card(c) for c in codes or ()]


@dataclass(frozen=True, slots=True)
class Grid:
    """A road laid out for display: ``rows[r][i]`` is the cell at column ``first + i``, row
    ``r`` (None when empty); ``first`` is the first column shown."""

    name: str
    first: int
    width: int
    rows: list[list[Mapping[str, Any] | None]]
    entries: int

    @property
    def columns(self) -> range:
        return range(self.first, self.first + self.width)


def grid(name: str, entries: Sequence[Mapping[str, Any]], width: int,
         rows: int = ROAD_ROWS) -> Grid:
    """Place road entries (each with ``col`` and ``row``) in a grid ``width`` columns wide,
    showing the latest columns when the road is wider."""
    last = max((int(e["col"]) for e in entries), default=-1)
    first = max(0, last + 1 - width)
    table: list[list[Mapping[str, Any] | None]] = [[None] * width for _ in range(rows)]
    for entry in entries:
        col, row = int(entry["col"]) - first, int(entry["row"])
        if 0 <= col < width and 0 <= row < rows:
            table[row][col] = entry
    return Grid(name, first, width, table, len(entries))


def baccarat_view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The scoreboard of the current shoe: grids of the five roads, counts and the ask road."""
    roads = panel.get("roads") or {}
    counts = dict(roads.get("counts") or {})
    counts["hands"] = sum(counts.get(k, 0) for k in ("banker", "player", "tie"))
    hands = [h for h in panel.get("hands") or [] if h.get("shoe") == panel.get("shoe")]
    return {
        "bead_plate": grid("bead_plate", roads.get("bead_plate") or [], BEAD_COLUMNS),
        "big_road": grid("big_road", roads.get("big_road") or [], BIG_ROAD_COLUMNS),
        "derived": [grid(name, roads.get(name) or [], DERIVED_COLUMNS)
                    for name in ("big_eye_boy", "small_road", "cockroach_pig")],
        "counts": counts,
        "ask": roads.get("ask"),
        "hands": list(reversed(hands))[:12],
        "shoe": panel.get("shoe"),
    }


ROAD_TITLES = {"bead_plate": "Bead plate", "big_road": "Big road", "big_eye_boy": "Big eye boy",
               "small_road": "Small road", "cockroach_pig": "Cockroach pig"}


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    count: int
    x: float
    y: float
    height: float
    expected_y: float | None = None


def histogram(counts: Mapping[str, int], *, height: float = 60.0, step: float = 22.0,
              bar: float = 16.0, expected: Mapping[int, float] | None = None) -> dict[str, Any]:
    """SVG geometry of a histogram (no inline styles: the page's CSP forbids them)."""
    keys = sorted(counts, key=lambda k: int(k))
    total = sum(counts.values())
    top: float = max([*counts.values(), 1])
    if expected and total:
        top = max(top, max(p * total for p in expected.values()))
    bars = []
    for i, key in enumerate(keys):
        h = height * counts[key] / top if top else 0.0
        exp = None
        if expected and total:
            exp = round(height - height * expected[int(key)] * total / top, 1)
        bars.append(Bar(key, counts[key], round(i * step + (step - bar) / 2, 1),
                        round(height - h, 1), round(h, 1), exp))
    return {"bars": bars, "width": len(keys) * step, "height": height, "bar": bar,
            "total": total}


def craps_view(panel: Mapping[str, Any]) -> dict[str, Any]:
    session = panel.get("session") or {}
    totals = session.get("totals") or {}
    die1, die2 = session.get("die1") or {}, session.get("die2") or {}
    rolls = list(panel.get("rolls") or [])
    sevens = totals.get("7", 0)
    return {
        "point": panel.get("point"),
        "rolls": list(reversed(rolls)),
        "session": session,
        "totals": histogram(totals, expected=TOTAL_CHANCE),
        "die1": histogram(die1, expected=dict.fromkeys(range(1, 7), 1 / 6)),
        "die2": histogram(die2, expected=dict.fromkeys(range(1, 7), 1 / 6)),
        "sevens": sevens,
        "chi2_dice": [chi_square(d) for d in (die1, die2)],
    }


def chi_square(faces: Mapping[str, int]) -> float | None:
    """Pearson's statistic of a die's faces against a fair die (5 degrees of freedom), for a
    glance; the integrity monitors own the tests that raise alerts."""
    n = sum(faces.values())
    if n == 0:
        return None
    expected = n / 6
    return round(sum((faces.get(str(f), 0) - expected) ** 2 / expected
                     for f in range(1, 7)), 2)


def qpoker_view(panel: Mapping[str, Any]) -> dict[str, Any]:
    return {"rounds": list(reversed(list(panel.get("rounds") or []))),
            "voids": list(reversed(list(panel.get("voids") or [])))}


# -- times --------------------------------------------------------------------------------------


def clock(ts: float | None) -> str:
    """``HH:MM:SS`` in the pit server's local time."""
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def stamp(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def ago(ts: float | None, now: float) -> str:
    """``42s``, ``7m``, ``3h 05m``, ``2d 4h`` (the page's script keeps it current)."""
    if ts is None:
        return ""
    s = max(0, int(now - ts))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def duration(seconds: int) -> str:
    """``45 s``, ``4 min 10 s``, ``1 h 05 min``: how long to wait."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


# -- recall -------------------------------------------------------------------------------------


def event_line(event: Mapping[str, Any]) -> str:
    """One event of a recalled round, in words (its cards are drawn beside it)."""
    kind = str(event.get("type"))
    parts = []
    for key in ("seat", "decks", "dice", "play", "reason", "code", "detail", "count"):
        if key in event and event[key] is not None:
            parts.append(f"{key} {event[key]}")
    if event.get("face_up") is False:
        parts.append("face down")
    return f"{kind} " + ", ".join(parts) if parts else kind


def event_cards(event: Mapping[str, Any]) -> list[Card]:
    if "cards" in event and isinstance(event["cards"], list):
        return cards(event["cards"])
    if event.get("card"):
        return [card(event["card"])]
    return []


def settlement(bets: Mapping[str, Any] | None) -> list[tuple[str, str, str | None]]:
    """``(bet, result, pays)`` rows, nested Q Poker seats flattened to ``seat 3 dobo``."""
    rows: list[tuple[str, str, str | None]] = []
    for name, value in (bets or {}).items():
        if not isinstance(value, Mapping):
            continue
        if "result" in value:
            rows.append((str(name), str(value.get("result")), value.get("pays")))
        else:
            for sub, inner in value.items():
                if isinstance(inner, Mapping):
                    rows.append((f"seat {name} {sub}", str(inner.get("result")),
                                 inner.get("pays")))
    return rows


def worst_first(alerts: Iterable[Any]) -> list[Any]:
    order = {"critical": 0, "major": 1, "minor": 2, "info": 3}
    state = {"open": 0, "cleared": 1, "acknowledged": 2, "closed": 3}
    return sorted(alerts, key=lambda a: (state.get(a.state, 9), order.get(a.severity, 9),
                                         -a.id))


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


#: Each game's view of its table panel.
VIEWS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "baccarat": baccarat_view, "craps": craps_view, "qpoker": qpoker_view,
}
