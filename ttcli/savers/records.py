"""Encoding a checkpoint's state, metadata and pending writes into the row of `schema.sql`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, Protocol

from ttcli.errors import CorruptValueError, SerializationError
from ttcli.savers import serde
from ttcli.savers.blobs import entries_refs
from ttcli.savers.serde import Serializer
from ttcli.uuid6 import bytes_text, canonical_bytes

#: an entry (see blobs.py) for each of a task's writes, by write index
TaskWrites = dict[int, tuple[str, Any]]


class Names(Protocol):
    """Channel, node and task path names, stored once by the backend and referred to by an
    integer key; and the serializer the rows that use them are encoded with. The SQLite one
    is `ttcli.savers.sql.names`."""

    serde: Serializer

    def key(self, name: str) -> int:
        """The key of a name, adding it (inside a write transaction)."""

    def name(self, key: int) -> str:
        """The name of a key (CorruptValueError if there is none)."""

    def forget(self) -> None:
        """Drop cached keys (after a rollback they may not exist)."""


KEYFRAME_DEPTH = 16  # a full state at least every this many checkpoints of a lineage


class VerbatimNames:
    """`names` with the rows that use them read and written in their stored form
    (`serde.Verbatim`)."""

    serde: Serializer = serde.VERBATIM

    def __init__(self, names: Names) -> None:
        self.names = names

    def key(self, name: str) -> int:
        return self.names.key(name)

    def name(self, key: int) -> str:
        return self.names.name(key)

    def forget(self) -> None:
        self.names.forget()


@dataclass
class State:
    """The non-value part of a checkpoint, with its values as entries (see blobs.py)."""

    #: channel -> [version] (no value) or [version, entry]
    channels: dict[str, list[Any]]
    versions_seen: dict[str, dict[str, int]]
    updated: list[str] | None
    #: metadata.writes as (node, entry) pairs, or None
    writes: list[tuple[str, Any]] | None
    #: checkpoints since the last full state in this lineage (0: stored in full)
    depth: int = 0

    def encode(self, names: Names, parent: State | None) -> bytes:
        """Encode in full, or as the changes since `parent` when that keeps reads short."""
        full = parent is None or parent.depth + 1 >= KEYFRAME_DEPTH
        self.depth = 0 if parent is None or full else parent.depth + 1
        channels: dict[str, Any] = self.channels
        seen: dict[str, Any] = self.versions_seen
        if parent is not None and not full:
            channels = _changes(parent.channels, self.channels)
            seen = _changes(parent.versions_seen, self.versions_seen)
        return names.serde.dumps(
            [
                self.depth,
                {names.key(chan): entry for chan, entry in channels.items()},
                {
                    names.key(node): None if m is None else {names.key(c): v for c, v in m.items()}
                    for node, m in seen.items()
                },
                None if self.updated is None else [names.key(chan) for chan in self.updated],
                None if self.writes is None else [self._write(names, n, e) for n, e in self.writes],
            ],
            path="checkpoint",
        )

    def _write(self, names: Names, node: str, entry: Any) -> list[Any]:
        # the input's writes are the __start__ channel's value: name the channel, not again
        for channel in self.updated or ():
            found = self.channels.get(channel, [])
            if len(found) == 2 and found[1] is entry and entry is not None:
                return [names.key(node), 0, names.key(channel)]
        return [names.key(node), entry]

    @staticmethod
    def depth_of(data: bytes) -> int:
        depth = serde.loads(data)[0]  # plain data: any serializer reads it alike
        if not isinstance(depth, int):
            raise CorruptValueError("checkpoint state has the wrong shape")
        return depth

    @classmethod
    def decode(cls, data: bytes, names: Names, parent: State | None) -> State:
        """Decode a row's state; a delta needs its parent's resolved state."""
        try:
            depth, channels, seen, updated, writes = names.serde.loads(data)
            channels = {names.name(k): entry for k, entry in channels.items()}
            seen = {
                names.name(n): None if m is None else {names.name(c): v for c, v in m.items()}
                for n, m in seen.items()
            }
            if depth:
                if parent is None:
                    raise CorruptValueError("checkpoint state is a delta whose parent is missing")
                channels = _apply(parent.channels, channels)
                seen = _apply(parent.versions_seen, seen)
            return cls(
                channels=channels,
                versions_seen=seen,
                updated=None if updated is None else [names.name(k) for k in updated],
                writes=None
                if writes is None
                else [_read_write(names, channels, w) for w in writes],
                depth=depth,
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise CorruptValueError(f"checkpoint state has the wrong shape ({exc})") from None


def _read_write(names: Names, channels: dict[str, list[Any]], stored: list[Any]) -> tuple[str, Any]:
    if len(stored) == 3:  # [node, 0, channel]: the same value as that channel's
        return names.name(stored[0]), channels[names.name(stored[2])][1]
    return names.name(stored[0]), stored[1]


def _changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    changed: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    changed.update({k: None for k in old if k not in new})
    return changed


def _apply(old: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(old)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def encode_pending(pending: dict[str, tuple[str, TaskWrites]], names: Names) -> bytes:
    return names.serde.dumps(
        {
            _task_key(task_id): [
                names.key(path),
                [[i, names.key(c), e] for i, (c, e) in writes.items()],
            ]
            for task_id, (path, writes) in pending.items()
        },
        path="pending writes",
    )


def decode_pending(data: bytes | None, names: Names) -> dict[str, tuple[str, TaskWrites]]:
    if data is None:
        return {}
    try:
        return {
            _task_text(task): (names.name(path), {i: (names.name(c), e) for i, c, e in writes})
            for task, (path, writes) in names.serde.loads(data).items()
        }
    except (TypeError, ValueError, AttributeError) as exc:
        raise CorruptValueError(f"pending writes have the wrong shape ({exc})") from None


def source_and_step(metadata: Mapping[str, Any]) -> tuple[str, int]:
    """The metadata keys the SQL databases keep as columns: `step`, a 64-bit integer every
    checkpoint has, and `source`, text, "" when absent (LangGraph's DeltaChannel writes a
    first checkpoint with a step alone)."""
    source, step = metadata.get("source", ""), metadata.get("step")
    if (
        not isinstance(source, str)
        or not isinstance(step, int)
        or isinstance(step, bool)
        or not -(2**63) <= step < 2**63
    ):
        raise SerializationError(
            "checkpoint metadata needs an integer 'step' (64 bits) and, if it has a 'source', "
            "a text one"
        )
    return source, step


def node_writes(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Metadata's `writes`: what each node returned, by node; None if it has none.

    Raises:
        SerializationError: it is something else, which no saver could list by node.
    """
    writes = metadata.get("writes")
    if writes is not None and not isinstance(writes, Mapping):
        raise SerializationError(
            f"cannot store checkpoint metadata: 'writes' maps each node to what it wrote, "
            f"not a {type(writes).__name__}; give a dict or None"
        )
    return writes


#: levels of maps and lists metadata may nest: its JSON must read in SQLite (whose JSON
#: functions stop at 1,000 since 3.45, and `json_patch` adds one) and in Python's `json`
#: at the default recursion limit
METADATA_DEPTH_MAX = 500


def check_nesting(metadata: dict[str, Any], size: int) -> None:
    """Raises: SerializationError: `metadata`, whose JSON is `size` characters long, nests
    more than METADATA_DEPTH_MAX levels (it would be stored, then fail every read)."""
    if size <= 2 * METADATA_DEPTH_MAX:  # each level takes two characters at least
        return
    level: list[Any] = [metadata]
    for _ in range(METADATA_DEPTH_MAX):
        level = [  # JSON's containers: `json.dumps` took no other
            child
            for value in level
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, (dict, list, tuple))  # noqa: UP038 - the tuple form is faster
        ]
        if not level:
            return
    raise SerializationError(
        f"cannot store checkpoint metadata: it nests more than {METADATA_DEPTH_MAX} levels of "
        "maps and lists; store fewer levels"
    )


def metadata_columns(metadata: Mapping[str, Any]) -> tuple[str, int, str | None, str | None]:
    """(source, step, writers JSON, other keys JSON) for a checkpoint row.

    The row keeps `parents` only when it is not `{}`, and marks keys the metadata lacks
    (parents, writes, source) with null, so reading rebuilds exactly what was stored.
    """
    source, step = source_and_step(metadata)
    writes = node_writes(metadata)
    writers = None if writes is None else _json_list(writes)
    extra = {k: v for k, v in metadata.items() if k not in ("source", "step", "parents", "writes")}
    if "parents" not in metadata:
        extra["parents"] = None
    elif metadata["parents"] != {}:
        extra["parents"] = metadata["parents"]
    if "writes" not in metadata:
        extra["writes"] = None
    if "source" not in metadata:
        extra["source"] = None
    return source, step, writers, metadata_json(extra) if extra else None


def metadata_json(metadata: dict[str, Any]) -> str:
    """The metadata keys a row keeps as JSON, as JSON.

    Raises:
        SerializationError: a value is not JSON, or a NaN or an infinity (no database's JSON
            functions would read them back), or the keys nest too deeply (`check_nesting`).
    """
    try:
        text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:  # too deep for `json`, or called from deep in a stack
        check_nesting(metadata, 2 * METADATA_DEPTH_MAX + 1)
        raise
    except (TypeError, ValueError) as exc:
        raise SerializationError(
            f"cannot store checkpoint metadata: {exc}; use JSON values"
        ) from None
    check_nesting(metadata, len(text))
    return text


def _json_list(names: Iterable[Any]) -> str:
    """`json.dumps(list(names))`; node names (texts) at C speed: a row's writers are
    written at every step, and a `json.dumps` call costs more than its work here."""
    try:
        return "[" + ", ".join(map(encode_basestring_ascii, names)) + "]"
    except TypeError:  # a name that is not text
        return json.dumps(list(names))


#: the keys a row keeps apart from the other metadata, a null among which marks them absent
_MARKED = frozenset({"source", "parents", "writes"})


def metadata_of(source: str, step: int, other: str | None, writes: Any) -> dict[str, Any]:
    """A row's metadata as stored; a user's key holding None stays (only the keys the row
    keeps apart are marked absent by a null, see `metadata_columns`)."""
    metadata: dict[str, Any] = {"source": source, "step": step, "parents": {}, "writes": writes}
    for key, value in json.loads(other or "{}").items():
        if value is None and key in _MARKED:
            metadata.pop(key, None)
        else:
            metadata[key] = value
    return metadata


def _task_key(task_id: str) -> bytes | str:
    return canonical_bytes(task_id) or task_id


def _task_text(task: bytes | str) -> str:
    if isinstance(task, bytes):
        if len(task) != 16:
            raise ValueError("a task id stored as bytes has 16 of them")
        return bytes_text(task)
    return task


def pack_parent(child: bytes, parent: bytes | None) -> bytes | None:
    """The parent's id without the leading bytes it shares with its child's (their times
    are close, so ids made together share their first bytes)."""
    if parent is None:
        return None
    shared = 0
    while shared < len(parent) - 1 and child[shared] == parent[shared]:
        shared += 1
    return parent[shared:]


def unpack_parent(child: bytes, stored: bytes | None) -> bytes | None:
    return None if stored is None else child[: len(child) - len(stored)] + stored


def state_refs(stored: Any) -> list[int]:
    """Blob keys a stored state (decoded, full or delta) points at directly.

    Raises:
        CorruptValueError: the state is not of the shape ttcli stores (a forged row).
    """
    try:
        _depth, channels, _seen, _updated, writes = stored
        entries = [entry[1] for entry in channels.values() if entry is not None and len(entry) == 2]
        entries += [write[1] for write in writes or () if len(write) == 2]
    except (TypeError, ValueError, AttributeError):
        raise CorruptValueError("a stored checkpoint state is not of ttcli's shape") from None
    return entries_refs(entries)


def pending_refs(stored: Any) -> list[int]:
    """Blob keys stored pending writes (decoded) point at directly.

    Raises:
        CorruptValueError: they are not of the shape ttcli stores (a forged row).
    """
    try:
        entries = [entry for _path, writes in stored.values() for _idx, _channel, entry in writes]
    except (TypeError, ValueError, AttributeError):
        raise CorruptValueError("stored pending writes are not of ttcli's shape") from None
    return entries_refs(entries)
