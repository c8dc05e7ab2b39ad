"""Copying a checkpoint's lineage into a new thread."""

from __future__ import annotations

import datetime as dt
import operator
from contextlib import closing
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

from tests import graphs
from tests.conftest import NewDb
from tests.test_prune import cfg, views
from ttcli import END, START, StateGraph
from ttcli.configs import CheckpointRef
from ttcli.errors import CheckpointNotFoundError
from ttcli.ops.copy import copy_checkpoint, copy_lineage
from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
from ttcli.savers.base import BaseSaver
from ttcli.savers.locate import open_saver

API = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)


def test_copy_takes_the_lineage_only_and_the_copy_runs_on(saver: BaseSaver) -> None:
    calls: list[str] = []
    app = graphs.linear(API, calls).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg("src"))
    step1 = next(s for s in app.get_state_history(cfg("src")) if s.metadata["step"] == 1)
    app.update_state(step1.config, {"x": 7}, as_node="a")  # a second branch, not copied
    source = views(app, "src")

    copied = copy_lineage(saver, step1.config, "dst")
    assert copied["configurable"]["checkpoint_id"] == step1.config["configurable"]["checkpoint_id"]
    target = views(app, "dst")
    assert len(target) == 3  # input, step 0, step 1
    for checkpoint_id, (values, next_nodes, metadata, tasks) in target.items():
        assert metadata == {**source[checkpoint_id][2], "copied_from": "src"}
        assert (values, next_nodes, tasks) == (
            source[checkpoint_id][0],
            source[checkpoint_id][1],
            source[checkpoint_id][3],
        )
    calls.clear()
    assert app.invoke(None, cfg("dst")) == {"x": 20, "log": ["a", "b"]}
    assert calls == []  # b's write at step 1 was copied too, and is reused as on the source
    assert views(app, "src") == source


def test_copy_again_is_harmless(saver: BaseSaver) -> None:
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg("src"))
    first = copy_lineage(saver, cfg("src"), "dst")
    again = copy_lineage(saver, cfg("src"), "dst")
    assert first == again
    assert len(views(app, "dst")) == 4


def test_copy_of_a_missing_checkpoint_fails(saver: BaseSaver) -> None:
    with pytest.raises(CheckpointNotFoundError, match="thread 'nowhere'"):
        copy_lineage(saver, cfg("nowhere"), "dst")
    assert list(saver.list_threads()) == []


def test_pending_writes_are_copied(saver: BaseSaver) -> None:
    calls: list[str] = []
    app = graphs.fan_out(API, calls, fail={"c"}).compile(checkpointer=saver)
    with pytest.raises(ValueError):
        app.invoke({"log": []}, cfg("src"))
    copy_lineage(saver, cfg("src"), "dst")
    calls.clear()
    result: Any = app.invoke(None, cfg("dst"))
    assert result == {"log": ["a", "b", "c", "d"]}
    assert calls == ["c", "d"]


def test_a_copy_cut_off_before_its_writes_completes_when_run_again(saver: BaseSaver) -> None:
    app = graphs.fan_out(API, fail={"c"}).compile(checkpointer=saver)
    with pytest.raises(ValueError):
        app.invoke({"log": []}, cfg("src"))
    head = saver.get_tuple(cfg("src"))
    assert head is not None and saver.get_writes(head.config)
    # what a process killed between the checkpoint and its writes leaves behind
    parent = CheckpointRef.from_config(head.parent_config or {}).checkpoint_id
    copy_lineage(saver, head.parent_config or {}, "dst")
    saver.put(CheckpointRef("dst", "", parent).to_config(), head.checkpoint, head.metadata, {})
    assert saver.get_writes(CheckpointRef("dst").at(head.checkpoint["id"]).to_config()) == []

    assert copy_checkpoint(saver, head, saver, CheckpointRef("dst")) is False
    copied = saver.get_writes(CheckpointRef("dst").at(head.checkpoint["id"]).to_config())
    assert copied == saver.get_writes(head.config)


class Mixed(TypedDict, total=False):
    d: dict[str, Any]
    x: list[str]
    log: Annotated[list[str], operator.add]


def test_a_copied_pruned_thread_reads_like_its_source(new_db: NewDb) -> None:
    """A value and a record part that held equal items in the copy's first (full) checkpoint
    were once one blob; a later write adopted it as an append and changed that checkpoint."""
    first = [f"item-{j}-" + "p" * 30 for j in range(3)]
    other = [f"other-{j}-" + "q" * 30 for j in range(3)]
    builder = StateGraph(Mixed)
    builder.add_node("n1", lambda state: {"x": first})
    builder.add_node("n2", lambda state: {"d": {"a": first, "b": "s"}})
    builder.add_node("n3", lambda state: {"d": {"a": first, "b": "s"}, "x": other})
    builder.add_node("n4", lambda state: {"log": first})
    builder.add_edge(START, "n1")
    builder.add_edge("n1", "n2")
    builder.add_edge("n2", "n3")
    builder.add_edge("n3", "n4")
    db = new_db("ttcli.db")
    with closing(open_saver(db)) as saver:
        app = builder.compile(checkpointer=saver)
        app.invoke({"log": [f"base-{j}-" + "r" * 30 for j in range(3)]}, cfg("t"))
        policy = PrunePolicy(
            older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), keep_last=3
        )
        execute_prune(saver, plan_prune(saver, policy))
        head = saver.get_tuple(cfg("t"))
        assert head is not None
        copy_lineage(saver, head.config, "c")
    with closing(open_saver(db)) as reader:
        for saved in reader.list(cfg("t")):
            copied = reader.get(CheckpointRef("c").at(saved.checkpoint["id"]).to_config())
            assert copied is not None
            assert copied["channel_values"] == saved.checkpoint["channel_values"]


def test_a_copy_another_process_made_under_a_freed_thread_key_reads_as_its_source(
    new_db: NewDb,
) -> None:
    builder = graphs.linear(API)
    db = new_db("ttcli.db")
    with closing(open_saver(db)) as mine, closing(open_saver(db)) as other:
        app = builder.compile(checkpointer=mine)
        app.invoke({"x": 1, "log": ["a long first entry " * 3]}, cfg("y"))
        head = mine.get_tuple(cfg("y"))
        assert head is not None
        copy_lineage(mine, head.config, "x")  # the newest thread key; same checkpoint ids
        list(app.get_state_history(cfg("x")))  # this process now knows x's states
        other.delete_thread("x")  # another process frees x's key and its values,
        copy_lineage(other, head.config, "z")  # and copies again: z gets x's key and ids
        values = {i: view[0] for i, view in views(app, "y").items()}
        copied = views(app, "z")
        assert {i: view[0] for i, view in copied.items()} == values
    with closing(open_saver(db)) as reader:
        assert views(builder.compile(checkpointer=reader), "z") == copied
