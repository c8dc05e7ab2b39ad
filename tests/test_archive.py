"""`prune --archive` copies stored rows between databases: whatever a thread holds (forks,
updates, interrupts, failed tasks, messages, appends, records, pending writes across page
boundaries), every archived checkpoint must read in the archive exactly as it read in the
source, and archiving twice into one database must not change what is already there.

Every test runs for the four pairs: a SQLite file or a PostgreSQL database (`new_db`)
archived into a SQLite file or a PostgreSQL database (`archive_db`); `copy_rows` is the row
copy itself (its pages, blob keys and checks)."""

from __future__ import annotations

import datetime as dt
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypedDict

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings

from tests import graphs
from tests import test_dict_deltas as dict_deltas
from tests.clitools import Target
from tests.conftest import ARCHIVES, BACKENDS, NewDb
from tests.pg import new_dsn
from tests.test_properties import apply, operations, random_graph
from tests.test_saver_contract import config, make_checkpoint, put_chain, put_one
from ttcli import (
    END,
    START,
    Command,
    InMemorySaver,
    MessagesState,
    Send,
    SqliteSaver,
    StateGraph,
    interrupt,
)
from ttcli.configs import CheckpointRef
from ttcli.errors import ConfigError, StorageError
from ttcli.graph.messages import AIMessage, HumanMessage
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.savers import serde
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.sql import copy as row_copy

API = SimpleNamespace(
    StateGraph=StateGraph, START=START, END=END, interrupt=interrupt, Send=Send, Command=Command
)


def everything(saver: BaseSaver) -> dict[tuple[str, str, str], Any]:
    """Every checkpoint of every thread as the saver reads it, with its pending writes and
    children."""
    found = {}
    for summary in saver.list_threads():
        ref = CheckpointRef(summary.thread_id, summary.checkpoint_ns)
        for saved in saver.list(ref.to_config()):
            key = (summary.thread_id, summary.checkpoint_ns, saved.checkpoint["id"])
            found[key] = (
                saved.checkpoint,
                saved.metadata,
                saved.parent_config,
                saved.pending_writes,
                saver.get_writes(saved.config),
            )
    return found


def prune_into(saver: BaseSaver, archive: Target, keep_last: int) -> int:
    policy = PrunePolicy(
        older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), keep_last=keep_last
    )
    with closing(open_saver(archive)) as target:
        report = execute_prune(saver, plan_prune(saver, policy), archive=target)
        assert target.integrity_problems() == []
    return report.archived


def check_archive(saver: BaseSaver, archive: Target, keep: tuple[int, ...]) -> None:
    """Prune into `archive` once per `keep` value: afterwards every checkpoint is in exactly
    one of the two databases, reading exactly as it did."""
    before = everything(saver)
    for keep_last in keep:
        prune_into(saver, archive, keep_last)
    live = everything(saver)
    with closing(open_saver(archive)) as target:
        kept = everything(target)
    assert live.keys() | kept.keys() == before.keys()
    assert not live.keys() & kept.keys()
    for key, content in kept.items():
        assert content[:3] == before[key][:3], key
        # an archived checkpoint keeps every pending write (the live one may gain more)
        assert content[3:] == before[key][3:], key


def busy_file(saver: BaseSaver) -> None:
    """Threads with forks, updates, interrupts, failed tasks, Send, messages and records."""
    linear = graphs.linear(API).compile(checkpointer=saver)
    linear.invoke({"x": 1, "log": []}, {"configurable": {"thread_id": "linear"}})
    first = list(linear.get_state_history({"configurable": {"thread_id": "linear"}}))[-2]
    linear.update_state(first.config, {"x": 100, "log": ["edited"]}, as_node="a")
    linear.invoke(None, first.config)  # replay: a fork from the past
    linear.invoke({"x": 5}, {"configurable": {"thread_id": "linear"}})

    review = graphs.review(API).compile(checkpointer=saver)
    paused = {"configurable": {"thread_id": "review"}}
    review.invoke({"plan": "", "log": []}, paused)  # paused: an interrupt write pending
    review.invoke(Command(resume="yes"), paused)

    failing = graphs.fan_out(API, fail={"c"}).compile(checkpointer=saver)
    failed = {"configurable": {"thread_id": "fails"}}
    with pytest.raises(ValueError, match="boom"):
        failing.invoke({"log": []}, failed)  # b's write and c's error are pending
    failing.invoke(None, failed)

    graphs.map_reduce(API).compile(checkpointer=saver).invoke(
        {"items": [1, 2, 3], "results": [], "total": 0}, {"configurable": {"thread_id": "map"}}
    )

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="sure, " + "x" * 60)]}

    # a map changing a key per step: stored as deltas of the map, by its pending writes too
    changes = [[("set", f"key{step % 7}", {"step": step})] for step in range(40)]
    dict_deltas.graph(saver).invoke(
        {"table": dict_deltas.start_table(), "ops": changes, "step": 0},
        {"configurable": {"thread_id": "table"}, "recursion_limit": 100},
    )

    chat = StateGraph(MessagesState)
    chat.add_node("reply", reply)
    chat.add_edge(START, "reply")
    app = chat.compile(checkpointer=saver)
    for turn in range(6):
        message = HumanMessage(content=f"question {turn} " + "y" * 50)
        app.invoke({"messages": [message]}, {"configurable": {"thread_id": "chat"}})


def test_an_archive_reads_exactly_as_the_source_did(new_db: NewDb, archive_db: Target) -> None:
    with closing(open_saver(new_db("live.db"))) as saver:
        busy_file(saver)
        check_archive(saver, archive_db, keep=(6, 2))


def test_pending_writes_that_cross_a_page_boundary_are_archived(
    new_db: NewDb, archive_db: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_copy, "PAGE", 7)
    monkeypatch.setattr(row_copy, "BLOB_MAP_MAX", 3)  # forgotten keys are copied again
    with closing(open_saver(new_db("live.db"))) as saver:
        busy_file(saver)
        check_archive(saver, archive_db, keep=(9, 4, 1))


def test_a_page_that_does_not_compare_is_rolled_back(
    new_db: NewDb, archive_db: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    with closing(open_saver(new_db("live.db"))) as saver:
        busy_file(saver)
        before = everything(saver)

        translate = row_copy.RowCopy.name

        def damaged(self: row_copy.RowCopy, key: int) -> int:
            # a translation bug, in effect: channel `x` lands on another name
            wrong = self.source.names.name(key) == "x"
            return self.target.names.key("elsewhere") if wrong else translate(self, key)

        monkeypatch.setattr(row_copy.RowCopy, "name", damaged)
        with pytest.raises(StorageError, match="archive check failed .* nothing was deleted"):
            prune_into(saver, archive_db, 1)
        # threads before it are archived and pruned; this one is untouched in both databases
        now = everything(saver)
        linear = {key for key in before if key[0] == "linear"}
        assert {key: now[key] for key in linear} == {key: before[key] for key in linear}
    with closing(open_saver(archive_db)) as target:
        assert [t.thread_id for t in target.list_threads()] == ["chat", "fails"]


def scratch(backend: str, folder: str, name: str) -> Target:
    return new_dsn() if backend == "postgres" else Path(folder) / name


@pytest.mark.parametrize("into", ARCHIVES)
@pytest.mark.parametrize("source", BACKENDS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_random_histories_archive_exactly(
    source: str, into: str, ops: list[tuple[str, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with closing(open_saver(scratch(source, folder, "live.db"))) as saver:
            graph = random_graph([1, 2]).compile(checkpointer=saver)
            for op in ops:
                apply(op, graph, saver)
            archive = scratch(into.removeprefix("to-"), folder, "archive.db")
            check_archive(saver, archive, keep=(3, 0))


def test_the_newest_archived_checkpoint_keeps_earlier_and_later_writes(
    new_db: NewDb, archive_db: Target
) -> None:
    with closing(open_saver(new_db("live.db"))) as saver:
        root, head = put_chain(saver, steps=2)
        at = config("t", head)
        saver.put_writes(at, [("log", ["a"]), ("__error__", "first")], "task-1", "p")
        child = put_one(saver, head, 5)  # takes the writes so far into its row
        saver.put_writes(at, [("__error__", "second")], "task-1", "p")  # replaces
        saver.put_writes(at, [("log", ["b"])], "task-2", "p")
        expected = saver.get_writes(at)
        assert ("task-1", "p", "__error__", "second") in expected and len(expected) == 3
        with closing(open_saver(archive_db)) as target:
            assert saver.copy_rows(config("t"), child, target) == 2
            assert target.get_writes(at) == expected
            assert saver.copy_rows(config("t"), child, target) == 0  # already there
            assert target.get_tuple(at) == saver.get_tuple(at)
            assert target.child_ids(config("t", root)) == [head]


def test_stale_copies_are_archived_again_beside_the_children_the_archive_kept(
    new_db: NewDb, archive_db: Target
) -> None:
    """A run copied every row and stopped before deleting any; since, every other checkpoint
    gained pending writes. Copied again, such a row gets back the writes the live file keeps
    in its child (which the archive kept as it was): the archive reads exactly as the live
    file did (once, the check failed there and the prune could never finish)."""
    with closing(open_saver(new_db("live.db"))) as saver:
        busy_file(saver)
        refs = [CheckpointRef(t.thread_id, t.checkpoint_ns) for t in saver.list_threads()]
        with closing(open_saver(archive_db)) as target:
            for ref in refs:
                saver.copy_rows(ref.to_config(), "ffffffff-ffff-ffff-ffff-ffffffffffff", target)
        for ref in refs:
            for checkpoint_id in saver.checkpoint_ids(ref.to_config())[::2]:
                at = ref.at(checkpoint_id).to_config()
                saver.put_writes(at, [("late", checkpoint_id)], f"late-{checkpoint_id}", "p")
        check_archive(saver, archive_db, keep=(0,))


def test_an_archive_whose_server_does_not_wait_for_its_disk_waits_for_it_all_the_same(
    new_db: NewDb,
) -> None:
    """With synchronous_commit=off (here the archive connections' own setting) a commit
    returns before it is on the server's disk, and a crash of the server could lose copies
    whose live rows are gone: a durable batch returns once the server has flushed past it
    (its WAL's flush position, read from another connection), and archiving works so."""
    import psycopg

    archive = new_dsn().replace("options=", "options=-csynchronous_commit%3Doff%20", 1)
    with psycopg.connect(archive, autocommit=True) as watch, closing(open_saver(archive)) as saver:
        assert watch.execute("SHOW synchronous_commit").fetchone() == ("off",)
        (head,) = put_chain(saver, "flushed", steps=1)
        for task in range(5):
            (before,) = watch.execute("SELECT pg_current_wal_insert_lsn()::text").fetchall()[0]
            with saver.batch(durable=True):
                saver.put_writes(config("flushed", head), [("log", [task])], f"task-{task}", "p")
            flushed = "SELECT pg_current_wal_flush_lsn() > %s::pg_lsn"
            assert watch.execute(flushed, (before,)).fetchone() == (True,), task
        saver.delete_thread("flushed")  # the archive below starts empty
    with closing(open_saver(new_db("live.db"))) as live:
        busy_file(live)
        check_archive(live, archive, keep=(3, 1))


def test_a_database_is_never_archived_into_itself(new_db: NewDb) -> None:
    db = new_db("live.db")
    with closing(open_saver(db)) as saver:
        put_chain(saver, steps=3)
        with closing(open_saver(db)) as same:
            with pytest.raises(ConfigError, match="into itself: archive to another file"):
                prune_into(saver, db, 1)
            assert same.count_checkpoints(config("t")) == 3


def test_rows_older_than_the_target_thread_are_placed_among_its_rows(
    new_db: NewDb, archive_db: Target
) -> None:
    with closing(open_saver(new_db("live.db"))) as saver:
        first, second, third = put_chain(saver, steps=3)
        saver.put_writes(config("t", second), [("log", ["w"])], "task-w", "p")
        with closing(open_saver(archive_db)) as target:
            own = put_chain(target, steps=2)  # newer than everything in the source
            before = [target.get_tuple(config("t", i)) for i in own]
            assert saver.copy_rows(config("t"), third, target) == 2
            for checkpoint_id in (first, second):
                at = config("t", checkpoint_id)
                assert target.get_tuple(at) == saver.get_tuple(at)
            assert [target.get_tuple(config("t", i)) for i in own] == before
            assert target.child_ids(config("t", first)) == [second]
            assert target.integrity_problems() == []


@pytest.mark.parametrize("deleter", ["this saver", "another process"])
def test_an_archive_never_gives_a_deleted_blob_key_to_another_value(
    new_db: NewDb, archive_db: Target, deleter: str
) -> None:
    with closing(open_saver(new_db("live.db"))) as saver:
        for turn in range(3):  # the two threads' blob keys interleave
            for thread in ("a", "b"):
                put_one_in(saver, thread, f"{thread}{turn} " * 20)
        with closing(open_saver(archive_db)) as target:
            latest_a = saver.checkpoint_ids(config("a"), limit=1)[0]
            saver.copy_rows(config("a"), latest_a, target)
            if deleter == "this saver":
                target.delete_thread("a")  # its blobs go, but for the newest
            else:
                with closing(open_saver(archive_db)) as other:
                    other.delete_thread("a")
            latest_b = saver.checkpoint_ids(config("b"), limit=1)[0]
            saver.copy_rows(config("b"), latest_b, target)
            for checkpoint_id in saver.checkpoint_ids(config("b"), below=latest_b):
                at = config("b", checkpoint_id)
                assert target.get_tuple(at) == saver.get_tuple(at)


def put_one_in(saver: BaseSaver, thread: str, text: Any) -> None:
    latest = saver.checkpoint_ids(config(thread), limit=1)
    step = len(saver.checkpoint_ids(config(thread)))
    checkpoint = make_checkpoint(step, text=text)
    metadata = {"source": "loop", "step": step, "parents": {}}
    saver.put(config(thread, latest[0] if latest else None), checkpoint, metadata, {"text": 1})


@pytest.mark.parametrize("deleter", ["another process", "this saver, from another thread"])
def test_blobs_deleted_from_the_archive_meanwhile_are_copied_again(
    new_db: NewDb, archive_db: Target, monkeypatch: pytest.MonkeyPatch, deleter: str
) -> None:
    monkeypatch.setattr(row_copy, "PAGE", 5)
    with closing(open_saver(new_db("live.db"))) as saver:
        for turn in range(20):  # a list that grows: each value appends to the one before
            put_one_in(saver, "t", [f"item {i} of the list" for i in range(turn + 3)])
        pages = 0
        between_pages = row_copy.RowCopy.forget_old_blobs

        def and_another_process_prunes(copy: row_copy.RowCopy) -> None:
            nonlocal pages
            between_pages(copy)
            pages += 1
            if pages == 2:  # what the first two pages copied is deleted from the archive
                if deleter == "another process":
                    with closing(open_saver(archive_db)) as other:
                        other.delete_thread("t")
                else:
                    copy.target.delete_thread("t")

        monkeypatch.setattr(row_copy.RowCopy, "forget_old_blobs", and_another_process_prunes)
        latest = saver.checkpoint_ids(config("t"), limit=1)[0]
        with closing(open_saver(archive_db)) as target:
            assert saver.copy_rows(config("t"), latest, target) == 19
            kept = saver.checkpoint_ids(config("t"), below=latest)[:-10]  # pages 3 and 4
            assert kept and all(
                target.get_tuple(config("t", i)) == saver.get_tuple(config("t", i)) for i in kept
            )
            assert target.integrity_problems() == []


class Texts(TypedDict):
    x: str
    n: int


def _same_values(db: Target, threads: list[str]) -> None:
    """Threads whose blobs hold the same bytes: the same graph run on the same inputs."""
    builder = StateGraph(Texts)
    builder.add_node("a", lambda state: {"x": f"value {state['n']} " * 20, "n": state["n"] + 1})
    builder.add_edge(START, "a")
    builder.add_edge("a", END)
    with closing(open_saver(db)) as saver:
        app = builder.compile(checkpointer=saver)
        for thread in threads:
            for n in range(3):
                app.invoke({"x": f"input {n} " * 20, "n": n}, config(thread))


def test_archived_threads_never_share_a_stored_value(new_db: NewDb, archive_db: Target) -> None:
    """Two sources whose threads store the same bytes, archived into one database: a thread
    copied under new keys there, and another copied after it whose source keys are those
    new keys, took the first one's blobs for its own (same key, same bytes), and deleting
    the first thread from the archive left the second unreadable."""
    first, second = new_db("first.db"), new_db("second.db")
    _same_values(first, ["a"])
    _same_values(second, ["t", "u"])
    for source in (first, second):
        with closing(open_saver(source)) as saver:
            assert prune_into(saver, archive_db, keep_last=0) > 0
    with closing(open_saver(archive_db)) as archive:
        kept = {key: value for key, value in everything(archive).items() if key[0] != "t"}
        archive.delete_thread("t")
        assert archive.integrity_problems() == []
        assert everything(archive) == kept


def as_version_6(path: Path) -> None:
    """Rewrite a file as ttcli wrote it before format version 7: each Send an ext 11 object
    under its class's name."""

    def older(code: int, data: bytes) -> msgpack.ExtType:
        payload = msgpack.unpackb(data, ext_hook=older, strict_map_key=False, raw=False)
        if code == serde.SEND:
            node, arg = payload
            code, payload = serde.OBJECT, [OLD_SEND, {"node": node, "arg": arg}]
        return msgpack.ExtType(code, msgpack.packb(payload, use_bin_type=True))

    def rewrite(data: bytes | None) -> bytes | None:
        if data is None:
            return None
        value = msgpack.unpackb(data, ext_hook=older, strict_map_key=False, raw=False)
        return msgpack.packb(value, use_bin_type=True)  # type: ignore[no-any-return]

    with closing(sqlite3.connect(path)) as conn:
        conn.create_function("older", 1, rewrite)
        conn.execute(
            "UPDATE checkpoints SET state = older(state), parent_writes = older(parent_writes)"
        )
        conn.execute("UPDATE writes SET tasks = older(tasks)")
        conn.execute("UPDATE blobs SET value = older(value)")
        conn.execute("PRAGMA user_version = 6")
        conn.commit()


OLD_SEND = "ttcli.runtime.commands.Send"


class Planned(TypedDict):
    plan: Any


def inside(saver: BaseSaver) -> None:
    """A thread whose Sends sit inside other typed values: a tuple, an interrupt's value."""
    builder = StateGraph(Planned)
    builder.add_node("make", lambda state: {"plan": (Send("x", 1),)})
    builder.add_node("ask", lambda state: {"plan": interrupt(Send("human", {}))})
    builder.add_edge(START, "make")
    builder.add_edge("make", "ask")
    builder.compile(checkpointer=saver).invoke({"plan": None}, {"configurable": {"thread_id": "i"}})


ARCHIVED_INTO: dict[str, Callable[[Path], AbstractContextManager[BaseSaver]]] = {
    "a file, row by row": lambda tmp: SqliteSaver.from_conn_string(tmp / "archive.db"),
    "memory, value by value": lambda tmp: nullcontext(InMemorySaver()),
}


@pytest.mark.parametrize("into", list(ARCHIVED_INTO))
def test_a_version_6_file_s_sends_read_and_archive_as_they_did(tmp_path: Path, into: str) -> None:
    path = tmp_path / "v6.db"
    with SqliteSaver.from_conn_string(path) as saver:
        graphs.map_reduce(API).compile(checkpointer=saver).invoke(
            {"items": [1, 2, 3], "results": [], "total": 0}, {"configurable": {"thread_id": "m"}}
        )
        graphs.commands(API).compile(checkpointer=saver).invoke(
            {"log": []}, {"configurable": {"thread_id": "c"}}
        )
        inside(saver)
        before = everything(saver)
    as_version_6(path)
    assert OLD_SEND.encode() in path.read_bytes()  # the Sends are in their old form
    policy = PrunePolicy(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), keep_last=1)
    with SqliteSaver.from_conn_string(path) as saver, ARCHIVED_INTO[into](tmp_path) as archive:
        assert everything(saver) == before
        assert execute_prune(saver, plan_prune(saver, policy), archive=archive).archived > 0
        live, kept = everything(saver), everything(archive)
    assert live.keys() | kept.keys() == before.keys()
    assert not live.keys() & kept.keys()
    assert all(content == before[key] for key, content in kept.items())
