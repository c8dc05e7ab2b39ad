"""SqliteSaver: the saver contract on one SQLite file, in the format of `schema.sql`.

Several processes may write one file: WAL journal, a busy timeout, and `BEGIN IMMEDIATE` for
every write, so a checkpoint with its values commits as one transaction or not at all. Reads
run in a read transaction so they see one consistent snapshot while others write.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ttcli.configs import CheckpointRef, RunnableConfig
from ttcli.errors import (
    CheckpointNotFoundError,
    ConfigError,
    DatabaseBusyError,
    SerializationError,
    StorageError,
)
from ttcli.savers import serde
from ttcli.savers.base import (
    WRITES_IDX_MAP,
    BaseSaver,
    Checkpoint,
    CheckpointTuple,
    PendingWrite,
    validate_filter,
)
from ttcli.savers.blobs import BlobStore
from ttcli.savers.migrations import ensure_schema
from ttcli.savers.serde import Ref

DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another one before giving up

_THREAD = """
SELECT thread_key
FROM threads
WHERE thread_id = :thread_id
  AND checkpoint_ns = :checkpoint_ns
"""

_NEW_THREAD = """
INSERT INTO threads (thread_id, checkpoint_ns)
VALUES (:thread_id, :checkpoint_ns)
"""

_COLUMNS = """
SELECT c.checkpoint_key, t.thread_id, t.checkpoint_ns, c.checkpoint_id, c.parent_id,
       c.created_at, c.metadata, c.state
FROM checkpoints AS c
JOIN threads AS t USING (thread_key)
"""

_BY_ID = _COLUMNS + """
WHERE c.thread_key = :thread_key
  AND c.checkpoint_id = :checkpoint_id
"""

_LATEST = _COLUMNS + """
WHERE c.thread_key = :thread_key
ORDER BY c.checkpoint_id DESC
LIMIT 1
"""

_INSERT_CHECKPOINT = """
INSERT INTO checkpoints (thread_key, checkpoint_id, parent_id, created_at, metadata, state)
VALUES (:thread_key, :checkpoint_id, :parent_id, :created_at, :metadata, :state)
"""

_WRITES = """
SELECT task_id, channel, value, blob_key
FROM writes
WHERE checkpoint_key = :checkpoint_key
ORDER BY task_path, task_id, idx
"""

_WRITE_EXISTS = """
SELECT 1
FROM writes
WHERE checkpoint_key = :checkpoint_key
  AND task_id = :task_id
  AND idx = :idx
"""

_INSERT_WRITE = """
INSERT OR REPLACE INTO writes (checkpoint_key, task_id, idx, task_path, channel, value, blob_key)
VALUES (:checkpoint_key, :task_id, :idx, :task_path, :channel, :value, :blob_key)
"""

_WRITE_BLOBS = """
SELECT b.blob_key, b.is_record, b.value
FROM writes AS w
JOIN blobs AS b ON b.blob_key = w.blob_key
WHERE w.checkpoint_key = :checkpoint_key
  AND b.base_key IS NULL
"""

_STANDALONE_BLOBS = """
SELECT blob_key, is_record, value
FROM blobs
WHERE base_key IS NULL
  AND blob_key IN (SELECT value FROM json_each(:keys))
"""


class SqliteSaver(BaseSaver):
    """Checkpoints in a SQLite file that other tools can read (see `schema.sql`).

    Example:
        with SqliteSaver.from_conn_string("agent.db") as saver:
            graph = builder.compile(checkpointer=saver)
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = str(path)
        try:
            self.conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from None
        self._lock = threading.RLock()
        self.blobs = BlobStore(self.conn)
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            ensure_schema(self.conn, self.path)
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode = WAL")
            # WAL with synchronous=NORMAL survives any process crash; only power loss can
            # lose the last transactions
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = OFF")
        except sqlite3.OperationalError as exc:
            self.conn.close()
            raise _storage_error(exc, self.path) from None
        except BaseException:
            self.conn.close()
            raise

    @classmethod
    @contextmanager
    def from_conn_string(cls, path: str | Path) -> Iterator[SqliteSaver]:
        """Open a saver for the block and close it after, like LangGraph's SqliteSaver."""
        saver = cls(path)
        try:
            yield saver
        finally:
            saver.close()

    open = from_conn_string

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One immediate write transaction: all of it commits, or none of it."""
        with self._lock:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _storage_error(exc, self.path) from None
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                self.conn.execute("ROLLBACK")
                self.blobs.forget()
                if isinstance(exc, sqlite3.OperationalError):
                    raise _storage_error(exc, self.path) from None
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot while other processes write."""
        with self._lock:
            try:
                self.conn.execute("BEGIN")
                yield self.conn
            except sqlite3.OperationalError as exc:
                raise _storage_error(exc, self.path) from None
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    # -- the saver contract --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        ref = self.ref(config)
        with self.read() as conn:
            thread_key = self._thread_key(ref)
            if thread_key is None:
                return None
            if ref.checkpoint_id is None:
                row = conn.execute(_LATEST, {"thread_key": thread_key}).fetchone()
            else:
                key = _id_bytes(ref.checkpoint_id)
                if key is None:
                    return None
                row = conn.execute(_BY_ID, {"thread_key": thread_key, "checkpoint_id": key}).fetchone()
            return self._tuple(row) if row else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002 - LangGraph's keyword
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        query, params = self._list_query(config, filter, before, limit)
        with self.read() as conn:
            found = [self._tuple(row) for row in conn.execute(query, params).fetchall()]
        yield from found

    def list_metadata(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> builtins.list[CheckpointTuple]:
        """Like `list`, without reading any stored value: checkpoints come without
        channel values, and `writes` in the metadata holds node names only."""
        query, params = self._list_query(config, filter, before, limit)
        with self.read() as conn:
            rows = conn.execute(query, params).fetchall()
        found = []
        for _key, thread_id, ns, checkpoint_id, parent_id, created_at, metadata, state in rows:
            decoded = serde.loads(state)
            ref = CheckpointRef(thread_id, ns)
            checkpoint = _checkpoint(checkpoint_id, created_at, decoded, {})
            found.append(
                CheckpointTuple(
                    config=ref.at(checkpoint["id"]).to_config(),
                    checkpoint=checkpoint,
                    metadata=json.loads(metadata),
                    parent_config=ref.at(_id_text(parent_id)).to_config() if parent_id else None,
                )
            )
        return found

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        ref = self.ref(config)
        checkpoint_id = _require_id(checkpoint["id"])
        created_at = _micros(checkpoint["ts"])
        with self.write() as conn:
            thread_key = self._thread_key(ref, create=True)
            assert thread_key is not None
            parent = None
            if ref.checkpoint_id is not None:
                parent = conn.execute(
                    _BY_ID, {"thread_key": thread_key, "checkpoint_id": _require_id(ref.checkpoint_id)}
                ).fetchone()
            writer = self.blobs.writer(thread_key)
            previous: dict[str, Any] = {}
            if parent is not None:
                previous = serde.loads(parent[7])["c"]
                writer.offer(conn.execute(_WRITE_BLOBS, {"checkpoint_key": parent[0]}).fetchall())
            channels: dict[str, Any] = {}
            versions = checkpoint["channel_versions"]
            for name in [*checkpoint["channel_values"], *versions]:
                if name in channels:
                    continue
                entry: builtins.list[Any] = [versions.get(name)]
                if name in checkpoint["channel_values"]:
                    before = previous.get(name)
                    if before is not None and len(before) == 2 and before[0] == entry[0] and name not in new_versions:
                        entry.append(before[1])
                    else:
                        prior = before[1] if before is not None and len(before) == 2 else None
                        entry.append(writer.channel(name, checkpoint["channel_values"][name], prior))
                channels[name] = entry
            writes = metadata.get("writes")
            stored_writes = (
                [[node, writer.value(value, f"writes.{node}")] for node, value in writes.items()]
                if isinstance(writes, Mapping)
                else None
            )
            state = {
                "c": channels,
                "s": checkpoint["versions_seen"],
                "u": checkpoint["updated_channels"],
                "w": stored_writes,
            }
            conn.execute(
                _INSERT_CHECKPOINT,
                {
                    "thread_key": thread_key,
                    "checkpoint_id": checkpoint_id,
                    "parent_id": _require_id(ref.checkpoint_id) if ref.checkpoint_id else None,
                    "created_at": created_at,
                    "metadata": _metadata_json(metadata),
                    "state": serde.dumps(state, path="checkpoint"),
                },
            )
        return ref.at(checkpoint["id"]).to_config()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        ref = self.ref(config)
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self.write() as conn:
            thread_key = self._thread_key(ref)
            row = None
            if thread_key is not None and ref.checkpoint_id is not None:
                key = _id_bytes(ref.checkpoint_id)
                if key is not None:
                    row = conn.execute(_BY_ID, {"thread_key": thread_key, "checkpoint_id": key}).fetchone()
            if row is None:
                raise CheckpointNotFoundError(str(ref.checkpoint_id), ref.thread_id)
            assert thread_key is not None
            writer = self.blobs.writer(thread_key)
            state = serde.loads(row[7])
            own = [entry[1].key for name, entry in state["c"].items()
                   if name in (state["u"] or ()) and len(entry) == 2 and isinstance(entry[1], Ref)]
            writer.offer(conn.execute(_STANDALONE_BLOBS, {"keys": json.dumps(own)}).fetchall())
            for position, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, position)
                params = {"checkpoint_key": row[0], "task_id": task_id, "idx": idx}
                if not replace and conn.execute(_WRITE_EXISTS, params).fetchone():
                    continue  # a write already saved for this task is kept, as in LangGraph
                stored = writer.value(value, channel)
                conn.execute(
                    _INSERT_WRITE,
                    {
                        **params,
                        "task_path": task_path,
                        "channel": channel,
                        "value": None if isinstance(stored, Ref) else serde.dumps(stored),
                        "blob_key": stored.key if isinstance(stored, Ref) else None,
                    },
                )

    def delete_thread(self, thread_id: str) -> None:
        with self.write() as conn:
            keys = [r[0] for r in conn.execute("SELECT thread_key FROM threads WHERE thread_id = ?", (thread_id,))]
            for thread_key in keys:
                conn.execute(
                    "DELETE FROM writes WHERE checkpoint_key IN "
                    "(SELECT checkpoint_key FROM checkpoints WHERE thread_key = ?)",
                    (thread_key,),
                )
                conn.execute("DELETE FROM checkpoints WHERE thread_key = ?", (thread_key,))
                conn.execute("DELETE FROM blobs WHERE thread_key = ?", (thread_key,))
                conn.execute("DELETE FROM threads WHERE thread_key = ?", (thread_key,))
        self.blobs.forget()

    # -- helpers ------------------------------------------------------------------------------

    def _thread_key(self, ref: CheckpointRef, *, create: bool = False) -> int | None:
        params = {"thread_id": ref.thread_id, "checkpoint_ns": ref.checkpoint_ns}
        row = self.conn.execute(_THREAD, params).fetchone()
        if row is not None:
            return int(row[0])
        if not create:
            return None
        cursor = self.conn.execute(_NEW_THREAD, params)
        return cursor.lastrowid

    def _list_query(
        self,
        config: RunnableConfig | None,
        filter_: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> tuple[str, dict[str, Any]]:
        clauses: builtins.list[str] = []
        params: dict[str, Any] = {}
        if config is not None:
            ref = self.ref(config)
            clauses += ["t.thread_id = :thread_id", "t.checkpoint_ns = :checkpoint_ns"]
            params.update(thread_id=ref.thread_id, checkpoint_ns=ref.checkpoint_ns)
            if ref.checkpoint_id is not None:
                clauses.append("c.checkpoint_id = :checkpoint_id")
                params["checkpoint_id"] = _id_bytes(ref.checkpoint_id) or b""
        if before is not None:
            before_id = self.ref(before).checkpoint_id
            if before_id is None:
                raise ConfigError("`before` needs a config with a checkpoint_id")
            clauses.append("c.checkpoint_id < :before")
            params["before"] = _require_id(before_id)
        for n, (key, value) in enumerate(validate_filter(filter_).items()):
            clauses.append(_filter_clause(n, value))
            # the key is bound as a JSON path, never pasted into the SQL text
            params[f"path{n}"] = "$" + "".join(f'."{part}"' for part in key.split("."))
            params[f"value{n}"] = _filter_value(value)
        query = _COLUMNS
        if clauses:
            query += "WHERE " + "\n  AND ".join(clauses) + "\n"
        query += "ORDER BY c.checkpoint_id DESC\n"
        if limit is not None:
            query += "LIMIT :limit\n"
            params["limit"] = int(limit)
        return query, params

    def _tuple(self, row: Sequence[Any]) -> CheckpointTuple:
        checkpoint_key, thread_id, ns, checkpoint_id, parent_id, created_at, metadata_json, state_data = row
        state = serde.loads(state_data)
        values = {
            name: self.blobs.load(entry[1]) for name, entry in state["c"].items() if len(entry) == 2
        }
        metadata = json.loads(metadata_json)
        if state.get("w") is not None:
            metadata["writes"] = {node: self.blobs.load_value(entry) for node, entry in state["w"]}
        pending: builtins.list[PendingWrite] = [
            (task_id, channel, self.blobs.read_value(blob_key) if value is None else serde.loads(value))
            for task_id, channel, value, blob_key in self.conn.execute(
                _WRITES, {"checkpoint_key": checkpoint_key}
            )
        ]
        ref = CheckpointRef(thread_id, ns)
        checkpoint = _checkpoint(checkpoint_id, created_at, state, values)
        return CheckpointTuple(
            config=ref.at(checkpoint["id"]).to_config(),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=ref.at(_id_text(parent_id)).to_config() if parent_id else None,
            pending_writes=pending,
        )


def _checkpoint(checkpoint_id: bytes, created_at: int, state: dict[str, Any], values: dict[str, Any]) -> Checkpoint:
    return Checkpoint(
        v=1,
        id=_id_text(checkpoint_id),
        ts=datetime.fromtimestamp(created_at / 1_000_000, UTC).isoformat(),
        channel_values=values,
        channel_versions={name: entry[0] for name, entry in state["c"].items() if entry[0] is not None},
        versions_seen=state["s"],
        updated_channels=state["u"],
    )


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    """Metadata as JSON text; `writes` keeps only node names (values live in blobs)."""
    plain = dict(metadata)
    writes = plain.get("writes")
    if isinstance(writes, Mapping):
        plain["writes"] = builtins.list(writes)
    try:
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"cannot store metadata: {exc}; use JSON values") from None


def _filter_clause(n: int, value: Any) -> str:
    extract = f"json_extract(c.metadata, :path{n})"
    kind = f"json_type(c.metadata, :path{n})"
    if value is None:
        return f"{extract} IS NULL"
    if isinstance(value, bool):
        return f"{kind} = :value{n}"
    if isinstance(value, int | float):
        return f"{kind} IN ('integer', 'real') AND {extract} = :value{n}"
    if isinstance(value, str):
        return f"{kind} = 'text' AND {extract} = :value{n}"
    return f"{kind} IN ('object', 'array') AND {extract} = json(:value{n})"


def _filter_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, int | float | str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _micros(ts: str) -> int:
    try:
        moment = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise SerializationError(f"checkpoint ts {ts!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _id_bytes(checkpoint_id: str) -> bytes | None:
    try:
        return uuid.UUID(checkpoint_id).bytes
    except (TypeError, ValueError, AttributeError):
        return None


def _require_id(checkpoint_id: str) -> bytes:
    found = _id_bytes(checkpoint_id)
    if found is None:
        raise ConfigError(f"checkpoint id {checkpoint_id!r} is not a UUID")
    return found


def _id_text(data: bytes) -> str:
    return str(uuid.UUID(bytes=bytes(data)))


def _storage_error(exc: sqlite3.Error, path: str) -> Exception:
    message = str(exc)
    if "locked" in message or "busy" in message:
        return DatabaseBusyError(f"{path} is busy: another process holds its lock; retry later")
    if "not a database" in message or "malformed" in message:
        return StorageError(f"{path} is not a ttcli database ({message})")
    return StorageError(f"{path}: {message}")
