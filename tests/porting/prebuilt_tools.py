"""The tool-calling agent with LangGraph's prebuilt ToolNode and tools_condition, over plain
functions; one call names a tool that does not exist."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"It is always sunny in {city}."


def add(a: int, b: int) -> int:
    """The sum of two numbers."""
    return a + b


def model(state: MessagesState) -> dict[str, Any]:
    if state["messages"][-1].type == "tool":
        answers = [m.content for m in state["messages"] if m.type == "tool"]
        return {"messages": [AIMessage(" / ".join(answers), id="final")]}
    calls = [
        {"name": "get_weather", "args": {"city": "sf"}, "id": "c1"},
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "c2"},
        {"name": "translate", "args": {"text": "hi"}, "id": "c3"},
    ]
    return {"messages": [AIMessage("", tool_calls=calls, id="ask")]}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([get_weather, add]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "agent"}}
    result = graph.invoke({"messages": [HumanMessage("weather and sum?", id="q")]}, config)
    tool_messages = [
        (m.name, m.tool_call_id, m.content, m.status)
        for m in result["messages"]
        if m.type == "tool"
    ]
    return (
        [(m.type, m.content) for m in result["messages"]],
        tool_messages,
        graph.get_state_history(config),
    )
