"""What a psycopg failure means to the user of a ttcli database, as one actionable line."""

from __future__ import annotations

import psycopg
from psycopg import errors

from ttcli.errors import ConfigError, DatabaseBusyError, StorageError, TtcliError


def storage_error(exc: psycopg.Error, where: str) -> TtcliError:
    """The ttcli error for a psycopg failure: busy, unreachable, refused, or other."""
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, errors.LockNotAvailable | errors.QueryCanceled | errors.DeadlockDetected):
        return DatabaseBusyError(f"{where} is busy: another process holds its lock; retry later")
    if isinstance(exc, errors.InsufficientPrivilege):
        return StorageError(
            f"{where}: permission denied ({message}); grant this user the rights on the "
            "database (CREATE on the schema to create ttcli's tables) or use another user"
        )
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return StorageError(f"{where} is read-only (a standby?): point --db at the primary")
    if isinstance(exc, psycopg.DataError) and "NUL" in message:
        return ConfigError(f"{where}: PostgreSQL text cannot hold NUL characters ({message})")
    if isinstance(exc, psycopg.OperationalError):
        return StorageError(f"cannot use {where}: {message}; is the server up and the DSN right?")
    return StorageError(f"{where}: {message}")
