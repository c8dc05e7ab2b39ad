"""Running the CLI in tests: the order-agent fixture paths, a runner that rejects
tracebacks, and a dump of everything a file stores."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from ttcli.cli import cli

ROOT = Path(__file__).parent.parent
ORDER_AGENT = f"{ROOT}/fixtures/order_agent.py:graph"
REVIEW = f"{ROOT}/fixtures/review_workflow.py:builder"
#: a Send fan-out: `square` runs once per item
FAN_OUT = "import ttcli\nfrom tests.graphs import map_reduce\ngraph = map_reduce(ttcli)\n"
ORDER = {"request": "Please refund order 123, it arrived broken.", "tool_result": "", "log": []}

GRAPHS = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict
    from ttcli import StateGraph, START, END

    class S(TypedDict):
        log: Annotated[list, operator.add]

    def boom(state):
        raise ValueError("boom in b")

    failing = StateGraph(S)
    failing.add_node("a", lambda s: {"log": ["a"]})
    failing.add_node("b", boom)
    failing.add_edge(START, "a")
    failing.add_edge("a", "b")

    not_a_graph = 42
    """
)


#: a database a test runs commands on: a SQLite file, or a PostgreSQL DSN
Target = Path | str


def ttcli(db: Target, *args: str, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], input=stdin)
    assert "Traceback" not in result.output + result.stderr
    return result


def data(result: Result) -> Any:
    assert result.exit_code in (0, 4), result.stderr
    return json.loads(result.stdout)


def dump(db: Target) -> list[tuple[Any, ...]]:
    """Everything stored, to show that a failing command changed nothing."""
    if isinstance(db, str) and db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            names = pg.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            ).fetchall()
            return [
                (t, sorted(pg.execute(f"SELECT * FROM {t}").fetchall(), key=repr))
                for (t,) in sorted(names)
            ]
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [(t, sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)) for t in tables]


@contextmanager
def write_lock_held(db: Target, thread: str) -> Iterator[None]:
    """Another process in the middle of a write transaction on `thread`: SQLite's write lock
    (the whole file's), or on PostgreSQL the thread's lock (schema-postgres.sql)."""
    if isinstance(db, str) and db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            pg.execute(
                "SELECT pg_advisory_xact_lock("
                "hashtextextended(%s, 'threads'::regclass::oid::bigint))",
                (thread,),
            )
            yield
            pg.rollback()
        return
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def edit_rows(db: Target, *statements: str) -> None:
    """Another tool changes the database's rows behind ttcli's back."""
    if isinstance(db, str) and db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            for statement in statements:
                pg.execute(statement.encode())
        return
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()
