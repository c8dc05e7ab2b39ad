"""Run-time context (LangGraph 1.x): `StateGraph(State, context_schema=Context)`, nodes that
take `runtime: Runtime[Context]`, `get_runtime()`, and `invoke(..., context={...})` (a dict
made a Context); a subgraph's nodes read the same context."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime, get_runtime


@dataclass
class Context:
    user_id: str
    language: str = "en"


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def greet(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    runtime.stream_writer({"greeting": runtime.context.user_id})
    return {"log": [f"hello {runtime.context.user_id} ({runtime.context.language})"]}


def check(state: State) -> dict[str, Any]:
    runtime = get_runtime(Context)
    return {"log": [f"checked {runtime.context.user_id}, store {runtime.store}"]}


def main(checkpointer: Any) -> Any:
    inner = StateGraph(State, context_schema=Context)
    inner.add_node("check", check)
    inner.add_edge(START, "check")
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("greet", greet)
    builder.add_node("sub", inner.compile())
    builder.add_edge(START, "greet")
    builder.add_edge("greet", "sub")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "c"}}
    chunks = list(
        graph.stream(
            {"log": []}, config, context={"user_id": "u1"}, stream_mode=["custom", "updates"]
        )
    )
    again = graph.invoke({"log": []}, {"configurable": {"thread_id": "d"}},
                         context=Context(user_id="u2", language="fr"))  # fmt: skip
    return chunks, again, graph.get_state_history(config)
