"""SqliteSaver: the saver contract on one SQLite file, in the format of `schema.sql`.

The contract itself is `ttcli.savers.sql.SqlSaver`'s; this class opens the file and adds what
only SQLite does: vacuuming, the keys rows copied in take, and SQLite's integrity checks.
"""

from __future__ import annotations

import builtins
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ttcli.savers.base import BaseSaver
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sqlite.connection import DEFAULT_BUSY_TIMEOUT, Connection
from ttcli.savers.sqlite.integrity import integrity_problems
from ttcli.savers.sqlite.metadata_filter import sqlite_match

__all__ = ["DEFAULT_BUSY_TIMEOUT", "SqliteSaver"]


class SqliteSaver(SqlSaver):
    """Checkpoints in a SQLite file that other tools can read (see `schema.sql`).

    Example:
        with SqliteSaver.from_conn_string("agent.db") as saver:
            graph = builder.compile(checkpointer=saver)
    """

    connection: Connection

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        serde: Serializer | None = None,
        readonly: bool = False,
    ) -> None:
        """Open (or create) the file, creating or upgrading its schema.

        With `readonly`, the file must exist and is never changed: no schema is written into
        an empty file, no journal is left beside it, and writes raise StorageError (a file
        of an older format is still upgraded in place, once, so that it can be read).
        """
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"SqliteSaver takes a database path (str or PathLike), got {path!r}")
        super().__init__(Connection(path, busy_timeout, readonly=readonly), sqlite_match, serde)
        self.conn = self.connection.conn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        path: str | os.PathLike[str],
        *,
        serde: Serializer | None = None,
        readonly: bool = False,
    ) -> Iterator[SqliteSaver]:
        """Open a saver for the block and close it after, like LangGraph's SqliteSaver."""
        saver = cls(path, serde=serde, readonly=readonly)
        try:
            yield saver
        finally:
            saver.close()

    open = from_conn_string

    def stores_in(self, other: BaseSaver) -> bool:
        return other is self or (
            isinstance(other, SqliteSaver) and same_file(self.path, other.path)
        )

    # a write transaction holds the whole file: nobody takes a key meanwhile, and a new row
    # gets the largest key plus one (the newest blob is never deleted: see deletion.py)
    keeps_copied_keys = True

    def new_blob_keys(self, conn: Db, count: int, above: int) -> Iterator[int]:
        return itertools.count(above + 1)

    def integrity_problems(self) -> builtins.list[str]:
        with self.connection.read() as conn:
            return integrity_problems(conn) + self.deletion.shared_blobs(conn)


#: the files SQLite keeps beside a database, by the suffix of its (resolved) path
_COMPANIONS = ("-wal", "-shm", "-journal")


def same_file(one: str, other: str) -> bool:
    """Whether two paths share a file: name one file (by inode: hard links, symbolic links,
    any spelling; for a file not created yet, by resolved path), or one names a file SQLite
    keeps beside the other (its WAL, which a database created there would overwrite)."""
    if ":memory:" in (one, other):
        return False
    return _one_file(one, other) or any(
        _one_file(os.path.realpath(a) + suffix, b)
        for a, b in ((one, other), (other, one))
        for suffix in _COMPANIONS
    )


def _one_file(one: str, other: str) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.realpath(one) == os.path.realpath(other)
