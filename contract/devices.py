"""The kinds of device a table has, as the public contract names them.

A *kind* is what a device does at the table: a card-reading ``shoe`` (cards out of a shoe, one
at a time), a ``shuffler`` (a shuffler-dealer: Q Poker hands three cards at a time, or baccarat
cards one at a time face up) or a ``dice`` sensor (each throw's two faces). A *family* is the
driver of one make of device (its protocol); families are plugins (the ``tabled.drivers``
entry-point group, docs/drivers.md), each declaring the one kind it is, so a vendor's shoe is a
new family of kind ``shoe`` and the games need no change. A device's *state* is what its
``…/device/<id>/status`` says (:class:`DeviceState`, docs/mqtt.md), the daemon publishing and
the pit reading it through this one type. Pure data.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal, TypeAlias

from tabled.contract import faults

DeviceKind: TypeAlias = Literal["shoe", "shuffler", "dice"]

#: Every kind, with what a device of it does.
DEVICE_KINDS: Final[dict[DeviceKind, str]] = {
    "shoe": "a card-reading shoe: each card as it leaves the shoe, burns, the cut card",
    "shuffler": "a shuffler-dealer: shuffles and deals (hands of three, or cards one at a time)",
    "dice": "an electronic dice sensor: each throw's two faces, no-rolls, cocked dice",
}


class DeviceState(StrEnum):
    """The ``state`` of a ``…/device/<id>/status``: on the wire, the member's value. States are
    only ever added; a reader meeting one it does not know (a newer daemon) keeps it as it is."""

    #: the daemon has just started; nothing tried yet
    STARTING = "starting"
    #: a device with a ``match``: not plugged in (discovery has not seen it)
    WAITING = "waiting"
    #: the first attempt to open it
    CONNECTING = "connecting"
    #: its link is up
    CONNECTED = "connected"
    #: it was connected, and is no longer
    LOST = "lost"
    #: it cannot be opened or does not come up (the daemon keeps trying); with
    #: ``reason`` :data:`REASON_WRONG_DEVICE` for a device that is not the configured one
    UNAVAILABLE = "unavailable"
    #: the daemon stopped cleanly (``reason`` :data:`REASON_DAEMON_STOPPING`)
    STOPPED = "stopped"


#: The ``reason`` of an ``unavailable`` status for a device that is not the configured one
#: (another family, another serial number, frames its driver cannot decode): the same word as
#: its fault's code.
REASON_WRONG_DEVICE: Final = faults.WRONG_DEVICE
#: The ``reason`` of ``stopped``.
REASON_DAEMON_STOPPING: Final = "daemon stopping"
