"""Each optional fast path of the saver contract gives what its default gives, on every saver.

The contract's core is LangGraph-shaped (get_tuple, list, put, put_writes, get_writes,
delete_thread, delete_checkpoints, thread info, list_threads); the other methods have
defaults written on that core, which a backend may override to use its indexes. `Core`
hides a saver's overrides, so the defaults run on the same stored data and both answers
are compared.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from ttcli import END, START, Command, Send, StateGraph, interrupt
from ttcli.configs import RunnableConfig
from ttcli.savers.base import BaseSaver, Checkpoint, CheckpointTuple, TaskWrite, ThreadSummary

API = SimpleNamespace(
    StateGraph=StateGraph, START=START, END=END, interrupt=interrupt, Command=Command, Send=Send
)


class Core(BaseSaver):
    """A saver with only the contract's core: every fast path runs its default."""

    def __init__(self, saver: BaseSaver) -> None:
        self.saver = saver

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        return self.saver.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.saver.put_writes(config, writes, task_id, task_path)

    def get_writes(self, config: RunnableConfig) -> builtins.list[TaskWrite]:
        return self.saver.get_writes(config)

    def stored_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.stored_tuple(config)

    def stored_pending_writes(
        self, config: RunnableConfig, checkpoint_ids: Iterable[str]
    ) -> dict[str, builtins.list[TaskWrite]]:
        return self.saver.stored_pending_writes(config, checkpoint_ids)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)

    def delete_checkpoints(
        self, config: RunnableConfig, checkpoint_ids: Sequence[str], *, collect: bool = True
    ) -> None:
        self.saver.delete_checkpoints(config, checkpoint_ids, collect=collect)

    def get_thread_info(self, thread_id: str) -> dict[str, Any]:
        return self.saver.get_thread_info(thread_id)

    def set_thread_info(self, thread_id: str, info: Mapping[str, Any]) -> None:
        self.saver.set_thread_info(thread_id, info)

    def list_threads(self, prefix: str = "") -> Iterator[ThreadSummary]:
        return self.saver.list_threads(prefix)


def cfg(thread: str = "t", checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


@pytest.fixture
def branched(saver: BaseSaver) -> list[str]:
    """A thread with a fan-out, an edit of the past, a replay and a paused review; its ids."""
    app = graphs.fan_out(API).compile(checkpointer=saver)
    app.invoke({"log": []}, cfg())
    past = list(app.get_state_history(cfg()))
    app.update_state(past[3].config, {"log": ["edited"]})
    app.invoke(None, past[2].config)
    review = graphs.review(API).compile(checkpointer=saver)
    review.invoke({"plan": "", "log": []}, cfg("r"))
    return [t.checkpoint["id"] for t in saver.list(cfg())]


def _light(found: Sequence[CheckpointTuple]) -> list[tuple[Any, ...]]:
    """What `list_metadata` promises to give exactly as `list` does."""
    return [
        (t.config, t.parent_config, t.checkpoint["id"], t.checkpoint["channel_versions"],
         {k: v for k, v in t.metadata.items() if k != "writes"},
         sorted(t.metadata.get("writes") or {}))
        for t in found
    ]  # fmt: skip


@pytest.mark.parametrize("thread", ["t", "r"])
def test_list_metadata_gives_what_list_gives(
    saver: BaseSaver, branched: list[str], thread: str
) -> None:
    default = Core(saver)
    for kwargs in ({}, {"limit": 3}, {"filter": {"source": "loop"}}, {"before": cfg(thread,
                   branched[2])}):  # fmt: skip
        assert _light(saver.list_metadata(cfg(thread), **kwargs)) == _light(
            default.list_metadata(cfg(thread), **kwargs)
        )


def test_id_paths_give_what_the_defaults_give(saver: BaseSaver, branched: list[str]) -> None:
    default = Core(saver)
    middle = branched[len(branched) // 2]
    for below in (None, middle, branched[-1]):
        for limit in (None, 1, 4):
            assert saver.checkpoint_ids(cfg(), below=below, limit=limit) == default.checkpoint_ids(
                cfg(), below=below, limit=limit
            )
        assert saver.count_checkpoints(cfg(), below=below) == default.count_checkpoints(
            cfg(), below=below
        )
    assert saver.neighbour_ids(cfg(), [middle, branched[0]]) == default.neighbour_ids(
        cfg(), [middle, branched[0]]
    )


def test_children_give_what_the_default_gives(saver: BaseSaver, branched: list[str]) -> None:
    default = Core(saver)
    for checkpoint_id in branched:
        assert saver.child_ids(cfg("t", checkpoint_id)) == default.child_ids(
            cfg("t", checkpoint_id)
        )
    assert any(len(saver.child_ids(cfg("t", i))) == 2 for i in branched)  # the branches show


def test_a_saver_written_elsewhere_runs_a_graph(saver: BaseSaver) -> None:
    app = graphs.linear(API).compile(checkpointer=Core(saver))
    assert app.invoke({"x": 1, "log": []}, cfg())["x"] == 20


def test_short_ids_give_what_the_default_gives(saver: BaseSaver, branched: list[str]) -> None:
    default = Core(saver)
    for checkpoint_id in branched[:3]:
        tail = checkpoint_id[-8:]
        assert saver.ids_ending(cfg(), tail) == default.ids_ending(cfg(), tail) == [checkpoint_id]
    assert saver.ids_ending(cfg(), "zzzzzzzz") == default.ids_ending(cfg(), "zzzzzzzz") == []
