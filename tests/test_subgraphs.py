"""Subgraphs, on LangGraph and on ttcli: a compiled graph as a node, a graph invoked inside a
node, their checkpoints under `node:<task id>`, interrupts resumed from the parent,
`Command.PARENT`, `get_state(subgraphs=True)` and `stream(subgraphs=True)`."""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest

from tests.conftest import SAVERS
from tests.oracle import LANGGRAPH, cfg, normalise, plain, ttcli_api

Scenario = Callable[[SimpleNamespace], Any]


class Outer(TypedDict):
    log: Annotated[list[str], operator.add]
    x: int


class Inner(TypedDict):
    log: Annotated[list[str], operator.add]
    y: int


def inner_graph(api: SimpleNamespace, calls: list[str]) -> Any:
    """START -> inner1 (writes a custom chunk) -> inner2 (asks) -> END."""

    def inner1(state: Inner) -> dict[str, Any]:
        calls.append("inner1")
        api.get_stream_writer()("in1")
        return {"log": ["inner1"], "y": 1}

    def inner2(state: Inner) -> dict[str, Any]:
        calls.append("inner2")
        return {"log": [f"inner2:{api.interrupt('q?')}"]}

    builder = api.StateGraph(Inner)
    builder.add_node("inner1", inner1)
    builder.add_node("inner2", inner2)
    builder.add_edge(api.START, "inner1")
    builder.add_edge("inner1", "inner2")
    return builder.compile()


def outer_graph(api: SimpleNamespace, child: Any) -> Any:
    """START -> pre -> child -> post -> END, `child` a compiled graph or a function."""
    builder = api.StateGraph(Outer)
    builder.add_node("pre", lambda state: {"log": ["pre"]})
    builder.add_node("child", child)
    builder.add_node("post", lambda state: {"log": ["post"]})
    builder.add_edge(api.START, "pre")
    builder.add_edge("pre", "child")
    builder.add_edge("child", "post")
    return builder.compile(checkpointer=api.Saver())


def thread_view(app: Any, thread: str = "t") -> Any:
    """The parent's history, and each subgraph namespace's history its tasks point at, with
    checkpoint ids (which differ between runtimes) as the step of the checkpoint named."""
    parent = list(app.get_state_history(cfg(thread)))
    steps = {s.config["configurable"]["checkpoint_id"]: s.metadata["step"] for s in parent}
    inner = []
    for snap in parent:
        for task in snap.tasks:
            if task.state is not None:
                namespace = task.state["configurable"]["checkpoint_ns"]
                history = list(app.get_state_history(task.state))
                inner.append(
                    (namespace.split(":")[0], snap.metadata["step"], by_step(history, steps))
                )
    return normalise(parent), inner


def by_step(history: list[Any], steps: dict[str, int]) -> Any:
    rows = normalise(history)
    for row in rows:
        parents = row["metadata"]["parents"]
        row["metadata"]["parents"] = {ns: steps.get(i, "?") for ns, i in parents.items()}
    return rows


def compiled_node(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = outer_graph(api, inner_graph(api, calls))
    paused = plain(app.invoke({"log": [], "x": 0}, cfg()))
    live = app.get_state(cfg())
    nested = app.get_state(cfg(), subgraphs=True).tasks[0].state
    inner_view = (nested.values, nested.next, plain(nested.interrupts), nested.metadata["step"])
    resumed = app.invoke(api.Command(resume="A"), cfg())
    return (
        paused,
        (live.next, plain(live.tasks[0].interrupts), live.tasks[0].state["configurable"].keys()),
        inner_view,
        resumed,
        calls,
        thread_view(app),
    )


def graph_in_a_function(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    sub = inner_graph(api, calls)

    def child(state: Outer) -> dict[str, Any]:
        found = sub.invoke({"log": ["from-child"]})
        return {"log": found["log"], "x": found["y"]}

    app = outer_graph(api, child)
    paused = plain(app.invoke({"log": [], "x": 0}, cfg()))
    resumed = app.invoke(api.Command(resume="B"), cfg())
    return paused, resumed, calls, thread_view(app)


SCENARIOS: list[Scenario] = [compiled_node, graph_in_a_function]


@pytest.mark.parametrize("backend", SAVERS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_same_as_langgraph(scenario: Scenario, backend: str, tmp_path: Path) -> None:
    assert scenario(ttcli_api(backend, tmp_path)) == scenario(LANGGRAPH)
