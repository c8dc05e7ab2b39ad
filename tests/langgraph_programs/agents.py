"""Agents: a tool-calling model with ToolNode and tools_condition."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

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
