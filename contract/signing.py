"""HMAC-SHA256 signatures of JSON requests: the dealer console's commands and the pit's fetch
requests (docs/mqtt.md), signed and checked the same way on both sides.

Owns the canonical form (sorted keys, no spaces, UTF-8) and the MAC over it; never reads a key
file or a clock. ``mac`` is the hex HMAC-SHA256, with the shared key, over the canonical JSON of
every field of the body but ``mac`` itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes that are signed: ``body`` as JSON with sorted keys and no spaces, UTF-8."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(body: dict[str, Any], key: bytes) -> str:
    """The ``mac`` of ``body`` (its own ``mac`` field, if any, left out)."""
    unsigned = {k: v for k, v in body.items() if k != "mac"}
    return hmac.new(key, canonical(unsigned), hashlib.sha256).hexdigest()


def verify(body: dict[str, Any], key: bytes) -> bool:
    """Whether ``body["mac"]`` is the MAC of the rest of ``body`` under ``key``."""
    mac = body.get("mac")
    if not isinstance(mac, str):
        return False
    return hmac.compare_digest(mac, sign(body, key))
