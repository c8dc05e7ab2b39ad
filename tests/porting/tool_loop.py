"""The agent loop by hand: a model node asks for tools, a tool node runs plain functions, and
a conditional edge loops until the model answers."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def get_weather(city: str) -> str:
    return f"It is always sunny in {city}."


TOOLS = {"get_weather": get_weather}


def model(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    if last.type == "tool":
        return {"messages": [AIMessage(f"Answer: {last.content}", id="final")]}
    call = {"name": "get_weather", "args": {"city": "sf"}, "id": "call-1"}
    return {"messages": [AIMessage("", tool_calls=[call], id="ask")]}


def tools(state: MessagesState) -> dict[str, Any]:
    calls = state["messages"][-1].tool_calls
    return {
        "messages": [
            ToolMessage(TOOLS[c["name"]](**c["args"]), tool_call_id=c["id"], id=f"r-{c['id']}")
            for c in calls
        ]
    }


def should_continue(state: MessagesState) -> str:
    return "tools" if state["messages"][-1].tool_calls else END


def main(checkpointer: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", should_continue, ["tools", END])
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "t"}}
    result = graph.invoke({"messages": [HumanMessage("weather in sf?", id="q")]}, config)
    return [(m.type, m.content) for m in result["messages"]], graph.get_state_history(config)
