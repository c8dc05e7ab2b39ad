"""Creating and upgrading the database schema (`schema.sql`), and refusing what we cannot read."""

from __future__ import annotations

import functools
import os
import sqlite3

from ttcli.errors import NotFoundError, SchemaVersionError, StorageError
from ttcli.savers.sqlite.errors import storage_error

SCHEMA_VERSION = 7

#: upgrade steps: MIGRATIONS[v] turns a version-v database into version v + 1
MIGRATIONS: dict[int, str] = {
    1: "ALTER TABLE threads ADD COLUMN info TEXT;",
    2: "CREATE TABLE blob_debt (thread_key INTEGER NOT NULL, blob_key INTEGER NOT NULL, "
    "PRIMARY KEY (thread_key, blob_key)) WITHOUT ROWID;",
    3: "ALTER TABLE threads ADD COLUMN checkpoints INTEGER NOT NULL DEFAULT 0;\n"
    "UPDATE threads SET checkpoints = "
    "(SELECT count(*) FROM checkpoints AS c WHERE c.thread_key = threads.thread_key);",
    # every child that is not the row right after its parent
    4: "CREATE TABLE branches (thread_key INTEGER NOT NULL, parent_id BLOB NOT NULL, "
    "checkpoint_id BLOB NOT NULL, PRIMARY KEY (thread_key, parent_id, checkpoint_id)) "
    "WITHOUT ROWID;\n"
    "INSERT INTO branches (thread_key, parent_id, checkpoint_id) "
    "SELECT thread_key, parent, checkpoint_id FROM ("
    "SELECT c.thread_key, c.checkpoint_id, "
    "CAST(substr(c.checkpoint_id, 1, 16 - length(c.parent_id)) || c.parent_id AS BLOB) "
    "AS parent, ("
    "SELECT max(p.checkpoint_id) FROM checkpoints AS p "
    "WHERE p.thread_key = c.thread_key AND p.checkpoint_id < c.checkpoint_id) AS previous "
    "FROM checkpoints AS c WHERE c.parent_id IS NOT NULL) "
    "WHERE previous IS NULL OR previous != parent;",
    # map deltas: blobs whose value is a map with a base (no SQL; older ttcli cannot read them)
    5: "",
    # a Send as ext 14 (no SQL; older ttcli cannot read it)
    6: "",
}


def connect(path: str, busy_timeout: float, *, readonly: bool) -> sqlite3.Connection:
    """A connection to the file; with `readonly` it must exist, and the connection cannot
    change it (it may still upgrade an older schema, see `open_schema`).

    Reading opens the file for writing all the same (`mode=rw`): a connection that cannot
    write would leave the WAL's -wal and -shm files behind when it closes.
    """
    if "\x00" in path:  # a URI's %00 would end the name there: another file
        raise StorageError(f"cannot open {path!r}: a file name cannot hold a NUL character")
    target, uri = path, False
    if readonly and path != ":memory:":
        target, uri = f"{file_uri(os.path.abspath(path))}?mode=rw", True
    try:
        conn = sqlite3.connect(
            target, timeout=busy_timeout, isolation_level=None, check_same_thread=False, uri=uri
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {path}: {exc}") from None
    return conn


def open_schema(conn: sqlite3.Connection, path: str, *, readonly: bool) -> None:
    """Make the schema ready: create or upgrade it (reading: refuse an empty file instead,
    and never write again), then check that ttcli's tables are tables.

    Raises:
        NotFoundError: reading an empty file.
        StorageError: a view or other object where a ttcli table should be; or, before
            anything is written, a trigger that ttcli did not create on one of its tables.
        SchemaVersionError: see `ensure_schema`.
    """
    version = _user_version(conn, path)
    if readonly and version == 0:  # refused without taking the write lock
        if _tables(conn):
            raise _foreign(path)
        raise NotFoundError(
            f"no ttcli database in {path}: the file is empty; run a graph first (ttcli run)"
        )
    if version <= SCHEMA_VERSION and (not readonly or version < SCHEMA_VERSION):
        _refuse_triggers(conn, path)  # about to write: no statement of ours may fire one
    ensure_schema(conn, path)
    _require_tables(conn, path)
    if readonly:
        conn.execute("PRAGMA query_only = 1")


#: every SQL object but SQLite's own (whose names no one else may use)
_OBJECTS = r"""
SELECT name, type, tbl_name
FROM sqlite_master
WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'
ORDER BY type, name
"""


@functools.cache
def schema_objects() -> dict[str, str]:
    """Name -> type (table, index, view, trigger) of every SQL object schema.sql creates."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in statements(schema_sql()):
            conn.execute(statement)
        return {name: kind for name, kind, _ in conn.execute(_OBJECTS)}
    finally:
        conn.close()


def foreign_objects(conn: sqlite3.Connection) -> list[str]:
    """Each SQL object of the file that schema.sql does not define, or defines as another
    kind, and each one it defines that the file lacks: one line each."""
    ours = schema_objects()
    rows = conn.execute(_OBJECTS).fetchall()
    found = []
    for name, kind, table in rows:
        if name not in ours:
            on = f" on {table}" if kind in ("index", "trigger") else ""
            found.append(f"{kind} {name}{on} is not part of ttcli's schema")
        elif ours[name] != kind:
            found.append(f"{name} is a {kind}, where ttcli has a {ours[name]}")
    present = {name for name, _, _ in rows}
    return found + [f"{ours[name]} {name} is missing" for name in ours if name not in present]


def _require_tables(conn: sqlite3.Connection, path: str) -> None:
    """Refuse a file where a ttcli table is missing or is something else (a view could
    return rows without end)."""
    kinds = {name: kind for name, kind, _ in conn.execute(_OBJECTS)}
    for name, kind in schema_objects().items():
        if kind == "table" and kinds.get(name) != "table":
            what = (
                f"{name} is a {kinds[name]}, where ttcli has a table"
                if name in kinds
                else f"its table {name} is missing"
            )
            raise StorageError(
                f"{path} is not a ttcli database (or a damaged one): {what}; use another file"
            )


def _refuse_triggers(conn: sqlite3.Connection, path: str) -> None:
    ours = schema_objects()
    for name, kind, table in conn.execute(_OBJECTS):
        if kind == "trigger" and ours.get(table) == "table":
            raise StorageError(
                f"{path} has a trigger {name} on table {table} that ttcli did not create: it "
                f"would run on ttcli's own writes; drop it (DROP TRIGGER {name}) or work on a copy"
            )


#: the bytes a URI's path holds as they are: RFC 3986's unreserved characters, and "/"
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


def file_uri(path: str) -> str:
    """The `file:` URI of an absolute path, percent-encoded byte for byte (a name that is
    not UTF-8 too), its authority empty (a path beginning `//` is no host). Not
    urllib.parse.quote: importing it loads ipaddress, milliseconds of every reading
    command's start-up."""
    quoted = "".join(chr(b) if b in _URI_SAFE else f"%{b:02X}" for b in os.fsencode(path))
    return f"file://{quoted}"


def schema_sql() -> str:
    path = os.path.join(os.path.dirname(__file__), os.pardir, "schema.sql")
    with open(path, encoding="utf-8") as file:
        return file.read()


def ensure_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the schema in an empty file, migrate an older one, refuse a newer or foreign one.

    Raises:
        SchemaVersionError: the file was written by a newer ttcli.
        StorageError: the file is not a ttcli database.
    """
    version = _user_version(conn, path)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} uses ttcli schema version {version}, newer than this ttcli understands "
            f"({SCHEMA_VERSION}): upgrade ttcli to read it"
        )
    if version == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _user_version(conn, path)  # another process may have won the race
        if version == 0:
            if _tables(conn):
                raise _foreign(path)
            for statement in statements(schema_sql()):
                conn.execute(statement)
            version = SCHEMA_VERSION
        while version < SCHEMA_VERSION:
            for statement in statements(MIGRATIONS[version]):
                conn.execute(statement)
            version += 1
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _foreign(path: str) -> StorageError:
    return StorageError(
        f"{path} is not a ttcli database (it has tables but no ttcli schema version); "
        "use another file"
    )


def _user_version(conn: sqlite3.Connection, path: str) -> int:
    try:
        row = conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise storage_error(exc, path) from None
    return int(row[0])


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return [row[0] for row in rows]


def statements(sql: str) -> list[str]:
    """Split a script into statements, without comments and PRAGMAs (the version is set last).

    `executescript` would commit the open transaction first, so the schema is applied
    statement by statement inside one.
    """
    found: list[str] = []
    pending = ""
    for line in sql.splitlines(keepends=True):
        # comments document schema.sql; kept out of the file, where every page counts
        line = line.split("--", 1)[0].strip() + "\n"
        if line.strip().upper().startswith("PRAGMA ") or not line.strip():
            continue
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                found.append(pending.strip())
            pending = ""
    return found
