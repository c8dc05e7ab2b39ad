"""SqliteSaver: the saver contract on one SQLite file, in the format of `schema.sql`.

The contract itself is `ttcli.savers.sql.SqlSaver`'s; this class opens the file and adds what
only SQLite does: vacuuming, archive copies row by row, and SQLite's integrity checks.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ttcli.configs import RunnableConfig
from ttcli.errors import ConfigError
from ttcli.savers.base import BaseSaver
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.ids import require_id
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sqlite.connection import DEFAULT_BUSY_TIMEOUT, Connection
from ttcli.savers.sqlite.copy import RowCopy, same_file
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
        path: str | Path,
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
        cls, path: str | Path, *, serde: Serializer | None = None, readonly: bool = False
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

    def copy_rows(self, config: RunnableConfig, below: str, target: BaseSaver) -> int | None:
        if not isinstance(target, SqliteSaver):
            return None
        if self.stores_in(target):
            raise ConfigError(f"cannot copy {self.path} into itself: archive to another file")
        return RowCopy(self, target, self.ref(config)).copy_below(require_id(below))

    def integrity_problems(self) -> builtins.list[str]:
        with self.connection.read() as conn:
            return integrity_problems(conn)
