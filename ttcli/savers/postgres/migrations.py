"""Creating the PostgreSQL schema (`schema-postgres.sql`), and refusing what we cannot read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ttcli.errors import NotFoundError, SchemaVersionError, StorageError

SCHEMA_VERSION = 7
FIRST_VERSION = 5  # the first version ttcli wrote on PostgreSQL; none older exists

#: the tables and views schema-postgres.sql creates, by kind
OBJECTS = {
    "ttcli_meta": "table",
    "threads": "table",
    "names": "table",
    "checkpoints": "table",
    "writes": "table",
    "blobs": "table",
    "blob_debt": "table",
    "branches": "table",
    "checkpoint_list": "view",
}

#: the tables and views of the schema the connection creates in (its search_path's first)
OBJECTS_SQL = """
SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'r' THEN 'table'
       WHEN 'p' THEN 'table' ELSE c.relkind::text END
FROM pg_class AS c
WHERE c.relnamespace = (
    SELECT oid FROM pg_namespace WHERE nspname = current_schema()
) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
"""

#: a lock number of ttcli's own, held while a schema is created (two first users at once)
_SCHEMA_LOCK = 0x7474636C69


def schema_sql() -> str:
    return (Path(__file__).parent.parent / "schema-postgres.sql").read_text(encoding="utf-8")


def objects(conn: psycopg.Connection[Any]) -> dict[str, str]:
    return {name: kind for name, kind in conn.execute(OBJECTS_SQL).fetchall()}


def open_schema(conn: psycopg.Connection[Any], where: str, *, readonly: bool) -> None:
    """Make the schema ready: create it in an empty schema (reading: refuse instead), refuse
    a newer or a foreign one, then check that ttcli's tables are tables.

    Raises:
        NotFoundError: reading a database without ttcli's tables.
        SchemaVersionError: written by a newer ttcli.
        StorageError: no schema to create tables in, or another application's tables.
    """
    if conn.execute("SELECT current_schema()").fetchone() == (None,):
        raise StorageError(
            f"{where}: no schema to create tables in (the search_path names none that "
            "exists); create one or fix search_path in the DSN"
        )
    if "ttcli_meta" not in objects(conn):
        if readonly:
            if set(objects(conn)) & set(OBJECTS):
                raise _foreign(where)
            raise NotFoundError(
                f"no ttcli database in {where}: it has no ttcli tables; run a graph first "
                "(ttcli run)"
            )
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            found = objects(conn)
            if "ttcli_meta" not in found:  # another process may have won the race
                if set(found) & set(OBJECTS):
                    raise _foreign(where)
                conn.execute(schema_sql().encode())
    version = _scalar(conn, "SELECT version FROM ttcli_meta")
    if not FIRST_VERSION <= version <= SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where} uses ttcli schema version {version}, newer than this ttcli understands "
            f"({SCHEMA_VERSION}): upgrade ttcli to read it"
            if version > SCHEMA_VERSION
            else f"{where} claims ttcli schema version {version}, which no ttcli wrote on "
            "PostgreSQL: it is damaged, or not ttcli's"
        )
    if version < SCHEMA_VERSION and not readonly:
        # version 6 stores map deltas (blobs whose value is a map, see schema.sql), 7 a
        # Send as ext 14: no SQL to run, only a version that older ttcli refuses instead of
        # misreading them
        with conn.transaction():
            conn.execute(
                "UPDATE ttcli_meta SET version = %s WHERE version < %s",
                (SCHEMA_VERSION, SCHEMA_VERSION),
            )
    kinds = objects(conn)
    for name, kind in OBJECTS.items():
        if kind == "table" and kinds.get(name) != "table":
            raise StorageError(
                f"{where} is not a ttcli database (or a damaged one): its table {name} is "
                f"{'a ' + kinds[name] if name in kinds else 'missing'}; use another database"
            )


def _scalar(conn: psycopg.Connection[Any], sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def _foreign(where: str) -> StorageError:
    return StorageError(
        f"{where} holds another application's tables (a `checkpoints` table without ttcli's "
        "schema: LangGraph's PostgresSaver?); give ttcli a schema of its own "
        "(CREATE SCHEMA ttcli, and options=-csearch_path=ttcli in the DSN) or another database"
    )
