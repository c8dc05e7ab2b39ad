"""The deletion contract: prune and archive change nothing a kept checkpoint shows."""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypedDict

import pytest

from tests import graphs
from tests.conftest import NewDb
from tests.test_properties import random_graph
from ttcli import END, START, StateGraph
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver
from ttcli.savers.sqlite import SqliteSaver

API = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)


def cfg(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def boundary() -> datetime:
    """A moment strictly after everything stored so far and before anything stored later."""
    moment = datetime.now(UTC)
    while datetime.now(UTC) <= moment:
        pass
    return moment


def views(app: Any, thread: str) -> dict[str, tuple[Any, ...]]:
    """Each checkpoint as a user sees it (record view), by id."""
    return {
        s.config["configurable"]["checkpoint_id"]: (
            s.values,
            s.next,
            s.metadata,
            [(t.name, t.result, t.error) for t in app.get_state(s.config).tasks],
        )
        for s in app.get_state_history(cfg(thread))
    }


def two_runs(saver: BaseSaver, thread: str = "t") -> tuple[Any, datetime]:
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg(thread))
    middle = boundary()
    app.invoke({"x": 2}, cfg(thread))
    return app, middle


def test_a_plan_changes_nothing(saver: BaseSaver) -> None:
    app, middle = two_runs(saver)
    before = views(app, "t")
    plans = plan_prune(saver, PrunePolicy(older_than=middle))
    assert [(p.thread_id, p.count, p.total) for p in plans] == [("t", 4, 8)]
    assert views(app, "t") == before


def test_older_than_deletes_old_checkpoints_and_kept_ones_read_the_same(saver: BaseSaver) -> None:
    app, middle = two_runs(saver)
    before = views(app, "t")
    report = execute_prune(saver, plan_prune(saver, PrunePolicy(older_than=middle)))
    assert (report.threads, report.checkpoints) == (1, 4)
    after = views(app, "t")
    assert len(after) == 4
    assert after == {checkpoint_id: before[checkpoint_id] for checkpoint_id in after}
    # history ends earlier; the oldest kept one still names its (pruned) parent
    oldest = list(app.get_state_history(cfg("t")))[-1]
    assert oldest.metadata["source"] == "input"
    assert oldest.parent_config is not None
    assert app.get_state(oldest.parent_config).values == {}
    # and the thread goes on
    assert app.invoke({"x": 5}, cfg("t"))["x"] == 60


def test_keep_last_keeps_the_newest_of_each_thread(saver: BaseSaver) -> None:
    two_runs(saver, "a")
    two_runs(saver, "b")
    everything = boundary()
    plans = plan_prune(saver, PrunePolicy(older_than=everything, keep_last=3))
    assert sorted((p.thread_id, p.count) for p in plans) == [("a", 5), ("b", 5)]
    execute_prune(saver, plans)
    assert [t.checkpoints for t in saver.list_threads()] == [3, 3]


def test_idle_deletes_whole_threads_within_the_scope(saver: BaseSaver) -> None:
    two_runs(saver, "job:old")
    two_runs(saver, "other:old")
    middle = boundary()
    two_runs(saver, "job:new")
    plans = plan_prune(saver, PrunePolicy(idle_since=middle, prefix="job:"))
    assert [(p.thread_id, p.count) for p in plans] == [("job:old", 8)]
    execute_prune(saver, plans)
    assert [t.thread_id for t in saver.list_threads()] == ["job:new", "other:old"]
    assert plan_prune(saver, PrunePolicy(idle_since=middle, thread="other:old"))[0].total == 8


def test_pending_writes_of_kept_checkpoints_stay(saver: BaseSaver) -> None:
    calls: list[str] = []
    # an older, unrelated run on another thread
    graphs.fan_out(API).compile(checkpointer=saver).invoke({"log": []}, cfg("done"))
    app = graphs.fan_out(API, calls, fail={"c"}).compile(checkpointer=saver)
    with pytest.raises(ValueError, match="boom in c"):
        app.invoke({"log": []}, cfg("t"))
    before = views(app, "t")
    execute_prune(saver, plan_prune(saver, PrunePolicy(older_than=boundary(), keep_last=1)))
    (head,) = list(app.get_state_history(cfg("t")))
    assert views(app, "t") == {
        head.config["configurable"]["checkpoint_id"]: before[
            head.config["configurable"]["checkpoint_id"]
        ]
    }
    assert [(t.name, t.result, t.error) for t in app.get_state(cfg("t")).tasks] == [
        ("b", {"log": ["b"]}, None),
        ("c", None, "ValueError('boom in c')"),
    ]
    calls.clear()
    assert app.invoke(None, cfg("t")) == {"log": ["a", "b", "c", "d"]}
    assert calls == ["c", "d"]  # b's saved write survived the prune


def test_branches_survive_a_prune_of_their_common_past(saver: BaseSaver) -> None:
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg("t"))
    step0 = next(s for s in app.get_state_history(cfg("t")) if s.metadata["step"] == 0)
    middle = boundary()
    app.invoke(None, step0.config)  # replay: a new branch from step 0
    app.update_state(step0.config, {"x": 100})  # and another one
    before = views(app, "t")
    execute_prune(saver, plan_prune(saver, PrunePolicy(older_than=middle, keep_last=0)))
    after = views(app, "t")
    assert len(after) == 4  # fork, two loops, update
    assert after == {checkpoint_id: before[checkpoint_id] for checkpoint_id in after}


def test_archive_then_delete(saver: BaseSaver, tmp_path: Path) -> None:
    app, middle = two_runs(saver)
    before = views(app, "t")
    archive_path = tmp_path / "archive.db"
    plans = plan_prune(saver, PrunePolicy(older_than=middle))
    with SqliteSaver.from_conn_string(archive_path) as archive:
        report = execute_prune(saver, plans, archive=archive)
    assert (report.checkpoints, report.archived) == (4, 4)
    # the archive is a ttcli database holding the archived history, as it was
    with SqliteSaver.from_conn_string(archive_path) as archive:
        archived = views(graphs.linear(API).compile(checkpointer=archive), "t")
    assert archived == {checkpoint_id: before[checkpoint_id] for checkpoint_id in archived}
    assert set(archived) | set(views(app, "t")) == set(before)


def test_an_interrupted_archive_prune_finishes_when_run_again(
    saver: BaseSaver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, middle = two_runs(saver)
    plans = plan_prune(saver, PrunePolicy(older_than=middle))
    archive_path = tmp_path / "archive.db"

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with SqliteSaver.from_conn_string(archive_path) as archive:
        monkeypatch.setattr(saver, "delete_checkpoints", crash)
        with pytest.raises(KeyboardInterrupt):
            execute_prune(saver, plans, archive=archive)
        monkeypatch.undo()
        assert len(views(app, "t")) == 8  # archived, nothing deleted yet: rows in both files
        report = execute_prune(
            saver, plan_prune(saver, PrunePolicy(older_than=middle)), archive=archive
        )
    assert (report.checkpoints, report.archived) == (4, 0)
    assert len(views(app, "t")) == 4


def test_nothing_selected_without_a_time_policy(saver: BaseSaver) -> None:
    two_runs(saver)
    assert plan_prune(saver, PrunePolicy()) == []


class TextState(TypedDict):
    text: str


def vacuumed_size(db_path: Path) -> int:
    """The file's size once its free pages are given back: what it holds, not what it held."""
    with SqliteSaver.from_conn_string(db_path) as saver:
        saver.vacuum()
    return db_path.stat().st_size


def test_pruning_frees_the_values_only_deleted_checkpoints_used(db_path: Path) -> None:
    builder = StateGraph(TextState)
    builder.add_node("write", lambda state: {"text": f"{state['text']} " * 2000})
    builder.add_edge(START, "write")
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        for n in range(5):
            app.invoke({"text": str(n)}, cfg("t"))
        before = views(app, "t")
    size = vacuumed_size(db_path)
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        execute_prune(saver, plan_prune(saver, PrunePolicy(older_than=boundary())))
        ((head, view),) = views(app, "t").items()
        assert view == before[head]
    # the four earlier runs' texts are gone from the file, each stored twice (the node's
    # pending write, and the channel value it became): only what the kept checkpoint reads
    # stays
    texts = 4 * 2 * len("0 " * 2000)
    assert vacuumed_size(db_path) <= size - texts
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = builder.compile(checkpointer=saver)
        execute_prune(saver, plan_prune(saver, PrunePolicy(idle_since=boundary())))
        assert list(saver.list_threads()) == []
        # with every value freed, a new thread's values are stored and read as written
        app.invoke({"text": "again"}, cfg("u"))
        assert app.get_state(cfg("u")).values == {"text": "again " * 2000}
        assert saver.integrity_problems() == []


def test_pruning_the_parent_of_an_update_keeps_the_list_it_extends(new_db: NewDb) -> None:
    # found by tests/test_properties.py: the update's list is an append onto an older blob
    # that only the pruned parent pointed at directly; garbage collection stopped its walk
    # of what stays too early and deleted that older blob
    with closing(open_saver(new_db("ttcli.db"))) as saver:
        app = random_graph([2, 2]).compile(checkpointer=saver)
        for _ in range(2):
            app.invoke({"x": 0, "log": []}, cfg("t"))
        keep_newest = PrunePolicy(older_than=datetime(2100, 1, 1, tzinfo=UTC), keep_last=1)
        execute_prune(saver, plan_prune(saver, keep_newest))
        app.update_state(cfg("t"), {"x": 5}, as_node="n1l")
        before = app.get_state(cfg("t")).values
        execute_prune(saver, plan_prune(saver, keep_newest))
        assert app.get_state(cfg("t")).values == before
        assert saver.integrity_problems() == []


def test_a_prune_cut_between_batches_collects_its_garbage_when_run_again(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep_newest = PrunePolicy(older_than=datetime(2100, 1, 1, tzinfo=UTC), keep_last=2)
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = random_graph([1, 2]).compile(checkpointer=saver)
        for _ in range(4):  # the log grows past the inline size: blobs to collect
            app.invoke(
                {"x": 0, "log": ["a long entry to make the list a blob " * 60] * 3}, cfg("t")
            )
        head = app.get_state(cfg("t")).values
    # the same prune, done in one go on a copy, is what a finished prune leaves
    reference = db_path.with_name("reference.db")
    reference.write_bytes(db_path.read_bytes())
    with SqliteSaver.from_conn_string(reference) as saver:
        execute_prune(saver, plan_prune(saver, keep_newest))
    expected = vacuumed_size(reference)

    monkeypatch.setattr("ttcli.ops.prune.BATCH_SIZE", 3)
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = random_graph([1, 2]).compile(checkpointer=saver)
        calls = 0
        delete = saver.delete_checkpoints

        def crash_on_second(*args: Any, **kwargs: Any) -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise KeyboardInterrupt
            delete(*args, **kwargs)

        monkeypatch.setattr(saver, "delete_checkpoints", crash_on_second)
        with pytest.raises(KeyboardInterrupt):
            execute_prune(saver, plan_prune(saver, keep_newest))
        monkeypatch.setattr(saver, "delete_checkpoints", delete)
        assert app.get_state(cfg("t")).values == head

        execute_prune(saver, plan_prune(saver, keep_newest))
        assert app.get_state(cfg("t")).values == head
        assert saver.integrity_problems() == []
    # nothing the first batch freed is left behind: the file holds what a prune done in one
    # go leaves
    assert vacuumed_size(db_path) == expected


@pytest.mark.parametrize("policy", ["keep the newest 2", "idle threads"])
@pytest.mark.parametrize("page", ["one row", "all rows"])
def test_a_prune_stopped_once_its_last_page_is_deleted_has_collected_its_garbage(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, page: str, policy: str
) -> None:
    """Pages are read oldest first, each in its transaction, and blobs are collected in the
    last one's, also when it is full: a prune stopped right after it (killed, Ctrl-C) leaves
    what a prune done in one go leaves, for nothing is left to plan that would collect them
    (found by an attack session: a first version collected in a transaction of its own)."""
    chosen = (
        PrunePolicy(older_than=datetime(2100, 1, 1, tzinfo=UTC), keep_last=2)
        if policy == "keep the newest 2"
        else PrunePolicy(idle_since=datetime(2100, 1, 1, tzinfo=UTC))
    )
    with SqliteSaver.from_conn_string(db_path) as saver:
        app = random_graph([1, 2]).compile(checkpointer=saver)
        for _ in range(3):  # the log grows past the inline size: blobs to collect
            app.invoke({"x": 0, "log": ["an entry long enough to make a blob " * 60]}, cfg("t"))
        head = app.get_state(cfg("t")).values
        plans = plan_prune(saver, chosen)
    assert plans[0].count > 2  # pages of one row are several pages
    reference = db_path.with_name("reference.db")
    reference.write_bytes(db_path.read_bytes())
    with SqliteSaver.from_conn_string(reference) as saver:
        execute_prune(saver, plan_prune(saver, chosen))
    monkeypatch.setattr("ttcli.ops.prune.BATCH_SIZE", 1 if page == "one row" else plans[0].count)

    def stop_when_all_are_deleted(done: int, total: int) -> None:
        if done == total:
            raise KeyboardInterrupt

    with SqliteSaver.from_conn_string(db_path) as saver:
        with pytest.raises(KeyboardInterrupt):
            execute_prune(saver, plans, progress=stop_when_all_are_deleted)
        assert plan_prune(saver, chosen) == []  # nothing left to do: nor to collect
        if policy == "keep the newest 2":
            app = random_graph([1, 2]).compile(checkpointer=saver)
            assert app.get_state(cfg("t")).values == head
        else:
            assert list(saver.list_threads()) == []
        assert saver.integrity_problems() == []
    assert vacuumed_size(db_path) == vacuumed_size(reference)


def test_a_thread_that_wakes_up_after_an_idle_plan_keeps_everything(saver: BaseSaver) -> None:
    app, _ = two_runs(saver)
    plans = plan_prune(saver, PrunePolicy(idle_since=boundary()))
    assert [(p.thread_id, p.count) for p in plans] == [("t", 8)]
    app.invoke({"x": 3}, cfg("t"))  # the thread wakes up between the plan and the prune
    before = set(views(app, "t"))
    report = execute_prune(saver, plans)
    assert (report.checkpoints, report.left) == (0, 8)  # idle no more: it goes on whole
    assert set(views(app, "t")) == before and len(before) == 12


def test_a_thread_that_wakes_up_is_not_counted_among_the_pruned(saver: BaseSaver) -> None:
    app, _ = two_runs(saver, "awake")
    two_runs(saver, "asleep")
    plans = plan_prune(saver, PrunePolicy(idle_since=boundary()))
    app.invoke({"x": 3}, cfg("awake"))
    report = execute_prune(saver, plans)
    assert (report.threads, report.checkpoints, report.left) == (1, 8, 8)
