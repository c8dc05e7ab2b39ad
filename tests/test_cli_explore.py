"""Beyond the peers (issue 15): blame, history --where, pictures of graphs and threads, and
every reading command on every kind of thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clitools import FAN_OUT, ORDER_AGENT, REVIEW, Target, data, ttcli


def test_graph_lists_nodes_and_edges_or_draws_them(tmp_path: Path) -> None:
    db = tmp_path / "none.db"  # `graph` opens no database, so none is made on either backend
    text = ttcli(db, "graph", ORDER_AGENT)
    assert (text.exit_code, text.stderr) == (0, "")
    assert text.stdout.splitlines() == [
        "__start__ -> understand",
        "understand -> plan",
        "plan -> call_tool",
        "call_tool --> respond",
        "call_tool --> __end__",
        "respond -> __end__",
    ]
    assert ttcli(db, "graph", ORDER_AGENT, "--format", "mermaid").stdout == (
        "flowchart TD\n"
        '    n0["__start__"]\n    n1["understand"]\n    n2["plan"]\n    n3["call_tool"]\n'
        '    n4["respond"]\n    n5["__end__"]\n'
        "    n0 --> n1\n    n1 --> n2\n    n2 --> n3\n    n3 -.-> n4\n    n3 -.-> n5\n"
        "    n4 --> n5\n"
        "    classDef terminal fill:#eee,stroke:#999\n    class n0,n5 terminal\n"
    )
    drawn = ttcli(db, "graph", REVIEW, "--format", "dot").stdout.splitlines()
    assert drawn[:3] == ["digraph {", "    rankdir=TB;", "    node [shape=box];"]
    assert '    "plan" -> "review";' in drawn and drawn[-1] == "}"
    assert data(ttcli(db, "graph", REVIEW, "--json"))["edges"][0] == {
        "source": "__start__", "target": "plan", "conditional": False, "label": ""
    }  # fmt: skip
    assert not db.exists()  # drawing a graph needs no database


def test_graph_draws_a_fan_out_to_every_node(tmp_path: Path) -> None:
    (tmp_path / "fan.py").write_text(FAN_OUT)
    text = ttcli(tmp_path / "x.db", "graph", f"{tmp_path / 'fan.py'}:graph").stdout.splitlines()
    assert text == [
        "__start__ --> square",
        "__start__ --> total",
        "__start__ --> __end__",
        "square -> total",
    ]


def test_tree_draws_branches_as_a_picture(db: Target) -> None:
    fix = ["--as-node", "plan", "--set", "tool=refund_order", "--at", "latest~3"]
    assert ttcli(db, "update", "-t", "order:123", *fix).exit_code == 0
    assert ttcli(db, "fork", "latest~1", "-t", "order:123").exit_code == 0
    entries = data(ttcli(db, "history", "-t", "order:123", "--json"))
    drawn = ttcli(db, "tree", "-t", "order:123", "--format", "mermaid")
    assert (drawn.exit_code, drawn.stderr) == (0, "")
    lines = drawn.stdout.splitlines()
    assert lines[0] == "flowchart TD" and len(lines) == 1 + 8 + 7 + 4  # boxes, arrows, marks
    box = {line.split('["')[1][:8]: line.split("[")[0].strip() for line in lines[1:9]}
    assert [box[e["checkpoint_id"][-8:]] for e in entries] == [f"n{i}" for i in range(8)][::-1]
    assert lines[-4:] == [  # the update is the head of a branch with work left
        "    classDef paused fill:#ffe0e0,stroke:#c33",
        "    class n6 paused",
        "    classDef latest stroke:#090,stroke-width:3px",
        "    class n7 latest",
    ]
    dot = ttcli(db, "tree", "-t", "order:123", "--format", "dot").stdout
    assert dot.count(" -> ") == 7 and dot.count('fillcolor="#ffe0e0"') == 1


def test_only_tree_and_graph_draw(db: Target) -> None:
    result = ttcli(db, "--format", "mermaid", "history", "-t", "order:123")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: --format mermaid draws tree and graph only (see 'ttcli history --help')\n"
    )


def test_history_where_finds_checkpoints_by_their_values(db: Target, long_db: Target) -> None:
    def steps(*args: str) -> list[int]:
        found = data(ttcli(db, "history", "-t", "order:123", *args, "--json"))
        return [e["step"] for e in found]

    assert steps("--where", "tool=cancel_order") == [4, 3, 2]  # it went wrong at step 2
    assert steps("--where", "log.1=plan: call cancel_order", "--where", 'order_id="123"') == [
        4,
        3,
        2,
    ]
    assert steps("--where", "log.-1=respond: order 123 cancelled") == []
    assert steps("--where", "tool=cancel_order", "--filter", "writes=call_tool") == [3]

    def long_steps(*args: str) -> list[int]:
        found = data(ttcli(long_db, "history", "-t", "long", "--where", "x=10", *args, "--json"))
        return [e["step"] for e in found]

    # x is 10 after the first run's b and in the run given 10, under ~3,000 newer checkpoints
    assert long_steps() == [40, 37, 3, 2]
    assert long_steps("--limit", "2") == [40, 37]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("a..b=1", "invalid path 'a..b': use KEY or KEY.key.0 (dots between keys)"),
        ("tool", "invalid --where 'tool': use KEY=VALUE"),
    ],
    ids=["empty-part", "no-value"],
)
def test_history_where_refuses_what_is_not_a_path(db: Target, where: str, message: str) -> None:
    result = ttcli(db, "history", "-t", "order:123", "--where", where)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"Error: {message}\n")


def test_blame_says_who_wrote_each_part_of_a_value(db: Target) -> None:
    entries = data(ttcli(db, "history", "-t", "order:123", "--json"))
    short = {e["step"]: e["checkpoint_id"][-8:] for e in entries}
    tool = ttcli(db, "blame", "tool", "-t", "order:123")
    assert (tool.exit_code, tool.stderr) == (0, "")
    assert tool.stdout.splitlines()[2].split() == [
        "tool",
        '"cancel_order"',
        short[2],
        "2",
        "loop",
        "plan",
    ]
    log = data(ttcli(db, "blame", "log", "-t", "order:123", "--json"))
    assert [(b["part"], b["step"], b["nodes"]) for b in log] == [
        ("log[0]", 1, ["understand"]),
        ("log[1]", 2, ["plan"]),
        ("log[2]", 3, ["call_tool"]),
        ("log[3]", 4, ["respond"]),
    ]
    given = data(ttcli(db, "blame", "request", "-t", "order:123", "--json"))
    assert [(b["step"], b["nodes"]) for b in given] == [(0, ["input"])]


def test_blame_follows_an_update_and_a_past_ref(db: Target) -> None:
    fix = ["--as-node", "plan", "--set", "tool=refund_order", "--at", "latest~3"]
    assert ttcli(db, "update", "-t", "order:123", *fix).exit_code == 0
    now = data(ttcli(db, "blame", "tool", "-t", "order:123", "--json"))
    assert [(b["value"], b["source"], b["nodes"]) for b in now] == [
        ("refund_order", "update", ["plan"])
    ]
    before = data(ttcli(db, "blame", "log.0", "-t", "order:123", "--at", "latest~1", "--json"))
    assert [(b["part"], b["value"], b["step"]) for b in before] == [
        ("log.0", "understand: order 123", 1)
    ]


def test_blame_of_nothing_says_what_there_is(db: Target) -> None:
    result = ttcli(db, "blame", "nope", "-t", "order:123")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr.startswith("Error: checkpoint has no value at 'nope'; its state keys: ")


READING = [
    ["history", "-t", "{t}", "--limit", "20"],
    ["history", "-t", "{t}", "--where", "{where}", "--limit", "5"],
    ["history", "-t", "{t}", "--format", "csv", "--limit", "5"],
    ["show", "latest~1", "-t", "{t}"],
    ["show", "-t", "{t}", "--json"],
    ["diff", "latest~1", "latest", "-t", "{t}"],
    ["blame", "{key}", "-t", "{t}"],
    ["threads"],
    ["tree", "-t", "{t}"],
    ["tree", "-t", "{t}", "--format", "mermaid"],
    ["verify"],
]


@pytest.mark.parametrize("args", READING, ids=[" ".join(a[:1] + a[3:4]) for a in READING])
@pytest.mark.parametrize(
    ("kind", "thread", "key", "where"),
    [
        ("fan", "f1", "results", "total=0"),
        ("paused", "t", "log", "log.0=plan drafted"),
        ("long", "long", "x", "x=0"),
    ],
    ids=["fan-out", "paused", "3000"],
)
def test_every_reading_command_reads_every_kind_of_thread(
    request: pytest.FixtureRequest,
    backend: str,
    args: list[str],
    kind: str,
    thread: str,
    key: str,
    where: str,
) -> None:
    db = request.getfixturevalue(f"{kind}_db")  # of `backend`: each runs on both
    result = ttcli(db, *[a.format(t=thread, key=key, where=where) for a in args])
    assert (result.exit_code, result.stderr) == (0, "") and result.stdout
