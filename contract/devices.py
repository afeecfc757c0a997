"""The kinds of device a table has, as the public contract names them.

A *kind* is what a device does at the table: a card-reading ``shoe`` (cards out of a shoe, one
at a time), a ``shuffler`` (a shuffler-dealer: Q Poker hands three cards at a time, or baccarat
cards one at a time face up) or a ``dice`` sensor (each throw's two faces). A *family* is the
driver of one make of device (its protocol); families are plugins (the ``tabled.drivers``
entry-point group, docs/drivers.md), each declaring the one kind it is, so a vendor's shoe is a
new family of kind ``shoe`` and the games need no change. Pure data.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

DeviceKind: TypeAlias = Literal["shoe", "shuffler", "dice"]

#: Every kind, with what a device of it does.
DEVICE_KINDS: Final[dict[DeviceKind, str]] = {
    "shoe": "a card-reading shoe: each card as it leaves the shoe, burns, the cut card",
    "shuffler": "a shuffler-dealer: shuffles and deals (Q Poker hands, baccarat cards)",
    "dice": "an electronic dice sensor: each throw's two faces, no-rolls, cocked dice",
}
