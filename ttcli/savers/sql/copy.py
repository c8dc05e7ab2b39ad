"""Copying a thread's oldest checkpoints from one ttcli database into another, row by row.

Archiving must keep up with pruning, so it copies stored rows instead of reading values and
writing them again: between any two databases of ttcli's format (SQLite files, PostgreSQL
databases; both store the same columns in the same encoding), through the `Db` statements
both run. Where the target may take keys it never used (SQLite, whose writer holds the whole
file), it takes the source's name keys wherever they are free there, and its blob keys
wherever it never used them (see `Page._key_floor`), and a row whose keys all carry over is
copied byte for byte; elsewhere (PostgreSQL, whose keys come from sequences other writers
draw from meanwhile) names are added by name and blobs get keys of the target's own
(`SqlSaver.new_blob_keys`). Rows whose keys do not carry over have them translated, decoding
only the entries that point at blobs.
Each page of rows is one target transaction, read back and compared with the source (bytes,
or states by name; pending writes; blobs) before it commits; a page that does not compare is
rolled back and the prune stops before deleting anything. Where blobs went is remembered by
the target (`CopyMemory`) from page to page and from one prune to the next, for as long as
it stays true.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ttcli.configs import CheckpointRef
from ttcli.errors import StorageError
from ttcli.savers.serde import Ref
from ttcli.savers.sql.copy_check import PageCheck
from ttcli.savers.sql.copy_page import Page
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.rekey import rekey_pending, rekey_state

if TYPE_CHECKING:
    from ttcli.savers.sql.saver import SqlSaver

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


class RowCopy:
    """One thread's copy from `source` into `target` (savers on different databases)."""

    def __init__(self, source: SqlSaver, target: SqlSaver, ref: CheckpointRef) -> None:
        self.source, self.target, self.ref = source, target, ref
        self.names: dict[int, int] = {}
        self.same_names = False
        #: the source's blob keys and the target's keys of the blobs copied from them (as
        #: the target remembers them: asked again on every page)
        self.blobs = target.copied.blobs(source)

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
                    # the thread's lock first: on PostgreSQL, what others deleted until then
                    # is noticed with it (what the target remembers is forgotten then)
                    tconn = self.target.connection.conn
                    target_key = self.target.rows.thread_key(tconn, self.ref, create=True)
                    assert target_key is not None
                    self.blobs = self.target.copied.blobs(self.source)
                    self.share_names(sconn, tconn)
                    page = Page(self, sconn, tconn, source_key, target_key, below)
                    copied += page.copy(rows)
                    unchecked = PageCheck(page).check(rows, unchecked)
                self.target.connection.forget_rows()
            self.forget_old_blobs()
            if last:
                return copied
            after = rows[-1][0]

    # -- translation ---------------------------------------------------------------------------

    def share_names(self, sconn: Db, tconn: Db) -> None:
        """Give the target the source's name keys where they are free there (or already
        name the same), so that rows copy byte for byte. A target that cannot take keys of
        its own choosing gets the names it lacks in the source's order (an empty one then
        gives them the source's keys all the same)."""
        theirs = dict(sconn.execute("SELECT name_key, name FROM names").fetchall())
        ours = dict(tconn.execute("SELECT name_key, name FROM names").fetchall())
        if self.target.keeps_copied_keys:
            free = [(key, name) for key, name in theirs.items() if key not in ours]
            if free:
                tconn.executemany("INSERT INTO names (name_key, name) VALUES (?, ?)", free)
                self.target.names.forget()
                ours.update(free)
        else:
            known = set(ours.values())
            for _key, name in sorted(theirs.items()):
                if name not in known:
                    ours[self.target.names.key(name)] = name
                    known.add(name)
        for key, name in theirs.items():
            if ours.get(key) == name:
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
