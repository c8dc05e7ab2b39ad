"""PostgreSQL transactions run in pipeline mode: a statement whose result is not read is not
waited for. What must not change: a failed statement, read or not, fails its whole
transaction (or batch) and nothing of it is stored; `rowcount` is the statement's. (What
it saves is measured by `make bench-postgres`.)"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.pg import new_dsn
from ttcli.errors import StorageError, TtcliError
from ttcli.savers.postgres import PostgresSaver
from ttcli.savers.sql.db import scalar

NAMES = "SELECT count(*) FROM names WHERE name LIKE 'pipeline-%'"


@pytest.fixture
def saver() -> Iterator[PostgresSaver]:
    with PostgresSaver.from_conn_string(new_dsn()) as postgres_saver:
        yield postgres_saver


def names(saver: PostgresSaver) -> int:
    with saver.connection.read() as conn:
        return int(scalar(conn, NAMES))


def test_a_failed_statement_nobody_read_fails_the_transaction(saver: PostgresSaver) -> None:
    with pytest.raises(StorageError), saver.connection.write() as conn:
        conn.execute("INSERT INTO names (name) VALUES ('pipeline-kept?')")
        conn.execute("INSERT INTO names (name) VALUES (NULL)")  # fails; no result read
        conn.execute("INSERT INTO names (name) VALUES ('pipeline-after')")
    assert names(saver) == 0
    with saver.connection.write() as conn:  # the pooled connection is usable again
        conn.execute("INSERT INTO names (name) VALUES ('pipeline-ok')")
    assert names(saver) == 1


def test_a_failed_statement_caught_in_a_write_still_fails_it(saver: PostgresSaver) -> None:
    with pytest.raises(StorageError), saver.connection.write() as conn:
        conn.execute("INSERT INTO names (name) VALUES ('pipeline-first')")
        with pytest.raises(psycopg.Error):
            conn.execute("INSERT INTO names (name) VALUES (NULL) RETURNING name_key").fetchone()
    assert names(saver) == 0


def test_a_failed_read_raises_its_own_error(saver: PostgresSaver) -> None:
    with pytest.raises(TtcliError, match="no_such_table"), saver.connection.read() as conn:
        conn.execute("SELECT * FROM no_such_table").fetchall()
    assert names(saver) == 0


def test_a_failed_statement_fails_the_whole_batch(saver: PostgresSaver) -> None:
    with pytest.raises(StorageError), saver.batch():
        with saver.connection.write() as conn:
            conn.execute("INSERT INTO names (name) VALUES ('pipeline-first')")
        with saver.connection.write() as conn:
            conn.execute("INSERT INTO names (name) VALUES (NULL)")
        with saver.connection.write() as conn:
            conn.execute("INSERT INTO names (name) VALUES ('pipeline-last')")
    assert names(saver) == 0


def test_rowcount_is_the_statements(saver: PostgresSaver) -> None:
    with saver.connection.write() as conn:
        conn.execute("INSERT INTO names (name) VALUES ('pipeline-a'), ('pipeline-b')")
        changed = conn.execute("UPDATE names SET name = name WHERE name LIKE 'pipeline-%'")
        none = conn.execute("UPDATE names SET name = name WHERE name = 'pipeline-none'")
        assert (changed.rowcount, none.rowcount) == (2, 0)
