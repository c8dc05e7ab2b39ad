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


class ReviewState(TypedDict):
    plan: str
    log: Annotated[list[str], operator.add]


def review(api: SimpleNamespace, calls: list[str] | None = None) -> Any:
    """planner -> review (asks a person with interrupt) -> act."""

    def planner(state: ReviewState) -> dict[str, Any]:
        return {"plan": "refund order 123", "log": ["plan"]}

    def review_node(state: ReviewState) -> dict[str, Any]:
        if calls is not None:
            calls.append("review")
        answer = api.interrupt({"question": "approve?", "plan": state["plan"]})
        return {"log": [f"review:{answer}"]}

    def act(state: ReviewState) -> dict[str, Any]:
        return {"log": ["act"]}

    builder = api.StateGraph(ReviewState)
    builder.add_node("planner", planner)
    builder.add_node("review", review_node)
    builder.add_node("act", act)
    builder.add_edge(api.START, "planner")
    builder.add_edge("planner", "review")
    builder.add_edge("review", "act")
    builder.add_edge("act", api.END)
    return builder


def two_questions(api: SimpleNamespace) -> Any:
    """Two parallel nodes that each ask a question, and one node that asks twice."""

    def ask(name: str) -> Any:
        def run(state: LogState) -> dict[str, Any]:
            return {"log": [f"{name}={api.interrupt(name + '?')}"]}

        return run

    def twice(state: LogState) -> dict[str, Any]:
        first = api.interrupt("first?")
        second = api.interrupt("second?")
        return {"log": [f"twice={first},{second}"]}

    builder = api.StateGraph(LogState)
    builder.add_node("q1", ask("q1"))
    builder.add_node("q2", ask("q2"))
    builder.add_node("twice", twice)
    builder.add_edge(api.START, "q1")
    builder.add_edge(api.START, "q2")
    builder.add_edge(["q1", "q2"], "twice")
    return builder


class MapState(TypedDict):
    items: list[int]
    results: Annotated[list[int], operator.add]
    total: int


def map_reduce(api: SimpleNamespace) -> Any:
    """Send one `square` task per item, then sum the results."""

    def fan_out(state: MapState) -> list[Any]:
        return [api.Send("square", {"item": item}) for item in state["items"]]

    def square(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["item"] ** 2]}

    def total(state: MapState) -> dict[str, Any]:
        return {"total": sum(state["results"])}

    builder = api.StateGraph(MapState)
    builder.add_node("square", square)
    builder.add_node("total", total)
    builder.add_conditional_edges(api.START, fan_out)
    builder.add_edge("square", "total")
    return builder


def commands(api: SimpleNamespace) -> Any:
    """A router node that returns Command(update=..., goto=...) next to a static edge."""

    def route(state: LogState) -> Any:
        return api.Command(update={"log": ["route"]}, goto=["special", api.Send("special", {})])

    def special(state: Any) -> dict[str, Any]:
        return {"log": ["special"]}

    builder = api.StateGraph(LogState)
    builder.add_node("route", route)
    builder.add_node("normal", lambda state: {"log": ["normal"]})
    builder.add_node("special", special)
    builder.add_edge(api.START, "route")
    builder.add_edge("route", "normal")
    return builder
