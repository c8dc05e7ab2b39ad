"""The time-travel tutorial: run, list the history, replay from a past checkpoint, and fork
it with update_state."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    topic: NotRequired[str]
    joke: NotRequired[str]


def generate_topic(state: State) -> dict[str, Any]:
    return {"topic": "cats who code"}


def write_joke(state: State) -> dict[str, Any]:
    return {"joke": f"Why do {state['topic']} never finish? Infinite loops."}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("generate_topic", generate_topic)
    builder.add_node("write_joke", write_joke)
    builder.add_edge(START, "generate_topic")
    builder.add_edge("generate_topic", "write_joke")
    builder.add_edge("write_joke", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "joke"}}
    first = graph.invoke({}, config)
    states = list(graph.get_state_history(config))
    selected = states[1]  # the checkpoint before write_joke
    replayed = graph.invoke(None, selected.config)
    new_config = graph.update_state(selected.config, values={"topic": "chickens"})
    forked = graph.invoke(None, new_config)
    return first, selected.next, selected.values, replayed, forked, graph.get_state_history(config)
