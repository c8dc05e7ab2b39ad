"""Parallel branches where one fails: the error propagates, the finished branch's writes are
kept, and invoke(None) re-runs only the failed one."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    results: Annotated[list[str], operator.add]


def main(checkpointer: Any) -> Any:
    calls: list[str] = []
    flaky = {"fails": True}

    def stable(state: State) -> dict[str, Any]:
        calls.append("stable")
        return {"results": ["stable"]}

    def unstable(state: State) -> dict[str, Any]:
        calls.append("unstable")
        if flaky.pop("fails", False):
            raise ConnectionError("upstream timed out")
        return {"results": ["unstable"]}

    builder = StateGraph(State)
    builder.add_node("stable", stable)
    builder.add_node("unstable", unstable)
    builder.add_node("merge", lambda state: {"results": ["merged"]})
    builder.add_edge(START, "stable")
    builder.add_edge(START, "unstable")
    builder.add_edge(["stable", "unstable"], "merge")
    builder.add_edge("merge", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "f"}}
    try:
        graph.invoke({"results": []}, config)
        error = None
    except ConnectionError as exc:
        error = str(exc)
    failed = graph.get_state(config)
    errors = [(t.name, t.error) for t in failed.tasks]
    done = graph.invoke(None, config)
    return error, errors, done, sorted(calls), graph.get_state_history(config)
