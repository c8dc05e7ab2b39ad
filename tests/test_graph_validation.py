"""Declaring a graph: every mistake is caught with a message naming what was wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pytest

from ttcli import END, START, InvalidUpdateError, StateGraph
from ttcli.errors import GraphDefinitionError


class S(TypedDict):
    x: int


def noop(state: S) -> dict[str, Any]:
    return {}


def graph_with(*steps: Callable[[StateGraph], object]) -> StateGraph:
    builder = StateGraph(S)
    for step in steps:
        step(builder)
    return builder


CASES: list[tuple[str, Callable[[], object], str]] = [
    (
        "duplicate",
        lambda: graph_with(lambda g: g.add_node("a", noop), lambda g: g.add_node("a", noop)),
        "Node `a` already present.",
    ),
    (
        "reserved",
        lambda: graph_with(lambda g: g.add_node(END, noop)),
        "Node `__end__` is reserved.",
    ),
    (
        "reserved-char",
        lambda: graph_with(lambda g: g.add_node("a|b", noop)),
        "'|' is a reserved character and is not allowed in the node names.",
    ),
    (
        "not-callable",
        lambda: graph_with(lambda g: g.add_node("a", 3)),
        "Node `a` action must be callable",
    ),
    (
        "edge-from-end",
        lambda: graph_with(lambda g: g.add_edge(END, "a")),
        "END cannot be a start node",
    ),
    (
        "edge-to-start",
        lambda: graph_with(lambda g: g.add_edge("a", START)),
        "START cannot be an end node",
    ),
    (
        "no-entry",
        lambda: graph_with(lambda g: g.add_node("a", noop)).compile(),
        "Graph must have an entrypoint: add at least one edge from START to another node",
    ),
    (
        "unknown-target",
        lambda: graph_with(
            lambda g: g.add_node("a", noop), lambda g: g.add_edge(START, "b")
        ).compile(),
        "Found edge ending at unknown node `b`",
    ),
    (
        "unknown-source",
        lambda: graph_with(
            lambda g: g.add_node("a", noop),
            lambda g: g.add_edge(START, "a"),
            lambda g: g.add_edge("zz", "a"),
        ).compile(),
        "Found edge starting at unknown node 'zz'",
    ),
    (
        "unknown-branch-target",
        lambda: graph_with(
            lambda g: g.add_node("a", noop),
            lambda g: g.add_edge(START, "a"),
            lambda g: g.add_conditional_edges("a", lambda s: "q", {"q": "zz"}),
        ).compile(),
        "At 'a' node, 'condition' branch found unknown target 'zz'",
    ),
    (
        "unknown-interrupt",
        lambda: graph_with(
            lambda g: g.add_node("a", noop), lambda g: g.add_edge(START, "a")
        ).compile(interrupt_before=["zz"]),
        "Interrupt node `zz` not found",
    ),
    (
        "join-to-end",
        lambda: graph_with(lambda g: g.add_edge(["a", "b"], END)),
        "END cannot be the end of a join edge",
    ),
    (
        "empty-sequence",
        lambda: graph_with(lambda g: g.add_sequence([])),
        "Sequence requires at least one node.",
    ),
]


@pytest.mark.parametrize(("name", "build", "message"), CASES, ids=[c[0] for c in CASES])
def test_definition_errors(name: str, build: Callable[[], object], message: str) -> None:
    with pytest.raises(GraphDefinitionError) as info:
        build()
    assert str(info.value).startswith(message)
    assert isinstance(
        info.value, ValueError
    )  # LangGraph raises ValueError: ported except clauses still match


def test_branch_returning_an_unknown_node_fails_the_run_clearly() -> None:
    app = graph_with(
        lambda g: g.add_node("a", noop),
        lambda g: g.add_edge(START, "a"),
        lambda g: g.add_conditional_edges("a", lambda s: "q"),
    ).compile()
    with pytest.raises(
        InvalidUpdateError, match="Branch 'condition' of node 'a' named unknown node 'q'"
    ):
        app.invoke({"x": 1})


def test_branch_returning_a_value_missing_from_its_path_map() -> None:
    app = graph_with(
        lambda g: g.add_node("a", noop),
        lambda g: g.add_edge(START, "a"),
        lambda g: g.add_conditional_edges("a", lambda s: "nope", {"yes": "a"}),
    ).compile()
    with pytest.raises(InvalidUpdateError, match="returned 'nope', which is not in its path map"):
        app.invoke({"x": 1})


def test_node_returning_a_non_dict_fails_the_run() -> None:
    app = graph_with(
        lambda g: g.add_node("a", lambda s: 5), lambda g: g.add_edge(START, "a")
    ).compile()
    with pytest.raises(InvalidUpdateError, match="Expected dict, got 5"):
        app.invoke({"x": 1})


def test_add_node_by_function_and_sequence_and_entry_points() -> None:
    def first(state: S) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    def second(state: S) -> dict[str, Any]:
        return {"x": state["x"] * 2}

    builder = StateGraph(S).add_sequence([first, second])
    builder.set_entry_point("first")
    builder.set_finish_point("second")
    assert builder.compile().invoke({"x": 1}) == {"x": 4}
    assert list(builder.nodes) == ["first", "second"]
