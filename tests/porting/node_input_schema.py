"""`add_node(..., input_schema=...)`: nodes written as lambdas (no annotation to read) given
the schema of what they read, one of them a private channel the state schema lacks."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict):
    question: str
    answer: str


class Draft(TypedDict):
    draft: str


class Question(TypedDict):
    question: str


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("write", lambda s: {"draft": f"about {s['question']}"}, input_schema=Question)
    builder.add_node("polish", lambda s: {"answer": s["draft"].upper()}, input_schema=Draft)
    builder.add_node("show", lambda s: {"answer": f"{sorted(s)}"}, input_schema=Question)
    builder.add_edge(START, "write")
    builder.add_edge("write", "polish")
    builder.add_edge("polish", "show")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "s"}}
    result = graph.invoke({"question": "tides", "answer": ""}, config)
    return result, graph.get_state(config).values, graph.get_state_history(config)
