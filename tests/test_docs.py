"""The public surface: `__all__` is sorted and complete, the demo and README stay true."""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import ttcli
from tests import readme
from tests.clitools import ORDER, ORDER_AGENT
from tests.clitools import ttcli as ttcli_cli

ROOT = Path(__file__).parent.parent


def test_all_is_sorted_and_complete() -> None:
    assert ttcli.__all__ == sorted(ttcli.__all__)
    assert set(ttcli.__all__) == set(ttcli._WHERE)
    for name in ttcli.__all__:
        assert getattr(ttcli, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = ttcli.nothing


def test_the_command_line_starts_without_the_runtime() -> None:
    script = "import sys, ttcli.cli.main, ttcli.cli.read; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert "ttcli.runtime.loop" not in loaded and "tabulate" not in loaded
    # what only other commands use is imported by them (issue 16: start-up of history, show)
    for unused in (
        "ttcli.ops.verify",
        "ttcli.ops.tree",
        "ttcli.ops.diff",
        "ttcli.ops.fork",
        "ttcli.ops.pictures",
        "ttcli.ops.subgraphs",  # show's alone
    ):
        assert f"'{unused}'" not in loaded, unused


_SYNC_PROGRAM = """
import sys
from fixtures.order_agent import build
from ttcli.savers.sqlite import SqliteSaver

config = {"configurable": {"thread_id": "t"}}
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    app = build().compile(checkpointer=saver)
    app.invoke({"request": "cancel order 7", "tool_result": "", "log": []}, config)
    app.update_state(config, {"request": "refund order 7"})
    sources = [s.metadata["source"] for s in app.get_state_history(config)]
print(sources[:2], len(sources), "asyncio" in sys.modules)
"""


def test_a_synchronous_program_and_ttcli_run_never_import_asyncio(tmp_path: Path) -> None:
    """Importing asyncio made importing the runtime a third slower: only what is async (the
    async API, an async node) loads it, see runtime/aio.py."""
    program = subprocess.run(
        [sys.executable, "-c", _SYNC_PROGRAM, str(tmp_path / "p.db")],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    assert program.stdout.split() == ["['update',", "'loop']", "7", "False"], program.stdout
    db = str(tmp_path / "t.db")
    script = (
        "import atexit, sys; from ttcli.cli import cli; "
        "atexit.register(lambda: print('asyncio' in sys.modules, file=sys.stderr)); "
        f"cli({['--db', db, 'run', ORDER_AGENT, '-t', 'o', '--input', json.dumps(ORDER)]!r})"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("done at "), done.stderr
    assert done.stderr.split() == ["False"], done.stderr


@pytest.mark.parametrize("command", [["history", "--limit", "20"], ["show"]])
def test_reading_commands_load_neither_the_writer_nor_the_prune(
    tmp_path: Path, command: list[str]
) -> None:
    db = str(tmp_path / "t.db")
    assert ttcli_cli(db, "run", ORDER_AGENT, "-t", "o", "--input", json.dumps(ORDER)).exit_code == 0
    script = (
        "import atexit, sys; from ttcli.cli import cli; "
        "atexit.register(lambda: print(sorted(sys.modules), file=sys.stderr)); "
        f"cli({['--db', db, *command, '-t', 'o']!r})"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and "respond" in done.stdout, done.stderr
    # storing, deleting and archiving are imported by the commands that do them (issue 16)
    for unused in (
        "ttcli.savers.sql.put",
        "ttcli.savers.blob_writer",
        "ttcli.savers.sql.deletion",
        "ttcli.savers.sql.copy",
        "ttcli.runtime.loop",
    ):
        assert f"'{unused}'" not in done.stderr, unused
    assert "'ttcli.savers.sql.states'" in done.stderr  # what it did load is seen


def test_langgraph_names_are_importable_from_ttcli() -> None:
    from ttcli import (  # noqa: F401
        END,
        START,
        EmptyInputError,
        GraphRecursionError,
        InMemorySaver,
        InvalidUpdateError,
        MessagesState,
        PregelTask,
        StateGraph,
        StateSnapshot,
        add_messages,
    )


def test_demo_runs_the_time_travel_loop(tmp_path: Path) -> None:
    env = {**os.environ, "TTCLI_DB": str(tmp_path / "demo.db")}
    for _ in range(2):  # the demo can run again on the same file
        done = subprocess.run(
            [sys.executable, "-m", "fixtures.demo"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '  reply: "Done: order 123 cancelled."' in out
    assert '+ tool: "cancel_order"' in out
    assert '  reply: "Done: order 123 refunded: 42.00 EUR."' in out
    assert "order:123-fixed: a copy of " in out
    assert "|/" in out
    # the second run started afresh: 9 checkpoints (one run, one fix), not 18
    assert re.search(r"^order:123\s+-\s+9\s", out, flags=re.M)


def test_readme_python_example_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write their files here
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "loop 2 {'step': 2} () {'b': {'step': 2}}" in out


def test_review_workflow_pauses_and_resumes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTCLI_DB", str(tmp_path / "review.db"))
    runpy.run_module("fixtures.review_workflow", run_name="__main__", alter_sys=True)
    assert capsys.readouterr().out.splitlines() == [
        "paused at ('review',): {'question': 'Approve this plan?', "
        "'plan': 'cancel the order (refund order 123)'}",
        "['plan drafted', \"reviewer said 'yes'\", 'done: cancel the order (refund order 123)']",
        "asked again about: refund order 123",
        "['plan drafted', \"reviewer said 'yes'\", 'done: refund order 123']",
    ]


def test_every_command_has_a_readme_section() -> None:
    from ttcli.cli.main import COMMANDS

    headings = re.findall(r"^### ttcli (\S+)$", (ROOT / "README.md").read_text(), flags=re.M)
    assert sorted(headings) == sorted(COMMANDS)


def test_readme_sessions_run_as_typed(tmp_path: Path) -> None:
    """Every `$ ttcli ...` line of the README, run in order in a fresh folder, prints what the
    README says it prints (ids and times aside) and exits as it says."""
    env = readme.folder(tmp_path)
    for _, steps in readme.sessions(readme.README.read_text()):
        for step in steps:
            ran = readme.run(step, tmp_path, env)
            assert (ran.exit_code, readme.stable(ran.output)) == (
                step.exit_code,
                readme.stable(step.output),
            ), step.command
