"""msgpack's framing written by hand: the headers of maps and arrays whose entries are
already encoded (appends, map deltas, spliced lists) and the smallest form of an unsigned int
(a blob reference's payload). The bytes are msgpack's own, so that what is spliced together
reads back as if encoded whole."""

from __future__ import annotations


def map_header(count: int) -> bytes:
    """msgpack's header of a map of `count` entries (the entries follow, encoded)."""
    return _header(count, 0x80, b"\xde", b"\xdf")


def array_header(count: int) -> bytes:
    """msgpack's header of an array of `count` items (the items follow, encoded)."""
    return _header(count, 0x90, b"\xdc", b"\xdd")


def _header(count: int, fix: int, wide16: bytes, wide32: bytes) -> bytes:
    if count < 16:
        return bytes([fix | count])
    if count < 0x10000:
        return wide16 + count.to_bytes(2, "big")
    return wide32 + count.to_bytes(4, "big")


def packed_uint(value: int) -> bytes:
    """A non-negative int as msgpack packs it (the smallest form).

    Raises:
        OverflowError: beyond msgpack's 64 bits, as msgpack raises it.
    """
    if value < 0x80:
        return bytes((value,))
    for marker, size in ((0xCC, 1), (0xCD, 2), (0xCE, 4), (0xCF, 8)):
        if value < 1 << (8 * size):
            return bytes((marker,)) + value.to_bytes(size, "big")
    raise OverflowError(f"{value} is beyond msgpack's 64 bits")
