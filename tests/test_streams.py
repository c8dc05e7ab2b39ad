"""Stream modes and durability, on LangGraph and on ttcli: the default mode, `custom` chunks
from `get_stream_writer()`, several modes at once, and `durability="sync"|"async"|"exit"`."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from tests import graphs
from tests.graphs import LogState
from tests.oracle import (
    TTCLI,
    Scenario,
    cfg,
    history_of,
    plain,
    same_as_langgraph,
)

# the name LangGraph looks for, under `from __future__ import annotations`, to pass `writer`
StreamWriter = Callable[[Any], None]


def talkative(api: SimpleNamespace) -> Any:
    """START -> think (writes chunks, then asks) -> say (a `writer` parameter) -> END."""

    def think(state: LogState) -> dict[str, Any]:
        write = api.get_stream_writer()
        write({"progress": "thinking"})
        answer = api.interrupt("go on?")
        write({"progress": f"answered {answer}"})
        return {"log": [f"think:{answer}"]}

    def say(state: LogState, writer: StreamWriter) -> dict[str, Any]:
        writer("said")
        return {"log": ["say"]}

    builder = api.StateGraph(LogState)
    builder.add_node("think", think)
    builder.add_node("say", say)
    builder.add_edge(api.START, "think")
    builder.add_edge("think", "say")
    return builder


def default_mode(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    return list(app.stream({"x": 1, "log": []}, cfg()))


def custom_chunks(api: SimpleNamespace) -> Any:
    app = talkative(api).compile(checkpointer=api.Saver())
    first = plain(list(app.stream({"log": []}, cfg(), stream_mode="custom")))
    resumed = list(app.stream(api.Command(resume="yes"), cfg(), stream_mode="custom"))
    quiet = plain(app.invoke({"log": []}, cfg("q")))
    return first, resumed, quiet, history_of(app)


def several_modes(api: SimpleNamespace) -> Any:
    app = talkative(api).compile(checkpointer=api.Saver())
    modes = ["updates", "custom", "values"]
    first = plain(list(app.stream({"log": []}, cfg(), stream_mode=modes)))
    resumed = plain(list(app.stream(api.Command(resume="ok"), cfg(), stream_mode=modes)))
    fan = graphs.fan_out(api).compile(checkpointer=api.Saver())
    parallel = sorted(map(repr, fan.stream({"log": []}, cfg("f"), stream_mode=modes)))
    return first, resumed, parallel


def durability_sync_and_async(api: SimpleNamespace) -> Any:
    runs = []
    for durability in ("sync", "async"):
        app = graphs.linear(api).compile(checkpointer=api.Saver())
        result = app.invoke({"x": 1, "log": []}, cfg(), durability=durability)
        streamed = list(app.stream({"x": 2}, cfg(), durability=durability))
        runs.append((result, streamed, history_of(app)))
    return runs


def durability_exit(api: SimpleNamespace) -> Any:
    app = graphs.linear(api).compile(checkpointer=api.Saver())
    first = app.invoke({"x": 1, "log": []}, cfg(), durability="exit")
    second = list(app.stream({"x": 2}, cfg(), durability="exit"))
    return first, second, history_of(app)


def durability_exit_paused_and_failed(api: SimpleNamespace) -> Any:
    app = graphs.review(api).compile(checkpointer=api.Saver())
    paused = plain(app.invoke({"plan": "", "log": []}, cfg(), durability="exit"))
    paused_history = history_of(app)
    done = app.invoke(api.Command(resume="yes"), cfg(), durability="exit")
    failing = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
    with pytest.raises(ValueError, match="boom in c"):
        failing.invoke({"log": []}, cfg("f"), durability="exit")
    failed_history = history_of(failing, "f")
    recovered = failing.invoke(None, cfg("f"), durability="exit")
    return (
        paused,
        paused_history,
        done,
        history_of(app),
        failed_history,
        recovered,
        history_of(failing, "f"),
    )


def debug_events(api: SimpleNamespace) -> Any:
    """Debug events in order, on a first run, a resume and a failed parallel step."""
    app = graphs.review(api).compile(checkpointer=api.Saver())
    first = [event_view(e) for e in app.stream({"plan": "", "log": []}, cfg(), stream_mode="debug")]
    resumed = [
        event_view(e) for e in app.stream(api.Command(resume="ok"), cfg(), stream_mode="debug")
    ]
    failing = graphs.fan_out(api, fail={"c"}).compile(checkpointer=api.Saver())
    failed: list[Any] = []
    with pytest.raises(ValueError, match="boom in c"):
        for event in failing.stream({"log": []}, cfg("f"), stream_mode="debug"):
            failed.append(event_view(event))
    # the two parallel tasks' events come in the order they happen to finish, on either runtime
    return first, resumed, sorted(map(repr, failed))


def event_view(event: dict[str, Any]) -> Any:
    """A debug event without what differs between runtimes: ids, times, `writes` metadata."""
    payload = {
        k: v for k, v in event["payload"].items() if k not in ("id", "config", "parent_config")
    }
    if "tasks" in payload:
        payload["tasks"] = [
            (t["name"], [i["value"] for i in t["interrupts"]]) for t in payload["tasks"]
        ]
    if "interrupts" in payload:
        payload["interrupts"] = [i["value"] for i in payload["interrupts"]]
    if "metadata" in payload:
        payload["metadata"] = {k: v for k, v in payload["metadata"].items() if k != "writes"}
    if isinstance(payload.get("error"), BaseException):
        payload["error"] = repr(payload["error"])
    return event["type"], event["step"], sorted(event), payload


def messages_mode(api: SimpleNamespace) -> Any:
    """The messages nodes write, each once: not those they were given and return again."""

    def bot(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage("hello", id="ai-1"), AIMessage("no id")]}

    def echo(state: Any) -> dict[str, Any]:
        return {"messages": [*state["messages"], AIMessage("echoed")]}

    builder = api.StateGraph(api.MessagesState)
    builder.add_node("bot", bot)
    builder.add_node("echo", echo)
    builder.add_edge(api.START, "bot")
    builder.add_edge("bot", "echo")
    app = builder.compile(checkpointer=api.Saver())
    given = {"messages": [HumanMessage("hi", id="h1")]}
    chunks = list(app.stream(given, cfg(), stream_mode=["messages", "updates"]))
    return [
        (mode, plain(chunk[0]), drop(chunk[1], "langgraph_checkpoint_ns"))
        if mode == "messages"
        else (mode, plain(chunk))
        for mode, chunk in chunks
    ]


def drop(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


SCENARIOS: list[Scenario] = [
    messages_mode,
    debug_events,
    default_mode,
    custom_chunks,
    several_modes,
    durability_sync_and_async,
    durability_exit,
    durability_exit_paused_and_failed,
]


test_same_as_langgraph = same_as_langgraph(SCENARIOS)


def test_get_stream_writer_outside_a_node_is_an_error() -> None:
    import ttcli

    with pytest.raises(RuntimeError, match="inside a node"):
        ttcli.get_stream_writer()


def test_unknown_durability_is_refused() -> None:
    app = graphs.linear(TTCLI).compile()
    refused = "Unknown durability 'never'; use one of sync, async, exit"
    with pytest.raises(ValueError, match=refused):
        app.invoke({"x": 1, "log": []}, durability="never")
