"""Baccarat on the pit's pages (games/parts/pit.py): the panel, the tile's line, the view.

This module owns what the floor shows of a baccarat table: the last hands and the shoe's
scoreboard, the roads of :mod:`tabled.games.baccarat.roads` (the same code as ``tabled
roads``), the hand being dealt and the shoe's penetration. A baccarat card is public the moment
it leaves the shoe (nothing is withheld: docs/contract.md), so the panel reads the shoe's events
as they come (``PitPart.events``): ``shoe_start`` (new roads, a new count), ``card`` (the hand in
progress, given to Player or Banker in the order the rules deal, :class:`rules._Hand`),
``burn`` (counted out of the shoe), ``cut_card`` (where it came out) and ``demo``. The hand in
progress is the round its cards name (``round``, added by the daemon) until that round's outcome
arrives. Pure; it imports only the contract and the games.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat import display
from tabled.games.baccarat.history import history
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.baccarat.roads import DERIVED_ROADS, RecordError, Roads, hand_of_record
from tabled.games.baccarat.rules import _PLAYER, _Hand
from tabled.games.parts.pit import N_, Phrase, PitPart, given, grid

log = structlog.get_logger("tabled.games.baccarat.pit")

#: Hands kept for the panel.
HANDS = 80
#: Columns each road shows: the latest ones, as a physical scoreboard scrolls left.
BEAD_COLUMNS = 14
BIG_ROAD_COLUMNS = 36
DERIVED_COLUMNS = 30
#: Cards in a deck: the shoe holds ``decks`` times as many (Art. 1).
DECK = 52


@dataclass
class InPlay:
    """The hand being dealt: its round (None when the table did not say) and the cards so far,
    each given to Player or Banker as the rules deal them (Art. 7, Art. 9: Reading R-B1)."""

    round: int | None
    demo: bool = False
    #: a card of the hand did not reach the pit (the shoe's ``card_no`` jumped): the sides
    #: are not known, the cards are shown in the order they came
    missing: bool = False
    hand: _Hand = field(default_factory=_Hand)
    #: the cards in the order dealt, each with its side: ``[("player", "9S"), ...]``
    order: list[tuple[str, str]] = field(default_factory=list)

    def take(self, card: str) -> None:
        side = "player" if self.hand.next_to == _PLAYER else "banker"
        self.hand.take(card, 1)  # who gets a card is the same under both methods
        self.order.append((side, card))

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "demo": self.demo, "missing": self.missing,
                "player": list(self.hand.player),
                "banker": list(self.hand.banker),
                "order": [{"side": side, "card": card} for side, card in self.order]}


@dataclass
class ShoeCount:
    """How far the shoe is dealt: cards out (burns included: they left the shoe) of ``decks``
    decks, and the card after which the cut card came out. ``exact`` is False when the count
    did not see every card since the shoe started (the pit began mid-shoe, or rebuilt from its
    record, which keeps the outcomes' cards but not the burns): the shoe's own card number,
    when its events carry one (``card_no``), sets it right at the next card."""

    decks: int | None = None
    out: int = 0
    cut_at: int | None = None
    exact: bool = False

    def start(self, decks: Any) -> None:
        self.decks = decks if isinstance(decks, int) and decks > 0 else None
        self.out, self.cut_at, self.exact = 0, None, True

    def one_out(self, payload: Mapping[str, Any]) -> None:
        number = payload.get("card_no")
        if isinstance(number, int) and not isinstance(number, bool) and number > 0:
            self.out, self.exact = number, True
        else:
            self.out += 1

    def to_dict(self) -> dict[str, Any]:
        cards = None if self.decks is None else self.decks * DECK
        return {"decks": self.decks, "cards": cards, "out": self.out, "exact": self.exact,
                "cut_at": self.cut_at, "cut_out": self.cut_at is not None,
                "penetration": None if not cards else round(min(self.out / cards, 1.0), 4),
                "cut_position": None if not cards or self.cut_at is None
                else round(min(self.cut_at / cards, 1.0), 4)}


@dataclass
class BaccaratPanel:
    hands: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HANDS))
    #: The shoe's scoreboard (docs/pit.md "Roads"), the same code as ``tabled roads``.
    roads: Roads = field(default_factory=Roads)
    shoe: int = 0
    #: the hand being dealt (None between hands); the highest round settled
    in_play: InPlay | None = None
    settled: int | None = None
    #: a ``demo`` event came: the next hand is a demonstration hand (Art. 2.2)
    demo_next: bool = False
    count: ShoeCount = field(default_factory=ShoeCount)

    def new_session(self) -> None:
        pass

    def new_shoe(self, decks: Any = None) -> None:
        self.shoe += 1
        self.roads = Roads()
        self.in_play = None
        self.demo_next = False
        self.count.start(decks)

    def event(self, payload: Mapping[str, Any]) -> bool:
        kind = payload.get("type")
        if kind == "shoe_start":
            self.new_shoe(payload.get("decks"))
            return True
        if kind == "burn":
            self.count.one_out(payload)
            return True
        if kind == "cut_card":
            number = payload.get("card_no")
            self.count.cut_at = number if isinstance(number, int) and number > 0 \
                and not isinstance(number, bool) else self.count.out
            return True
        if kind == "demo":
            self.demo_next = True
            return False
        if kind == "card":
            return self._card(payload)
        return False

    def _card(self, payload: Mapping[str, Any]) -> bool:
        card, number = payload.get("card"), payload.get("round")
        if not isinstance(card, str):
            return False
        shoe_no = payload.get("card_no")
        # the shoe numbers its cards: one beyond the next means a card did not come here (lost
        # on the way, to be fetched from the table's journal, or unreadable: a fault)
        jumped = (self.count.exact and isinstance(shoe_no, int) and not isinstance(shoe_no, bool)
                  and shoe_no > self.count.out + 1)
        self.count.one_out(payload)
        rnd = number if isinstance(number, int) and not isinstance(number, bool) else None
        if rnd is not None and self.settled is not None and rnd <= self.settled:
            return True  # a card of a hand already settled (it came late): counted only
        if self.in_play is None or (rnd is not None and rnd != self.in_play.round):
            self.in_play = InPlay(rnd, demo=self.demo_next)
            self.demo_next = False
        if jumped:  # (the card lost may have been this hand's, or a burn: not known here)
            self.in_play.missing = True
        self.in_play.take(card)
        return True

    def add(self, outcome: OutcomeRecord) -> None:
        if not isinstance(outcome, BaccaratOutcome):
            return
        result, bets = outcome.result, outcome.bets
        self.settled = outcome.round if self.settled is None \
            else max(self.settled, outcome.round)
        if self.in_play is None:
            # its cards did not come as events (a rebuild from the record): counted now, the
            # burns unknown
            cards = len(result.player_cards) + len(result.banker_cards)
            if cards:
                self.count.out += cards
                self.count.exact = False
        elif self.in_play.round is None or self.in_play.round <= outcome.round:
            self.in_play = None
        self.hands.append({
            "round": outcome.round, "status": outcome.status,
            "demo": outcome.demo is True, "winner": result.winner,
            "player_total": result.player_total,
            "banker_total": result.banker_total, "natural": result.natural,
            "player_cards": list(result.player_cards),
            "banker_cards": list(result.banker_cards),
            "player_pair": bets["player_pair"].result == "win",
            "banker_pair": bets["banker_pair"].result == "win",
            "article": given(outcome.article), "shoe": self.shoe})
        try:
            hand = hand_of_record(outcome)
        except RecordError as exc:  # never fatal: the hand stays in the list, off the roads
            log.warning("roads_skipped", round=outcome.round, reason=str(exc))
            return
        if hand is not None:
            self.roads.add(hand)

    def to_dict(self) -> dict[str, Any]:
        return {"game": "baccarat", "shoe": self.shoe, "hands": list(self.hands),
                "roads": self.roads.to_dict(),
                "in_play": None if self.in_play is None else self.in_play.to_dict(),
                "shoe_count": self.count.to_dict()}


def describe(outcome: OutcomeRecord) -> str:
    """A hand in one line: ``#12 banker wins 5-7 natural``."""
    if not isinstance(outcome, BaccaratOutcome):
        return f"#{outcome.round} {outcome.status}"
    rnd, result = outcome.round, outcome.result
    if outcome.demo is True:
        return f"#{rnd} demonstration hand"
    winner = result.winner
    head = "tie" if winner == "tie" else f"{winner} wins"
    natural = " natural" if result.natural else ""
    return f"#{rnd} {head} {result.player_total}-{result.banker_total}{natural}"


def phrase(outcome: OutcomeRecord) -> Phrase:
    """:func:`describe`'s line as the catalogue has it (games/parts/pit.py)."""
    if not isinstance(outcome, BaccaratOutcome):
        return N_("#%(round)s %(status)s"), {"round": outcome.round, "status": outcome.status}
    rnd, result = outcome.round, outcome.result
    if outcome.demo is True:
        return N_("#%(round)s demonstration hand"), {"round": rnd}
    values = {"round": rnd, "player": result.player_total, "banker": result.banker_total}
    if result.winner == "tie":
        return ((N_("#%(round)s tie %(player)s-%(banker)s natural") if result.natural else
                 N_("#%(round)s tie %(player)s-%(banker)s")), values)
    if result.winner == "banker":
        return ((N_("#%(round)s banker wins %(player)s-%(banker)s natural") if result.natural
                 else N_("#%(round)s banker wins %(player)s-%(banker)s")), values)
    return ((N_("#%(round)s player wins %(player)s-%(banker)s natural") if result.natural
             else N_("#%(round)s player wins %(player)s-%(banker)s")), values)


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The scoreboard of the current shoe: grids of the five roads, counts and the ask road."""
    roads = panel.get("roads") or {}
    counts = dict(roads.get("counts") or {})
    counts["hands"] = sum(counts.get(k, 0) for k in ("banker", "player", "tie"))
    hands = [h for h in panel.get("hands") or [] if h.get("shoe") == panel.get("shoe")]
    return {
        "bead_plate": grid("bead_plate", roads.get("bead_plate") or [], BEAD_COLUMNS),
        "big_road": grid("big_road", roads.get("big_road") or [], BIG_ROAD_COLUMNS),
        "derived": [grid(name, roads.get(name) or [], DERIVED_COLUMNS)
                    for name in DERIVED_ROADS],
        "counts": counts,
        "ask": roads.get("ask"),
        "hands": list(reversed(hands))[:12],
        "shoe": panel.get("shoe"),
        "in_play": panel.get("in_play"),
        "shoe_count": shoe_count(panel.get("shoe_count")),
    }


def shoe_count(count: Mapping[str, Any] | None) -> dict[str, Any]:
    """The shoe's count as the page draws it, with the bar's length and the cut card's mark in
    whole percent (SVG geometry: the page's CSP forbids inline styles)."""
    out: dict[str, Any] = dict(count or {})
    pen, cut = out.get("penetration"), out.get("cut_position")
    out["percent"] = None if pen is None else round(pen * 100)
    out["cut_percent"] = None if cut is None else round(cut * 100)
    return out


#: The words of a hand the pit's pages show through ``|tr`` and ``|bet`` (its catalogue).
WORDS = (N_("Baccarat"),  # its title
         N_("banker"), N_("player"), N_("tie"), N_("banker pair"), N_("player pair"))

PIT = PitPart(panel=BaccaratPanel, describe=describe, view=view, package="tabled.games.baccarat",
              events=("shoe_start", "card", "burn", "cut_card", "demo"), stylesheet="pit.css",
              phrase=phrase, tile_template="tile.html", history=history,
              history_segment="shoe_start", history_segment_title="Shoe",
              display_template="display.html", display_view=display.view,
              display_stylesheet="display.css")
