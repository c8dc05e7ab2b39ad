"""What is specific to the SQLite file format: schema, versions, growth, safety, concurrency."""

from __future__ import annotations

import dataclasses
import enum
import json
import operator
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, TypedDict

import msgpack
import pytest
import sqlite_utils

from tests.test_saver_contract import config, make_checkpoint, put_chain, put_one
from ttcli import END, START, MessagesState, StateGraph
from ttcli.errors import (
    CorruptValueError,
    DatabaseBusyError,
    SchemaVersionError,
    SerializationError,
    StorageError,
)
from ttcli.savers import blob_writer, records, serde
from ttcli.savers.sqlite import SqliteSaver
from ttcli.savers.sqlite.migrations import SCHEMA_VERSION

ROOT = Path(__file__).parent.parent


def chat_app(saver: SqliteSaver) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [("assistant", "reply " + "x" * 190)]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=saver)


def structure(conn: sqlite3.Connection) -> dict[str, Any]:
    """Tables, views, columns and indexes, independent of how the SQL text was written."""
    found: dict[str, Any] = {}
    for kind, name, table in conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
    ):
        columns = [tuple(row) for row in conn.execute(f"PRAGMA table_xinfo('{name}')")]
        indexes = [tuple(row) for row in conn.execute(f"PRAGMA index_list('{name}')")]
        found[name] = (kind, table, columns, indexes)
    return found


def test_the_database_is_what_schema_sql_describes(db_path: Path) -> None:
    SqliteSaver(db_path).close()
    reference = sqlite3.connect(":memory:")
    reference.executescript((ROOT / "schema.sql").read_text())
    created = sqlite3.connect(db_path)
    assert structure(created) == structure(reference)
    assert created.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    assert created.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_version_is_refused_and_left_alone(db_path: Path) -> None:
    SqliteSaver(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(SchemaVersionError, match="schema version 99, newer than this ttcli"):
        SqliteSaver(db_path)
    assert db_path.read_bytes() == before


def test_a_foreign_sqlite_file_is_refused(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="is not a ttcli database"):
        SqliteSaver(db_path)
    assert [r[0] for r in sqlite3.connect(db_path).execute("SELECT name FROM sqlite_master")] == [
        "customers"
    ]


def test_a_file_that_is_not_sqlite_is_refused(db_path: Path) -> None:
    db_path.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(StorageError, match="is not a ttcli database"):
        SqliteSaver(db_path)
    assert db_path.read_bytes() == b"this is a text file, not a database\n" * 200


def test_other_tools_read_the_file(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = chat_app(saver)
        cfg = {"configurable": {"thread_id": "order:123", "user_id": "u1"}}
        app.invoke({"messages": [("user", "hi")]}, cfg)
        history = list(app.get_state_history(cfg))
    rows = list(sqlite_utils.Database(db_path)["checkpoint_list"].rows)
    assert [r["checkpoint_id"] for r in rows[::-1]] == [
        s.config["configurable"]["checkpoint_id"] for s in history
    ]
    assert [r["parent_checkpoint_id"] for r in rows[::-1]] == [
        s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None
        for s in history
    ]
    newest = rows[-1]
    assert newest["thread_id"] == "order:123"
    assert newest["created_at"] == history[0].created_at
    assert json.loads(newest["metadata"]) == {
        "source": "loop",
        "step": 1,
        "parents": {},
        "writes": ["bot"],
        "user_id": "u1",
    }
    # plain SQL over the metadata JSON
    conn = sqlite3.connect(db_path)
    found = conn.execute(
        "SELECT count(*) FROM checkpoint_list WHERE json_extract(metadata, '$.user_id') = 'u1'"
    ).fetchone()
    assert found == (3,)


def test_a_growing_message_list_stores_each_message_once(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = chat_app(saver)
        cfg = {"configurable": {"thread_id": "chat"}}
        for turn in range(40):
            app.invoke({"messages": [("user", f"question {turn} " + "q" * 90)]}, cfg)
        assert len(app.get_state(cfg).values["messages"]) == 80
        # each message once, beside its turn's two small checkpoint rows (~25 KB): a list
        # stored again at each turn would take ~170 KB
        assert (saver.thread_bytes(cfg) or 0) < 80 * 400


def test_long_append_chains_get_keyframes_and_read_the_same(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blob_writer, "CHAIN_DEPTH_MIN", 4)
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = chat_app(saver)
        cfg = {"configurable": {"thread_id": "chat"}}
        for turn in range(12):
            app.invoke({"messages": [("user", f"q{turn}")]}, cfg)
        history = list(app.get_state_history(cfg))
        assert [len(s.values.get("messages", [])) for s in history[:3]] == [24, 23, 22]
    conn = sqlite3.connect(db_path)
    keyframes = conn.execute(
        "SELECT count(*) FROM blobs WHERE base_key IS NULL AND length(value) > 300"
    ).fetchone()[0]
    assert keyframes >= 1
    depth = conn.execute(
        "WITH RECURSIVE chain(k, d) AS (SELECT max(blob_key), 0 FROM blobs "
        "UNION ALL SELECT b.base_key, d + 1 FROM blobs b JOIN chain ON b.blob_key = chain.k "
        "WHERE b.base_key IS NOT NULL) SELECT max(d) FROM chain"
    ).fetchone()[0]
    assert depth < 12


def test_checkpoint_state_is_a_delta_with_regular_full_copies(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        put_chain(saver, steps=40)
        ids = [t.checkpoint["id"] for t in saver.list(config())]
        assert [t.checkpoint["channel_values"] for t in saver.list(config())][0] == {"n": 38}
    depths = [
        records.State.depth_of(row[0])
        for row in sqlite3.connect(db_path).execute(
            "SELECT state FROM checkpoints ORDER BY checkpoint_id"
        )
    ]
    assert depths[:17] == [*range(16), 0]
    assert max(depths) == records.KEYFRAME_DEPTH - 1
    assert len(ids) == 40


def test_history_without_values_reads_no_blob(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = chat_app(saver)
        cfg = {"configurable": {"thread_id": "chat"}}
        for _ in range(3):
            app.invoke({"messages": [("user", "hello " * 20)]}, cfg)
        read_tables: set[str] = set()

        def authorizer(action: int, table: str | None, *_: Any) -> int:
            if action == sqlite3.SQLITE_READ and table:
                read_tables.add(table)
            return sqlite3.SQLITE_OK

        saver.conn.set_authorizer(authorizer)
        summaries = saver.list_metadata(cfg, filter={"source": "loop"}, limit=2)
        assert [s.metadata["step"] for s in summaries] == [7, 6]
        assert "blobs" not in read_tables and "writes" not in read_tables
        list(saver.list(cfg, limit=1))
        assert "blobs" in read_tables  # the check above can fail


def test_an_unserialisable_value_fails_at_write_time_and_stores_nothing(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:

        def reply(state: MessagesState) -> dict[str, Any]:
            asked = state["messages"][-1].content
            return {"messages": [{"role": "ai", "content": object() if asked == "bad" else "ok"}]}

        builder = StateGraph(MessagesState)
        builder.add_node("reply", reply)
        builder.add_edge(START, "reply")
        app = builder.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        app.invoke({"messages": [("user", "hi")]}, cfg)
        with pytest.raises(
            SerializationError, match=r"cannot store messages\[0\]\.content: type builtins\.object"
        ):
            app.invoke({"messages": [("user", "bad")]}, cfg)
        # the input and its first superstep were saved; the failed write left no trace
        history = list(app.get_state_history(cfg))
        assert [(s.metadata or {})["source"] for s in history[:2]] == ["loop", "input"]
        assert history[0].next == ("reply",)
        assert all(task.result is None for task in history[0].tasks)
        assert app.invoke({"messages": [("user", "again")]}, cfg)["messages"][-1].content == "ok"
    assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_forged_rows_read_as_inert_data(db_path: Path, tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    with SqliteSaver.from_conn_string(db_path) as saver:
        put_chain(saver, steps=1)
        latest = saver.get_tuple(config())
        assert latest is not None
    forged = msgpack.packb(
        msgpack.ExtType(
            serde.OBJECT, msgpack.packb(["os.system", {"command": f"touch {sentinel}"}])
        )
    )
    conn = sqlite3.connect(db_path)
    key = conn.execute("INSERT INTO blobs (value) VALUES (?)", (forged,)).lastrowid
    assert key is not None
    (state,) = conn.execute("SELECT state FROM checkpoints").fetchone()
    depth, channels, seen, updated, writes = serde.loads(state)
    channels = {k: [v[0], serde.Ref(key)] for k, v in channels.items()}
    conn.execute(
        "UPDATE checkpoints SET state = ?", (serde.dumps([depth, channels, seen, updated, writes]),)
    )
    conn.commit()
    with SqliteSaver.from_conn_string(db_path) as saver:
        found = saver.get_tuple(config())
    assert found is not None
    assert found.checkpoint["channel_values"] == {
        "n": {serde.TYPE_MARKER: "os.system", "data": {"command": f"touch {sentinel}"}}
    }
    assert not sentinel.exists()


def test_a_corrupt_blob_is_an_error_not_a_none(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = chat_app(saver)
        cfg = {"configurable": {"thread_id": "chat"}}
        app.invoke({"messages": [("user", "hello " * 20)]}, cfg)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE blobs SET value = x'c1c1c1'")
    conn.commit()
    with SqliteSaver.from_conn_string(db_path) as saver:
        with pytest.raises(CorruptValueError, match="undecodable"):
            chat_app(saver).get_state(cfg)


def test_a_filter_on_writes_reads_no_value_of_the_checkpoints_it_passes_over(
    db_path: Path,
) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        old = make_checkpoint(0, doc="a long text stored apart " * 10)
        metadata = {"source": "loop", "step": 0, "parents": {}, "writes": {"a": {"n": 1}}}
        saver.put(config(), old, metadata, old["channel_versions"])
        new = make_checkpoint(1, n=1)
        metadata = {"source": "loop", "step": 1, "parents": {}, "writes": {"a": {"n": 2}}}
        saver.put(config("t", old["id"]), new, metadata, new["channel_versions"])
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE blobs SET value = x'c1c1c1'")  # the old checkpoint's text
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(db_path) as saver:
        assert [t.checkpoint["id"] for t in saver.list(config(), filter={"writes.a.n": 2})] == [
            new["id"]
        ]
        found = saver.list_metadata(config(), filter={"writes.a.n": 2})
        assert [t.checkpoint["id"] for t in found] == [new["id"]]
        with pytest.raises(CorruptValueError, match="undecodable"):
            list(saver.list(config(), filter={"writes.a.n": 1}))


WRITER = textwrap.dedent(
    """
    import sys
    from ttcli.savers.sqlite import SqliteSaver
    from tests.test_saver_contract import put_chain
    with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
        put_chain(saver, thread=sys.argv[2], steps=int(sys.argv[3]))
    """
)


def test_several_processes_write_one_file(db_path: Path) -> None:
    SqliteSaver(db_path).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db_path), f"w{n}", "60"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    with SqliteSaver.from_conn_string(db_path) as saver:
        for n in range(4):
            steps = [t.metadata["step"] for t in saver.list(config(f"w{n}"))]
            assert steps == list(range(58, -2, -1))
    assert sqlite3.connect(db_path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


class Priority(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Ticket:
    title: str
    priority: Priority


class TicketState(TypedDict):
    tickets: Annotated[list[Ticket], operator.add]


def test_the_graphs_own_types_come_back_as_themselves(db_path: Path) -> None:
    builder = StateGraph(TicketState)
    builder.add_node("file", lambda state: {"tickets": [Ticket("disk full", Priority.HIGH)]})
    builder.add_edge(START, "file")
    with SqliteSaver.from_conn_string(db_path) as saver:
        builder.compile(checkpointer=saver).invoke({"tickets": []}, config("t"))
    with SqliteSaver.from_conn_string(db_path) as saver:
        state = builder.compile(checkpointer=saver).get_state(config("t"))
    assert state.values == {"tickets": [Ticket("disk full", Priority.HIGH)]}


def test_a_version_1_file_is_migrated_forward(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        put_chain(saver, steps=2)
    conn = sqlite3.connect(db_path)
    conn.execute("ALTER TABLE threads DROP COLUMN info")  # as version 1 made it
    conn.execute("ALTER TABLE threads DROP COLUMN checkpoints")
    conn.execute("DROP TABLE blob_debt")
    conn.execute("DROP TABLE branches")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(db_path) as saver:
        assert [t.metadata["step"] for t in saver.list(config())] == [0, -1]
        assert [t.checkpoints for t in saver.list_threads()] == [2]  # counted when migrating
        saver.set_thread_info("t", {"target": "app.py:graph"})
        assert saver.get_thread_info("t") == {"target": "app.py:graph"}
    migrated = sqlite3.connect(db_path)
    assert migrated.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    reference = sqlite3.connect(":memory:")
    reference.executescript((ROOT / "schema.sql").read_text())
    assert structure(migrated) == structure(reference)


def test_a_version_4_file_gets_its_branches_recorded(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        first, second, third = put_chain(saver, steps=3)
        (fork,) = put_chain(saver, steps=1)  # a second root
        put_one(saver, first, 5)  # a child of an old checkpoint
        before = {i: saver.child_ids(config("t", i)) for i in (first, second, third, fork)}
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TABLE branches")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with SqliteSaver.from_conn_string(db_path) as saver:
        after = {i: saver.child_ids(config("t", i)) for i in (first, second, third, fork)}
    assert after == before and len(after[first]) == 2 and after[second] == [third]


def test_a_lock_held_past_the_busy_timeout_is_a_clear_busy_error(db_path: Path) -> None:
    SqliteSaver(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with SqliteSaver.from_conn_string(db_path) as saver:
            saver.conn.execute("PRAGMA busy_timeout = 50")
            with pytest.raises(DatabaseBusyError, match="is busy: another process holds its lock"):
                put_chain(saver, steps=1)
    finally:
        holder.execute("ROLLBACK")
    with SqliteSaver.from_conn_string(db_path) as saver:
        assert saver.get_tuple(config()) is None


def test_threads_never_share_blobs_so_deleting_one_leaves_the_other_whole(
    db_path: Path,
) -> None:
    # found by tests/test_properties.py: a small int in a pending write was once taken for a
    # blob key, so a list equal to another thread's blob was stored as a reference to it
    class S(TypedDict):
        x: Annotated[int, operator.add]
        log: Annotated[list[str], operator.add]

    builder = StateGraph(S)
    builder.add_node("first", lambda s: {"x": 1, "log": ["first"]})
    builder.add_node("left", lambda s: {"x": 2, "log": ["left"]})
    builder.add_node("right", lambda s: {"x": 2, "log": ["right"]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "left")
    builder.add_edge("first", "right")
    with SqliteSaver.from_conn_string(db_path) as saver:
        graph = builder.compile(checkpointer=saver)
        for thread in ("a", "a", "a", "b", "b"):
            graph.invoke({"x": 0, "log": []}, config(thread))
        before = [s.values for s in graph.get_state_history(config("b"))]
        saver.delete_thread("a")
        assert [s.values for s in graph.get_state_history(config("b"))] == before
    with SqliteSaver.from_conn_string(db_path) as saver:
        assert saver.integrity_problems() == []


def reply_graph() -> StateGraph:
    """A chat whose bot gives one long reply a turn."""
    builder = StateGraph(MessagesState)
    builder.add_node("bot", lambda state: {"messages": [("assistant", "a reply " * 8)]})
    builder.add_edge(START, "bot")
    return builder


def test_a_value_changed_in_place_by_its_reader_reads_as_stored(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = reply_graph().compile(checkpointer=saver)
        result = app.invoke({"messages": [("user", "a question " * 8)]}, config("t"))
        stored = [dict(m) for m in result["messages"]]
        result["messages"][0]["content"] = "changed after the run"  # the written objects
        first = app.get_state(config("t")).values["messages"]
        assert [dict(m) for m in first] == stored
        first[1]["content"] = "changed after reading"  # the read objects
        first.append("not stored")
        again = app.get_state(config("t")).values["messages"]
        assert [dict(m) for m in again] == stored


class DictChat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


@pytest.mark.parametrize("kind", ["messages", "plain dicts"])
def test_past_checkpoints_read_as_stored_after_their_readers_change_them(
    db_path: Path, kind: str
) -> None:
    """A past checkpoint's list is handed out from the newer list that starts with it:
    never with what a reader of either changed in place."""
    if kind == "messages":
        builder = reply_graph()
        question: Any = ("user", "a question " * 8)
    else:
        builder = StateGraph(DictChat)
        builder.add_node("bot", lambda state: {"messages": [{"role": "bot", "text": "hi " * 9}]})
        builder.add_edge(START, "bot")
        question = [{"role": "user", "text": "a question " * 8}]
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        for _ in range(20):  # more lists than the saver keeps decoded
            app.invoke({"messages": question}, config("t"))
        history = list(app.get_state_history(config("t")))
        stored = [[dict(m) for m in s.values["messages"]] for s in history]
        one, other = (app.get_state(history[-5].config).values["messages"] for _ in range(2))
        one[0]["role"] = "changed by one reader"  # the other reader's copy stays as stored
        assert [dict(m) for m in other] == stored[-5]
        latest = app.get_state(config("t")).values["messages"]
        latest[0]["text" if kind == "plain dicts" else "content"] = "changed by a reader"
        history[-2].values["messages"][0]["role"] = "changed too"
        again = [
            [dict(m) for m in s.values["messages"]] for s in app.get_state_history(config("t"))
        ]
        assert again == stored


def test_a_message_a_node_changed_in_place_is_stored_changed(db_path: Path) -> None:
    def bot(state: MessagesState) -> dict[str, Any]:
        state["messages"][0]["content"] = "edited in place"  # not the way to do it, but kept
        return {"messages": [("assistant", "a reply " * 8)]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        app.invoke({"messages": [("user", "a question " * 8)]}, config("t"))
        app.invoke({"messages": [("user", "another " * 8)]}, config("t"))
        result = app.invoke({"messages": [("user", "a third " * 8)]}, config("t"))
    with SqliteSaver.from_conn_string(db_path) as reader:
        stored = reader.get_tuple(config("t"))
        assert stored is not None
        assert stored.checkpoint["channel_values"]["messages"] == result["messages"]
        assert result["messages"][0]["content"] == "edited in place"


def test_another_python_thread_never_takes_writes_held_in_a_batch(db_path: Path) -> None:
    import threading

    from tests.test_saver_contract import make_checkpoint

    with SqliteSaver.from_conn_string(db_path) as saver:
        (head,) = put_chain(saver, "x", steps=1)
        (other,) = put_chain(saver, "y", steps=1)
        inside = threading.Event()
        failures: list[BaseException] = []

        def meanwhile() -> None:
            inside.wait()
            try:  # a put elsewhere, outside the batch, that fails
                bad = make_checkpoint(3, n=object())
                saver.put(config("y", other), bad, {"source": "loop", "step": 3}, {"n": 5})
            except Exception as exc:
                failures.append(exc)

        helper = threading.Thread(target=meanwhile)
        helper.start()
        with saver.batch():
            saver.put_writes(config("x", head), [("log", ["done"])], "task-1", "p")
            inside.set()
            helper.join(timeout=0.2)  # it waits for the batch: the saver's lock is held
            child = make_checkpoint(4, n=4)
            saver.put(config("x", head), child, {"source": "loop", "step": 4, "parents": {}}, {})
        helper.join()
        assert len(failures) == 1
        assert saver.get_writes(config("x", head)) == [("task-1", "p", "log", ["done"])]


def test_readers_never_share_the_messages_they_get(db_path: Path) -> None:
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = reply_graph().compile(checkpointer=saver)
        result = app.invoke({"messages": [("user", "a question " * 8)]}, config("t"))
        first = app.get_state(config("t")).values["messages"]
        second = app.get_state(config("t")).values["messages"]
        assert first == second and not any(a is b for a, b in zip(first, second, strict=True))
        assert not any(a is b for a, b in zip(first, result["messages"], strict=True))
        first[0]["content"] = "changed by the first reader"
        result["messages"][1]["content"] = "changed by the app"
        assert second[0]["content"] == "a question " * 8
        assert second[1]["content"] == "a reply " * 8
        assert type(second[1]).__name__ == "AIMessage"


def test_a_full_disk_inside_a_batch_leaves_the_file_as_it_was(db_path: Path) -> None:
    from tests.test_saver_contract import make_checkpoint

    with SqliteSaver.from_conn_string(db_path) as saver:
        (head,) = put_chain(saver, steps=1)
        (pages,) = saver.conn.execute("PRAGMA page_count").fetchone()
        saver.conn.execute(f"PRAGMA max_page_count = {pages + 1}")  # a disk about to fill
        with pytest.raises(StorageError):
            with saver.batch():
                try:
                    big = make_checkpoint(1, n=["x" * 1000] * 50)
                    saver.put(config("t", head), big, {"source": "loop", "step": 1}, {"n": 3})
                except StorageError:
                    pass  # SQLite rolled the transaction back itself
                small = make_checkpoint(2, n=2)
                saver.put(config("t", head), small, {"source": "loop", "step": 2}, {"n": 4})
    with SqliteSaver.from_conn_string(db_path) as reader:
        assert [t.checkpoint["id"] for t in reader.list(config())] == [head]
        assert reader.integrity_problems() == []


def test_a_full_disk_when_a_read_in_a_batch_writes_held_pending_writes_stores_nothing(
    db_path: Path,
) -> None:
    """A read inside a batch first writes the pending writes held back; if that fails and the
    caller goes on, the batch must not commit the checkpoint without them."""
    from tests.test_saver_contract import make_checkpoint

    with SqliteSaver.from_conn_string(db_path) as saver:
        (head,) = put_chain(saver, steps=1)
        with pytest.raises(StorageError):
            with saver.batch():
                child = make_checkpoint(1, n=2)
                saver.put(config("t", head), child, {"source": "loop", "step": 1}, {"n": 3})
                at = config("t", child["id"])
                saver.put_writes(at, [(f"c{i}", i) for i in range(5000)], "task-1", "~p")  # held
                (pages,) = saver.conn.execute("PRAGMA page_count").fetchone()
                saver.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
                with pytest.raises(StorageError):
                    saver.get_tuple(at)
                saver.conn.execute("PRAGMA max_page_count = 1073741823")
    with SqliteSaver.from_conn_string(db_path) as reader:
        assert [t.checkpoint["id"] for t in reader.list(config())] == [head]
        assert reader.integrity_problems() == []


@pytest.mark.parametrize(("before", "after"), [(1, True), (True, 1), (0, False), (1, 1.0)])
def test_a_field_changed_to_an_equal_value_of_another_type_is_stored_as_it_is(
    db_path: Path, before: Any, after: Any
) -> None:
    from ttcli import HumanMessage

    with SqliteSaver.from_conn_string(db_path) as saver:
        app = reply_graph().compile(checkpointer=saver)
        question = HumanMessage("a question " * 8, flagged=before)
        app.invoke({"messages": [question]}, config("t"))
        messages = app.get_state(config("t")).values["messages"]
        messages[0]["flagged"] = after  # equal, but not the same
        app.update_state(config("t"), {"messages": [("user", "more " * 8)]})
        app.update_state(config("t"), {"messages": messages})
        mine = app.get_state(config("t")).values["messages"]
    with SqliteSaver.from_conn_string(db_path) as reader:
        stored = reader.get_tuple(config("t"))
        assert stored is not None
        theirs = stored.checkpoint["channel_values"]["messages"]
    assert type(theirs[0]["flagged"]) is type(after) and theirs == mine
    assert type(mine[0]["flagged"]) is type(after)


def test_editing_the_past_never_changes_a_stored_checkpoint(db_path: Path) -> None:
    class Notes(TypedDict):
        notes: list[str]  # replaced by the node, not reduced

    written = ["a note the node wrote, long enough", "and a second one of them"]
    builder = StateGraph(Notes)
    builder.add_node("write", lambda state: {"notes": list(written)})
    builder.add_edge(START, "write")
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        app.invoke({"notes": ["the first note of the thread, long", "and another"]}, config("t"))
        latest, before_write = list(app.get_state_history(config("t")))[:2]
        # the past edited to hold what the node wrote, appended: the write is an append now
        grown = before_write.values["notes"] + written
        app.update_state(before_write.config, {"notes": grown}, as_node="write")
        assert app.get_state(latest.config).values["notes"] == written
    with SqliteSaver.from_conn_string(db_path) as reader:
        assert reader.get_tuple(latest.config).checkpoint["channel_values"]["notes"] == written  # type: ignore[union-attr]


def test_a_write_sharing_a_record_part_never_changes_an_older_checkpoint(db_path: Path) -> None:
    class Shared(TypedDict):
        x: list[str]  # replaced
        y: dict[str, list[str]]  # a record: its large entry is a blob of its own
        w: Annotated[list[str], operator.add]

    first = [f"item-number-{i}" for i in range(6)]
    other = [f"other-thing-{i}" for i in range(6)]
    builder = StateGraph(Shared)
    builder.add_node("n1", lambda state: {"x": first, "y": {"a": first}})
    builder.add_node("n2", lambda state: {"x": other, "y": {"a": first}})
    builder.add_node("n3", lambda state: {"w": first})  # appends what x held at step 1
    builder.add_edge(START, "n1")
    builder.add_edge("n1", "n2")
    builder.add_edge("n2", "n3")
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        start = {"w": [f"base-entry-{i}" for i in range(6)]}
        app.invoke(start, config("t"), interrupt_after=["n2"])
        seen = {t.checkpoint["id"]: t.checkpoint for t in saver.list(config("t"))}
        app.invoke(None, config("t"))
    with SqliteSaver.from_conn_string(db_path) as reader:
        for checkpoint_id, checkpoint in seen.items():
            assert reader.get(config("t", checkpoint_id)) == checkpoint


def test_a_checkpoint_whose_parent_another_process_pruned_is_stored_readable(
    db_path: Path,
) -> None:
    from contextlib import closing
    from datetime import UTC, datetime, timedelta

    from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune

    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    builder = StateGraph(Log)
    builder.add_node("a", lambda state: {"log": ["a-" + "x" * 40]})
    builder.add_node("b", lambda state: {"log": ["b-" + "z" * 40]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    with closing(SqliteSaver(db_path)) as app, closing(SqliteSaver(db_path)) as cron:
        graph = builder.compile(checkpointer=app)
        graph.invoke({"log": ["start-" + "y" * 40]}, config("t"))
        list(graph.get_state_history(config("t")))  # the app now knows every state
        policy = PrunePolicy(older_than=datetime.now(UTC) + timedelta(seconds=1), keep_last=2)
        execute_prune(cron, plan_prune(cron, policy))  # another process prunes
        oldest = list(graph.get_state_history(config("t")))[-1]
        fork = graph.update_state(oldest.config, None, as_node="__copy__")  # its parent is gone
        expected = graph.get_state(fork).values
    with SqliteSaver.from_conn_string(db_path) as reader:
        assert builder.compile(checkpointer=reader).get_state(fork).values == expected


def test_what_one_connection_knows_of_a_thread_is_dropped_when_another_writes(
    db_path: Path,
) -> None:
    """A saver remembers thread keys and latest ids between its batches; another process's
    delete and new threads (which may take the freed key) are noticed before any use."""
    from tests.test_saver_contract import config, make_checkpoint

    def put_in(saver: SqliteSaver, thread: str, parent: str | None, step: int) -> str:
        checkpoint = make_checkpoint(step, n=step)
        with saver.batch():
            saver.put(config(thread, parent), checkpoint, {"source": "loop", "step": step}, {})
        return checkpoint["id"]

    with (
        SqliteSaver.from_conn_string(db_path) as app,
        SqliteSaver.from_conn_string(db_path) as other,
    ):
        first = put_in(app, "t", None, 0)
        second = put_in(app, "t", first, 1)
        other.delete_thread("t")
        elsewhere = put_in(other, "u", None, 5)  # may take t's freed thread key
        third = put_in(app, "t", second, 2)
        unparented = make_checkpoint(3, n=3)
        app.put(config("t", third), unparented, {"source": "loop", "step": 3}, {})  # no batch
        fourth = put_in(app, "t", unparented["id"], 4)
        assert [t.checkpoint["id"] for t in other.list(config("t"))] == [
            fourth,
            unparented["id"],
            third,
        ]
        assert [t.checkpoint["id"] for t in app.list(config("u"))] == [elsewhere]
        assert app.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 4}  # type: ignore[union-attr]
        assert app.integrity_problems() == [] == other.integrity_problems()
