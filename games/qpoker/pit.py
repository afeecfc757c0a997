"""Q Poker on the pit's pages (games/parts/pit.py): the panel, the tile's line, the view.

This module owns what the floor shows of a Q Poker table: the last rounds with the seats' and
the dealer's hands and the Dobo and Play results, and the voids with their article. It reads
outcome records only — published at the reveal, with the dealer's cards — so it never shows a
card the table has not shown. Pure; it imports only the contract and the games' shared parts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.parts.pit import N_, Phrase, PitPart, given, pays
from tabled.games.qpoker.history import history
from tabled.games.qpoker.record import QPokerOutcome

#: Rounds kept for the panel (and voids).
ROUNDS = 10


@dataclass
class QPokerPanel:
    rounds: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=ROUNDS))
    voids: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=ROUNDS))

    def new_session(self) -> None:
        pass

    def add(self, outcome: OutcomeRecord) -> None:
        # Only a published outcome gets here: the dealer's cards in it were shown at the reveal.
        if not isinstance(outcome, QPokerOutcome):
            return
        result, bets = outcome.result, outcome.bets
        dealer = result.dealer
        seats = {}
        for seat, info in sorted(result.seats.items(), key=lambda kv: int(kv[0])):
            seat_bets = bets.get(seat)
            seats[seat] = {"cards": list(info.cards), "hand": info.hand, "status": info.status,
                           "dobo": None if seat_bets is None else pays(seat_bets.dobo),
                           "play": None if seat_bets is None else pays(seat_bets.play)}
        entry = {"round": outcome.round, "status": outcome.status,
                 "dealer": {"cards": list(dealer.cards), "hand": dealer.hand,
                            "qualifies": dealer.qualifies},
                 "seats": seats}
        if outcome.status == "void":
            entry["void_reason"] = given(outcome.void_reason)
            entry["article"] = given(outcome.article)
            self.voids.append({"round": outcome.round,
                               "reason": given(outcome.void_reason),
                               "article": given(outcome.article)})
        self.rounds.append(entry)

    def event(self, payload: Mapping[str, Any]) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        return {"game": "qpoker", "rounds": list(self.rounds), "voids": list(self.voids)}


def describe(outcome: OutcomeRecord) -> str:
    """A round in one line: ``#12 dealer pair (qualifies), 3 seats`` (``1 seat``)."""
    if not isinstance(outcome, QPokerOutcome):
        return f"#{outcome.round} {outcome.status}"
    dealer = outcome.result.dealer
    qualifies = "qualifies" if dealer.qualifies else "does not qualify"
    seats = len(outcome.result.seats)
    return (f"#{outcome.round} dealer {dealer.hand} ({qualifies}), "
            f"{seats} {'seat' if seats == 1 else 'seats'}")


def phrase(outcome: OutcomeRecord) -> Phrase:
    """:func:`describe`'s line as the catalogue has it (games/parts/pit.py)."""
    if not isinstance(outcome, QPokerOutcome):
        return N_("#%(round)s %(status)s"), {"round": outcome.round, "status": outcome.status}
    dealer, seats = outcome.result.dealer, len(outcome.result.seats)
    values = {"round": outcome.round, "hand": dealer.hand, "seats": seats,
              "qualifies": N_("qualifies") if dealer.qualifies else N_("does not qualify")}
    return ((N_("#%(round)s dealer %(hand)s (%(qualifies)s), %(seats)s seat") if seats == 1
             else N_("#%(round)s dealer %(hand)s (%(qualifies)s), %(seats)s seats")), values)


def view(panel: Mapping[str, Any]) -> dict[str, Any]:
    """The panel as ``panel.html`` lays it out: rounds and voids newest first."""
    return {"rounds": list(reversed(list(panel.get("rounds") or []))),
            "voids": list(reversed(list(panel.get("voids") or [])))}


#: The words of a round the pit's pages show through ``|tr`` and ``|bet`` (its catalogue).
WORDS = (N_("Q Poker"),  # its title
         N_("dealer"), N_("dobo"), N_("play"), N_("straight flush"), N_("three of a kind"),
         N_("straight"), N_("flush"), N_("pair"), N_("high card"))

PIT = PitPart(panel=QPokerPanel, describe=describe, view=view, package="tabled.games.qpoker",
              stylesheet="pit.css",
              phrase=phrase, article_items=frozenset({9, 11}),  # 第九條, 第十一條: （一）…
              history=history)
