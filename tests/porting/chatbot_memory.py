"""A chatbot with memory: MessagesState, a checkpointer, two conversations by thread id."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph


def chatbot(state: MessagesState) -> dict[str, Any]:
    said = [m.content for m in state["messages"] if m.type == "human"]
    return {"messages": [AIMessage(f"You said: {' / '.join(said)}")]}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("chatbot", chatbot)
    builder.add_edge(START, "chatbot")
    graph = builder.compile(checkpointer=checkpointer)
    one = {"configurable": {"thread_id": "1"}}
    two = {"configurable": {"thread_id": "2"}}
    graph.invoke({"messages": [HumanMessage("Hi, I am Bob")]}, one)
    remembered = graph.invoke({"messages": [HumanMessage("What is my name?")]}, one)
    fresh = graph.invoke({"messages": [HumanMessage("What is my name?")]}, two)
    return (
        [m.content for m in remembered["messages"]],
        [m.content for m in fresh["messages"]],
        graph.get_state(one).next,
        graph.get_state_history(one),
    )
