"""Two questions asked in parallel, answered together by interrupt id."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict):
    answers: Annotated[list[str], operator.add]


def ask(topic: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"answers": [f"{topic}={interrupt(f'{topic}?')}"]}

    return node


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("name", ask("name"))
    builder.add_node("age", ask("age"))
    builder.add_edge(START, "name")
    builder.add_edge(START, "age")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "q"}}
    graph.invoke({"answers": []}, config)
    pending = graph.get_state(config).interrupts
    replies = {i.id: f"reply to {i.value}" for i in pending}
    done = graph.invoke(Command(resume=replies), config)
    return (
        sorted(i.value for i in pending),
        sorted(done["answers"]),
        graph.get_state_history(config),
    )
