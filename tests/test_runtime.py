"""Runtime behaviour beyond what the conformance suite compares with LangGraph."""

from __future__ import annotations

import threading
from contextlib import closing
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, TypedDict

import pydantic
import pytest

import ttcli
from tests import graphs
from tests.conftest import NewDb
from ttcli import END, START, InMemorySaver, MessagesState, StateGraph
from ttcli.errors import (
    CheckpointNotFoundError,
    ConfigError,
    InvalidUpdateError,
    SerializationError,
)
from ttcli.savers.base import BaseSaver, Checkpoint
from ttcli.savers.locate import open_saver
from ttcli.uuid6 import new_id

API = SimpleNamespace(StateGraph=StateGraph, START=START, END=END)


def cfg(thread: str = "t", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **configurable}}


def ids(app: Any, thread: str = "t") -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] for s in app.get_state_history(cfg(thread))]


@pytest.fixture
def linear_app(saver: BaseSaver) -> Any:
    return graphs.linear(API).compile(checkpointer=saver)


def test_metadata_writes_follow_the_seed_table(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    writes = [s.metadata["writes"] for s in linear_app.get_state_history(cfg())]
    assert writes == [
        {"b": {"x": 20, "log": ["b"]}},
        {"a": {"x": 2, "log": ["a"]}},
        None,
        {"__start__": {"x": 1, "log": []}},
    ]
    config = linear_app.update_state(cfg(), {"x": 3}, as_node="a")
    assert linear_app.get_state(config).metadata["writes"] == {"a": {"x": 3}}


def test_checkpoint_ids_sort_in_creation_order_and_chain_by_parent(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    history = list(linear_app.get_state_history(cfg()))
    checkpoint_ids = [s.config["configurable"]["checkpoint_id"] for s in history]
    assert checkpoint_ids == sorted(checkpoint_ids, reverse=True)
    assert [
        s.parent_config["configurable"]["checkpoint_id"] for s in history[:-1]
    ] == checkpoint_ids[1:]
    assert history[-1].parent_config is None
    assert all(s.created_at and s.created_at.endswith("+00:00") for s in history)


def test_replay_keeps_the_old_branch_unchanged(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    before = [(s.config, s.values, s.next, s.metadata) for s in linear_app.get_state_history(cfg())]
    step0 = next(s for s in linear_app.get_state_history(cfg()) if s.metadata["step"] == 0)
    linear_app.invoke(None, step0.config)
    after = {
        s.config["configurable"]["checkpoint_id"]: s for s in linear_app.get_state_history(cfg())
    }
    for config, values, next_nodes, metadata in before:
        kept = after[config["configurable"]["checkpoint_id"]]
        assert (kept.values, kept.next, kept.metadata) == (values, next_nodes, metadata)
    fork = next(s for s in after.values() if s.metadata["source"] == "fork")
    assert fork.parent_config == step0.config
    assert (fork.values, fork.next, fork.metadata["step"]) == (step0.values, step0.next, 1)


def test_returned_values_are_copies(linear_app: Any) -> None:
    result = linear_app.invoke({"x": 1, "log": []}, cfg())
    result["log"].append("tampered")
    linear_app.get_state(cfg()).values["log"].append("tampered")
    assert linear_app.get_state(cfg()).values["log"] == ["a", "b"]


def test_history_with_a_checkpoint_id_narrows_to_it(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    target = ids(linear_app)[2]
    found = list(linear_app.get_state_history(cfg(checkpoint_id=target)))
    assert [s.config["configurable"]["checkpoint_id"] for s in found] == [target]


def test_unknown_checkpoint_id_is_an_error_not_a_fresh_run(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    missing = cfg(checkpoint_id="1f000000-0000-6000-8000-000000000000")
    with pytest.raises(
        CheckpointNotFoundError,
        match="checkpoint '1f000000-0000-6000-8000-000000000000' not found in thread 't'",
    ):
        linear_app.invoke(None, missing)
    with pytest.raises(CheckpointNotFoundError):
        linear_app.update_state(missing, {"x": 1})
    assert len(ids(linear_app)) == 4
    assert linear_app.get_state(missing).values == {}


def test_copy_makes_a_sibling_fork(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg())
    step1 = next(s for s in linear_app.get_state_history(cfg()) if s.metadata["step"] == 1)
    copied = linear_app.get_state(linear_app.update_state(step1.config, None, as_node="__copy__"))
    assert copied.parent_config == step1.parent_config
    assert (copied.values, copied.next, copied.metadata["source"], copied.metadata["step"]) == (
        step1.values,
        step1.next,
        "fork",
        2,
    )
    with pytest.raises(InvalidUpdateError, match="Cannot copy a non-existent checkpoint"):
        linear_app.update_state(
            cfg(checkpoint_id="1f000000-0000-6000-8000-000000000000"), None, as_node="__copy__"
        )


def test_update_as_end_marks_pending_tasks_done(linear_app: Any) -> None:
    linear_app.invoke({"x": 1, "log": []}, cfg(), interrupt_before=["b"])
    assert linear_app.get_state(cfg()).next == ("b",)
    done = linear_app.get_state(linear_app.update_state(cfg(), None, as_node=END))
    assert done.next == ()
    assert done.values == {"x": 2, "log": ["a"]}
    with pytest.raises(InvalidUpdateError, match="takes no values"):
        linear_app.update_state(cfg(), {"x": 1}, as_node=END)


def test_parallel_nodes_run_at_the_same_time() -> None:
    # b and c each wait for the other: this only finishes if they run concurrently
    barrier = threading.Barrier(2, timeout=10)

    class S(ttcli.MessagesState):
        pass

    def a(state: Any) -> dict[str, Any]:
        return {}

    def meet(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            barrier.wait()
            return {"messages": [("ai", name)]}

        return run

    builder = StateGraph(S)
    builder.add_node("a", a)
    builder.add_node("b", meet("b"))
    builder.add_node("c", meet("c"))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    result = builder.compile().invoke({"messages": []})
    # writes are applied in task order, not finishing order
    assert [m.content for m in result["messages"]] == ["b", "c"]


@pytest.mark.parametrize(
    "slow_name, fast_name", [("a", "b"), ("b", "a")], ids=["slow first", "fast first"]
)
def test_a_parallel_task_s_update_streams_while_its_sibling_still_runs(
    slow_name: str, fast_name: str
) -> None:
    # the slow task waits until the caller has seen the fast one's update: that only
    # happens if an update is passed on as its task finishes, not held until the step ends
    seen_fast = threading.Event()
    released: list[bool] = []

    def slow(state: Any) -> dict[str, Any]:
        released.append(seen_fast.wait(timeout=10))
        return {"messages": [("ai", "slow")]}

    builder = StateGraph(MessagesState)
    builder.add_node(slow_name, slow)
    builder.add_node(fast_name, lambda state: {"messages": [("ai", "fast")]})
    builder.add_edge(START, slow_name)
    builder.add_edge(START, fast_name)
    order = []
    for update in builder.compile().stream({"messages": []}, stream_mode="updates"):
        order += list(update)
        if fast_name in update:
            seen_fast.set()
    assert order == [fast_name, slow_name]
    assert released == [True]


@dataclass
class DataState:
    count: int
    notes: list[str] = field(default_factory=list)


class ModelState(pydantic.BaseModel):
    count: int
    notes: list[str] = []


@pytest.mark.parametrize("schema", [DataState, ModelState])
def test_a_class_state_reaches_nodes_and_branches_as_an_instance(
    saver: BaseSaver, schema: Any
) -> None:
    seen: list[Any] = []

    def bump(state: Any) -> dict[str, Any]:
        seen.append(state)
        return {"count": state.count + 1}

    def route(state: Any) -> str:
        seen.append(state)  # the branch sees its node's write applied
        return END

    builder = StateGraph(schema)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")
    builder.add_conditional_edges("bump", route)
    app = builder.compile(checkpointer=saver)
    # as in LangGraph: an instance input writes every field, a dict input only its keys
    assert app.invoke(schema(count=1), cfg()) == {"count": 2, "notes": []}
    assert app.invoke({"count": 5}, cfg("dict")) == {"count": 6}
    assert seen == [schema(count=1), schema(count=2), schema(count=5), schema(count=6)]
    assert app.get_state(cfg()).values == {"count": 2, "notes": []}


def test_nodes_and_branches_may_take_the_config() -> None:
    seen: list[str] = []

    def node(state: graphs.LinearState, config: dict[str, Any]) -> dict[str, Any]:
        seen.append(config["configurable"]["thread_id"])
        return {"x": state["x"]}

    def route(state: graphs.LinearState, config: dict[str, Any]) -> str:
        seen.append(config["configurable"]["user"])
        return END

    builder = StateGraph(graphs.LinearState)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_conditional_edges("n", route)
    builder.compile(checkpointer=InMemorySaver()).invoke({"x": 1}, cfg("cfg-thread", user="u"))
    assert seen == ["cfg-thread", "u"]


def test_message_ids_are_fixed_at_input_so_replays_keep_them(saver: BaseSaver) -> None:
    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [("assistant", f"echo {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    app = builder.compile(checkpointer=saver)
    first = app.invoke({"messages": [("user", "hi")]}, cfg())
    first_input = next(
        s for s in app.get_state_history(cfg()) if (s.metadata or {})["source"] == "input"
    )
    replayed = app.invoke(None, first_input.config)
    assert first["messages"][0].id == replayed["messages"][0].id
    assert first["messages"][1].id != replayed["messages"][1].id  # the bot ran again


def test_bad_run_options_are_config_errors(linear_app: Any) -> None:
    with pytest.raises(ConfigError, match="recursion_limit must be at least 1"):
        linear_app.invoke({"x": 1, "log": []}, {**cfg(), "recursion_limit": 0})
    with pytest.raises(ConfigError, match="Unknown stream_mode 'nope'"):
        list(linear_app.stream({"x": 1, "log": []}, cfg(), stream_mode="nope"))
    assert ids(linear_app) == []


def test_no_checkpointer_still_runs_and_streams() -> None:
    app = graphs.counter_loop(API, until=2).compile()
    assert list(app.stream({"n": 0, "trail": []}, stream_mode="updates")) == [
        {"count": {"n": 1, "trail": [1]}},
        {"count": {"n": 2, "trail": [2]}},
    ]


def test_invoke_with_another_stream_mode_returns_all_chunks(linear_app: Any) -> None:
    chunks = linear_app.invoke({"x": 1, "log": []}, cfg(), stream_mode="updates")
    assert chunks == [{"a": {"x": 2, "log": ["a"]}}, {"b": {"x": 20, "log": ["b"]}}]


def test_a_superstep_whose_tasks_all_finished_before_is_not_run_again(saver: BaseSaver) -> None:
    calls: list[str] = []
    app = graphs.linear(API, calls).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg(), interrupt_before=["b"])
    head = app.get_state(cfg())
    (task,) = head.tasks
    # b's writes saved, then the process died before the superstep's checkpoint
    saver.put_writes(head.config, [("x", 99), ("log", ["b"])], task.id, "~__pregel_pull, b")
    calls.clear()
    assert app.invoke(None, cfg()) == {"x": 99, "log": ["a", "b"]}
    assert calls == []


class Table(TypedDict):
    table: dict[str, Any]
    step: int


def test_hooks_on_put_and_put_writes_see_every_save_and_what_they_change_is_stored(
    saver: BaseSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saver's put and put_writes replaced by hooks (auditing, redacting in place) are
    called for every checkpoint and every task's writes of a run, and a value a hook
    changes in place is stored changed: no save goes around them."""
    put, put_writes = saver.put, saver.put_writes
    puts: list[int] = []
    writes: list[str] = []

    def audited_put(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        puts.append(metadata["step"])
        table = checkpoint["channel_values"].get("table")
        if table is not None:
            table["audited"] = metadata["step"]  # in place, after the task wrote it
        return put(config, checkpoint, metadata, versions)

    def audited_writes(config: Any, values: Any, task_id: str, task_path: str = "") -> None:
        writes.append(task_id)
        put_writes(config, values, task_id, task_path)

    monkeypatch.setattr(saver, "put", audited_put)
    monkeypatch.setattr(saver, "put_writes", audited_writes)

    def step(state: Table) -> dict[str, Any]:
        table = dict(state["table"])
        table[f"key{state['step']}"] = {"n": state["step"]}
        return {"table": table, "step": state["step"] + 1}

    builder = StateGraph(Table)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: "step" if s["step"] < 4 else END)
    app = builder.compile(checkpointer=saver)
    start = {f"key{i}": {"n": i, "text": "x" * 30} for i in range(40)}
    app.invoke({"table": start, "step": 0}, cfg())
    stored = [(s.metadata or {}, s.values) for s in app.get_state_history(cfg())]
    assert sorted(puts) == sorted(metadata["step"] for metadata, _ in stored)
    assert len(writes) == len(stored) - 1  # every step's task (START's too)
    for metadata, values in stored:
        if metadata["source"] == "loop":
            assert values["table"]["audited"] == metadata["step"]


def test_a_step_whose_checkpoint_cannot_be_stored_stores_none_of_its_writes(
    saver: BaseSaver,
) -> None:
    """`put_step` saves a superstep whole or not at all."""
    root = Checkpoint(v=1, id=new_id(-1), ts="2026-12-01T00:00:00+00:00", channel_values={},
                      channel_versions={}, versions_seen={}, updated_channels=None)  # fmt: skip
    stored = saver.put(cfg(), root, {"source": "input", "step": -1}, {})
    child = Checkpoint(v=1, id=new_id(0, after=root["id"]), ts=root["ts"],
                       channel_values={"n": 2**70}, channel_versions={"n": 1},
                       versions_seen={}, updated_channels=["n"])  # fmt: skip
    with pytest.raises(SerializationError):
        saver.put_step(
            stored,
            [("task", "", [("n", {"big": "x" * 100})])],
            (child, {"source": "loop", "step": 0}, {"n": 1}),
        )
    kept = saver.get_tuple(stored)
    assert kept is not None and kept.pending_writes == []
    assert [s.checkpoint["id"] for s in saver.list(cfg())] == [root["id"]]


def test_a_task_whose_checkpoint_cannot_be_stored_keeps_its_writes(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ttcli.errors import StorageError

    calls: list[str] = []
    with closing(open_saver(new_db("ttcli.db"))) as saver:
        app = graphs.linear(API, calls).compile(checkpointer=saver)
        put = saver.put
        stored = 0

        def failing_put(*args: Any, **kwargs: Any) -> Any:
            nonlocal stored
            stored += 1
            if stored == 3:  # the checkpoint after node a
                raise StorageError("disk full")
            return put(*args, **kwargs)

        monkeypatch.setattr(saver, "put", failing_put)
        with pytest.raises(StorageError, match="disk full"):
            app.invoke({"x": 1, "log": []}, {"configurable": {"thread_id": "t"}})
        monkeypatch.undo()
        state = app.get_state({"configurable": {"thread_id": "t"}})
        assert [t.result for t in state.tasks] == [{"x": 2, "log": ["a"]}]  # a's writes kept
        assert app.invoke(None, {"configurable": {"thread_id": "t"}})["x"] == 20
    assert calls == ["a", "b"]  # a did not run again
