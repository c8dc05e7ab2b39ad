"""The deletion contract (SPEC §5) where operators met it broken: bounds that are not dates,
late commits between the archive copy and the delete, archived copies gone stale, and an
archive that is the database itself under another name. Archiving tests run into a SQLite
file and into a PostgreSQL database (`archive_db`)."""

from __future__ import annotations

import json
import operator
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

from tests import graphs
from tests.clitools import Target, dump, ttcli
from tests.conftest import NewDb
from tests.pg import new_dsn
from tests.test_archive import everything
from tests.test_prune import boundary, cfg
from tests.test_saver_contract import config, put_chain, put_one
from tests.workers import INPUT, loop_graph
from ttcli import END, START, Command, StateGraph, interrupt
from ttcli.errors import DatabaseBusyError
from ttcli.ops.prune import PrunePolicy, ThreadPlan, execute_prune, plan_prune
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.postgres import PostgresSaver
from ttcli.savers.sql.saver import SqlSaver
from ttcli.savers.sqlite import SqliteSaver
from ttcli.uuid6 import lowest_id_at, new_id

API = SimpleNamespace(StateGraph=StateGraph, START=START, END=END, interrupt=interrupt)


class GrowingState(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def run_two_threads(db: Target) -> Target:
    """Threads a and b, 10 checkpoints each."""
    with closing(open_saver(db)) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        for thread in ("a", "b"):
            graph.invoke(INPUT, cfg(thread))
    return db


@pytest.fixture
def two_threads(new_db: NewDb) -> Target:
    return run_two_threads(new_db("ttcli.db"))


# -- finding 1: bounds ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--older-than", "1026-11-01"),
        ("--older-than", "1969-12-31"),
        ("--older-than", "3026-11-01"),
        ("--idle", "1026-11-01"),
        ("--idle", "2999-01-01T00:00:00+00:00"),
        ("--older-than", "99999999999d"),
        ("--idle", "9999999w"),
        ("--older-than", "60000y"),
    ],
    ids=["typo-1026", "before-1970", "future", "idle-1026", "idle-future", "huge-days",
         "huge-weeks", "not-a-unit"],
)  # fmt: skip
def test_a_bound_that_is_not_a_usable_date_is_a_usage_error(
    two_threads: Target, option: str, value: str
) -> None:
    before = dump(two_threads)
    result = ttcli(two_threads, "prune", option, value, "--keep-last", "3", "--yes")
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert dump(two_threads) == before


def test_keep_last_keeps_that_many_rows_of_each_thread_whatever_the_bound(
    two_threads: Target,
) -> None:
    result = ttcli(two_threads, "prune", "--older-than", "0s", "--keep-last", "3", "--yes")
    assert result.exit_code == 0, result.stderr
    with closing(open_saver(two_threads)) as saver:
        assert [t.checkpoints for t in saver.list_threads()] == [3, 3]


def test_keep_last_holds_even_when_the_id_bound_is_above_every_row(saver: BaseSaver) -> None:
    ids: list[str] = []
    for step in range(5):
        ids.append(put_one(saver, ids[-1] if ids else None, step))
    above_all = lowest_id_at(datetime(2100, 1, 1, tzinfo=UTC))
    plan = ThreadPlan("t", "", above_all, count=3, total=5, keep_last=2)
    report = execute_prune(saver, [plan])
    assert report.checkpoints == 3
    assert saver.checkpoint_ids(config("t")) == [ids[4], ids[3]]


@pytest.mark.parametrize("year", [1026, 1969, 5300], ids=["1026", "1969", "5300"])
def test_no_id_bound_is_made_for_a_moment_the_id_clock_cannot_name(year: int) -> None:
    with pytest.raises(ValueError, match="outside the id clock's range"):
        lowest_id_at(datetime(year, 12, 31, tzinfo=UTC))
    assert lowest_id_at(datetime(1970, 1, 1, tzinfo=UTC)) < new_id(0)


def test_a_library_bound_before_1970_is_refused() -> None:
    with pytest.raises(ValueError, match="1970"):
        PrunePolicy(older_than=datetime(1026, 11, 1, tzinfo=UTC))


# -- findings 2 and 3: late commits ----------------------------------------------------------


class AfterFirstBatch(SqlSaver):
    """An archive that runs `after` once its first batch has committed (another writer's
    moment, or a kill)."""

    after: Callable[[], None] | None = None

    @contextmanager
    def batch(self, *, durable: bool = False) -> Iterator[None]:
        with super().batch(durable=durable):
            yield
        if self.after is not None and not self.connection.in_batch:  # committed
            hook, self.after = self.after, None
            hook()


class HookedSqlite(AfterFirstBatch, SqliteSaver):
    pass


class HookedPostgres(AfterFirstBatch, PostgresSaver):
    pass


@contextmanager
def hooked(archive: Target, after: Callable[[], None]) -> Iterator[AfterFirstBatch]:
    target = HookedSqlite(archive) if isinstance(archive, Path) else HookedPostgres(archive)
    target.after = after
    try:
        yield target
    finally:
        target.close()


def late_checkpoint(db: Target, thread: str) -> tuple[dict[str, Any], Any]:
    """A checkpoint of `thread` made now (its id is old by the time it commits), to commit
    later as a child of the thread's head, with its metadata."""
    with closing(open_saver(db)) as saver:
        head = saver.get_tuple(cfg(thread))
        assert head is not None
    checkpoint = {**head.checkpoint, "id": new_id(99)}
    return head.config, (checkpoint, {**head.metadata, "step": 99, "late": True})


def commit_late(
    db: Target, parent: dict[str, Any], late: Any, waiting: list[threading.Thread] | None = None
) -> Callable[[], None]:
    """Commit the late checkpoint and a write of it now or, if a prune holds the lock the
    write needs, in a thread of its own (appended to `waiting`) as soon as it is free."""

    def put(busy_timeout: float) -> None:
        other = open_saver(db, busy_timeout=busy_timeout)
        try:
            with other.batch():
                stored = other.put(parent, late[0], late[1], {})
                other.put_writes(stored, [("n", 7)], "t1")
        finally:
            other.close()

    def commit() -> None:
        try:
            put(0)
        except DatabaseBusyError:
            assert waiting is not None
            waiting.append(threading.Thread(target=put, args=(30,)))
            waiting[-1].start()

    return commit


def in_either(db: Target, archive: Target) -> tuple[dict[Any, Any], dict[Any, Any]]:
    with (
        closing(open_saver(db)) as live,
        closing(open_saver(archive)) as kept,
    ):
        return everything(live), everything(kept)


def test_a_checkpoint_committed_late_with_an_old_id_is_never_lost(
    new_db: NewDb, archive_db: Target
) -> None:
    two_threads = run_two_threads(new_db("ttcli.db"))
    parent, late = late_checkpoint(two_threads, "a")
    bound = boundary()
    archive = archive_db
    policy = PrunePolicy(older_than=bound, keep_last=0)
    waiting: list[threading.Thread] = []
    with closing(open_saver(two_threads)) as saver:
        plans = plan_prune(saver, policy)
        with hooked(archive, commit_late(two_threads, parent, late, waiting)) as target:
            execute_prune(saver, plans, archive=target)
    for thread in waiting:
        thread.join(timeout=60)
    live, kept = in_either(two_threads, archive)
    key = ("a", "", late[0]["id"])
    found = live.get(key, kept.get(key))
    assert found is not None, "the late checkpoint is in neither file"
    assert found[0] == late[0]
    assert [w[2:] for w in found[4]] == [("n", 7)]


def test_later_archive_prunes_finish_after_a_late_commit(new_db: NewDb, archive_db: Target) -> None:
    two_threads = run_two_threads(new_db("ttcli.db"))
    parent, late = late_checkpoint(two_threads, "a")
    archive = archive_db
    prune = ["prune", "--older-than", "0s", "--archive", str(archive), "--yes"]
    with closing(open_saver(two_threads)) as saver:
        graph = loop_graph().compile(checkpointer=saver)
        graph.invoke(INPUT, cfg("a"))  # newer than the late checkpoint
        assert ttcli(two_threads, *prune).exit_code == 0
        commit_late(two_threads, parent, late)()  # commits after the prune, with an old id
        graph.invoke(INPUT, cfg("a"))
        for _ in range(2):
            result = ttcli(two_threads, *prune)
            assert result.exit_code == 0, result.stderr
    live, kept = in_either(two_threads, archive)
    assert ("a", "", late[0]["id"]) in kept
    assert sorted(k[0] for k in live) == ["a", "b"]


# -- finding 4: stale archived copies -------------------------------------------------------


class Killed(BaseException):
    pass


def kill() -> None:
    raise Killed


def test_an_archived_copy_is_refreshed_when_the_live_row_changed(
    new_db: NewDb, archive_db: Target
) -> None:
    db = new_db("ttcli.db")
    archive = archive_db
    paused = cfg("review")
    with closing(open_saver(db)) as saver:
        app = graphs.review(API).compile(checkpointer=saver)
        app.invoke({"plan": "", "log": []}, paused)
        waiting = saver.get_tuple(paused)
        assert waiting is not None
        policy = PrunePolicy(older_than=boundary(), keep_last=0)
        with hooked(archive, kill) as target, pytest.raises(Killed):
            execute_prune(saver, plan_prune(saver, policy), archive=target)
        app.invoke(Command(resume="approved"), paused)  # the paused checkpoint gains writes
        answered = everything(saver)[("review", "", waiting.checkpoint["id"])]
        with closing(open_saver(archive)) as target:
            execute_prune(saver, plan_prune(saver, policy), archive=target)
    live, kept = in_either(db, archive)
    assert ("review", "", waiting.checkpoint["id"]) not in live
    assert kept[("review", "", waiting.checkpoint["id"])] == answered


# -- finding 5: the archive is the database ---------------------------------------------------


@pytest.mark.parametrize("alias", ["hardlink", "symlink", "dotted", "-wal", "-shm"])
def test_an_archive_that_is_the_database_under_another_name_is_refused(
    db_path: Path, alias: str
) -> None:
    """Other names of one file, and the files SQLite keeps beside it: an archive created in
    the database's WAL (empty when the prune begins) would overwrite the database's pages."""
    two_threads = run_two_threads(db_path)  # SQLite: other names of one file
    assert isinstance(two_threads, Path)
    other = two_threads.with_name("alias.db")
    if alias == "hardlink":
        os.link(two_threads, other)
    elif alias == "symlink":
        other.symlink_to(two_threads)
    elif alias.startswith("-"):
        other = Path(f"{two_threads}{alias}")
    else:
        other = two_threads.parent / "." / ".." / two_threads.parent.name / two_threads.name
    before = dump(two_threads)
    result = ttcli(two_threads, "prune", "--older-than", "0s", "--archive", str(other), "--yes")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert dump(two_threads) == before


def test_an_archive_that_is_the_postgresql_schema_under_another_dsn_is_refused() -> None:
    # the file aliases above have a PostgreSQL counterpart: a DSN spelled otherwise
    db = run_two_threads(new_dsn())
    assert isinstance(db, str) and "postgres@" in db
    # with a password (trust authentication takes it), which the message must not show
    other = f"{db}&application_name=archive".replace("postgres@", "postgres:s3cret@", 1)
    before = dump(db)
    result = ttcli(db, "prune", "--older-than", "0s", "--archive", other, "--yes")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "s3cret" not in result.stderr
    assert dump(db) == before


def test_a_future_bound_from_the_library_still_prunes(two_threads: Target) -> None:
    future = PrunePolicy(older_than=datetime.now(UTC) + timedelta(days=1), keep_last=1)
    with closing(open_saver(two_threads)) as saver:
        report = execute_prune(saver, plan_prune(saver, future))
        assert report.checkpoints == 2 * 10
        assert [t.checkpoints for t in saver.list_threads()] == [1, 1]


# -- the contract prune pages with ------------------------------------------------------------


def test_checkpoint_ids_read_a_range_of_ids_newest_first(saver: BaseSaver) -> None:
    ids: list[str] = []
    for step in range(5):
        ids.append(put_one(saver, ids[-1] if ids else None, step))
    thread = config("t")
    assert saver.checkpoint_ids(thread) == ids[::-1]
    assert saver.checkpoint_ids(thread, below=ids[3], since=ids[1]) == [ids[2], ids[1]]
    assert saver.checkpoint_ids(thread, since=ids[3]) == [ids[4], ids[3]]
    assert saver.checkpoint_ids(thread, below=ids[4], limit=2) == [ids[3], ids[2]]
    assert saver.count_checkpoints(thread, below=ids[2]) == 2
    assert saver.checkpoint_ids(config("nobody")) == []
    # a prune's pages, oldest first: the range's oldest ids, and one more than a page holds
    assert saver.checkpoint_ids(thread, oldest_first=True) == ids
    assert saver.checkpoint_ids(thread, below=ids[4], since=ids[1], limit=2, oldest_first=True) == [
        ids[1],
        ids[2],
    ]
    assert saver.checkpoint_ids(thread, since=ids[3], limit=9, oldest_first=True) == ids[3:]
    assert saver.checkpoint_ids(config("nobody"), oldest_first=True) == []


def test_stored_pending_writes_of_a_page_are_what_get_writes_gives(saver: BaseSaver) -> None:
    # plain values: their stored form is what they decode to (see test_prune_verbatim.py)
    ids: list[str] = []
    for step in range(4):
        ids.append(put_one(saver, ids[-1] if ids else None, step))
        saver.put_writes(config("t", ids[-1]), [("n", step), ("m", [step])], f"task{step}")
    saver.put_writes(config("t", ids[1]), [("__interrupt__", "ask")], "other", "path")
    missing = new_id(9)
    found = saver.stored_pending_writes(config("t"), [ids[3], missing, ids[1], ids[0]])
    assert found == {i: saver.get_writes(config("t", i)) for i in (ids[3], ids[1], ids[0])}
    assert len(found[ids[1]]) == 3
    assert saver.stored_pending_writes(config("nobody"), ids) == {}


def test_archiving_page_by_page_stores_each_value_once(
    db_path: Path, tmp_path: Path, new_archive: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = StateGraph(GrowingState)
    builder.add_node("grow", lambda state: {"n": state["n"] + 1, "log": ["x" * 100]})
    builder.add_edge(START, "grow")
    builder.add_conditional_edges("grow", lambda state: "grow" if state["n"] < 30 else END)
    with SqliteSaver.from_conn_string(db_path) as saver:
        builder.compile(checkpointer=saver).invoke({"n": 0, "log": []}, cfg("t"))
    copy = tmp_path / "copy.db"
    copy.write_bytes(db_path.read_bytes())
    policy = PrunePolicy(older_than=boundary(), keep_last=1)
    sizes: list[int] = []
    for path, pages in ((db_path, 500), (copy, 4)):
        monkeypatch.setattr("ttcli.ops.prune.BATCH_SIZE", pages)
        with (
            SqliteSaver.from_conn_string(path) as saver,
            closing(open_saver(new_archive(f"{path.stem}.archive"))) as archive,
        ):
            execute_prune(saver, plan_prune(saver, policy), archive=archive)
            sizes.append(archive.thread_bytes(cfg("t")) or 0)
    # a page's first row is stored whole (its parent went with the page before): a little more
    assert 0 < sizes[1] <= sizes[0] * 1.1, sizes


# -- idle threads go whole ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["", "sub:1"], ids=["its namespace", "another namespace"])
def test_an_idle_thread_that_goes_on_after_the_plan_loses_nothing(
    saver: BaseSaver, where: str
) -> None:
    """`--idle` deletes whole threads whose newest checkpoint is older than the bound: one
    that gets a checkpoint after the plan (a paused thread answered, in any namespace) is
    idle no more when its rows are deleted, and keeps them all."""
    latest = put_chain(saver, "t", steps=4)[-1]
    plans = plan_prune(saver, PrunePolicy(idle_since=boundary()))
    assert [(p.thread_id, p.checkpoint_ns, p.count) for p in plans] == [("t", "", 4)]
    if where:
        put_chain(saver, "t", steps=1, ns=where)
    else:
        put_one(saver, latest, 3)
    report = execute_prune(saver, plans)
    assert (report.checkpoints, report.left) == (0, 4)
    assert len(saver.checkpoint_ids(config("t"))) == (4 if where else 5)


@pytest.mark.parametrize("hours", [14, -5, 0])
def test_an_idle_bound_in_any_offset_spares_a_thread_copied_after_it(
    two_threads: Target, hours: int
) -> None:
    """A thread copied (`fork --to-thread`) after the bound holds old checkpoints but is no
    idle thread; the bound's offset changes nothing (times were once compared as text)."""
    since = boundary()
    forked = ttcli(two_threads, "fork", "latest", "--thread", "a", "--to-thread", "copy")
    assert forked.exit_code == 0, forked.stderr
    offset = since.astimezone(timezone(timedelta(hours=hours))).isoformat()
    result = ttcli(two_threads, "prune", "--idle", offset, "--json")
    assert result.exit_code == 0, result.stderr
    planned = {plan["thread_id"] for plan in json.loads(result.stdout)["plan"]}
    assert planned == {"a", "b"}


def test_an_idle_thread_is_judged_by_its_newest_checkpoint_in_any_namespace(
    saver: BaseSaver,
) -> None:
    """A subgraph's namespace that finished long ago goes with its thread, not before: a
    thread whose root is still active keeps every namespace."""
    put_chain(saver, "t", steps=3, ns="sub:1")
    put_chain(saver, "old", steps=2, ns="sub:1")
    put_chain(saver, "old", steps=2)
    since = boundary()
    put_chain(saver, "t", steps=3)  # the root goes on after the subgraph ended
    plans = plan_prune(saver, PrunePolicy(idle_since=since))
    assert sorted((p.thread_id, p.checkpoint_ns) for p in plans) == [("old", ""), ("old", "sub:1")]
    assert execute_prune(saver, plans).checkpoints == 4
    assert len(saver.checkpoint_ids(config("t", ns="sub:1"))) == 3


def test_an_archive_another_writer_holds_is_waited_for_only_the_busy_timeout(
    tmp_path: Path,
) -> None:
    """`--busy-timeout` is the archive's too: the prune holds a page of the live file while
    it waits, so its writers wait as long (once, 30 s whatever the option said)."""
    db, archive = run_two_threads(tmp_path / "live.db"), tmp_path / "archive.db"
    open_saver(archive).close()
    before = dump(db)
    holder = sqlite3.connect(archive, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ttcli", "--db", str(db), "prune", "--older-than", "0s"]
            + ["--archive", str(archive), "--yes", "--busy-timeout", "0.2"],
            cwd=Path(__file__).parent.parent,
            capture_output=True,
            text=True,
            timeout=20,
        )
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert dump(db) == before
