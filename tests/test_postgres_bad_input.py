"""Bad PostgreSQL targets: each is one clear line with its documented exit code, and nothing
is written (test_bad_input.py runs the rest of the bad inputs on both backends)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver as LangGraphPostgresSaver
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.clitools import ORDER, ORDER_AGENT, data, ttcli, write_lock_held
from tests.pg import new_dsn, server_dsn
from ttcli.errors import SchemaVersionError
from ttcli.savers.postgres import PostgresSaver

DOWN = "postgresql://postgres@127.0.0.1:1/test"  # nothing listens on port 1


def _tables(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY 1"
        ).fetchall()
    return [name for (name,) in rows]


def _as_user(dsn: str, user: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.hostname}:{parts.port or 5432}"))


def _fails(dsn: str, code: int, line: str, *args: str) -> None:
    result = ttcli(dsn, *(args or ("threads",)))
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    (message,) = result.stderr.splitlines()
    assert re.fullmatch("Error: " + line, message), message


@pytest.mark.parametrize(
    ("make", "code", "line"),
    [
        (
            lambda: DOWN,
            5,
            r"postgresql://\S+ is unreachable \(.*\): is the server up\? retry later",
        ),
        (
            lambda: server_dsn().rsplit("/", 1)[0] + f"/nodb_{uuid.uuid4().hex[:8]}",
            3,
            r'postgresql://\S+: database "nodb_\w+" does not exist; create it first \(createdb\)',
        ),
        (
            lambda: _as_user(server_dsn(), f"nobody_{uuid.uuid4().hex[:8]}"),
            6,
            r'postgresql://\S+: role "nobody_\w+" does not exist; check the user and password '
            r"in the DSN",
        ),
        (
            lambda: "postgresql://postgres@127.0.0.1:port/test",
            2,
            r"not a usable PostgreSQL DSN \(.*\): give postgresql://USER@HOST:PORT/DB",
        ),
        (
            lambda: "postgresql://[oops",
            2,
            r"not a usable PostgreSQL DSN \(.*\): give postgresql://USER@HOST:PORT/DB",
        ),
    ],
    ids=["server-down", "no-such-database", "no-such-user", "bad-port", "malformed"],
)
def test_a_dsn_that_cannot_be_used_is_one_line(make: object, code: int, line: str) -> None:
    server_dsn()  # skips (or fails under CI) without a server, like every PostgreSQL test
    assert callable(make)
    _fails(make(), code, line)
    _fails(make(), code, line, "run", "fixtures/order_agent.py:graph", "-t", "x", "--input", "{}")


def test_another_applications_checkpoints_table_is_refused_and_left_alone() -> None:
    dsn = new_dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE checkpoints (order_id int PRIMARY KEY, shipped date)")
        conn.execute("INSERT INTO checkpoints VALUES (7, '2026-11-30')")
    before = _tables(dsn)
    line = r"postgresql://\S+ holds another application's tables .*"
    _fails(dsn, 6, line)
    _fails(dsn, 6, line, "run", "fixtures/order_agent.py:graph", "-t", "x", "--input", "{}")
    assert _tables(dsn) == before


def test_langgraphs_tables_are_read_but_never_written() -> None:
    dsn = new_dsn()
    with LangGraphPostgresSaver.from_conn_string(dsn) as langgraph:
        langgraph.setup()
    before = _tables(dsn)
    line = r"postgresql://\S+ is a LangGraph PostgresSaver database, which ttcli reads .*"
    _fails(dsn, 6, line, "run", "fixtures/order_agent.py:graph", "-t", "x", "--input", "{}")
    read = ttcli(dsn, "threads")
    assert read.exit_code == 0, read.stderr
    assert read.stderr.endswith("is a LangGraph PostgresSaver database, read-only\nno threads\n")
    assert _tables(dsn) == before


@pytest.fixture
def login_without_create() -> Iterator[tuple[str, str]]:
    """A role that may log in and use a fresh schema, but not create in it; and its DSN."""
    dsn = new_dsn()
    role = f"ttcli_ro_{uuid.uuid4().hex[:8]}"
    schema = urlsplit(dsn).query.rpartition("%3D")[2]
    with psycopg.connect(server_dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
    try:
        yield dsn, _as_user(dsn, role)
    finally:
        with psycopg.connect(server_dsn(), autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{role}"')
            admin.execute(f'DROP ROLE "{role}"')


def test_no_permission_to_create_tables_is_one_line(
    login_without_create: tuple[str, str],
) -> None:
    owner, restricted = login_without_create
    line = r"postgresql://\S+: permission denied \(.*\); grant this user the rights .*"
    _fails(restricted, 6, line, "run", "fixtures/order_agent.py:graph", "-t", "x", "--input", "{}")
    assert _tables(owner) == []


@pytest.mark.parametrize("old", [5, 6])
def test_an_older_database_is_read_as_it_is_and_upgraded_when_written(old: int) -> None:
    """Versions 6 and 7 only add map deltas and a Send as ext 14: an older database reads,
    and the first writer marks it 7 so that an older ttcli refuses it instead of misreading
    what this one writes."""
    dsn = new_dsn()
    with PostgresSaver.from_conn_string(dsn):
        pass
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE ttcli_meta SET version = %s", (old,))
    with PostgresSaver.from_conn_string(dsn, readonly=True) as reader:
        assert list(reader.list_threads()) == []
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM ttcli_meta").fetchone() == (old,)
    with PostgresSaver.from_conn_string(dsn):
        pass
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM ttcli_meta").fetchone() == (7,)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE ttcli_meta SET version = 4")  # older than any ttcli wrote
    with (
        pytest.raises(SchemaVersionError, match="claims ttcli schema version 4"),
        PostgresSaver.from_conn_string(dsn),
    ):
        pass


def test_writers_of_other_threads_do_not_wait_for_a_thread_s_writer() -> None:
    """On PostgreSQL a writer locks its thread, not the database (schema-postgres.sql)."""
    dsn = new_dsn()
    request = json.dumps(ORDER)
    for thread in ("busy", "free"):
        assert ttcli(dsn, "run", ORDER_AGENT, "-t", thread, "--input", request).exit_code == 0
    with write_lock_held(dsn, "busy"):
        free = ttcli(dsn, "fork", "latest", "-t", "free", "--busy-timeout", "0.05")
        busy = ttcli(dsn, "fork", "latest", "-t", "busy", "--busy-timeout", "0.05")
        read = ttcli(dsn, "history", "-t", "busy", "--busy-timeout", "0.05")
    assert (free.exit_code, free.stderr) == (0, "")
    assert busy.exit_code == 5 and "is busy" in busy.stderr
    assert (read.exit_code, read.stderr) == (0, "")


def test_libpq_key_value_dsns_work_and_never_show_their_password() -> None:
    parts = conninfo_to_dict(new_dsn())
    dsn = make_conninfo("", **parts)  # host=... port=... dbname=... options=...
    result = ttcli(dsn, "run", ORDER_AGENT, "-t", "kv", "--input", json.dumps(ORDER))
    assert result.exit_code == 0, result.stderr
    assert data(ttcli(dsn, "threads", "--json"))[0]["thread_id"] == "kv"
    secret = make_conninfo("", **{**parts, "port": "1", "password": "S3CRET"})
    down = ttcli(secret, "threads")
    assert down.exit_code == 5 and "S3CRET" not in down.stderr
    # a key=value DSN may start with any of libpq's keys, not only host, port, dbname...
    ssl_first = make_conninfo("", **{"sslmode": "disable", **parts})
    assert ssl_first.startswith("sslmode=")
    assert data(ttcli(ssl_first, "threads", "--json"))[0]["thread_id"] == "kv"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u:S3CRET@127.0.0.1/test",
        "postgres+psycopg2://u:S3CRET@127.0.0.1/test",
        "mysql://u:S3CRET@127.0.0.1/test",
    ],
)
def test_a_url_ttcli_does_not_open_is_refused_without_its_password(
    tmp_path: Path, url: str
) -> None:
    """SQLAlchemy's spelling, or another database's URL, is exit 2 naming the scheme alone:
    not "no database at <the URL and its password>", nor a SQLite file made of it."""
    db = tmp_path / "ttcli.db"
    ttcli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER))
    for args in (
        [url, "threads"],
        [url, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER)],
        [db, "import", url],
        [url, "import", str(db)],
        [db, "prune", "--older-than", "0s", "--archive", url, "--yes"],
    ):
        result = ttcli(*args)
        assert (result.exit_code, result.stderr.count("\n")) == (2, 1), (args, result.stderr)
        assert "S3CRET" not in result.stderr and "postgresql://user@host" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ttcli.db"]


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://u:S3CRET@[::1/x",
        "postgresql://u:S3CRET@127.0.0.1:99999/test",
        "host=127.0.0.1 password=S3CRET port=abc",
        "host=127.0.0.1 password='S3 CRET' sslmode=bogus",
        "host=127.0.0.1 password=S3CRET x",
        "postgresql://u:S3 CRET@127.0.0.1/db",
        "postgresql://u:S3%zzCRET@127.0.0.1/db",
        "postgresql://u:S3CRET%00@127.0.0.1/db",
        "postgresql://127.0.0.1/db?password=S3%zzCRET",
        'postgresql://u:S3"CRET@[::1/db',
    ],
)
def test_a_malformed_dsn_is_refused_without_its_password(tmp_path: Path, dsn: str) -> None:
    """libpq quotes a DSN it cannot parse: the message is one line, exit 2, and no password."""
    for args in (
        [dsn, "threads"],
        [tmp_path / "ttcli.db", "import", dsn],
    ):
        result = ttcli(*args)
        assert (result.exit_code, result.stderr.count("\n")) == (2, 1), result.stderr
        assert "S3" not in result.stderr and "not a usable PostgreSQL DSN" in result.stderr
