"""What a psycopg failure means to the user of a ttcli database, as one actionable line."""

from __future__ import annotations

import re

import psycopg
from psycopg import errors

from ttcli.errors import (
    ConfigError,
    DatabaseBusyError,
    NotFoundError,
    StorageError,
    TtcliError,
)

#: what a failed connection says (psycopg gives no SQLSTATE for these), and what it means
_CONNECTING = [
    ("connection is bad: invalid", "dsn"),
    ("invalid connection option", "dsn"),
    ('database "', "database"),  # database "x" does not exist
    ("password authentication failed", "login"),
    ("no password supplied", "login"),
    ('role "', "login"),  # role "x" does not exist
    ("connection refused", "down"),
    ("timeout expired", "down"),
    ("failed to resolve host", "down"),
    ("could not translate host name", "down"),
    ("no route to host", "down"),
    ("the database system is", "down"),  # starting up, shutting down
    ("server closed the connection", "down"),
    ("the connection is closed", "down"),
    ("connection is lost", "down"),
    ("terminating connection", "down"),
]


#: from the first quote to the last: what libpq quotes of a DSN (a quote in it included)
_QUOTED = re.compile(r'".*"')


def _detail(exc: psycopg.Error) -> str:
    """The failure in one line: what follows the last "failed:", without "FATAL:"."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text.rpartition("failed: ")[2] or text
    return text.removeprefix("FATAL:").strip()


def storage_error(exc: psycopg.Error, where: str, *, connecting: bool = False) -> TtcliError:
    """The ttcli error for a psycopg failure: busy or down (exit 5), missing (3), a bad DSN
    (2, `connecting` only), refused, damaged or other (6)."""
    message = _detail(exc)
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
    if isinstance(exc, errors.UndefinedColumn | errors.UndefinedTable | errors.UndefinedFunction):
        return StorageError(
            f"{where} is not a ttcli database (or a damaged one, or a PostgreSQL older than "
            f"12): {message}"
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.ProgrammingError):
        kind = next((k for text, k in _CONNECTING if text in str(exc).lower()), None)
        if kind == "dsn" or (connecting and isinstance(exc, psycopg.ProgrammingError)):
            # libpq quotes the part it could not parse, which may be the password or hold it
            message = _QUOTED.sub('"..."', message)
            return ConfigError(
                f"not a usable PostgreSQL DSN ({message}): give postgresql://USER@HOST:PORT/DB"
            )
        if kind == "database":
            return NotFoundError(f"{where}: {message}; create it first (createdb)")
        if kind == "login":
            return StorageError(f"{where}: {message}; check the user and password in the DSN")
        if kind == "down":
            return DatabaseBusyError(
                f"{where} is unreachable ({message}): is the server up? retry later"
            )
        return StorageError(f"cannot use {where}: {message}")
    return StorageError(f"{where}: {message}")
