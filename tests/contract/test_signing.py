"""The signed form shared by the dealer console's commands and the pit's fetch requests
(tabled.contract.signing): what one side signs, the other verifies, and nothing else does."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tabled.contract.signing import canonical, sign, verify
from tabled.daemon.commands import sign as sign_command

KEY = b"0f" * 32
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
BODIES = st.dictionaries(st.text(max_size=8).filter(lambda k: k != "mac"), JSON, max_size=6)


def test_the_mac_is_hmac_sha256_over_the_canonical_json_without_the_mac() -> None:
    body: dict[str, Any] = {"stream": "event", "from": 1, "to": 2, "requester": "pit-a",
                            "nonce": "ab" * 16, "mac": "ignored"}
    unsigned = {k: v for k, v in body.items() if k != "mac"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()
    assert canonical(unsigned) == text
    assert sign(body, KEY) == hmac.new(KEY, text, hashlib.sha256).hexdigest()


@given(BODIES)
def test_a_signed_body_verifies_and_the_console_signs_the_same_way(body: dict[str, Any]) -> None:
    signed = {**body, "mac": sign(body, KEY)}
    assert verify(signed, KEY)
    assert sign_command(body, KEY) == signed  # tabled.daemon.commands.sign: the same MAC
    assert not verify(signed, KEY + b"x")


@given(BODIES, st.text(min_size=1, max_size=8).filter(lambda k: k != "mac"), JSON)
def test_any_change_of_content_fails(body: dict[str, Any], key: str, value: Any) -> None:
    signed = {**body, "mac": sign(body, KEY)}
    changed = {**signed, key: value}
    if changed != signed:
        assert not verify(changed, KEY)


def test_no_mac_a_non_text_mac_or_text_that_is_not_unicode_is_not_verified() -> None:
    assert not verify({"a": 1}, KEY)
    assert not verify({"a": 1, "mac": 7}, KEY)
    assert not verify({"a": 1, "mac": "é" * 64}, KEY)
    assert not verify({"a": "\ud800", "mac": "00" * 32}, KEY)
