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
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import compress
from typing import Any

from ttcli.errors import CorruptValueError
from ttcli.savers import serde

DELTA_DEPTH_MAX = 32

_TEXT = frozenset({str})


@dataclass(frozen=True, slots=True)
class DictInfo:
    """A stored map as its entries encoded one by one, to compute the next delta from."""

    keys: list[str]
    key_data: list[bytes]  # each key encoded
    value_data: list[bytes]  # each value encoded
    depth: int  # deltas since the full copy
    size: int  # bytes of its entries encoded

    def data(self) -> bytes:
        """The whole map, encoded as `serde.dumps` encodes it."""
        return serde.map_header(len(self.keys)) + b"".join(
            map(operator.add, self.key_data, self.value_data)
        )


def encoded(value: Any) -> tuple[list[str], list[bytes]] | None:
    """A map's keys and each of its values encoded, if its keys are all text; None for any
    other value, or one that does not encode (encoding it whole names what fails)."""
    if type(value) is not dict or not set(map(type, value)) <= _TEXT:
        return None
    try:
        return list(value), list(map(serde.packer().pack, value.values()))
    except Exception:  # noqa: BLE001 - any failure: the caller encodes the value whole
        return None


def info_of(value: Any, depth: int) -> DictInfo | None:
    found = encoded(value)
    if found is None:
        return None
    keys, values = found
    key_data = list(map(serde.packer().pack, keys))
    return DictInfo(keys, key_data, values, depth, _size(key_data) + _size(values))


def delta(base: DictInfo, keys: list[str], values: list[bytes]) -> tuple[bytes, DictInfo] | None:
    """The delta taking the map `base` to the map of `keys` and `values` (encoded), and the
    new map's info; None unless the delta is worth storing: under half the map's size, on a
    chain not too long, and rebuilding the same key order."""
    if base.depth + 1 >= DELTA_DEPTH_MAX:
        return None
    deleted: list[str] = []
    if keys == base.keys:  # the usual case, compared at C speed
        key_data = base.key_data
        changed = list(compress(range(len(keys)), map(operator.ne, values, base.value_data)))
        before = base.value_data
        size = base.size + sum(len(values[i]) - len(before[i]) for i in changed)
    else:
        key_data = list(map(serde.packer().pack, keys))
        old = dict(zip(base.keys, base.value_data, strict=True))
        changed = [i for i, (k, v) in enumerate(zip(keys, values, strict=True)) if old.get(k) != v]
        new = set(keys)
        deleted = [key for key in base.keys if key not in new]
        merged = dict.fromkeys(base.keys)
        for key in deleted:
            del merged[key]
        merged.update(dict.fromkeys(keys[i] for i in changed))
        if list(merged) != keys:
            return None  # the order changed: applying the delta would not rebuild it
        size = _size(key_data) + _size(values)
    packer = serde.packer()
    data = b"".join(
        [
            b"\x82\x00",
            serde.map_header(len(changed)),
            *(key_data[i] + values[i] for i in changed),
            b"\x01",
            serde.array_header(len(deleted)),
            *map(packer.pack, deleted),
        ]
    )
    if 2 * len(data) >= size:
        return None
    return data, DictInfo(keys, key_data, values, base.depth + 1, size)


def _size(parts: list[bytes]) -> int:
    return sum(map(len, parts))


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
