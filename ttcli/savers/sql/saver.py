"""SqlSaver: the saver contract on SQL tables in ttcli's format, shared by the backends.

The class implements the contract by delegating to the parts of this package (see its
`__init__`); a backend gives it a connection with its transactions, and adds what only it
can do (vacuum, the keys rows copied in take, its integrity checks). The database's invariants
are those of `ttcli.savers.base`.
"""

from __future__ import annotations

import builtins
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ttcli.configs import RunnableConfig, check_text
from ttcli.errors import ConfigError, TtcliError
from ttcli.savers.base import (
    BaseSaver,
    Checkpoint,
    CheckpointTuple,
    StepCheckpoint,
    TaskWrite,
    TaskWrites,
    ThreadSummary,
)
from ttcli.savers.blobs import BlobStore
from ttcli.savers.rules import metadata_matches, split_writes, validate_filter
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.blob_table import SqlBlobRows
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.ids import id_bytes, id_text, require_id
from ttcli.savers.sql.names import SqlNames
from ttcli.savers.sql.pending import PendingWrites, in_order
from ttcli.savers.sql.rows import Rows
from ttcli.savers.sql.statements import MetadataMatch, list_query
from ttcli.savers.sql.states import States
from ttcli.savers.sql.transactions import Transactions
from ttcli.uuid6 import canonical_id

if TYPE_CHECKING:
    from ttcli.savers.sql.copy_memory import CopyMemory
    from ttcli.savers.sql.deletion import Deletion
    from ttcli.savers.sql.put import Writer

_Part = TypeVar("_Part")


#: candidate rows a filter on what nodes wrote reads at a time
_WRITES_PAGE = 200


class SqlSaver(BaseSaver):
    """Checkpoints in SQL tables of ttcli's format, on the connection a backend opened."""

    def __init__(
        self, connection: Transactions[Db], match: MetadataMatch, serde: Serializer | None = None
    ) -> None:
        """`match` is the database's SQL for one key of a metadata filter."""
        #: decodes what the database stores; by default a new `Serializer()` of its own
        self.serde = serde or Serializer()
        self.connection = connection
        self.metadata_match = match
        self.path = connection.path
        self.names = SqlNames(connection.conn, self.serde)
        self.blobs = BlobStore(SqlBlobRows(connection.conn), self.serde)
        connection.on_rollback += [self.blobs.forget, self.names.forget]
        self.rows = Rows(connection)
        self.pending = PendingWrites(connection, self.names)
        self.states = States(connection, self.names, self.blobs, self.pending)
        #: what the writer and the deletion work on; they are built when first used, so that
        #: a command that only reads never imports them (the CLI's start-up)
        self._parts = (connection, self.rows, self.pending, self.states, self.blobs, self.names)
        self._built: dict[str, Any] = {}
        self._building = threading.Lock()

    @property
    def writer(self) -> Writer:
        """Stores checkpoints and pending writes (`ttcli.savers.sql.put`)."""
        return self._part("writer", _new_writer)

    @property
    def deletion(self) -> Deletion:
        """Deletes rows and collects what only they used (`ttcli.savers.sql.deletion`)."""
        return self._part("deletion", _new_deletion)

    @property
    def copied(self) -> CopyMemory:
        """What row copies into this database remember (see `ttcli.savers.sql.copy`)."""
        return self.deletion.copied

    def _part(self, name: str, build: Callable[[SqlSaver], _Part]) -> _Part:
        """The part `name`, built once (threads may share the saver)."""
        part = self._built.get(name)
        if part is None:
            with self._building:
                part = self._built.get(name)
                if part is None:
                    part = self._built[name] = build(self)
        return part

    #: whether rows copied in may keep keys the database never used (`copy_rows`): only
    #: where no other writer can take one meanwhile; else they get `new_blob_keys`
    keeps_copied_keys = False

    @abstractmethod
    def new_blob_keys(self, conn: Db, count: int, above: int) -> Iterator[int]:
        """At least `count` blob keys for values copied in, in increasing order, above
        `above` (every key the copy has seen) and never handed out to anyone else."""

    @property
    def deleted_bytes(self) -> int:
        """Bytes of rows and values deleted through this saver, so that `prune` can say
        what it freed without reading the threads again."""
        return self.deletion.deleted_bytes

    def vacuum(self) -> None:
        """Give the space of deleted rows back (`prune --vacuum`)."""
        self.connection.vacuum()

    def close(self) -> None:
        self.connection.close()

    def batch(self, *, durable: bool = False) -> Any:
        return self.connection.batch(durable=durable)

    def batch_held(self) -> bool:
        return self.connection.batch_held()

    def copy_rows(self, config: RunnableConfig, below: str, target: BaseSaver) -> int | None:
        if not isinstance(target, SqlSaver):
            return None
        if self.stores_in(target):
            raise ConfigError(f"cannot copy {self.path} into itself: archive to another file")
        from ttcli.savers.sql.copy import RowCopy  # archive's: not loaded to read or write

        return RowCopy(self, target, self.ref(config)).copy_below(require_id(below))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._tuple(config, self.states)

    def stored_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._tuple(config, self.deletion.stored_states)

    def _tuple(self, config: RunnableConfig, states: States) -> CheckpointTuple | None:
        with self.connection.read() as conn:
            row = self.rows.row(conn, self.ref(config))
            return states.tuple(conn, row) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        in_sql, on_writes = split_writes(validate_filter(filter))
        query, params, inexact = list_query(config, in_sql, before, limit, self.metadata_match)
        if on_writes or inexact:
            yield from self._decoded_match(
                config, in_sql, {**inexact, **on_writes}, before, limit, values=True
            )
            return
        with self.connection.read() as conn:
            rows = conn.execute(query, params).fetchall()
        # decoded a few at a time as they are yielded: a whole history's values never sit
        # in memory at once
        yield from self._read_again(rows, self.states.tuple)

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
        node to None, unless the filter asks about what nodes wrote: then that is read."""
        in_sql, on_writes = split_writes(validate_filter(filter))
        query, params, inexact = list_query(config, in_sql, before, limit, self.metadata_match)
        if on_writes or inexact:
            decoded = {**inexact, **on_writes}
            return [*self._decoded_match(config, in_sql, decoded, before, limit, values=False)]
        with self.connection.read() as conn:
            rows = conn.execute(query, params).fetchall()
            return [self.states.tuple(conn, row, values=False) for row in rows]

    def _decoded_match(
        self,
        config: RunnableConfig | None,
        in_sql: dict[str, Any],
        decoded: dict[str, Any],
        before: RunnableConfig | None,
        limit: int | None,
        *,
        values: bool,
    ) -> Iterator[CheckpointTuple]:
        """`list` with filter keys the query cannot match exactly, matched on each candidate's
        decoded metadata: what nodes wrote (stored as values: the metadata columns name only
        the nodes) and what the database's JSON does not compare exactly (`MetadataMatch`).
        `limit` counts the matches. A thread's candidates are read a page at a time (its ids
        are unique); every thread's at once."""
        writes = bool(split_writes(decoded)[1])

        def matching(conn: Db, row: Sequence[Any]) -> CheckpointTuple | None:
            saved = self.states.tuple(conn, row, values=False, writes=writes)
            if not metadata_matches(saved.metadata, decoded):
                return None
            return self.states.tuple(conn, row) if values else saved

        left = None if limit is None or int(limit) < 0 else int(limit)
        page = None if config is None else _WRITES_PAGE
        while left != 0:
            query, params, _ = list_query(config, in_sql, before, page, self.metadata_match)
            with self.connection.read() as conn:
                rows = conn.execute(query, params).fetchall()
            for saved in self._read_again(rows, matching):
                yield saved
                if left is not None and (left := left - 1) == 0:
                    return
            if page is None or len(rows) < page:
                return
            before = self.ref(config).config_at(id_text(rows[-1][3]))  # type: ignore[arg-type]

    def _read_again(
        self,
        listed: Sequence[Sequence[Any]],
        read: Callable[[Db, Sequence[Any]], CheckpointTuple | None],
    ) -> Iterator[CheckpointTuple]:
        """Listed rows read as they are now by `read` (those it returns None for left out),
        several in each read of their own. A row deleted since it was listed (a
        prune) is left out, as is one of a thread deleted since, whose key SQLite gives a new
        thread again, which may hold the same checkpoint ids (a copy). The caller of `list`
        may write between two: then the rows after are read again. The first read takes one
        row (a caller may want only the newest), each next one twice as many, up to
        `read_ahead`."""
        connection, start, ahead = self.connection, 0, 1
        while start < len(listed):
            writes_begun = connection.writes_begun
            found, failure = self._read_ahead(listed[start : start + ahead], read)
            ahead = min(2 * ahead, connection.read_ahead)
            for saved in found:
                start += 1
                if saved is not None:
                    yield saved
                    if connection.writes_begun != writes_begun:
                        break
            else:
                if failure is not None:
                    raise failure

    def _read_ahead(
        self,
        listed: Sequence[Sequence[Any]],
        read: Callable[[Db, Sequence[Any]], CheckpointTuple | None],
    ) -> tuple[builtins.list[CheckpointTuple | None], TtcliError | None]:
        """`_read_again` of a few rows in one read: what each reads as (None for one left
        out), up to the first that does not read, and its error (raised in its turn, after
        the rows before it)."""
        found: builtins.list[CheckpointTuple | None] = []
        with self.connection.read() as conn:
            current = self.rows.by_keys(conn, [(row[0], row[3]) for row in listed])
            for was, row in zip(listed, current, strict=True):
                try:
                    found.append(
                        read(conn, row) if row is not None and _same_thread(row, was) else None
                    )
                except TtcliError as exc:
                    return found, exc
        return found, None

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        ref = self.ref(config)
        self.writer.put(ref, checkpoint, metadata, new_versions)
        return ref.config_at(canonical_id(checkpoint["id"]))  # as the database keeps it

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.writer.put_writes(self.ref(config), writes, task_id, task_path)

    def put_step(
        self,
        config: RunnableConfig,
        writes: Sequence[TaskWrites],
        checkpoint: StepCheckpoint | None,
    ) -> None:
        if not self._own_puts():  # an override sees every call, and may change values
            super().put_step(config, writes, checkpoint)
            return
        ref = self.ref(config)  # a bad config is refused before the transaction begins
        with self.batch():  # one transaction: no other code runs between the step's puts
            self.writer.put_step(ref, writes, checkpoint)

    def _own_puts(self) -> bool:
        """Whether `put` and `put_writes` are this class's own, not a subclass's override
        nor replaced on the instance (a hook that audits or changes what is stored)."""
        return (
            getattr(self.put, "__func__", None) is SqlSaver.put
            and getattr(self.put_writes, "__func__", None) is SqlSaver.put_writes
        )

    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        ref = self.ref(config)
        with self.connection.read() as conn:
            row = self.rows.row(conn, ref) if ref.checkpoint_id is not None else None
            if row is None:
                return []
            return [
                (task_id, path, channel, self.blobs.load_value(entry))
                for task_id, path, channel, entry in in_order(self.pending.of_row(row))
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
        oldest_first: bool = False,
    ) -> builtins.list[str]:
        upper = None if below is None else require_id(below)
        lower = None if since is None else require_id(since)
        with self.connection.read() as conn:
            return self.rows.ids(conn, self.ref(config), upper, lower, limit, oldest_first)

    def stored_pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        ref = self.ref(config)
        pending, blobs = self.deletion.stored_pending, self.deletion.stored_blobs
        wanted = {key: i for i in checkpoint_ids if (key := id_bytes(i)) is not None}
        with self.connection.read() as conn:  # one transaction for all
            thread_key = self.rows.thread_key(conn, ref)
            if thread_key is None:
                return {}
            return {
                wanted[key]: [
                    (task_id, path, channel, blobs.load_value(entry))
                    for task_id, path, channel, entry in in_order(
                        pending.merged(conn, thread_key, key)
                    )
                ]
                for key in self.rows.present(conn, thread_key, set(wanted))
            }

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

    def has_checkpoint(self, config: RunnableConfig) -> bool:
        ref = self.ref(config)
        key = id_bytes(ref.checkpoint_id or "")
        with self.connection.read() as conn:
            thread_key = self.rows.thread_key(conn, ref)
            if thread_key is None or key is None:
                return False
            return self.rows.exists(conn, thread_key, key)

    def child_ids(self, config: RunnableConfig) -> builtins.list[str]:
        with self.connection.read() as conn:
            return self.rows.children(conn, self.ref(config))

    def neighbour_ids(self, config: RunnableConfig, checkpoint_ids: Iterable[str]) -> set[str]:
        with self.connection.read() as conn:
            return self.rows.neighbours(conn, self.ref(config), builtins.list(checkpoint_ids))

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


def _new_writer(saver: SqlSaver) -> Writer:
    from ttcli.savers.sql.put import Writer

    return Writer(*saver._parts)


def _new_deletion(saver: SqlSaver) -> Deletion:
    from ttcli.savers.sql.deletion import Deletion

    return Deletion(*saver._parts)


def _same_thread(row: Sequence[Any], listed: Sequence[Any]) -> bool:
    """Whether a row read again by key is of the listed row's thread and namespace."""
    return bool(row[1] == listed[1] and row[2] == listed[2])
