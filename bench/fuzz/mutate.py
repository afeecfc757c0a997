"""Mutators of the fuzzing campaign: damage done to valid inputs, driven by one seeded RNG.

Owns the ways an input is spoiled: bytes (bit flips, truncation, splicing, insertion of frame
delimiters and other special bytes, random runs) and JSON values (fields dropped, retyped,
renamed, nested). Every function takes the case's ``random.Random`` and nothing else that
varies, so a case seed reproduces the very same input. It must never import the code under
test: what a mutation means is the target's business.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: Bytes that mean something to one of the decoders: STX, ETX, DLE of the serial framing, the
#: link's kinds, zero, all-ones, and the JSON punctuation of the text decoders.
SPECIAL_BYTES = (0x02, 0x03, 0x10, 0x23, 0x01, 0x04, 0x05, 0x00, 0xFF, 0x7F, 0x80,
                 *b'{}[]":,\\\n')


def random_bytes(rng: random.Random, max_len: int = 300) -> bytes:
    """Fresh noise: mostly short, now and then long, often rich in special bytes."""
    size = rng.choice((rng.randint(0, 8), rng.randint(0, 64), rng.randint(0, max_len)))
    if rng.random() < 0.5:
        return rng.randbytes(size)
    return bytes(rng.choice(SPECIAL_BYTES) if rng.random() < 0.3 else rng.getrandbits(8)
                 for _ in range(size))


def _span(rng: random.Random, size: int) -> tuple[int, int]:
    """A random ``[start, end)`` inside ``size`` bytes, short more often than long."""
    start = rng.randint(0, size)
    length = rng.choice((1, 2, 4, rng.randint(0, max(size - start, 0))))
    return start, min(size, start + length)


def _flip_bit(rng: random.Random, data: bytearray, _other: bytes) -> None:
    if data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)


def _set_byte(rng: random.Random, data: bytearray, _other: bytes) -> None:
    if data:
        data[rng.randrange(len(data))] = (rng.choice(SPECIAL_BYTES) if rng.random() < 0.5
                                          else rng.getrandbits(8))


def _insert_delimiter(rng: random.Random, data: bytearray, _other: bytes) -> None:
    at = rng.randint(0, len(data))
    data[at:at] = bytes(rng.choice(SPECIAL_BYTES) for _ in range(rng.choice((1, 1, 2, 3))))


def _insert_random(rng: random.Random, data: bytearray, _other: bytes) -> None:
    at = rng.randint(0, len(data))
    data[at:at] = rng.randbytes(rng.randint(1, 16))


def _delete(rng: random.Random, data: bytearray, _other: bytes) -> None:
    start, end = _span(rng, len(data))
    del data[start:end]


def _truncate(rng: random.Random, data: bytearray, _other: bytes) -> None:
    cut = rng.randint(0, len(data))
    if rng.random() < 0.5:
        del data[cut:]
    else:
        del data[:cut]


def _duplicate(rng: random.Random, data: bytearray, _other: bytes) -> None:
    start, end = _span(rng, len(data))
    at = rng.randint(0, len(data))
    data[at:at] = data[start:end]


def _splice(rng: random.Random, data: bytearray, other: bytes) -> None:
    """Our head on another input's tail, or another input's piece dropped in."""
    if rng.random() < 0.5:
        data[rng.randint(0, len(data)):] = other[rng.randint(0, len(other)):]
    else:
        start, end = _span(rng, len(other))
        at = rng.randint(0, len(data))
        data[at:at] = other[start:end]


def _arith(rng: random.Random, data: bytearray, _other: bytes) -> None:
    """Off by a little: the mutation that walks a length or a counter past its edge."""
    if data:
        at = rng.randrange(len(data))
        data[at] = (data[at] + rng.choice((-2, -1, 1, 2, 16, -16))) & 0xFF


BYTE_MUTATIONS: tuple[Callable[[random.Random, bytearray, bytes], None], ...] = (
    _flip_bit, _set_byte, _insert_delimiter, _insert_random, _delete, _truncate, _duplicate,
    _splice, _arith,
)


def mutate_bytes(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    """``data`` with one to a few stacked mutations; splices take from ``corpus``."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5))):
        rng.choice(BYTE_MUTATIONS)(rng, out, rng.choice(corpus) if corpus else b"")
    return bytes(out)


def chunks(rng: random.Random, data: bytes) -> list[bytes]:
    """``data`` cut at random places: whole, byte by byte, or in random pieces."""
    style = rng.random()
    if style < 0.2 or not data:
        return [data]
    if style < 0.35:
        return [data[i:i + 1] for i in range(len(data))]
    pieces, at = [], 0
    while at < len(data):
        step = rng.randint(1, max(1, min(len(data) - at, rng.choice((2, 7, 40)))))
        pieces.append(data[at:at + step])
        at += step
    return pieces


# -- JSON values ------------------------------------------------------------------------------

#: Values of every JSON type, and the edges the parsers must refuse or keep faithfully.
JSON_ODDITIES: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 2, 3, 4, 6, 7, 13, 255, 256, 2**31, 2**63, -(2**63), 10**30,
    0.0, 1.5, -0.0, float("nan"), float("inf"), "", "dealer", "AS", "TD", "ZZ", "as", "A",
    "10H", "x" * 300, "\u00e9", "\ud800", "\x00", [], [1], [1, 2], [3, 4, 5], ["AS", "KD", "2C"],
    ["AS", "AS", "AS"], {}, {"v": 1}, [[[]]], {"a": {"b": [None]}},
)


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: an oddity, or a small random list or object."""
    draw = rng.random()
    if draw < 0.7 or depth > 3:
        return rng.choice(JSON_ODDITIES)
    if draw < 0.85:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(("v", "type", "seat", "card", "x", "")): json_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def mutate_json(rng: random.Random, value: Any, keys: Sequence[str], donors: Sequence[Any],
                depth: int = 0) -> Any:
    """``value`` (a decoded JSON value, not changed in place) with one structural mutation:
    a field retyped, dropped, added or taken from a ``donors`` value, or an item of a list
    changed; ``keys`` are field names worth adding (the schema's own)."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        out = dict(value)
        key = rng.choice(list(out))
        draw = rng.random()
        if draw < 0.3:
            out[key] = json_value(rng)
        elif draw < 0.45:
            del out[key]
        elif draw < 0.6:
            out[rng.choice(keys)] = json_value(rng)
        elif draw < 0.75 and donors:
            donor = rng.choice(donors)
            if isinstance(donor, dict) and donor:
                donor_key = rng.choice(list(donor))
                out[donor_key] = donor[donor_key]
        else:
            out[key] = mutate_json(rng, out[key], keys, donors, depth + 1)
        return out
    if isinstance(value, list) and value and rng.random() < 0.8:
        out_list = list(value)
        at = rng.randrange(len(out_list))
        draw = rng.random()
        if draw < 0.4:
            out_list[at] = mutate_json(rng, out_list[at], keys, donors, depth + 1)
        elif draw < 0.6:
            del out_list[at]
        elif draw < 0.8:
            out_list.insert(at, rng.choice(out_list))
        else:
            out_list.insert(at, json_value(rng))
        return out_list
    if rng.random() < 0.05:
        return [value] if rng.random() < 0.5 else {"v": 1, "x": value}
    return json_value(rng)


def mutate_sequence(rng: random.Random, items: Sequence[T], pool: Sequence[T]) -> list[T]:
    """``items`` reordered and damaged as a sequence: an item moved, swapped with its
    neighbour, dropped, repeated, or one from ``pool`` inserted."""
    out = list(items)
    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        draw = rng.random()
        if not out or draw < 0.3:
            if pool:
                out.insert(rng.randint(0, len(out)), rng.choice(pool))
            continue
        at = rng.randrange(len(out))
        if draw < 0.45:
            out.insert(rng.randint(0, len(out) - 1), out.pop(at))
        elif draw < 0.6 and at + 1 < len(out):
            out[at], out[at + 1] = out[at + 1], out[at]
        elif draw < 0.8:
            del out[at]
        else:
            out.insert(at, out[at])
    return out
