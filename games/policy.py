"""What each game asks of the table service: which devices it needs, what losing one means for an
open round, and what of its event stream may be published when.

Game policy lives with the game (docs/design.md "Layers"): the runtime, the supervisor and the
service ask a table's :class:`GamePolicy` and its :meth:`~tabled.daemon.rules.Table.publication`,
and have no ``if game ==`` and no ``if family ==`` of their own. Devices are named by their *kind*
(:data:`tabled.contract.devices.DEVICE_KINDS`): what a device does at the table, whichever
vendor's family drives it. Pure data and pure functions, like the rest of the rules core.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from tabled.contract.devices import DeviceKind
from tabled.contract.events import Event
from tabled.contract.outcome import Output


class Loss(enum.Enum):
    """What a device of some kind staying away means while a round is open."""

    #: Nothing for the round (a dice sensor away: no roll until it is back, craps Art. 1).
    NOTHING = "nothing"
    #: The round cannot be completed if the device is not back within ``lost_void_after``: the
    #: daemon voids it (a shoe or a baccarat shuffler-dealer, baccarat.art10).
    VOID = "void"
    #: The rules decide from the device's ``device_lost`` fault (Q Poker Art. 11.5: a shuffler
    #: failing while dealing voids the round). A live loss already sends that fault; the daemon
    #: sends it again when the device is not back in time, for a loss it could not see (a
    #: restart with the round open).
    FAULT = "fault"


@dataclass(frozen=True, slots=True)
class GamePolicy:
    """One game's demands on the table service.

    ``needs``: the devices a table of the game must have, each entry a set of kinds of which at
    least one device must be configured (a baccarat table deals from a shoe *or* an automatic
    shuffler-dealer). ``used``: every kind the game can use at all. ``on_loss``: what a kind
    staying away means for an open round (:class:`Loss`; a kind not listed means nothing).
    ``needs_console``: why the rounds need the dealer console, when they do.
    """

    needs: tuple[frozenset[DeviceKind], ...]
    on_loss: Mapping[str, Loss] = field(default_factory=lambda: MappingProxyType({}))
    #: Why the game's rounds cannot be settled without the dealer console (its decisions and
    #: reveal come only from there), citing the article; None when they can.
    needs_console: str | None = None

    @property
    def used(self) -> frozenset[DeviceKind]:
        return frozenset().union(*self.needs)

    def loss(self, kind: str) -> Loss:
        """What ``kind`` staying away means for an open round of this game."""
        return self.on_loss.get(kind, Loss.NOTHING)

    def check_devices(self, kinds: Sequence[str]) -> list[str]:
        """Why a table with devices of ``kinds`` (in config order) cannot play this game; empty
        when it can."""
        problems = [f"needs a {' or a '.join(sorted(alternatives))}"
                    for alternatives in self.needs if not alternatives.intersection(kinds)]
        problems += [f"has no use for a {kind} (it uses {', '.join(sorted(self.used))})"
                     for kind in dict.fromkeys(kinds) if kind not in self.used]
        return problems


class Publication(Protocol):
    """What of a table's event stream may be published when (docs/contract.md: a face-down card is
    withheld until the rules open it). ``admit`` is called with each event after the table was
    fed it, and returns the events to publish now, in order."""

    def admit(self, event: Event, outputs: Sequence[Output]) -> list[Event]: ...


class PublishAll:
    """A game with nothing face down: every event is published as it comes."""

    __slots__ = ()

    def admit(self, event: Event, outputs: Sequence[Output]) -> list[Event]:
        return [event]
