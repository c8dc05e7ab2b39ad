"""A PostgreSQL server for the tests: the DSN comes from TTCLI_TEST_PG (default: the project
machines' server, postgresql://postgres@127.0.0.1:5432/test). Each test run creates a database
of its own, and each test a schema of its own in it (a DSN whose search_path names it).

Without a server the PostgreSQL tests are skipped, saying why, except where CI is set:
there they fail.
"""

from __future__ import annotations

import atexit
import os
import uuid
from functools import cache
from urllib.parse import urlencode, urlsplit, urlunsplit

import pytest

DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def _with_database(dsn: str, database: str, **params: str) -> str:
    parts = urlsplit(dsn)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, query, ""))


@cache
def _run_database() -> str:
    """This run's database (dropped when the run ends), or why there is none."""
    try:
        import psycopg
    except ImportError as exc:
        return f"!psycopg is not installed ({exc}): pip install 'ttcli[postgres]'"
    server = os.environ.get("TTCLI_TEST_PG", DEFAULT)
    name = f"ttcli_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        return f"!no PostgreSQL at {server} (set TTCLI_TEST_PG): {str(exc).strip()}"

    def drop() -> None:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    atexit.register(drop)
    return _with_database(server, name)


def server_dsn() -> str:
    """This run's database; skips the test without a server (fails it under CI)."""
    found = _run_database()
    if found.startswith("!"):
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so PostgreSQL tests must run: {found[1:]}")
        pytest.skip(found[1:])
    return found


def new_dsn() -> str:
    """A DSN of an empty schema of its own in this run's database."""
    import psycopg

    database = server_dsn()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return _with_database(
        database, urlsplit(database).path.lstrip("/"), options=f"-csearch_path={schema}"
    )
