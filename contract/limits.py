"""The contract's ranges: how large a number, which ids, how deep a payload (docs/mqtt.md,
"Sequence numbers").

Pure data and two small checks. The daemon never publishes outside these ranges; a consumer (the
pit) refuses a message outside them as malformed. Nothing here reads, writes or decides more.
"""

from __future__ import annotations

import re
from typing import Final

#: The largest integer the contract numbers: ``table_seq``, ``round``, a device's ``seq``, and
#: any integer of a payload lies within ``-MAX_SEQ … MAX_SEQ`` (the numbers within
#: ``0 … MAX_SEQ``). 2^53 − 1: every JSON reader holds it exactly (I-JSON, RFC 7493), and every
#: SQL database's 64-bit integer column keeps it.
MAX_SEQ: Final = 2**53 - 1

#: Site, table and device ids: one to 64 letters, digits, ``_``, ``-`` or ``.``, beginning with
#: a letter or a digit. Each is an MQTT topic level and a URL path segment: no ``/``, ``+``,
#: ``#``, no ``.``/``..``, nothing a page must escape.
ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_ID: Final = re.compile(ID_PATTERN.replace("$", r"\Z"))
#: What :data:`ID_PATTERN` allows, for a person.
ID_RULE: Final = ("1 to 64 letters, digits, '_', '-' or '.', beginning with a letter or a "
                  "digit")
#: The table id of the pit's own topics (``<prefix>/<site>/pit/alert``): never a table's.
RESERVED_TABLE: Final = "pit"

#: A payload nests objects and arrays at most this deep (an outcome needs four).
MAX_DEPTH: Final = 32


def valid_id(value: object) -> bool:
    """Whether ``value`` is a site, table or device id (:data:`ID_PATTERN`)."""
    return isinstance(value, str) and _ID.match(value) is not None


def valid_seq(value: object) -> bool:
    """Whether ``value`` is a number the contract gives: an integer in ``0 … MAX_SEQ``."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value <= MAX_SEQ)
