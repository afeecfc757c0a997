"""The scoreboard of one baccarat shoe, the "roads": bead plate, big road, big eye boy, small road,
cockroach pig and the ask road (docs/pit.md, "Roads"); and ``tabled roads``, which prints them.

This module owns the roads' rules. :class:`Roads` is the one implementation that the pit's live
page (fed one outcome at a time) and ``tabled roads`` (fed a recorded event stream) share. It is
pure and typed: no clock, no logging, no I/O but the streams handed to :func:`write_roads`. A
hand costs O(1) amortised: nothing is ever recomputed from the shoe's start, and the roads are
kept packed (a few machine words per hand) so that a long history stays small. It imports only
the contract and the games (it is baccarat's: the pit's panel and ``tabled roads`` ask for it).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, TextIO, TypeAlias

from tabled.contract.events import CARD_CODES, LineError, ShoeStart, read_events
from tabled.contract.outcome import Notice, Outcome
from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.baccarat.rules import BaccaratResult
from tabled.games.errors import RulesError
from tabled.games.registry import make_table

Winner: TypeAlias = Literal["banker", "player", "tie"]
Side: TypeAlias = Literal["banker", "player"]
Color: TypeAlias = Literal["red", "blue"]

#: Every road is drawn six rows high.
ROWS: Final = 6
#: The derived roads, in the order of k = 1, 2, 3: each compares a big-road column with the
#: column k to its left.
DERIVED_ROADS: Final = ("big_eye_boy", "small_road", "cockroach_pig")

EXIT_OK: Final = 0
EXIT_BAD_INPUT: Final = 2

_WINNERS: Final[tuple[Winner, ...]] = ("banker", "player", "tie")
# A road's entries are stored as small integers: a big-road entry's side, a mark's colour.
_SIDES: Final[tuple[Side, Side]] = ("banker", "player")
_SIDE_INDEX: Final[Mapping[str, int]] = {"banker": 0, "player": 1}
_COLORS: Final[tuple[Color, Color]] = ("red", "blue")
_RED: Final = 0
_BLUE: Final = 1


class RecordError(RulesError):
    """An outcome record the roads cannot read: not a baccarat outcome, or missing its result."""


# -- what goes in: one counted hand ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hand:
    """What the roads need of one counted hand (complete, not a demonstration): who won, whether
    each hand's first two cards are a pair (Art. 12), and whether either was a natural (Art. 9).
    """

    winner: Winner
    banker_pair: bool = False
    player_pair: bool = False
    natural: bool = False

    def __post_init__(self) -> None:
        if self.winner not in _WINNERS:
            raise ValueError(f"winner {self.winner!r} is not banker, player or tie")


# There are 24 distinct hands: the roads keep one object of each, so a bead costs one reference.
_HANDS: Final[Mapping[tuple[str, bool, bool, bool], Hand]] = {
    (winner, banker_pair, player_pair, natural): Hand(winner, banker_pair, player_pair, natural)
    for winner in _WINNERS
    for banker_pair in (False, True)
    for player_pair in (False, True)
    for natural in (False, True)
}


def _is_pair(cards: Sequence[str]) -> bool:
    """Art. 12: the first two cards have the same rank (suits ignored)."""
    return len(cards) >= 2 and cards[0][0] == cards[1][0]


def hand_of(outcome: Outcome) -> Hand | None:
    """The counted hand of a rules-core outcome, or None for a void or demonstration hand
    (those are on no road). Raises :class:`RecordError` for another game's outcome."""
    if outcome.game != "baccarat":
        raise RecordError(f"a {outcome.game} outcome is not a baccarat hand")
    if outcome.status != "complete" or outcome.extra.get("demo"):
        return None
    result = outcome.result
    if not isinstance(result, BaccaratResult) or result.winner is None:
        raise RecordError(f"round {outcome.round}: a complete outcome without a winner")
    return _HANDS[(result.winner, _is_pair(result.banker_cards), _is_pair(result.player_cards),
                   result.natural)]


def hand_of_record(outcome: BaccaratOutcome) -> Hand | None:
    """:func:`hand_of` for a published outcome record, typed (``decode_outcome``): None for a
    void or demonstration hand."""
    if outcome.status != "complete" or outcome.demo is True:
        return None
    result = outcome.result
    if result.winner is None or result.natural is None:  # (the decoder refuses both)
        raise RecordError(f"round {outcome.round}: a complete outcome without a winner")
    return _HANDS[(result.winner, _is_pair(result.banker_cards), _is_pair(result.player_cards),
                   result.natural)]


def hand_from_record(record: Mapping[str, Any]) -> Hand | None:
    """:func:`hand_of` for an outcome record as published (docs/contract.md, a decoded JSON object;
    envelope fields such as ``seq`` are ignored). Raises :class:`RecordError` when it is not a
    well-formed baccarat outcome."""
    if record.get("type") != "outcome" or record.get("game") != "baccarat":
        raise RecordError(f"not a baccarat outcome: type {record.get('type')!r}, "
                          f"game {record.get('game')!r}")
    status = record.get("status")
    if status == "void" or record.get("demo") is True:
        return None
    if status != "complete":
        raise RecordError(f"status {status!r} is not complete or void")
    result = record.get("result")
    if not isinstance(result, Mapping):
        raise RecordError("a complete outcome without a result")
    winner = result.get("winner")
    if winner not in _WINNERS:
        raise RecordError(f"winner {winner!r} is not banker, player or tie")
    pairs = []
    for key in ("banker_cards", "player_cards"):
        cards = result.get(key)
        if not isinstance(cards, list) or not all(card in CARD_CODES for card in cards):
            raise RecordError(f"{key} {cards!r} is not a list of card codes")
        pairs.append(_is_pair(cards))
    natural = result.get("natural")
    if not isinstance(natural, bool):
        raise RecordError(f"natural {natural!r} is not a boolean")
    return _HANDS[(winner, pairs[0], pairs[1], natural)]


# -- what comes out: cells, counts, the ask road --------------------------------------------------
# Named tuples, not frozen dataclasses: as immutable and as typed, and several times cheaper to
# make (a frozen dataclass sets each field through object.__setattr__); add() makes up to five
# per hand.


class Bead(NamedTuple):
    """A bead-plate cell: one counted hand."""

    col: int
    row: int
    winner: Winner
    banker_pair: bool
    player_pair: bool

    def to_dict(self) -> dict[str, Any]:
        return {"col": self.col, "row": self.row, "winner": self.winner,
                "banker_pair": self.banker_pair, "player_pair": self.player_pair}


class BigRoadEntry(NamedTuple):
    """A big-road cell: one Banker or Player win, the ties that followed it (or, on the shoe's
    first entry, also those before it), and its own hand's pairs."""

    col: int
    row: int
    winner: Side
    ties: int
    banker_pair: bool
    player_pair: bool

    def to_dict(self) -> dict[str, Any]:
        return {"col": self.col, "row": self.row, "winner": self.winner, "ties": self.ties,
                "banker_pair": self.banker_pair, "player_pair": self.player_pair}


class Mark(NamedTuple):
    """A cell of a derived road (big eye boy, small road, cockroach pig)."""

    col: int
    row: int
    color: Color

    def to_dict(self) -> dict[str, Any]:
        return {"col": self.col, "row": self.row, "color": self.color}


class Counts(NamedTuple):
    """The shoe's counted hands by result, and how many had a pair or a natural."""

    banker: int
    player: int
    tie: int
    banker_pair: int
    player_pair: int
    natural: int

    def to_dict(self) -> dict[str, int]:
        return {"banker": self.banker, "player": self.player, "tie": self.tie,
                "banker_pair": self.banker_pair, "player_pair": self.player_pair,
                "natural": self.natural}


class Prediction(NamedTuple):
    """The colour each derived road would mark if the next hand were one side's win; None where
    that road would have no mark yet."""

    big_eye_boy: Color | None
    small_road: Color | None
    cockroach_pig: Color | None

    def to_dict(self) -> dict[str, Color | None]:
        return {"big_eye_boy": self.big_eye_boy, "small_road": self.small_road,
                "cockroach_pig": self.cockroach_pig}


class Ask(NamedTuple):
    """The ask road: what a Banker win and what a Player win would mark next."""

    banker: Prediction
    player: Prediction

    def to_dict(self) -> dict[str, dict[str, Color | None]]:
        return {"banker": self.banker.to_dict(), "player": self.player.to_dict()}


class Update(NamedTuple):
    """What one hand changed, for a page that redraws only that.

    ``big_road`` is the entry the hand placed, or for a tie the entry whose ``ties`` grew (the
    same cell, drawn again); None for a tie before the shoe's first Banker or Player win, which
    waits for that entry. A derived road's field is its new mark, or None when it got none.
    """

    bead: Bead
    big_road: BigRoadEntry | None
    big_eye_boy: Mark | None
    small_road: Mark | None
    cockroach_pig: Mark | None

    def to_dict(self) -> dict[str, Any]:
        """The update as JSON, keys in the order of the shoe's object; a road without a new
        cell is null."""
        return {
            "bead": self.bead.to_dict(),
            "big_road": None if self.big_road is None else self.big_road.to_dict(),
            **{name: None if mark is None else mark.to_dict()
               for name, mark in zip(DERIVED_ROADS, (self.big_eye_boy, self.small_road,
                                                      self.cockroach_pig), strict=True)},
        }


# -- placement -------------------------------------------------------------------------------------


class _Grid:
    """One road's entries and where they sit on its six-row display (docs/pit.md, "Placement").

    An entry's ``key`` (a side, a colour) says which streak it belongs to: an entry whose key
    equals the previous one's continues that streak. ``cells`` holds each entry's cell as
    ``col * ROWS + row``. Only columns at or right of the current streak's first column are ever
    looked at again, and each placement looks at O(1) of them amortised: the search for a new
    streak's column passes over each row-0 cell at most once in a road's life.
    """

    __slots__ = ("_col", "_masks", "_row", "_start", "_turned", "cells", "keys")

    def __init__(self) -> None:
        self.keys = bytearray()
        self.cells = array("q")
        self._masks = bytearray()  # per display column, one bit per occupied row
        self._start = -1  # the display column where the current streak began
        self._col = -1  # the last entry's cell
        self._row = 0
        self._turned = False  # the current streak has turned right: its tail stays in its row

    def place(self, key: int) -> int:
        """Place the next entry; return its cell."""
        masks = self._masks
        keys = self.keys
        if keys and keys[-1] == key:
            col, row = self._col, self._row
            if not self._turned and row + 1 < ROWS and not masks[col] >> (row + 1) & 1:
                row += 1
            else:  # the bottom, or an earlier tail below: the dragon tail runs right
                col += 1
                self._turned = True
        else:
            col = self._start + 1
            width = len(masks)
            while col < width and masks[col] & 1:
                col += 1  # an earlier tail runs along row 0 here
            self._start = col
            row = 0
            self._turned = False
        if col == len(masks):
            masks.append(0)
        masks[col] |= 1 << row
        self._col, self._row = col, row
        keys.append(key)
        cell = col * ROWS + row
        self.cells.append(cell)
        return cell

    def mark(self, index: int) -> Mark:
        col, row = divmod(self.cells[index], ROWS)
        return Mark(col, row, _COLORS[self.keys[index]])


def _color(lens: Sequence[int], col: int, row: int, k: int) -> int | None:
    """The mark derived road ``k`` gives a big-road entry at logical column ``col``, row ``row``
    (``lens``: the logical columns' lengths, those left of ``col`` complete), or None.

    A new column (row 0) asks whether the two columns before it, k apart, are equally long; a
    later entry asks whether the column k to the left stopped just above this row.
    """
    if row == 0:
        if col <= k:
            return None
        return _RED if lens[col - 1] == lens[col - 1 - k] else _BLUE
    if col < k:
        return None
    return _BLUE if lens[col - k] == row else _RED


# -- the roads of one shoe -------------------------------------------------------------------------


class Roads:
    """The roads of one shoe, fed its counted hands in order (:func:`hand_of`,
    :func:`hand_from_record` make them from outcomes).

    ``add`` takes one hand and says what it changed; ``extend`` takes many and says nothing
    (the fast path for a recorded shoe). The snapshots (``bead_plate``, ``big_road``, the derived
    roads, ``to_dict``) cost O(hands); ``counts``, ``ask`` and ``add`` cost O(1). A new shoe is
    a new ``Roads``.
    """

    __slots__ = (
        "_banker", "_banker_pairs", "_beads", "_big", "_big_hands", "_big_ties", "_derived",
        "_lens", "_naturals", "_player", "_player_pairs", "_tie", "_waiting_ties",
    )

    def __init__(self, hands: Iterable[Hand] = ()) -> None:
        self._beads: list[Hand] = []
        self._banker = self._player = self._tie = 0
        self._banker_pairs = self._player_pairs = self._naturals = 0
        #: Ties before the shoe's first Banker or Player win: they go on its entry.
        self._waiting_ties = 0
        #: The big road's logical columns (streaks): their lengths, in order.
        self._lens: list[int] = []
        self._big = _Grid()
        self._big_hands: list[Hand] = []  # each big-road entry's own hand
        self._big_ties = array("q")
        self._derived = (_Grid(), _Grid(), _Grid())  # k = 1, 2, 3
        self.extend(hands)

    # -- feeding

    def add(self, hand: Hand) -> Update:
        """Add the next counted hand; return the cells it placed or changed."""
        marked = self._add(hand)
        col, row = divmod(len(self._beads) - 1, ROWS)
        bey, small, pig = self._derived
        return Update(
            Bead(col, row, hand.winner, hand.banker_pair, hand.player_pair),
            self._big_entry(-1) if self._big_hands else None,
            bey.mark(-1) if marked & 1 else None,
            small.mark(-1) if marked & 2 else None,
            pig.mark(-1) if marked & 4 else None,
        )

    def extend(self, hands: Iterable[Hand]) -> None:
        """Add counted hands in order."""
        add = self._add
        for hand in hands:
            add(hand)

    def _add(self, hand: Hand) -> int:
        """Add ``hand``; return which derived roads got a mark (bit k - 1 for road k)."""
        self._beads.append(hand)
        if hand.banker_pair:
            self._banker_pairs += 1
        if hand.player_pair:
            self._player_pairs += 1
        if hand.natural:
            self._naturals += 1
        winner = hand.winner
        if winner == "tie":
            self._tie += 1
            if self._big_ties:
                self._big_ties[-1] += 1
            else:
                self._waiting_ties += 1
            return 0
        if winner == "banker":
            self._banker += 1
            side = 0
        else:
            self._player += 1
            side = 1
        lens = self._lens
        keys = self._big.keys
        if keys and keys[-1] == side:
            row = lens[-1]
            lens[-1] = row + 1
        else:
            lens.append(1)
            row = 0
        self._big.place(side)
        self._big_hands.append(hand)
        self._big_ties.append(self._waiting_ties)
        self._waiting_ties = 0
        col = len(lens) - 1
        marked = 0
        for k, grid in enumerate(self._derived, 1):
            color = _color(lens, col, row, k)
            if color is not None:
                grid.place(color)
                marked |= 1 << (k - 1)
        return marked

    # -- reading

    @property
    def counts(self) -> Counts:
        return Counts(self._banker, self._player, self._tie, self._banker_pairs,
                      self._player_pairs, self._naturals)

    @property
    def bead_plate(self) -> tuple[Bead, ...]:
        """Every counted hand, six rows a column, top to bottom then left to right."""
        return tuple(
            Bead(*divmod(index, ROWS), hand.winner, hand.banker_pair, hand.player_pair)
            for index, hand in enumerate(self._beads)
        )

    @property
    def big_road(self) -> tuple[BigRoadEntry, ...]:
        return tuple(self._big_entry(index) for index in range(len(self._big_hands)))

    @property
    def big_eye_boy(self) -> tuple[Mark, ...]:
        return self._marks(0)

    @property
    def small_road(self) -> tuple[Mark, ...]:
        return self._marks(1)

    @property
    def cockroach_pig(self) -> tuple[Mark, ...]:
        return self._marks(2)

    @property
    def streaks(self) -> tuple[int, ...]:
        """The big road's logical columns: the length of each streak, in order."""
        return tuple(self._lens)

    def predict(self, side: Side) -> Prediction:
        """What each derived road would mark if the next hand were ``side``'s win; nothing
        changes."""
        lens = self._lens
        index = _SIDE_INDEX[side]
        if not lens:
            col, row = 0, 0
        elif self._big.keys[-1] == index:
            col, row = len(lens) - 1, lens[-1]
        else:
            col, row = len(lens), 0
        found = [_color(lens, col, row, k) for k in (1, 2, 3)]
        big_eye_boy, small_road, cockroach_pig = (
            None if color is None else _COLORS[color] for color in found)
        return Prediction(big_eye_boy, small_road, cockroach_pig)

    def ask(self) -> Ask:
        """The ask road: :meth:`predict` for a Banker and for a Player win."""
        return Ask(self.predict("banker"), self.predict("player"))

    def to_dict(self) -> dict[str, Any]:
        """The shoe's JSON object, as ``tabled roads`` prints it (keys in docs/pit.md's order;
        each cell as its ``to_dict()``, built here straight from the packed roads)."""
        big = self._big
        out: dict[str, Any] = {
            "counts": self.counts.to_dict(),
            "bead_plate": [
                {"col": index // ROWS, "row": index % ROWS, "winner": hand.winner,
                 "banker_pair": hand.banker_pair, "player_pair": hand.player_pair}
                for index, hand in enumerate(self._beads)],
            "big_road": [
                {"col": cell // ROWS, "row": cell % ROWS, "winner": _SIDES[key], "ties": ties,
                 "banker_pair": hand.banker_pair, "player_pair": hand.player_pair}
                for cell, key, ties, hand in zip(big.cells, big.keys, self._big_ties,
                                                 self._big_hands, strict=True)],
        }
        for name, grid in zip(DERIVED_ROADS, self._derived, strict=True):
            out[name] = [{"col": cell // ROWS, "row": cell % ROWS, "color": _COLORS[key]}
                         for cell, key in zip(grid.cells, grid.keys, strict=True)]
        out["ask"] = self.ask().to_dict()
        return out

    def _big_entry(self, index: int) -> BigRoadEntry:
        hand = self._big_hands[index]
        col, row = divmod(self._big.cells[index], ROWS)
        side = _SIDES[self._big.keys[index]]
        return BigRoadEntry(col, row, side, self._big_ties[index], hand.banker_pair,
                            hand.player_pair)

    def _marks(self, road: int) -> tuple[Mark, ...]:
        grid = self._derived[road]
        return tuple(grid.mark(index) for index in range(len(grid.cells)))


# -- tabled roads ----------------------------------------------------------------------------------


def _write_shoe(out: TextIO, hands: list[Hand]) -> None:
    out.write(json.dumps(Roads(hands).to_dict(), separators=(",", ":")))
    out.write("\n")


def _notice_line(lineno: int, notice: Notice) -> str:
    """A notice on standard error, in the form ``tabled replay`` writes it."""
    article = f" ({notice.article})" if notice.article else ""
    return f"line {lineno}: notice {notice.code}: {notice.message}{article}\n"


def write_roads(
    options: BaccaratOptions | Mapping[str, str] | None,
    lines: Iterable[str],
    out: TextIO,
    err: TextIO,
) -> int:
    """``tabled roads``: run the baccarat rules over ``lines`` (JSON Lines events) and write
    each shoe's roads to ``out``, one JSON object a line; notices and the first malformed line
    go to ``err`` as ``tabled replay`` writes them.

    A shoe begins at each ``shoe_start``, and at the stream's start when a hand comes before
    the first one. A malformed line stops the command with exit status 2 after the shoes that
    ended before it; the shoe it cuts short is not written. Returns the exit status.
    """
    table = make_table("baccarat", options)
    shoe: list[Hand] | None = None  # None: no shoe begun yet
    try:
        for lineno, event in read_events(lines):
            for output in table.feed(event):
                if isinstance(output, Outcome):
                    if shoe is None:
                        shoe = []  # hands before the first shoe_start: a shoe of their own
                    hand = hand_of(output)
                    if hand is not None:
                        shoe.append(hand)
                else:
                    err.write(_notice_line(lineno, output))
            if isinstance(event, ShoeStart):
                # after the feed: a hand the shoe_start voids belonged to the shoe it ends
                if shoe is not None:
                    _write_shoe(out, shoe)
                shoe = []
    except LineError as exc:
        out.flush()
        err.write(f"{exc}\n")
        return EXIT_BAD_INPUT
    if shoe is not None:
        _write_shoe(out, shoe)
    out.flush()
    return EXIT_OK
