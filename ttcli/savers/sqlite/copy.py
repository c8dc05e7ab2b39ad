"""Copying a thread's oldest checkpoints from one ttcli file into another, row by row.

Archiving must keep up with pruning, so it copies stored rows instead of reading values and
writing them again. The target takes the source's name keys wherever they are free there, and
its blob keys wherever the target never used them (see `_Page._key_floor`), and a row whose
keys all carry over is copied byte for byte; other rows have their keys translated, decoding
only the entries that point at blobs.
Each page of rows is one target transaction, read back and compared with the source (bytes,
or states by name; pending writes; blobs) before it commits; a page that does not compare is
rolled back and the prune stops before deleting anything.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef
from ttcli.errors import StorageError
from ttcli.savers.blobs import entry_refs
from ttcli.savers.records import State, pending_refs, state_refs, unpack_parent
from ttcli.savers.serde import Ref
from ttcli.savers.sqlite.params import chunks

if TYPE_CHECKING:
    from ttcli.savers.sqlite import SqliteSaver

PAGE = 500  # checkpoints per target transaction
BLOB_MAP_MAX = 65_536  # blob keys remembered between pages (a forgotten one is copied again)

_ROWS = """
SELECT checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
       parent_writes
FROM checkpoints
WHERE thread_key = :thread_key
  AND checkpoint_id > :after
  AND checkpoint_id < :below
ORDER BY checkpoint_id
LIMIT :limit
"""

_INSERT = """
INSERT INTO checkpoints (
    thread_key, checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
    parent_writes
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

_READ_BACK = """
SELECT checkpoint_id, parent_id, source, step, writers, metadata, created_at, state,
       parent_writes
FROM checkpoints
WHERE thread_key = ? AND checkpoint_id >= ? AND checkpoint_id <= ?
"""

_TABLED = "SELECT checkpoint_id FROM writes WHERE thread_key = ? AND checkpoint_id BETWEEN ? AND ?"

_LATEST = "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_key = ?"

_BRANCH = "INSERT OR IGNORE INTO branches (thread_key, parent_id, checkpoint_id) VALUES (?, ?, ?)"

_BLOBS = "SELECT blob_key, base_key, is_record, value FROM blobs WHERE blob_key IN ({marks})"


class RowCopy:
    """One thread's copy from `source` into `target` (SqliteSavers on different files)."""

    def __init__(self, source: SqliteSaver, target: SqliteSaver, ref: CheckpointRef) -> None:
        self.source, self.target, self.ref = source, target, ref
        self.names: dict[int, int] = {}
        self.same_names = False
        self.blobs: OrderedDict[int, int] = OrderedDict()
        #: the target's PRAGMA data_version and its saver's blob deletions at the last page
        self.version: tuple[int, int] | None = None

    def copy_below(self, below: bytes) -> int:
        """Copy every checkpoint below `below` that the target lacks; returns how many."""
        copied, after, unchecked = 0, b"", None
        while True:
            with self.source.connection.read() as sconn:
                source_key = self.source.rows.thread_key(sconn, self.ref)
                if source_key is None:
                    return copied
                rows = sconn.execute(
                    _ROWS,
                    {"thread_key": source_key, "after": after, "below": below, "limit": PAGE + 1},
                ).fetchall()
                if not rows:
                    return copied
                last, rows = len(rows) <= PAGE, rows[:PAGE]
                with self.target.batch():
                    tconn = self.target.conn
                    target_key = self.target.rows.thread_key(tconn, self.ref, create=True)
                    assert target_key is not None
                    self.notice_others(tconn)
                    self.share_names(sconn, tconn)
                    page = _Page(self, sconn, tconn, source_key, target_key, below)
                    copied += page.copy(rows, last)
                    unchecked = page.check(rows, unchecked)
            self.forget_old_blobs()
            if last:
                return copied
            after = rows[-1][0]

    # -- translation ---------------------------------------------------------------------------

    def notice_others(self, tconn: sqlite3.Connection) -> None:
        """Forget which blobs were copied where if another connection changed the target
        since the last page, or the target saver deleted blobs (from another Python thread):
        some of them may be gone."""
        (version,) = tconn.execute("PRAGMA data_version").fetchone()
        seen = (version, self.target.deletion.blob_deletions)
        if seen != self.version:
            self.blobs.clear()
        self.version = seen

    def share_names(self, sconn: sqlite3.Connection, tconn: sqlite3.Connection) -> None:
        """Give the target the source's name keys where they are free there (or already
        name the same), so that rows copy byte for byte."""
        theirs = dict(sconn.execute("SELECT name_key, name FROM names").fetchall())
        ours = dict(tconn.execute("SELECT name_key, name FROM names").fetchall())
        free = [(key, name) for key, name in theirs.items() if key not in ours]
        if free:
            tconn.executemany("INSERT INTO names (name_key, name) VALUES (?, ?)", free)
            self.target.names.forget()
            ours.update(free)
        for key, name in theirs.items():
            if ours[key] == name:
                self.names[key] = key
        self.same_names = all(self.names.get(key) == key for key in theirs)

    def same_keys(self, refs: Iterable[int]) -> bool:
        """Whether a row pointing at these blobs reads the same in the target as it is."""
        return self.same_names and all(self.blobs[key] == key for key in refs)

    def name(self, key: int) -> int:
        found = self.names.get(key)
        if found is None:
            found = self.names[key] = self.target.names.key(self.source.names.name(key))
        return found

    def blob(self, key: int) -> int:
        found = self.blobs.get(key)
        if found is None:
            raise StorageError(f"stored value {key} was not copied before its use")
        self.blobs.move_to_end(key)
        return found

    def entry(self, entry: Any) -> Any:
        if isinstance(entry, Ref):
            return Ref(self.blob(entry.key))
        if type(entry) is dict and any(isinstance(v, Ref) for v in entry.values()):
            return {k: Ref(self.blob(v.key)) if isinstance(v, Ref) else v for k, v in entry.items()}
        return entry

    def state(self, stored: list[Any]) -> list[Any]:
        """A stored state (full or delta) in the target's names and blob keys."""
        return rekey_state(stored, self.name, self.entry)

    def pending(self, stored: dict[Any, Any]) -> dict[Any, Any]:
        """Stored pending writes in the target's names and blob keys."""
        return rekey_pending(stored, self.name, self.entry)

    def forget_old_blobs(self) -> None:
        while len(self.blobs) > BLOB_MAP_MAX:
            self.blobs.popitem(last=False)


class _Page:
    """One page of rows, copied and checked inside one target transaction."""

    def __init__(
        self,
        copy: RowCopy,
        sconn: sqlite3.Connection,
        tconn: sqlite3.Connection,
        source_key: int,
        target_key: int,
        below: bytes,
    ) -> None:
        self.c, self.sconn, self.tconn = copy, sconn, tconn
        self.serde = copy.source.serde  # both files' rows are read alike, to compare them
        self.source_key, self.target_key, self.below = source_key, target_key, below
        self.new_blobs: list[tuple[int, int | None, int, bytes]] = []
        self.copied: list[bytes] = []
        self.verbatim: set[bytes] = set()  # rows copied byte for byte
        self.full: set[bytes] = set()  # deltas on a parent the target lacks, stored in full
        self.inserted: set[bytes] = set()
        #: rows translated with the source's names: what they must decode to
        self.expected: dict[bytes, tuple[Any, Any]] = {}

    def copy(self, rows: list[Any], last: bool) -> int:
        ids = [row[0] for row in rows]
        present = set(self.c.target.rows.present(self.tconn, self.target_key, set(ids)))
        todo = [row for row in rows if row[0] not in present]
        tables = self._tables(ids)
        raws = {row[0]: self.serde.loads(row[7]) for row in todo}
        moved = {row[0]: self.serde.loads(row[8]) for row in todo if row[8] is not None}
        refs = {
            checkpoint_id: [
                *state_refs(raw),
                *(pending_refs(moved[checkpoint_id]) if checkpoint_id in moved else ()),
            ]
            for checkpoint_id, raw in raws.items()
        }
        self._copy_blobs(
            [
                *(k for found in refs.values() for k in found),
                *(k for raw in tables.values() for k in pending_refs(raw)),
            ]
        )
        target = self.c.target
        (latest,) = self.tconn.execute(_LATEST, (self.target_key,)).fetchone()
        # rows newer than all the target holds (the usual case) are placed without asking it
        # row by row, and inserted together
        appending = not todo or latest is None or todo[0][0] > latest
        records, branches = [], []
        for checkpoint_id, stored_parent, *columns, _state, _moved in todo:
            parent = unpack_parent(checkpoint_id, stored_parent)
            if appending:
                follows = parent is not None and parent == latest
                if parent is not None and not follows:
                    branches.append((self.target_key, parent, checkpoint_id))
                latest = checkpoint_id
            else:
                (latest,) = self.tconn.execute(_LATEST, (self.target_key,)).fetchone()
                follows = target.writer.place(
                    self.tconn, self.target_key, checkpoint_id, parent, latest
                )
            # a delta needs its parent in the target: older, it is there by now, unless the
            # clocks of two processes disagreed (a source row whose parent was deleted is
            # stored in full already)
            has_parent = parent is not None and (
                follows or parent in self.inserted or self._in_target(parent)
            )
            verbatim = False
            if raws[checkpoint_id][0] and not has_parent:
                state = self._in_full(checkpoint_id)
            elif verbatim := self.c.same_keys(refs[checkpoint_id]):
                state = _state
                self.verbatim.add(checkpoint_id)
            else:
                translated = self.c.state(raws[checkpoint_id])
                state = self.serde.dumps(translated, path="checkpoint")
                if self.c.same_names:  # only blob keys differ: checked as decoded
                    self.expected[checkpoint_id] = (translated, None)
            parent_writes = None
            if checkpoint_id in moved:  # the parent's writes, moved into this row
                if follows and verbatim:
                    parent_writes = _moved
                elif follows:
                    pending = self.c.pending(moved[checkpoint_id])
                    parent_writes = self.serde.dumps(pending, path="pending writes")
                    if checkpoint_id in self.expected:
                        self.expected[checkpoint_id] = (self.expected[checkpoint_id][0], pending)
                elif parent is not None and (parent in self.inserted or self._in_target(parent)):
                    # stored among newer rows: the parent keeps its writes in `writes`
                    self._add_pending(parent, self.c.pending(moved[checkpoint_id]), replace=False)
            record = (self.target_key, checkpoint_id, stored_parent, *columns, state, parent_writes)
            if appending:
                records.append(record)
            else:
                self.tconn.execute(_INSERT, record)
            self.inserted.add(checkpoint_id)
            if checkpoint_id in tables:
                self._add_pending(checkpoint_id, self.c.pending(tables[checkpoint_id]))
            self.copied.append(checkpoint_id)
        self.tconn.executemany(_INSERT, records)
        self.tconn.executemany(_BRANCH, branches)
        if self.copied and last:
            self._carry_last_writes(self.copied[-1])
        self.tconn.execute(
            "UPDATE threads SET checkpoints = checkpoints + ? WHERE thread_key = ?",
            (len(self.copied), self.target_key),
        )
        return len(self.copied)

    def _in_full(self, checkpoint_id: bytes) -> bytes:
        """A checkpoint's state stored in full, in the target's keys."""
        self.full.add(checkpoint_id)
        return self._translated(checkpoint_id).encode(self.c.target.names, None)

    def _translated(self, checkpoint_id: bytes) -> State:
        """The source's resolved state of a checkpoint, with its blobs copied and their
        keys translated."""
        resolved = self.c.source.states.resolve(self.sconn, self.source_key, checkpoint_id)
        if resolved is None:
            raise StorageError(f"checkpoint '{uuid.UUID(bytes=checkpoint_id)}' vanished")
        entries = [e[1] for e in resolved.channels.values() if len(e) == 2]
        entries += [e for _node, e in resolved.writes or ()]
        self._copy_blobs([key for entry in entries for key in entry_refs(entry)])
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

    def _in_target(self, checkpoint_id: bytes) -> bool:
        found = self.tconn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_key = ? AND checkpoint_id = ?",
            (self.target_key, checkpoint_id),
        ).fetchone()
        return found is not None

    def _carry_last_writes(self, checkpoint_id: bytes) -> None:
        """The newest copied checkpoint's writes moved into its child, which stays behind:
        in the target they go to `writes`."""
        following = self.sconn.execute(
            "SELECT checkpoint_id, parent_id, parent_writes FROM checkpoints "
            "WHERE thread_key = ? AND checkpoint_id > ? ORDER BY checkpoint_id LIMIT 1",
            (self.source_key, checkpoint_id),
        ).fetchone()
        if following is None or following[2] is None or following[0] < self.below:
            return
        if unpack_parent(following[0], following[1]) != checkpoint_id:
            return
        raw = self.serde.loads(following[2])
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
            "INSERT OR REPLACE INTO writes (thread_key, checkpoint_id, tasks) VALUES (?, ?, ?)",
            (self.target_key, checkpoint_id, self.serde.dumps(merged, path="pending writes")),
        )

    def _copy_blobs(self, keys: list[int]) -> None:
        """Copy the blobs behind `keys` not copied yet, bases and parts first: under the
        same key if the target never used it, else under a new one above every key seen."""
        wanted = {key for key in keys if key not in self.c.blobs}
        rows: dict[int, tuple[int | None, int, bytes]] = {}
        while wanted:
            found = _fetch_blobs(self.sconn, sorted(wanted))
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
        (newest,) = self.tconn.execute("SELECT max(blob_key) FROM blobs").fetchone()
        floor = self._key_floor(newest or 0)
        taken = _fetch_blobs(self.tconn, [key for key in rows if floor < key <= (newest or 0)])
        next_key = max(newest or 0, *rows) + 1
        for key in sorted(rows):  # a blob points only at older ones: they are decided first
            base_key, is_record, data = rows[key]
            if is_record:
                data = self.serde.dumps(self.c.entry(self.serde.loads(data)))
            base = None if base_key is None else self.c.blob(base_key)
            if key > floor and key not in taken and base == base_key and data == rows[key][2]:
                self.c.blobs[key] = key
            else:
                self.c.blobs[key], next_key = next_key, next_key + 1
            self.new_blobs.append((self.c.blobs[key], base, is_record, data))
        self.tconn.executemany(
            "INSERT INTO blobs (blob_key, base_key, is_record, value) VALUES (?, ?, ?, ?)",
            self.new_blobs[-len(rows) :],
        )

    def _key_floor(self, newest: int) -> int:
        """The largest blob key the target may ever have used before: a free key above it
        never meant anything there, so a blob copied under it cannot be taken for an older
        value by a process that remembers one (a deleted blob's key is never given again).

        It is the target's largest key when this saver first copied into it, for as long as
        no other connection has changed the file and this saver has deleted no blob since.
        """
        (version,) = self.tconn.execute("PRAGMA data_version").fetchone()
        known = self.c.target.deletion.copy_floor
        floor = newest if known is None or known[1] != version else known[0]
        self.c.target.deletion.copy_floor = (floor, version)
        return floor

    # -- the check -------------------------------------------------------------------------

    def check(self, rows: list[Any], unchecked: bytes | None) -> bytes | None:
        """Read the copied rows back from the target and compare them, by name, with the
        source's; and the pending writes of checkpoints the target keeps in `writes`.

        Returns the checkpoint whose pending writes can only be compared with the next page
        (its child, which holds some of them, is copied there)."""
        copied = set(self.copied)
        wanted = {row[0]: row for row in rows if row[0] in copied}
        if wanted:
            bounds = (self.target_key, min(wanted), max(wanted))
            found = self.tconn.execute(_READ_BACK, bounds).fetchall()
            stored = {row[0]: row for row in found}
            for checkpoint_id, row in wanted.items():
                if not self._same_row(row, stored.get(checkpoint_id)):
                    self._fail(checkpoint_id)
            tabled = self.tconn.execute(_TABLED, bounds).fetchall()
        else:
            tabled = []
        carried = None
        last = rows[-1][0]
        for checkpoint_id in [*([] if unchecked is None else [unchecked]), *(t for (t,) in tabled)]:
            if checkpoint_id == last and not self._settled(checkpoint_id):
                carried = checkpoint_id
                continue
            theirs = self.c.source.pending.merged(self.sconn, self.source_key, checkpoint_id)
            ours = self.c.target.pending.merged(self.tconn, self.target_key, checkpoint_id)
            if _translated_pending(self.c, theirs) != ours:
                self._fail(checkpoint_id)
        self._check_blobs()
        return carried

    def _same_row(self, theirs: Any, ours: Any) -> bool:
        if ours is None or tuple(ours[1:7]) != tuple(theirs[1:7]):
            return False
        checkpoint_id = theirs[0]
        stored = self.serde.loads(ours[7])
        parent = unpack_parent(checkpoint_id, ours[1])
        if stored[0] and (
            parent is None or (parent not in self.inserted and not self._in_target(parent))
        ):
            return False  # a delta must have its parent beside it
        if checkpoint_id in self.full:
            resolved = self.c.target.states.resolve(self.tconn, self.target_key, checkpoint_id)
            expected_state = self._translated(checkpoint_id)
            return (
                resolved is not None
                and all(
                    getattr(resolved, field) == getattr(expected_state, field)
                    for field in ("channels", "versions_seen", "updated", "writes")
                )
                and ours[8] is None
            )
        if checkpoint_id in self.verbatim:  # same keys: the same bytes read the same
            return ours[7] == theirs[7] and ours[8] in (None, theirs[8])
        if checkpoint_id in self.expected:  # same names: what was meant to be written
            state, pending = self.expected[checkpoint_id]
            return stored == state and (
                ours[8] is None if pending is None else self.serde.loads(ours[8]) == pending
            )
        source_name, target_name = self.c.source.names.name, self.c.target.names.name
        expected = rekey_state(self.serde.loads(theirs[7]), source_name, self.c.entry)
        if rekey_state(stored, target_name) != expected:
            return False
        if ours[8] is None:  # the parent's writes stayed behind, or went to `writes`
            return True
        return rekey_pending(self.serde.loads(ours[8]), target_name) == rekey_pending(
            self.serde.loads(theirs[8]), source_name, self.c.entry
        )

    def _settled(self, checkpoint_id: bytes) -> bool:
        """Whether the checkpoint's pending writes are all in the target already: its child
        that holds them is not waiting to be copied in the next page."""
        following = self.sconn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_key = ? AND checkpoint_id > ? "
            "ORDER BY checkpoint_id LIMIT 1",
            (self.source_key, checkpoint_id),
        ).fetchone()
        return following is None or following[0] >= self.below

    def _check_blobs(self) -> None:
        for chunk in chunks(self.new_blobs):
            stored = _fetch_blobs(self.tconn, [row[0] for row in chunk])
            for key, base, is_record, data in chunk:
                if stored.get(key) != (base, is_record, data):
                    raise StorageError(
                        f"archive check failed for stored value {key} of thread "
                        f"'{self.c.ref.thread_id}': nothing was deleted"
                    )

    def _fail(self, checkpoint_id: bytes) -> None:
        raise StorageError(
            f"archive check failed for checkpoint '{uuid.UUID(bytes=checkpoint_id)}' of thread "
            f"'{self.c.ref.thread_id}': nothing was deleted"
        )


def _translated_pending(copy: RowCopy, pending: dict[str, Any]) -> dict[str, Any]:
    return {
        task: (path, {i: (channel, copy.entry(e)) for i, (channel, e) in writes.items()})
        for task, (path, writes) in pending.items()
    }


def _same(entry: Any) -> Any:
    return entry


def rekey_state(
    stored: list[Any], name: Callable[[int], Any], entry: Callable[[Any], Any] = _same
) -> list[Any]:
    """A stored state (full or delta) with its name keys and entries mapped: into another
    file's keys to copy it, or to names to compare it across files."""
    depth, channels, seen, updated, writes = stored
    return [
        depth,
        {
            name(k): None if e is None else [e[0], *(entry(v) for v in e[1:])]
            for k, e in channels.items()
        },
        {
            name(n): None if m is None else {name(c): v for c, v in m.items()}
            for n, m in seen.items()
        },
        None if updated is None else [name(k) for k in updated],
        None
        if writes is None
        else [
            [name(w[0]), 0, name(w[2])] if len(w) == 3 else [name(w[0]), entry(w[1])]
            for w in writes
        ],
    ]


def rekey_pending(
    stored: dict[Any, Any], name: Callable[[int], Any], entry: Callable[[Any], Any] = _same
) -> dict[Any, Any]:
    """Stored pending writes with their name keys and entries mapped (see `rekey_state`)."""
    return {
        task: [name(path), [[i, name(c), entry(e)] for i, c, e in writes]]
        for task, (path, writes) in stored.items()
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


def _fetch_blobs(
    conn: sqlite3.Connection, keys: list[int]
) -> dict[int, tuple[int | None, int, bytes]]:
    found: dict[int, tuple[int | None, int, bytes]] = {}
    for chunk in chunks(keys):
        marks = ",".join("?" * len(chunk))
        for key, base_key, is_record, data in conn.execute(_BLOBS.format(marks=marks), chunk):
            found[key] = (base_key, is_record, data)
    return found
