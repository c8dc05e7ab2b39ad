"""Human in the loop and recovery: a breakpoint edited before going on, parallel interrupts
answered by id, a failing parallel branch re-run alone, and an async app with async nodes."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from tests.langgraph_programs.runner import Runner, cfg
from tests.langgraph_programs.states import Review


def breakpoint_edit(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """`interrupt_before` stops before `act`; the plan is edited there, then the run goes on."""
    builder = StateGraph(Review)
    builder.add_node("draft", lambda s: {"plan": "refund 70", "log": ["drafted"]})
    builder.add_node("act", lambda s: {"log": [f"did {s['plan']}"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "act")
    run = Runner(builder.compile(checkpointer=saver, interrupt_before=["act"]), mode)
    paused = run.invoke({"plan": "", "log": []}, cfg("edit"))
    edited = run.update(cfg("edit"), {"plan": "refund 7"}, "draft")
    done = run.invoke(None, edited)
    return [paused, run.state(cfg("edit")).values, done, run.history(cfg("edit"))]


class Answers(TypedDict):
    answers: Annotated[list[str], operator.add]


def _ask(topic: str) -> Any:
    def node(state: Answers) -> dict[str, Any]:
        return {"answers": [f"{topic}={interrupt(f'{topic}?')}"]}

    return node


def parallel_interrupts(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """Two nodes ask at once; one `Command(resume={id: answer, ...})` answers both."""
    builder = StateGraph(Answers)
    builder.add_node("name", _ask("name"))
    builder.add_node("age", _ask("age"))
    builder.add_edge(START, "name")
    builder.add_edge(START, "age")
    run = Runner(builder.compile(checkpointer=saver), mode)
    run.invoke({"answers": []}, cfg("ask"))
    pending = run.state(cfg("ask")).interrupts
    done = run.invoke(Command(resume={i.id: f"re {i.value}" for i in pending}), cfg("ask"))
    return [sorted(i.value for i in pending), sorted(done["answers"]), run.history(cfg("ask"))]


def fault_tolerance(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """A parallel branch fails: the other's writes are kept, and `invoke(None)` re-runs only
    the failed one."""
    calls: list[str] = []
    flaky = {"fails": True}

    def stable(state: Answers) -> dict[str, Any]:
        calls.append("stable")
        return {"answers": ["stable"]}

    def unstable(state: Answers) -> dict[str, Any]:
        calls.append("unstable")
        if flaky.pop("fails", False):
            raise ConnectionError("upstream timed out")
        return {"answers": ["unstable"]}

    builder = StateGraph(Answers)
    builder.add_node("stable", stable)
    builder.add_node("unstable", unstable)
    builder.add_node("merge", lambda s: {"answers": ["merged"]})
    builder.add_edge(START, "stable")
    builder.add_edge(START, "unstable")
    builder.add_edge(["stable", "unstable"], "merge")
    run = Runner(builder.compile(checkpointer=saver), mode)
    try:
        run.invoke({"answers": []}, cfg("flaky"))
        error = None
    except ConnectionError as exc:
        error = str(exc)
    failed = run.state(cfg("flaky"))
    done = run.invoke(None, cfg("flaky"))
    errors = [(t.name, t.error) for t in failed.tasks]
    return [error, errors, done, sorted(calls), run.history(cfg("flaky"))]


async def _fetch(state: Answers) -> dict[str, Any]:
    await asyncio.sleep(0)  # a real await: the node gives the event loop back
    get_stream_writer()({"fetched": len(state["answers"])})
    return {"answers": ["fetched"]}


async def _rank(state: Answers) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"answers": ["ranked"]}


def async_nodes(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """An async app: `async def` nodes in parallel, run with `ainvoke` ("sync" here: one
    call per run) or consumed with `astream` (updates and custom chunks), the state read
    with `aget_state` and `aget_state_history` (LangGraph's sync API refuses async nodes)."""
    builder = StateGraph(Answers)
    builder.add_node("fetch", _fetch)
    builder.add_node("rank", _rank)
    builder.add_node("reply", lambda s: {"answers": [f"{len(s['answers'])} found"]})
    builder.add_edge(START, "fetch")
    builder.add_edge(START, "rank")
    builder.add_edge(["fetch", "rank"], "reply")
    run = Runner(builder.compile(checkpointer=saver), "async")
    start = {"answers": ["asked"]}
    if mode == "sync":
        found = [run.invoke(start, cfg("async")), run.invoke(start, cfg("async"))]
    else:
        found = [run.stream(start, cfg("async"), ["updates", "custom"]) for _ in range(2)]
    return [found, run.state(cfg("async")).values, run.history(cfg("async"))]


def deferred_node(saver: BaseCheckpointSaver[Any], mode: str) -> list[Any]:
    """`add_node(..., defer=True)`: `d` waits until the longer branch has finished too."""
    builder = StateGraph(Answers)
    for name in ("a", "b", "b_2", "c"):
        builder.add_node(name, lambda s, name=name: {"answers": [name]})
    builder.add_node("d", lambda s: {"answers": [f"d saw {sorted(s['answers'])}"]}, defer=True)
    builder.add_edge(START, "a")
    for start, end in [("a", "b"), ("a", "c"), ("b", "b_2"), ("b_2", "d"), ("c", "d")]:
        builder.add_edge(start, end)
    run = Runner(builder.compile(checkpointer=saver), mode)
    out = run.invoke({"answers": []}, cfg("deferred"))
    return [out, run.history(cfg("deferred"))]
