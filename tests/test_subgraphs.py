"""Subgraphs, on LangGraph and on ttcli: a compiled graph as a node, a graph invoked inside a
node, their checkpoints under `node:<task id>`, interrupts resumed from the parent,
`Command.PARENT`, `get_state(subgraphs=True)` and `stream(subgraphs=True)`."""

from __future__ import annotations

import asyncio
import operator
import re
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

from tests.oracle import Scenario, cfg, normalise, plain, same_as_langgraph


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


def handoff(api: SimpleNamespace) -> Any:
    """An inner node hands off to a node of the parent: Command(graph=Command.PARENT)."""

    def agent(state: Inner) -> Any:
        return api.Command(graph=api.Command.PARENT, goto="other", update={"log": ["handoff"]})

    inner = api.StateGraph(Inner)
    inner.add_node("start", lambda state: {"log": ["start"]})
    inner.add_node("agent", agent)
    inner.add_edge(api.START, "start")
    inner.add_edge("start", "agent")
    builder = api.StateGraph(Outer)
    builder.add_node("child", inner.compile())
    builder.add_node("other", lambda state: {"log": ["other"]})
    builder.add_node("post", lambda state: {"log": ["post"]})
    builder.add_edge(api.START, "child")
    builder.add_edge("child", "post")
    app = builder.compile(checkpointer=api.Saver())
    return app.invoke({"log": [], "x": 0}, cfg()), thread_view(app)


def streamed(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = outer_graph(api, inner_graph(api, calls))
    modes = ["updates", "values", "custom"]
    first = list(app.stream({"log": [], "x": 0}, cfg(), stream_mode=modes, subgraphs=True))
    resumed = list(app.stream(api.Command(resume="C"), cfg(), subgraphs=True))
    hidden = list(app.stream({"log": [], "x": 0}, cfg("h"), stream_mode=["updates", "custom"]))
    return [plain(hide_task_ids(chunk)) for chunk in [*first, "--", *resumed, "--", *hidden]]


def hide_task_ids(chunk: Any) -> Any:
    if isinstance(chunk, tuple) and chunk and isinstance(chunk[0], tuple):
        return (tuple(ns.split(":")[0] for ns in chunk[0]), *chunk[1:])
    return chunk


def edits_and_replays(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    app = outer_graph(api, inner_graph(api, calls))
    app.invoke({"log": [], "x": 0}, cfg())
    child = app.get_state(cfg()).tasks[0].state
    edited = app.update_state(child, {"log": ["edited"], "y": 9}, as_node="inner1")
    inner = app.get_state(edited)
    parent_after_edit = app.get_state(cfg())
    resumed = app.invoke(api.Command(resume="D"), cfg())
    step0 = next(s for s in app.get_state_history(cfg()) if s.metadata["step"] == 0)
    calls.clear()
    replayed = plain(app.invoke(None, step0.config))
    again = app.invoke(api.Command(resume="E"), cfg())
    return (
        (inner.values, inner.next, inner.metadata["source"]),
        (parent_after_edit.values, parent_after_edit.next),
        resumed,
        replayed,
        again,
        calls,
        thread_view(app),
    )


def nested_two_levels(api: SimpleNamespace) -> Any:
    calls: list[str] = []
    middle = api.StateGraph(Inner)
    middle.add_node("grandchild", inner_graph(api, calls))
    middle.add_edge(api.START, "grandchild")
    app = outer_graph(api, middle.compile())
    paused = plain(app.invoke({"log": [], "x": 0}, cfg()))
    state = app.get_state(cfg(), subgraphs=True)
    deepest = state.tasks[0].state.tasks[0].state
    parents = sorted(ns.split(":")[0] for ns in deepest.metadata["parents"])
    done = app.invoke(api.Command(resume="F"), cfg())
    return paused, (deepest.values, deepest.next, parents), done, calls


def two_subgraphs_in_one_node(api: SimpleNamespace) -> Any:
    """A node that runs a subgraph twice: each run saves under a namespace of its own."""
    calls: list[str] = []
    sub = inner_graph(api, calls)

    def twice(state: Outer) -> dict[str, Any]:
        first = sub.invoke({"log": ["first"]})
        second = sub.invoke({"log": ["second"]})
        return {"log": [*first["log"], *second["log"]]}

    app = outer_graph(api, twice)
    app.invoke({"log": [], "x": 0}, cfg())
    done = plain(app.invoke(api.Command(resume="G"), cfg()))
    again = app.invoke(api.Command(resume="H"), cfg())
    namespaces = {
        re.sub(r":[0-9a-f-]{36}", ":<task>", t.config["configurable"]["checkpoint_ns"])
        for t in app.checkpointer.list(None)
    }
    return done, again, calls, sorted(namespaces)


def parent_update_while_paused(api: SimpleNamespace) -> Any:
    """An update to the parent while its subgraph waits: the subgraph starts again in a new
    namespace, and the answer sent next goes to its first question."""
    calls: list[str] = []
    app = outer_graph(api, inner_graph(api, calls))
    app.invoke({"log": [], "x": 0}, cfg())
    app.update_state(cfg(), {"x": 5}, as_node="pre")
    done = app.invoke(api.Command(resume="Z"), cfg())
    return done, calls, thread_view(app)


def async_subgraph(api: SimpleNamespace) -> Any:
    """An async node awaiting a subgraph's ainvoke, under the parent's ainvoke."""
    calls: list[str] = []
    sub = inner_graph(api, calls)

    async def child(state: Outer) -> dict[str, Any]:
        found = await sub.ainvoke({"log": ["async"]})
        return {"log": found["log"]}

    app = outer_graph(api, child)

    async def scenario() -> Any:
        paused = plain(await app.ainvoke({"log": [], "x": 0}, cfg()))
        done = await app.ainvoke(api.Command(resume="W"), cfg())
        return paused, done

    return asyncio.run(scenario()), calls, thread_view(app)


def exit_durability_and_astream(api: SimpleNamespace) -> Any:
    """A paused subgraph with durability="exit", resumed through astream(subgraphs=True)."""
    calls: list[str] = []
    app = outer_graph(api, inner_graph(api, calls))
    paused = plain(app.invoke({"log": [], "x": 0}, cfg(), durability="exit"))
    paused_view = thread_view(app)

    async def resume() -> list[Any]:
        stream = app.astream(api.Command(resume="X"), cfg(), subgraphs=True, durability="exit")
        return [hide_task_ids(chunk) async for chunk in stream]

    chunks = asyncio.run(resume())
    return paused, paused_view, plain(chunks), calls, thread_view(app)


SCENARIOS: list[Scenario] = [
    exit_durability_and_astream,
    parent_update_while_paused,
    async_subgraph,
    two_subgraphs_in_one_node,
    compiled_node,
    graph_in_a_function,
    handoff,
    streamed,
    edits_and_replays,
    nested_two_levels,
]


test_same_as_langgraph = same_as_langgraph(SCENARIOS)
