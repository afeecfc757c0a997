"""The stable fault codes of ``fault`` events: one registry for drivers, rules core and daemon.

A code is part of the public stream (consumers alarm on it), so codes are only ever added. The
rules core decides what a fault means for a round (e.g. ``qpoker.art11.5``); this module only
names and describes them. Pure data, no I/O.
"""

from __future__ import annotations

from typing import Final

# Any device / the daemon itself.
DEVICE_LOST: Final = "device_lost"  # the link to a device is gone (unplugged, port closed)
LINK_ERRORS: Final = "link_errors"  # a burst of framing/link errors on a device
JOURNAL_FAILURE: Final = "journal_failure"  # the journal could not make a record durable
#: The daemon could not apply an event (an exception on the event path): journaled as an input,
#: so that the rules core voids what it can no longer follow and a replay does the same.
EVENT_NOT_APPLIED: Final = "event_not_applied"
#: The device at a configured port is not the configured one (another family, another serial
#: number, or frames its driver cannot take as its family's): refused, nothing acknowledged.
WRONG_DEVICE: Final = "wrong_device"

# Shuffler-dealer.
SHUFFLER_JAM: Final = "shuffler_jam"
SHUFFLER_FAILURE: Final = "shuffler_failure"
SHUFFLER_DOOR_OPEN: Final = "shuffler_door_open"
DECK_COUNT: Final = "deck_count"  # a short or long deck at the deck-count check
CARD_EXPOSED: Final = "card_exposed"  # the machine saw a card turned face up while dealing

# Card-reading shoe.
UNREADABLE_CARD: Final = "unreadable_card"
SHOE_EMPTY: Final = "shoe_empty"
SHOE_SENSOR_DIRTY: Final = "shoe_sensor_dirty"  # the card reader needs cleaning; reads may fail

# Electronic dice sensor.
SENSOR_FAULT: Final = "sensor_fault"
COCKED_DIE: Final = "cocked_die"  # informational: read by the face most clearly up (Art. 1)

DESCRIPTIONS: Final[dict[str, str]] = {
    DEVICE_LOST: "the device's link is gone (unplugged, port closed, USB error)",
    LINK_ERRORS: "framing or link errors from the device (bad checksum, NAK, timeout, resync)",
    JOURNAL_FAILURE: "the journal could not make a record durable (disk full or unwritable)",
    EVENT_NOT_APPLIED: "the daemon could not apply an event; the round it belonged to is void",
    WRONG_DEVICE: "the device at the configured port is not the configured device (another "
                  "family or serial number, or frames its driver cannot decode): refused, none "
                  "of its messages acknowledged, so its own host still gets them",
    SHUFFLER_JAM: "the shuffler-dealer jammed",
    SHUFFLER_FAILURE: "the shuffler-dealer reported a failure",
    SHUFFLER_DOOR_OPEN: "the shuffler-dealer's door was opened",
    DECK_COUNT: "the deck-count check found a short or long deck",
    CARD_EXPOSED: "a card was turned face up while dealing",
    UNREADABLE_CARD: "the shoe could not read a card that left it",
    SHOE_EMPTY: "the shoe ran out of cards",
    SHOE_SENSOR_DIRTY: "the shoe's card reader is dirty and needs cleaning",
    SENSOR_FAULT: "the dice sensor reported a fault",
    COCKED_DIE: "a die did not lie flat; read by the face most clearly up",
}

#: Faults that mean the shuffling machine failed: while dealing, they void a Q Poker round
#: (qpoker.art11.5). ``device_lost`` counts when the lost device is the shuffler.
SHUFFLER_FAILURES: Final = frozenset({SHUFFLER_JAM, SHUFFLER_FAILURE, SHUFFLER_DOOR_OPEN})

#: The field, true, of a ``void`` the daemon raises because the device dealing a round stayed
#: lost longer than ``lost_void_after``. Nobody at the table pressed anything: the dealer may
#: still be dealing that round, so the cards that come back belong to it, not to the next.
VOID_DEVICE_LOST: Final = "device_lost"
#: The fields of an ``event_not_applied`` fault that name the type of the event not applied and,
#: for a ``fault``, its code (never a card: the event may have been a face-down one).
NOT_APPLIED_TYPE: Final = "event_type"
NOT_APPLIED_CODE: Final = "event_code"
