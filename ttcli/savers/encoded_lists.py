"""Stored lists read as msgpack bytes, without decoding their items: how many items an
encoded list holds, its items' bytes, and several lists' items joined into one encoded list
(a chain of appends read in one decode)."""

from __future__ import annotations

from ttcli.errors import CorruptValueError
from ttcli.savers.msgpack_frames import array_header


def _header(data: bytes) -> tuple[int, int] | None:
    """(items, header bytes) of an encoded list, or None if `data` is not one."""
    first = data[:1]
    if not first:
        return None
    if 0x90 <= first[0] <= 0x9F:
        return first[0] & 0x0F, 1
    if first[0] == 0xDC and len(data) >= 3:
        return int.from_bytes(data[1:3], "big"), 3
    if first[0] == 0xDD and len(data) >= 5:
        return int.from_bytes(data[1:5], "big"), 5
    return None


def list_length(data: bytes) -> int | None:
    """How many items the encoded list holds; None if `data` is not a list."""
    found = _header(data)
    return None if found is None else found[0]


def body(data: bytes) -> bytes:
    """A msgpack array without its header."""
    found = _header(data)
    if found is None:
        raise CorruptValueError("expected an encoded list")
    return data[found[1] :]


def joined_lists(parts: list[bytes]) -> bytes | None:
    """One encoded list of the items of several encoded lists, or None if one is not a list
    (then the caller decodes blob by blob and says which one is wrong)."""
    count, bodies = 0, []
    for data in parts:
        found = _header(data)
        if found is None:
            return None
        count += found[0]
        bodies.append(data[found[1] :])
    return array_header(count) + b"".join(bodies)
