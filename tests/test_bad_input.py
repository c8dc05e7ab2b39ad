"""Bad input, through the CLI and the library: each gets its documented exit code or
exception and one clear line, and the file it touched is left exactly as it was."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from fixtures.order_agent import REQUEST, build
from tests.clitools import ORDER_AGENT, Target, dump, ttcli
from tests.conftest import BACKENDS
from ttcli import Command
from ttcli.configs import CheckpointRef
from ttcli.errors import (
    AmbiguousRefError,
    CheckpointNotFoundError,
    ConfigError,
    CorruptValueError,
    EmptyInputError,
    InputError,
    InvalidFilterError,
    InvalidUpdateError,
    SchemaVersionError,
    SerializationError,
    StorageError,
)
from ttcli.ops.durations import moment_before
from ttcli.ops.prune import PrunePolicy
from ttcli.ops.refs import resolve
from ttcli.runtime.compiled import CompiledStateGraph
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import is_dsn, open_saver

THREAD = {"configurable": {"thread_id": "order:123"}}
SQL_KEY = "source') OR 1>0 --"


@dataclass(frozen=True)
class Files:
    db: Target  # holds thread order:123
    graphs: Path  # a Python file with a failing graph and a non-graph
    tmp: Path
    shared: Path  # a folder that users other than root may enter


# -- files that are wrong in some way; each function returns the path to use as the database


def text_file(f: Files) -> Path:
    path = f.tmp / "notes.txt"
    path.write_text("not a database\n" * 100)
    return path


def other_sqlite(f: Files) -> Path:
    path = f.tmp / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    return path


def truncated(f: Files) -> Path:
    path = f.tmp / "truncated.db"
    data = Path(f.db).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _edited(f: Files, name: str, statement: str, postgres: str) -> Target:
    """A copy of the order database with `statement` run on it (on PostgreSQL, whose
    database is the test's own, the order database itself with `postgres` run on it)."""
    if is_dsn(f.db):
        import psycopg

        with psycopg.connect(str(f.db)) as pg:
            pg.execute(postgres.encode())
        return f.db
    path = f.tmp / name
    shutil.copy(f.db, path)
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def newer(f: Files) -> Target:
    return _edited(f, "newer.db", "PRAGMA user_version = 99", "UPDATE ttcli_meta SET version = 99")


def corrupt_blobs(f: Files) -> Target:
    bad = "UPDATE blobs SET value = {}"
    return _edited(f, "corrupt.db", bad.format("X'c1c1c1'"), bad.format("'\\xc1c1c1'"))


#: what only a SQLite file can be (test_postgres_bad_input.py has PostgreSQL's own)
FILES_ONLY = {"text_file", "other_sqlite", "truncated", "read_only"}


def read_only(f: Files) -> Path:
    """A database this user may read but not write. Root may write anything, so there the
    command runs as `nobody` (see `as_file_owner_not`)."""
    path = f.shared / "readonly.db"
    shutil.copy(f.db, path)
    path.chmod(0o444)
    return path


@contextlib.contextmanager
def as_file_owner_not() -> Iterator[None]:
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)


# -- the table


@dataclass(frozen=True)
class Bad:
    name: str
    #: does the bad thing with the database path; a CLI row returns click's Result
    act: Callable[[Target, Files], Any]
    #: the CLI exit code, or the exception the library raises
    expect: int | type[Exception]
    #: a regex the one line (without "Error: ") must match in full
    line: str
    #: makes the file to use instead of the order database
    file: Callable[[Files], Target] | None = None


def cli(*args: str) -> Callable[[Target, Files], Result]:
    def act(path: Target, f: Files) -> Result:
        given = [a.replace("{graphs}", str(f.graphs)).replace("{tmp}", str(f.tmp)) for a in args]
        return ttcli(path, *given)

    return act


def api(call: Callable[[CompiledStateGraph, BaseSaver], Any]) -> Callable[[Target, Files], Any]:
    def act(path: Target, f: Files) -> Any:
        with closing(open_saver(path)) as saver:
            return call(build().compile(checkpointer=saver), saver)

    return act


def opening(path: Target, f: Files) -> Any:
    with closing(open_saver(path)) as saver:
        return saver.get_tuple(THREAD)


ID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
KEYS = r"\(request, order_id, tool, tool_result, reply, log\)"
NOT_TTCLI = r".* is not a ttcli database \(.*\)(; use another file)?"
USAGE = r" \(see 'ttcli \w+ --help'\)"

BAD = [
    # -- the command line
    Bad("malformed-json", cli("run", ORDER_AGENT, "-t", "x", "--input", "{bad"), 2,
        r"invalid JSON in --input: Expecting property name enclosed in double quotes at line 1 column 2"),
    Bad("input-not-an-object", cli("run", ORDER_AGENT, "-t", "x", "--input", "[1, 2]"), 2,
        rf"--input must be a JSON object of state keys {KEYS}, not \[1, 2\]"),
    Bad("input-unknown-key", cli("run", ORDER_AGENT, "-t", "x", "--input", '{"nokey": 1}'), 2,
        rf"--input names 'nokey', not a key of the graph's state {KEYS}"),
    Bad("unknown-thread", cli("history", "-t", "nobody"), 3,
        r"thread 'nobody' not found: it has no checkpoints"),
    Bad("unknown-ref", cli("show", "abcdef12", "-t", "order:123"), 3,
        r"checkpoint 'abcdef12' not found in thread 'order:123'"),
    Bad("not-a-ref", cli("show", "yesterday", "-t", "order:123"), 2,
        r"invalid checkpoint ref 'yesterday': use a checkpoint id, a unique prefix of one, a short id, or latest, optionally followed by ~N"),
    Bad("ambiguous-prefix", cli("show", "1", "-t", "order:123"), 2,
        rf"checkpoint ref '1' is ambiguous in thread 'order:123': it matches 6 ids \(({ID}, ){{5}}\.\.\.\); give more characters"),
    Bad("too-far-back", cli("show", "latest~9", "-t", "order:123"), 3,
        r"checkpoint 'latest~9' not found in thread 'order:123': 9 back from latest passes its first checkpoint after 5"),
    Bad("unknown-diff-ref", cli("diff", "latest", "abcdef12", "-t", "order:123"), 3,
        r"checkpoint 'abcdef12' not found in thread 'order:123'"),
    Bad("bad-duration", cli("prune", "--older-than", "7 days"), 2,
        r"invalid duration '7 days': use a number and a unit \(90s, 30m, 12h, 7d, 2w\) or an ISO date such as 2026-11-01"),
    Bad("filter-key-with-sql", cli("history", "-t", "order:123", "--filter", f"{SQL_KEY}=x"), 2,
        r"Invalid filter key: \"source'\) OR 1>0 --\"\. Filter keys must contain only alphanumeric characters, underscores, dots, and hyphens\."),
    Bad("filter-without-value", cli("history", "-t", "order:123", "--filter", "nokey"), 2,
        r"invalid --filter 'nokey': use KEY=VALUE"),
    Bad("unknown-as-node", cli("update", "-t", "order:123", "--as-node", "nope", "--set", "tool=1"), 2,
        r"--as-node 'nope' is not a node of the graph; its nodes are: __start__, understand, plan, call_tool, respond"),
    Bad("set-unknown-key", cli("update", "-t", "order:123", "--as-node", "plan", "--set", "nokey=1"), 2,
        rf"--set names 'nokey', not a key of the graph's state {KEYS}"),
    Bad("set-without-equals", cli("update", "-t", "order:123", "--as-node", "plan", "--set", "tool"), 2,
        r"invalid --set 'tool': use KEY=VALUE"),
    Bad("update-both-ways", cli("update", "-t", "order:123", "--as-node", "plan", "--set", "tool=1", "--values", "{}"), 2,
        r"give the values with either --set KEY=JSON \(repeatable\) or --values JSON" + USAGE),
    Bad("values-not-an-object", cli("update", "-t", "order:123", "--as-node", "plan", "--values", "3"), 2,
        rf"--values must be a JSON object of state keys {KEYS}, not 3"),
    Bad("missing-target", cli("run", "no_such_module:graph", "-t", "x", "--input", "{}"), 3,
        r"graph TARGET 'no_such_module:graph' does not import: ModuleNotFoundError: No module named 'no_such_module'"),
    Bad("target-not-a-graph", cli("run", "{graphs}:not_a_graph", "-t", "x", "--input", "{}"), 3,
        r"graph TARGET '.*graphs.py:not_a_graph' is a int, not a StateGraph, a compiled graph or a function returning one"),
    Bad("limit-zero", cli("history", "-t", "order:123", "--limit", "0"), 2,
        r"Invalid value for '--limit': 0 is not in the range x>=1\." + USAGE),
    Bad("limit-not-a-number", cli("history", "-t", "order:123", "--limit", "abc"), 2,
        r"Invalid value for '--limit': 'abc' is not a valid integer range\." + USAGE),
    Bad("unknown-format", cli("history", "-t", "order:123", "--format", "xml"), 2,
        r"Invalid value for '--format': 'xml' is not one of 'table', 'json', 'jsonl', 'csv'\." + USAGE),
    Bad("unknown-option", cli("history", "-t", "order:123", "--colour"), 2,
        r"No such option '--colour'\." + USAGE),
    Bad("missing-thread", cli("history"), 2, r"Missing option '--thread' / '-t'\." + USAGE),
    Bad("negative-keep-last", cli("prune", "--older-than", "1d", "--keep-last", "-1"), 2,
        r"Invalid value for '--keep-last': -1 is not in the range x>=0\." + USAGE),
    Bad("prune-without-rule", cli("prune", "--yes"), 2,
        r"say what to delete: --older-than DUR and/or --idle DUR" + USAGE),
    Bad("prune-thread-and-prefix",
        cli("prune", "--older-than", "0s", "--thread", "order:123", "--prefix", "o", "--yes"), 2,
        r"give --thread ID or --prefix P, not both: one thread, or the threads whose id starts "
        r"with P" + USAGE),
    Bad("resume-nothing-waits", cli("resume", "-t", "order:123", "--value", "1", "--id", "ab"), 2,
        r"thread 'order:123' is not waiting on an interrupt: nothing to answer"),
    Bad("resume-unreadable-file", cli("resume", "-t", "order:123", "--value", "@{tmp}/no.json"), 2,
        r"cannot read --value from .*no.json: No such file or directory"),
    Bad("no-database", cli("--db", "{tmp}/missing.db", "history", "-t", "order:123"), 3,
        r"no database at .*missing.db: run a graph first \(ttcli run\), or pass --db or TTCLI_DB"),
    Bad("text-file", cli("threads"), 6, NOT_TTCLI, text_file),
    Bad("other-sqlite-file", cli("threads"), 6, NOT_TTCLI, other_sqlite),
    Bad("truncated-file", cli("history", "-t", "order:123"), 6, NOT_TTCLI, truncated),
    Bad("newer-schema", cli("threads"), 6,
        r".*(newer\.db|postgresql://\S+) uses ttcli schema version 99, newer than this ttcli understands \(7\): upgrade ttcli to read it",
        newer),
    Bad("corrupt-blob", cli("show", "latest", "-t", "order:123"), 6,
        rf"checkpoint {ID} of thread 'order:123' does not read: .*", corrupt_blobs),
    Bad("read-only-file", cli("update", "-t", "order:123", "--as-node", "plan", "--set", "tool=1"), 6,
        r".*readonly.db is read-only for this user: ttcli writes to the file and its folder even to read it \(SQLite WAL\); fix the permissions or work on a copy",
        read_only),
    # -- the library
    Bad("api-unserialisable-value",
        api(lambda g, s: g.invoke({**REQUEST, "request": object()}, {"configurable": {"thread_id": "u"}})),
        SerializationError,
        r"cannot store __start__.request: type builtins.object is not serialisable; use plain data, a dataclass, a named tuple, an enum or a pydantic model"),
    Bad("api-unknown-as-node", api(lambda g, s: g.update_state(THREAD, {"tool": "x"}, as_node="nope")),
        InvalidUpdateError, r"Node nope does not exist"),
    Bad("api-update-not-a-dict", api(lambda g, s: g.update_state(THREAD, [1, 2], as_node="plan")),
        InvalidUpdateError, r"Expected dict, got \[1, 2\]"),
    Bad("api-filter-key-with-sql", api(lambda g, s: list(g.get_state_history(THREAD, filter={SQL_KEY: 1}))),
        InvalidFilterError, r"Invalid filter key: .*"),
    Bad("api-unknown-checkpoint",
        api(lambda g, s: g.invoke(None, CheckpointRef("order:123", "", "1f1ec947-00bc-6cc8-8005-9dcf1cc61c34").to_config())),
        CheckpointNotFoundError, r"checkpoint '1f1ec947-00bc-6cc8-8005-9dcf1cc61c34' not found in thread 'order:123'"),
    Bad("api-no-input", api(lambda g, s: g.invoke(None, {"configurable": {"thread_id": "empty"}})),
        EmptyInputError, r"Received no input for __start__"),
    Bad("api-empty-command", api(lambda g, s: g.invoke(Command(), THREAD)),
        EmptyInputError, r"Received empty Command input"),
    Bad("api-no-thread-id", api(lambda g, s: g.invoke(REQUEST, {"configurable": {}})),
        ConfigError, r"Checkpointer requires one or more of the following 'configurable' keys: thread_id, checkpoint_ns, checkpoint_id"),
    Bad("api-ambiguous-prefix", api(lambda g, s: resolve(s, CheckpointRef("order:123"), "1")),
        AmbiguousRefError, r"checkpoint ref '1' is ambiguous .*"),
    Bad("api-bad-duration", lambda p, f: moment_before("soon", datetime.now(UTC)),
        InputError, r"invalid duration 'soon': .*"),
    Bad("api-negative-keep-last", lambda p, f: PrunePolicy(keep_last=-1),
        ValueError, r"keep_last must be 0 or more"),
    Bad("api-text-file", opening, StorageError, NOT_TTCLI, text_file),
    Bad("api-newer-schema", opening, SchemaVersionError, r".*upgrade ttcli to read it", newer),
    Bad("api-corrupt-blob", opening, CorruptValueError, r".*", corrupt_blobs),
]  # fmt: skip


@pytest.fixture
def shared() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp())  # pytest's own folders are root's alone
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def content(path: Target, *, ttcli_file: bool) -> Any:
    return dump(path) if ttcli_file or is_dsn(path) else Path(path).read_bytes()


@pytest.mark.parametrize(
    ("bad", "backend"),
    [
        pytest.param(bad, backend, id=f"{backend}-{bad.name}")
        for bad in BAD
        for backend in BACKENDS
        if backend == "sqlite" or bad.file is None or bad.file.__name__ not in FILES_ONLY
    ],
    indirect=["backend"],
)
def test_bad_input_is_one_clear_line_and_changes_nothing(
    bad: Bad, db: Target, graphs_file: Path, tmp_path: Path, shared: Path
) -> None:
    f = Files(db, graphs_file, tmp_path, shared)
    path = bad.file(f) if bad.file else db
    before = content(path, ttcli_file=bad.file is None)
    with as_file_owner_not() if bad.file is read_only else contextlib.nullcontext():
        if isinstance(bad.expect, int):
            result = bad.act(path, f)
            assert result.exit_code == bad.expect, result.stderr
            assert result.stdout == ""
            line, *more = result.stderr.splitlines()
            assert more == []
            assert line.startswith("Error: ")
            message = line.removeprefix("Error: ")
        else:
            with pytest.raises(bad.expect) as raised:
                bad.act(path, f)
            message = str(raised.value)
            assert "\n" not in message
    assert re.fullmatch(bad.line, message), message
    assert content(path, ttcli_file=bad.file is None) == before
