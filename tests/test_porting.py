"""Porting basics, on LangGraph and on ttcli: Command annotations, Runnables as nodes and
LangChain message objects (langchain-core is a test-only dependency, as LangGraph's)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda

import ttcli
from tests.graphs import LogState
from tests.oracle import Scenario, cfg, history_of, plain, same_as_langgraph
from ttcli.savers.sqlite import SqliteSaver


def command_annotations(api: SimpleNamespace) -> Any:
    def route(state: LogState) -> Any:
        return api.Command(update={"log": ["route"]}, goto="right" if state["log"] else "left")

    # the annotation LangGraph's docs use, evaluated as `get_type_hints` would
    route.__annotations__["return"] = api.Command[Literal["left", "right"]]

    builder = api.StateGraph(LogState)
    builder.add_node("route", route, destinations=("left", "right"), metadata={"kind": "router"})
    builder.add_node("left", lambda state: {"log": ["left"]})
    builder.add_node("right", lambda state: {"log": ["right"]})
    builder.add_edge(api.START, "route")
    app = builder.compile(checkpointer=api.Saver())
    results = [app.invoke({"log": []}, cfg("a")), app.invoke({"log": ["x"]}, cfg("b"))]
    return results, api.Command.PARENT, history_of(app, "a"), history_of(app, "b")


def runnable_nodes(api: SimpleNamespace) -> Any:
    def tagged(state: LogState, config: RunnableConfig) -> dict[str, Any]:
        return {"log": [f"tagged:{config['configurable']['thread_id']}"]}

    builder = api.StateGraph(LogState)
    builder.add_node("plain", RunnableLambda(lambda state: {"log": ["plain"]}))
    builder.add_node("tagged", RunnableLambda(tagged))
    builder.add_node(RunnableLambda(lambda state: {"log": ["named"]}, name="named"))
    builder.add_edge(api.START, "plain")
    builder.add_edge("plain", "tagged")
    builder.add_edge("tagged", "named")
    app = builder.compile(checkpointer=api.Saver())
    return app.invoke({"log": []}, cfg()), history_of(app)


def chat(api: SimpleNamespace) -> Any:
    def bot(state: Any) -> dict[str, Any]:
        asked = state["messages"][-1].content
        call = {"name": "lookup", "args": {"q": asked}, "id": "call-1"}
        return {
            "messages": [
                AIMessage("", tool_calls=[call], id=f"ai-{len(state['messages'])}"),
                ToolMessage("found", tool_call_id="call-1"),
                AIMessageChunk(content=f"re: {asked}"),
            ]
        }

    builder = api.StateGraph(api.MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(api.START, "bot")
    app = builder.compile(checkpointer=api.Saver())
    first = app.invoke({"messages": [HumanMessage("hi", id="h1", name="ann")]}, cfg())
    second = app.invoke({"messages": [HumanMessage("again", id="h1")]}, cfg())
    removed = app.invoke({"messages": [RemoveMessage(id="ai-1")]}, cfg())
    merged = api.add_messages([HumanMessage("x", id="1")], [AIMessage("y", id="1")])
    # a task's result shows what the node returned: LangChain objects on LangGraph, the ttcli
    # messages they were stored as on ttcli; the values they led to are compared
    history = [{**row, "tasks": [task[:2] for task in row["tasks"]]} for row in history_of(app)]
    return plain([first, second, removed, merged]), plain(history)


SCENARIOS: list[Scenario] = [command_annotations, runnable_nodes, chat]


test_same_as_langgraph = same_as_langgraph(SCENARIOS)


def test_messages_from_another_library_are_stored_as_ttcli_messages(tmp_path: Path) -> None:
    merged = ttcli.add_messages(
        [], [HumanMessage("hi", id="1"), AIMessageChunk(content="yo", id="2")]
    )
    assert merged == [ttcli.HumanMessage("hi", id="1"), ttcli.AIMessage("yo", id="2")]
    assert all(type(m) in (ttcli.HumanMessage, ttcli.AIMessage) for m in merged)


def test_an_object_with_invoke_is_a_node() -> None:
    class Doubler:
        def invoke(self, state: LogState) -> dict[str, Any]:
            return {"log": state["log"] * 2}

    builder = ttcli.StateGraph(LogState)
    builder.add_node("double", Doubler())
    builder.add_edge(ttcli.START, "double")
    assert builder.compile().invoke({"log": ["x"]}) == {"log": ["x", "x", "x"]}


def test_sqlite_saver_refuses_a_connection(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db")
    with pytest.raises(TypeError, match=r"SqliteSaver takes a database path \(str or PathLike\)"):
        SqliteSaver(conn)  # type: ignore[arg-type]
    conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]
