"""The docs' "multiple schemas" example: nodes annotated with schemas of their own read only
those keys, and a private channel passes a value between two nodes."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph


class InputState(TypedDict):
    user_input: str


class OutputState(TypedDict):
    graph_output: str


class OverallState(TypedDict):
    foo: str
    user_input: str
    graph_output: str


class PrivateState(TypedDict):
    bar: str


def node_1(state: InputState) -> OverallState:
    return {"foo": state["user_input"] + " name"}


def node_2(state: OverallState) -> PrivateState:
    return {"bar": state["foo"] + " is"}


def node_3(state: PrivateState) -> OutputState:
    return {"graph_output": state["bar"] + " Lance"}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(OverallState)
    builder.add_node("node_1", node_1)
    builder.add_node("node_2", node_2)
    builder.add_node("node_3", node_3)
    builder.add_edge(START, "node_1")
    builder.add_edge("node_1", "node_2")
    builder.add_edge("node_2", "node_3")
    builder.add_edge("node_3", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "p"}}
    result = graph.invoke({"user_input": "My"}, config)
    updates = list(graph.stream({"user_input": "Your"}, {"configurable": {"thread_id": "q"}}))
    return result, updates, graph.get_state(config).values, graph.get_state_history(config)
