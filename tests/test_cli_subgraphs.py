"""The command line on a thread whose graph runs a subgraph that asks a question: the run
pauses, `threads` lists the subgraph's namespace, `history` and `show` read it with `--ns`,
and `resume` answers the question from the parent."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from tests.clitools import Target, data, ttcli
from tests.conftest import NewDb

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


def test_a_subgraph_thread_on_the_command_line(tmp_path: Path, new_db: NewDb) -> None:
    db, target = new_db("t.db"), tmp_path / "sub.py"
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


def _ids_out(lines: list[str]) -> list[str]:
    """Short checkpoint ids as <id> (whole ids, in namespaces, are kept)."""
    return [re.sub(r"(?<![-:])\b[0-9a-f]{8}\b(?!-)", "<id>", line) for line in lines]


def test_tree_and_show_put_a_subgraphs_checkpoints_under_its_task(
    tmp_path: Path, new_db: NewDb
) -> None:
    db, target = new_db("t.db"), tmp_path / "sub.py"
    target.write_text(SUBGRAPH)
    ttcli(db, "run", f"{target}:graph", "--thread", "s", "--input", '{"log": []}')
    (namespace,) = [t["checkpoint_ns"] for t in data(ttcli(db, "threads", "--json"))][1:]
    asking = data(ttcli(db, "history", "--thread", "s", "--json"))[0]["checkpoint_id"]

    tree = ttcli(db, "tree", "--thread", "s")
    shown = ttcli(db, "show", "latest", "--thread", "s")
    record = data(ttcli(db, "show", "latest", "--thread", "s", "--json"))

    assert _ids_out(tree.stdout.splitlines()) == [
        "* <id>  step   1  loop   pre  (latest, next: child)",
        f"|   {namespace}  (subgraph of task child)",
        "|   * <id>  step   1  loop   first  (latest, next: ask)",
        "|   * <id>  step   0  loop   -",
        "|   * <id>  step  -1  input  __start__",
        "* <id>  step   0  loop   -",
        "* <id>  step  -1  input  __start__",
    ]
    assert shown.stdout.splitlines()[-1] == (
        f"    subgraph: --ns {namespace}  (3 checkpoints; latest "
        f"{record['tasks'][0]['subgraphs'][0]['latest_checkpoint_id'][-8:]}, step 1, next ask)"
    )
    (sub,) = record["tasks"][0]["subgraphs"]
    assert (sub["checkpoint_ns"], sub["task_name"], sub["parent_checkpoint_id"]) == (
        namespace,
        "child",
        asking,
    )
    assert sub["task_id"] == record["tasks"][0]["id"] and sub["checkpoints"] == 3


def test_prune_counts_a_thread_once_however_many_namespaces_it_has(
    tmp_path: Path, new_db: NewDb
) -> None:
    db, target = new_db("t.db"), tmp_path / "sub.py"
    target.write_text(SUBGRAPH)
    ttcli(db, "run", f"{target}:graph", "--thread", "s", "--input", '{"log": []}')
    assert ttcli(db, "resume", "--thread", "s", "--value", '"yes"').exit_code == 0
    plan = ttcli(db, "prune", "--idle", "0s")
    assert plan.stdout.splitlines()[-1].startswith("would prune 8 checkpoints in 1 threads")
    done = ttcli(db, "prune", "--idle", "0s", "--yes")
    assert done.stdout.startswith("pruned 8 checkpoints in 1 threads, freed "), done.stdout


def test_a_paused_subgraph_is_copied_with_its_thread_and_resumes_there(
    tmp_path: Path, new_db: NewDb
) -> None:
    """fork --to-thread of a checkpoint whose task paused inside a subgraph copies the
    subgraph's checkpoints of that run too: the new thread resumes where the question was
    asked (the subgraph's first node does not run again), and the source stays paused."""
    db, target = new_db("t.db"), tmp_path / "sub.py"
    target.write_text(SUBGRAPH)
    assert ttcli(db, "run", f"{target}:graph", "-t", "s", "--input", '{"log": []}').exit_code == 4
    copied = ttcli(db, "fork", "latest", "-t", "s", "--to-thread", "s2")
    assert copied.exit_code == 0, copied.stderr
    copies = _namespaces(db, "s2")
    assert copies == _namespaces(db, "s") and ("child", 3) in copies
    done = ttcli(db, "resume", "-t", "s2", "--value", '"yes"')
    assert done.exit_code == 0, done.stderr
    assert 'log: ["pre", "pre", "first", "asked:yes"]' in done.stdout
    assert ttcli(db, "verify").exit_code == 0
    still = ttcli(db, "resume", "-t", "s", "--value", '"no"')
    assert 'log: ["pre", "pre", "first", "asked:no"]' in still.stdout


def test_a_fork_before_the_subgraph_ran_copies_none_of_it(tmp_path: Path, new_db: NewDb) -> None:
    db, target = new_db("t.db"), tmp_path / "sub.py"
    target.write_text(SUBGRAPH)
    ttcli(db, "run", f"{target}:graph", "-t", "s", "--input", '{"log": []}')
    assert ttcli(db, "fork", "latest~1", "-t", "s", "--to-thread", "s2").exit_code == 0
    assert [ns for ns, _ in _namespaces(db, "s2")] == [""]


def _namespaces(db: Target, thread: str) -> list[tuple[str, int]]:
    """(namespace's node, checkpoints) of each of a thread's namespaces."""
    found = data(ttcli(db, "threads", "--json"))
    return [(t["checkpoint_ns"].split(":")[0], t["checkpoints"]) for t in found
            if t["thread_id"] == thread]  # fmt: skip
