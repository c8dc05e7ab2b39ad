"""Which backend a database target names: a `postgresql://` (or `postgres://`) DSN, or
libpq's `key=value` form (`host=db dbname=agents user=app`), is a PostgreSQL database;
anything else a SQLite file path."""

from __future__ import annotations

import os
import re

from ttcli.errors import ConfigError, InputError, StorageError
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sql.transactions import DEFAULT_BUSY_TIMEOUT

_SCHEMES = ("postgresql://", "postgres://")
#: libpq's key=value connection string, as `psql` takes it, starting with any of its keys
_KEY_VALUE = re.compile(
    r"^\s*(host|hostaddr|port|dbname|user|password|passfile|service|options|"
    r"application_name|fallback_application_name|client_encoding|connect_timeout|"
    r"keepalives\w*|tcp_user_timeout|replication|target_session_attrs|load_balance_hosts|"
    r"require_auth|channel_binding|ssl\w*|requiressl|requirepeer|krbsrvname|gss\w*|"
    r"oauth\w*|m(in|ax)_protocol_version|scram_\w*)\s*="
)
#: a URL of another scheme than libpq's (a letter and `:` alone is a Windows drive)
_OTHER_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")


def is_dsn(target: str | os.PathLike[str]) -> bool:
    return isinstance(target, str) and (
        target.lower().startswith(_SCHEMES) or _KEY_VALUE.match(target) is not None
    )


def refuse_other_urls(target: str | os.PathLike[str]) -> None:
    """Raises: InputError: `target` is a URL ttcli does not open (SQLAlchemy's
    `postgresql+psycopg://`, `mysql://`, ...), named by its scheme alone, as it may hold a
    password. SQLite's `file:` URIs, and a path whose folder exists, are files."""
    found = _OTHER_URL.match(target) if isinstance(target, str) else None
    if not found or is_dsn(target) or found.group(1).lower() == "file":
        return
    if os.path.exists(os.path.dirname(target)):
        return
    scheme = found.group(0)
    spelling = "postgresql://user@host/dbname"
    raise InputError(
        f"{scheme}... is not a database ttcli opens: give a SQLite file path or a PostgreSQL "
        + (f"DSN as libpq spells it, {spelling} (not SQLAlchemy's {scheme})" if "+" in scheme
           else f"DSN, {spelling}")
    )  # fmt: skip


def uri_path(target: str) -> str:
    """The path a SQLite `file:` URI without parameters names (`file:agent.db`,
    `file:///srv/agent.db`), so that every command finds the file SQLite would open; any
    other target as it is.

    Raises:
        InputError: a `file:` URI with parameters (`?mode=memory`, `?vfs=...`), of another
            host, or of no path: ttcli opens files by their paths.
    """
    if target[:5].lower() != "file:":
        return target
    rest = target[5:]
    if rest.startswith("//"):
        host, _, rest = rest[2:].partition("/")
        rest = "/" + rest if host in ("", "localhost") else ""
    from urllib.parse import unquote  # only here: it loads ipaddress (milliseconds)

    try:
        path = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        path = ""
    if not path.strip("/") or "?" in rest or "#" in rest or "\x00" in path:
        raise InputError(
            f"{target!r} is a SQLite URI ttcli does not open (parameters, another host, or "
            "no path): give the database file's path"
        )
    # a path that is itself `file:...` names that file, not another URI
    return "./" + path if path[:5].lower() == "file:" else path


def file_stat(path: str) -> os.stat_result | None:
    """What is at a SQLite file path, a trailing `/` dropped (`x.db/` is the file, as it
    was when pathlib looked), or None if nothing is; os.stat, as importing pathlib costs
    every command's start-up.

    Raises:
        StorageError: it cannot be looked at (a folder on the way we may not enter, a loop
            of symbolic links, a name too long).
    """
    try:
        return os.stat(path.rstrip("/") or path)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL byte
        return None
    except OSError as exc:
        raise StorageError(f"cannot open {path}: {exc.strerror}") from None


def names_lasting_file(target: str | os.PathLike[str]) -> bool:
    """Whether a SQLite target names a file that outlives the process: not an empty name,
    `:memory:`, nor a `file:` URI (SQLite opens one as a URI whatever it is asked, so it may
    be a database in memory, or a file no path comparison can tell apart from another)."""
    name = str(target)
    return name not in ("", ":memory:") and name[:5].lower() != "file:"


def require_lasting(option: str, target: str) -> None:
    """Refuse a database to write into that would vanish with the process.

    Raises:
        InputError: `target` names no lasting database (see `names_lasting_file`).
    """
    if not is_dsn(target) and not names_lasting_file(target):
        raise InputError(
            f"{option} {target!r} names no lasting database (empty, :memory: or a file: "
            "URI): give a file path or a postgresql:// DSN"
        )


def open_saver(
    target: str | os.PathLike[str],
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    readonly: bool = False,
) -> SqlSaver:
    """The saver of a SQLite file or a PostgreSQL DSN (the latter needs ttcli[postgres])."""
    refuse_other_urls(target)
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
