"""SqliteSaver: the saver contract on one SQLite file, in the format of `schema.sql`.

The class only implements the contract, by delegating to the parts of this package (see
its `__init__`); the file's invariants are those of `ttcli.savers.base`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ttcli.configs import RunnableConfig, check_text
from ttcli.errors import ConfigError
from ttcli.savers.base import (
    BaseSaver,
    Checkpoint,
    CheckpointTuple,
    TaskWrite,
    ThreadSummary,
)
from ttcli.savers.blobs import BlobStore
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.blob_table import SqliteBlobRows
from ttcli.savers.sql.deletion import Deletion
from ttcli.savers.sql.ids import id_bytes, id_text, require_id
from ttcli.savers.sql.names import SqliteNames
from ttcli.savers.sql.pending import PendingWrites, in_order
from ttcli.savers.sql.put import Writer
from ttcli.savers.sql.rows import Rows
from ttcli.savers.sql.statements import list_query
from ttcli.savers.sql.states import States
from ttcli.savers.sqlite.connection import DEFAULT_BUSY_TIMEOUT, Connection
from ttcli.savers.sqlite.copy import RowCopy, same_file
from ttcli.savers.sqlite.integrity import integrity_problems

__all__ = ["DEFAULT_BUSY_TIMEOUT", "SqliteSaver"]


class SqliteSaver(BaseSaver):
    """Checkpoints in a SQLite file that other tools can read (see `schema.sql`).

    Example:
        with SqliteSaver.from_conn_string("agent.db") as saver:
            graph = builder.compile(checkpointer=saver)
    """

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
        #: decodes what the file stores; by default a new `Serializer()` of its own
        self.serde = serde or Serializer()
        self.connection = Connection(path, busy_timeout, readonly=readonly)
        self.path, self.conn = self.connection.path, self.connection.conn
        self.names = SqliteNames(self.conn, self.serde)
        self.blobs = BlobStore(SqliteBlobRows(self.conn), self.serde)
        self.connection.on_rollback += [self.blobs.forget, self.names.forget]
        self.rows = Rows(self.connection)
        self.pending = PendingWrites(self.connection, self.names)
        self.states = States(self.connection, self.names, self.blobs, self.pending)
        parts = (self.connection, self.rows, self.pending, self.states, self.blobs, self.names)
        self.writer = Writer(*parts)
        self.deletion = Deletion(*parts)

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

    @property
    def deleted_bytes(self) -> int:
        """Bytes of rows and values deleted through this saver, so that `prune` can say
        what it freed without reading the threads again."""
        return self.deletion.deleted_bytes

    def vacuum(self) -> None:
        self.connection.vacuum()

    def close(self) -> None:
        self.connection.close()

    def batch(self) -> Any:
        return self.connection.batch()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self.connection.read() as conn:
            row = self.rows.row(conn, self.ref(config))
            return self.states.tuple(conn, row) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        query, params = list_query(config, filter, before, limit)
        with self.connection.read() as conn:
            rows = conn.execute(query, params).fetchall()
        # decoded as each is yielded (a whole history's values never sit in memory at once),
        # each in a read of its own (the caller may write between two)
        for row in rows:
            with self.connection.read() as conn:
                if not self.rows.exists(conn, row[0], row[3]):
                    continue  # deleted since (a prune)
                saved = self.states.tuple(conn, row)
            yield saved

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
        query, params = list_query(config, filter, before, limit)
        with self.connection.read() as conn:
            rows = conn.execute(query, params).fetchall()
            return [self.states.tuple(conn, row, values=False) for row in rows]

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        ref = self.ref(config)
        self.writer.put(ref, checkpoint, metadata, new_versions)
        return ref.at(checkpoint["id"]).to_config()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.writer.put_writes(self.ref(config), writes, task_id, task_path)

    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        ref = self.ref(config)
        with self.connection.read() as conn:
            row = self.rows.row(conn, ref) if ref.checkpoint_id is not None else None
            if row is None:
                return []
            return [
                (task_id, path, channel, self.blobs.load_value(entry))
                for task_id, path, channel, entry in in_order(
                    self.pending.merged(conn, row[0], row[3])
                )
            ]

    def delete_checkpoints(
        self, config: RunnableConfig, checkpoint_ids: Sequence[str], *, collect: bool = True
    ) -> None:
        wanted = {key for key in map(id_bytes, checkpoint_ids) if key is not None}
        self.deletion.delete_checkpoints(self.ref(config), wanted, collect)

    def delete_thread(self, thread_id: str) -> None:
        self.deletion.delete_thread(thread_id)

    def checkpoint_ids(
        self,
        config: RunnableConfig,
        *,
        below: str | None = None,
        limit: int | None = None,
        since: str | None = None,
    ) -> builtins.list[str]:
        upper = None if below is None else require_id(below)
        lower = None if since is None else require_id(since)
        with self.connection.read() as conn:
            return self.rows.ids(conn, self.ref(config), upper, lower, limit)

    def pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        ref = self.ref(config)
        wanted = {key: i for i in checkpoint_ids if (key := id_bytes(i)) is not None}
        with self.connection.read() as conn:  # one transaction for all
            thread_key = self.rows.thread_key(conn, ref)
            if thread_key is None:
                return {}
            return {
                wanted[key]: [
                    (task_id, path, channel, self.blobs.load_value(entry))
                    for task_id, path, channel, entry in in_order(
                        self.pending.merged(conn, thread_key, key)
                    )
                ]
                for key in self.rows.present(conn, thread_key, set(wanted))
            }

    def stores_in(self, other: BaseSaver) -> bool:
        return other is self or (
            isinstance(other, SqliteSaver) and same_file(self.path, other.path)
        )

    def ids_ending(self, config: RunnableConfig, tail: str) -> builtins.list[str]:
        # whole bytes are compared where the ids lie: no id is turned into text to be matched
        if len(tail) % 2 or len(tail) > 32 or any(c not in "0123456789abcdef" for c in tail):
            return super().ids_ending(config, tail)
        with self.connection.read() as conn:
            thread_key = self.rows.thread_key(conn, self.ref(config))
            rows = conn.execute(
                """
                SELECT checkpoint_id FROM checkpoints
                WHERE thread_key = :thread_key
                  AND length(checkpoint_id) = 16
                  AND substr(checkpoint_id, :start) = :tail
                ORDER BY checkpoint_id DESC
                """,
                {
                    "thread_key": thread_key,
                    "start": 17 - len(tail) // 2,
                    "tail": bytes.fromhex(tail),
                },
            ).fetchall()
        return [id_text(key) for (key,) in rows]

    def count_checkpoints(self, config: RunnableConfig, *, below: str | None = None) -> int:
        bound = None if below is None else require_id(below)
        with self.connection.read() as conn:
            return self.rows.count(conn, self.ref(config), bound)

    def child_ids(self, config: RunnableConfig) -> builtins.list[str]:
        with self.connection.read() as conn:
            return self.rows.children(conn, self.ref(config))

    def neighbour_ids(self, config: RunnableConfig, checkpoint_ids: Iterable[str]) -> set[str]:
        with self.connection.read() as conn:
            return self.rows.neighbours(conn, self.ref(config), builtins.list(checkpoint_ids))

    def copy_rows(self, config: RunnableConfig, below: str, target: BaseSaver) -> int | None:
        if not isinstance(target, SqliteSaver):
            return None
        if self.stores_in(target):
            raise ConfigError(f"cannot copy {self.path} into itself: archive to another file")
        return RowCopy(self, target, self.ref(config)).copy_below(require_id(below))

    def integrity_problems(self) -> builtins.list[str]:
        with self.connection.read() as conn:
            return integrity_problems(conn)

    def thread_bytes(self, config: RunnableConfig) -> int | None:
        with self.connection.read() as conn:
            return self.deletion.thread_bytes(conn, self.ref(config))

    def get_thread_info(self, thread_id: str) -> dict[str, Any]:
        with self.connection.read() as conn:
            return self.rows.info(conn, thread_id)

    def set_thread_info(self, thread_id: str, info: Mapping[str, Any]) -> None:
        with self.connection.write() as conn:
            self.rows.set_info(conn, thread_id, info)

    def list_threads(self, prefix: str = "") -> Iterator[ThreadSummary]:
        check_text(prefix, "thread prefix")
        with self.connection.read() as conn:
            found = self.rows.threads(conn, prefix)
        yield from found
