"""`add_node(..., defer=True)`: a node that waits until branches of different lengths have
all finished, and a summary that runs once after a `Send` fan-out beside a longer branch."""

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


def main(checkpointer: Any) -> Any:
    return branches(checkpointer), fan_out(checkpointer)
