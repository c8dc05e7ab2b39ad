"""Dict deltas: a map stored as the keys that changed since the map it replaces.

A state often holds a large map of which a step changes one entry. Like a list append
(blobs.py), the new value is then a blob whose `base_key` is the map it changes and whose
value is a msgpack *map* (an append's value is always an array, which tells them apart):
`{0: {key: value, ...}, 1: [deleted key, ...]}`. Reading applies the deltas to the oldest
map of the chain in order: deleted keys first, then the changed ones (an existing key keeps
its place, a new one goes last, as assigning it in Python does). A delta is written only for
maps with text keys whose order is kept that way, so a map reads back exactly as stored.

A chain gets a full copy at least every DELTA_DEPTH_MAX deltas, so reading a past value
applies few of them; and a delta is written only when it is under half the map.

Finding the keys that changed is what a step costs: the usual step (a node copies the map
and sets a key) encodes the new entries and then the whole map once, at C speed, and compares
it with the stored map spliced with them (`_replaced`); any other change, or a value changed
in place, is found by comparing each entry encoded (`_compared`). Bytes are compared, never
objects, so an equal value of another type (1 for True) is a change.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import accumulate, compress, count
from typing import Any

import msgpack

from ttcli.errors import CorruptValueError
from ttcli.savers import serde
from ttcli.savers.msgpack_frames import array_header, map_header

DELTA_DEPTH_MAX = 32

_TEXT = frozenset({str})


@dataclass(frozen=True, slots=True)
class DictInfo:
    """A stored map, encoded, to compute the next delta from."""

    keys: list[str]
    data: bytes  # the whole map, encoded as `serde.dumps` encodes it
    sizes: list[int]  # each entry's size in `data` (its key and value encoded)
    #: the objects `data` was encoded from: only a hint at which entries a new map left
    #: alone (the new map is encoded whole and compared, see `_replaced`)
    values: tuple[Any, ...]
    depth: int  # deltas since the full copy


def info_of(value: Any, depth: int) -> DictInfo | None:
    """The info of a map with text keys; None for any other value, or one that does not
    encode (encoding it whole names what fails)."""
    found = _entries(value, serde.packer())
    if found is None:
        return None
    keys, entries = found
    return DictInfo(keys, _joined(entries), list(map(len, entries)), tuple(value.values()), depth)


def delta(base: DictInfo, value: Any) -> tuple[bytes, DictInfo] | None:
    """The delta taking the map `base` to `value`, and the new map's info; None unless
    `value` is a map with text keys and the delta is worth storing: under half the map's
    size, on a chain not too long, and rebuilding the same key order."""
    if base.depth + 1 >= DELTA_DEPTH_MAX or type(value) is not dict:
        return None
    packer = serde.packer()
    try:
        made = _replaced(base, value, packer)
    except Exception:  # noqa: BLE001 - any failure: the caller encodes the value whole
        return None
    if made is None:
        made = _compared(base, value, packer)
    if made is None:
        return None
    changed, deleted, info = made
    data = b"".join(
        [
            b"\x82\x00",
            map_header(len(changed)),
            *changed,
            b"\x01",
            array_header(len(deleted)),
            *map(packer.pack, deleted),
        ]
    )
    if 2 * len(data) >= len(info.data):
        return None
    return data, info


#: what a delta holds: the entries that changed (key and value encoded) and the keys
#: deleted; and the new map's info
_Made = tuple[list[bytes], list[str], DictInfo]


def _replaced(base: DictInfo, value: dict[Any, Any], packer: msgpack.Packer) -> _Made | None:
    """The delta of the usual step: `value` holds the objects `base` was encoded from in
    all but a few entries (a node copied the map and set a key).

    Only those few are encoded on their own (with the keys of `base`); then the whole map
    is, at C speed, and must be `base` with just those entries replaced, byte for byte. A
    key renamed, a value changed in place, or replaced by an equal one of another type (1
    for True) makes it differ: then None, as for any other case, and the caller compares
    every entry (`_compared`).
    """
    values, keys, sizes = tuple(value.values()), base.keys, list(base.sizes)
    if len(values) != len(keys):
        return None
    replaced = list(compress(count(), map(operator.is_not, values, base.values)))
    if 2 * len(replaced) > len(keys):
        return None
    old = base.data
    pieces: list[bytes] = []
    changed: list[bytes] = []
    copied = 0  # bytes of `old` in `pieces`
    at, done = len(map_header(len(keys))), 0  # where in `old` entry `done` starts
    for i in replaced:
        start = at + sum(sizes[done:i])
        at, done = start + sizes[i], i + 1
        entry = packer.pack(keys[i]) + packer.pack(values[i])
        if entry != old[start:at]:
            changed.append(entry)
        pieces += [old[copied:start], entry]
        copied, sizes[i] = at, len(entry)
    pieces.append(old[copied:])
    data = packer.pack(value)
    if data != b"".join(pieces):
        return None
    return changed, [], DictInfo(keys, data, sizes, values, base.depth + 1)


def _compared(base: DictInfo, value: dict[Any, Any], packer: msgpack.Packer) -> _Made | None:
    """The delta found by encoding every entry and comparing it with the stored one."""
    found = _entries(value, packer)
    if found is None:
        return None
    keys, entries = found
    starts = list(accumulate(base.sizes, initial=len(map_header(len(base.keys)))))
    old = list(map(base.data.__getitem__, map(slice, starts, starts[1:])))
    deleted: list[str] = []
    if keys == base.keys:  # the usual case, compared at C speed
        changed = list(compress(entries, map(operator.ne, entries, old)))
    else:
        before = dict(zip(base.keys, old, strict=True))
        news = [i for i, (k, e) in enumerate(zip(keys, entries, strict=True)) if before.get(k) != e]
        changed = [entries[i] for i in news]
        new = set(keys)
        deleted = [key for key in base.keys if key not in new]
        merged = dict.fromkeys(base.keys)
        for key in deleted:
            del merged[key]
        merged.update(dict.fromkeys(keys[i] for i in news))
        if list(merged) != keys:
            return None  # the order changed: applying the delta would not rebuild it
    info = DictInfo(
        keys, _joined(entries), list(map(len, entries)), tuple(value.values()), base.depth + 1
    )
    return changed, deleted, info


def _entries(value: Any, packer: msgpack.Packer) -> tuple[list[str], list[bytes]] | None:
    """A map's keys and each of its entries encoded (key and value), if its keys are all
    text; None for any other value, or one that does not encode."""
    if type(value) is not dict or not set(map(type, value)) <= _TEXT:
        return None
    keys = list(value)
    try:
        values = map(packer.pack, value.values())
        return keys, list(map(operator.add, map(packer.pack, keys), values))
    except Exception:  # noqa: BLE001 - any failure: the caller encodes the value whole
        return None


def _joined(entries: list[bytes]) -> bytes:
    return map_header(len(entries)) + b"".join(entries)


def is_delta(data: bytes) -> bool:
    """Whether a blob that has a base is a dict delta (else it is a list append)."""
    return bool(data) and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF))


def apply(value: Any, change: Any, blob_key: int) -> None:
    """Apply a decoded delta to the map it changes, in place."""
    if type(value) is not dict:
        raise CorruptValueError(f"stored value {blob_key} changes a value that is not a map")
    if type(change) is not dict or set(change) != {0, 1}:
        raise CorruptValueError(f"stored value {blob_key} is a map delta of the wrong shape")
    changes, deleted = change[0], change[1]
    if type(changes) is not dict or type(deleted) is not list:
        raise CorruptValueError(f"stored value {blob_key} is a map delta of the wrong shape")
    for key in deleted:
        if value.pop(key, _MISSING) is _MISSING:
            raise CorruptValueError(f"stored value {blob_key} deletes a key its map lacks")
    value.update(changes)


_MISSING = object()
