"""Storing: a checkpoint row with the values that changed, and a task's pending writes.

A checkpoint's unchanged channels keep their parent's entries, a list that only grew is
stored as an append (blobs.py), and its bookkeeping is a delta from its parent's (records.py).
A row stored right after its parent takes the parent's pending writes into its own row
(pending.py); any other child is recorded in `branches`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.errors import CheckpointNotFoundError
from ttcli.savers.base import (
    RESUME,
    WRITES_IDX_MAP,
    Checkpoint,
    StepCheckpoint,
    TaskWrites,
)
from ttcli.savers.blob_writer import BlobWriter, StoredMaps, inline_as_is
from ttcli.savers.records import (
    State,
    VerbatimNames,
    decode_pending,
    encode_pending,
    metadata_columns,
    pack_parent,
    unpack_parent,
)
from ttcli.savers.rules import check_child_id, merged_answers, refuse_stored
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.db import Db, scalar
from ttcli.savers.sql.ids import id_bytes, micros, require_id
from ttcli.savers.sql.parts import OnParts
from ttcli.savers.sql.pending import Held, Pending, PendingWrites
from ttcli.uuid6 import id_micros


class Writer(OnParts):
    """put and put_writes, on the saver's parts."""

    def __init__(self, *parts: Any) -> None:
        super().__init__(*parts)
        # another checkpoint's pending writes that a row moves are moved in their stored
        # form: rebuilt through the application's classes, a value of a class changed since
        # was written back changed (a field added), or stopped an archive copying a late row
        # among older ones (a required field added)
        self.stored_pending = PendingWrites(self.connection, VerbatimNames(self.names))

    def put_step(
        self, ref: CheckpointRef, writes: Sequence[TaskWrites], checkpoint: StepCheckpoint | None
    ) -> None:
        """A superstep's task writes, then the checkpoint they lead to, in the caller's
        transaction. The maps they store as deltas are shared: a map a task wrote and its
        channel then holds is encoded and compared once."""
        maps = StoredMaps()
        for task_id, task_path, values in writes:
            self.put_writes(ref, values, task_id, task_path, maps)
        if checkpoint is not None:
            self.put(ref, *checkpoint, maps)

    def put(
        self,
        ref: CheckpointRef,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
        maps: StoredMaps | None = None,
    ) -> None:
        check_child_id(checkpoint["id"], ref.checkpoint_id)
        checkpoint_id = require_id(checkpoint["id"])
        parent_id = require_id(ref.checkpoint_id) if ref.checkpoint_id else None
        created_at = micros(checkpoint["ts"])
        source, step, writers, other = metadata_columns(metadata)
        with self.connection.write(keep_held=True) as conn:
            thread_key = self.rows.thread_key(conn, ref, create=True)
            assert thread_key is not None
            latest = self.rows.latest(conn, thread_key)
            # an id after the thread's latest is new: a lookup only for one that is not
            if latest is not None and checkpoint_id <= latest:
                if self.rows.exists(conn, thread_key, checkpoint_id):
                    refuse_stored(checkpoint["id"], ref.thread_id)
            held = self._held_for(conn, thread_key, checkpoint_id, parent_id, latest)
            follows = self.place(conn, thread_key, checkpoint_id, parent_id, latest)
            writer = BlobWriter(self.blobs, maps)
            parent, moved = self._parent(conn, writer, thread_key, parent_id, held, follows)
            state = _state(writer, checkpoint, metadata, new_versions, parent)
            conn.execute(
                sql.INSERT_CHECKPOINT,
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
            self.rows.counted(conn, thread_key)
            self.rows.stored(thread_key, checkpoint_id)
            self.pending.inserted(thread_key, checkpoint_id)
            self.states.keep(thread_key, checkpoint_id, state)

    def _held_for(
        self,
        conn: Db,
        thread_key: int,
        checkpoint_id: bytes,
        parent_id: bytes | None,
        latest: bytes | None,
    ) -> Held | None:
        """The held writes, if they are this checkpoint's parent's; others go to `writes`."""
        held = self.pending.take_held()
        if held is None:
            return None
        if (
            held.thread_key == thread_key
            and held.checkpoint_id == parent_id == latest
            and (latest is not None and checkpoint_id > latest)
        ):
            return held
        self.pending.held = held
        self.pending.flush(conn)
        return None

    def place(
        self,
        conn: Db,
        thread_key: int,
        checkpoint_id: bytes,
        parent_id: bytes | None,
        latest: bytes | None,
    ) -> bool:
        """Record where a row about to be inserted sits among its thread's rows.

        Returns True if it will be the row right after its parent (its parent's pending
        writes may then move into it); any other child is recorded in `branches`.
        """
        if latest is not None and checkpoint_id < latest:
            self._split(conn, thread_key, checkpoint_id)
        if parent_id is None:
            return False
        if parent_id == latest and latest is not None and checkpoint_id > latest:
            return True
        conn.execute(
            sql.BRANCH,
            {"thread_key": thread_key, "checkpoint_id": checkpoint_id, "parent_id": parent_id},
        )
        return False

    def _split(self, conn: Db, thread_key: int, checkpoint_id: bytes) -> None:
        """A row stored among older ones parts its two neighbours: if the later one is the
        earlier one's child, it becomes a branch, and gives back its parent's writes."""
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        previous = scalar(conn, sql.BEFORE_ID, params)
        following = conn.execute(sql.NEXT, params).fetchone()
        if previous is None or following is None:
            return
        child, stored_parent, moved = following
        if unpack_parent(child, stored_parent) != previous:
            return
        conn.execute(
            sql.BRANCH, {"thread_key": thread_key, "parent_id": previous, "checkpoint_id": child}
        )
        if moved is not None:
            self.stored_pending.give_back(conn, thread_key, previous, child)

    def _parent(
        self,
        conn: Db,
        writer: BlobWriter,
        thread_key: int,
        parent_id: bytes | None,
        held: Held | None,
        follows: bool,
    ) -> tuple[State | None, bytes | None]:
        """The parent's state, and its pending writes moved into the new row (encoded): the
        new values may share their blobs."""
        if parent_id is None:
            return None, None
        if not follows and not self.rows.exists(conn, thread_key, parent_id):
            # gone (another process pruned it): its cached state must not be the base of a
            # delta, nor its values be taken as still stored
            self.states.drop(thread_key, parent_id)
        parent = self.states.resolve(conn, thread_key, parent_id)
        if parent is None:
            return None, None
        writer.protect(entry[1] for entry in parent.channels.values() if len(entry) == 2)
        moved = None
        if held is not None:  # the parent's writes, put in this batch
            tasks = held.tasks
            moved = encode_pending(tasks, self.names)
            if held.replaces:
                params = {"thread_key": thread_key, "checkpoint_id": parent_id}
                conn.execute(sql.DELETE_PENDING, params)
        elif follows:  # the parent is the latest: all its writes are in `writes`
            moved = self.pending.take(conn, thread_key, parent_id)
            tasks = decode_pending(moved, self.names)
        else:
            tasks = self.pending.merged(conn, thread_key, parent_id)
        # only the latest checkpoint's writes may become an append: an older one may have
        # children already reading one of them as a channel value, which adopting it would
        # change
        writer.offer((e for _, w in tasks.values() for _, e in w.values()), adoptable=follows)
        return parent, moved

    def put_writes(
        self,
        ref: CheckpointRef,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        path: str,
        maps: StoredMaps | None = None,
    ) -> None:
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self.connection.write(keep_held=True) as conn:
            thread_key = self.rows.thread_key(conn, ref)
            checkpoint_id = id_bytes(ref.checkpoint_id or "")
            if (
                thread_key is None
                or checkpoint_id is None
                or not self.rows.exists(conn, thread_key, checkpoint_id)
            ):
                raise CheckpointNotFoundError(str(ref.checkpoint_id), ref.thread_id)
            table, has_row = self._table(conn, thread_key, checkpoint_id)
            # the latest checkpoint has no next row holding writes moved into it
            latest = self.rows.latest(conn, thread_key) == checkpoint_id
            merged = (
                table
                if latest
                else self.pending.merged(conn, thread_key, checkpoint_id, table=table)
            )
            saved = dict(merged.get(task_id, (path, {}))[1])  # before this call's writes
            _path, stored = table.setdefault(task_id, (path, {}))
            # made for the first value that is not its own entry (a superstep's writes are
            # often all numbers and None)
            writer: BlobWriter | None = None
            bases: dict[str, Any] = {}
            for position, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, position)
                if idx in saved and not replace:
                    continue  # a write already saved for this task is kept, as in LangGraph
                if channel == RESUME and idx in saved:
                    before = self.blobs.load_value(saved[idx][1])
                    value = merged_answers(before, value, ref.thread_id)
                if writer is None and not inline_as_is(value):
                    writer, bases = self._writes_writer(conn, thread_key, checkpoint_id, maps)
                entry = (
                    value
                    if writer is None
                    else writer.value(value, channel, base=bases.get(channel))
                )
                stored[idx] = (channel, entry)
            self.pending.store(
                conn, thread_key, checkpoint_id, table, latest=latest, replaces=has_row
            )

    def _table(self, conn: Db, thread_key: int, checkpoint_id: bytes) -> tuple[Pending, bool]:
        """The checkpoint's `writes` row, and whether it has one: the writes held in this
        batch when they are its own (a superstep's tasks add to them one after another, so
        they are not written and read back for each), else from the table."""
        held = self.pending.take_held()
        if held is not None and (held.thread_key, held.checkpoint_id) == (
            thread_key,
            checkpoint_id,
        ):
            return held.tasks, held.replaces
        self.pending.held = held
        self.pending.flush(conn)
        return self.pending.table(conn, thread_key, checkpoint_id)

    def _writes_writer(
        self, conn: Db, thread_key: int, checkpoint_id: bytes, maps: StoredMaps | None
    ) -> tuple[BlobWriter, dict[str, Any]]:
        """A blob writer for pending writes of a checkpoint: they may share the values its
        step wrote, but never be what a checkpoint reads as a channel value; and the
        checkpoint's channel entries (a map written to one may be stored as a delta)."""
        state = self.states.resolve(conn, thread_key, checkpoint_id)
        assert state is not None
        writer = BlobWriter(self.blobs, maps)
        updated = [
            entry[1]
            for name, entry in state.channels.items()
            if name in (state.updated or ()) and len(entry) == 2
        ]
        writer.protect(updated)  # values of a checkpoint: not to be shared by a write
        writer.offer(updated)
        return writer, {name: entry[1] for name, entry in state.channels.items() if len(entry) == 2}


def _state(
    writer: BlobWriter,
    checkpoint: Checkpoint,
    metadata: Mapping[str, Any],
    new_versions: Mapping[str, int],
    parent: State | None,
) -> State:
    """The new row's state: each channel's version and entry (its parent's if unchanged)."""
    previous = parent.channels if parent is not None else {}
    values, versions = checkpoint["channel_values"], checkpoint["channel_versions"]
    channels: dict[str, list[Any]] = {}
    for name in dict.fromkeys([*values, *versions]):
        entry: list[Any] = [versions.get(name)]
        if name in values:
            before = previous.get(name, [])
            unchanged = len(before) == 2 and before[0] == entry[0] and name not in new_versions
            prior = before[1] if len(before) == 2 else None
            entry.append(prior if unchanged else writer.channel(name, values[name], prior))
        channels[name] = entry
    writes = metadata.get("writes")
    return State(
        channels=channels,
        # copies: the state is cached, and the caller goes on changing its checkpoint
        versions_seen={n: dict(seen) for n, seen in checkpoint["versions_seen"].items()},
        updated=None if (u := checkpoint["updated_channels"]) is None else list(u),
        writes=[(node, writer.value(value, f"writes.{node}", pending=False))
                for node, value in writes.items()]
        if isinstance(writes, Mapping)
        else None,
    )  # fmt: skip


__all__ = ["Pending", "Writer"]
