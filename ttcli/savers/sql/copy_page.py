"""One page of an archive copy: rows copied into the target and checked there, in one
target transaction (see copy.py)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from ttcli.errors import StorageError
from ttcli.savers import serde
from ttcli.savers.blobs import entries_refs, entry_refs
from ttcli.savers.records import State, pending_refs, state_refs, unpack_parent
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.db import Db, scalar
from ttcli.savers.sql.params import chunks

if TYPE_CHECKING:
    from ttcli.savers.sql.copy import RowCopy

_INSERT = """
INSERT INTO checkpoints (
    thread_key, checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
    parent_writes
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

READ_BACK = """
SELECT checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
       parent_writes
FROM checkpoints
WHERE thread_key = ? AND checkpoint_id >= ? AND checkpoint_id <= ?
"""

TABLED = "SELECT checkpoint_id FROM writes WHERE thread_key = ? AND checkpoint_id BETWEEN ? AND ?"

_BRANCH = """
INSERT INTO branches (thread_key, parent_id, checkpoint_id) VALUES (?, ?, ?)
ON CONFLICT DO NOTHING
"""

_WRITES = """
INSERT INTO writes (thread_key, checkpoint_id, tasks) VALUES (?, ?, ?)
ON CONFLICT (thread_key, checkpoint_id) DO UPDATE SET tasks = excluded.tasks
"""

_NEXT_ROW = """
SELECT checkpoint_id, parent_id, parent_writes FROM checkpoints
WHERE thread_key = ? AND checkpoint_id > ? ORDER BY checkpoint_id LIMIT 1
"""

_BLOBS = "SELECT blob_key, base_key, is_record, value FROM blobs WHERE blob_key IN ({marks})"


class Page:
    """One page of rows, copied and checked inside one target transaction."""

    def __init__(
        self,
        copy: RowCopy,
        sconn: Db,
        tconn: Db,
        source_key: int,
        target_key: int,
        below: bytes,
    ) -> None:
        self.c, self.sconn, self.tconn = copy, sconn, tconn
        # both files' rows are read and written in their stored form (what an application's
        # classes would rebuild is copied as it was stored), alike, to compare them
        self.serde = serde.VERBATIM
        self.source_key, self.target_key, self.below = source_key, target_key, below
        self.new_blobs: list[tuple[int, int | None, int, bytes]] = []
        self.copied: list[bytes] = []
        self.verbatim: set[bytes] = set()  # rows copied byte for byte
        self.full: set[bytes] = set()  # deltas on a parent the target lacks, stored in full
        self.inserted: set[bytes] = set()
        #: rows translated with the source's names: what they must decode to
        self.expected: dict[bytes, tuple[Any, Any]] = {}
        #: of the page (see `_read`): pending writes in `writes`, the rows' states and the
        #: writes moved into them (decoded), and the blobs each row points at
        self.tables: dict[bytes, Any] = {}
        self.raws: dict[bytes, Any] = {}
        self.moved: dict[bytes, Any] = {}
        self.refs: dict[bytes, list[int]] = {}

    def copy(self, rows: list[Any]) -> int:
        todo = self._read(rows)
        latest = self._latest()
        # rows newer than all the target holds (the usual case) are placed without asking it
        # row by row, and inserted together
        appending = not todo or latest is None or todo[0][0] > latest
        records, branches = [], []
        for row in todo:
            checkpoint_id, stored_parent = row[0], row[1]
            parent = unpack_parent(checkpoint_id, stored_parent)
            if appending:
                follows = parent is not None and parent == latest
                if parent is not None and not follows:
                    branches.append((self.target_key, parent, checkpoint_id))
                latest = checkpoint_id
            else:
                latest = self._latest()
                follows = self.c.target.writer.place(
                    self.tconn, self.target_key, checkpoint_id, parent, latest
                )
            state, verbatim = self._state(row, parent, follows)
            parent_writes = self._parent_writes(row, parent, follows, verbatim)
            record = (
                self.target_key,
                checkpoint_id,
                stored_parent,
                *row[2:7],
                state,
                parent_writes,
            )
            if appending:
                records.append(record)
            else:
                self.tconn.execute(_INSERT, record)
            self.inserted.add(checkpoint_id)
            if checkpoint_id in self.tables:
                self._add_pending(checkpoint_id, self.c.pending(self.tables[checkpoint_id]))
            self.copied.append(checkpoint_id)
        self.tconn.executemany(_INSERT, records)
        self.tconn.executemany(_BRANCH, branches)
        self._carry_writes(rows)
        self.tconn.execute(
            "UPDATE threads SET checkpoints = checkpoints + ? WHERE thread_key = ?",
            (len(self.copied), self.target_key),
        )
        return len(self.copied)

    def _latest(self) -> bytes | None:
        """The target thread's latest checkpoint as it is now (not as cached for the batch:
        the copy inserts rows behind the saver's back)."""
        return scalar(self.tconn, sql.LATEST_ID, {"thread_key": self.target_key})  # type: ignore[no-any-return]

    def _read(self, rows: list[Any]) -> list[Any]:
        """The rows the target lacks, with what they point at decoded and their blobs
        copied (and the page's pending writes still in `writes`)."""
        ids = [row[0] for row in rows]
        present = set(self.c.target.rows.present(self.tconn, self.target_key, set(ids)))
        todo = [row for row in rows if row[0] not in present]
        self.tables = self._tables(ids)
        self.raws = {row[0]: self.serde.loads(row[7]) for row in todo}
        self.moved = {row[0]: self.serde.loads(row[8]) for row in todo if row[8] is not None}
        self.refs = {
            checkpoint_id: [
                *state_refs(raw),
                *(pending_refs(self.moved[checkpoint_id]) if checkpoint_id in self.moved else ()),
            ]
            for checkpoint_id, raw in self.raws.items()
        }
        self._copy_blobs(
            [
                *(k for found in self.refs.values() for k in found),
                *(k for raw in self.tables.values() for k in pending_refs(raw)),
            ]
        )
        return todo

    def _state(self, row: Any, parent: bytes | None, follows: bool) -> tuple[bytes, bool]:
        """A row's state in the target, and whether it is the source's bytes as they are."""
        checkpoint_id = row[0]
        # a delta needs its parent in the target: older, it is there by now, unless the
        # clocks of two processes disagreed (a source row whose parent was deleted is
        # stored in full already)
        has_parent = parent is not None and (
            follows or parent in self.inserted or self.in_target(parent)
        )
        if self.raws[checkpoint_id][0] and not has_parent:
            return self._in_full(checkpoint_id), False
        if self.c.same_keys(self.refs[checkpoint_id]):
            self.verbatim.add(checkpoint_id)
            return row[7], True
        translated = self.c.state(self.raws[checkpoint_id])
        if self.c.same_names:  # only blob keys differ: checked as decoded
            self.expected[checkpoint_id] = (translated, None)
        return self.serde.dumps(translated, path="checkpoint"), False

    def _parent_writes(
        self, row: Any, parent: bytes | None, follows: bool, verbatim: bool
    ) -> bytes | None:
        """The parent's writes that the source moved into this row, as the target keeps
        them: in the row when it follows its parent there too, else in the parent's."""
        checkpoint_id = row[0]
        if checkpoint_id not in self.moved:
            return None
        if follows and verbatim:
            return row[8]  # type: ignore[no-any-return]
        if follows:
            pending = self.c.pending(self.moved[checkpoint_id])
            if checkpoint_id in self.expected:
                self.expected[checkpoint_id] = (self.expected[checkpoint_id][0], pending)
            return self.serde.dumps(pending, path="pending writes")
        if parent is not None and (parent in self.inserted or self.in_target(parent)):
            # stored among newer rows: the parent keeps its writes in `writes`
            self._add_pending(parent, self.c.pending(self.moved[checkpoint_id]), replace=False)
        return None

    def _in_full(self, checkpoint_id: bytes) -> bytes:
        """A checkpoint's state stored in full, in the target's keys."""
        self.full.add(checkpoint_id)
        return self.translated(checkpoint_id).encode(self.c.target.deletion.stored_names, None)

    def translated(self, checkpoint_id: bytes) -> State:
        """The source's resolved state of a checkpoint, with its blobs copied and their
        keys translated."""
        resolved = self.c.source.deletion.stored_states.resolve(
            self.sconn, self.source_key, checkpoint_id
        )
        if resolved is None:
            raise StorageError(f"checkpoint '{uuid.UUID(bytes=checkpoint_id)}' vanished")
        entries = [e[1] for e in resolved.channels.values() if len(e) == 2]
        entries += [e for _node, e in resolved.writes or ()]
        self._copy_blobs(entries_refs(entries))
        entry = self.c.entry
        return State(
            channels={n: [e[0], *map(entry, e[1:])] for n, e in resolved.channels.items()},
            versions_seen={n: dict(seen) for n, seen in resolved.versions_seen.items()},
            updated=None if resolved.updated is None else list(resolved.updated),
            writes=None if resolved.writes is None else [(n, entry(e)) for n, e in resolved.writes],
        )

    def _tables(self, ids: list[bytes]) -> dict[bytes, Any]:
        """Pending writes still in the source's `writes` table, by checkpoint."""
        found = self.sconn.execute(
            "SELECT checkpoint_id, tasks FROM writes WHERE thread_key = ? "
            "AND checkpoint_id >= ? AND checkpoint_id <= ?",
            (self.source_key, ids[0], ids[-1]),
        ).fetchall()
        return {checkpoint_id: self.serde.loads(tasks) for checkpoint_id, tasks in found}

    def in_target(self, checkpoint_id: bytes) -> bool:
        found = self.tconn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_key = ? AND checkpoint_id = ?",
            (self.target_key, checkpoint_id),
        ).fetchone()
        return found is not None

    def _carry_writes(self, rows: list[Any]) -> None:
        """Copied checkpoints whose writes the source moved into a child not copied with
        them, because the target has that child already (it kept it when an earlier copy of
        the parent was deleted from it, for one) or it stays behind: in the target those
        writes go to the parent's `writes`. A child of a later page is copied with them."""
        copied = set(self.copied)
        for index, row in enumerate(rows):
            checkpoint_id = row[0]
            if checkpoint_id not in copied:
                continue
            if index + 1 < len(rows):
                child = (rows[index + 1][0], rows[index + 1][1], rows[index + 1][8])
                if child[0] in copied:
                    continue  # copied with it: `_parent_writes` placed them
            else:
                child = self.sconn.execute(_NEXT_ROW, (self.source_key, checkpoint_id)).fetchone()
                if child is None or (child[0] < self.below and not self.in_target(child[0])):
                    continue  # the next page copies it
            if child[2] is None or unpack_parent(child[0], child[1]) != checkpoint_id:
                continue
            raw = self.serde.loads(child[2])
            self._copy_blobs(list(pending_refs(raw)))
            self._add_pending(checkpoint_id, self.c.pending(raw), replace=False)

    def _add_pending(
        self, checkpoint_id: bytes, translated: dict[Any, Any], *, replace: bool = True
    ) -> None:
        """Store translated pending writes for a target checkpoint in `writes`, merged with
        what is there (the later writes win, as in the source's `writes` table)."""
        row = self.tconn.execute(
            "SELECT tasks FROM writes WHERE thread_key = ? AND checkpoint_id = ?",
            (self.target_key, checkpoint_id),
        ).fetchone()
        merged = _merge(self.serde.loads(row[0]), translated, replace) if row else translated
        self.tconn.execute(
            _WRITES,
            (self.target_key, checkpoint_id, self.serde.dumps(merged, path="pending writes")),
        )

    def _copy_blobs(self, keys: list[int]) -> None:
        """Copy the blobs behind `keys` not copied yet, bases and parts first: under the
        same key if the target never used it and may take it, else under a new one above
        every key seen."""
        wanted = {key for key in keys if key not in self.c.blobs}
        rows: dict[int, tuple[int | None, int, bytes]] = {}
        while wanted:
            found = fetch_blobs(self.sconn, sorted(wanted))
            missing = wanted - found.keys()
            if missing:
                raise StorageError(
                    f"stored value {min(missing)} of thread '{self.c.ref.thread_id}' is "
                    "missing; `ttcli verify` lists what is damaged"
                )
            rows.update(found)
            wanted = set()
            for base_key, is_record, data in found.values():
                more = [] if base_key is None else [base_key]
                if is_record:
                    more += entry_refs(self.serde.loads(data))
                wanted.update(k for k in more if k not in rows and k not in self.c.blobs)
        if not rows:
            return
        newest = scalar(self.tconn, "SELECT max(blob_key) FROM blobs") or 0
        floor = self._key_floor(newest)
        taken = (
            {}
            if floor is None
            else fetch_blobs(self.tconn, [key for key in rows if floor < key <= newest])
        )
        new_keys = self.c.target.new_blob_keys(self.tconn, len(rows), max(newest, *rows))
        kept_keys = self.c.target.copied.kept_keys(self.c.source)
        inserted = []
        for key in sorted(rows):  # a blob points only at older ones: they are decided first
            base_key, is_record, data = rows[key]
            if is_record:
                data = self.serde.dumps(self.c.entry(self.serde.loads(data)))
            base = None if base_key is None else self.c.blob(base_key)
            if key in kept_keys and taken.get(key) == (base, is_record, data):
                self.c.blobs[key] = key  # copied already (an earlier page), under its key
                continue
            if (
                floor is not None
                and key > floor
                and key not in taken
                and base == base_key
                and data == rows[key][2]
            ):
                self.c.blobs[key] = key
                kept_keys.add(key)
            else:
                self.c.blobs[key] = next(new_keys)
            inserted.append((self.c.blobs[key], base, is_record, data))
        self.new_blobs += inserted
        self.tconn.executemany(
            "INSERT INTO blobs (blob_key, base_key, is_record, value) VALUES (?, ?, ?, ?)",
            inserted,
        )

    def _key_floor(self, newest: int) -> int | None:
        """The largest blob key the target may ever have used before: a free key above it
        never meant anything there, so a blob copied under it cannot be taken for an older
        value by a process that remembers one (a deleted blob's key is never given again).
        None where the target takes no key of the copy's choosing.

        It is the target's largest key when this saver first copied into it, for as long as
        the target remembers it (`CopyMemory`: no other connection has changed the database
        and this saver has deleted no blob since).
        """
        if not self.c.target.keeps_copied_keys:
            return None
        memory = self.c.target.copied
        if memory.floor is None:
            memory.floor = newest
        return memory.floor

    # -- the check -------------------------------------------------------------------------


def translated_pending(copy: RowCopy, pending: dict[str, Any]) -> dict[str, Any]:
    return {
        task: (path, {i: (channel, copy.entry(e)) for i, (channel, e) in writes.items()})
        for task, (path, writes) in pending.items()
    }


def _merge(old: dict[Any, Any], new: dict[Any, Any], replace: bool) -> dict[Any, Any]:
    """Two stored pending-write maps as one. With `replace`, `new` holds later writes (the
    source's `writes` table): its special writes replace, its normal ones only add. Without,
    `new` holds earlier ones (moved into a child), which the table's special writes override."""
    merged = {task: [path, {w[0]: w for w in writes}] for task, (path, writes) in old.items()}
    for task, (path, writes) in new.items():
        known = merged.setdefault(task, [path, {}])[1]
        for write in writes:
            idx = write[0]
            if idx not in known or (replace and idx < 0) or (not replace and idx >= 0):
                known[idx] = write
    return {task: [path, sorted(writes.values())] for task, (path, writes) in merged.items()}


def fetch_blobs(conn: Db, keys: list[int]) -> dict[int, tuple[int | None, int, bytes]]:
    found: dict[int, tuple[int | None, int, bytes]] = {}
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        for key, base_key, is_record, data in conn.execute(_BLOBS.format(marks=marks), chunk):
            found[key] = (base_key, is_record, data)
    return found
