"""The docs' input and output schemas: invoke takes only the input schema's keys and returns
only the output schema's; the state holds them all."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph


class InputState(TypedDict):
    question: str


class OutputState(TypedDict):
    answer: str


class OverallState(InputState, OutputState):
    notes: str


def answer_node(state: InputState) -> dict[str, Any]:
    return {"answer": "bye", "notes": f"asked: {state['question']}"}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(OverallState, input_schema=InputState, output_schema=OutputState)
    builder.add_node("answer_node", answer_node)
    builder.add_edge(START, "answer_node")
    builder.add_edge("answer_node", END)
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "io"}}
    result = graph.invoke({"question": "hi", "notes": "ignored?"}, config)
    values = list(graph.stream({"question": "again"}, config, stream_mode="values"))
    return result, values, graph.get_state(config).values, graph.get_state_history(config)
