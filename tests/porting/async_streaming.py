"""Async nodes streamed with astream: updates and custom progress from get_stream_writer."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.types import StreamWriter


class State(TypedDict):
    city: str
    report: Annotated[list[str], operator.add]


async def fetch(state: State) -> dict[str, Any]:
    writer = get_stream_writer()
    writer({"progress": f"fetching {state['city']}"})
    await asyncio.sleep(0)
    return {"report": [f"{state['city']}: sunny"]}


async def summarise(state: State, writer: StreamWriter) -> dict[str, Any]:
    writer({"progress": "summarising"})
    return {"report": [f"{len(state['report'])} line(s)"]}


def main(checkpointer: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("fetch", fetch)
    builder.add_node("summarise", summarise)
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "summarise")
    graph = builder.compile(checkpointer=checkpointer)
    config = {"configurable": {"thread_id": "w"}}

    async def run() -> Any:
        chunks = [
            chunk
            async for chunk in graph.astream(
                {"city": "Oslo", "report": []}, config, stream_mode=["updates", "custom"]
            )
        ]
        state = await graph.aget_state(config)
        history = [s async for s in graph.aget_state_history(config)]
        return chunks, state.values, history

    return asyncio.run(run())
