"""Which backend a database target names: a `postgresql://` (or `postgres://`) DSN, or
libpq's `key=value` form (`host=db dbname=agents user=app`), is a PostgreSQL database;
anything else a SQLite file path."""

from __future__ import annotations

import re
from pathlib import Path

from ttcli.errors import ConfigError
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT

_SCHEMES = ("postgresql://", "postgres://")
#: libpq's key=value connection string, as `psql` takes it
_KEY_VALUE = re.compile(r"^\s*(host|hostaddr|port|dbname|user|password|service)\s*=")


def is_dsn(target: str | Path) -> bool:
    return isinstance(target, str) and (
        target.lower().startswith(_SCHEMES) or _KEY_VALUE.match(target) is not None
    )


def open_saver(
    target: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, readonly: bool = False
) -> SqlSaver:
    """The saver of a SQLite file or a PostgreSQL DSN (the latter needs ttcli[postgres])."""
    if is_dsn(target):
        try:
            from ttcli.savers.postgres import PostgresSaver
        except ImportError:
            raise ConfigError(
                f"{str(target).split('://')[0]}:// needs PostgreSQL support: "
                "pip install 'ttcli[postgres]'"
            ) from None
        return PostgresSaver(str(target), busy_timeout=busy_timeout, readonly=readonly)
    from ttcli.savers.sqlite import SqliteSaver

    return SqliteSaver(target, busy_timeout=busy_timeout, readonly=readonly)
