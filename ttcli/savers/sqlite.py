"""SqliteSaver: the saver contract on one SQLite file, in the format of `schema.sql`.

Several processes may write one file: WAL journal, a busy timeout, and `BEGIN IMMEDIATE` for
every write, so a checkpoint with its values commits as one transaction or not at all. Reads
run in a read transaction, so they see one consistent snapshot while others write.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import (
    CheckpointNotFoundError,
    ConfigError,
    CorruptValueError,
    SerializationError,
    StorageError,
)
from ttcli.savers import serde
from ttcli.savers.base import (
    NOT_LOADED,
    WRITES_IDX_MAP,
    BaseSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    TaskWrite,
    ThreadSummary,
    validate_filter,
)
from ttcli.savers.blobs import BlobStore, entry_refs
from ttcli.savers.migrations import ensure_schema
from ttcli.savers.params import chunks
from ttcli.savers.records import (
    METADATA_SQL,
    Names,
    State,
    decode_pending,
    encode_pending,
    metadata_columns,
    metadata_of,
    pack_parent,
    pending_refs,
    state_refs,
    unpack_parent,
)
from ttcli.savers.serde import Ref
from ttcli.savers.sqlite_copy import RowCopy, same_file
from ttcli.savers.sqlite_errors import storage_error
from ttcli.uuid6 import dashed, id_micros

DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another before giving up

_THREAD = """
SELECT thread_key
FROM threads
WHERE thread_id = :thread_id
  AND checkpoint_ns = :checkpoint_ns
"""

_NEW_THREAD = """
INSERT INTO threads (thread_id, checkpoint_ns)
VALUES (:thread_id, :checkpoint_ns)
"""

_SELECT = """
SELECT c.thread_key, t.thread_id, t.checkpoint_ns, c.checkpoint_id, c.parent_id, c.created_at,
       c.source, c.step, c.metadata, c.state
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
"""

_BY_ID = (
    _SELECT
    + """
WHERE c.thread_key = :thread_key
  AND c.checkpoint_id = :checkpoint_id
"""
)

_LATEST = (
    _SELECT
    + """
WHERE c.thread_key = :thread_key
ORDER BY c.checkpoint_id DESC
LIMIT 1
"""
)

_STATE = """
SELECT parent_id, state, parent_writes
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
"""

_COUNT = "UPDATE threads SET checkpoints = checkpoints + :change WHERE thread_key = :thread_key"

_INSERT_CHECKPOINT = """
INSERT INTO checkpoints (
    thread_key, checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
    parent_writes
)
VALUES (
    :thread_key, :checkpoint_id, :parent_id, :source, :step, :writers, :metadata, :created_at,
    :state, :parent_writes
)
"""

_LATEST_ID = """
SELECT max(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
"""

_NEXT = """
SELECT checkpoint_id, parent_id, parent_writes
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :checkpoint_id
ORDER BY checkpoint_id
LIMIT 1
"""

_BEFORE_ID = """
SELECT max(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id < :checkpoint_id
"""

_AFTER_ID = """
SELECT min(checkpoint_id)
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :checkpoint_id
"""

_DELETE_PENDING = """
DELETE FROM writes
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
"""

_PENDING = """
SELECT tasks
FROM writes
WHERE thread_key = :thread_key
  AND checkpoint_id = :checkpoint_id
"""

_BRANCH = """
INSERT OR IGNORE INTO branches (thread_key, parent_id, checkpoint_id)
VALUES (:thread_key, :parent_id, :checkpoint_id)
"""

_SET_PENDING = """
INSERT OR REPLACE INTO writes (thread_key, checkpoint_id, tasks)
VALUES (:thread_key, :checkpoint_id, :tasks)
"""

#: a checkpoint row's bytes, as SQL over `checkpoints` (the 8 stands for the step)
_ROW_BYTES = (
    "coalesce(sum(length(checkpoint_id) + coalesce(length(parent_id), 0) + length(source) + 8 "
    "+ coalesce(length(writers), 0) + coalesce(length(metadata), 0) + length(state) "
    "+ coalesce(length(parent_writes), 0)), 0) FROM checkpoints"
)

STATE_CACHE_MAX = 1024  # resolved checkpoint states kept for delta decoding


@dataclass
class _Held:
    """Pending writes put in a batch for the thread's latest checkpoint, not yet in `writes`:
    if the batch goes on to store that checkpoint's child, they move into the child's row
    without ever being written to `writes` (a superstep: its task's writes, its checkpoint)."""

    thread_key: int
    checkpoint_id: bytes
    tasks: Pending
    #: whether `writes` has a row for the checkpoint (these replace it)
    replaces: bool


@dataclass
class _BatchFacts:
    """What a batch's transaction learned: it holds the write lock, so no other process can
    change it until the batch ends."""

    threads: dict[tuple[str, str], int] = field(default_factory=dict)
    latest: dict[int, bytes | None] = field(default_factory=dict)
    held: _Held | None = None
    #: a write in the batch raised: none of the batch may be stored, even if it was caught
    failed: bool = False


Pending = dict[str, tuple[str, dict[int, tuple[str, Any]]]]


class SqliteSaver(BaseSaver):
    """Checkpoints in a SQLite file that other tools can read (see `schema.sql`).

    Example:
        with SqliteSaver.from_conn_string("agent.db") as saver:
            graph = builder.compile(checkpointer=saver)
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = str(path)
        try:
            self.conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from None
        self._lock = threading.RLock()
        self.blobs = BlobStore(self.conn)
        self.names = Names(self.conn)
        self._states: OrderedDict[tuple[int, bytes], State] = OrderedDict()
        #: bytes of rows and values deleted through this saver (committed or not), so that
        #: `prune` can say what it freed without reading the threads again
        self.deleted_bytes = 0
        self._batch_depth = 0
        self._facts = _BatchFacts()
        self._data_version: int | None = None  # PRAGMA data_version when states were cached
        #: (largest blob key before rows were first copied in, PRAGMA data_version then):
        #: see sqlite_copy; None once anything may have freed a key
        self.copy_floor: tuple[int, int] | None = None
        #: times this saver deleted blobs: a copy in progress forgets where it put blobs
        self.blob_deletions = 0
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            ensure_schema(self.conn, self.path)
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode = WAL")
            # in WAL mode, synchronous=NORMAL survives any crash of the process; only a power
            # cut can lose the last transactions
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            self.conn.close()
            raise storage_error(exc, self.path) from None
        except BaseException:
            self.conn.close()
            raise

    @classmethod
    @contextmanager
    def from_conn_string(cls, path: str | Path) -> Iterator[SqliteSaver]:
        """Open a saver for the block and close it after, like LangGraph's SqliteSaver."""
        saver = cls(path)
        try:
            yield saver
        finally:
            saver.close()

    open = from_conn_string

    def vacuum(self) -> None:
        """Give free pages back to the file system (rewrites the file; takes a write lock)."""
        with self._lock:
            try:
                self.conn.execute("VACUUM")
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for every write in the block (one commit instead of one each).

        All of it commits or none: if a write in the block raises, nothing of the block is
        stored, even if the block caught the error (it ends with a StorageError).
        """
        with self.write() as conn:
            self._batch_depth += 1
            try:
                yield
                if self._batch_depth == 1:
                    if self._facts.failed:
                        raise StorageError(
                            f"a write to {self.path} in this batch failed: nothing of the "
                            "batch was stored"
                        )
                    self._write_held(conn)
            finally:
                self._batch_depth -= 1
                if not self._batch_depth:
                    self._facts = _BatchFacts()

    @contextmanager
    def write(self, *, keep_held: bool = False) -> Iterator[sqlite3.Connection]:
        """One immediate write transaction: all of it commits, or none of it. Inside a batch,
        held pending writes are written first unless the caller takes them (`keep_held`)."""
        with self._lock:
            if self._batch_depth:  # part of the batch's transaction
                if self._facts.failed or not self.conn.in_transaction:
                    # after a failed write (SQLite itself may have rolled back) nothing more
                    # of the batch runs: on its own, each statement would commit
                    self._facts.failed = True
                    raise StorageError(
                        f"an earlier write to {self.path} in this batch failed: "
                        "nothing of the batch is stored"
                    )
                try:
                    if not keep_held:
                        self._write_held(self.conn)
                    yield self.conn
                except BaseException as exc:
                    self._facts.failed = True
                    if isinstance(exc, sqlite3.Error):
                        raise storage_error(exc, self.path) from None
                    raise
                return
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None
            try:
                self._notice_others()
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self.forget()
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(exc, self.path) from None
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot while other processes write."""
        with self._lock:
            if self._batch_depth:  # reads inside a batch see its writes
                if self._facts.failed:
                    raise StorageError(
                        f"an earlier write to {self.path} in this batch failed: "
                        "nothing of the batch is stored"
                    )
                try:
                    self._write_held(self.conn)
                    yield self.conn
                except sqlite3.Error as exc:
                    raise storage_error(exc, self.path) from None
                return
            try:
                self.conn.execute("BEGIN")
                self._notice_others()
                yield self.conn
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    def _notice_others(self) -> None:
        """Drop the cached checkpoint states if another connection changed the file: it may
        have deleted a thread whose key a new thread now has, holding copies with the same
        checkpoint ids (blob keys are never reused, so the value caches stay right)."""
        (version,) = self.conn.execute("PRAGMA data_version").fetchone()
        if version != self._data_version:
            self._data_version = version
            self._states.clear()

    def forget(self) -> None:
        """Drop cached names, states and values (after a rollback, or rows deleted)."""
        self.blobs.forget()
        self.names.forget()
        self._states.clear()
        self._facts.threads.clear()
        self._facts.latest.clear()

    # -- the saver contract --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        ref = self.ref(config)
        with self.read() as conn:
            row = self._row(conn, ref)
            return self._tuple(row) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        query, params = self._list_query(config, filter, before, limit)
        with self.read() as conn:
            found = [self._tuple(row) for row in conn.execute(query, params).fetchall()]
        yield from found

    def list_metadata(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> builtins.list[CheckpointTuple]:
        """Like `list`, without reading a single stored value: values stored apart from the
        checkpoint row read as NOT_LOADED (small ones, such as the triggers that say what
        runs next, are there), there are no pending writes, and metadata.writes maps each
        node to None."""
        query, params = self._list_query(config, filter, before, limit)
        with self.read() as conn:
            rows = conn.execute(query, params).fetchall()
            return [self._tuple(row, values=False) for row in rows]

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        ref = self.ref(config)
        checkpoint_id = _require_id(checkpoint["id"])
        parent_id = _require_id(ref.checkpoint_id) if ref.checkpoint_id else None
        created_at = _micros(checkpoint["ts"])
        source, step, writers, other = metadata_columns(metadata)
        with self.write(keep_held=True) as conn:
            held, self._facts.held = self._facts.held, None  # writes this may take over
            thread_key = self._thread_key(conn, ref, create=True)
            assert thread_key is not None
            latest = self._latest(conn, thread_key)
            if held is not None and not (
                held.thread_key == thread_key
                and held.checkpoint_id == parent_id == latest
                and checkpoint_id > latest
            ):  # not the held writes' child: they go to `writes` first
                self._facts.held, held = held, None
                self._write_held(conn)
            follows = self._place(conn, thread_key, checkpoint_id, parent_id, latest)
            writer = self.blobs.writer()
            parent = None
            if parent_id is not None:
                if parent_id != latest and not self._exists(conn, thread_key, parent_id):
                    # gone (another process pruned it): its cached state must not be the base
                    # of a delta, nor its values be taken as still stored
                    self._states.pop((thread_key, parent_id), None)
                parent = self._state(conn, thread_key, parent_id)
            previous: dict[str, builtins.list[Any]] = {}
            moved = None
            if parent is not None and parent_id is not None:
                previous = parent.channels
                writer.protect(entry[1] for entry in previous.values() if len(entry) == 2)
                if held is not None:  # the parent's writes, put in this batch
                    pending = held.tasks
                    moved = encode_pending(pending, self.names)
                    if held.replaces:
                        params = {"thread_key": thread_key, "checkpoint_id": parent_id}
                        conn.execute(_DELETE_PENDING, params)
                elif follows:  # the parent is the latest: all its writes are in `writes`
                    moved = self._take_pending(conn, thread_key, parent_id)
                    pending = decode_pending(moved, self.names)
                else:
                    pending = self._pending(conn, thread_key, parent_id)
                # only the latest checkpoint's writes may become an append: an older one may
                # have children already reading one of them as a channel value, which adopting
                # it would change
                writer.offer(
                    (e for _, writes in pending.values() for _, e in writes.values()),
                    adoptable=follows,
                )
            values, versions = checkpoint["channel_values"], checkpoint["channel_versions"]
            channels: dict[str, builtins.list[Any]] = {}
            for name in dict.fromkeys([*values, *versions]):
                entry: builtins.list[Any] = [versions.get(name)]
                if name in values:
                    before = previous.get(name, [])
                    unchanged = (
                        len(before) == 2 and before[0] == entry[0] and name not in new_versions
                    )
                    prior = before[1] if len(before) == 2 else None
                    entry.append(prior if unchanged else writer.channel(name, values[name], prior))
                channels[name] = entry
            writes = metadata.get("writes")
            state = State(
                channels=channels,
                # copies: the state is cached, and the caller goes on changing its checkpoint
                versions_seen={n: dict(seen) for n, seen in checkpoint["versions_seen"].items()},
                updated=None if (u := checkpoint["updated_channels"]) is None else builtins.list(u),
                writes=[
                    (node, writer.value(value, f"writes.{node}", pending=False))
                    for node, value in writes.items()
                ]
                if isinstance(writes, Mapping)
                else None,
            )
            conn.execute(
                _INSERT_CHECKPOINT,
                {
                    "thread_key": thread_key,
                    "checkpoint_id": checkpoint_id,
                    "parent_id": pack_parent(checkpoint_id, parent_id),
                    "source": source,
                    "step": step,
                    "writers": writers,
                    "metadata": other,
                    # the id carries the creation time; store it only if they differ
                    "created_at": None if created_at == id_micros(checkpoint_id) else created_at,
                    "state": state.encode(self.names, parent),
                    "parent_writes": moved,
                },
            )
            conn.execute(_COUNT, {"thread_key": thread_key, "change": 1})
            if self._batch_depth and (latest is None or checkpoint_id > latest):
                self._facts.latest[thread_key] = checkpoint_id
            self._cache(thread_key, checkpoint_id, state)
        return ref.at(checkpoint["id"]).to_config()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        ref = self.ref(config)
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self.write() as conn:
            thread_key = self._thread_key(conn, ref)
            checkpoint_id = _id_bytes(ref.checkpoint_id or "")
            if (
                thread_key is None
                or checkpoint_id is None
                or not self._exists(conn, thread_key, checkpoint_id)
            ):
                raise CheckpointNotFoundError(str(ref.checkpoint_id), ref.thread_id)
            state = self._state(conn, thread_key, checkpoint_id)
            assert state is not None
            row = conn.execute(
                _PENDING, {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
            ).fetchone()
            table = decode_pending(row[0] if row else None, self.names)
            # the latest checkpoint has no next row holding writes moved into it
            latest = self._latest(conn, thread_key) == checkpoint_id
            pending = (
                table if latest else self._pending(conn, thread_key, checkpoint_id, table=table)
            )
            writer = self.blobs.writer()
            updated = [
                entry[1]
                for name, entry in state.channels.items()
                if name in (state.updated or ()) and len(entry) == 2
            ]
            writer.protect(updated)  # values of a checkpoint: not to be shared by a write
            writer.offer(updated)
            saved = set(pending.get(task_id, (task_path, {}))[1])
            _path, stored = table.setdefault(task_id, (task_path, {}))
            for position, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, position)
                if idx in saved and not replace:
                    continue  # a write already saved for this task is kept, as in LangGraph
                stored[idx] = (channel, writer.value(value, channel))
            if self._batch_depth and latest:  # its child may follow in this batch
                self._facts.held = _Held(thread_key, checkpoint_id, table, row is not None)
            else:
                self._set_pending(conn, thread_key, checkpoint_id, table)

    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        ref = self.ref(config)
        with self.read() as conn:
            row = self._row(conn, ref) if ref.checkpoint_id is not None else None
            if row is None:
                return []
            return [
                (task_id, path, channel, self.blobs.load_value(entry))
                for task_id, path, channel, entry in _in_order(self._pending(conn, row[0], row[3]))
            ]

    def delete_checkpoints(
        self, config: RunnableConfig, checkpoint_ids: Sequence[str], *, collect: bool = True
    ) -> None:
        ref = self.ref(config)
        wanted = {key for key in map(_id_bytes, checkpoint_ids) if key is not None}
        with self.write() as conn:
            thread_key = self._thread_key(conn, ref)
            if thread_key is None:
                return
            doomed = self._present(conn, thread_key, wanted)
            if doomed:
                self._delete_rows(conn, thread_key, doomed)
            if collect:
                self._collect(conn, thread_key)
                if not self._has_rows(conn, thread_key):
                    conn.execute("DELETE FROM threads WHERE thread_key = ?", (thread_key,))
        self.forget()

    def _present(
        self, conn: sqlite3.Connection, thread_key: int, ids: set[bytes]
    ) -> builtins.list[bytes]:
        found: builtins.list[bytes] = []
        for chunk in chunks(sorted(ids)):
            marks = ",".join("?" * len(chunk))
            found += [
                key
                for (key,) in conn.execute(
                    "SELECT checkpoint_id FROM checkpoints "
                    f"WHERE thread_key = ? AND checkpoint_id IN ({marks})",
                    [thread_key, *chunk],
                )
            ]
        return found

    def _delete_rows(
        self, conn: sqlite3.Connection, thread_key: int, doomed: builtins.list[bytes]
    ) -> None:
        """Delete checkpoint rows; what they pointed at becomes the thread's blob debt."""
        wanted = set(doomed)
        freed = self._refs(conn, thread_key, doomed)
        # children that stay get a full state instead of a delta on a parent about to go, and
        # no longer hold the parent's pending writes; a child is always newer than its parent
        for child, stored_parent, moved in conn.execute(
            "SELECT checkpoint_id, parent_id, parent_writes FROM checkpoints "
            "WHERE thread_key = ? AND checkpoint_id > ? AND parent_id IS NOT NULL",
            (thread_key, min(doomed)),
        ).fetchall():
            if unpack_parent(child, stored_parent) in wanted and child not in wanted:
                state = self._state(conn, thread_key, child)
                assert state is not None
                for _path, writes in decode_pending(moved, self.names).values():
                    for _channel, entry in writes.values():
                        freed.update(entry_refs(entry))
                conn.execute(
                    "UPDATE checkpoints SET state = ?, parent_writes = NULL "
                    "WHERE thread_key = ? AND checkpoint_id = ?",
                    (state.encode(self.names, None), thread_key, child),
                )
        # a parent that stays keeps the pending writes that were moved into a child that goes
        kept_writes: dict[bytes, Pending] = {}
        for chunk in chunks(doomed):
            for child, stored_parent in conn.execute(
                "SELECT checkpoint_id, parent_id FROM checkpoints WHERE thread_key = ? "
                f"AND checkpoint_id IN ({','.join('?' * len(chunk))}) "
                "AND parent_writes IS NOT NULL",
                [thread_key, *chunk],
            ).fetchall():
                parent = unpack_parent(child, stored_parent)
                if (
                    parent is not None
                    and parent not in wanted
                    and self._exists(conn, thread_key, parent)
                ):
                    kept_writes[parent] = self._pending(conn, thread_key, parent)
        conn.execute(_COUNT, {"thread_key": thread_key, "change": -len(doomed)})
        for chunk in chunks(doomed):
            marks = ",".join("?" * len(chunk))
            for size_sql in (_ROW_BYTES, "coalesce(sum(length(tasks)), 0) FROM writes"):
                (size,) = conn.execute(
                    f"SELECT {size_sql} WHERE thread_key = ? AND checkpoint_id IN ({marks})",
                    [thread_key, *chunk],
                ).fetchone()
                self.deleted_bytes += int(size)
            for table, column in (
                ("writes", "checkpoint_id"),
                ("checkpoints", "checkpoint_id"),
                ("branches", "checkpoint_id"),
                ("branches", "parent_id"),
            ):
                conn.execute(
                    f"DELETE FROM {table} WHERE thread_key = ? AND {column} IN ({marks})",
                    [thread_key, *chunk],
                )
        for parent, pending in kept_writes.items():
            self._set_pending(conn, thread_key, parent, pending)
        conn.executemany(
            "INSERT OR IGNORE INTO blob_debt (thread_key, blob_key) VALUES (?, ?)",
            [(thread_key, key) for key in freed],
        )
        self._states.clear()

    def _collect(self, conn: sqlite3.Connection, thread_key: int) -> None:
        """Delete the blobs of the thread's debt that no remaining checkpoint needs."""
        debt = [
            key
            for (key,) in conn.execute(
                "SELECT blob_key FROM blob_debt WHERE thread_key = ?", (thread_key,)
            )
        ]
        candidates = self.blobs.reachable(debt)
        if candidates:
            # blobs point only at older ones: what stays needs walking down to the oldest
            # candidate, no further
            kept = self._refs(conn, thread_key)
            needed = self.blobs.reachable(kept, floor=min(candidates))
            self._delete_blobs(conn, candidates - needed)
        conn.execute("DELETE FROM blob_debt WHERE thread_key = ?", (thread_key,))

    @staticmethod
    def _has_rows(conn: sqlite3.Connection, thread_key: int) -> bool:
        found = conn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_key = ? LIMIT 1", (thread_key,)
        ).fetchone()
        return found is not None

    def checkpoint_ids(
        self,
        config: RunnableConfig,
        *,
        below: str | None = None,
        limit: int | None = None,
        since: str | None = None,
    ) -> builtins.list[str]:
        ref = self.ref(config)
        params = {
            "below": None if below is None else _require_id(below),
            "since": None if since is None else _require_id(since),
            "limit": -1 if limit is None else limit,
        }
        with self.read() as conn:
            params["thread_key"] = self._thread_key(conn, ref)
            rows = conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_key = :thread_key "
                "AND (:below IS NULL OR checkpoint_id < :below) "
                "AND (:since IS NULL OR checkpoint_id >= :since) "
                "ORDER BY checkpoint_id DESC LIMIT :limit",
                params,
            ).fetchall()
        return [_id_text(key) if len(key) == 16 else repr(key) for (key,) in rows]

    def stores_in(self, other: BaseSaver) -> bool:
        return other is self or (
            isinstance(other, SqliteSaver) and same_file(self.path, other.path)
        )

    def copy_rows(self, config: RunnableConfig, below: str, target: BaseSaver) -> int | None:
        if not isinstance(target, SqliteSaver):
            return None
        if self.stores_in(target):
            raise ConfigError(f"cannot copy {self.path} into itself: archive to another file")
        return RowCopy(self, target, self.ref(config)).copy_below(_require_id(below))

    def pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        ref = self.ref(config)
        wanted = {key: i for i in checkpoint_ids if (key := _id_bytes(i)) is not None}
        with self.read() as conn:  # one transaction for all
            thread_key = self._thread_key(conn, ref)
            if thread_key is None:
                return {}
            return {
                wanted[key]: [
                    (task_id, path, channel, self.blobs.load_value(entry))
                    for task_id, path, channel, entry in _in_order(
                        self._pending(conn, thread_key, key)
                    )
                ]
                for key in self._present(conn, thread_key, set(wanted))
            }

    def count_checkpoints(self, config: RunnableConfig, *, below: str | None = None) -> int:
        ref = self.ref(config)
        bound = None if below is None else _require_id(below)
        with self.read() as conn:
            thread_key = self._thread_key(conn, ref)
            (count,) = conn.execute(
                "SELECT count(*) FROM checkpoints WHERE thread_key = :thread_key "
                "AND (:below IS NULL OR checkpoint_id < :below)",
                {"thread_key": thread_key, "below": bound},
            ).fetchone()
        return int(count)

    def child_ids(self, config: RunnableConfig) -> builtins.list[str]:
        ref = self.ref(config)
        wanted = _id_bytes(ref.checkpoint_id or "")
        with self.read() as conn:
            thread_key = self._thread_key(conn, ref)
            params = {"thread_key": thread_key, "checkpoint_id": wanted}
            # the row right after the parent, if it is a child, and the recorded branches
            found = {
                child
                for (child,) in conn.execute(
                    "SELECT checkpoint_id FROM branches "
                    "WHERE thread_key = :thread_key AND parent_id = :checkpoint_id",
                    params,
                )
            }
            following = conn.execute(_NEXT, params).fetchone()
            if following is not None and unpack_parent(following[0], following[1]) == wanted:
                found.add(following[0])
        return sorted(_id_text(child) for child in found)

    def integrity_problems(self) -> builtins.list[str]:
        with self.read() as conn:
            found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if found != ["ok"]:
                return found
            # a tool that wrote rows behind ttcli's back leaves the kept counts wrong
            return [
                f"thread '{thread_id}' (namespace '{ns}') is recorded with {kept} checkpoints "
                f"but has {real}"
                for thread_id, ns, kept, real in conn.execute(
                    "SELECT thread_id, checkpoint_ns, checkpoints, ("
                    "SELECT count(*) FROM checkpoints AS c WHERE c.thread_key = t.thread_key"
                    ") AS real FROM threads AS t WHERE checkpoints != real"
                )
            ]

    def neighbour_ids(self, config: RunnableConfig, checkpoint_ids: Iterable[str]) -> set[str]:
        ref = self.ref(config)
        found: set[str] = set()
        with self.read() as conn:
            thread_key = self._thread_key(conn, ref)
            for checkpoint_id in checkpoint_ids:
                key = _id_bytes(checkpoint_id)
                if thread_key is None or key is None:
                    continue
                params = {"thread_key": thread_key, "checkpoint_id": key}
                for query in (_BEFORE_ID, _AFTER_ID):
                    (near,) = conn.execute(query, params).fetchone()
                    if near is not None:
                        found.add(_id_text(near))
        return found

    def thread_bytes(self, config: RunnableConfig) -> int | None:
        """Bytes of the thread's rows and of every value they need."""
        ref = self.ref(config)
        with self.read() as conn:
            thread_key = self._thread_key(conn, ref)
            if thread_key is None:
                return 0
            (rows,) = conn.execute(
                f"SELECT {_ROW_BYTES} WHERE thread_key = ?", (thread_key,)
            ).fetchone()
            (pending,) = conn.execute(
                "SELECT coalesce(sum(length(tasks)), 0) FROM writes WHERE thread_key = ?",
                (thread_key,),
            ).fetchone()
            keys = sorted(self.blobs.reachable(self._refs(conn, thread_key)))
            values = sum(
                conn.execute(
                    f"SELECT coalesce(sum(length(value)), 0) FROM blobs "
                    f"WHERE blob_key IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchone()[0]
                for chunk in chunks(keys)
            )
        return int(rows) + int(pending) + int(values)

    def get_thread_info(self, thread_id: str) -> dict[str, Any]:
        with self.read() as conn:
            row = conn.execute(
                "SELECT info FROM threads WHERE thread_id = ? AND checkpoint_ns = ''", (thread_id,)
            ).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def set_thread_info(self, thread_id: str, info: Mapping[str, Any]) -> None:
        with self.write() as conn:
            thread_key = self._thread_key(conn, CheckpointRef(thread_id), create=True)
            (stored,) = conn.execute(
                "SELECT info FROM threads WHERE thread_key = ?", (thread_key,)
            ).fetchone()
            merged = {**json.loads(stored or "{}"), **info}
            conn.execute(
                "UPDATE threads SET info = ? WHERE thread_key = ?",
                (json.dumps(merged, ensure_ascii=False, sort_keys=True), thread_key),
            )

    def list_threads(self, prefix: str = "") -> Iterator[ThreadSummary]:
        # the prefix is matched with a range, so the threads index is used and no LIKE
        # wildcard in it means anything
        # the count is kept on the thread and the newest id is one index step away, so a
        # thread of a million checkpoints lists as fast as one of ten
        query = """
            SELECT t.thread_id, t.checkpoint_ns, t.checkpoints, (
                SELECT max(c.checkpoint_id) FROM checkpoints AS c
                WHERE c.thread_key = t.thread_key
            ) AS latest
            FROM threads AS t
            WHERE t.thread_id >= :prefix AND (:prefix = '' OR t.thread_id < :upper)
                AND latest IS NOT NULL
            ORDER BY t.thread_id, t.checkpoint_ns
        """
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else ""
        with self.read() as conn:
            rows = conn.execute(query, {"prefix": prefix, "upper": upper}).fetchall()
        for thread_id, ns, count, latest in rows:
            micros = id_micros(latest) or 0
            yield ThreadSummary(
                thread_id,
                ns,
                count,
                _id_text(latest),
                datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat(),
            )

    def delete_thread(self, thread_id: str) -> None:
        with self.write() as conn:
            keys = [
                key
                for (key,) in conn.execute(
                    "SELECT thread_key FROM threads WHERE thread_id = ?", (thread_id,)
                )
            ]
            for thread_key in keys:
                refs = self._refs(conn, thread_key)
                refs.update(
                    key
                    for (key,) in conn.execute(
                        "SELECT blob_key FROM blob_debt WHERE thread_key = ?", (thread_key,)
                    )
                )
                self._delete_blobs(conn, self.blobs.reachable(refs))
                for table in ("blob_debt", "branches", "writes"):
                    conn.execute(f"DELETE FROM {table} WHERE thread_key = ?", (thread_key,))
                conn.execute("DELETE FROM checkpoints WHERE thread_key = ?", (thread_key,))
                conn.execute("DELETE FROM threads WHERE thread_key = ?", (thread_key,))
        self.forget()

    # -- helpers ------------------------------------------------------------------------------

    def _refs(
        self, conn: sqlite3.Connection, thread_key: int, ids: Sequence[bytes] | None = None
    ) -> set[int]:
        """Blob keys that checkpoints (their values, writes and pending writes) point at;
        the whole thread's when `ids` is None.

        Each row is read alone: a delta names what changed, and what it inherits its parent
        names (a checkpoint whose parent is deleted is rewritten in full), so the union over
        the rows is what they need, with no delta resolved.
        """
        found: set[int] = set()
        pieces: Iterable[Sequence[bytes] | None] = [None] if ids is None else chunks(ids)
        for chunk in pieces:
            where, params = "thread_key = ?", [thread_key, *(chunk or ())]
            if chunk is not None:
                where += f" AND checkpoint_id IN ({','.join('?' * len(chunk))})"
            for state, moved in conn.execute(
                f"SELECT state, parent_writes FROM checkpoints WHERE {where}", params
            ):
                found.update(state_refs(serde.loads(state)))
                if moved is not None:
                    found.update(pending_refs(serde.loads(moved)))
            for (tasks,) in conn.execute(f"SELECT tasks FROM writes WHERE {where}", params):
                found.update(pending_refs(serde.loads(tasks)))
        return found

    def _state(
        self, conn: sqlite3.Connection, thread_key: int, checkpoint_id: bytes
    ) -> State | None:
        """A checkpoint's resolved state (deltas applied), or None if it does not exist."""
        cached = self._states.get((thread_key, checkpoint_id))
        if cached is not None:
            self._states.move_to_end((thread_key, checkpoint_id))
            return cached
        row = conn.execute(
            _STATE, {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        ).fetchone()
        if row is None:
            return None
        parent_id, data, _moved = unpack_parent(checkpoint_id, row[0]), row[1], row[2]
        parent = None
        if State.depth_of(data) and parent_id is not None:
            parent = self._state(conn, thread_key, parent_id)
        state = State.decode(data, self.names, parent)
        self._cache(thread_key, checkpoint_id, state)
        return state

    def _cache(self, thread_key: int, checkpoint_id: bytes, state: State) -> None:
        self._states[(thread_key, checkpoint_id)] = state
        if len(self._states) > STATE_CACHE_MAX:
            self._states.popitem(last=False)

    def _pending(
        self,
        conn: sqlite3.Connection,
        thread_key: int,
        checkpoint_id: bytes,
        *,
        table: Pending | None = None,
    ) -> Pending:
        """A checkpoint's pending writes: those moved into its child, then those still in
        `writes` (`table`, if already read; a later normal write never replaces an earlier
        one; special ones do)."""
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        following = conn.execute(_NEXT, params).fetchone()
        merged: Pending = {}
        if following is not None and unpack_parent(following[0], following[1]) == checkpoint_id:
            merged = decode_pending(following[2], self.names)
        if table is None:
            table = self._table_pending(conn, thread_key, checkpoint_id)
        for task_id, (path, writes) in table.items():
            _path, known = merged.setdefault(task_id, (path, {}))
            for idx, write in writes.items():
                if idx < 0 or idx not in known:
                    known[idx] = write
        return merged

    def _table_pending(
        self, conn: sqlite3.Connection, thread_key: int, checkpoint_id: bytes
    ) -> Pending:
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        row = conn.execute(_PENDING, params).fetchone()
        return decode_pending(row[0] if row else None, self.names)

    def _latest(self, conn: sqlite3.Connection, thread_key: int) -> bytes | None:
        """The thread's latest checkpoint id (kept for the rest of a batch)."""
        facts = self._facts.latest
        if self._batch_depth and thread_key in facts:
            return facts[thread_key]
        (latest,) = conn.execute(_LATEST_ID, {"thread_key": thread_key}).fetchone()
        if self._batch_depth:
            facts[thread_key] = latest
        return latest  # type: ignore[no-any-return]

    def _exists(self, conn: sqlite3.Connection, thread_key: int, checkpoint_id: bytes) -> bool:
        if self._latest(conn, thread_key) == checkpoint_id:
            return True
        found = conn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_key = ? AND checkpoint_id = ?",
            (thread_key, checkpoint_id),
        ).fetchone()
        return found is not None

    def _set_pending(
        self, conn: sqlite3.Connection, thread_key: int, checkpoint_id: bytes, tasks: Pending
    ) -> None:
        conn.execute(
            _SET_PENDING,
            {
                "thread_key": thread_key,
                "checkpoint_id": checkpoint_id,
                "tasks": encode_pending(tasks, self.names),
            },
        )

    def _write_held(self, conn: sqlite3.Connection) -> None:
        """Write held pending writes to `writes`: something other than their checkpoint's
        child comes next in the batch."""
        held, self._facts.held = self._facts.held, None
        if held is not None:
            self._set_pending(conn, held.thread_key, held.checkpoint_id, held.tasks)

    def _place(
        self,
        conn: sqlite3.Connection,
        thread_key: int,
        checkpoint_id: bytes,
        parent_id: bytes | None,
        latest: bytes | None,
    ) -> bool:
        """Record where a row about to be inserted sits among its thread's rows, whose
        latest id is `latest`.

        Returns True if it will be the row right after its parent (its parent's pending
        writes may then move into it); any other child is recorded in `branches`.
        """
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        if latest is not None and checkpoint_id < latest:
            self._split(conn, thread_key, checkpoint_id)
        if parent_id is None:
            return False
        if parent_id == latest and checkpoint_id > latest:
            return True
        conn.execute(_BRANCH, {**params, "parent_id": parent_id})
        return False

    def _split(self, conn: sqlite3.Connection, thread_key: int, checkpoint_id: bytes) -> None:
        """A row stored among older ones parts its two neighbours: if the later one is the
        earlier one's child, it becomes a branch, and the parent's pending writes it holds
        go back to `writes`."""
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        (previous,) = conn.execute(_BEFORE_ID, params).fetchone()
        following = conn.execute(_NEXT, params).fetchone()
        if previous is None or following is None:
            return
        child, stored_parent, moved = following
        if unpack_parent(child, stored_parent) != previous:
            return
        conn.execute(
            _BRANCH, {"thread_key": thread_key, "parent_id": previous, "checkpoint_id": child}
        )
        if moved is not None:
            tasks = encode_pending(self._pending(conn, thread_key, previous), self.names)
            conn.execute(
                _SET_PENDING,
                {"thread_key": thread_key, "checkpoint_id": previous, "tasks": tasks},
            )
            conn.execute(
                "UPDATE checkpoints SET parent_writes = NULL "
                "WHERE thread_key = ? AND checkpoint_id = ?",
                (thread_key, child),
            )

    def _take_pending(
        self, conn: sqlite3.Connection, thread_key: int, parent_id: bytes
    ) -> bytes | None:
        """Move the parent's pending writes out of `writes` for its child's row (the row
        right after it, so none were moved into another row before)."""
        params = {"thread_key": thread_key, "checkpoint_id": parent_id}
        row = conn.execute(_PENDING, params).fetchone()
        if row is None:
            return None
        conn.execute(_DELETE_PENDING, params)
        return row[0]  # type: ignore[no-any-return]

    def _delete_blobs(self, conn: sqlite3.Connection, keys: Iterable[int]) -> None:
        # the newest blob always stays: SQLite gives a new row the largest key plus one, so a
        # key is then never handed out twice, and a key another process remembers (its
        # append-detection cache) can never come to mean another value
        self.copy_floor = None  # keys freed below the largest: never to be copied under
        self.blob_deletions += 1
        (newest,) = conn.execute("SELECT max(blob_key) FROM blobs").fetchone()
        for chunk in chunks(sorted(key for key in keys if key != newest)):
            marks = ",".join("?" * len(chunk))
            (size,) = conn.execute(
                f"SELECT coalesce(sum(length(value)), 0) FROM blobs WHERE blob_key IN ({marks})",
                chunk,
            ).fetchone()
            self.deleted_bytes += int(size)
            conn.execute(f"DELETE FROM blobs WHERE blob_key IN ({marks})", chunk)

    def _thread_key(
        self, conn: sqlite3.Connection, ref: CheckpointRef, *, create: bool = False
    ) -> int | None:
        known = (ref.thread_id, ref.checkpoint_ns)
        if self._batch_depth and known in self._facts.threads:
            return self._facts.threads[known]
        params = {"thread_id": ref.thread_id, "checkpoint_ns": ref.checkpoint_ns}
        row = conn.execute(_THREAD, params).fetchone()
        if row is not None:
            found: int | None = int(row[0])
        elif create:
            found = conn.execute(_NEW_THREAD, params).lastrowid
        else:
            return None
        if self._batch_depth and found is not None:
            self._facts.threads[known] = found
        return found

    def _row(self, conn: sqlite3.Connection, ref: CheckpointRef) -> Sequence[Any] | None:
        thread_key = self._thread_key(conn, ref)
        if thread_key is None:
            return None
        if ref.checkpoint_id is None:
            return conn.execute(_LATEST, {"thread_key": thread_key}).fetchone()  # type: ignore[no-any-return]
        checkpoint_id = _id_bytes(ref.checkpoint_id)
        if checkpoint_id is None:
            return None
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        return conn.execute(_BY_ID, params).fetchone()  # type: ignore[no-any-return]

    def _list_query(
        self,
        config: RunnableConfig | None,
        filter_: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> tuple[str, dict[str, Any]]:
        clauses: builtins.list[str] = []
        params: dict[str, Any] = {}
        if config is not None:
            ref = self.ref(config)
            clauses += ["t.thread_id = :thread_id", "t.checkpoint_ns = :checkpoint_ns"]
            params.update(thread_id=ref.thread_id, checkpoint_ns=ref.checkpoint_ns)
            if ref.checkpoint_id is not None:
                clauses.append("c.checkpoint_id = :checkpoint_id")
                params["checkpoint_id"] = _id_bytes(ref.checkpoint_id) or b""
        if before is not None:
            before_id = self.ref(before).checkpoint_id
            if before_id is None:
                raise ConfigError("`before` needs a config with a checkpoint_id")
            clauses.append("c.checkpoint_id < :before")
            params["before"] = _require_id(before_id)
        for n, (key, value) in enumerate(validate_filter(filter_).items()):
            clauses.append(_filter_clause(n, key, value))
            # the key is bound as a JSON path, never pasted into the SQL text
            params[f"path{n}"] = "$" + "".join(f'."{part}"' for part in key.split("."))
            params[f"value{n}"] = _filter_value(value)
        query = _SELECT
        if clauses:
            query += "WHERE " + "\n  AND ".join(clauses) + "\n"
        query += "ORDER BY c.checkpoint_id DESC\n"
        if limit is not None:
            query += "LIMIT :limit\n"
            params["limit"] = int(limit)
        return query, params

    def _tuple(self, row: Sequence[Any], *, values: bool = True) -> CheckpointTuple:
        """A row as a CheckpointTuple; a row that is not what ttcli writes is an error
        naming the checkpoint."""
        try:
            return self._read_row(row, values=values)
        except (CorruptValueError, TypeError, ValueError, KeyError, IndexError) as exc:
            raw = row[3] if len(row) > 3 else b""
            name = _id_text(raw) if isinstance(raw, bytes) and len(raw) == 16 else repr(raw)
            detail = (
                str(exc) if isinstance(exc, CorruptValueError) else f"{type(exc).__name__}: {exc}"
            )
            raise CorruptValueError(
                f"checkpoint {name} of thread '{row[1]}' does not read: {detail}; "
                "`ttcli verify` lists what else is damaged"
            ) from None

    def _read_row(self, row: Sequence[Any], *, values: bool) -> CheckpointTuple:
        (thread_key, thread_id, ns, checkpoint_id, parent_id, created_at,
         source, step, other, _state) = row  # fmt: skip
        state = self._state(self.conn, thread_key, checkpoint_id)
        assert state is not None
        load = self.blobs.load
        load_value = self.blobs.load_value if values else _skip
        writes = None if state.writes is None else {n: load_value(e) for n, e in state.writes}
        pending: builtins.list[PendingWrite] = []
        if values:
            pending = [
                (task_id, channel, load_value(entry))
                for task_id, _path, channel, entry in _in_order(
                    self._pending(self.conn, thread_key, checkpoint_id)
                )
            ]
        ref = CheckpointRef(thread_id, ns)
        checkpoint = Checkpoint(
            v=1,
            id=_id_text(checkpoint_id),
            ts=datetime.fromtimestamp(
                (created_at if created_at is not None else id_micros(checkpoint_id) or 0)
                / 1_000_000,
                UTC,
            ).isoformat(),
            channel_values={
                name: load(entry[1]) if values or not _stored_apart(entry[1]) else NOT_LOADED
                for name, entry in state.channels.items()
                if len(entry) == 2
            },
            channel_versions={n: e[0] for n, e in state.channels.items() if e[0] is not None},
            # copies: the resolved state is cached and callers may change what they get
            versions_seen={node: dict(seen) for node, seen in state.versions_seen.items()},
            updated_channels=None if state.updated is None else builtins.list(state.updated),
        )
        return CheckpointTuple(
            config=ref.at(checkpoint["id"]).to_config(),
            checkpoint=checkpoint,
            metadata=metadata_of(source, step, other, writes),
            parent_config=ref.at(_id_text(parent)).to_config()
            if (parent := unpack_parent(checkpoint_id, parent_id))
            else None,
            pending_writes=pending if values else None,
        )


def _skip(entry: Any) -> None:
    return None


def _stored_apart(entry: Any) -> bool:
    return isinstance(entry, Ref) or (
        type(entry) is dict and any(isinstance(v, Ref) for v in entry.values())
    )


def _in_order(tasks: Pending) -> Iterator[tuple[str, str, str, Any]]:
    """Pending writes as (task_id, task_path, channel, entry), in the order the runtime
    applies them: by task path, task id, then write index."""
    for task_id, (path, writes) in sorted(tasks.items(), key=lambda t: (t[1][0], t[0])):
        for _idx, (channel, entry) in sorted(writes.items()):
            yield task_id, path, channel, entry


def _filter_clause(n: int, key: str, value: Any) -> str:
    # source and step are columns: compared as they are, without building each row's JSON
    if key == "source" and isinstance(value, str):
        return f"c.source = :value{n}"
    if key == "step" and isinstance(value, int | float) and not isinstance(value, bool):
        return f"c.step = :value{n}"
    extract = f"json_extract({METADATA_SQL}, :path{n})"
    kind = f"json_type({METADATA_SQL}, :path{n})"
    if value is None:
        return f"{extract} IS NULL"
    if isinstance(value, bool):
        return f"{kind} = :value{n}"
    if isinstance(value, int | float):
        return f"{kind} IN ('integer', 'real') AND {extract} = :value{n}"
    if isinstance(value, str):
        return f"{kind} = 'text' AND {extract} = :value{n}"
    return f"{kind} IN ('object', 'array') AND {extract} = json(:value{n})"


def _filter_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, int | float | str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _micros(ts: str) -> int:
    try:
        moment = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise SerializationError(f"checkpoint ts {ts!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _id_bytes(checkpoint_id: str) -> bytes | None:
    # the canonical form every id this saver hands out has, parsed without building a UUID
    if isinstance(checkpoint_id, str) and len(checkpoint_id) == 36 and checkpoint_id[8] == "-":
        try:
            return bytes.fromhex(checkpoint_id.replace("-", ""))
        except ValueError:
            pass
    try:
        return uuid.UUID(checkpoint_id).bytes
    except (TypeError, ValueError, AttributeError):
        return None


def _require_id(checkpoint_id: str) -> bytes:
    found = _id_bytes(checkpoint_id)
    if found is None:
        raise ConfigError(f"checkpoint id {checkpoint_id!r} is not a UUID")
    return found


def _id_text(data: bytes) -> str:
    if len(data) != 16:
        raise ValueError(f"a checkpoint id has 16 bytes, not {len(data)}")
    return dashed(bytes(data).hex())
