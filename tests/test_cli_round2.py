"""The command line, round two (issue 15): fan-out threads, pipes, refusals, wording."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.clitools import ORDER, ORDER_AGENT, REVIEW, ROOT, Target, data, dump, ttcli
from tests.conftest import NewDb
from ttcli.cli import cli
from ttcli.configs import CheckpointRef
from ttcli.savers.locate import open_saver


def test_reading_commands_work_on_a_fan_out_thread(fan_db: Target) -> None:
    table = ttcli(fan_db, "history", "-t", "f1")
    assert (table.exit_code, table.stderr) == (0, "")
    rows = [line.split()[1:5] for line in table.stdout.splitlines()[2:]]
    assert rows == [
        ["2", "loop", "-", "total"],
        ["1", "loop", "total", "square"],
        ["0", "loop", "square,square,square", "-"],
        ["-1", "input", "__start__", "__start__"],
    ]
    listed = ttcli(fan_db, "history", "-t", "f1", "--json")
    assert listed.exit_code == 0
    assert [e["next"] for e in json.loads(listed.stdout)][2] == ["square"] * 3
    tree = ttcli(fan_db, "tree", "-t", "f1")
    assert (tree.exit_code, tree.stderr, len(tree.stdout.splitlines())) == (0, "", 4)
    shown = ttcli(fan_db, "show", "latest~2", "-t", "f1", "--json")
    assert shown.exit_code == 0
    assert [t["result"] for t in json.loads(shown.stdout)["tasks"]] == [
        {"results": [1]},
        {"results": [4]},
        {"results": [9]},
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["history", "-t", "long"],
        ["history", "-t", "long", "--format", "jsonl"],
        ["history", "-t", "long", "--format", "csv"],
        ["history", "-t", "long", "--json"],
        ["tree", "-t", "long"],
    ],
    ids=["table", "jsonl", "csv", "json", "tree"],
)
def test_a_reader_that_stops_early_is_not_an_error(long_db: Target, args: list[str]) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "ttcli", "--db", str(long_db), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:  # like `ttcli history ... | head -1`
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline()
        process.stdout.close()
        assert (process.wait(), process.stderr.read()) == (0, "")


@pytest.mark.parametrize("to_thread", ["order:123", "other"], ids=["itself", "another"])
def test_fork_to_an_existing_thread_is_refused(db: Target, to_thread: str) -> None:
    ttcli(db, "run", ORDER_AGENT, "-t", "other", "--input", json.dumps(ORDER))
    before = dump(db)
    result = ttcli(db, "fork", "latest", "-t", "order:123", "--to-thread", to_thread)
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: thread '{to_thread}' already exists: --to-thread makes a new thread; "
        "pick another id\n"
    )
    assert dump(db) == before


def test_fork_to_a_thread_that_exists_only_in_a_subgraph_namespace_is_refused(
    db: Target,
) -> None:
    with closing(open_saver(db)) as saver:
        saved = saver.get_tuple(CheckpointRef("order:123").to_config())
        assert saved is not None
        saver.put(
            CheckpointRef("other", "child:1").to_config(), saved.checkpoint, saved.metadata, {}
        )
    before = dump(db)
    result = ttcli(db, "fork", "latest", "-t", "order:123", "--to-thread", "other")
    assert (result.exit_code, result.stderr.count("\n")) == (2, 1), result.stderr
    assert "thread 'other' already exists" in result.stderr
    assert dump(db) == before


def test_concurrent_forks_to_one_new_thread_never_merge_two_lineages(db: Target) -> None:
    """Forks from two sources racing to one new id: the thread ends with one lineage, and
    every fork that lost says so (exit 2), on SQLite and PostgreSQL alike."""
    assert ttcli(db, "fork", "latest", "-t", "order:123", "--to-thread", "c1").exit_code == 0
    assert ttcli(db, "fork", "latest~2", "-t", "order:123").exit_code == 0  # heads differ
    alone = []  # what each source's copy holds when made alone
    for source in ("order:123", "c1"):
        assert (
            ttcli(db, "fork", "latest", "-t", source, "--to-thread", f"{source}-alone").exit_code
            == 0
        )
        alone.append(
            {
                e["checkpoint_id"]
                for e in data(ttcli(db, "history", "-t", f"{source}-alone", "--json"))
            }
        )
    assert alone[0] != alone[1]
    for attempt in range(4):
        to_thread = f"race{attempt}"
        forks = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ttcli",
                    "--db",
                    str(db),
                    "fork",
                    "latest",
                    "-t",
                    source,
                    "--to-thread",
                    to_thread,
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for source in ("order:123", "c1", "order:123", "c1")
        ]
        errors = [fork.communicate()[1] for fork in forks]
        codes = [fork.returncode for fork in forks]
        assert 0 in codes and set(codes) <= {0, 2}, errors
        copied = {e["checkpoint_id"] for e in data(ttcli(db, "history", "-t", to_thread, "--json"))}
        assert copied in alone, f"{to_thread} merged two lineages"


def test_a_copy_is_active_when_it_was_made_and_keeps_the_graph(db: Target) -> None:
    made_after = datetime.now(UTC).isoformat()
    copied = ttcli(db, "fork", "latest", "-t", "order:123", "--to-thread", "copy", "--json")
    assert copied.exit_code == 0
    listed = {t["thread_id"]: t for t in data(ttcli(db, "threads", "--json"))}
    assert listed["order:123"]["last_activity"] < made_after < listed["copy"]["last_activity"]
    plan = ttcli(db, "prune", "--idle", made_after, "--json")
    assert [p["thread_id"] for p in data(plan)["plan"]] == ["order:123"]
    replayed = ttcli(db, "replay", "latest~1", "-t", "copy", "--json")  # no --graph needed
    assert data(replayed)["graph"] == ORDER_AGENT


def test_resume_refuses_a_thread_that_waits_on_nothing(db: Target) -> None:
    before = dump(db)
    result = ttcli(db, "resume", "-t", "order:123", "--value", '"yes"')
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: thread 'order:123' is not waiting on an interrupt: nothing to answer\n"
    )
    assert dump(db) == before


def test_resume_takes_a_value_that_is_not_json_as_text(new_db: NewDb) -> None:
    db = new_db("review.db")
    request = json.dumps({"request": "refund 7", "plan": "", "log": []})
    assert ttcli(db, "run", REVIEW, "-t", "r", "--input", request).exit_code == 4
    resumed = ttcli(db, "resume", "-t", "r", "--value", "yes", "--json")
    assert resumed.exit_code == 0
    assert data(resumed)["values"]["log"][1] == "reviewer said 'yes'"


@pytest.mark.parametrize(
    ("args", "none"),
    [
        (["history", "-t", "order:123"], ["--filter", "source=nothing"]),
        (["threads"], ["--prefix", "nothing"]),
        (["threads", "--bytes"], ["--prefix", "nothing"]),
    ],
    ids=["history", "threads", "threads-bytes"],
)
def test_csv_has_one_header_with_or_without_rows(
    db: Target, args: list[str], none: list[str]
) -> None:
    full = ttcli(db, *args, "--format", "csv").stdout.splitlines()
    empty = ttcli(db, *args, *none, "--format", "csv")
    assert len(full) > 1 and (empty.exit_code, empty.stdout) == (0, full[0] + "\n")


def test_csv_writes_booleans_as_json_does(db: Target) -> None:
    plan = ttcli(db, "prune", "--older-than", "0s", "--format", "csv")
    assert plan.stdout.splitlines()[:2] == ["field,value", "done,false"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["history", "-t", "order:123", "--filter", "source=nothing"],
            "no checkpoints in thread 'order:123' match",
        ),
        (["threads", "--prefix", "nothing"], "no threads whose id starts with 'nothing'"),
    ],
    ids=["history", "threads"],
)
def test_an_empty_table_says_so_on_stderr(db: Target, args: list[str], message: str) -> None:
    result = ttcli(db, *args)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", message + "\n")
    scripted = ttcli(db, *args, "--json")
    assert (scripted.stdout, scripted.stderr) == ("[]\n", "")


def test_prune_of_a_thread_that_does_not_exist_says_so(db: Target) -> None:
    result = ttcli(db, "prune", "--older-than", "0s", "--thread", "order:124")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == "Error: thread 'order:124' not found: it has no checkpoints\n"


def test_a_prune_with_nothing_to_do_asks_for_nothing_and_makes_no_archive(
    db: Target, tmp_path: Path
) -> None:
    plan = ttcli(db, "prune", "--older-than", "7d")
    assert (plan.exit_code, plan.stderr) == (0, "")
    assert plan.stdout == "would prune 0 checkpoints in 0 threads, about 0 bytes\n"
    done = ttcli(db, "prune", "--older-than", "7d", "--archive", str(tmp_path / "a.db"), "--yes")
    assert (done.exit_code, done.stdout) == (
        0,
        "pruned 0 checkpoints in 0 threads, freed 0 bytes\n",
    )
    assert not (tmp_path / "a.db").exists()


SLOW = """
import operator, pathlib, sys, time
from typing import Annotated, TypedDict
from ttcli import StateGraph, START, END

class S(TypedDict):
    log: Annotated[list, operator.add]

def slow(state):
    marker = pathlib.Path(__file__).with_name("started")
    if not marker.exists():
        marker.write_text("")
        print("b started", file=sys.stderr, flush=True)
        time.sleep(60)  # Ctrl-C comes here
    return {"log": ["b"]}

graph = StateGraph(S)
graph.add_node("a", lambda s: {"log": ["a"]})
graph.add_node("b", slow)
graph.add_edge(START, "a")
graph.add_edge("a", "b")
graph.add_edge("b", END)
"""


def test_ctrl_c_during_run_exits_130_and_says_how_to_go_on(tmp_path: Path, new_db: NewDb) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    db, target = new_db("slow.db"), f"{tmp_path / 'slow.py'}:graph"
    command = [sys.executable, "-m", "ttcli", "--db", str(db), "run", target, "-t", "s"]
    with subprocess.Popen(
        [*command, "--input", '{"log": []}'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    ) as process:  # fmt: skip
        assert process.stderr is not None
        assert process.stderr.readline() == "b started\n"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    head = ttcli(db, "show", "-t", "s", "--json")
    stopped_at = data(head)["checkpoint_id"]
    assert (process.returncode, out) == (130, "")
    assert err == (
        f"Error: interrupted at {stopped_at}: `ttcli run {target} --thread s` goes on from there\n"
    )
    listed = data(ttcli(db, "threads", "--json"))
    assert [(t["thread_id"], t["status"]) for t in listed] == [("s", "interrupted")]
    went_on = ttcli(db, "run", target, "-t", "s", "--json")
    assert data(went_on)["values"] == {"log": ["a", "b"]}
    listed = data(ttcli(db, "threads", "--json"))
    assert [(t["thread_id"], t["status"]) for t in listed] == [("s", "done")]


def test_filter_writes_names_a_node(db: Target, long_db: Target) -> None:
    by_name = data(ttcli(db, "history", "-t", "order:123", "--filter", "writes=plan", "--json"))
    assert [(e["step"], e["writes"]) for e in by_name] == [(2, ["plan"])]
    as_list = ttcli(db, "history", "-t", "order:123", "--filter", 'writes=["plan"]', "--json")
    assert data(as_list) == by_name
    paged = ttcli(long_db, "history", "-t", "long", "--filter", "writes=a", "--limit", "3")
    assert [line.split()[4] for line in paged.stdout.splitlines()[2:]] == ["a", "a", "a"]
    none = ttcli(db, "history", "-t", "order:123", "--filter", "writes=nobody")
    assert (none.stdout, none.stderr) == ("", "no checkpoints in thread 'order:123' match\n")


def test_filter_looks_into_what_a_node_wrote(db: Target) -> None:
    def steps(*filters: str) -> list[int]:
        args = [arg for f in filters for arg in ("--filter", f)]
        listed = ttcli(db, "history", "-t", "order:123", *args, "--json")
        assert listed.exit_code == 0, listed.stderr
        return [entry["step"] for entry in data(listed)]

    assert steps("writes.plan.tool=cancel_order") == [2]
    assert steps("writes.plan.tool=refund_order") == []
    assert steps("writes.plan.tool=cancel_order", "source=loop") == [2]
    assert steps('writes.understand={"order_id": "123", "log": ["understand: order 123"]}') == [1]
    assert steps('writes=["plan", "understand"]') == []
    assert steps('writes=["understand"]') == [1]


def test_run_on_a_new_thread_without_input_says_to_give_it(db: Target) -> None:
    result = ttcli(db, "run", ORDER_AGENT, "-t", "order:124")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "Error: thread 'order:124' is new: give --input JSON\n"


@pytest.mark.parametrize(
    ("source", "name", "message"),
    [
        (
            "x = (\n",
            "graph",
            "graph TARGET '{target}': syntax error in {file}, line 1: '(' was never closed",
        ),
        (
            "from typing import TypedDict\nclass S(TypedDict):\n    x: int\n",
            "S",
            "graph TARGET '{target}' is a state schema (a TypedDict), not a graph: name the "
            "StateGraph built on it, the compiled graph, or a function returning one",
        ),
    ],
    ids=["syntax-error", "state-schema"],
)
def test_a_target_that_is_not_a_ttcli_graph_says_what_it_is(
    db: Target, tmp_path: Path, source: str, name: str, message: str
) -> None:
    (tmp_path / "bad.py").write_text(source)
    target = f"{tmp_path / 'bad.py'}:{name}"
    result = ttcli(db, "run", target, "-t", "t", "--input", "{}")
    assert (result.exit_code, result.stdout) == (2, "")
    expected = message.format(target=target, file=tmp_path / "bad.py")
    assert result.stderr == f"Error: {expected}\n"


def test_a_target_that_needs_langgraph_names_the_extra(db: Target, tmp_path: Path) -> None:
    (tmp_path / "lg.py").write_text("import langgraph.not_installed\n")
    target = f"{tmp_path / 'lg.py'}:graph"
    result = ttcli(db, "run", target, "-t", "t", "--input", "{}")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: graph TARGET '{target}' needs LangGraph (langgraph.not_installed is not "
        "installed): pip install 'ttcli[langgraph]'\n"
    )


def test_ttcli_alone_prints_the_help() -> None:
    alone = CliRunner().invoke(cli, [])
    assert (alone.exit_code, alone.stderr) == (0, "")
    assert alone.stdout == CliRunner().invoke(cli, ["--help"]).stdout


def test_history_and_show_give_writes_one_shape(db: Target) -> None:
    listed = data(ttcli(db, "history", "-t", "order:123", "--json"))[2]
    shown = data(ttcli(db, "show", "latest~2", "-t", "order:123", "--json"))
    assert {k: shown[k] for k in listed} == listed
    assert (shown["writes"], list(shown["returned"])) == (["plan"], ["plan"])


def test_show_lists_values_in_the_order_of_the_state(db: Target) -> None:
    table = ttcli(db, "show", "latest~2", "-t", "order:123").stdout.splitlines()
    values = table[table.index("values") + 1 : table.index("tasks       ")]
    assert [line.split(":")[0].strip() for line in values] == [
        "request", "order_id", "tool", "tool_result", "log"
    ]  # fmt: skip
    shown = data(ttcli(db, "show", "latest~2", "-t", "order:123", "--json"))
    assert list(shown["values"]) == ["request", "order_id", "tool", "tool_result", "log"]


def test_replay_plan_promises_a_fork_only_when_it_makes_one(db: Target) -> None:
    past = data(ttcli(db, "replay", "latest~2", "-t", "order:123", "--plan", "--json"))
    assert (past["fork"], past["runs"]) == (True, ["call_tool"])
    fix = ["--as-node", "plan", "--set", "tool=refund_order", "--at", "latest~2", "--json"]
    head = data(ttcli(db, "update", "-t", "order:123", *fix))["checkpoint_id"]
    plan = ttcli(db, "replay", "latest", "-t", "order:123", "--plan")
    assert plan.stdout.splitlines()[0] == (
        f"replay from {head} (step 3): the thread's head, an update: no fork, runs call_tool"
    )
    done = data(ttcli(db, "replay", "latest", "-t", "order:123", "--json"))
    history = data(ttcli(db, "history", "-t", "order:123", "--json"))
    assert "fork" not in [e["source"] for e in history] and done["status"] == "done"


def test_diff_exit_code_counts_only_what_it_prints(db: Target) -> None:
    same = ttcli(db, "diff", "latest", "latest", "-t", "order:123", "--exit-code")
    assert (same.exit_code, same.stdout.splitlines()[2:]) == (0, ["values: no difference"])
    steps = ttcli(db, "diff", "latest~1", "latest", "-t", "order:123", "--exit-code")
    assert steps.exit_code == 1
    assert steps.stdout.splitlines()[-2:] == ["next: respond -> -", "writes: call_tool -> respond"]


def test_a_database_moved_with_its_graph_still_replays(tmp_path: Path) -> None:
    # SQLite only: a graph file is recorded relative to the database file, which moves with it
    first = tmp_path / "first"
    first.mkdir()
    (first / "agent.py").write_text((ROOT / "fixtures" / "order_agent.py").read_text())
    ran = ttcli(
        first / "ci.db", "run", f"{first}/agent.py:graph", "-t", "o", "--input", json.dumps(ORDER)
    )
    assert ran.exit_code == 0
    moved = first.rename(tmp_path / "moved")
    replayed = ttcli(moved / "ci.db", "replay", "latest~2", "-t", "o", "--json")
    assert (replayed.exit_code, data(replayed)["graph"]) == (0, "agent.py:graph")
    (moved / "agent.py").unlink()
    gone = ttcli(moved / "ci.db", "replay", "latest~2", "-t", "o")
    assert (gone.exit_code, gone.stdout) == (3, "")
    assert gone.stderr == (
        f"Error: graph TARGET file {moved / 'agent.py'}, recorded with thread 'o', does not "
        "exist: pass --graph TARGET\n"
    )


ODD = """
from typing import Any, TypedDict
from ttcli import StateGraph, START

class S(TypedDict):
    note: str
    odd: Any

graph = StateGraph(S)
graph.add_node("a", lambda s: {"odd": {1: "int", "1": "text", "x": float("nan")}})
graph.add_edge(START, "a")
"""


@pytest.fixture
def odd_db(tmp_path: Path, new_db: NewDb) -> Target:
    """Thread t\\x1b[2J (an escape sequence in its id) whose state holds a control character,
    NaN and the keys 1 and "1"."""
    (tmp_path / "odd.py").write_text(ODD)
    path = new_db("odd.db")
    given = json.dumps({"note": "\x1b]0;owned\x07 \u202eevil"})
    ran = ttcli(path, "run", f"{tmp_path / 'odd.py'}:graph", "-t", "t\x1b[2J", "--input", given)
    assert ran.exit_code == 0, ran.stderr
    return path


def test_tables_escape_control_characters(odd_db: Target) -> None:
    listed = ttcli(odd_db, "threads").stdout.splitlines()
    assert listed[2].startswith("t\\x1b[2J  ")
    shown = ttcli(odd_db, "show", "-t", "t\x1b[2J").stdout
    assert "thread      t\\x1b[2J\n" in shown
    assert '  note: "\\u001b]0;owned\\u0007 \\u202eevil"\n' in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    tree = ttcli(odd_db, "tree", "-t", "t\x1b[2J").stdout
    assert "\x1b" not in tree


def test_show_json_is_valid_and_keeps_every_key(odd_db: Target) -> None:
    shown = ttcli(odd_db, "show", "-t", "t\x1b[2J", "--json")

    def refuse(constant: str) -> None:
        raise AssertionError(f"invalid JSON: {constant}")

    odd = json.loads(shown.stdout, parse_constant=refuse)["values"]["odd"]
    assert odd == {"$map": [[1, "int"], ["1", "text"], ["x", {"$float": "NaN"}]]}


def test_a_deeply_nested_value_shows(db: Target) -> None:
    deep: object = 0
    for _ in range(600):
        deep = [deep]
    given = json.dumps({**ORDER, "order_id": deep})
    assert ttcli(db, "run", ORDER_AGENT, "-t", "deep", "--input", given).exit_code == 0
    shown = ttcli(db, "show", "latest~4", "-t", "deep", "--json")
    assert (shown.exit_code, json.loads(shown.stdout)["values"]["order_id"]) == (0, deep)
    table = ttcli(db, "show", "latest~4", "-t", "deep")
    assert (table.exit_code, table.stderr) == (0, "")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["threads", "--prefix", "\U0010ffff"], 0, "no threads whose id starts with '\\U0010ffff'"),
        (
            ["prune", "--older-than", "99999999999d"],
            2,
            "Error: '99999999999d' is before 1970: no checkpoint is that old (a typo?)",
        ),
        (
            ["history", "-t", b"\xff".decode("utf-8", "surrogateescape")],
            2,
            "Error: argument '\\xff' is not valid UTF-8 text",
        ),
        (
            ["run", ORDER_AGENT, "-t", "s", "--input", '{"request": "a\\udcffb", "log": []}'],
            2,
            "Error: --input holds text that is not valid Unicode (\\udcff)",
        ),
        (
            ["run", ORDER_AGENT, "-t", "s", "--input", '{"request": [1, 18446744073709551616]}'],
            2,
            "Error: --input holds the integer 18446744073709551616, outside the range a "
            "database stores (-2**63 to 2**64-1): give it as a string",
        ),
        (
            ["run", ORDER_AGENT, "-t", "s", "--input", '{"request": 1' + "0" * 5000 + "}"],
            2,
            "Error: --input holds an integer of thousands of digits, which no database "
            "stores: give it as a string",
        ),
        (
            ["update", "-t", "s", "--as-node", "plan", "--set", "tool=-9223372036854775809"],
            2,
            "Error: --set holds the integer -9223372036854775809, outside the range a "
            "database stores (-2**63 to 2**64-1): give it as a string",
        ),
    ],
    ids=[
        "last-code-point",
        "huge-duration",
        "not-utf-8",
        "lone-surrogate",
        "integer-past-64-bits",
        "integer-of-5000-digits",
        "update-integer-below-64-bits",
    ],
)
def test_hostile_arguments_get_one_line(
    db: Target, args: list[str], code: int, message: str
) -> None:
    before = dump(db)
    result = ttcli(db, *args)
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", message + "\n")
    assert dump(db) == before


def test_short_ids_have_8_characters_and_work_as_refs(long_db: Target) -> None:
    table = ttcli(long_db, "history", "-t", "long", "--limit", "20").stdout.splitlines()
    full = data(ttcli(long_db, "history", "-t", "long", "--limit", "20", "--json"))
    shown = [(line[:8], line[8:10], line.split()[-1]) for line in table[2:]]
    assert [(s, gap) for s, gap, _ in shown] == [(e["checkpoint_id"][-8:], "  ") for e in full]
    assert [p for _, _, p in shown] == [e["parent_checkpoint_id"][-8:] for e in full]
    for short, _, parent in shown[:3]:
        found = data(ttcli(long_db, "show", short, "-t", "long", "--json"))
        assert found["checkpoint_id"].endswith(short)
        assert data(ttcli(long_db, "show", f"{short}~1", "-t", "long", "--json"))[
            "checkpoint_id"
        ].endswith(parent)
    tree = ttcli(long_db, "tree", "-t", "long").stdout.splitlines()
    assert tree[0].startswith(f"* {full[0]['checkpoint_id'][-8:]}  step ")


def test_show_and_run_say_alike_what_a_paused_thread_waits_for(new_db: NewDb) -> None:
    db = new_db("review.db")
    request = json.dumps({"request": "refund 7", "plan": "", "log": []})
    ran = ttcli(db, "run", REVIEW, "-t", "r", "--input", request, "--json")
    shown = data(ttcli(db, "show", "-t", "r", "--json"))
    question = {"question": "Approve this plan?", "plan": "cancel the order (refund 7)"}
    (wait,) = data(ran)["waiting"]
    assert wait == {
        "node": "review",
        "interrupts": [{"id": wait["interrupts"][0]["id"], "value": question}],
    }
    assert shown["waiting"] == data(ran)["waiting"]
    assert [(t["name"], t["waiting"], t["interrupts"]) for t in shown["tasks"]] == [
        ("review", True, wait["interrupts"])
    ]
    table = ttcli(db, "show", "-t", "r").stdout.splitlines()
    at = table.index("waiting: review")
    assert table[at - 1] == "next        review"
    assert table[at + 1] == f"  asks: {json.dumps(question)} (id {wait['interrupts'][0]['id']})"
    assert table[-1] == "  review [waiting for an answer]"
    done = data(ttcli(db, "resume", "-t", "r", "--value", "yes", "--json"))
    assert done["waiting"] == [] and data(ttcli(db, "show", "-t", "r", "--json"))["waiting"] == []


def test_ctrl_c_in_any_command_exits_130(db: Target, tmp_path: Path) -> None:
    (tmp_path / "slow_import.py").write_text("raise KeyboardInterrupt\n")
    result = ttcli(db, "graph", f"{tmp_path / 'slow_import.py'}:graph")
    assert (result.exit_code, result.stdout) == (130, "")
    assert result.stderr == (
        "Error: interrupted: what was committed is kept; run the command again to go on\n"
    )


FAN_TO = """
from ttcli import START, Send, StateGraph, interrupt
from tests.graphs import LogState

def node(state):
    return {{"log": ["{node}:" + interrupt("go?")]}}

builder = StateGraph(LogState)
builder.add_node("prep", lambda state: {{}})
builder.add_node("{node}", node)
builder.add_edge(START, "prep")
builder.add_conditional_edges("prep", lambda state: [Send("{node}", {{"log": []}})], ["{node}"])
graph = builder.compile()
"""

#: the commands that go on from the thread's paused checkpoint, given the renamed graph
GOING_ON = {
    "run": ["run", "{new}", "-t", "f"],
    "run-resume": ["run", "{new}", "-t", "f", "--resume", '"yes"'],
    "run-from": ["run", "{new}", "-t", "f", "--from", "latest"],
    "resume": ["resume", "-t", "f", "--value", "yes", "--graph", "{new}"],
    "replay": ["replay", "latest", "-t", "f", "--graph", "{new}"],
}


@pytest.mark.parametrize("command", list(GOING_ON))
def test_going_on_with_a_graph_without_the_node_a_stored_send_names_is_exit_2(
    tmp_path: Path, new_db: NewDb, command: str
) -> None:
    """The graph's node was renamed while a thread waited in a Send's task: one line, exit 2,
    nothing run, answered, forked or recorded; the graph that wrote it still goes on (the
    thread's recorded graph, without --graph)."""
    db = new_db("fan.db")
    for node in ("work", "labour"):
        (tmp_path / f"{node}.py").write_text(FAN_TO.format(node=node))
    old, new = f"{tmp_path / 'work.py'}:graph", f"{tmp_path / 'labour.py'}:graph"
    assert ttcli(db, "run", old, "-t", "f", "--input", '{"log": []}').exit_code == 4
    before = [ttcli(db, *read).stdout for read in READ_BACK]
    done = ttcli(db, *(arg.format(new=new) for arg in GOING_ON[command]))
    assert (done.exit_code, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: checkpoint ") and line.endswith(
        "of thread 'f' holds a Send to node 'work', which this graph does not have (its nodes: "
        "['labour', 'prep']): run the thread with the graph that wrote it, or fork it from an "
        "earlier checkpoint"
    )
    assert [ttcli(db, *read).stdout for read in READ_BACK] == before
    resumed = ttcli(db, "resume", "-t", "f", "--value", "yes", "--json")
    assert data(resumed)["values"]["log"] == ["work:yes"], resumed.stderr


READ_BACK = [["history", "-t", "f", "--json"], ["show", "latest", "-t", "f", "--json"]]


@pytest.mark.parametrize(
    "uri",
    [
        "file:uri.db",
        "file:./uri.db",
        "file:{tmp}/uri.db",
        "file://localhost{tmp}/uri.db",
        "FILE:%75ri.db",
    ],
)
def test_a_file_uri_names_one_file_for_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    """What `run` wrote through a file: URI, the reading commands, TTCLI_DB and an import
    into it find at the same URI (they looked for a file called `file:uri.db`)."""
    monkeypatch.chdir(tmp_path)
    db = uri.format(tmp=tmp_path)
    ran = ttcli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER))
    assert ran.exit_code == 0, ran.stderr
    by_path = ttcli("uri.db", "history", "-t", "o", "--json")
    assert ttcli(db, "history", "-t", "o", "--json").stdout == by_path.stdout != ""
    shown = CliRunner().invoke(cli, ["show", "-t", "o", "--json"], env={"TTCLI_DB": db})
    assert (
        shown.exit_code == 0
        and data(shown)["values"] == data(ttcli("uri.db", "show", "-t", "o", "--json"))["values"]
    )
    copied = ttcli("file:copy.db", "import", db)
    assert copied.exit_code == 0, copied.stderr
    assert ttcli("copy.db", "history", "-t", "o", "--json").stdout == by_path.stdout
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["copy.db", "uri.db"]
    # a URI's path that is itself `file:...` names that file, for the writer and the readers
    named = ttcli("file:file:uri.db", "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER))
    assert named.exit_code == 0 and (tmp_path / "file:uri.db").is_file()
    assert ttcli("./file:uri.db", "threads").stdout == ttcli("file:file:uri.db", "threads").stdout


def test_a_typed_db_replaces_a_ttcli_db_that_would_be_refused(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    assert ttcli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER)).exit_code == 0
    bad = {"TTCLI_DB": "file:a.db?mode=ro"}
    for args in (["--db", str(db), "threads"], ["threads", "--db", f"file:{db}"]):
        listed = CliRunner().invoke(cli, [*args, "--json"], env=bad)
        assert listed.exit_code == 0, listed.output
        assert [t["thread_id"] for t in data(listed)] == ["o"]
    refused = CliRunner().invoke(cli, ["threads"], env=bad)
    assert refused.exit_code == 2
    assert refused.stderr.startswith("Error: --db 'file:a.db?mode=ro' is a SQLite URI")


@pytest.mark.parametrize(
    "uri",
    [
        "file:x.db?mode=ro",
        "file::memory:?cache=shared",
        "file://host/x.db",
        "file:",
        "file:///",
        "file:%FF.db",
        "file:a%00b.db",
    ],
)
def test_a_file_uri_ttcli_does_not_open_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["threads"], ["run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER)]):
        refused = ttcli(uri, *command)
        assert (refused.exit_code, refused.stdout) == (2, "")
        (line,) = refused.stderr.splitlines()
        assert (
            "is a SQLite URI ttcli does not open" in line
            and "give the database file's path" in line
        )
    assert list(tmp_path.iterdir()) == []


def test_file_uris_and_paths_that_look_like_urls_are_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a URL that names no folder is refused as one: SQLite's file: URIs, and a path
    under a folder called `bk:`, are files as they always were."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bk:").mkdir()
    for db, path in ((f"file://{tmp_path}/uri.db", "uri.db"), ("bk://n.db", "bk:/n.db")):
        ran = ttcli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER))
        assert ran.exit_code == 0, (db, ran.stderr)
        assert [t["thread_id"] for t in data(ttcli(path, "threads", "--json"))] == ["o"]
    refused = ttcli("s3://bucket/x.db", "threads")
    assert refused.exit_code == 2 and "s3://... is not a database" in refused.stderr
