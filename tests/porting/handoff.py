"""Multi-agent handoff: agents are subgraphs; one hands the conversation to another with
Command(graph=Command.PARENT, goto=...)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def triage(state: State) -> Command[Any]:
    return Command(graph=Command.PARENT, goto="billing", update={"log": ["triage: to billing"]})


def billing(state: State) -> dict[str, Any]:
    return {"log": ["billing: refunded"]}


def agent(name: str, node: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node(name, node)
    builder.add_edge(START, name)
    return builder.compile()


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("triage_agent", agent("triage", triage))
    builder.add_node("billing", billing)
    builder.add_edge(START, "triage_agent")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "h"}}
    return graph.invoke({"log": ["user: refund please"]}, config), graph.get_state_history(config)
