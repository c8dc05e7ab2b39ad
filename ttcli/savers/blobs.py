"""Values stored once per change: inline values, blobs, list appends and records.

Wherever the format holds a value (a channel of a checkpoint, a pending write, a node's entry
in metadata.writes) it holds an *entry*: the value itself when it is small, a `Ref` to a blob,
or a small map whose large values are `Ref`s (an inline record). Three shapes keep the file
growing with change rather than with steps:

* **reuse**: an unchanged channel keeps its parent's entry;
* **append**: a list that only grew is a blob of the new items whose `base_key` points at the
  list it extends; its items are a `Ref` to an equal blob when there is one (the pending write
  that added them);
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

import copy
import json
import operator
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

from ttcli.errors import CorruptValueError, SerializationError
from ttcli.graph.messages import Message, copy_message
from ttcli.savers import serde
from ttcli.savers.params import chunks
from ttcli.savers.serde import Ref

INLINE_MAX = 24  # values encoding to at most this many bytes stay inline
RECORD_ENTRY_MIN = 48  # map entries at least this large become blobs of their own
# An append chain gets a keyframe (a full copy) only once it is this deep AND its appends add
# up to the size of its last keyframe: keyframes then cost at most the value's size again,
# and a read walks a bounded number of rows per byte of value.
CHAIN_DEPTH_MIN = 1024
# However small the appends, a chain never grows longer than this (a keyframe comes first): a
# longer chain, or one whose blob points at itself or a newer blob, is damaged, and reading
# it stops there instead of walking forever.
CHAIN_DEPTH_MAX = 1_000_000
RECENT_MAX = 256  # encoded channel values remembered for append detection
DECODED_MAX = 16  # list channel values kept decoded (a chat's history, read at every turn)

_INSERT = """
INSERT INTO blobs (base_key, is_record, value)
VALUES (:base_key, :is_record, :value)
"""

#: a blob and the blobs it appends to, oldest first; the walk follows only links to older
#: blobs and stops after CHAIN_DEPTH_MAX, so a loop or an endless chain ends with its oldest
#: row still naming a base (read as damage)
_CHAIN = """
WITH RECURSIVE chain (blob_key, base_key, is_record, value, depth) AS (
    SELECT blob_key, base_key, is_record, value, 0
    FROM blobs
    WHERE blob_key = :blob_key
    UNION ALL
    SELECT b.blob_key, b.base_key, b.is_record, b.value, chain.depth + 1
    FROM blobs AS b
    JOIN chain ON b.blob_key = chain.base_key
    WHERE chain.base_key < chain.blob_key
      AND chain.depth < :max_depth
)
SELECT blob_key, base_key, is_record, value
FROM chain
ORDER BY depth DESC
"""

#: the blobs' keys and links from `roots` down their append chains, each blob once; links
#: to newer blobs are returned but not followed (the caller refuses them)
_CLOSURE = """
WITH RECURSIVE closure (blob_key, base_key, is_record) AS (
    SELECT blob_key, base_key, is_record
    FROM blobs
    WHERE blob_key IN (SELECT value FROM json_each(:roots))
    UNION
    SELECT b.blob_key, b.base_key, b.is_record
    FROM blobs AS b
    JOIN closure ON b.blob_key = closure.base_key
    WHERE closure.base_key < closure.blob_key
      AND b.blob_key >= :floor
)
SELECT blob_key, base_key, is_record
FROM closure
"""

_ONE = """
SELECT base_key, is_record, value
FROM blobs
WHERE blob_key = :blob_key
"""


def entry_refs(entry: Any) -> Iterator[int]:
    """Blob keys an entry points at directly."""
    if isinstance(entry, Ref):
        yield entry.key
    elif type(entry) is dict:
        for item in entry.values():
            if isinstance(item, Ref):
                yield item.key


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A list channel value as decoded, handed out as copies while it is intact.

    Only lists of immutable scalars and of messages whose fields are all immutable scalars
    are kept. Before every reuse each message's fields are checked to be the very objects
    they were (by identity, at C speed: an equal value of another type or sign, such as True
    for 1, is a change), so a message changed in place is never handed out again; and each
    reader gets messages of its own (copies), so what one reader changes no other sees.
    """

    items: tuple[Any, ...]
    messages: tuple[Message, ...]
    #: per message its number of fields, then all their keys and values, in order
    sizes: tuple[int, ...]
    keys: tuple[Any, ...]
    values: tuple[Any, ...]

    @classmethod
    def of(cls, value: Any) -> _Decoded | None:
        # checked at C speed: this runs for every list a chat stores or reads
        if type(value) is not list:
            return None
        if all(map(serde.SCALARS.__contains__, map(type, value))):
            return cls(tuple(value), (), (), (), ())
        if all(map(isinstance, value, repeat(Message))) and all(
            map(serde.SCALARS.__contains__, map(type, chain.from_iterable(map(dict.values, value))))
        ):
            return cls(tuple(value), tuple(value), *_shape(value))
        return None

    def intact(self) -> bool:
        messages = self.messages
        return (
            tuple(map(len, messages)) == self.sizes
            and all(map(operator.is_, chain.from_iterable(map(dict.values, messages)), self.values))
            and all(map(operator.is_, chain.from_iterable(map(dict.keys, messages)), self.keys))
        )

    def handed_out(self) -> _Decoded:
        """The same list with copies of its messages (the same field objects), for a reader
        to take: kept in place of this one, so that the reader's next value is known to
        extend it."""
        if not self.messages:
            return self
        items = tuple(copy_message(i) if isinstance(i, Message) else i for i in self.items)
        messages = tuple(item for item in items if isinstance(item, Message))
        return _Decoded(items, messages, self.sizes, self.keys, self.values)

    def extended(self, tail: list[Any]) -> _Decoded | None:
        """This list grown by `tail`, checking only the new items."""
        added = _Decoded.of(tail)
        if added is None:
            return None
        return _Decoded(
            self.items + added.items,
            self.messages + added.messages,
            self.sizes + added.sizes,
            self.keys + added.keys,
            self.values + added.values,
        )


def _shape(messages: Sequence[Message]) -> tuple[tuple[Any, ...], ...]:
    return (
        tuple(map(len, messages)),
        tuple(chain.from_iterable(map(dict.keys, messages))),
        tuple(chain.from_iterable(map(dict.values, messages))),
    )


@dataclass(frozen=True, slots=True)
class _ChannelInfo:
    """What append detection needs to know about a stored channel value."""

    data: bytes  # the whole value, encoded
    length: int  # list length, -1 for other values
    depth: int  # appends since the keyframe
    keyframe_bytes: int
    appended_bytes: int  # bytes appended since the keyframe


class BlobStore:
    """Reads and writes blobs on one connection; callers hold the transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._recent: OrderedDict[int, _ChannelInfo] = OrderedDict()
        self._decoded: OrderedDict[int, _Decoded] = OrderedDict()

    def writer(self) -> BlobWriter:
        return BlobWriter(self)

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
                k: self.read_value(v.key) if isinstance(v, Ref) else copy.deepcopy(v)
                for k, v in entry.items()
            }
        # entries live in cached checkpoint states: hand out copies
        return copy.deepcopy(entry)

    def read_value(self, blob_key: int) -> Any:
        row = self.conn.execute(_ONE, {"blob_key": blob_key}).fetchone()
        if row is None:
            raise CorruptValueError(f"stored value {blob_key} is missing")
        return self._decode(row[1], row[2], blob_key)

    def read_channel(self, blob_key: int) -> Any:
        """A channel value: the blob's list, and those it appends to (blobs never change)."""
        decoded = self._decoded.get(blob_key)
        if decoded is not None:
            # copied first, then compared: what another thread changes meanwhile in the
            # messages handed out before is never taken for what was stored
            handed = decoded.handed_out()
            if handed.intact():
                self._decoded[blob_key] = handed
                self._decoded.move_to_end(blob_key)
                return list(handed.items)
        value = self._read_chain(blob_key)
        self.keep_decoded(blob_key, value)
        return value

    def appended_items(self, blob_key: int, value: list[Any]) -> list[Any] | None:
        """The items `value` adds to the list kept decoded for the blob, if it starts with
        exactly that list (the same objects, unchanged); else None."""
        decoded = self._decoded.get(blob_key)
        if decoded is None or len(value) <= len(decoded.items) or not decoded.intact():
            return None
        if not all(map(operator.is_, value, decoded.items)):
            return None
        return value[len(decoded.items) :]

    def keep_appended(self, base_key: int, blob_key: int, tail: list[Any]) -> None:
        """Keep the blob's list: the (intact) one kept for `base_key` with `tail` added."""
        decoded = self._decoded.get(base_key)
        kept = None if decoded is None else decoded.extended(tail)
        if kept is not None:
            self._keep(blob_key, kept)

    def keep_decoded(self, blob_key: int, value: Any) -> None:
        """Keep a list channel value the blob holds, to hand out copies of (see _Decoded)."""
        kept = _Decoded.of(value)
        if kept is not None:
            self._keep(blob_key, kept)

    def _keep(self, blob_key: int, kept: _Decoded) -> None:
        self._decoded[blob_key] = kept
        if len(self._decoded) > DECODED_MAX:
            self._decoded.popitem(last=False)

    def _chain(self, blob_key: int) -> list[Any]:
        """The blob and the blobs it appends to, oldest first (rows of `_CHAIN`).

        Raises:
            CorruptValueError: a blob is missing, or the chain loops or never ends.
        """
        params = {"blob_key": blob_key, "max_depth": CHAIN_DEPTH_MAX}
        rows = self.conn.execute(_CHAIN, params).fetchall()
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

    def _read_chain(self, blob_key: int) -> Any:
        rows = self._chain(blob_key)
        if len(rows) > 1 and not any(is_record for _, _, is_record, _ in rows):
            joined = _joined_lists([data for *_, data in rows])
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
            value = serde.loads(data)
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
        know about blobs from `floor` up stops below it.

        Raises:
            CorruptValueError: a blob points at itself or a newer blob (a forged or damaged
                file, where following links could loop and collecting by key is unsafe).
        """
        seen: set[int] = set()
        todo = {key for key in roots if key >= floor}
        while todo:  # the append chains in one query, then a level of record parts
            seen.update(todo)
            records: list[int] = []
            params = {"roots": json.dumps(sorted(todo)), "floor": floor}
            for blob_key, base_key, is_record in self.conn.execute(_CLOSURE, params):
                _older(blob_key, [] if base_key is None else [base_key])
                seen.add(blob_key)
                if is_record:
                    records.append(blob_key)
            todo = {key for key in self._parts(records) if key >= floor} - seen
        return seen

    def _parts(self, records: list[int]) -> set[int]:
        """The blobs the given records point at (each older than its record)."""
        found: set[int] = set()
        for chunk in chunks(sorted(records)):
            marks = ",".join("?" * len(chunk))
            for blob_key, data in self.conn.execute(
                f"SELECT blob_key, value FROM blobs WHERE blob_key IN ({marks})", chunk
            ):
                parts = list(entry_refs(serde.loads(data)))
                _older(blob_key, parts)
                found.update(parts)
        return found

    # -- append detection -------------------------------------------------------------------

    def channel_info(self, blob_key: int) -> _ChannelInfo:
        info = self._recent.get(blob_key)
        if info is not None:
            self._recent.move_to_end(blob_key)
            return info
        rows = self._chain(blob_key)
        value = self.read_channel(blob_key)
        info = _ChannelInfo(
            data=serde.dumps(value),
            length=len(value) if type(value) is list else -1,
            depth=len(rows) - 1,
            keyframe_bytes=len(rows[0][3]),
            appended_bytes=sum(len(row[3]) for row in rows[1:]),
        )
        self.remember(blob_key, info)
        return info

    def remember(self, blob_key: int, info: _ChannelInfo) -> None:
        self._recent[blob_key] = info
        if len(self._recent) > RECENT_MAX:
            self._recent.popitem(last=False)

    def forget(self) -> None:
        """Drop remembered values (after a rollback their blob keys may be reused)."""
        self._recent.clear()
        self._decoded.clear()


class BlobWriter:
    """Stores the values of one put or put_writes, sharing blobs with offered candidates."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self.pool: dict[bytes, Any] = {}  # encoded value -> entry holding it
        # plain blobs that may become the append of a list channel (see `_append`), and
        # blobs that must not because a checkpoint reads them as a channel value
        self.adoptable: set[int] = set()
        self.adopted: set[int] = set()
        self.channel_blobs: set[int] = set()

    def offer(self, entries: Iterable[Any], *, adoptable: bool = False) -> None:
        """Entries whose values new values may share (standalone blobs and records only).

        With `adoptable`, plain blobs among them may be turned into a list channel's append
        (they are read on their own only: pending writes, record parts).
        """
        for entry in entries:
            if type(entry) is dict:
                self.offer(map(Ref, entry_refs(entry)), adoptable=adoptable)
                self.pool.setdefault(serde.dumps(self.store.load_value(entry)), entry)
            elif isinstance(entry, Ref):  # a plain int is an inline value, never a blob key
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
        row = self.store.conn.execute(_ONE, {"blob_key": blob_key}).fetchone()
        if row is None or row[0] is not None:
            return  # appends hold only part of their value
        if row[1]:
            self.offer(map(Ref, entry_refs(serde.loads(row[2]))), adoptable=adoptable)
            self.pool.setdefault(serde.dumps(self.store.read_value(blob_key)), Ref(blob_key))
        else:
            self.pool.setdefault(row[2], Ref(blob_key))
            if adoptable:
                self.adoptable.add(blob_key)

    def value(self, value: Any, path: str, *, pending: bool = True) -> Any:
        """Store a pending write's value (or, `pending=False`, a metadata value: read on its
        own only, it may share any blob) and return its entry."""
        data = serde.dumps(value, path=path)
        if len(data) <= INLINE_MAX:
            return serde.loads(data)  # a copy, exactly as stored: the caller keeps its value
        return self._store(value, data, path, apart=pending, parts_apart=pending)

    def channel(self, name: str, value: Any, previous: Any) -> Any:
        """Store a channel's new value, as an append to `previous` when the list only grew."""
        if type(value) is list and isinstance(previous, Ref):
            # the list the previous value was, grown by new items: only they are encoded
            tail = self.store.appended_items(previous.key, value)
            appended = None if tail is None else self._append(value, previous.key, tail=tail)
            if appended is not None:
                assert tail is not None
                self.store.keep_appended(previous.key, appended.key, tail)
                return appended
        data = serde.dumps(value, path=name)
        if len(data) <= INLINE_MAX:
            return serde.loads(data)
        if type(value) is list and isinstance(previous, Ref):
            appended = self._append(value, previous.key, data=data)
            if appended is not None:
                self.store.keep_decoded(appended.key, value)
                return appended
        found = self.pool.get(data)
        if isinstance(found, Ref) and found.key in self.adopted:
            self.pool.pop(data)  # now an append: read as a channel it would be the whole list
        entry = self._store(value, data, name, values_only=True, parts_apart=True)
        self.protect([entry])
        if isinstance(entry, Ref):
            length = len(value) if type(value) is list else -1
            self.store.remember(entry.key, _ChannelInfo(data, length, 0, len(data), 0))
            self.store.keep_decoded(entry.key, value)
        return entry

    def _append(
        self,
        value: list[Any],
        base_key: int,
        *,
        data: bytes | None = None,
        tail: list[Any] | None = None,
    ) -> Ref | None:
        """Store `value` as the items it adds to the list at `base_key`: given the whole
        value encoded (`data`), or the new items (`tail`) when the rest is known unchanged."""
        base = self.store.channel_info(base_key)
        if base.length < 0 or len(value) <= base.length:
            return None
        if base.depth + 1 >= CHAIN_DEPTH_MIN and base.appended_bytes >= base.keyframe_bytes:
            return None  # time for a keyframe
        if base.depth + 1 >= CHAIN_DEPTH_MAX:
            return None  # readers refuse longer chains as damaged
        if tail is not None:
            if len(value) - len(tail) != base.length:
                return None
            try:
                delta = serde.dumps(tail)
            except SerializationError:
                return None  # encoding the whole value names what cannot be stored
            data = _array_header(len(value)) + _body(base.data) + _body(delta)
        else:
            assert data is not None
            old_body, new_body = _body(base.data), _body(data)
            if not new_body.startswith(old_body):
                return None
            delta = _array_header(len(value) - base.length) + new_body[len(old_body) :]
        shared = self.pool.get(delta)
        if isinstance(shared, Ref) and self._adopt(shared.key, base_key):
            blob_key = shared.key
        else:
            if isinstance(shared, Ref):
                stored, is_record = serde.dumps(shared), True
            else:
                stored, is_record = delta, False
            blob_key = self._insert(stored, base_key=base_key, is_record=is_record)
        info = _ChannelInfo(
            data, len(value), base.depth + 1, base.keyframe_bytes, base.appended_bytes + len(delta)
        )
        self.store.remember(blob_key, info)
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
        cursor = self.store.conn.execute(
            "UPDATE blobs SET base_key = :base_key WHERE blob_key = :blob_key AND base_key IS NULL",
            {"base_key": base_key, "blob_key": blob_key},
        )
        self.adoptable.discard(blob_key)
        if cursor.rowcount != 1:
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
        found = self.pool.get(data)
        if found is not None:
            as_channel = self._read_as_channel(found)
            if not (apart and as_channel) and not (
                values_only and isinstance(found, Ref) and not as_channel
            ):
                return found
        entry: Any = None
        if type(value) is dict:
            record = {
                key: self._part(
                    item, f"{path}.{key}" if isinstance(key, str) else path, apart=parts_apart
                )
                for key, item in value.items()
            }
            if any(isinstance(item, Ref) for item in record.values()):
                record_data = serde.dumps(record)
                entry = (
                    record
                    if len(record_data) <= INLINE_MAX
                    else Ref(self._insert(record_data, is_record=True))
                )
        if entry is None:
            entry = Ref(self._insert(data))
        self.pool[data] = entry
        return entry

    def _part(self, item: Any, path: str, *, apart: bool) -> Any:
        data = serde.dumps(item, path=path)
        if len(data) < RECORD_ENTRY_MIN:
            return serde.loads(data)
        entry = self._store(item, data, path, apart=apart, parts_apart=apart)
        # only references go into a record: a nested inline record would not be resolved
        return entry if isinstance(entry, Ref) else item

    def _insert(self, data: bytes, *, base_key: int | None = None, is_record: bool = False) -> int:
        cursor = self.store.conn.execute(
            _INSERT, {"base_key": base_key, "is_record": int(is_record), "value": data}
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid


def _older(blob_key: int, links: Iterable[int]) -> None:
    """Refuse a blob linking to itself or a newer blob: ttcli never writes one."""
    for link in links:
        if link >= blob_key:
            raise CorruptValueError(
                f"stored value {blob_key} points at {link}, not an older value (a loop)"
            )


def _body(data: bytes) -> bytes:
    """A msgpack array without its header."""
    first = data[0]
    if 0x90 <= first <= 0x9F:
        return data[1:]
    if first == 0xDC:
        return data[3:]
    if first == 0xDD:
        return data[5:]
    raise CorruptValueError("expected an encoded list")


def _joined_lists(parts: list[bytes]) -> bytes | None:
    """One encoded list of the items of several encoded lists, or None if one is not a list
    (then the caller decodes blob by blob and says which one is wrong)."""
    count, bodies = 0, []
    for data in parts:
        first = data[:1]
        if not first:
            return None
        if 0x90 <= first[0] <= 0x9F:
            count, body = count + (first[0] & 0x0F), data[1:]
        elif first[0] == 0xDC and len(data) >= 3:
            count, body = count + int.from_bytes(data[1:3], "big"), data[3:]
        elif first[0] == 0xDD and len(data) >= 5:
            count, body = count + int.from_bytes(data[1:5], "big"), data[5:]
        else:
            return None
        bodies.append(body)
    return _array_header(count) + b"".join(bodies)


def _array_header(count: int) -> bytes:
    if count < 16:
        return bytes([0x90 | count])
    if count < 0x10000:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")
