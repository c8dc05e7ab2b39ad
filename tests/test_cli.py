"""The command line, through click's CliRunner on both backends (SQLite files and PostgreSQL
schemas): outputs and exit codes."""

from __future__ import annotations

import json
import operator
import re
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from click.testing import CliRunner

from tests.clitools import (
    GRAPHS,
    ORDER,
    ORDER_AGENT,
    REVIEW,
    ROOT,
    Target,
    data,
    dump,
    ttcli,
    write_lock_held,
)
from tests.conftest import NewDb
from ttcli import START, Send, StateGraph
from ttcli.cli import cli
from ttcli.savers.locate import open_saver


def test_run_prints_the_final_state(db: Target) -> None:
    result = ttcli(db, "run", ORDER_AGENT, "--thread", "o2", "--input", json.dumps(ORDER), "--json")
    outcome = data(result)
    assert (outcome["status"], outcome["next"], outcome["waiting"]) == ("done", [], [])
    assert outcome["values"]["reply"] == "Done: order 123 cancelled."
    table = ttcli(db, "run", ORDER_AGENT, "--thread", "o3", "--input", json.dumps(ORDER))
    assert table.stdout.startswith("done at ")
    assert '  reply: "Done: order 123 cancelled."' in table.stdout.splitlines()


def test_run_reads_input_from_a_file_or_stdin(db: Target, tmp_path: Path) -> None:
    (tmp_path / "order.json").write_text(json.dumps(ORDER))
    from_file = ttcli(
        db, "run", ORDER_AGENT, "-t", "f", "--input", f"@{tmp_path / 'order.json'}", "--json"
    )
    from_stdin = ttcli(
        db, "run", ORDER_AGENT, "-t", "s", "--input", "-", "--json", stdin=json.dumps(ORDER)
    )
    assert data(from_file)["values"]["reply"] == data(from_stdin)["values"]["reply"]


def test_run_streams_updates_as_json_lines(db: Target) -> None:
    result = ttcli(
        db,
        "run",
        ORDER_AGENT,
        "-t",
        "s",
        "--input",
        json.dumps(ORDER),
        "--stream",
        "--format",
        "jsonl",
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [list(line)[0] for line in lines[:-1]] == ["understand", "plan", "call_tool", "respond"]
    assert lines[-1]["status"] == "done"


def test_history_table(db: Target) -> None:
    lines = ttcli(db, "history", "--thread", "order:123").stdout.splitlines()
    assert lines[0].split() == [
        "checkpoint",
        "step",
        "source",
        "next",
        "writes",
        "created_at",
        "parent",
    ]
    rows = [line.split() for line in lines[2:]]
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [
        ("4", "loop", "-", "respond"),
        ("3", "loop", "respond", "call_tool"),
        ("2", "loop", "call_tool", "plan"),
        ("1", "loop", "plan", "understand"),
        ("0", "loop", "understand", "-"),
        ("-1", "input", "__start__", "__start__"),
    ]
    assert [r[-1] for r in rows[:-1]] == [r[0] for r in rows[1:]]  # short parent ids
    assert rows[-1][-1] == "-"


def test_history_json_filters_before_and_limit(db: Target) -> None:
    full = data(ttcli(db, "history", "-t", "order:123", "--json"))
    assert set(full[0]) == {
        "checkpoint_id", "parent_checkpoint_id", "step", "source", "next", "writes", "created_at", "metadata"
    }  # fmt: skip
    assert full[0]["parent_checkpoint_id"] == full[1]["checkpoint_id"]
    loops = data(
        ttcli(
            db,
            "history",
            "-t",
            "order:123",
            "--filter",
            "source=loop",
            "--filter",
            "step=3",
            "--json",
        )
    )
    assert [e["step"] for e in loops] == [3]
    older = data(
        ttcli(db, "history", "-t", "order:123", "--before", "latest~2", "--limit", "2", "--json")
    )
    assert [e["step"] for e in older] == [1, 0]
    jsonl = ttcli(db, "history", "-t", "order:123", "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line)["step"] for line in jsonl] == [4, 3, 2, 1, 0, -1]
    csv_lines = ttcli(
        db, "history", "-t", "order:123", "--format", "csv", "--limit", "1"
    ).stdout.splitlines()
    assert (
        csv_lines[0]
        == "checkpoint_id,parent_checkpoint_id,step,source,next,writes,created_at,metadata"
    )
    assert len(csv_lines) == 2


def test_refs_by_prefix_and_ancestry(db: Target) -> None:
    full = data(ttcli(db, "history", "-t", "order:123", "--json"))
    by_prefix = data(ttcli(db, "show", full[2]["checkpoint_id"][:18], "-t", "order:123", "--json"))
    by_tilde = data(ttcli(db, "show", "latest~2", "-t", "order:123", "--json"))
    assert by_prefix["checkpoint_id"] == by_tilde["checkpoint_id"] == full[2]["checkpoint_id"]
    ambiguous = ttcli(db, "show", full[0]["checkpoint_id"][:8], "-t", "order:123")
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr.startswith(
        f"Error: checkpoint ref '{full[0]['checkpoint_id'][:8]}' is ambiguous"
    )


def test_show_a_checkpoint_in_full(db: Target) -> None:
    shown = data(ttcli(db, "show", "latest~2", "-t", "order:123", "--json"))
    assert shown["step"] == 2 and shown["next"] == ["call_tool"]
    assert shown["writes"] == ["plan"]
    assert shown["returned"] == {
        "plan": {"tool": "cancel_order", "log": ["plan: call cancel_order"]}
    }
    assert shown["values"]["tool"] == "cancel_order"
    assert [(t["name"], t["result"]["tool_result"]) for t in shown["tasks"]] == [
        ("call_tool", "order 123 cancelled")
    ]
    assert len(shown["children"]) == 1
    channel = data(ttcli(db, "show", "latest~2", "-t", "order:123", "--channel", "tool", "--json"))
    assert channel == {"tool": "cancel_order"}
    table = ttcli(db, "show", "-t", "order:123").stdout
    assert "next        - (done)" in table and '  reply: "Done: order 123 cancelled."' in table


def test_diff_two_checkpoints(db: Target) -> None:
    changed = data(ttcli(db, "diff", "latest~3", "latest~2", "-t", "order:123", "--json"))
    assert changed["changes"] == [
        {"path": "log[1]", "kind": "appended", "old": None, "new": "plan: call cancel_order"},
        {"path": "tool", "kind": "added", "old": None, "new": "cancel_order"},
    ]
    assert changed["next"] == {"from": ["plan"], "to": ["call_tool"]}
    text = ttcli(db, "diff", "latest~3", "latest~2", "-t", "order:123").stdout
    assert (
        '+ tool: "cancel_order"' in text
        and '+ log[1] (appended): "plan: call cancel_order"' in text
    )
    assert (
        ttcli(db, "diff", "latest~3", "latest~2", "-t", "order:123", "--exit-code").exit_code == 1
    )
    same = ttcli(db, "diff", "latest", "latest", "-t", "order:123", "--exit-code")
    assert same.exit_code == 0 and "values: no difference" in same.stdout


def test_update_dry_run_changes_nothing_then_update_and_replay_fix_the_run(db: Target) -> None:
    before = dump(db)
    dry = data(ttcli(db, "update", "-t", "order:123", "--at", "latest~3", "--as-node", "plan",
                     "--set", "tool=refund_order", "--dry-run", "--json"))  # fmt: skip
    assert (dry["checkpoint_id"], dry["next"]) == (None, ["call_tool"])
    assert dump(db) == before
    wrote = data(ttcli(db, "update", "-t", "order:123", "--at", "latest~3", "--as-node", "plan",
                       "--values", '{"tool": "refund_order"}', "--json"))  # fmt: skip
    plan = data(ttcli(db, "replay", wrote["checkpoint_id"], "-t", "order:123", "--plan", "--json"))
    assert plan["runs"] == ["call_tool"]
    replayed = data(ttcli(db, "replay", wrote["checkpoint_id"], "-t", "order:123", "--json"))
    assert replayed["values"]["reply"] == "Done: order 123 refunded: 42.00 EUR."
    assert "|/" in ttcli(db, "tree", "-t", "order:123").stdout


def test_fork_in_the_thread_or_into_a_new_one(db: Target) -> None:
    forked = data(ttcli(db, "fork", "latest~2", "-t", "order:123", "--json"))
    head = data(ttcli(db, "show", "-t", "order:123", "--json"))
    assert (head["checkpoint_id"], head["source"], head["next"]) == (
        forked["checkpoint_id"],
        "fork",
        ["call_tool"],
    )
    copied = data(
        ttcli(db, "fork", "latest~3", "-t", "order:123", "--to-thread", "order:123-b", "--json")
    )
    assert copied["thread_id"] == "order:123-b"
    entries = data(ttcli(db, "history", "-t", "order:123-b", "--json"))
    # latest~3 counts back from the new fork: old step 0, so the copy is input and step 0
    assert len(entries) == 2 and entries[0]["metadata"] == {"copied_from": "order:123"}


def test_pause_and_resume(new_db: NewDb) -> None:
    db = new_db("review.db")
    request = json.dumps({"request": "refund 7", "plan": "", "log": []})
    paused = ttcli(db, "run", REVIEW, "-t", "r", "--input", request, "--json")
    assert paused.exit_code == 4
    outcome = data(paused)
    assert outcome["status"] == "paused" and outcome["waiting"][0]["node"] == "review"
    asked = outcome["waiting"][0]["interrupts"][0]
    assert asked["value"] == {
        "question": "Approve this plan?",
        "plan": "cancel the order (refund 7)",
    }
    threads = data(ttcli(db, "threads", "--json"))
    assert [(t["thread_id"], t["status"]) for t in threads] == [("r", "paused")]
    resumed = ttcli(db, "resume", "-t", "r", "--value", '"yes"', "--id", asked["id"][:6], "--json")
    assert resumed.exit_code == 0
    assert data(resumed)["values"]["log"][-1] == "done: cancel the order (refund 7)"
    assert data(resumed)["graph"] == REVIEW


def test_a_failing_node_exits_1_and_the_thread_shows_the_error(
    new_db: NewDb, graphs_file: Path
) -> None:
    db = new_db("f.db")
    failed = ttcli(db, "run", f"{graphs_file}:failing", "-t", "f", "--input", '{"log": []}')
    assert failed.exit_code == 1
    assert failed.stderr == (
        "Error: node 'b' raised ValueError: boom in b (the thread keeps the error; "
        "`ttcli show latest --thread f` shows it)\n"
    )
    assert data(ttcli(db, "threads", "--json"))[0]["status"] == "failed"
    shown = data(ttcli(db, "show", "-t", "f", "--json"))
    assert shown["tasks"][0]["error"] == "ValueError('boom in b')"


def test_a_prune_frees_the_bytes_its_plan_said(new_db: NewDb, graphs_file: Path) -> None:
    """What a prune says it freed is counted as its rows go, not by reading the thread again:
    a thread deleted whole frees what the plan read of it, rows, pending writes (a failed
    step's) and values alike."""
    db = new_db("bytes.db")
    long = json.dumps({"log": ["x" * 100, "y" * 100]})  # values of their own (blobs)
    assert ttcli(db, "run", f"{graphs_file}:failing", "-t", "f", "--input", long).exit_code == 1
    # a later thread, so that the file's newest value (which always stays) is not f's
    assert ttcli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER)).exit_code == 0
    prune = ("prune", "-t", "f", "--older-than", "0s", "--keep-last", "0", "--json")
    plan = data(ttcli(db, *prune))
    done = data(ttcli(db, *prune, "--yes"))
    assert (done["checkpoints"], done["bytes"]) == (plan["checkpoints"], plan["bytes"])
    assert done["checkpoints"] == 3 and done["bytes"] > 400
    assert [t["thread_id"] for t in data(ttcli(db, "threads", "--json"))] == ["o"]


def test_prune_plans_then_deletes_and_archives(db: Target, tmp_path: Path) -> None:
    for thread in ("a", "b"):
        ttcli(db, "run", ORDER_AGENT, "-t", thread, "--input", json.dumps(ORDER))
    before = dump(db)
    plan = ttcli(db, "prune", "--older-than", "0s", "--keep-last", "2")
    assert plan.exit_code == 0 and dump(db) == before
    assert plan.stdout.splitlines()[-1].startswith(
        "would prune 12 checkpoints in 3 threads, about "
    )
    assert plan.stderr == "nothing was deleted: add --yes to delete\n"
    archive = tmp_path / "archive.db"
    done = data(
        ttcli(
            db,
            "prune",
            "--older-than",
            "0s",
            "--keep-last",
            "2",
            "--archive",
            str(archive),
            "--yes",
            "--json",
        )
    )
    assert (done["done"], done["threads"], done["checkpoints"], done["archived"]) == (
        True,
        3,
        12,
        12,
    )
    assert done["bytes"] > 0
    assert len(data(ttcli(db, "history", "-t", "a", "--json"))) == 2
    assert len(data(ttcli(archive, "history", "-t", "a", "--json"))) == 4
    idle = ttcli(db, "prune", "--idle", "0s", "--prefix", "a", "--yes", "--vacuum")
    assert idle.stdout.startswith("pruned 2 checkpoints in 1 threads, freed ")
    assert [t["thread_id"] for t in data(ttcli(db, "threads", "--json"))] == ["b", "order:123"]


@pytest.mark.parametrize(
    "archive",
    ["", ":memory:", "file::memory:", "file:x?mode=memory", "FILE:archive.db"],
    ids=["empty", "memory", "memory uri", "memory mode uri", "file uri"],
)
def test_an_archive_that_names_no_lasting_file_is_refused(db: Target, archive: str) -> None:
    """An unset variable, `:memory:` or a SQLite URI (SQLite opens one as a URI whatever ttcli
    asks: an in-memory database, or a file ttcli cannot tell apart from the one pruned) would
    take the archived rows with it when ttcli exits: refused, nothing deleted."""
    ttcli(db, "run", ORDER_AGENT, "-t", "a", "--input", json.dumps(ORDER))
    before = dump(db)
    for sure in ([], ["--yes"]):  # the plan too: it would not run as planned
        refused = ttcli(
            db, "prune", "--older-than", "0s", "--keep-last", "1", "--archive", archive, *sure
        )
        assert (refused.exit_code, refused.stdout) == (2, "")
        assert refused.stderr == (
            f"Error: --archive {archive!r} names no lasting database (empty, :memory: or a "
            "file: URI): give a file path or a postgresql:// DSN\n"
        )
        assert dump(db) == before


def test_a_busy_database_exits_5(db: Target) -> None:
    with write_lock_held(db, "order:123"):
        result = ttcli(db, "fork", "latest", "-t", "order:123", "--busy-timeout", "0.05")
    assert result.exit_code == 5
    assert re.fullmatch(
        r"Error: \S+ is busy: another process holds its lock; retry later\n", result.stderr
    )


def test_every_command_has_help_with_an_example() -> None:
    for name in cli.list_commands(None):  # type: ignore[arg-type]
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0
        assert "Example:" in result.stdout, name


def test_a_real_process(db: Target) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ttcli", "history", "--db", str(db), "-t", "order:123", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 6
    missing = subprocess.run(
        [sys.executable, "-m", "ttcli", "show", "--db", str(db), "-t", "nobody"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        3,
        "",
        "Error: thread 'nobody' not found: it has no checkpoints\n",
    )


def test_the_readme_ci_replay_shows_no_difference_for_unchanged_code(db: Target) -> None:
    old = data(ttcli(db, "show", "latest", "-t", "order:123", "--json"))["checkpoint_id"]
    assert ttcli(db, "replay", "latest~5", "-t", "order:123", "--graph", ORDER_AGENT).exit_code == 0
    unchanged = ttcli(db, "diff", old, "latest", "-t", "order:123", "--exit-code")
    assert unchanged.exit_code == 0, unchanged.stdout
    ttcli(db, "update", "-t", "order:123", "--as-node", "respond", "--set", "reply=changed")
    assert ttcli(db, "diff", old, "latest", "-t", "order:123", "--exit-code").exit_code == 1


@pytest.mark.parametrize(
    "target",
    [
        "fixtures.order_agent:graph",
        "fixtures.order_agent:build",
        "{graphs}:compiled",
        "{graphs}:factory",
    ],
    ids=["module-builder", "module-factory", "file-compiled", "file-factory"],
)
def test_targets_name_a_builder_a_compiled_graph_or_a_factory(
    new_db: NewDb, graphs_file: Path, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # module targets import from the working directory
    graphs_file.write_text(
        GRAPHS
        + "\nfrom fixtures.order_agent import build\ncompiled = build().compile()\nfactory = build\n"
    )
    db = new_db("t.db")
    result = ttcli(
        db,
        "run",
        target.replace("{graphs}", str(graphs_file)),
        "-t",
        "x",
        "--input",
        json.dumps(ORDER),
        "--json",
    )
    assert data(result)["values"]["reply"] == "Done: order 123 cancelled."


def test_tree_marks_the_latest_and_paused_branch_heads(new_db: NewDb) -> None:
    db = new_db("review.db")
    ttcli(
        db, "run", REVIEW, "-t", "r", "--input", json.dumps({"request": "x", "plan": "", "log": []})
    )
    ttcli(db, "resume", "-t", "r", "--value", '"no"')
    ttcli(db, "fork", "latest~2", "-t", "r")  # a new head that would run review again
    lines = ttcli(db, "tree", "-t", "r").stdout.splitlines()
    assert lines[0].startswith("* ") and lines[0].endswith("(latest, next: review)")
    assert lines[1].startswith("| * ") and "act" in lines[1]
    assert lines[3] == "|/"


def test_threads_show_sizes_only_when_asked(db: Target) -> None:
    plain = data(ttcli(db, "threads", "--json"))
    sized = data(ttcli(db, "threads", "--bytes", "--json"))
    assert "bytes" not in plain[0]
    assert sized[0]["bytes"] > 0
    assert [{k: v for k, v in t.items() if k != "bytes"} for t in sized] == plain
    assert ttcli(db, "threads", "--bytes").stdout.splitlines()[0].split()[-1] == "bytes"


def test_history_shows_the_sends_a_checkpoint_schedules(new_db: NewDb) -> None:
    # Sends too big to be kept inline in the row: history reads them to say what runs next
    class Fan(TypedDict):
        items: list[str]
        results: Annotated[list[str], operator.add]

    builder = StateGraph(Fan)
    builder.add_node("start", lambda state: {})
    builder.add_node("work", lambda arg: {"results": [arg["item"].upper()]})
    builder.add_edge(START, "start")
    builder.add_conditional_edges(
        "start", lambda state: [Send("work", {"item": i}) for i in state["items"]], ["work"]
    )
    db = new_db("fan.db")
    with closing(open_saver(db)) as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "fan"}}
        graph.invoke({"items": ["a long item", "another one"], "results": []}, config)

    history = data(ttcli(db, "history", "--thread", "fan", "--json"))

    assert [c["next"] for c in history] == [[], ["work", "work"], ["start"], ["__start__"]]


@pytest.mark.parametrize("where", ["group", "command"])
def test_a_db_flag_wins_over_ttcli_db(db: Target, new_db: NewDb, where: str) -> None:
    other = new_db("other.db")
    assert ttcli(other, "run", ORDER_AGENT, "-t", "elsewhere", "--input", json.dumps(ORDER))
    args = ["threads", "--json"]
    args = ["--db", str(db), *args] if where == "group" else [*args, "--db", str(db)]
    result = CliRunner(env={"TTCLI_DB": str(other)}).invoke(cli, args, catch_exceptions=False)
    assert "elsewhere" not in result.stdout
    assert {t["thread_id"] for t in json.loads(result.stdout)} == {"order:123"}


def test_history_schedules_a_deferred_node_only_once_it_is_due(new_db: NewDb) -> None:
    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    builder = StateGraph(Log)
    for name in ("a", "b", "b_2", "c"):
        builder.add_node(name, lambda state, name=name: {"log": [name]})
    builder.add_node("d", lambda state: {"log": ["d"]}, defer=True)
    builder.add_edge(START, "a")
    for start, end in [("a", "b"), ("a", "c"), ("b", "b_2"), ("b_2", "d"), ("c", "d")]:
        builder.add_edge(start, end)
    db = new_db("d.db")
    with closing(open_saver(db)) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
        config = {"configurable": {"thread_id": "t"}}
        expected = [list(s.next) for s in graph.get_state_history(config)]

    history = data(ttcli(db, "history", "--thread", "t", "--json"))

    assert [row["next"] for row in history] == expected
    assert expected[:3] == [[], ["d"], ["b_2"]]  # d waits while b_2 is still to run
