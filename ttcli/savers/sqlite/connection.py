"""The SQLite file and its transactions (see `ttcli.savers.sql.transactions`).

Several processes may write one file: WAL journal, a busy timeout, and `BEGIN IMMEDIATE` for
every write. `PRAGMA data_version` says whether another connection changed the file.
"""

from __future__ import annotations

import os
import sqlite3

from ttcli.errors import TtcliError
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT, Transactions, call
from ttcli.savers.sqlite.errors import storage_error
from ttcli.savers.sqlite.migrations import connect, open_schema

__all__ = ["DEFAULT_BUSY_TIMEOUT", "Connection"]

#: a durable transaction's commit syncs the WAL (on macOS with F_FULLFSYNC, which reaches the
#: disk itself; elsewhere fullfsync changes nothing); the others' do not
_FULL_SYNC = ("PRAGMA synchronous = FULL", "PRAGMA fullfsync = ON")
_NORMAL_SYNC = ("PRAGMA synchronous = NORMAL", "PRAGMA fullfsync = OFF")


class Connection(Transactions[sqlite3.Connection]):
    """One sqlite3 connection, its lock, and the batch in progress (if any)."""

    conn: sqlite3.Connection

    def __init__(
        self,
        path: str | os.PathLike[str],
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        *,
        readonly: bool = False,
    ) -> None:
        super().__init__(str(path), readonly=readonly)
        self.conn = connect(self.path, busy_timeout, readonly=readonly)
        self._data_version: int | None = None
        #: `synchronous` is FULL for a durable transaction, to be set back when it ends
        self._full_sync = False
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

    def _begin(self, *, writing: bool, durable: bool = False) -> None:
        if durable:  # the commit syncs the WAL; SQLite changes this outside a transaction only
            self._full_sync = True  # first: however the pragmas are cut short, `_end` undoes
            for pragma in _FULL_SYNC:
                self.conn.execute(pragma)
        self.conn.execute("BEGIN IMMEDIATE" if writing else "BEGIN")

    def _end(self, *, commit: bool) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("COMMIT" if commit else "ROLLBACK")
        finally:
            if self._full_sync and not self.conn.in_transaction:  # else at the rollback
                for pragma in _NORMAL_SYNC:
                    self.conn.execute(pragma)
                self._full_sync = False

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def notice_others(self) -> None:
        # another connection may have deleted a thread whose key a new thread now has (SQLite
        # hands out a deleted largest key again), holding copies with the same checkpoint ids
        (version,) = self.conn.execute("PRAGMA data_version").fetchone()
        if version != self._data_version:
            self._data_version = version
            self.forget_rows()
            call(self.on_other_writer)

    def error(self, exc: BaseException) -> TtcliError | None:
        return storage_error(exc, self.path) if isinstance(exc, sqlite3.Error) else None
