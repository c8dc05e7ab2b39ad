"""Files damaged or forged on purpose: chains of values or of checkpoint deltas that loop or
never end, SQL objects ttcli did not create, and read-only commands on files they must not
change. Every command ends within seconds with one line and its exit code; nothing is written.

The CLI runs in a real process with a timeout, so a walk that never ends fails the test
instead of hanging the suite."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import msgpack
import pytest

from tests import graphs
from tests.clitools import ORDER, ORDER_AGENT, dump, ttcli
from ttcli import END, START, StateGraph
from ttcli.errors import StorageError
from ttcli.savers import serde
from ttcli.savers.sqlite import SqliteSaver

GUARD = 30  # seconds: far above what any of these commands needs, so only a hang trips it
LONG_CHAIN = 1_100_000  # more appends than a chain may ever have (blobs.CHAIN_DEPTH_MAX)

CONFIG = {"configurable": {"thread_id": "t"}}
READS = {
    "threads": ["threads"],
    "show": ["show", "latest", "-t", "t"],
    "diff": ["diff", "latest~1", "latest", "-t", "t"],
}


def run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ttcli", "--db", str(db), *args],
        capture_output=True, text=True, check=False, timeout=GUARD,
    )  # fmt: skip


@pytest.fixture
def order_db(tmp_path: Path) -> Path:
    db = tmp_path / "order.db"
    assert ttcli(db, "run", ORDER_AGENT, "-t", "t", "--input", json.dumps(ORDER)).exit_code == 0
    return db


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file in the folder: its mtime and bytes."""
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.iterdir()}


@contextlib.contextmanager
def opened(db: Path) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection to the file, committed and closed after the block."""
    conn = sqlite3.connect(db)
    try:
        yield conn
        conn.commit()
    finally:
        conn.close()


def edit(db: Path, *statements: str) -> None:
    with opened(db) as conn:
        for statement in statements:
            conn.execute(statement)


def latest_log_ref(db: Path, key: int) -> None:
    """Point the latest checkpoint's `log` channel at blob `key`."""
    with opened(db) as conn:
        names = {name: k for k, name in conn.execute("SELECT name_key, name FROM names")}
        checkpoint_id, state = conn.execute(
            "SELECT checkpoint_id, state FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        depth, channels, seen, updated, writes = serde.loads(state)
        channels[names["log"]] = [999, serde.Ref(key)]
        conn.execute(
            "UPDATE checkpoints SET state = ? WHERE checkpoint_id = ?",
            (serde.dumps([depth, channels, seen, updated, writes]), checkpoint_id),
        )


def endless_appends(db: Path) -> None:
    # a chain of appends, each to the one before, longer than any writer makes
    with opened(db) as conn:
        (first,) = conn.execute("SELECT max(blob_key) + 1 FROM blobs").fetchone()
        conn.execute(
            "INSERT INTO blobs (blob_key, base_key, value) "
            "WITH RECURSIVE n (k) AS (SELECT ? UNION ALL SELECT k + 1 FROM n WHERE k < ?) "
            "SELECT k, CASE WHEN k > ? THEN k - 1 END, X'91a178' FROM n",
            (first, first + LONG_CHAIN, first),
        )
    latest_log_ref(db, first + LONG_CHAIN)


def deltas_in_a_loop(db: Path) -> None:
    # every checkpoint a delta whose parent is the next one, the newest's the oldest
    with opened(db) as conn:
        rows = conn.execute("SELECT checkpoint_id, state FROM checkpoints ORDER BY 1").fetchall()
        parents = [i for i, _ in rows[1:] + rows[:1]]
        for (child, state), parent in zip(rows, parents, strict=True):
            _depth, *rest = serde.loads(state)
            conn.execute(
                "UPDATE checkpoints SET parent_id = ?, state = ? WHERE checkpoint_id = ?",
                (parent, serde.dumps([5, *rest]), child),
            )


def sql(*statements: str) -> Callable[[Path], None]:
    return lambda db: edit(db, *statements)


def typed_log(levels: int, lists: int) -> Callable[[Path], None]:
    """The latest log a tuple in a tuple ... `levels` deep, each holding `lists` lists in one
    another: each level is a call of msgpack's, whose frames filled the C stack (the process
    died of a segmentation fault)"""
    return lambda db: _typed_log(db, levels, lists)


def _typed_log(db: Path, levels: int, lists: int) -> None:
    value = serde.dumps([])
    for _ in range(levels):
        value = msgpack.packb(msgpack.ExtType(serde.TUPLE, b"\x91" * (lists + 1) + value))
    with opened(db) as conn:
        (key,) = conn.execute("SELECT max(blob_key) + 1 FROM blobs").fetchone()
        conn.execute("INSERT INTO blobs (blob_key, value) VALUES (?, ?)", (key, value))
    latest_log_ref(db, key)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "typed-values-300-deep": typed_log(300, 0),
    "typed-values-20-deep-of-1000-lists": typed_log(20, 1000),
    # every append chain's oldest blob made an append to itself
    "append-to-itself": sql(
        "UPDATE blobs SET base_key = blob_key WHERE blob_key IN (SELECT base_key FROM blobs)"
    ),
    # the oldest blob of a chain made an append to the newest: a loop through the whole chain
    "appends-in-a-loop": sql(
        "UPDATE blobs SET base_key = (SELECT max(blob_key) FROM blobs WHERE base_key IS NOT NULL) "
        "WHERE blob_key = (SELECT min(base_key) FROM blobs)"
    ),
    "endless-appends": endless_appends,
    # the latest checkpoint (stored as a delta) made its own parent
    "delta-on-itself": sql(
        "UPDATE checkpoints SET parent_id = checkpoint_id "
        "WHERE checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints)"
    ),
    "deltas-in-a-loop": deltas_in_a_loop,
}


@pytest.mark.parametrize("command", list(READS), ids=list(READS))
@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_looping_or_endless_chain_is_exit_6_in_one_line(
    order_db: Path, damage: str, command: str
) -> None:
    DAMAGE[damage](order_db)
    before = snapshot(order_db.parent)
    done = run(order_db, *READS[command])
    assert done.returncode == 6, done.stderr
    line, *more = done.stderr.splitlines()
    assert more == [] and line.startswith("Error: ") and "does not read" in line, done.stderr
    assert "RecursionError" not in line  # says what is wrong with the file, not with ttcli
    assert snapshot(order_db.parent) == before


@pytest.mark.parametrize("column", ["state", "parent_writes"])
def test_a_prune_of_a_row_of_the_wrong_shape_is_exit_6_in_one_line_and_deletes_nothing(
    order_db: Path, column: str
) -> None:
    """A row whose state or moved pending writes decode to something ttcli never stores (an
    int): what it points at cannot be known, so nothing of the page goes."""
    edit(order_db, f"UPDATE checkpoints SET {column} = x'01' WHERE step = 1")
    with opened(order_db) as conn:
        before = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    done = run(order_db, "prune", "--older-than", "0s", "--keep-last", "1", "--yes")
    assert (done.returncode, done.stdout) == (6, ""), done.stderr
    assert done.stderr == f"Error: {WRONG_SHAPE[column]}\n"
    with opened(order_db) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone() == before


@pytest.mark.parametrize(
    "payload",
    [msgpack.packb("7"), msgpack.packb(-1), msgpack.packb(2**63), msgpack.packb(1) * 2, b""],
    ids=["text", "negative", "beyond-int64", "two-ints", "empty"],
)  # fmt: skip
def test_a_blob_reference_that_is_no_key_is_exit_6_in_one_line_and_prune_deletes_nothing(
    order_db: Path, payload: bytes
) -> None:
    """A forged reference (ext 13 holding anything but one unsigned int) in a row a prune
    would delete: what the row points at cannot be known, so nothing goes; reads say so."""
    with opened(order_db) as conn:
        checkpoint_id, state = conn.execute(
            "SELECT checkpoint_id, state FROM checkpoints WHERE step = 1"
        ).fetchone()
        depth, channels, *rest = serde.loads(state)
        channels[min(channels)] = [999, msgpack.ExtType(serde.REF, payload)]
        conn.execute(
            "UPDATE checkpoints SET state = ? WHERE checkpoint_id = ?",
            (msgpack.packb([depth, channels, *rest]), checkpoint_id),
        )
        before = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    done = run(order_db, "prune", "--older-than", "0s", "--keep-last", "1", "--yes")
    assert (done.returncode, done.stdout) == (6, ""), done.stderr
    assert done.stderr.count("\n") == 1 and "is not a key" in done.stderr, done.stderr
    with opened(order_db) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone() == before
    for read in (["history", "-t", "t"], ["show", str(uuid.UUID(bytes=checkpoint_id)), "-t", "t"]):
        done = run(order_db, *read)
        assert done.returncode == 6 and done.stderr.count("\n") == 1, done.stderr
        assert "does not read: undecodable ext type 13: a blob reference is not" in done.stderr


WRONG_SHAPE = {
    "state": "a stored checkpoint state is not of ttcli's shape",
    "parent_writes": "stored pending writes are not of ttcli's shape",
}


def test_a_loop_of_parents_is_exit_6_when_copying_a_lineage(order_db: Path) -> None:
    # the first checkpoint (a full state) made a child of the latest: its ancestors loop
    edit(
        order_db,
        "UPDATE checkpoints SET parent_id = (SELECT max(checkpoint_id) FROM checkpoints) "
        "WHERE checkpoint_id = (SELECT min(checkpoint_id) FROM checkpoints)",
    )
    before = snapshot(order_db.parent)
    done = run(order_db, "fork", "latest", "-t", "t", "--to-thread", "u")
    assert (done.returncode, done.stdout) == (6, "")
    assert done.stderr.startswith("Error: checkpoint ") and done.stderr.endswith(
        " of thread 't' is its own ancestor (its parents loop); `ttcli verify` lists what else "
        "is damaged\n"
    )
    assert snapshot(order_db.parent) == before


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_verify_reports_a_looping_or_endless_chain(order_db: Path, damage: str) -> None:
    DAMAGE[damage](order_db)
    done = run(order_db, "verify", "--json")
    assert done.returncode == 6, done.stderr
    problems = [f for f in json.loads(done.stdout) if f["problem"]]
    assert problems and all(f["thread_id"] in ("t", "-") for f in problems)


# -- reading never writes


READERS = {
    **READS,
    "history": ["history", "-t", "t"],
    "tree": ["tree", "-t", "t"],
    "verify": ["verify"],
}


@pytest.mark.parametrize("command", list(READERS), ids=list(READERS))
def test_reading_commands_leave_the_file_and_its_folder_as_they_were(
    order_db: Path, command: str
) -> None:
    before = snapshot(order_db.parent)
    done = run(order_db, *READERS[command])
    assert done.returncode == 0, done.stderr
    assert snapshot(order_db.parent) == before


@pytest.mark.parametrize("command", list(READERS), ids=list(READERS))
def test_reading_an_empty_file_is_exit_3_and_writes_nothing(tmp_path: Path, command: str) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    before = snapshot(tmp_path)
    done = run(db, *READERS[command])
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        f"Error: no ttcli database in {db}: the file is empty; run a graph first (ttcli run)\n"
    )
    assert snapshot(tmp_path) == before


def test_reading_the_null_device_creates_nothing_beside_it() -> None:
    folder = Path(os.devnull).parent
    before = sorted(p.name for p in folder.iterdir())
    done = run(Path(os.devnull), "threads")
    assert done.returncode == 3, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_read_only_saver_reads_and_refuses_to_write(order_db: Path) -> None:
    before = snapshot(order_db.parent)
    with SqliteSaver.from_conn_string(order_db, readonly=True) as saver:
        latest = saver.get_tuple(CONFIG)
        assert latest is not None and latest.metadata["step"] == 4
        with pytest.raises(StorageError, match=r"^.* was opened for reading only: .*$"):
            saver.put(CONFIG, latest.checkpoint, {"source": "update", "step": 5}, {})
    assert snapshot(order_db.parent) == before


@pytest.mark.parametrize(
    "folder",
    ["a?b#c%41 d", "été", os.fsdecode(b"not-utf8-\xff"), "//"],
    ids=["uri-characters", "non-ascii", "not-utf-8", "double-slash"],
)
def test_a_file_read_only_is_the_file_its_path_names(tmp_path: Path, folder: str) -> None:
    """Reading opens the file by a `file:` URI (see sqlite/migrations.py): the characters a
    URI gives a meaning to, a name that is not UTF-8 and a path beginning `//` name the file
    itself, not another or none."""
    db = os.path.join(str(tmp_path), folder, "t.db") if folder != "//" else f"/{tmp_path}/t.db"
    os.makedirs(os.path.dirname(db), exist_ok=True)
    with SqliteSaver.from_conn_string(db) as saver:
        app = graphs.counter_loop(SimpleNamespace(StateGraph=StateGraph, START=START, END=END))
        app.compile(checkpointer=saver).invoke({"n": 0}, CONFIG)
    with SqliteSaver.from_conn_string(db, readonly=True) as reader:
        latest = reader.get_tuple(CONFIG)
        assert latest is not None and latest.checkpoint["channel_values"]["trail"] == [1, 2, 3]
    if folder != os.fsdecode(b"not-utf8-\xff"):  # the command line takes UTF-8 alone
        shown = ttcli(Path(db), "show", "-t", "t", "--format", "json")
        assert shown.exit_code == 0 and json.loads(shown.stdout)["values"]["n"] == 3, shown.output
    assert sorted(os.listdir(os.path.dirname(db))) == ["t.db"]  # and it made no other file


def test_odd_db_names_read_the_file_or_fail_in_one_line(order_db: Path, tmp_path: Path) -> None:
    assert ttcli(f"{order_db}/", "threads").exit_code == 0  # a trailing / names the file
    imported = ttcli(tmp_path / "copy.db", "import", f"{order_db}/")
    assert imported.exit_code == 0, imported.stderr
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    for name, code, says in (
        (tmp_path / "loop1", 6, "Too many levels of symbolic links"),
        ("", 3, "no database at "),
    ):
        done = ttcli(str(name), "threads")
        assert (done.exit_code, done.stderr.count("\n")) == (code, 1), done.stderr
        assert says in done.stderr
    for readonly in (True, False):  # a URI's %00 would end the name early: another file
        with pytest.raises(StorageError, match="cannot hold a NUL character"):
            SqliteSaver(f"{order_db}\x00other", readonly=readonly)


# -- SQL objects ttcli did not create

TRIGGER = (
    "CREATE TRIGGER wipe_others AFTER INSERT ON checkpoints BEGIN "
    "DELETE FROM checkpoints WHERE thread_key != NEW.thread_key; END"
)
ENDLESS = "WITH RECURSIVE n (k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n)"


def test_verify_lists_every_sql_object_schema_sql_does_not_define(order_db: Path) -> None:
    edit(
        order_db,
        TRIGGER,
        "CREATE VIEW busy AS SELECT * FROM threads",
        "CREATE INDEX by_step ON checkpoints (step)",
        "CREATE TABLE notes (x)",
    )
    done = run(order_db, "verify", "--json")
    assert done.returncode == 6, done.stderr
    found = [f["what"] for f in json.loads(done.stdout) if f["where"] == "file"]
    assert found == [
        "index by_step on checkpoints is not part of ttcli's schema",
        "table notes is not part of ttcli's schema",
        "trigger wipe_others on checkpoints is not part of ttcli's schema",
        "view busy is not part of ttcli's schema",
    ]


def test_a_foreign_trigger_on_a_ttcli_table_is_refused_for_writing(order_db: Path) -> None:
    edit(order_db, TRIGGER)
    before = dump(order_db)
    done = run(order_db, "run", ORDER_AGENT, "-t", "other", "--input", json.dumps(ORDER))
    assert (done.returncode, done.stdout) == (6, "")
    assert done.stderr == (
        f"Error: {order_db} has a trigger wipe_others on table checkpoints that ttcli did not "
        "create: it would run on ttcli's own writes; drop it (DROP TRIGGER wipe_others) or work "
        "on a copy\n"
    )
    assert dump(order_db) == before
    with pytest.raises(StorageError, match="has a trigger wipe_others"):
        SqliteSaver(order_db)
    assert run(order_db, "history", "-t", "t").returncode == 0  # reading cannot fire it


PLACED = {
    "names-view": (
        "DROP TABLE names",
        f"CREATE VIEW names AS {ENDLESS} SELECT k AS name_key, 'x' AS name FROM n",
    ),
    "blobs-view": (
        "DROP TABLE blobs",
        f"CREATE VIEW blobs AS {ENDLESS} "
        "SELECT k AS blob_key, NULL AS base_key, 0 AS is_record, X'90' AS value FROM n",
    ),
    "threads-view": (
        "DROP VIEW checkpoint_list",
        "ALTER TABLE threads RENAME TO old_threads",
        f"CREATE VIEW threads AS {ENDLESS} SELECT k AS thread_key, 't' AS thread_id, "
        "'' AS checkpoint_ns, NULL AS info, 1 AS checkpoints FROM n",
    ),
}


@pytest.mark.parametrize("command", list(READERS), ids=list(READERS))
@pytest.mark.parametrize("placed", list(PLACED), ids=list(PLACED))
def test_a_view_in_place_of_a_ttcli_table_is_refused_not_read(
    order_db: Path, placed: str, command: str
) -> None:
    edit(order_db, *PLACED[placed])
    before = snapshot(order_db.parent)
    done = run(order_db, *READERS[command])
    assert (done.returncode, done.stdout) == (6, "")
    name = placed.split("-")[0]
    assert done.stderr == (
        f"Error: {order_db} is not a ttcli database (or a damaged one): {name} is a view, "
        "where ttcli has a table; use another file\n"
    )
    assert snapshot(order_db.parent) == before
