"""A node calling a flaky service, retried with RetryPolicy; an error retrying cannot fix
(a ValueError, by LangGraph's default) fails at once."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def main(checkpointer: Any) -> Any:
    calls: list[str] = []
    outages = {"left": 2}

    def fetch(state: State) -> dict[str, Any]:
        calls.append("fetch")
        if outages["left"]:
            outages["left"] -= 1
            raise ConnectionError("service unavailable")
        return {"log": ["fetched"]}

    def parse(state: State) -> dict[str, Any]:
        calls.append("parse")
        raise ValueError("bad payload")

    quick = RetryPolicy(initial_interval=0, jitter=False)
    builder = StateGraph(State)
    builder.add_node("fetch", fetch, retry_policy=quick)
    builder.add_node("parse", parse, retry_policy=quick)
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "parse")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "r"}}
    try:
        graph.invoke({"log": []}, config)
        error = None
    except ValueError as exc:
        error = str(exc)
    state = graph.get_state(config)
    return (
        error,
        calls,
        state.values,
        [(t.name, t.error) for t in state.tasks],
        (graph.get_state_history(config)),
    )
