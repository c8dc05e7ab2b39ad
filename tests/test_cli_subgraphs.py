"""The command line on a thread whose graph runs a subgraph that asks a question: the run
pauses, `threads` lists the subgraph's namespace, `history` and `show` read it with `--ns`,
and `resume` answers the question from the parent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.clitools import data, ttcli

SUBGRAPH = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict
    from ttcli import StateGraph, START, interrupt

    class S(TypedDict):
        log: Annotated[list, operator.add]

    def ask(state):
        return {"log": [f"asked:{interrupt('go on?')}"]}

    inner = StateGraph(S)
    inner.add_node("first", lambda s: {"log": ["first"]})
    inner.add_node("ask", ask)
    inner.add_edge(START, "first")
    inner.add_edge("first", "ask")
    graph = StateGraph(S)
    graph.add_node("pre", lambda s: {"log": ["pre"]})
    graph.add_node("child", inner.compile())
    graph.add_edge(START, "pre")
    graph.add_edge("pre", "child")
    """
)


def test_a_subgraph_thread_on_the_command_line(tmp_path: Path) -> None:
    db, target = tmp_path / "t.db", tmp_path / "sub.py"
    target.write_text(SUBGRAPH)
    paused = ttcli(db, "run", f"{target}:graph", "--thread", "s", "--input", '{"log": []}')
    assert paused.exit_code == 4, paused.stderr
    assert 'asks: "go on?"' in paused.stdout
    threads = data(ttcli(db, "threads", "--json"))
    (namespace,) = [t["checkpoint_ns"] for t in threads if t["checkpoint_ns"]]
    assert namespace.startswith("child:")
    inner = data(ttcli(db, "history", "--thread", "s", "--ns", namespace, "--json"))
    assert [(row["step"], row["next"]) for row in inner] == [
        (1, ["ask"]),
        (0, ["first"]),
        (-1, ["__start__"]),
    ]
    shown = ttcli(db, "show", "latest", "--thread", "s", "--ns", namespace)
    assert f"s (namespace {namespace})" in shown.stdout
    done = ttcli(db, "resume", "--thread", "s", "--value", '"yes"')
    assert done.exit_code == 0, done.stderr
    assert 'log: ["pre", "pre", "first", "asked:yes"]' in done.stdout
    after = data(ttcli(db, "history", "--thread", "s", "--ns", namespace, "--json"))
    assert [row["step"] for row in after] == [2, 1, 0, -1]
