"""What a sqlite3 failure means to the user of a ttcli file, as one actionable line."""

from __future__ import annotations

import sqlite3

from ttcli.errors import DatabaseBusyError, StorageError


def storage_error(exc: sqlite3.Error, path: str) -> StorageError:
    """The ttcli error for a sqlite3 failure: busy, read-only, not a database, or other."""
    message = str(exc)
    if is_busy(exc):
        return DatabaseBusyError(f"{path} is busy: another process holds its lock; retry later")
    if "readonly" in message:
        return StorageError(
            f"{path} is read-only for this user: ttcli writes to the file and its folder even "
            "to read it (SQLite WAL); fix the permissions or work on a copy"
        )
    if "not a database" in message or "malformed" in message:
        return StorageError(f"{path} is not a ttcli database ({message})")
    return StorageError(f"{path}: {message}")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether another connection's lock stopped the statement (worth a retry)."""
    message = str(exc)
    return "locked" in message or "busy" in message


def raise_if_busy(exc: sqlite3.Error, path: str) -> None:
    """Raises: DatabaseBusyError: `exc` is another connection's lock (see `is_busy`); a
    reader of another program's file says so before it calls the file anything else."""
    if is_busy(exc):
        raise storage_error(exc, path) from None
