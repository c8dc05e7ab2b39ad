"""A chatbot whose chat model streams: `stream_mode=["messages", "updates"]` gives each token
chunk as the model makes it, with its node's metadata, from a sync node (`stream`) and from
an async one (`astream`); a model tagged "nostream" gives its message whole; a subgraph's
model streams only when the subgraphs are streamed."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph


def main(checkpointer: Any) -> Any:
    model = GenericFakeChatModel(
        messages=iter([AIMessage("refund is on its way", id="m1"), AIMessage("yes", id="m2")])
    )
    quiet = GenericFakeChatModel(messages=iter([AIMessage("noted", id="m3")]))

    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def abot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def note(state: MessagesState) -> dict[str, Any]:
        return {"messages": [quiet.with_config(tags=["nostream"]).invoke(state["messages"])]}

    graphs = []
    for node in (bot, abot):
        builder = StateGraph(MessagesState)
        builder.add_node("bot", node)
        builder.add_node("note", note)
        builder.add_edge(START, "bot")
        builder.add_edge("bot", "note")
        graphs.append(builder.compile(checkpointer=checkpointer))
    modes = ["messages", "updates"]
    first = {"configurable": {"thread_id": "sync"}}
    start = {"messages": [HumanMessage("refund?", id="h1")]}
    chunks = [shown(*chunk) for chunk in graphs[0].stream(start, first, stream_mode=modes)]
    second = {"configurable": {"thread_id": "async"}}

    async def run() -> Any:
        start = {"messages": [HumanMessage("sure?", id="h2")]}
        streamed = graphs[1].astream(start, second, stream_mode=modes)
        return [shown(*chunk) async for chunk in streamed]

    quiet.messages = iter([AIMessage("noted", id="m4")])
    return chunks, asyncio.run(run()), graphs[0].get_state_history(first), in_a_subgraph()


def in_a_subgraph() -> Any:
    model = GenericFakeChatModel(
        messages=iter([AIMessage("a b", id="s1"), AIMessage("c", id="s2")])
    )

    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    inner = StateGraph(MessagesState)
    inner.add_node("bot", bot)
    inner.add_edge(START, "bot")
    outer = StateGraph(MessagesState)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile()
    start = {"messages": [HumanMessage("hi", id="h3")]}
    found = [shown(*chunk) for chunk in graph.stream(start, stream_mode=["messages"])]
    for namespace, mode, chunk in graph.stream(start, stream_mode=["messages"], subgraphs=True):
        found.append((len(namespace), shown(mode, chunk)))
    return found


def shown(mode: str, chunk: Any) -> Any:
    """A chunk's text and metadata (without the namespaces, which hold task ids: ttcli's
    differ from LangGraph's)."""
    if mode == "messages":
        message, metadata = chunk
        where = {key: value for key, value in metadata.items() if not key.endswith("_ns")}
        return mode, message.content, message.id, where, sorted(metadata)
    return mode, {node: [m.content for m in update["messages"]] for node, update in chunk.items()}
