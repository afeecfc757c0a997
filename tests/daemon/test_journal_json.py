"""The journal's row bodies are encoded with msgspec (daemon/journal.py ``_dumps``): for every
value the contract has (strings of any characters, integers, booleans, null, lists, objects) the
text is the one ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` gave before, so a
row written now reads, hashes and publishes like a row written then."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tabled.daemon.journal import _dumps, _message

scalars = st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | \
    st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
    st.text(), inner, max_size=5), max_leaves=30)


@given(st.dictionaries(st.text(), values, max_size=8))
def test_a_body_is_the_text_json_dumps_gave(body: dict[str, Any]) -> None:
    assert _dumps(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def test_the_characters_json_escapes_and_those_it_leaves() -> None:
    body = {"text": '"\\\n\r\t\b\f\x00\x1f\x7f\u2028é中🂡', "n": -1, "ok": True, "none": None}
    assert _dumps(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    assert json.loads(_dumps(body)) == body


@given(st.dictionaries(st.text().filter(lambda k: k not in ("round", "table_seq")), values,
                       max_size=8),
       st.none() | st.integers(min_value=0, max_value=2**63 - 1),
       st.integers(min_value=0, max_value=2**63 - 1))
def test_an_input_published_as_itself_is_the_message_the_copy_was(
        body: dict[str, Any], round_no: int | None, seq: int) -> None:
    """Format 4 keeps an input published as itself in one row and makes its message from the
    row's columns: the text a second row held in the formats before, to the byte."""
    added = {"table_seq": seq} if round_no is None else {"round": round_no, "table_seq": seq}
    assert _message(_dumps(body), round_no, seq) == _dumps({**body, **added})
