"""Deleting checkpoint rows, and collecting the stored values only they used.

Every other checkpoint reads exactly as before: a child that stays gets a full state in
place of a delta on a parent that goes, and a parent that stays keeps the pending writes
that had moved into a child that goes. What the deleted rows pointed at becomes the thread's
`blob_debt`; collecting deletes the debt's blobs that nothing kept needs, walking only down
to the oldest of them (blobs point only at older blobs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import CorruptValueError
from ttcli.savers import serde
from ttcli.savers.blobs import BlobStore, entries_refs
from ttcli.savers.records import (
    VerbatimNames,
    decode_pending,
    pending_refs,
    state_refs,
    unpack_parent,
)
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.copy_memory import CopyMemory
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.params import chunks, id_chunks
from ttcli.savers.sql.parts import OnParts
from ttcli.savers.sql.pending import Pending, PendingWrites
from ttcli.savers.sql.states import States

_PENDING_BYTES = "coalesce(sum(length(tasks)), 0) FROM writes"


@dataclass
class _Read:
    """What deleting rows needs to know of them, read in one pass."""

    #: the blob keys they point at
    refs: set[int]
    #: their bytes, with their pending writes'
    size: int
    #: (id, stored parent id) of those holding their parent's pending writes
    moved: list[tuple[bytes, bytes | None]]


class Deletion(OnParts):
    """delete_checkpoints, delete_thread and the byte accounting around them."""

    #: bytes of rows and values deleted through this saver (committed or not), so that
    #: `prune` can say what it freed without reading the threads again
    deleted_bytes = 0
    #: what row copies into this database remember (see copy.py): forgotten when this
    #: saver deletes blobs, rolls back, or sees another connection's writes
    copied: CopyMemory

    def __init__(self, *parts: Any) -> None:
        super().__init__(*parts)
        self.copied = CopyMemory()
        # the rows a deletion rewrites (a child whose parent goes, a parent's pending writes)
        # are read and written in their stored form: what the application's classes would
        # rebuild differently, or not at all, is written back as it was; and what an archive
        # is compared by is read so (`SqlSaver.stored_tuple`)
        self.stored_names = VerbatimNames(self.names)
        self.stored_pending = PendingWrites(self.connection, self.stored_names)
        self.stored_blobs = BlobStore(self.blobs.rows, serde.VERBATIM)
        self.connection.on_rollback += [self.stored_blobs.forget, self.copied.forget]
        self.connection.on_other_writer.append(self.copied.forget)
        self.stored_states = States(
            self.connection, self.stored_names, self.stored_blobs, self.stored_pending
        )

    def delete_checkpoints(self, ref: CheckpointRef, wanted: set[bytes], collect: bool) -> None:
        with self.connection.write() as conn:
            thread_key = self.rows.thread_key(conn, ref)
            if thread_key is None:
                return
            doomed = self.rows.present(conn, thread_key, wanted)
            if doomed or collect:
                self.connection.deleting()
            if doomed:
                self._delete_rows(conn, thread_key, doomed)
            if collect:
                self._collect(conn, thread_key)
                if not _has_rows(conn, thread_key):
                    conn.execute("DELETE FROM threads WHERE thread_key = ?", (thread_key,))
        self.connection.forget()

    def delete_thread(self, thread_id: str) -> None:
        with self.connection.write() as conn:
            self.connection.claim(thread_id)
            self.connection.deleting()
            keys = [
                key
                for (key,) in conn.execute(
                    "SELECT thread_key FROM threads WHERE thread_id = ?", (thread_id,)
                )
            ]
            for thread_key in keys:
                refs = self.refs(conn, thread_key)
                refs.update(key for (key,) in conn.execute(_DEBT, (thread_key,)))
                self._delete_blobs(conn, self.blobs.reachable(refs))
                for table in ("blob_debt", "branches", "writes", "checkpoints"):
                    conn.execute(f"DELETE FROM {table} WHERE thread_key = ?", (thread_key,))
                conn.execute("DELETE FROM threads WHERE thread_key = ?", (thread_key,))
        self.connection.forget()

    def thread_bytes(self, conn: Db, ref: CheckpointRef) -> int:
        """Bytes of the thread's rows and of every value they need."""
        thread_key = self.rows.thread_key(conn, ref)
        if thread_key is None:
            return 0
        (rows,) = conn.execute(
            f"SELECT {sql.ROW_BYTES} WHERE thread_key = ?", (thread_key,)
        ).fetchone()
        (pending,) = conn.execute(
            f"SELECT {_PENDING_BYTES} WHERE thread_key = ?", (thread_key,)
        ).fetchone()
        keys = sorted(self.blobs.reachable(self.refs(conn, thread_key)))
        values = sum(
            conn.execute(
                "SELECT coalesce(sum(length(value)), 0) FROM blobs "
                f"WHERE blob_key IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchone()[0]
            for chunk in chunks(keys)
        )
        return int(rows) + int(pending) + int(values)

    def shared_blobs(self, conn: Db, most: int = 100) -> list[str]:
        """Stored values two threads need (at most `most` of them): each thread keeps its
        own (a copy copies them), since a thread's deletions collect what it alone no longer
        needs; a shared one (rows copied behind ttcli's back) would go with either."""
        owners: dict[int, int] = {}
        shared: dict[int, tuple[int, int]] = {}
        threads = {key: (thread_id, ns) for key, thread_id, ns in conn.execute(_THREADS)}
        for thread_key in threads:
            try:
                needed = self.refs(conn, thread_key)
                needed.update(key for (key,) in conn.execute(_DEBT, (thread_key,)))
                reachable = self.blobs.reachable(needed)
            except CorruptValueError:
                continue  # damaged rows or links: verify reports them on their own
            for blob_key in reachable:
                owner = owners.setdefault(blob_key, thread_key)
                if owner != thread_key and len(shared) < most:
                    shared.setdefault(blob_key, (owner, thread_key))
        return [
            f"stored value {blob_key} is used by thread '{threads[one][0]}' (namespace "
            f"'{threads[one][1]}') and thread '{threads[other][0]}' (namespace "
            f"'{threads[other][1]}'): a prune of either would delete what the other reads"
            for blob_key, (one, other) in sorted(shared.items())
        ]

    def refs(self, conn: Db, thread_key: int, ids: Sequence[bytes] | None = None) -> set[int]:
        """Blob keys that checkpoints (their values, writes and pending writes) point at;
        the whole thread's when `ids` is None.

        Each row is read alone: a delta names what changed, and what it inherits its parent
        names (a checkpoint whose parent is deleted is rewritten in full), so the union over
        the rows is what they need, with no delta resolved.
        """
        return self._read(conn, thread_key, ids).refs

    def _read(self, conn: Db, thread_key: int, ids: Sequence[bytes] | None) -> _Read:
        """What a deletion needs to know of rows (see `_Read`), in one pass over them."""
        read = _Read(set(), 0, [])
        pieces: Iterable[Sequence[Any] | None] = [None] if ids is None else id_chunks(ids)
        for chunk in pieces:
            where, params = "thread_key = ?", [thread_key, *(chunk or ())]
            if chunk is not None:
                where += f" AND checkpoint_id IN ({','.join('?' * len(chunk))})"
            for checkpoint_id, stored_parent, state, moved, size in conn.execute(
                "SELECT checkpoint_id, parent_id, state, parent_writes, "
                f"{sql.ROW_SIZE} FROM checkpoints WHERE {where}",
                params,
            ):
                read.refs.update(state_refs(serde.VERBATIM.loads(state)))
                read.size += size
                if moved is not None:
                    read.refs.update(pending_refs(serde.VERBATIM.loads(moved)))
                    read.moved.append((checkpoint_id, stored_parent))
            for (tasks,) in conn.execute(f"SELECT tasks FROM writes WHERE {where}", params):
                read.refs.update(pending_refs(serde.VERBATIM.loads(tasks)))
                read.size += len(tasks)
        return read

    def _delete_rows(self, conn: Db, thread_key: int, doomed: list[bytes]) -> None:
        """Delete checkpoint rows; what they pointed at becomes the thread's blob debt."""
        read = self._read(conn, thread_key, doomed)
        freed = read.refs | self._orphan_children(conn, thread_key, set(doomed))
        kept_writes = self._writes_to_keep(conn, thread_key, set(doomed), read.moved)
        conn.execute(sql.COUNT, {"thread_key": thread_key, "change": -len(doomed)})
        self.deleted_bytes += read.size
        for chunk in id_chunks(doomed):
            marks = ",".join("?" * len(chunk))
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
        for parent, tasks in kept_writes.items():
            self.stored_pending.set(conn, thread_key, parent, tasks)
        conn.executemany(
            "INSERT INTO blob_debt (thread_key, blob_key) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [(thread_key, key) for key in freed],
        )
        self.states.clear()
        self.stored_states.clear()

    def _orphan_children(self, conn: Db, thread_key: int, doomed: set[bytes]) -> set[int]:
        """Children that stay get a full state instead of a delta on a parent about to go,
        and no longer hold the parent's pending writes (whose blobs are returned)."""
        freed: set[int] = set()
        for child, stored_parent, moved in _children(conn, thread_key, doomed):
            if unpack_parent(child, stored_parent) in doomed and child not in doomed:
                state = self.stored_states.resolve(conn, thread_key, child)
                assert state is not None
                tasks = decode_pending(moved, self.stored_names).values()
                freed.update(entries_refs(e for _, w in tasks for _, e in w.values()))
                conn.execute(
                    "UPDATE checkpoints SET state = ?, parent_writes = NULL "
                    "WHERE thread_key = ? AND checkpoint_id = ?",
                    (state.encode(self.stored_names, None), thread_key, child),
                )
        return freed

    def _writes_to_keep(
        self,
        conn: Db,
        thread_key: int,
        doomed: set[bytes],
        moved: list[tuple[bytes, bytes | None]],
    ) -> dict[bytes, Pending]:
        """A parent that stays keeps the pending writes that were moved into a child that
        goes (`moved`: such children, with their stored parent ids): read them before the
        child's row is deleted."""
        kept: dict[bytes, Pending] = {}
        for child, stored_parent in moved:
            parent = unpack_parent(child, stored_parent)
            if (
                parent is not None
                and parent not in doomed
                and self.rows.exists(conn, thread_key, parent)
            ):
                kept[parent] = self.stored_pending.merged(conn, thread_key, parent)
        return kept

    def _collect(self, conn: Db, thread_key: int) -> None:
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
            kept = self.refs(conn, thread_key)
            needed = self.blobs.reachable(kept, floor=min(candidates))
            self._delete_blobs(conn, candidates - needed)
        conn.execute("DELETE FROM blob_debt WHERE thread_key = ?", (thread_key,))

    def _delete_blobs(self, conn: Db, keys: Iterable[int]) -> None:
        # the newest blob always stays: SQLite gives a new row the largest key plus one, so a
        # key is then never handed out twice, and a key another process remembers (its
        # append-detection cache) can never come to mean another value
        self.copied.forget()  # keys freed below the largest: never to be copied under
        (newest,) = conn.execute("SELECT max(blob_key) FROM blobs").fetchone()
        for chunk in chunks(sorted(key for key in keys if key != newest)):
            marks = ",".join("?" * len(chunk))
            (size,) = conn.execute(
                f"SELECT coalesce(sum(length(value)), 0) FROM blobs WHERE blob_key IN ({marks})",
                chunk,
            ).fetchone()
            self.deleted_bytes += int(size)
            conn.execute(f"DELETE FROM blobs WHERE blob_key IN ({marks})", chunk)


_ROW = "SELECT checkpoint_id, parent_id, parent_writes FROM checkpoints"
_THREADS = "SELECT thread_key, thread_id, checkpoint_ns FROM threads ORDER BY thread_key"
_DEBT = "SELECT blob_key FROM blob_debt WHERE thread_key = ?"


def _children(
    conn: Db, thread_key: int, parents: set[bytes]
) -> list[tuple[bytes, bytes | None, bytes | None]]:
    """The rows that may be children of `parents`: a child is the row right after its
    parent (invariant 1: it sorts after it) or recorded in `branches`. A page of a prune is
    one id range, read in one go; scattered ids are looked up one by one, so that deleting
    a few checkpoints of a long thread never reads the rest of it."""
    low, high = min(parents), max(parents)
    cap = 2 * len(parents) + 1
    found = conn.execute(
        f"{_ROW} WHERE thread_key = ? AND checkpoint_id > ? AND checkpoint_id <= ? LIMIT ?",
        (thread_key, low, high, cap),
    ).fetchall()
    after = high if len(found) < cap else None  # the range was read whole
    nexts = [after] if after is not None else sorted(parents)
    if after is None:
        found = []
    for parent in nexts:
        found += conn.execute(
            f"{_ROW} WHERE thread_key = ? AND checkpoint_id > ? ORDER BY checkpoint_id LIMIT 1",
            (thread_key, parent),
        ).fetchall()
    for chunk in id_chunks(sorted(parents)):
        found += conn.execute(
            f"{_ROW} WHERE thread_key = ? AND checkpoint_id IN (SELECT checkpoint_id FROM "
            f"branches WHERE thread_key = ? AND parent_id IN ({','.join('?' * len(chunk))}))",
            [thread_key, thread_key, *chunk],
        ).fetchall()
    return list({row[0]: row for row in found}.values())


def _has_rows(conn: Db, thread_key: int) -> bool:
    found = conn.execute(
        "SELECT 1 FROM checkpoints WHERE thread_key = ? LIMIT 1", (thread_key,)
    ).fetchone()
    return found is not None
