"""The file and its transactions, shared by the saver's parts.

Several processes may write one file: WAL journal, a busy timeout, and `BEGIN IMMEDIATE` for
every write, so a checkpoint with its values commits as one transaction or not at all. Reads
run in a read transaction, so they see one consistent snapshot while others write. A batch
groups the writes of a block into one transaction (a superstep: its task's writes and its
checkpoint commit together).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ttcli.errors import StorageError
from ttcli.savers.sqlite.errors import storage_error
from ttcli.savers.sqlite.migrations import connect, open_schema

DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a writer waits for another before giving up

Hook = Callable[[], None]


@dataclass
class BatchFacts:
    """What write transactions learned about the file: kept while this connection is the
    only one to write it (`notice_others` drops them when another did; a rollback too)."""

    threads: dict[tuple[str, str], int] = field(default_factory=dict)
    latest: dict[int, bytes | None] = field(default_factory=dict)
    #: a write in the batch raised: none of the batch may be stored, even if it was caught
    failed: bool = False


class Connection:
    """One sqlite3 connection, its lock, and the batch in progress (if any)."""

    def __init__(
        self,
        path: str | Path,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        *,
        readonly: bool = False,
    ) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.conn = connect(self.path, busy_timeout, readonly=readonly)
        self.lock = threading.RLock()
        self.depth = 0
        self.facts = BatchFacts()
        #: called with the connection before any other statement of a batch runs, and at its
        #: end: writes what a part held back for the batch (pending writes)
        self.flush: Callable[[sqlite3.Connection], None] = lambda conn: None
        #: caches to drop after a rollback; caches to drop when another connection changed
        #: the file; what to reset when a batch ends
        self.on_rollback: list[Hook] = []
        self.on_other_writer: list[Hook] = []
        self.on_batch_end: list[Hook] = []
        self._data_version: int | None = None
        try:
            open_schema(self.conn, self.path, readonly=readonly)
            if not readonly and self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode = WAL")
            # in WAL mode, synchronous=NORMAL survives any crash of the process; only a power
            # cut can lose the last transactions
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            self.conn.close()
            raise storage_error(exc, self.path) from None
        except BaseException:
            self.conn.close()
            raise

    @property
    def in_batch(self) -> bool:
        return self.depth > 0

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def vacuum(self) -> None:
        """Give free pages back to the file system (rewrites the file; takes a write lock)."""
        with self.lock:
            try:
                self.conn.execute("VACUUM")
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for every write in the block (one commit instead of one each).

        All of it commits or none: if a write in the block raises, nothing of the block is
        stored, even if the block caught the error (it ends with a StorageError).
        """
        with self.write() as conn:
            self.depth += 1
            try:
                yield
                if self.depth == 1:
                    if self.facts.failed:
                        raise StorageError(
                            f"a write to {self.path} in this batch failed: nothing of the "
                            "batch was stored"
                        )
                    self.flush(conn)
            finally:
                self.depth -= 1
                if not self.depth:
                    # thread keys and latest ids stay known while no other connection
                    # writes (see notice_others): the next superstep asks SQLite for neither
                    self.facts.failed = False
                    _call(self.on_batch_end)

    @contextmanager
    def write(self, *, keep_held: bool = False) -> Iterator[sqlite3.Connection]:
        """One immediate write transaction: all of it commits, or none of it. Inside a batch,
        held writes are written first unless the caller takes them (`keep_held`)."""
        with self.lock:
            if self.depth:  # a statement of the batch's transaction
                conn = self._in_batch(flush=not keep_held, writing=True)
                try:
                    yield conn
                except BaseException as exc:
                    self._batch_failed(exc, writing=True)
                return
            if self.readonly:
                raise StorageError(
                    f"{self.path} was opened for reading only: open it without readonly to write"
                )
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None
            try:
                self.notice_others()
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self.forget()
                if isinstance(exc, sqlite3.Error):
                    raise storage_error(exc, self.path) from None
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot while other processes write."""
        with self.lock:
            if self.depth:  # reads inside a batch see its writes
                conn = self._in_batch(flush=True, writing=False)
                try:
                    yield conn
                except BaseException as exc:
                    self._batch_failed(exc, writing=False)
                return
            try:
                self.conn.execute("BEGIN")
                self.notice_others()
                yield self.conn
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path) from None
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    def _in_batch(self, *, flush: bool, writing: bool) -> sqlite3.Connection:
        """The batch's connection for one more statement; after a failed write (SQLite itself
        may have rolled back) nothing more of the batch runs: on its own, each would commit.
        (A plain call, not a context manager: it runs for every statement of a superstep.)"""
        if self.facts.failed or not self.conn.in_transaction:
            self.facts.failed = self.facts.failed or writing
            raise StorageError(
                f"an earlier write to {self.path} in this batch failed: nothing of the batch "
                "is stored"
            )
        if flush:
            try:
                self.flush(self.conn)
            except BaseException as exc:
                self._batch_failed(exc, writing=writing)
        return self.conn

    def _batch_failed(self, exc: BaseException, *, writing: bool) -> NoReturn:
        self.facts.failed = self.facts.failed or writing
        if isinstance(exc, sqlite3.Error):
            raise storage_error(exc, self.path) from None
        raise exc

    def notice_others(self) -> None:
        """Tell the parts if another connection changed the file since they last looked: it
        may have deleted a thread whose key a new thread now has, holding copies with the
        same checkpoint ids."""
        (version,) = self.conn.execute("PRAGMA data_version").fetchone()
        if version != self._data_version:
            self._data_version = version
            self.facts.threads.clear()
            self.facts.latest.clear()
            _call(self.on_other_writer)

    def forget(self) -> None:
        """Drop what the parts cached (after a rollback, or rows deleted)."""
        _call(self.on_rollback)
        self.forget_rows()

    def forget_rows(self) -> None:
        """Drop the thread keys and latest ids known (rows were written behind the parts'
        back: an archive copy inserts stored rows as they are)."""
        self.facts.threads.clear()
        self.facts.latest.clear()


def _call(hooks: list[Hook]) -> None:
    for hook in hooks:
        hook()
