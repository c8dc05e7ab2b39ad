"""Agents on fake LangChain chat models: a tool-calling loop with ToolNode and
tools_condition, LangGraph's prebuilt create_react_agent, and tokens streamed from a model."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.warnings import LangGraphDeprecatedSinceV10

from tests.langgraph_programs.runner import Runner, cfg


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    return f"order {order_id} refunded"


def tool_calling_agent(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage("", id="m1", tool_calls=[
                    {"name": "refund", "args": {"order_id": "7"}, "id": "call-1"}
                ]),
                AIMessage("Done: order 7 refunded.", id="m2"),
            ]
        )
    )  # fmt: skip

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"], config)]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    run = Runner(builder.compile(checkpointer=saver), mode)
    out = run.invoke({"messages": [HumanMessage("refund order 7", id="h1")]}, cfg("agent"))
    return [out, run.history(cfg("agent"))]


@tool
def track(order_id: str) -> str:
    """Where an order is."""
    return f"order {order_id} is in Lyon"


class ToolCallingModel(GenericFakeChatModel):
    """A fake chat model that takes tools, as create_react_agent binds them (the replies
    are scripted: the tools are not read)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingModel:
        return self


def react_agent(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """LangGraph's prebuilt agent: two tool calls in one reply, run in parallel."""
    calls = [
        {"name": "refund", "args": {"order_id": "7"}, "id": "call-1"},
        {"name": "track", "args": {"order_id": "8"}, "id": "call-2"},
    ]
    replies = [AIMessage("", id="m1", tool_calls=calls), AIMessage("Refunded; in Lyon.", id="m2")]
    tools: list[BaseTool] = [refund, track]
    with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0
        warnings.filterwarnings(
            "ignore", "create_react_agent has been moved", LangGraphDeprecatedSinceV10
        )
        graph = create_react_agent(
            ToolCallingModel(messages=iter(replies)), tools, checkpointer=saver
        )
    run = Runner(graph, mode)
    out = run.invoke({"messages": [HumanMessage("refund 7, track 8", id="h1")]}, cfg("react"))
    return [out, run.history(cfg("react"))]


def streamed_tokens(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """A chat whose model streams: `stream_mode=["messages", "updates"]` gives each token
    chunk with its node's metadata, then the node's update."""
    model = GenericFakeChatModel(messages=iter([AIMessage("refund is on its way", id="m1")]))

    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    run = Runner(builder.compile(checkpointer=saver), mode)
    start = {"messages": [HumanMessage("refund order 7", id="h1")]}
    chunks = run.stream(start, cfg("tokens"), ["messages", "updates"])
    return [chunks, run.history(cfg("tokens"))]
