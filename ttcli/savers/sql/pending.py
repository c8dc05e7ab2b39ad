"""Pending writes: one representation, two places, one interface.

What the tasks planned at a checkpoint wrote is a map {task_id: (task_path, {idx: (channel,
entry)})}, encoded as one value (`records.encode_pending`). It lives in the `writes` row of
its checkpoint while that checkpoint is the thread's latest (running, paused or failed), and
moves into the `parent_writes` column of the row right after it once that child is stored:
a superstep then writes one row, not two (measured in bench/analysis.md). Inside a batch the
writes put to the latest checkpoint are held in memory until its child takes them, so they
never touch `writes` at all. Only this module knows about the two places: everyone else asks
`merged` for a checkpoint's pending writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ttcli.savers.records import Names, decode_pending, encode_pending, unpack_parent
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.transactions import Transactions

Pending = dict[str, tuple[str, dict[int, tuple[str, Any]]]]


@dataclass
class Held:
    """Pending writes put in a batch for the thread's latest checkpoint, not yet in `writes`:
    if the batch goes on to store that checkpoint's child, they move into the child's row
    without ever being written to `writes` (a superstep: its task's writes, its checkpoint)."""

    thread_key: int
    checkpoint_id: bytes
    tasks: Pending
    #: whether `writes` has a row for the checkpoint (these replace it)
    replaces: bool


class PendingWrites:
    """Reads, writes, holds and moves pending writes."""

    def __init__(self, connection: Transactions[Db], names: Names) -> None:
        self.connection, self.names = connection, names
        self.held: Held | None = None
        connection.on_flush.append(self.flush)
        connection.on_batch_end.append(self._drop_held)

    def _drop_held(self) -> None:
        self.held = None

    def flush(self, conn: Db) -> None:
        """Write held pending writes to `writes`: something other than their checkpoint's
        child comes next in the batch."""
        held, self.held = self.held, None
        if held is not None:
            self.set(conn, held.thread_key, held.checkpoint_id, held.tasks)

    def take_held(self) -> Held | None:
        held, self.held = self.held, None
        return held

    def inserted(self, thread_key: int, checkpoint_id: bytes) -> None:
        """A checkpoint row was inserted: it has no `writes` row (until `set` writes one)."""
        self.connection.facts.rowless.add((thread_key, checkpoint_id))

    def table(self, conn: Db, thread_key: int, checkpoint_id: bytes) -> tuple[Pending, bool]:
        """The writes in the checkpoint's `writes` row, and whether it has one."""
        if (thread_key, checkpoint_id) in self.connection.facts.rowless:
            return {}, False
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        row = conn.execute(sql.PENDING, params).fetchone()
        return decode_pending(row[0] if row else None, self.names), row is not None

    def merged(
        self,
        conn: Db,
        thread_key: int,
        checkpoint_id: bytes,
        *,
        table: Pending | None = None,
    ) -> Pending:
        """A checkpoint's pending writes: those moved into its child, then those still in
        `writes` (`table`, if already read; a later normal write never replaces an earlier
        one; special ones do)."""
        params = {"thread_key": thread_key, "checkpoint_id": checkpoint_id}
        following = conn.execute(sql.NEXT, params).fetchone()
        if table is None:
            table, _ = self.table(conn, thread_key, checkpoint_id)
        return self._merge(checkpoint_id, following, table)

    def of_row(self, row: Sequence[Any]) -> Pending:
        """`merged` of a checkpoint row as `sql.WITH_PENDING` gives it, which holds what
        `merged` reads (the row right after it, its `writes` row): no statement."""
        following = None if row[10] is None else row[10:13]
        return self._merge(row[3], following, decode_pending(row[13], self.names))

    def _merge(
        self, checkpoint_id: bytes, following: Sequence[Any] | None, table: Pending
    ) -> Pending:
        """The writes moved into the row right after the checkpoint (`following`: its id,
        parent and moved writes), if it is the checkpoint's child, then those of `table`."""
        merged: Pending = {}
        if following is not None and unpack_parent(following[0], following[1]) == checkpoint_id:
            merged = decode_pending(following[2], self.names)
        for task_id, (path, writes) in table.items():
            _path, known = merged.setdefault(task_id, (path, {}))
            for idx, write in writes.items():
                if idx < 0 or idx not in known:
                    known[idx] = write
        return merged

    def set(self, conn: Db, thread_key: int, checkpoint_id: bytes, tasks: Pending) -> None:
        self.connection.facts.rowless.discard((thread_key, checkpoint_id))
        conn.execute(
            sql.SET_PENDING,
            {
                "thread_key": thread_key,
                "checkpoint_id": checkpoint_id,
                "tasks": encode_pending(tasks, self.names),
            },
        )

    def store(
        self,
        conn: Db,
        thread_key: int,
        checkpoint_id: bytes,
        tasks: Pending,
        *,
        latest: bool,
        replaces: bool,
    ) -> None:
        """Store a checkpoint's `writes` row; in a batch, hold the latest checkpoint's
        instead, for its child to take."""
        if latest and self.connection.in_batch:
            self.held = Held(thread_key, checkpoint_id, tasks, replaces)
        else:
            self.set(conn, thread_key, checkpoint_id, tasks)

    def take(self, conn: Db, thread_key: int, parent_id: bytes) -> bytes | None:
        """Move the parent's pending writes out of `writes` for its child's row (the row
        right after it, so none were moved into another row before)."""
        if (thread_key, parent_id) in self.connection.facts.rowless:
            return None
        params = {"thread_key": thread_key, "checkpoint_id": parent_id}
        row = conn.execute(sql.PENDING, params).fetchone()
        if row is None:
            return None
        conn.execute(sql.DELETE_PENDING, params)
        return row[0]  # type: ignore[no-any-return]

    def give_back(self, conn: Db, thread_key: int, parent_id: bytes, child: bytes) -> None:
        """The child stops being the row right after its parent: the parent's writes it holds
        go back to `writes`."""
        tasks = self.merged(conn, thread_key, parent_id)
        self.set(conn, thread_key, parent_id, tasks)
        conn.execute(
            "UPDATE checkpoints SET parent_writes = NULL "
            "WHERE thread_key = ? AND checkpoint_id = ?",
            (thread_key, child),
        )


def in_order(tasks: Pending) -> Iterator[tuple[str, str, str, Any]]:
    """Pending writes as (task_id, task_path, channel, entry), in the order the runtime
    applies them: by task path, task id, then write index."""
    for task_id, (path, writes) in sorted(tasks.items(), key=lambda t: (t[1][0], t[0])):
        for _idx, (channel, entry) in sorted(writes.items()):
            yield task_id, path, channel, entry
