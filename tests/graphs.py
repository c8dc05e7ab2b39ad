"""Graph factories used by several test modules, written once against a LangGraph-shaped API.

Each factory takes the module that provides StateGraph/START/END (ttcli, or langgraph's
graph module for conformance runs) so the same graph runs on both.
"""

from __future__ import annotations

import operator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict


class LinearState(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def linear(api: SimpleNamespace, calls: list[str] | None = None) -> Any:
    """START -> a -> b -> END: a adds one, b multiplies by ten."""

    def a(state: LinearState) -> dict[str, Any]:
        if calls is not None:
            calls.append("a")
        return {"x": state["x"] + 1, "log": ["a"]}

    def b(state: LinearState) -> dict[str, Any]:
        if calls is not None:
            calls.append("b")
        return {"x": state["x"] * 10, "log": ["b"]}

    builder = api.StateGraph(LinearState)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(api.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", api.END)
    return builder


class LogState(TypedDict):
    log: Annotated[list[str], operator.add]


def fan_out(
    api: SimpleNamespace, calls: list[str] | None = None, fail: set[str] | None = None
) -> Any:
    """START -> a -> (b, c) -> join -> d -> END; nodes named in `fail` raise once each."""
    failing = set(fail or ())

    def node(name: str) -> Any:
        def run(state: LogState) -> dict[str, Any]:
            if calls is not None:
                calls.append(name)
            if name in failing:
                failing.discard(name)
                raise ValueError(f"boom in {name}")
            return {"log": [name]}

        return run

    builder = api.StateGraph(LogState)
    for name in "abcd":
        builder.add_node(name, node(name))
    builder.add_edge(api.START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge(["b", "c"], "d")
    builder.add_edge("d", api.END)
    return builder


class CounterState(TypedDict):
    n: int
    trail: Annotated[list[int], operator.add]


def counter_loop(api: SimpleNamespace, until: int = 3) -> Any:
    """A node that loops on itself through a conditional edge until n reaches `until`."""

    def count(state: CounterState) -> dict[str, Any]:
        return {"n": state["n"] + 1, "trail": [state["n"] + 1]}

    def route(state: CounterState) -> str:
        return "count" if state["n"] < until else api.END

    builder = api.StateGraph(CounterState)
    builder.add_node("count", count)
    builder.add_edge(api.START, "count")
    builder.add_conditional_edges("count", route)
    return builder


class RouteState(TypedDict):
    kind: str
    log: Annotated[list[str], operator.add]


def router(api: SimpleNamespace) -> Any:
    """A conditional edge through a path map, fanning out to a list of nodes for 'both'."""

    def classify(state: RouteState) -> dict[str, Any]:
        return {"log": ["classify"]}

    def pick(state: RouteState) -> Any:
        return ["left", "right"] if state["kind"] == "both" else state["kind"]

    def side(name: str) -> Any:
        return lambda state: {"log": [name]}

    builder = api.StateGraph(RouteState)
    builder.add_node("classify", classify)
    builder.add_node("l", side("l"))
    builder.add_node("r", side("r"))
    builder.add_edge(api.START, "classify")
    builder.add_conditional_edges("classify", pick, {"left": "l", "right": "r", "none": api.END})
    builder.add_edge("l", api.END)
    builder.add_edge("r", api.END)
    return builder
