"""Review and edit at a breakpoint: interrupt_before a tool, update_state, then go on."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    query: str
    tool_input: str
    log: Annotated[list[str], operator.add]


def plan(state: State) -> dict[str, Any]:
    return {"tool_input": state["query"].upper(), "log": ["plan"]}


def tool(state: State) -> dict[str, Any]:
    return {"log": [f"searched {state['tool_input']}"]}


def main(checkpointer: Any) -> Any:
    assert InMemorySaver is not None  # the docs import it; the harness passes the saver
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("tool", tool)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "tool")
    builder.add_edge("tool", END)
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=["tool"])
    config = {"configurable": {"thread_id": "edit"}}
    paused = graph.invoke({"query": "weather in sf", "log": []}, config)
    waiting = graph.get_state(config).next
    graph.update_state(config, {"tool_input": "WEATHER IN SAN FRANCISCO"})
    done = graph.invoke(None, config)
    return paused, waiting, done, graph.get_state_history(config)
