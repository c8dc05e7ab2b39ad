"""LangGraph's prebuilt `create_react_agent` around a chat model that calls tools: two calls
in one reply run as tasks of their own, and a system prompt goes before the messages."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.prebuilt import create_react_agent


def refund(order_id: str) -> str:
    """Refund an order."""
    return f"order {order_id} refunded"


def track(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id} is in Lyon"


class ScriptedModel(GenericFakeChatModel):
    """Replies from a script, and records what it was asked."""

    asked: list[list[Any]] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        self.asked.append([getattr(t, "name", None) or t.__name__ for t in tools])
        return self

    def invoke(self, messages: Any, config: Any = None, **kwargs: Any) -> Any:
        self.asked.append([(m.type, m.content) for m in messages])
        return super().invoke(messages, config, **kwargs)


def main(checkpointer: Any) -> Any:
    calls = [
        {"name": "refund", "args": {"order_id": "7"}, "id": "call-1"},
        {"name": "track", "args": {"order_id": "8"}, "id": "call-2"},
    ]
    replies = [AIMessage("", id="m1", tool_calls=calls), AIMessage("Refunded; in Lyon.", id="m2")]
    model = ScriptedModel(messages=iter(replies), asked=[])
    with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0
        warnings.filterwarnings("ignore", "create_react_agent has been moved")
        agent = create_react_agent(
            model, [refund, track], prompt="You are a shop's agent.", checkpointer=checkpointer
        )
    config = {"configurable": {"thread_id": "react"}}
    result = agent.invoke({"messages": [HumanMessage("refund 7, track 8", id="h1")]}, config)
    return (
        [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in result["messages"]],
        model.asked,
        agent.get_state_history(config),
    )
