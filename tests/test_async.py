"""The async API, on LangGraph and on ttcli: ainvoke, astream, aget_state,
aget_state_history and aupdate_state, with async and sync nodes under both APIs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.conftest import SAVERS
from tests.graphs import LogState
from tests.oracle import (
    LANGGRAPH,
    Scenario,
    cfg,
    history_of,
    normalise,
    plain,
    same_as_langgraph,
    ttcli_api,
)
from ttcli.savers.base import BaseSaver


def mixed(api: SimpleNamespace) -> Any:
    """START -> fetch (async, asks) -> (left async, right sync) -> done (sync) -> END."""

    async def fetch(state: LogState) -> dict[str, Any]:
        await asyncio.sleep(0)
        api.get_stream_writer()("fetching")
        answer = api.interrupt("fetch what?")
        return {"log": [f"fetch:{answer}"]}

    async def left(state: LogState) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["left"]}

    async def route(state: LogState) -> list[str]:
        return ["left", "right"]

    builder = api.StateGraph(LogState)
    builder.add_node("fetch", fetch)
    builder.add_node("left", left)
    builder.add_node("right", lambda state: {"log": ["right"]})
    builder.add_node("done", lambda state: {"log": ["done"]})
    builder.add_edge(api.START, "fetch")
    builder.add_conditional_edges("fetch", route)
    builder.add_edge(["left", "right"], "done")
    return builder


async def collect(chunks: Any) -> list[Any]:
    return [chunk async for chunk in chunks]


def async_api(api: SimpleNamespace) -> Any:
    async def scenario() -> Any:
        app = mixed(api).compile(checkpointer=api.Saver())
        paused = plain(await app.ainvoke({"log": []}, cfg()))
        state = await app.aget_state(cfg())
        waiting = (state.next, plain(state.interrupts))
        modes = ["updates", "custom"]
        resumed = await collect(app.astream(api.Command(resume="x"), cfg(), stream_mode=modes))
        history = normalise(await collect(app.aget_state_history(cfg())))
        limited = normalise(await collect(app.aget_state_history(cfg(), limit=2)))
        edited = await app.aupdate_state(cfg(), {"log": ["edit"]}, as_node="done")
        after = (await app.aget_state(edited)).values
        default = plain(await collect(app.astream({"log": []}, cfg("d"))))
        return paused, waiting, sorted(map(repr, resumed)), history, limited, after, default

    return asyncio.run(scenario())


def sync_nodes_under_ainvoke(api: SimpleNamespace) -> Any:
    async def scenario() -> Any:
        app = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
        with pytest.raises(ValueError, match="boom in c"):
            await app.ainvoke({"log": []}, cfg())
        recovered = await app.ainvoke(None, cfg(), durability="exit")
        return recovered, history_of(app)

    return asyncio.run(scenario())


SCENARIOS: list[Scenario] = [
    async_api,
    sync_nodes_under_ainvoke,
]


test_same_as_langgraph = same_as_langgraph(SCENARIOS)


def async_nodes(api: SimpleNamespace, *, use_async: bool) -> Any:
    """The mixed graph to its end, through the sync or the async API."""
    app = mixed(api).compile(checkpointer=api.Saver())
    modes = ["custom", "values"]

    async def through_async() -> Any:
        paused = await app.ainvoke({"log": []}, cfg())
        resumed = await collect(app.astream(api.Command(resume="y"), cfg(), stream_mode=modes))
        return paused, resumed

    def through_sync() -> Any:
        paused = app.invoke({"log": []}, cfg())
        return paused, list(app.stream(api.Command(resume="y"), cfg(), stream_mode=modes))

    paused, resumed = asyncio.run(through_async()) if use_async else through_sync()
    return plain(paused), plain(resumed), history_of(app)


@pytest.mark.parametrize("backend", SAVERS)
def test_async_nodes_run_under_invoke_as_under_langgraphs_ainvoke(
    backend: str, tmp_path: Path
) -> None:
    # LangGraph refuses async nodes under invoke ("No synchronous function provided"); ttcli
    # runs them, on a loop of their own, and gives what LangGraph's ainvoke gives
    expected = async_nodes(LANGGRAPH, use_async=True)
    assert async_nodes(ttcli_api(backend, tmp_path), use_async=False) == expected

    (tmp_path / "again").mkdir()

    async def inside_a_running_loop() -> Any:
        return async_nodes(ttcli_api(backend, tmp_path / "again"), use_async=False)

    assert asyncio.run(inside_a_running_loop()) == expected


def test_async_saver_methods_run_the_sync_ones(saver: BaseSaver) -> None:
    from tests.oracle import TTCLI

    app = graphs.linear(TTCLI).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg())

    async def read() -> Any:
        latest = await saver.aget_tuple(cfg())
        listed = [t async for t in saver.alist(cfg(), limit=2)]
        assert latest is not None
        copied = await saver.aput(cfg("copy"), latest.checkpoint, latest.metadata, {})
        await saver.aput_writes(copied, [("x", 5)], "task-1")
        copy = await saver.aget_tuple(copied)
        await saver.adelete_thread("t")
        return latest, listed, copy, await saver.aget_tuple(cfg())

    latest, listed, copy, deleted = asyncio.run(read())
    assert len(listed) == 2 and listed[0].checkpoint["id"] == latest.checkpoint["id"]
    assert copy is not None and copy.pending_writes == [("task-1", "x", 5)]
    assert deleted is None


_PARALLEL_ASYNC_NODES = """
import operator, sys
from typing import Annotated, TypedDict
from ttcli import END, START, StateGraph

class State(TypedDict):
    log: Annotated[list[str], operator.add]

def node(name):
    async def run(state):
        return {"log": [name]}
    return run

builder = StateGraph(State)
for name in ("a", "b", "c"):
    builder.add_node(name, node(name))
    builder.add_edge(START, name)
    builder.add_edge(name, END)
app = builder.compile()
assert "asyncio" not in sys.modules  # the runtime does not import it (runtime/aio.py)
print(sorted(app.invoke({"log": []})["log"]))
"""


def test_async_nodes_under_invoke_in_a_fresh_process_load_asyncio_themselves() -> None:
    # the runtime imports asyncio when an async node's coroutine is first awaited: here in
    # the worker threads of three parallel nodes, in a process that had not imported it
    done = subprocess.run(
        [sys.executable, "-c", _PARALLEL_ASYNC_NODES], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['a', 'b', 'c']"
