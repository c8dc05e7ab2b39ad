"""Values stored once per change: blobs, list appends, records, and reading them back.

A checkpoint or a pending write refers to a value either inline (small values) or by
`Ref(blob_key)`. A blob is msgpack. Three shapes keep the file growing with change rather
than with steps:

* **reuse**: an unchanged channel points at its parent's blob;
* **append**: a list that only grew is a blob of the new items with `base_key` pointing at the
  list it extends (its items may be a `Ref` to an equal blob, e.g. the write that added them);
* **record**: a map whose large entries are stored as their own blobs, so an input dict, a
  node's output and the pending write carrying the same list share one copy.

Equal bytes are found only among candidates offered for the current put (the parent's writes,
the checkpoint's own new values), never by a global index, so the dedup costs no extra index.
Blobs are never updated after insert.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ttcli.errors import CorruptValueError
from ttcli.savers import serde
from ttcli.savers.serde import Ref

INLINE_MAX = 24  # values encoding to this many bytes or fewer live inline in their row
RECORD_ENTRY_MIN = 48  # map entries at least this large become blobs of their own
# An append chain gets a keyframe (a full copy) only once it is this deep AND its appends add
# up to the size of its last keyframe: keyframes then cost at most the value's size again,
# and a read walks a bounded number of rows per byte of value.
CHAIN_DEPTH_MIN = 1024
RECENT_MAX = 256  # encoded channel values remembered for append detection

_INSERT = """
INSERT INTO blobs (thread_key, base_key, is_record, value)
VALUES (:thread_key, :base_key, :is_record, :value)
"""

_CHAIN = """
WITH RECURSIVE chain (blob_key, base_key, is_record, value, depth) AS (
    SELECT blob_key, base_key, is_record, value, 0
    FROM blobs
    WHERE blob_key = :blob_key
    UNION ALL
    SELECT b.blob_key, b.base_key, b.is_record, b.value, chain.depth + 1
    FROM blobs AS b
    JOIN chain ON b.blob_key = chain.base_key
)
SELECT blob_key, base_key, is_record, value
FROM chain
ORDER BY depth DESC
"""

_ONE = """
SELECT is_record, value
FROM blobs
WHERE blob_key = :blob_key
"""


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

    def writer(self, thread_key: int) -> BlobWriter:
        return BlobWriter(self, thread_key)

    # -- reading ---------------------------------------------------------------------------

    def load(self, entry: Any) -> Any:
        """A channel value from its checkpoint entry (inline, or a Ref to a blob chain)."""
        return self.read_channel(entry.key) if isinstance(entry, Ref) else entry

    def load_value(self, entry: Any) -> Any:
        """A write or metadata value from its entry (inline, or a Ref to one blob)."""
        return self.read_value(entry.key) if isinstance(entry, Ref) else entry

    def read_value(self, blob_key: int) -> Any:
        row = self.conn.execute(_ONE, {"blob_key": blob_key}).fetchone()
        if row is None:
            raise CorruptValueError(f"stored value {blob_key} is missing")
        return self._decode(row[0], row[1], blob_key)

    def read_channel(self, blob_key: int) -> Any:
        rows = self.conn.execute(_CHAIN, {"blob_key": blob_key}).fetchall()
        if not rows or rows[-1][0] != blob_key or rows[0][1] is not None:
            raise CorruptValueError(f"stored value {blob_key} is missing or broken")
        value = self._decode(rows[0][2], rows[0][3], rows[0][0])
        if len(rows) == 1:
            return value
        if not isinstance(value, list):
            raise CorruptValueError(f"stored value {blob_key} appends to a non-list")
        for key, _base, is_record, data in rows[1:]:
            items = self._decode(is_record, data, key)
            if not isinstance(items, list):
                raise CorruptValueError(f"stored value {key} is an append without items")
            value.extend(items)
        return value

    def _decode(self, is_record: int, data: bytes, blob_key: int) -> Any:
        try:
            value = serde.loads(data)
        except CorruptValueError as exc:
            raise CorruptValueError(f"stored value {blob_key}: {exc}") from None
        if not is_record:
            return value
        if isinstance(value, Ref):
            return self.read_value(value.key)
        if isinstance(value, dict):
            return {k: self.read_value(v.key) if isinstance(v, Ref) else v for k, v in value.items()}
        raise CorruptValueError(f"stored value {blob_key} is a record of the wrong shape")

    def references(self, blob_key: int, is_record: int, data: bytes) -> list[int]:
        """The blobs a record blob points at (for garbage collection and copies)."""
        if not is_record:
            return []
        value = serde.loads(data)
        if isinstance(value, Ref):
            return [value.key]
        return [v.key for v in value.values() if isinstance(v, Ref)]

    # -- append detection -------------------------------------------------------------------

    def channel_info(self, blob_key: int) -> _ChannelInfo:
        info = self._recent.get(blob_key)
        if info is not None:
            self._recent.move_to_end(blob_key)
            return info
        rows = self.conn.execute(_CHAIN, {"blob_key": blob_key}).fetchall()
        value = self.read_channel(blob_key)
        data = serde.dumps(value)
        appended = sum(len(row[3]) for row in rows[1:])
        info = _ChannelInfo(
            data=data,
            length=len(value) if isinstance(value, list) else -1,
            depth=len(rows) - 1,
            keyframe_bytes=len(rows[0][3]),
            appended_bytes=appended,
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


class BlobWriter:
    """Stores the values of one put or put_writes, sharing blobs with offered candidates."""

    def __init__(self, store: BlobStore, thread_key: int) -> None:
        self.store = store
        self.thread_key = thread_key
        self.pool: dict[bytes, int] = {}

    def offer(self, candidates: Iterable[tuple[int, int, bytes]]) -> None:
        """Blobs (key, is_record, bytes) that new values may share; records offer their parts."""
        for blob_key, is_record, data in candidates:
            if is_record:
                for part in self.store.references(blob_key, is_record, data):
                    row = self.store.conn.execute(_ONE, {"blob_key": part}).fetchone()
                    if row is not None and not row[0]:
                        self.pool.setdefault(row[1], part)
                self.pool.setdefault(serde.dumps(self.store.read_value(blob_key)), blob_key)
            else:
                self.pool.setdefault(data, blob_key)

    def value(self, value: Any, path: str) -> Any:
        """Store a write or metadata value: inline if small, else a Ref to a (shared) blob."""
        data = serde.dumps(value, path=path)
        if len(data) <= INLINE_MAX:
            return value
        return Ref(self._blob(value, data, path))

    def channel(self, name: str, value: Any, previous: Any) -> Any:
        """Store a channel's new value, as an append to `previous` when the list only grew."""
        data = serde.dumps(value, path=name)
        if len(data) <= INLINE_MAX:
            return value
        if type(value) is list and isinstance(previous, Ref):
            appended = self._append(value, data, previous.key)
            if appended is not None:
                return appended
        blob_key = self._blob(value, data, name)
        length = len(value) if type(value) is list else -1
        self.store.remember(blob_key, _ChannelInfo(data, length, 0, len(data), 0))
        return Ref(blob_key)

    def _append(self, value: list[Any], data: bytes, base_key: int) -> Ref | None:
        base = self.store.channel_info(base_key)
        if base.length < 0 or len(value) <= base.length:
            return None
        old_body, new_body = _body(base.data), _body(data)
        if not new_body.startswith(old_body):
            return None
        if base.depth + 1 >= CHAIN_DEPTH_MIN and base.appended_bytes >= base.keyframe_bytes:
            return None  # time for a keyframe
        delta = _array_header(len(value) - base.length) + new_body[len(old_body) :]
        shared = self.pool.get(delta)
        stored = serde.dumps(Ref(shared)) if shared is not None else delta
        blob_key = self._insert(stored, base_key=base_key, is_record=shared is not None)
        self.store.remember(
            blob_key,
            _ChannelInfo(
                data,
                len(value),
                base.depth + 1,
                base.keyframe_bytes,
                base.appended_bytes + len(delta),
            ),
        )
        return Ref(blob_key)

    def _blob(self, value: Any, data: bytes, path: str) -> int:
        found = self.pool.get(data)
        if found is not None:
            return found
        if type(value) is dict:
            record: dict[Any, Any] = {}
            split = False
            for key, item in value.items():
                item_data = serde.dumps(item, path=f"{path}.{key}")
                if len(item_data) >= RECORD_ENTRY_MIN:
                    record[key] = Ref(self._blob(item, item_data, f"{path}.{key}"))
                    split = True
                else:
                    record[key] = item
            if split:
                record_data = serde.dumps(record)
                blob_key = self.pool.get(record_data) or self._insert(record_data, is_record=True)
                self.pool[data] = self.pool[record_data] = blob_key
                return blob_key
        blob_key = self._insert(data)
        self.pool[data] = blob_key
        return blob_key

    def _insert(self, data: bytes, *, base_key: int | None = None, is_record: bool = False) -> int:
        cursor = self.store.conn.execute(
            _INSERT,
            {
                "thread_key": self.thread_key,
                "base_key": base_key,
                "is_record": int(is_record),
                "value": data,
            },
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid


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


def _array_header(count: int) -> bytes:
    if count < 16:
        return bytes([0x90 | count])
    if count < 0x10000:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")
