"""The protocol of a game's pit part: what the floor monitor (``tabled pit``) asks of a game.

This module owns the shape of a game's view on the pit's pages; it never imports the pit. A
game declares its part in its :class:`~tabled.games.registry.GameDeclaration` as
``parts={"pit": "tabled.games.<game>.pit:PIT"}``, the attribute being a :class:`PitPart`; the
pit loads it with ``registry.part(game, "pit")``. A game that declares none still shows on the
floor: its tile says the last outcome by round and status, its table page lists its last
outcomes by round, status and article (the pit's generic panel).

What flows between the pit and the part is the contract's types and plain data:

- the pit's model (pure, no I/O) makes one :class:`Panel` per table with ``PitPart.panel()``,
  and feeds it the table's **outcome records** (the contract's decoded records,
  :data:`tabled.contract.outcome.OutcomeRecord`) — never the event stream, where a withheld
  card arrives before the outcome — plus, through :meth:`Panel.event`, only the event types the
  part lists in ``PitPart.events``, which must carry no hidden card: a game lists a card
  event only when its cards are public the moment they are dealt (baccarat's, out of the shoe:
  the hand in progress; ``shoe_start``, a new shoe starts new roads), never one whose table
  withholds a card until the outcome (Q Poker's dealer's: its part lists none; a test checks
  each game's list). ``Panel.to_dict()`` is the panel as JSON-ready plain data, with
  ``"game"`` naming the game (``tabled pit status`` prints it; the page draws it): the scoreboard
  of a game (baccarat's roads) is part of it;
- the tile's one line is ``PitPart.describe(outcome)`` for a complete outcome (the pit writes a
  void's line itself: ``#12 void (Art. 7.3): reason``);
- the web page turns the panel's dict into what its template lays out with
  ``PitPart.view(panel)`` (pure, plain values; the helpers below draw grids and histograms),
  and renders the game's template fragments, which are package data of the game's package
  (``<package>/templates/``, listed in pyproject's package-data): ``panel_template`` on the
  table page with ``view`` (and ``tile``) in its context, ``recall_template`` on the recall page
  once per recalled round with ``o`` (the outcome record as a dict) and ``res`` (its
  ``result``, ``{}`` when absent) in its context — it decides itself whether a void shows
  anything. The pit's Jinja environment finds a game's templates under the game's name
  (``craps/panel.html``) and offers every fragment its own macros (``{% import "_marks.html"
  as m %}``: ``m.card``, ``m.hand``, ``m.die``), filters (``card``, ``clock``, ``stamp``,
  ``quote``) and globals (``PIPS``, ``ago``); the environment trims blocks
  (``trim_blocks``, ``lstrip_blocks``) and is strict about undefined names. The page has no
  inline style (its CSP forbids them): a game's classes are in its ``stylesheet``, served within
  ``/static/pit.css`` after the pit's own (whose variables, ``var(--panel)`` …, it may use).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from msgspec import UNSET

from tabled.contract.outcome import Bet, OutcomeRecord

#: Rows of a scoreboard grid (a baccarat road), unless a game says otherwise.
GRID_ROWS = 6
#: A line for the page in the catalogue's terms (``PitPart.phrase``): msgid, values.
Phrase = tuple[str, dict[str, Any]]


class Panel(Protocol):
    """The floor's picture of one table's play at a game (one per table, made by
    ``PitPart.panel()``). Pure and synchronous; it must never fail on a record it cannot
    read (it skips it)."""

    def new_session(self) -> None:
        """The table started a new run (a new birth record): reset what counts a session."""

    def add(self, outcome: OutcomeRecord) -> None:
        """One new outcome record of the table, in the table's order."""

    def event(self, payload: Mapping[str, Any]) -> bool:
        """One event of a type the part lists in ``PitPart.events`` (the pit drops copies and
        older ones by ``table_seq``); True if the panel changed."""

    def to_dict(self) -> dict[str, Any]:
        """The panel as JSON-ready plain data, ``"game"`` naming the game."""


@dataclass(frozen=True, slots=True)
class PitPart:
    """A game's pit part (module docstring).

    ``panel``: a fresh :class:`Panel`. ``describe``: a complete outcome in one line, for the
    tile (``#12 6-1 = 7, point off``). ``view``: the panel's dict to the values its template
    lays out. ``package``: the game's package, whose ``templates/`` folder holds
    ``panel_template`` and ``recall_template`` (None: the recall shows the settlement only).
    ``events``: the event types the panel reads (:meth:`Panel.event`), none with a hidden card.
    ``stylesheet``: a CSS file in the same ``templates/`` folder, served within the page's
    stylesheet after the pit's own (its classes are the game's: ``.craps``, ``.g-craps`` …).
    ``display_template``, ``display_view``, ``display_stylesheet``: the table's scoreboard
    display for the players (the screen beside the table, docs/pit.md "Displays"), or None
    when the game has none: ``display_view(panel)`` makes its values from the panel's dict as
    ``view`` does (it must hold only what players may see), the template (in ``templates/``)
    draws them as ``view``, and the stylesheet is served in ``/static/display.css``.
    """

    panel: Callable[[], Panel]
    describe: Callable[[OutcomeRecord], str]
    view: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    package: str
    panel_template: str = "panel.html"
    recall_template: str | None = "recall.html"
    display_template: str | None = None
    display_view: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    display_stylesheet: str | None = None
    events: tuple[str, ...] = ()
    stylesheet: str | None = None
    #: a fragment of the game's ``templates/`` drawn in the table's floor tile, below its last
    #: outcome, with ``view`` (``view(panel)``) in its context (baccarat: the hand being dealt
    #: and the shoe's penetration); None: the tile shows the pit's lines only
    tile_template: str | None = None
    #: The game's history view (the pit's history pages): recorded outcome records of a
    #: stretch of play, in the table's order (a page of rounds, or a whole segment) to the
    #: plain values ``history_template`` lays out with ``h`` in its context. None: the pit's
    #: generic list of rounds only. Like ``view``, it sees outcomes only, never an event.
    history: Callable[[Sequence[OutcomeRecord]], Mapping[str, Any]] | None = None
    history_template: str = "history.html"
    #: The card-less event type that begins a segment of play the history offers one by one
    #: (baccarat: ``shoe_start``, a shoe and its scoreboard), and what a segment is called
    #: (``"Shoe"``, translated where shown); None: the history pages rounds only. With a
    #: segment the game's history view is drawn per segment, else per page of rounds.
    history_segment: str | None = None
    history_segment_title: str = "Segment"
    #: The articles whose parts the Chinese original numbers as items, ``（五）``, not as
    #: paragraphs, ``五、``: the page names ``art11.5`` ``第十一條（五）項`` for them, else
    #: ``第十一條第五款`` (tabled.pit.i18n.article).
    article_items: frozenset[int] = frozenset()
    #: ``describe``'s line as the catalogue has it, for the page to show in its language: a
    #: msgid marked ``N_`` (``"#%(round)s banker wins %(player)s-%(banker)s"``) and its
    #: values, numbers as they are and words as msgids marked ``N_`` too (``article``: a rule's
    #: article code). None: the page shows ``describe``'s line as it is.
    phrase: Callable[[OutcomeRecord], Phrase] | None = None


# -- helpers a panel or a view may use -----------------------------------------------------------


def N_(message: str) -> str:
    """Mark ``message`` for the pit's catalogue (``make messages`` extracts it); the page
    translates it where it shows it (``{{ _(value) }}``). The same as ``tabled.pit.i18n.N_``,
    for a game, which never imports the pit."""
    return message


def given(value: Any) -> Any:
    """A field of a typed record as the page shows it: absent is None."""
    return None if value is UNSET else value


def pays(bet: Bet) -> dict[str, Any]:
    """A settled bet as the page shows it: ``{"result": "win", "pays": "1:1"}``."""
    out: dict[str, Any] = {"result": bet.result}
    if bet.pays is not UNSET:
        out["pays"] = bet.pays
    return out


@dataclass(frozen=True, slots=True)
class Grid:
    """A scoreboard road laid out for display: ``rows[r][i]`` is the cell at column
    ``first + i``, row ``r`` (None when empty); ``first`` is the first column shown."""

    name: str
    first: int
    width: int
    rows: list[list[Mapping[str, Any] | None]]
    entries: int

    @property
    def columns(self) -> range:
        return range(self.first, self.first + self.width)


def grid(name: str, entries: Sequence[Mapping[str, Any]], width: int,
         rows: int = GRID_ROWS) -> Grid:
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


def chi_square(faces: Mapping[str, int], sides: int = 6) -> float | None:
    """Pearson's statistic of a die's faces against a fair die (``sides - 1`` degrees of
    freedom), for a glance; the integrity monitors own the tests that raise alerts."""
    n = sum(faces.values())
    if n == 0:
        return None
    expected = n / sides
    return round(sum((faces.get(str(f), 0) - expected) ** 2 / expected
                     for f in range(1, sides + 1)), 2)
