"""Reading a LangGraph PostgresSaver database without LangGraph, and without importing
anything: the same decoder as for its SQLite files (`ttcli.ops.langgraph_file`), over
PostgresSaver's tables: `checkpoints` (the checkpoint as JSON, small values inline),
`checkpoint_blobs` (each channel's value at each version) and `checkpoint_writes`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ttcli.errors import CorruptValueError, TtcliError
from ttcli.ops.langgraph_file import Stored, checkpoint_of, decode, decode_metadata
from ttcli.savers.postgres.connection import display_name
from ttcli.savers.postgres.errors import storage_error
from ttcli.uuid6 import canonical_id

_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

_CHECKPOINTS = """
SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata
FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id
"""

#: each channel's value at the version the checkpoint names
_BLOBS = """
SELECT b.channel, b.type, b.blob
FROM jsonb_each_text(%s::jsonb) AS v
JOIN checkpoint_blobs AS b
  ON b.thread_id = %s AND b.checkpoint_ns = %s AND b.channel = v.key AND b.version = v.value
"""

_WRITES = """
SELECT task_id, task_path, channel, type, blob FROM checkpoint_writes
WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s
ORDER BY task_path, task_id, idx
"""


def is_langgraph_postgres(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection's schema holds LangGraph PostgresSaver's tables."""
    found = conn.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
        (list(_TABLES),),
    ).fetchone()
    return found is not None and found[0] == len(_TABLES)


class LangGraphPostgres:
    """A LangGraph PostgresSaver database, each thread read in one REPEATABLE READ snapshot."""

    def __init__(self, conn: psycopg.Connection[Any], dsn: str) -> None:
        self.conn, self.path = conn, display_name(dsn)
        self.size = self._size()

    def _size(self) -> int:
        total = self.conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c "
            "WHERE c.relname = ANY(%s) AND c.relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
            (list(_TABLES),),
        ).fetchone()
        return int(total[0] or 0) if total else 0

    def close(self) -> None:
        self.conn.close()

    def thread_ids(self) -> list[str]:
        try:
            rows = self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")
            return [str(row[0]) for row in rows]
        except psycopg.Error as exc:  # no SELECT on it, say
            raise self._error(exc) from None

    def thread(self, thread_id: str) -> Iterator[Stored]:
        """Every checkpoint of a thread, each namespace's oldest first (parents first)."""
        try:  # one snapshot: a LangGraph still writing cannot mix two states of the thread
            with self.conn.transaction():
                self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                rows = self.conn.execute(_CHECKPOINTS, (thread_id,)).fetchall()
                stored = [self._stored(thread_id, *row) for row in rows]
        except psycopg.Error as exc:
            raise self._error(exc) from None
        yield from stored

    def _stored(
        self, thread_id: str, ns: str, checkpoint_id: str, parent: str | None, doc: Any, meta: Any
    ) -> Stored:
        where = f"checkpoint {checkpoint_id} of thread '{thread_id}' in {self.path}"
        try:
            if not isinstance(doc, dict):
                raise CorruptValueError("a checkpoint that is not a JSON object")
            values, versions = doc.get("channel_values") or {}, doc.get("channel_versions")
            if not isinstance(values, dict) or not isinstance(versions, dict):
                raise CorruptValueError("channel_values or channel_versions is not an object")
            values = dict(values)
            blobs = self.conn.execute(_BLOBS, (Jsonb(versions), thread_id, ns))
            for channel, kind, blob in blobs:
                if kind != "empty":
                    values[channel] = decode(kind, blob)
            saved = Stored(
                ns,
                checkpoint_of({**doc, "channel_values": values}),
                decode_metadata(meta if isinstance(meta, str | bytes) else json.dumps(meta)),
                canonical_id(parent),
            )
            for task_id, path, channel, kind, blob in self.conn.execute(
                _WRITES, (thread_id, ns, checkpoint_id)
            ):
                task = saved.writes.setdefault(str(task_id), (str(path or ""), []))
                task[1].append((str(channel), decode(kind, blob)))
        except CorruptValueError as exc:
            raise CorruptValueError(f"{where}: {exc}") from None
        return saved

    def _error(self, exc: psycopg.Error) -> TtcliError:
        return storage_error(exc, self.path)
