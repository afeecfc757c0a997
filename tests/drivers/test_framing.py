"""The shared serial frame format: round trips, any chunking, resynchronisation, no crash."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tabled.drivers.framing import (
    CorruptFrame,
    Frame,
    FrameDecoder,
    crc16,
    encode_frame,
)

frames = st.builds(
    Frame, st.integers(0, 255), st.integers(0, 255), st.binary(max_size=255)
)


def decode_all(data: bytes, chunks: list[int] | None = None) -> tuple[list, FrameDecoder]:
    decoder = FrameDecoder()
    out = []
    if chunks is None:
        out.extend(decoder.feed(data))
    else:
        pos = 0
        for size in chunks:
            out.extend(decoder.feed(data[pos:pos + size]))
            pos += size
        out.extend(decoder.feed(data[pos:]))
    return out, decoder


def test_crc_is_ccitt_false() -> None:
    assert crc16(b"123456789") == 0x29B1


def test_byte_level_example_from_the_docs() -> None:
    """docs/protocols/framing.md: seq 7, kind 0x20, payload 'AS' (with a DLE-escaped CRC)."""
    wire = encode_frame(Frame(7, 0x20, b"AS"))
    assert wire[0] == 0x02 and wire[-1] == 0x03
    assert decode_all(wire)[0] == [Frame(7, 0x20, b"AS")]
    # the delimiters inside a payload are escaped, never bare
    wire = encode_frame(Frame(2, 0x10, bytes([0x02, 0x03, 0x10])))
    assert wire.count(0x02) == 1 and wire.count(0x03) == 1
    assert decode_all(wire)[0] == [Frame(2, 0x10, bytes([0x02, 0x03, 0x10]))]


@given(st.lists(frames, max_size=20))
def test_round_trip(fs: list[Frame]) -> None:
    out, decoder = decode_all(b"".join(encode_frame(f) for f in fs))
    assert out == fs
    assert decoder.counters["frames"] == len(fs)


@given(st.lists(frames, max_size=10), st.lists(st.integers(0, 40), max_size=50))
def test_any_chunking_gives_the_same_frames(fs: list[Frame], chunks: list[int]) -> None:
    data = b"".join(encode_frame(f) for f in fs)
    assert decode_all(data, chunks)[0] == fs


@settings(max_examples=500)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_give_frames_or_counted_damage_never_an_exception(data: bytes) -> None:
    out, decoder = decode_all(data)
    damaged = sum(1 for item in out if isinstance(item, CorruptFrame))
    intact = sum(1 for item in out if isinstance(item, Frame))
    assert intact == decoder.counters["frames"]
    assert damaged == sum(v for k, v in decoder.counters.items() if k not in ("frames", "garbage"))


@given(st.lists(frames, min_size=1, max_size=8), st.binary(min_size=1, max_size=30),
       st.data())
def test_garbage_between_frames_resynchronises_and_loses_no_good_frame(
    fs: list[Frame], garbage: bytes, data: st.DataObject
) -> None:
    """Garbage before or between frames is counted and skipped; every intact frame survives."""
    cut = data.draw(st.integers(0, len(fs)))
    wire = b"".join(encode_frame(f) for f in fs[:cut]) + garbage + b"".join(
        encode_frame(f) for f in fs[cut:]
    )
    out, _ = decode_all(wire)
    intact = [item for item in out if isinstance(item, Frame)]
    # garbage may open a bogus frame that swallows nothing but itself: the next STX resyncs
    assert intact[-(len(fs) - cut) or len(intact):] == fs[cut:] or cut == len(fs)
    assert all(f in intact for f in fs[:cut])


def test_damage_is_counted_by_reason() -> None:
    good = encode_frame(Frame(1, 0x20, b"KH"))
    bad_crc = bytearray(good)
    bad_crc[5] ^= 0x01  # the "K" (index 3-4 is the length 2, escaped as DLE 0x22)
    truncated = good[: len(good) // 2]
    out, decoder = decode_all(bytes(bad_crc) + truncated + good + b"\x02\x03" + b"xyz")
    assert [type(x).__name__ for x in out] == ["CorruptFrame", "CorruptFrame", "Frame",
                                               "CorruptFrame"]
    assert decoder.counters["bad_crc"] == 1
    assert decoder.counters["truncated"] == 1
    assert decoder.counters["short"] == 1
    assert decoder.counters["garbage"] == 3


def test_an_endless_frame_is_cut_at_the_size_limit() -> None:
    out, decoder = decode_all(b"\x02" + b"A" * 1000 + encode_frame(Frame(0, 0x11)))
    assert decoder.counters["oversize"] == 1
    assert out[-1] == Frame(0, 0x11)


def test_documented_wire_examples() -> None:
    """docs/protocols/framing.md's byte-level table, byte for byte."""
    from tabled.drivers.link import ACK, HEARTBEAT, NAK, RESET, RESET_ACK

    examples = {
        Frame(0, RESET): "02 00 10 23 00 99 cf 03",
        Frame(0, RESET_ACK, bytes.fromhex("0000b00700000005")):
            "02 00 04 08 00 00 b0 07 00 00 00 05 9c 18 03",
        Frame(0, ACK, bytes([7])): "02 00 01 01 07 f0 26 03",
        Frame(0, NAK, bytes([8])): "02 00 10 22 01 08 58 99 03",
        Frame(0, HEARTBEAT): "02 00 05 00 33 69 03",
        Frame(7, 0x20, b"AS"): "02 07 20 10 22 41 53 7b 9d 03",
        Frame(2, 0x10, bytes([2, 3, 0x10])): "02 10 22 10 30 10 23 10 22 10 23 10 30 33 d4 03",
    }
    for frame, wire in examples.items():
        assert encode_frame(frame).hex(" ") == wire
        assert decode_all(bytes.fromhex(wire))[0] == [frame]
