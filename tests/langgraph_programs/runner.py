"""Running a compiled LangGraph graph the sync way or the async way."""

from __future__ import annotations

import asyncio
from typing import Any


class Runner:
    """Runs a compiled graph the sync way or the async way (`ainvoke`, `aget_state`...)."""

    def __init__(self, graph: Any, mode: str) -> None:
        self.graph, self.mode = graph, mode

    def invoke(self, value: Any, config: Any, **options: Any) -> Any:
        if self.mode == "sync":
            return self.graph.invoke(value, config, **options)
        return asyncio.run(self.graph.ainvoke(value, config, **options))

    def stream(self, value: Any, config: Any, mode: str | list[str]) -> list[Any]:
        if self.mode == "sync":
            return list(self.graph.stream(value, config, stream_mode=mode))

        async def collect() -> list[Any]:
            return [chunk async for chunk in self.graph.astream(value, config, stream_mode=mode)]

        return asyncio.run(collect())

    def state(self, config: Any) -> Any:
        if self.mode == "sync":
            return self.graph.get_state(config, subgraphs=True)
        return asyncio.run(self.graph.aget_state(config, subgraphs=True))

    def update(self, config: Any, values: Any, as_node: str) -> Any:
        if self.mode == "sync":
            return self.graph.update_state(config, values, as_node=as_node)
        return asyncio.run(self.graph.aupdate_state(config, values, as_node=as_node))

    def history(self, config: Any) -> list[Any]:
        if self.mode == "sync":
            return list(self.graph.get_state_history(config))

        async def collect() -> list[Any]:
            return [snap async for snap in self.graph.aget_state_history(config)]

        return asyncio.run(collect())


def cfg(thread: str, **configurable: Any) -> Any:
    return {"configurable": {"thread_id": thread, **configurable}}
