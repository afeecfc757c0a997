"""A game's table as the table service sees it: the ``Table`` protocol, and the published body.

Nothing in this package does I/O, reads a clock, logs, or draws a random number: the daemon,
``tabled replay`` and the tests run the very same code over the same events and get the same
outcomes. Every void and payout names the article that decides it (``qpoker.art11.5``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from tabled.contract.events import FOR_A_ROUND, Event, Withheld, event_to_dict
from tabled.contract.outcome import Game, Notice, Outcome, Output
from tabled.games.options import GameOptions
from tabled.games.policy import GamePolicy, Loss, Publication, PublishAll


class Table(Protocol):
    """One table's game state. ``feed`` takes events in order and returns what they decided;
    ``policy`` and :meth:`publication` are the game's demands on the table service."""

    game: Game
    policy: ClassVar[GamePolicy]

    @property
    def options(self) -> GameOptions:
        """The table's regulated options (read-only, so a game may narrow the type)."""
        ...

    def feed(self, event: Event) -> list[Output]:
        """Apply one event; return the outcomes it completed and notices for what it declined."""
        ...

    @property
    def round_open(self) -> bool:
        """A round has begun (a card, a hand or a round_start) and has no outcome yet."""
        ...

    @property
    def next_round(self) -> int:
        """The number the next outcome will carry."""
        ...

    def publication(self) -> Publication:
        """A new publication of this table's stream, following its state from here on."""
        ...

    def round_of(self, event: Event) -> int | None:
        """The number of the round ``event`` belongs to, were it fed now: the number that
        round's outcome carries (or carried); None when the table cannot tell. A dealer's
        command naming another round (``round`` on a decision, reveal or void) is declined."""
        ...


def published_body(item: Event, event: Event, own: int | None, opened: int,
                   event_body: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is published on ``…/event`` of ``item`` — ``event`` itself, its ``withheld``
    placeholder, or a card the rules open now (Q Poker's :class:`Publication`) — with
    ``"round"``, the round it belongs to, from which a dealer console learns the round its
    commands are for (docs/mqtt.md). ``event``'s round is ``own`` (``table.round_of(event)``
    before it was fed; none when the table cannot tell); a card opened now belongs to the
    round that was open when ``event`` came (``opened``: ``table.next_round`` then). A command
    (:data:`~tabled.contract.events.FOR_A_ROUND`) keeps its own ``round``, or has none: added
    there, it would be checked by a replay of the published stream. The rules read no
    ``round`` on other events, so the published stream replays as before. ``event_body``,
    ``event``'s own JSON object if the caller has it, saves encoding it again."""
    body = (dict(event_body) if item is event and event_body is not None
            else event_to_dict(item))
    number = added_round(item, event, own, opened)
    if number is not None:
        body["round"] = number
    return body


def added_round(item: Event, event: Event, own: int | None, opened: int) -> int | None:
    """The ``round`` :func:`published_body` adds to ``item``'s JSON object (None: none)."""
    number = own if item is event or isinstance(item, Withheld) else opened
    return number if number is not None and item.TYPE not in FOR_A_ROUND else None


__all__ = [
    "Game", "GamePolicy", "Loss", "Notice", "Outcome", "Output", "Publication",
    "PublishAll", "Table", "added_round", "published_body",
]
