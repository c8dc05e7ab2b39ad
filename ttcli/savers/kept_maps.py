"""Maps read from the store kept decoded: reading a past checkpoint reads its map channel's
value two or three times (the channel value, metadata.writes, the next step's pending
write), and a map stored as a delta is its base's map with a few keys changed. The deltas
of kept maps are kept decoded too, so that a map made from a kept one through them (a past
checkpoint read after the history was listed) needs neither a statement nor a decoding.
Values that never change in place (a large text beside a counter) are kept as well, and
handed out as they are.

A kept map is private: it is never handed out, only copies of it; and it is kept only when
those of its values that can change in place (maps and lists) hold immutable scalars alone,
so that a copy one level deep, made at C speed, shares nothing a reader can change. A kept
delta is private too, and as flat: so is every map made from kept maps and kept deltas.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any

from ttcli.savers import serde

KEPT_MAPS_MAX = 16  # full copies, and as many maps made from them
KEPT_ENTRIES_MAX = 1 << 17  # entries of either kind together: memory stays bounded

KEPT_DELTAS_MAX = 4096  # decoded map deltas (a chain's keyframe comes every 32)...
KEPT_DELTA_BYTES_MAX = 1 << 22  # ...of at most this many bytes encoded, together
KEPT_SCALARS_MAX = 16  # immutable values (texts, bytes, numbers)...
KEPT_SCALAR_SIZE_MAX = 1 << 25  # ...of at most this many characters or bytes, together

#: what `KeptMaps.hand_out` gives for a blob it does not keep
NOT_KEPT: Any = object()

#: a decoded map delta: (blob_key, base_key, {0: {key: value}, 1: [deleted key]}, its
#: size encoded)
Delta = tuple[int, int, Any, int]

_CONTAINERS = frozenset({dict, list})
_FLAT = serde.SCALARS | _CONTAINERS


@dataclass(frozen=True, slots=True)
class Kept:
    """A map, and the types of its values (their maps and lists hold scalars only)."""

    value: dict[Any, Any]
    types: frozenset[type]

    def copy(self) -> dict[Any, Any]:
        """A copy of the map sharing nothing that changes in place."""
        value, types = self.value, self.types
        if types <= serde.SCALARS:
            return dict(value)
        if types == {dict}:
            return dict(zip(value, map(dict.copy, value.values())))  # noqa: B905 - one map's
        return unshared(value)


def unshared(value: dict[Any, Any]) -> dict[Any, Any]:
    """A copy of a map with copies of the maps and lists it holds."""
    return {k: v.copy() if type(v) in _CONTAINERS else v for k, v in value.items()}


def map_types(value: Any) -> frozenset[type] | None:
    """The types of a map's values if its keys are immutable scalars and its values are
    flat (see `_flat_types`); else None."""
    if type(value) is not dict or not set(map(type, value)) <= serde.SCALARS:
        return None
    return _flat_types(value.values())


def _flat_types(values: Iterable[Any]) -> frozenset[type] | None:
    """The types of values that are immutable scalars, or maps and lists of them only
    (checked at C speed); None if another value is among them."""
    values = list(values)
    kinds = list(map(type, values))
    types = frozenset(kinds)
    if types <= serde.SCALARS:
        return types
    if not types <= _FLAT:
        return None
    dicts = list(compress(values, map(operator.is_, kinds, repeat(dict))))
    inner = chain(
        chain.from_iterable(compress(values, map(operator.is_, kinds, repeat(list)))),
        chain.from_iterable(map(dict.keys, dicts)),
        chain.from_iterable(map(dict.values, dicts)),
    )
    return types if set(map(type, inner)) <= serde.SCALARS else None


class KeptMaps:
    """The maps of the blobs read last, by blob key (least recently used goes first).

    Full copies are kept apart from the maps made from them by applying deltas (which
    share their values, so cost little): reading a past checkpoint keeps two of the latter,
    and they are not to push out the full copies that make the next read cheap.
    """

    def __init__(self) -> None:
        self._full = _Kept()
        self._derived = _Kept()
        self._scalars: OrderedDict[int, Any] = OrderedDict()
        self._scalar_size = 0
        self._deltas: OrderedDict[int, Delta] = OrderedDict()
        self._delta_bytes = 0

    def get(self, blob_key: int) -> Kept | None:
        return self._derived.get(blob_key) or self._full.get(blob_key)

    def made_of(self, blob_key: int) -> tuple[Kept, list[Delta]] | None:
        """The newest kept map the blob's map is made from through kept deltas, and those
        deltas (oldest first); None if the blob is no kept delta, or its chain leaves them."""
        deltas: list[Delta] = []
        key = blob_key
        while (delta := self._deltas.get(key)) is not None:
            self._deltas.move_to_end(key)
            deltas.append(delta)
            key = delta[1]
            kept = self.get(key)
            if kept is not None:
                return kept, deltas[::-1]
        return None

    def newest(self, rows: Sequence[Any]) -> tuple[Kept | None, list[Any]]:
        """The newest map kept on a chain of blob rows (key first, oldest first), and the
        rows after it; None and all of them if none is kept."""
        for index in range(len(rows) - 1, -1, -1):
            kept = self.get(rows[index][0])
            if kept is not None:
                return kept, list(rows[index + 1 :])
        return None, list(rows)

    def keep_read(
        self,
        blob_key: int,
        value: Any,
        types: frozenset[type] | None,
        *,
        full: bool,
        shares: bool = False,
        deltas: Sequence[Delta] = (),
    ) -> Any:
        """What the reader of a map just read gets: a copy, if the map may be kept (with the
        `deltas` it was made with, then); else the map, copied as deep as it shares values
        with a kept map (`shares`)."""
        kept = self.keep(blob_key, value, types, full=full)
        if kept is None:
            return unshared(value) if shares else value
        self.keep_deltas(deltas)
        return kept.copy()

    def keep_deltas(self, deltas: Iterable[Delta]) -> None:
        """Keep the decoded deltas a kept map was made with, those whose values are flat."""
        for delta in deltas:
            blob_key, base_key, change, size = delta
            # each on an older blob (so that walking them ends), and flat
            if base_key >= blob_key or blob_key in self._deltas or map_types(change[0]) is None:
                continue
            self._deltas[blob_key] = delta
            self._delta_bytes += size
            while len(self._deltas) > KEPT_DELTAS_MAX or self._delta_bytes > KEPT_DELTA_BYTES_MAX:
                self._delta_bytes -= self._deltas.popitem(last=False)[1][3]

    def hand_out(self, blob_key: int) -> Any:
        """What a reader of the blob gets, if it is kept (a copy of its map, or its immutable
        value itself); else NOT_KEPT."""
        kept = self.get(blob_key)
        if kept is not None:
            return kept.copy()
        value = self._scalars.get(blob_key, NOT_KEPT)
        if value is not NOT_KEPT:
            self._scalars.move_to_end(blob_key)
        return value

    def keep_scalar(self, blob_key: int, value: Any) -> None:
        """Keep a blob's value if it never changes in place (blobs never change)."""
        if blob_key in self._scalars or type(value) not in serde.SCALARS:
            return
        if _size(value) > KEPT_SCALAR_SIZE_MAX:
            return
        self._scalars[blob_key] = value
        self._scalar_size += _size(value)
        while len(self._scalars) > KEPT_SCALARS_MAX or self._scalar_size > KEPT_SCALAR_SIZE_MAX:
            self._scalar_size -= _size(self._scalars.popitem(last=False)[1])

    def keep(
        self, blob_key: int, value: Any, types: frozenset[type] | None, *, full: bool
    ) -> Kept | None:
        """Keep a map no one else holds (it must not change after), if it is flat (see
        `_flat_types`) and not too large; `full` if it was decoded whole."""
        if types is None or type(value) is not dict or len(value) > KEPT_ENTRIES_MAX:
            return None
        return (self._full if full else self._derived).keep(blob_key, Kept(value, types))

    def clear(self) -> None:
        self._full.clear()
        self._derived.clear()
        self._scalars.clear()
        self._scalar_size = 0
        self._deltas.clear()
        self._delta_bytes = 0


def _size(scalar: Any) -> int:
    return len(scalar) if type(scalar) in (str, bytes) else 1


class _Kept:
    def __init__(self) -> None:
        self._maps: OrderedDict[int, Kept] = OrderedDict()
        self._entries = 0

    def get(self, blob_key: int) -> Kept | None:
        kept = self._maps.get(blob_key)
        if kept is not None:
            self._maps.move_to_end(blob_key)
        return kept

    def keep(self, blob_key: int, kept: Kept) -> Kept:
        gone = self._maps.pop(blob_key, None)
        self._entries += len(kept.value) - (0 if gone is None else len(gone.value))
        self._maps[blob_key] = kept
        while len(self._maps) > KEPT_MAPS_MAX or self._entries > KEPT_ENTRIES_MAX:
            _, dropped = self._maps.popitem(last=False)
            self._entries -= len(dropped.value)
        return kept

    def clear(self) -> None:
        self._maps.clear()
        self._entries = 0
