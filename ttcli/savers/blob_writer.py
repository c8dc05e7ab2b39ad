"""Storing values: what may share a blob, when a list is an append, when a map is a record.

The rules are those of `ttcli.savers.blobs` (its docstring); this module only writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ttcli.errors import SerializationError
from ttcli.savers import dict_delta, serde
from ttcli.savers.blobs import (
    CHAIN_DEPTH_MAX,
    CHAIN_DEPTH_MIN,
    INLINE_MAX,
    RECORD_ENTRY_MIN,
    BlobStore,
    ChannelInfo,
    entry_refs,
)
from ttcli.savers.decoded import encoded_kept, still_as_kept
from ttcli.savers.encoded_lists import body
from ttcli.savers.msgpack_frames import array_header
from ttcli.savers.serde import Ref


class StoredMaps(dict[int, tuple[dict[Any, Any], int, Ref]]):
    """Maps stored as deltas, by id (kept alive here), with the key of the map each one
    changes and its delta: stored again from the same base while no code can change it (in
    the same put, or in one `put_step`), a map is not encoded again."""

    def get_delta(self, value: dict[Any, Any], base_key: int | None = None) -> Ref | None:
        """The delta `value` was stored as (from `base_key`, if given)."""
        stored = self.get(id(value))
        if stored is None or stored[0] is not value or base_key not in (None, stored[1]):
            return None
        return stored[2]


class BlobWriter:
    """Stores the values of one put or put_writes, sharing blobs with offered candidates."""

    def __init__(self, store: BlobStore, maps: StoredMaps | None = None) -> None:
        self.store = store
        self.serde = store.serde
        self.pool: dict[bytes, Any] = {}  # encoded value -> entry holding it
        # plain blobs that may become the append of a list channel (see `_append`), and
        # blobs that must not because a checkpoint reads them as a channel value
        self.adoptable: set[int] = set()
        self.adopted: set[int] = set()
        self.channel_blobs: set[int] = set()
        # offered map deltas by (base, delta): a channel taking the value a write gave it
        self.deltas: dict[tuple[int, bytes], int] = {}
        # a map stored as a channel value and again in metadata.writes, in the same put,
        # or written by a task and then its channel's value, in one put_step, is encoded once
        self.maps = StoredMaps() if maps is None else maps
        # offered entries not read yet, with their `adoptable` (see `offer`)
        self.offered: list[tuple[list[Any], bool]] = []

    def offer(self, entries: Iterable[Any], *, adoptable: bool = False) -> None:
        """Entries whose values new values may share (standalone blobs and records only).

        With `adoptable`, plain blobs among them may be turned into a list channel's append
        (they are read on their own only: pending writes, record parts). Their blobs are
        read when a value first looks for an equal one (`_read_offers`): a put whose values
        are all inline reads none.
        """
        # a plain int is an inline value, never a blob key
        stored = [entry for entry in entries if type(entry) is dict or isinstance(entry, Ref)]
        if stored:
            self.offered.append((stored, adoptable))

    def _read_offers(self) -> None:
        """Read what was offered, before the pool (or what it decides) is first looked at."""
        offered, self.offered = self.offered, []
        for entries, adoptable in offered:
            self._read_offered(entries, adoptable)

    def _read_offered(self, entries: Iterable[Any], adoptable: bool) -> None:
        for entry in entries:
            if type(entry) is dict:
                self._read_offered(map(Ref, entry_refs(entry)), adoptable)
                self.pool.setdefault(self.serde.dumps(self.store.load_value(entry)), entry)
            elif isinstance(entry, Ref):
                self._offer_blob(entry.key, adoptable)

    def protect(self, entries: Iterable[Any]) -> None:
        """Blobs read as channel values: never adopted as an append, and never shared by a
        pending write or a record part (which could be adopted later, changing what every
        checkpoint reading the blob as its value reads)."""
        for entry in entries:
            if isinstance(entry, Ref):
                self.channel_blobs.add(entry.key)

    def _read_as_channel(self, entry: Any) -> bool:
        if isinstance(entry, Ref):
            return entry.key in self.channel_blobs
        return type(entry) is dict and any(key in self.channel_blobs for key in entry_refs(entry))

    def _offer_blob(self, blob_key: int, adoptable: bool) -> None:
        row = self.store.rows.one(blob_key)
        if row is not None and row[0] is not None and dict_delta.is_delta(row[2]):
            # a map delta is never adopted (it has a base): anything may share it
            self.deltas.setdefault((row[0], row[2]), blob_key)
            return
        if row is None or row[0] is not None:
            return  # appends hold only part of their value
        if row[1]:
            self._read_offered(map(Ref, entry_refs(self.serde.loads(row[2]))), adoptable)
            self.pool.setdefault(self.serde.dumps(self.store.read_value(blob_key)), Ref(blob_key))
        else:
            self.pool.setdefault(row[2], Ref(blob_key))
            if adoptable:
                self.adoptable.add(blob_key)

    def value(self, value: Any, path: str, *, pending: bool = True, base: Any = None) -> Any:
        """Store a pending write's value (or, `pending=False`, a metadata value: read on its
        own only, it may share any blob) and return its entry; a map may be stored as its
        changes from `base`, the entry of the channel it is written to."""
        if inline_as_is(value):
            return value
        if isinstance(base, Ref) and type(value) is dict:
            changed = self._dict_delta(value, base.key)
            if changed is not None:
                return changed
        if not pending and type(value) is dict and any(map(self._stored_map, value.values())):
            entry = self._record(value, path, parts_apart=False)  # not encoded whole again
            if entry is not None:
                return entry
        data = self.serde.dumps(value, path=path)
        if len(data) <= INLINE_MAX:
            return self.serde.loads(data)  # a copy, exactly as stored: the caller keeps its value
        return self._store(value, data, path, apart=pending, parts_apart=pending)

    def channel(self, name: str, value: Any, previous: Any) -> Any:
        """Store a channel's new value, as an append to `previous` when the list only grew,
        or as the keys that changed when a map changed a few."""
        if inline_as_is(value):
            return value
        if type(value) is dict and isinstance(previous, Ref):
            changed = self._dict_delta(value, previous.key)
            if changed is not None:
                self.protect([changed])
                return changed
        if type(value) is list and isinstance(previous, Ref):
            # the list the previous value was, grown by new items: only they are encoded
            appended = self._appended(value, previous.key)
            if appended is not None:
                return appended
        kept, data = encoded_kept(value, lambda: self.serde.dumps(value, path=name))
        if len(data) <= INLINE_MAX:
            return self.serde.loads(data)
        if type(value) is list and isinstance(previous, Ref):
            appended = self._append(value, previous.key, data=data)
            if appended is not None:
                self.store.keep_decoded(
                    appended.key, still_as_kept(kept, value, data), base_key=previous.key
                )
                return appended
        if self.offered:
            self._read_offers()
        found = self.pool.get(data)
        if isinstance(found, Ref) and found.key in self.adopted:
            self.pool.pop(data)  # now an append: read as a channel it would be the whole list
        entry = self._store(value, data, name, values_only=True, parts_apart=True)
        self.protect([entry])
        if isinstance(entry, Ref):
            length = len(value) if type(value) is list else -1
            self.store.remember(entry.key, ChannelInfo(data, length, 0, len(data), 0))
            self.store.keep_decoded(entry.key, still_as_kept(kept, value, data))
            if type(value) is dict:  # the next step's map may be a delta from this one
                self.store.remember_dict(entry.key, dict_delta.info_of(value, 0))
        return entry

    def _appended(self, value: list[Any], base_key: int) -> Ref | None:
        """`value` stored as the new items it adds to the list kept for `base_key`, if it
        is that list (the same messages, intact) grown; else None."""
        tail = self.store.appended_items(base_key, value)
        if tail is None:
            return None
        try:  # what is kept is taken before it is encoded (see keep_decoded)
            added, delta = encoded_kept(tail, lambda: self.serde.dumps(tail))
        except SerializationError:
            return None  # encoding the whole value names what cannot be stored
        appended = self._append(value, base_key, tail=(len(tail), delta))
        if appended is not None:
            self.store.keep_appended(base_key, appended.key, still_as_kept(added, tail, delta))
        return appended

    def _append(
        self,
        value: list[Any],
        base_key: int,
        *,
        data: bytes | None = None,
        tail: tuple[int, bytes] | None = None,
    ) -> Ref | None:
        """Store `value` as the items it adds to the list at `base_key`: given the whole
        value encoded (`data`), or the new items' number and their list encoded (`tail`)
        when the rest is known unchanged."""
        if self.offered:
            self._read_offers()
        base = self.store.channel_info(base_key)
        if base.length < 0 or len(value) <= base.length:
            return None
        if base.depth + 1 >= CHAIN_DEPTH_MIN and base.appended_bytes >= base.keyframe_bytes:
            return None  # time for a keyframe
        if base.depth + 1 >= CHAIN_DEPTH_MAX:
            return None  # readers refuse longer chains as damaged
        if tail is not None:
            count, delta = tail
            if len(value) - count != base.length:
                return None
            # the whole value is not encoded: the next append finds its new items the same
            # way, and encodes the list from the store only if it must (`channel_data`)
            data = None
        else:
            assert data is not None
            old_body, new_body = body(self.store.channel_data(base_key, base)), body(data)
            if not new_body.startswith(old_body):
                return None
            delta = array_header(len(value) - base.length) + new_body[len(old_body) :]
        shared = self.pool.get(delta)
        if isinstance(shared, Ref) and self._adopt(shared.key, base_key):
            blob_key = shared.key
        else:
            if isinstance(shared, Ref):
                stored, is_record = self.serde.dumps(shared), True
            else:
                stored, is_record = delta, False
            blob_key = self._insert(stored, base_key=base_key, is_record=is_record)
        info = ChannelInfo(
            data, len(value), base.depth + 1, base.keyframe_bytes, base.appended_bytes + len(delta)
        )
        self.store.remember(blob_key, info)
        return Ref(blob_key)

    def _dict_delta(self, value: dict[Any, Any], base_key: int) -> Ref | None:
        """Store a map as its changes from the map at `base_key`, if worth it (dict_delta)."""
        stored = self.maps.get_delta(value, base_key)
        if stored is not None:
            return stored
        if self.offered:
            self._read_offers()
        base = self.store.dict_info(base_key)
        made = None if base is None else dict_delta.delta(base, value)
        if made is None:
            return None
        data, info = made
        blob_key = self.deltas.get((base_key, data))
        if blob_key is None:
            blob_key = self._insert(data, base_key=base_key)
            self.deltas[(base_key, data)] = blob_key
        self.store.remember_dict(blob_key, info)
        self.maps[id(value)] = (value, base_key, Ref(blob_key))
        return Ref(blob_key)

    def _adopt(self, blob_key: int, base_key: int) -> bool:
        """Make a stored list (e.g. the pending write that added these items) the append.

        Read on its own the blob keeps its value; only its `base_key` is set, once. Blobs
        that any checkpoint reads as a channel value are never adopted.
        """
        if blob_key not in self.adoptable or blob_key in self.channel_blobs:
            return False
        if blob_key < base_key:  # a blob points only at older ones (GC and copies rely on it)
            return False
        adopted = self.store.rows.adopt(blob_key, base_key)
        self.adoptable.discard(blob_key)
        if not adopted:
            return False
        self.adopted.add(blob_key)
        return True

    def _store(
        self,
        value: Any,
        data: bytes,
        path: str,
        *,
        apart: bool = False,
        values_only: bool = False,
        parts_apart: bool,
    ) -> Any:
        """The entry for a value: an equal one from the pool, or new blobs.

        Blobs read as channel values and blobs read on their own (pending writes, record
        parts) are kept apart, so that adopting the latter as an append never changes the
        former: with `apart` a blob read as a channel value is not shared, with `values_only`
        (a channel value) only such a blob is; `parts_apart` is `apart` for a record's parts.
        """
        if self.offered:
            self._read_offers()
        found = self.pool.get(data)
        if found is not None:
            as_channel = self._read_as_channel(found)
            if not (apart and as_channel) and not (
                values_only and isinstance(found, Ref) and not as_channel
            ):
                return found
        entry: Any = None
        if type(value) is dict and _has_large_entry(value, len(data)):
            entry = self._record(value, path, parts_apart=parts_apart)
        if entry is None:
            entry = Ref(self._insert(data))
        self.pool[data] = entry
        return entry

    def _record(self, value: dict[Any, Any], path: str, *, parts_apart: bool) -> Any:
        """A map as a record whose large entries are blobs; None if none is."""
        record = {
            key: self._part(
                item, f"{path}.{key}" if isinstance(key, str) else path, apart=parts_apart
            )
            for key, item in value.items()
        }
        if not any(isinstance(item, Ref) for item in record.values()):
            return None
        record_data = self.serde.dumps(record)
        if len(record_data) <= INLINE_MAX:
            return record
        return Ref(self._insert(record_data, is_record=True))

    def _stored_map(self, item: Any) -> Ref | None:
        """The delta this writer stored `item` as, if it did: it reads as the whole map and
        is never adopted, so a value read on its own may share it."""
        return self.maps.get_delta(item)

    def _part(self, item: Any, path: str, *, apart: bool) -> Any:
        stored = None if apart else self._stored_map(item)
        if stored is not None:
            return stored
        data = self.serde.dumps(item, path=path)
        if len(data) < RECORD_ENTRY_MIN:
            return self.serde.loads(data)
        entry = self._store(item, data, path, apart=apart, parts_apart=apart)
        # only references go into a record: a nested inline record would not be resolved
        return entry if isinstance(entry, Ref) else item

    def _insert(self, data: bytes, *, base_key: int | None = None, is_record: bool = False) -> int:
        return self.store.rows.insert(data, base_key, is_record)


def inline_as_is(value: Any) -> bool:
    """Whether a value is stored inline as itself: a number, a bool or None, which encode
    to at most 9 bytes and decode to an equal value that nobody can change in place (no
    copy to make by decoding its bytes). An int msgpack cannot hold is left to `dumps`,
    which names it."""
    kind = type(value)
    if kind is int:
        in_range: bool = -(2**63) <= value < 2**64
        return in_range
    return value is None or kind is bool or kind is float


def _has_large_entry(value: dict[Any, Any], size: int) -> bool:
    """Whether a map may hold an entry that becomes a blob of its own in a record: checked
    at C speed, for the common map of many small entries."""
    if size < RECORD_ENTRY_MIN:
        return False
    try:
        return max(map(len, map(serde.packer().pack, value.values())), default=0) >= (
            RECORD_ENTRY_MIN
        )
    except Exception:  # noqa: BLE001 - encoding it entry by entry names what fails
        return True
