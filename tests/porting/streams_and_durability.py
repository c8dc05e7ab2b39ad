"""stream() in its default mode and in several, and durability="exit" keeping one
checkpoint per run."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("draft", lambda state: {"steps": ["draft"]})
    builder.add_node("polish", lambda state: {"steps": ["polish"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "polish")
    graph = builder.compile(checkpointer=checkpointer)
    stream = {"configurable": {"thread_id": "s"}}
    updates = list(graph.stream({"steps": []}, stream))
    both = list(graph.stream({"steps": []}, stream, stream_mode=["values", "updates"]))
    quick = {"configurable": {"thread_id": "exit"}}
    graph.invoke({"steps": []}, quick, durability="exit")
    graph.invoke({"steps": ["again"]}, quick, durability="exit")
    return updates, both, graph.get_state_history(stream), graph.get_state_history(quick)
