"""A PostgreSQL database and its transactions (see `ttcli.savers.sql.transactions`).

Connections come from a psycopg pool, one for each transaction (a batch keeps its own until
it ends). Statements are the shared SQL with `?` and `:name` parameters, rewritten once into
psycopg's, and bound on the client side, as sqlite3 binds them.

A write transaction takes the lock of each thread it writes before it touches the thread's
rows (`claim`, an advisory lock on the thread id held until it ends): the writers of one
thread take turns, as all of SQLite's do, and writers of other threads go on meanwhile (a
thread's values are its own). A read is one REPEATABLE READ snapshot, and waits for nobody.

A transaction runs in libpq's pipeline mode: a statement whose result nobody reads is sent
without waiting for the server, and goes with the next one that is read (BEGIN and the
thread's lock with the first SELECT, a checkpoint's inserts with the next, the last ones with
COMMIT): a superstep waits for a few round trips instead of one a statement, and holds its
thread's lock that much shorter. A statement that fails raises where its result is next
waited for (at the latest, at COMMIT): the transaction then rolls back whole, as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from contextlib import ExitStack
from typing import Any

import psycopg
from psycopg import ClientCursor
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import PipelineStatus, TransactionStatus
from psycopg_pool import ConnectionPool

from ttcli.errors import StorageError, TtcliError
from ttcli.savers.postgres.errors import storage_error
from ttcli.savers.postgres.migrations import OBJECTS, open_schema
from ttcli.savers.sql.db import scalar
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT, Transactions, call

#: seconds to wait for the server to answer when connecting
CONNECT_TIMEOUT = 10

#: how many transactions deleted rows: cached checkpoints are dropped when it moves
_DELETIONS = "SELECT deletions FROM ttcli_meta"
_DELETED = "UPDATE ttcli_meta SET deletions = deletions + 1 RETURNING deletions"
#: the lock of a thread's writers (all its namespaces), until the transaction ends; keyed by
#: ttcli's tables too (their oid), since advisory locks are the whole database's and another
#: schema of it may hold ttcli's tables as well (an archive)
_CLAIM = "SELECT pg_advisory_xact_lock(hashtextextended(?, 'threads'::regclass::oid::bigint))"
#: a durable transaction's commit waits for the server's disk where the server or the role
#: says not to (synchronous_commit = off); a stronger setting (replicas) is left as it is
_DURABLE = """
SELECT set_config('synchronous_commit', 'local', true)
WHERE current_setting('synchronous_commit') = 'off'
"""
#: which server (its start time), database and `threads` table the tables are: the same
#: however the DSN reaches them (a Unix socket has no port, a schema several spellings)
_IDENTITY = """
SELECT pg_postmaster_start_time(), current_database(), 'threads'::regclass::oid
"""


def display_name(dsn: str) -> str:
    """The DSN as messages show it: never with its password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the PostgreSQL DSN given"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


#: `list`'s condition on a thread (`statements.list_query`), by its id through the join...
THREAD_BY_ID = "t.thread_id = :thread_id\n  AND t.checkpoint_ns = :checkpoint_ns"
#: ...and as PostgreSQL runs it: by the thread's key, looked up first. Through the join the
#: planner cannot tell that one thread_key is left, so it reads and sorts every checkpoint of
#: the thread to return the newest 20 (70 ms at 200,000 checkpoints, growing with the
#: thread); with the key known, it reads them newest first off the primary key and stops.
THREAD_BY_KEY = (
    "c.thread_key = (SELECT k.thread_key FROM threads AS k"
    " WHERE k.thread_id = :thread_id AND k.checkpoint_ns = :checkpoint_ns)"
)


@functools.lru_cache(maxsize=512)
def psycopg_sql(sql: str) -> str:
    """Shared SQL with psycopg's parameters: `:name` is `%(name)s`, `?` is `%s` (a `::`
    cast is left alone, and a literal `%` is doubled); a thread's checkpoints selected by
    the thread's key (see THREAD_BY_KEY)."""
    sql = sql.replace(THREAD_BY_ID, THREAD_BY_KEY)
    sql = sql.replace("%", "%%")
    sql = re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"%(\1)s", sql)
    return sql.replace("?", "%s")


class PgDb:
    """The connection of the transaction in progress, as the SQL parts use it (`Db`)."""

    def __init__(self) -> None:
        self.conn: psycopg.Connection[Any] | None = None

    def _cursor(self) -> ClientCursor[Any]:
        if self.conn is None:
            raise StorageError("a ttcli statement ran outside a transaction (a bug in ttcli)")
        return _Cursor(self.conn)

    def execute(self, sql: str, parameters: Any = None, /) -> ClientCursor[Any]:
        cursor = self._cursor()
        if parameters is None:  # sent as it is: no parameter to rewrite, no % to double
            cursor.execute(sql.encode())
        else:
            cursor.execute(psycopg_sql(sql), _params(parameters))
        return cursor

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> ClientCursor[Any]:
        cursor = self._cursor()
        cursor.executemany(psycopg_sql(sql), [_params(p) for p in parameters])
        return cursor

    def script(self, sql: str) -> None:
        """Run several statements without parameters (a schema)."""
        assert self.conn is not None
        self.conn.execute(sql.encode())


class _Cursor(ClientCursor[Any]):
    """A cursor whose `rowcount` waits for the statement's result, as its rows do (in
    pipeline mode it is not known until the result comes back)."""

    @property
    def rowcount(self) -> int:
        self._fetch_pipeline()
        return super().rowcount


def _params(parameters: Any) -> Any:
    if parameters is None or isinstance(parameters, dict):
        return parameters
    return list(parameters)


class PgConnection(Transactions[PgDb]):
    """A pool of connections to one database, its lock, and the batch in progress."""

    #: a read costs round trips to the server (a pooled connection checked, begin, commit)
    read_ahead = 32

    def __init__(
        self, dsn: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, *, readonly: bool = False
    ) -> None:
        super().__init__(display_name(dsn), readonly=readonly)
        self.conn = PgDb()
        #: the threads whose lock this write transaction holds
        self._claimed: set[str] = set()
        #: ttcli_meta.deletions when this connection last looked
        self._deletions = -1
        self._pipeline: ExitStack | None = None
        lock_timeout = f"{max(1, int(busy_timeout * 1000))}ms"
        options = {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT}
        try:  # one direct connection first: its error says what is wrong (password, host...)
            with psycopg.connect(dsn, **options) as first:  # type: ignore[arg-type]
                first.execute(f"SET lock_timeout = '{lock_timeout}'")
                open_schema(first, self.path, readonly=readonly)
                self.identity = first.execute(_IDENTITY).fetchone()
        except psycopg.Error as exc:
            raise storage_error(exc, self.path, connecting=True) from None

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute(f"SET lock_timeout = '{lock_timeout}'")

        self.pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=2,
            kwargs=options,
            configure=configure,
            # a connection the server closed (a restart, a failover) is replaced, not used
            check=ConnectionPool.check_connection,
            open=False,
            # how long to wait for one of the pool's connections: this saver uses one at a
            # time (busy_timeout is for the other writers' locks, and may be 0)
            timeout=CONNECT_TIMEOUT,
            name="ttcli",
        )
        try:
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as exc:
            self.pool.close()
            raise StorageError(f"cannot use {self.path}: {exc}") from None

    def close(self) -> None:
        with self.lock:
            self.pool.close()

    def vacuum(self) -> None:
        """Make the space of deleted rows reusable, and refresh the planner's statistics
        (VACUUM runs outside a transaction; PostgreSQL's autovacuum does it too, later)."""
        with self.lock, self.pool.connection() as conn:
            try:
                for table in OBJECTS:
                    if OBJECTS[table] == "table":
                        conn.execute(f"VACUUM (ANALYZE) {table}")
            except psycopg.Error as exc:
                raise storage_error(exc, self.path) from None

    def same_database(self, other: PgConnection) -> bool:
        """Whether both hold the same tables, however their DSNs name them."""
        return bool(self.identity == other.identity)

    def _begin(self, *, writing: bool, durable: bool = False) -> None:
        if self.conn.conn is not None:
            raise StorageError("a transaction began inside another (a bug in ttcli)")
        conn = self.conn.conn = self.pool.getconn()
        self._pipeline = ExitStack()
        self._pipeline.enter_context(conn.pipeline())
        # BEGIN is sent with the first statement whose result is read: no round trip of its
        # own. Writes read committed rows once they hold a thread's lock, whatever the
        # database's default isolation; a read is one snapshot, from its first statement on
        if writing:
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            if durable:  # every setting but off flushes the commit to the server's disk
                conn.execute(_DURABLE)
        else:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._look(scalar(self.conn, _DELETIONS))

    def _end(self, *, commit: bool) -> None:
        conn, self.conn.conn = self.conn.conn, None
        pipeline, self._pipeline = self._pipeline, None
        if conn is None:
            return
        error: Exception | None = None
        try:
            if conn.pgconn.pipeline_status == PipelineStatus.ABORTED:
                # a statement failed, and whoever ran it went on: no COMMIT; a write says so
                if self.writing:
                    error = StorageError(
                        f"a statement of a transaction on {self.path} failed: nothing of it "
                        "was stored"
                    )
            elif commit:
                conn.execute("COMMIT")  # on a connection the server closed, this raises
        except psycopg.Error as exc:
            error = exc
        finally:
            try:
                if pipeline is not None:
                    pipeline.close()  # waits for every result: raises the first error
            except psycopg.Error as exc:
                error = error or exc
            finally:
                try:  # out of pipeline mode, the status is the server's again
                    status = conn.info.transaction_status
                    if not conn.closed and status not in (
                        TransactionStatus.IDLE,
                        TransactionStatus.UNKNOWN,  # the server is gone, the transaction too
                    ):
                        conn.execute("ROLLBACK")
                except psycopg.Error as exc:
                    error = error or exc
                finally:
                    self.pool.putconn(conn)
        # already failing (commit=False): the first error is the one reported, not this one
        if commit and error is not None:
            raise error

    def in_transaction(self) -> bool:
        conn = self.conn.conn
        # in pipeline mode the transaction status is known only at the end: a statement that
        # failed aborts the pipeline (and the transaction)
        return conn is not None and conn.pgconn.pipeline_status != PipelineStatus.ABORTED

    def notice_others(self) -> None:
        # keys are never handed out twice, so values cached by key stay true; a thread's
        # latest id (and, if another deleted the thread, its key) may have moved since the
        # last transaction: asked again in each one. Checkpoints cached by id are dropped when
        # another deleted rows (an id deleted may be stored again, with other values): see
        # `_look`, once a write holds its thread's lock, at the start of a read's snapshot.
        self.forget_rows()
        self._claimed.clear()

    def claim(self, thread_id: str) -> None:
        if self.writing and thread_id not in self._claimed:
            self.conn.execute(_CLAIM, (thread_id,))
            self._claimed.add(thread_id)
            self._look(scalar(self.conn, _DELETIONS))

    def deleting(self) -> None:
        # the row lock this takes orders deleting transactions (short: a page of a prune)
        self._look(scalar(self.conn, _DELETED), own=True)

    def _look(self, deletions: int, *, own: bool = False) -> None:
        """Drop cached checkpoints if another connection deleted rows since the last look."""
        if deletions != self._deletions + (1 if own else 0):
            call(self.on_other_writer)
        self._deletions = deletions

    def error(self, exc: BaseException) -> TtcliError | None:
        return storage_error(exc, self.path) if isinstance(exc, psycopg.Error) else None
