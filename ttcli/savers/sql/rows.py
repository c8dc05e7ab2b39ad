"""Threads and checkpoint rows: keys, ids, the latest, children and neighbours.

Every method takes the connection of a transaction its caller holds. Inside a batch, the
thread keys and latest ids it looks up are kept until the batch ends (it holds the write
lock, so nobody else can change them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ttcli.configs import CheckpointRef
from ttcli.savers.base import ThreadSummary
from ttcli.savers.records import unpack_parent
from ttcli.savers.sql import statements as sql
from ttcli.savers.sql.db import Db, scalar
from ttcli.savers.sql.ids import id_bytes, id_text
from ttcli.savers.sql.params import id_chunks
from ttcli.savers.sql.transactions import Transactions
from ttcli.uuid6 import id_micros

#: sorts above every 16-byte checkpoint id (an open upper bound as a plain value)
_ABOVE_ALL = b"\xff" * 17
#: a LIMIT that takes every row (both databases read NULL and negative limits differently)
_NO_LIMIT = 2**62
#: a thread's ids in a range of them, newest first or oldest first (plain bounds, never
#: `:below IS NULL OR ...`, so that the primary key's range is read and nothing above or
#: below it)
_IDS = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_key = :thread_key "
    "AND checkpoint_id < :below AND checkpoint_id >= :since ORDER BY checkpoint_id "
)
_IDS_NEWEST_FIRST = _IDS + "DESC LIMIT :limit"
_IDS_OLDEST_FIRST = _IDS + "ASC LIMIT :limit"


class Rows:
    """Looks up threads and checkpoint rows."""

    def __init__(self, connection: Transactions[Db]) -> None:
        self.connection = connection
        #: checkpoints inserted in the batch, by thread key: each thread's count is raised
        #: once, when the batch writes what it held back (one statement, not one a checkpoint)
        self.uncounted: dict[int, int] = {}
        connection.on_flush.append(self._write_counts)
        connection.on_rollback.append(self.uncounted.clear)

    def thread_key(self, conn: Db, ref: CheckpointRef, *, create: bool = False) -> int | None:
        known = self._known_or_claimed(ref)
        if known is not None:
            return known
        params = {"thread_id": ref.thread_id, "checkpoint_ns": ref.checkpoint_ns}
        row = conn.execute(sql.THREAD, params).fetchone()
        if row is not None:
            found = int(row[0])
        elif create:
            found = int(conn.execute(sql.NEW_THREAD, params).fetchall()[0][0])
        else:
            return None
        self._learned(ref, found)
        return found

    def _known_or_claimed(self, ref: CheckpointRef) -> int | None:
        """The thread's key if the batch knows it; else None, and the thread claimed."""
        if self.connection.in_batch:
            known = self.connection.facts.threads.get((ref.thread_id, ref.checkpoint_ns))
            if known is not None:
                return known
        self.connection.claim(ref.thread_id)
        return None

    def _learned(self, ref: CheckpointRef, thread_key: int) -> None:
        if self.connection.in_batch:
            self.connection.facts.threads[(ref.thread_id, ref.checkpoint_ns)] = thread_key

    def latest(self, conn: Db, thread_key: int) -> bytes | None:
        """The thread's latest checkpoint id (kept for the rest of a batch)."""
        facts = self.connection.facts.latest
        if self.connection.in_batch and thread_key in facts:
            return facts[thread_key]
        latest = scalar(conn, sql.LATEST_ID, {"thread_key": thread_key})
        if self.connection.in_batch:
            facts[thread_key] = latest
        return latest  # type: ignore[no-any-return]

    def counted(self, conn: Db, thread_key: int) -> None:
        """A row was inserted: the thread has one more checkpoint."""
        if self.connection.in_batch:
            self.uncounted[thread_key] = self.uncounted.get(thread_key, 0) + 1
        else:
            conn.execute(sql.COUNT, {"thread_key": thread_key, "change": 1})

    def _write_counts(self, conn: Db) -> None:
        for thread_key, change in self.uncounted.items():
            conn.execute(sql.COUNT, {"thread_key": thread_key, "change": change})
        self.uncounted.clear()

    def stored(self, thread_key: int, checkpoint_id: bytes) -> None:
        """A row was inserted: it may be the thread's new latest."""
        facts = self.connection.facts.latest
        if thread_key in facts:  # known, from this or an earlier batch: keep it right
            latest = facts[thread_key]
            if latest is None or checkpoint_id > latest:
                facts[thread_key] = checkpoint_id

    def exists(self, conn: Db, thread_key: int, checkpoint_id: bytes) -> bool:
        if self.latest(conn, thread_key) == checkpoint_id:
            return True
        found = conn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_key = ? AND checkpoint_id = ?",
            (thread_key, checkpoint_id),
        ).fetchone()
        return found is not None

    def present(self, conn: Db, thread_key: int, ids: set[bytes]) -> list[bytes]:
        """Which of `ids` the thread has."""
        found: list[bytes] = []
        for chunk in id_chunks(sorted(ids)):
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

    def row(self, conn: Db, ref: CheckpointRef) -> Sequence[Any] | None:
        """The row `ref` names (the thread's latest without an id), as `sql.WITH_PENDING`
        gives it: the thread is looked up in the same statement."""
        self._known_or_claimed(ref)
        params: dict[str, Any] = {"thread_id": ref.thread_id, "checkpoint_ns": ref.checkpoint_ns}
        if ref.checkpoint_id is None:
            row = conn.execute(sql.LATEST_BY_REF, params).fetchone()
        else:
            params["checkpoint_id"] = id_bytes(ref.checkpoint_id)
            if params["checkpoint_id"] is None:
                return None
            row = conn.execute(sql.BY_REF, params).fetchone()
        if row is not None:
            self._learned(ref, row[0])
        return row  # type: ignore[no-any-return]

    def by_keys(self, conn: Db, keys: Sequence[tuple[int, bytes]]) -> list[Sequence[Any] | None]:
        """Checkpoints' rows as `sql.WITH_PENDING` gives them (None for one that no longer
        exists), by (thread key, checkpoint id): a statement a thread, each sent before a
        result is read (to a server, one round trip for all)."""
        threads: dict[int, list[bytes]] = {}
        for thread_key, checkpoint_id in keys:
            threads.setdefault(thread_key, []).append(checkpoint_id)
        cursors = [
            conn.execute(
                sql.by_keys(len(ids)),
                {"thread_key": thread_key, **{f"id{n}": key for n, key in enumerate(ids)}},
            )
            for thread_key, ids in threads.items()
        ]
        found = {(row[0], row[3]): row for cursor in cursors for row in cursor.fetchall()}
        return [found.get(key) for key in keys]

    def ids(
        self,
        conn: Db,
        ref: CheckpointRef,
        below: bytes | None,
        since: bytes | None,
        limit: int | None,
        oldest_first: bool = False,
    ) -> list[str]:
        """Ids newest first (or `oldest_first`), below `below` and from `since` on, at most
        `limit`."""
        rows = conn.execute(
            _IDS_OLDEST_FIRST if oldest_first else _IDS_NEWEST_FIRST,
            {
                "thread_key": self.thread_key(conn, ref),
                "below": _ABOVE_ALL if below is None else below,
                "since": b"" if since is None else since,
                "limit": _NO_LIMIT if limit is None else limit,
            },
        ).fetchall()
        return [id_text(key) if len(key) == 16 else repr(key) for (key,) in rows]

    def count(self, conn: Db, ref: CheckpointRef, below: bytes | None) -> int:
        (count,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_key = :thread_key "
            "AND checkpoint_id < :below",
            {
                "thread_key": self.thread_key(conn, ref),
                "below": _ABOVE_ALL if below is None else below,
            },
        ).fetchone()
        return int(count)

    def children(self, conn: Db, ref: CheckpointRef) -> list[str]:
        """The row right after the parent, if it is a child, and the recorded branches: two
        index steps however long the thread is."""
        wanted = id_bytes(ref.checkpoint_id or "")
        params = {"thread_key": self.thread_key(conn, ref), "checkpoint_id": wanted}
        found = {
            child
            for (child,) in conn.execute(
                "SELECT checkpoint_id FROM branches "
                "WHERE thread_key = :thread_key AND parent_id = :checkpoint_id",
                params,
            )
        }
        following = conn.execute(sql.NEXT, params).fetchone()
        if following is not None and unpack_parent(following[0], following[1]) == wanted:
            found.add(following[0])
        return sorted(id_text(child) for child in found)

    def neighbours(self, conn: Db, ref: CheckpointRef, checkpoint_ids: Sequence[str]) -> set[str]:
        thread_key = self.thread_key(conn, ref)
        found: set[str] = set()
        for checkpoint_id in checkpoint_ids:
            key = id_bytes(checkpoint_id)
            if thread_key is None or key is None:
                continue
            params = {"thread_key": thread_key, "checkpoint_id": key}
            for query in (sql.BEFORE_ID, sql.AFTER_ID):
                near = conn.execute(query, params).fetchone()
                if near is not None:
                    found.add(id_text(near[0]))
        return found

    def threads(self, conn: Db, prefix: str) -> list[ThreadSummary]:
        # the prefix is matched with a range, so the threads index is used and no LIKE
        # wildcard in it means anything; the count is kept on the thread and the newest id is
        # one index step away, so a thread of a million checkpoints lists as fast as one of ten
        rows = conn.execute(
            sql.THREADS, {"prefix": prefix, "upper": _after_prefix(prefix)}
        ).fetchall()
        return [
            ThreadSummary(
                thread_id,
                ns,
                count,
                id_text(latest),
                datetime.fromtimestamp((id_micros(latest) or 0) / 1_000_000, UTC).isoformat(),
            )
            for thread_id, ns, count, latest in rows
        ]

    def info(self, conn: Db, thread_id: str) -> dict[str, Any]:
        row = conn.execute(
            "SELECT info FROM threads WHERE thread_id = ? AND checkpoint_ns = ''", (thread_id,)
        ).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def set_info(self, conn: Db, thread_id: str, info: Mapping[str, Any]) -> None:
        thread_key = self.thread_key(conn, CheckpointRef(thread_id), create=True)
        (stored,) = conn.execute(
            "SELECT info FROM threads WHERE thread_key = ?", (thread_key,)
        ).fetchone()
        merged = {**json.loads(stored or "{}"), **info}
        conn.execute(
            "UPDATE threads SET info = ? WHERE thread_key = ?",
            (json.dumps(merged, ensure_ascii=False, sort_keys=True), thread_key),
        )


def _after_prefix(prefix: str) -> str | None:
    """The smallest text above every text that starts with `prefix`, in SQLite's order (of
    UTF-8 bytes, which is code point order); None if there is none (no prefix, or only
    U+10FFFF). The surrogates, which UTF-8 cannot hold, are stepped over."""
    while prefix:
        last = ord(prefix[-1]) + 1
        if last <= 0x10FFFF:
            return prefix[:-1] + chr(0xE000 if 0xD800 <= last <= 0xDFFF else last)
        prefix = prefix[:-1]
    return None
