"""A compiled subgraph as a node, sharing a key with its parent; an interrupt inside it is
answered from the parent, and get_state(subgraphs=True) shows where it stopped."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class Parent(TypedDict):
    foo: str


class Child(TypedDict):
    foo: str
    bar: str


def child_one(state: Child) -> dict[str, Any]:
    return {"bar": "bar"}


def child_two(state: Child) -> dict[str, Any]:
    name = interrupt("who?")
    return {"foo": f"{state['foo']}|{state['bar']}|{name}"}


def main(checkpointer: Any) -> Any:
    child = StateGraph(Child)
    child.add_node("child_one", child_one)
    child.add_node("child_two", child_two)
    child.add_edge(START, "child_one")
    child.add_edge("child_one", "child_two")
    builder = StateGraph(Parent)
    builder.add_node("start", lambda state: {"foo": "hi"})
    builder.add_node("child", child.compile())
    builder.add_edge(START, "start")
    builder.add_edge("start", "child")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "sub"}}
    paused = graph.invoke({"foo": ""}, config)
    inner = graph.get_state(config, subgraphs=True).tasks[0].state
    done = graph.invoke(Command(resume="ann"), config)
    return paused["foo"], (inner.values, inner.next), done, graph.get_state_history(config)
