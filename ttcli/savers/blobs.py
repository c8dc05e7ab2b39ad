"""Values stored once per change: inline values, blobs, list appends and records.

Wherever the format holds a value (a channel of a checkpoint, a pending write, a node's entry
in metadata.writes) it holds an *entry*: the value itself when it is small, a `Ref` to a blob,
or a small map whose large values are `Ref`s (an inline record). Three shapes keep the file
growing with change rather than with steps:

* **reuse**: an unchanged channel keeps its parent's entry;
* **append**: a list that only grew is a blob of the new items whose `base_key` points at the
  list it extends; its items are a `Ref` to an equal blob when there is one (the pending write
  that added them);
* **dict delta**: a map that changed a few keys is a blob of those keys whose `base_key`
  points at the map it changes (dict_delta.py);
* **record**: a map's large entries are blobs of their own, so an input dict, a node's output
  and the pending write carrying the same list share one copy.

Equal bytes are looked for only among candidates offered for the current operation (the
parent's pending writes, the checkpoint's own new values), never through a global index.
Blobs read as channel values and blobs read on their own (pending writes, record parts) are
never shared between the two kinds: a pending write's blob may later become an append (its
`base_key` set), which must not change any checkpoint's channel value. So a node's output
that replaces a channel's value is stored twice (the pending write and the value); appended
items are stored once. Blobs belong to one thread (copies copy them).
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ttcli.errors import CorruptValueError
from ttcli.savers import dict_delta, serde
from ttcli.savers.decoded import Decoded, Lineage
from ttcli.savers.dict_delta import DictInfo
from ttcli.savers.encoded_lists import joined_lists, list_length
from ttcli.savers.kept_maps import NOT_KEPT, Delta, Kept, KeptMaps, map_types
from ttcli.savers.serde import Ref, Serializer

INLINE_MAX = 24  # values encoding to at most this many bytes stay inline
RECORD_ENTRY_MIN = 48  # map entries at least this large become blobs of their own
# An append chain gets a keyframe (a full copy) only once it is this deep AND its appends add
# up to the size of its last keyframe: keyframes then cost at most the value's size again,
# and a read walks a bounded number of rows per byte of value.
CHAIN_DEPTH_MIN = 4096
# However small the appends, a chain never grows longer than this (a keyframe comes first): a
# longer chain, or one whose blob points at itself or a newer blob, is damaged, and reading
# it stops there instead of walking forever.
CHAIN_DEPTH_MAX = 1_000_000
RECENT_MAX = 256  # encoded channel values remembered for append detection
DECODED_MAX = 16  # list channel values kept decoded (a chat's history, read at every turn)


class BlobRows(Protocol):
    """Where a backend keeps blobs: rows of (blob_key, base_key, is_record, value), keys
    handed out in increasing order. The SQLite one is `ttcli.savers.sql.blob_table`."""

    def insert(self, data: bytes, base_key: int | None, is_record: bool) -> int:
        """Store a blob; its new key is larger than every key handed out before."""

    def one(self, blob_key: int) -> tuple[int | None, int, bytes] | None:
        """(base_key, is_record, value) of a blob, or None."""

    def chain(self, blob_key: int, limit: int) -> list[tuple[int, int | None, int, bytes]]:
        """The blob and the blobs it appends to, oldest first, as (key, base, record, value),
        following only links to older blobs and at most `limit` of them."""

    def many(self, keys: Sequence[int]) -> Iterator[tuple[int, int | None, int, bytes]]:
        """(blob_key, base_key, is_record, value) of the given blobs that exist."""

    def adopt(self, blob_key: int, base_key: int) -> bool:
        """Set the base of a blob that has none; False if it has one."""


def entry_refs(entry: Any) -> list[int]:
    """Blob keys an entry points at directly."""
    return entries_refs((entry,))


def entries_refs(entries: Iterable[Any]) -> list[int]:
    """Blob keys the entries point at directly, in one pass (a prune reads those of every
    row it deletes, and an archive those of every row it copies)."""
    found: list[int] = []
    for entry in entries:
        if isinstance(entry, Ref):
            found.append(entry.key)
        elif type(entry) is dict:
            found += [item.key for item in entry.values() if isinstance(item, Ref)]
    return found


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    """What append detection needs to know about a stored channel value."""

    data: bytes | None  # the whole value, encoded (None: not kept, see `channel_data`)
    length: int  # list length, -1 for other values
    depth: int  # appends since the keyframe
    keyframe_bytes: int
    appended_bytes: int  # bytes appended since the keyframe


class BlobStore:
    """Reads blobs through a backend's rows (callers hold the transaction), with the caches
    that make appends and chat reads cheap."""

    def __init__(self, rows: BlobRows, serde: Serializer) -> None:
        self.rows = rows
        self.serde = serde
        self._recent: OrderedDict[int, ChannelInfo] = OrderedDict()
        self._decoded: OrderedDict[int, Decoded] = OrderedDict()
        self._dicts: OrderedDict[int, DictInfo | None] = OrderedDict()  # None: no such map
        self._maps = KeptMaps()
        # per kept list: the blobs it extends (a past checkpoint's list is a prefix of it)
        self._lineages: dict[int, Lineage] = {}
        self._lengths: dict[int, dict[int, int]] = {}

    # -- reading ---------------------------------------------------------------------------

    def load(self, entry: Any) -> Any:
        """A channel value from its entry (a Ref follows the append chain)."""
        if isinstance(entry, Ref):
            return self.read_channel(entry.key)
        return self.load_value(entry)

    def load_value(self, entry: Any) -> Any:
        """A value from its entry, read on its own."""
        if isinstance(entry, Ref):
            return self.read_value(entry.key)
        if type(entry) is dict and any(isinstance(v, Ref) for v in entry.values()):
            return {
                k: self.read_value(v.key) if isinstance(v, Ref) else self._inline(v)
                for k, v in entry.items()
            }
        return self._inline(entry)

    def _inline(self, value: Any) -> Any:
        # entries live in cached checkpoint states: hand out copies, decoded as the serializer
        # reads them now (a class registered since is rebuilt)
        if type(value) in serde.SCALARS:
            return value
        return self.serde.loads(self.serde.dumps(value))

    def read_value(self, blob_key: int) -> Any:
        # a kept value (a map, a scalar) reads the same on its own as a channel value:
        # only lists are adopted as appends
        handed = self._kept(blob_key)
        if handed is not NOT_KEPT:
            return handed
        row = self.rows.one(blob_key)
        if row is None:
            raise CorruptValueError(f"stored value {blob_key} is missing")
        if row[0] is not None and dict_delta.is_delta(row[2]):
            return self.read_channel(blob_key, row)  # a map delta means the whole map
        return self._decode(row[1], row[2], blob_key)

    def read_channel(self, blob_key: int, row: tuple[int | None, int, bytes] | None = None) -> Any:
        """A channel value: the blob's list, and those it appends to (blobs never change);
        or its map, and those it changes. With its `row`, if the blob is known to be a map
        delta: then it is read from its base's map if that is kept, without the chain (a
        blob only ever points at an older one; any other link is read, and refused, through
        the chain)."""
        handed = self._kept(blob_key)
        if handed is not NOT_KEPT:
            return handed
        if row is not None and row[0] is not None and row[0] < blob_key:
            base = self._maps.get(row[0])
            if base is not None:
                return self._map(blob_key, base, [(blob_key, *row)])
        info = self._dicts.get(blob_key)
        if info is not None:  # a map this store wrote
            self._dicts.move_to_end(blob_key)
            value = self.serde.loads(info.data)
            return self._maps.keep_read(blob_key, value, map_types(value), full=True)
        decoded = self._decoded.get(blob_key)
        handed = None if decoded is None else decoded.handed_out()
        if handed is not None:
            self._decoded[blob_key] = handed
            self._decoded.move_to_end(blob_key)
            return handed.items.copy()
        past = self._prefix(blob_key)
        if past is not None:
            return past
        rows = self._chain(blob_key)
        if len(rows) > 1 and dict_delta.is_delta(rows[1][3]):
            return self._map(blob_key, *self._maps.newest(rows))
        value = self._read_chain(blob_key, rows)
        self.keep_decoded(blob_key, Decoded.of(value, private=True), lineage=_lineage(rows))
        self._maps.keep_scalar(blob_key, value)
        return value

    def _kept(self, blob_key: int) -> Any:
        """The blob's value made from what is kept (a map, its deltas, a scalar), or NOT_KEPT."""
        handed = self._maps.hand_out(blob_key)
        if handed is NOT_KEPT and (made := self._maps.made_of(blob_key)) is not None:
            return self._map(blob_key, made[0], [], made[1])
        return handed

    def _map(
        self, blob_key: int, kept: Kept | None, rows: list[Any], deltas: Sequence[Delta] = ()
    ) -> Any:
        """The map `kept` (else the full copy first in `rows`, decoded and kept) with the
        decoded `deltas`, then the map deltas in `rows`, applied: kept in turn with them,
        and handed out as a copy."""
        types: frozenset[type] | None
        if kept is not None:
            value, types, shares = dict(kept.value), kept.types, True
        else:
            (key, _base, is_record, data), *rows = rows
            value = self._decode(is_record, data, key)
            types = map_types(value)
            shares = self._maps.keep(key, value, types, full=True) is not None
            if shares:
                value = dict(value)  # the kept map stays as it is
        added: dict[Any, Any] = {}  # the entries the deltas set, the last of each key
        applied: list[Delta] = []
        decoded = ((k, base, self._decode(0, data, k), len(data)) for k, base, _, data in rows)
        for delta in itertools.chain(deltas, decoded):
            dict_delta.apply(value, delta[2], delta[0])
            added.update(delta[2][0])
            applied.append(delta)
        if types is not None and added:
            more = map_types(added)
            types = None if more is None else types | more
        return self._maps.keep_read(
            blob_key, value, types, full=False, shares=shares, deltas=applied
        )

    def _prefix(self, blob_key: int) -> list[Any] | None:
        """The blob's list as the start of a kept list that extends it, if one does."""
        for kept_key in reversed(self._decoded):
            lengths = self._lengths.get(kept_key)
            if lengths is None:
                lineage = self._lineages.get(kept_key)
                lengths = self._lengths[kept_key] = {} if lineage is None else lineage.lengths()
            length = lengths.get(blob_key)
            if length is not None:
                return self._decoded[kept_key].prefix(length)
        return None

    def appended_items(self, blob_key: int, value: list[Any]) -> list[Any] | None:
        """The items `value` adds to the list kept decoded for the blob, if it starts with
        exactly that list (the same objects, unchanged); else None."""
        decoded = self._decoded.get(blob_key)
        if decoded is None or len(value) <= len(decoded.items) or not decoded.intact():
            return None
        if not all(map(operator.is_, value, decoded.items)):
            return None
        return value[len(decoded.items) :]

    def keep_appended(self, base_key: int, blob_key: int, added: Decoded | None) -> None:
        """Keep the blob's list: the (intact) one kept for `base_key` with the items `added`
        (as they were when they were encoded)."""
        decoded = self._decoded.get(base_key)
        kept = None if decoded is None or added is None else decoded.extended(added)
        if kept is not None:
            self._keep(
                blob_key, kept, Lineage(blob_key, len(kept.items), self._lineages.get(base_key))
            )

    def keep_decoded(
        self,
        blob_key: int,
        kept: Decoded | None,
        *,
        base_key: int | None = None,
        lineage: Lineage | None = None,
    ) -> None:
        """Keep a list channel value the blob holds, to hand out to readers (see Decoded):
        `kept` is as stored (a put takes it before encoding the value and checks it after,
        see `still_as_kept`; a read, from the value it decoded); with the blob it appends
        to, or the lineage of the blobs it extends, if known."""
        if kept is None:
            return
        if lineage is None:
            parent = None if base_key is None else self._lineages.get(base_key)
            lineage = Lineage(blob_key, len(kept.items), parent)
        self._keep(blob_key, kept, lineage)

    def _keep(self, blob_key: int, kept: Decoded, lineage: Lineage) -> None:
        self._decoded[blob_key] = kept
        self._lineages[blob_key] = lineage
        if lineage.parent is not None:
            # the list it extends is read as its start (`_prefix`): not kept twice, so that
            # a chat keeps one copy of its history, not one per recent checkpoint
            self._drop(lineage.parent.blob_key)
        if len(self._decoded) > DECODED_MAX:
            self._drop(next(iter(self._decoded)))

    def _drop(self, blob_key: int) -> None:
        self._decoded.pop(blob_key, None)
        self._lineages.pop(blob_key, None)
        self._lengths.pop(blob_key, None)

    def _chain(self, blob_key: int) -> list[Any]:
        """The blob and the blobs it appends to, oldest first (see `BlobRows.chain`).

        Raises:
            CorruptValueError: a blob is missing, or the chain loops or never ends.
        """
        rows = self.rows.chain(blob_key, CHAIN_DEPTH_MAX)
        if not rows or rows[-1][0] != blob_key:
            raise CorruptValueError(f"stored value {blob_key} is missing")
        oldest, base = rows[0][0], rows[0][1]
        if base is None:
            return rows
        if base >= oldest:
            problem = f"through {oldest} to {base}, not an older value (a loop)"
        elif len(rows) > CHAIN_DEPTH_MAX:
            problem = f"to more than {CHAIN_DEPTH_MAX} values, more than ttcli ever chains"
        else:
            problem = f"to {base}, which is missing"
        raise CorruptValueError(f"stored value {blob_key} appends {problem}")

    def _read_chain(self, blob_key: int, rows: list[Any] | None = None) -> Any:
        rows = self._chain(blob_key) if rows is None else rows
        if len(rows) > 1 and not any(is_record for _, _, is_record, _ in rows):
            joined = joined_lists([data for *_, data in rows])
            if joined is not None:  # the whole chain is plain lists: decode it in one go
                return self._decode(0, joined, blob_key)
        value = self._decode(rows[0][2], rows[0][3], rows[0][0])
        if len(rows) == 1:
            return value
        if not isinstance(value, list):
            raise CorruptValueError(
                f"stored value {blob_key} appends to a value that is not a list"
            )
        for key, _base, is_record, data in rows[1:]:
            items = self._decode(is_record, data, key)
            if not isinstance(items, list):
                raise CorruptValueError(f"stored value {key} is an append without a list of items")
            value.extend(items)
        return value

    def _decode(self, is_record: int, data: bytes, blob_key: int) -> Any:
        try:
            value = self.serde.loads(data)
        except CorruptValueError as exc:
            raise CorruptValueError(f"stored value {blob_key}: {exc}") from None
        if not is_record:
            return value
        if isinstance(value, Ref) or type(value) is dict:
            _older(blob_key, entry_refs(value))  # so that records never nest in a loop
            return self.load_value(value)
        raise CorruptValueError(f"stored value {blob_key} is a record of the wrong shape")

    def reachable(self, roots: Iterable[int], *, floor: int = 0) -> set[int]:
        """Every blob the given ones need: append bases and record parts, transitively.

        A blob only ever points at older blobs (smaller keys), so a walk that only needs to
        know about blobs from `floor` up stops below it. Records are read in their stored
        form (their references are at their top level): the walk rebuilds nothing, and an
        application's class changed since a value was stored cannot stop it (a prune).

        Raises:
            CorruptValueError: a blob points at itself or a newer blob (a forged or damaged
                file, where following links could loop and collecting by key is unsafe).
        """
        seen: set[int] = set()
        todo = {key for key in roots if key >= floor}
        while todo:  # a level at a time, read in chunks rather than a row at a time
            level = sorted(todo)
            seen.update(level)
            found: set[int] = set()
            for blob_key, base_key, is_record, data in self.rows.many(level):
                links = [] if base_key is None else [base_key]
                if is_record:
                    links += entry_refs(serde.VERBATIM.loads(data))
                _older(blob_key, links)  # so that the walk ends, even in a forged file
                found.update(links)
            todo = {key for key in found if key >= floor} - seen
        return seen

    # -- append detection -------------------------------------------------------------------

    def channel_info(self, blob_key: int) -> ChannelInfo:
        info = self._recent.get(blob_key)
        if info is not None:
            self._recent.move_to_end(blob_key)
            return info
        rows = self._chain(blob_key)
        value = self.read_channel(blob_key)
        info = ChannelInfo(
            data=self.serde.dumps(value),
            length=len(value) if type(value) is list else -1,
            depth=len(rows) - 1,
            keyframe_bytes=len(rows[0][3]),
            appended_bytes=sum(len(row[3]) for row in rows[1:]),
        )
        self.remember(blob_key, info)
        return info

    def dict_info(self, blob_key: int) -> DictInfo | None:
        """The map a channel blob holds, encoded; None if it is no map with text keys."""
        if blob_key in self._dicts:
            self._dicts.move_to_end(blob_key)
            return self._dicts[blob_key]
        depth = len(self._chain(blob_key)) - 1
        info = dict_delta.info_of(self.read_channel(blob_key), depth)
        self.remember_dict(blob_key, info)
        return info

    def remember_dict(self, blob_key: int, info: DictInfo | None) -> None:
        self._dicts[blob_key] = info
        if len(self._dicts) > DECODED_MAX:
            self._dicts.popitem(last=False)

    def channel_data(self, blob_key: int, info: ChannelInfo) -> bytes:
        """The whole value of a channel blob, encoded."""
        if info.data is not None:
            return info.data
        return self.serde.dumps(self.read_channel(blob_key))

    def remember(self, blob_key: int, info: ChannelInfo) -> None:
        self._recent[blob_key] = info
        if len(self._recent) > RECENT_MAX:
            self._recent.popitem(last=False)

    def forget(self) -> None:
        """Drop remembered values (after a rollback their blob keys may be reused)."""
        self._recent.clear()
        self._decoded.clear()
        self._dicts.clear()
        self._maps.clear()
        self._lineages.clear()
        self._lengths.clear()


def _lineage(rows: list[Any]) -> Lineage | None:
    """The lineage of a chain of plain lists (oldest first), from their encoded lengths."""
    node, length = None, 0
    for blob_key, _base, is_record, data in rows:
        count = None if is_record else list_length(data)
        if count is None:
            return None
        length += count
        node = Lineage(blob_key, length, node)
    return node


def _older(blob_key: int, links: Iterable[int]) -> None:
    """Refuse a blob linking to itself or a newer blob: ttcli never writes one."""
    for link in links:
        if link >= blob_key:
            raise CorruptValueError(
                f"stored value {blob_key} points at {link}, not an older value (a loop)"
            )
