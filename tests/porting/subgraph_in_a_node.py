"""A subgraph with its own schema, invoked inside a node that translates the state; it
inherits the parent's checkpointer."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph


class Parent(TypedDict):
    question: str
    answer: str


class Research(TypedDict):
    query: str
    notes: Annotated[list[str], operator.add]


def search(state: Research) -> dict[str, Any]:
    return {"notes": [f"found {state['query']}"]}


def summarise(state: Research) -> dict[str, Any]:
    return {"notes": [f"{len(state['notes'])} note(s)"]}


research_builder = StateGraph(Research)
research_builder.add_node("search", search)
research_builder.add_node("summarise", summarise)
research_builder.add_edge(START, "search")
research_builder.add_edge("search", "summarise")
research = research_builder.compile()


def call_research(state: Parent) -> dict[str, Any]:
    found = research.invoke({"query": state["question"], "notes": []})
    return {"answer": "; ".join(found["notes"])}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(Parent)
    builder.add_node("research", call_research)
    builder.add_edge(START, "research")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "r"}}
    result = graph.invoke({"question": "tides", "answer": ""}, config)
    tasks = [t for s in graph.get_state_history(config) for t in s.tasks if t.state]
    inner = list(graph.get_state_history(tasks[0].state))
    return (
        result,
        [(s.values, s.next, s.metadata["step"]) for s in inner],
        graph.get_state_history(config),
    )
