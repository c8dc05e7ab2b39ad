"""PostgresSaver: the saver contract on a PostgreSQL database, in the format of
`schema-postgres.sql` (schema.sql's tables and encoding, in PostgreSQL's types).

The contract is `ttcli.savers.sql.SqlSaver`'s, the same code as SQLite's; this class opens
the database and adds PostgreSQL's integrity checks and the keys rows copied in take.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from contextlib import contextmanager

from ttcli.savers.base import BaseSaver
from ttcli.savers.postgres.connection import PgConnection
from ttcli.savers.postgres.integrity import integrity_problems
from ttcli.savers.postgres.metadata_filter import postgres_match
from ttcli.savers.serde import Serializer
from ttcli.savers.sql.db import Db
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT

_NEW_BLOB_KEYS = """
SELECT nextval(pg_get_serial_sequence('blobs', 'blob_key')) FROM generate_series(1, ?)
"""


class PostgresSaver(SqlSaver):
    """Checkpoints in a PostgreSQL database that several hosts share.

    Example:
        with PostgresSaver.from_conn_string("postgresql://app@db/agents") as saver:
            graph = builder.compile(checkpointer=saver)
    """

    connection: PgConnection

    def __init__(
        self,
        dsn: str,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        serde: Serializer | None = None,
        readonly: bool = False,
    ) -> None:
        """Connect, creating the schema in a database that has none.

        With `readonly`, the schema must exist, nothing is ever written, and writes raise
        StorageError. A writer waits at most `busy_timeout` seconds for another's lock.
        """
        if not isinstance(dsn, str):
            raise TypeError(f"PostgresSaver takes a DSN (str), got {dsn!r}")
        super().__init__(PgConnection(dsn, busy_timeout, readonly=readonly), postgres_match, serde)
        self.dsn = dsn

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, dsn: str, *, serde: Serializer | None = None, readonly: bool = False
    ) -> Iterator[PostgresSaver]:
        """Open a saver for the block and close it after, like LangGraph's PostgresSaver."""
        saver = cls(dsn, serde=serde, readonly=readonly)
        try:
            yield saver
        finally:
            saver.close()

    open = from_conn_string

    def stores_in(self, other: BaseSaver) -> bool:
        return other is self or (
            isinstance(other, PostgresSaver) and other.connection.same_database(self.connection)
        )

    def new_blob_keys(self, conn: Db, count: int, above: int) -> Iterator[int]:
        # the sequence's, in one round trip: other writers draw from it meanwhile, so a key
        # of the copy's choosing could be handed out to one of them too (its values exceed
        # every key here, so `above` needs nothing more)
        return iter(sorted(key for (key,) in conn.execute(_NEW_BLOB_KEYS, (count,)).fetchall()))

    def integrity_problems(self) -> builtins.list[str]:
        with self.connection.read() as conn:
            return integrity_problems(conn) + self.deletion.shared_blobs(conn)
