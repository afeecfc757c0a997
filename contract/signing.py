"""Signed JSON messages: the HMAC-SHA256 a dealer console's command and a pit's fetch request carry.

Owns the canonical form of a signed body and its MAC, and nothing else: ``mac`` is HMAC-SHA256,
with a key the two ends share, over the canonical JSON of every other field (sorted keys, no
spaces, UTF-8 as it is), in hex. What a message means, how fresh it must be and whether its
nonce was used are the receiver's. Pure; never logs or raises with a key or a body in it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes a MAC is computed over: ``body`` as JSON with sorted keys and no spaces,
    UTF-8 unescaped (``ensure_ascii=False``). Raises UnicodeEncodeError for text that is not
    valid Unicode (a lone surrogate spelt with a JSON ``\\u`` escape)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(body: dict[str, Any], key: bytes) -> str:
    """The hex MAC of ``body`` (its ``mac`` field, if any, left out)."""
    unsigned = {k: v for k, v in body.items() if k != "mac"}
    return hmac.new(key, canonical(unsigned), hashlib.sha256).hexdigest()


def verify(body: dict[str, Any], key: bytes) -> bool:
    """Whether ``body["mac"]`` is the MAC of the rest of ``body`` (compared in constant time).
    No ``mac``, one that is not ASCII text, or content that is not valid Unicode: False."""
    mac = body.get("mac")
    # compare_digest takes ASCII text only; a MAC is hex, so anything else is no MAC.
    if not isinstance(mac, str) or not mac.isascii():
        return False
    try:
        expected = sign(body, key)
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(mac, expected)
