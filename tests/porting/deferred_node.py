"""`add_node(..., defer=True)`: a node that waits until branches of different lengths have
all finished, a summary that runs once after a `Send` fan-out beside a longer branch, and an
update at a breakpoint before a deferred node."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def note(name: str) -> Any:
    return lambda state: {"log": [name]}


def branches(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    for name in ("a", "b", "b_2", "c"):
        builder.add_node(name, note(name))
    builder.add_node("d", lambda state: {"log": [f"d saw {sorted(state['log'])}"]}, defer=True)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", "b_2")
    builder.add_edge("b_2", "d")
    builder.add_edge("c", "d")
    builder.add_edge("d", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "deferred"}}
    result = graph.invoke({"log": []}, config)
    return result, graph.get_state_history(config)


def fan_out(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("start", lambda state: {})
    builder.add_node("work", lambda arg: {"log": [f"work {arg['n']}"]})
    builder.add_node("slow", note("slow"))
    builder.add_node("slower", note("slower"))
    builder.add_node("summary", lambda state: {"log": [f"{len(state['log'])} done"]}, defer=True)
    builder.add_edge(START, "start")
    builder.add_conditional_edges(
        "start", lambda state: [Send("work", {"n": n}) for n in (1, 2)], ["work"]
    )
    builder.add_edge("start", "slow")
    builder.add_edge("slow", "slower")
    builder.add_edge("work", "summary")
    builder.add_edge("slower", "summary")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "fan"}}
    result = graph.invoke({"log": []}, config)
    return result, graph.get_state_history(config)


def updated_before_it(checkpointer: Any) -> Any:
    """A breakpoint before the deferred node, an update there, then the run goes on."""
    builder = StateGraph(State)
    builder.add_node("a", note("a"))
    builder.add_node("d", note("d"), defer=True)
    builder.add_edge(START, "a")
    builder.add_edge("a", "d")
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=["d"])
    config = {"configurable": {"thread_id": "update"}}
    graph.invoke({"log": []}, config)
    graph.update_state(config, {"log": ["edited"]}, as_node="a")
    return graph.get_state(config).next, graph.invoke(None, config), graph.get_state_history(config)


def main(checkpointer: Any) -> Any:
    return branches(checkpointer), fan_out(checkpointer), updated_before_it(checkpointer)
