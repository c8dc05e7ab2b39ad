"""The storage invariants of `ttcli.savers.base`, as a user meets them when they break.

- a child sorts after its parent, whatever the clocks of the processes that wrote them;
- an interrupt's answer is stored once: a different second answer is refused;
- what one saver refuses or keeps, every saver refuses or keeps (no divergence by backend).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import graphs
from tests.clitools import Target, data, ttcli
from tests.conftest import NewDb
from ttcli import END, START, Command, Send, StateGraph, interrupt
from ttcli.errors import AnswerConflictError, ConfigError
from ttcli.savers.base import BaseSaver
from ttcli.uuid6 import id_time, lowest_id_at

ROOT = Path(__file__).parent.parent
API = SimpleNamespace(
    StateGraph=StateGraph, START=START, END=END, interrupt=interrupt, Command=Command, Send=Send
)

COUNTER = textwrap.dedent(
    """
    from typing import TypedDict
    from ttcli import StateGraph, START, END

    class S(TypedDict):
        n: int

    builder = StateGraph(S)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    """
)

#: a review that waits for an answer; once answered, the node makes the file named by
#: $STARTED (if set), waits for the file named by $GO (if set), and logs its action to $ACTED
REVIEW = textwrap.dedent(
    """
    import os, time
    from typing import TypedDict
    from ttcli import StateGraph, START, END, interrupt

    class S(TypedDict):
        answer: str

    def review(state):
        answer = interrupt("approve?")
        if os.environ.get("STARTED"):
            open(os.environ["STARTED"], "w").close()
        go = os.environ.get("GO")
        for _ in range(400):
            if not go or os.path.exists(go):
                break
            time.sleep(0.05)
        with open(os.environ["ACTED"], "a") as log:
            log.write(answer + "\\n")
        return {"answer": answer}

    builder = StateGraph(S)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    """
)


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def cli_process(db: Target, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`ttcli` in a process of its own (its own id clock, as another host's would be)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ttcli", "--db", str(db), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Wait for a process started by `cli_process`: its exit code and its stderr."""
    _out, err = process.communicate(timeout=60)
    return process.returncode, err


# -- a child sorts after its parent ------------------------------------------------------------


def test_a_write_from_a_clock_an_hour_ahead_does_not_hide_later_checkpoints(
    tmp_path: Path, new_db: NewDb
) -> None:
    (tmp_path / "counter.py").write_text(COUNTER)
    db = new_db("t.db")
    assert ttcli(db, "run", f"{tmp_path}/counter.py:builder", "--thread", "t", "--input",
                 '{"n": 0}').exit_code == 0  # fmt: skip
    # one update from a process whose clock runs an hour ahead
    ahead = (
        "import time; real = time.time_ns; time.time_ns = lambda: real() + 3600 * 10**9; "
        "from ttcli.cli import cli; cli()"
    )
    skewed = subprocess.run(
        [sys.executable, "-c", ahead, "--db", str(db), "update", "--thread", "t",
         "--as-node", "inc", "--set", "n=100"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert skewed.returncode == 0, skewed.stderr
    # then this (right) clock writes twice more
    assert ttcli(db, "update", "--thread", "t", "--as-node", "inc", "--set", "n=200").exit_code == 0
    assert ttcli(db, "update", "--thread", "t", "--as-node", "inc", "--set", "n=300").exit_code == 0

    assert data(ttcli(db, "show", "latest", "--thread", "t", "--json"))["values"] == {"n": 300}
    history = data(ttcli(db, "history", "--thread", "t", "--json"))
    by_id = {row["checkpoint_id"]: row for row in history}
    for row in history:  # newest first, and every child after its parent
        parent = row["parent_checkpoint_id"]
        assert parent is None or parent not in by_id or parent < row["checkpoint_id"]
    newest = history[0]["checkpoint_id"]
    # a prune that keeps one checkpoint keeps the one written last
    assert ttcli(db, "prune", "--older-than", "0s", "--keep-last", "1", "--yes").exit_code == 0
    kept = data(ttcli(db, "history", "--thread", "t", "--json"))
    assert kept[0]["checkpoint_id"] == newest


def test_a_checkpoint_that_would_sort_before_its_parent_is_refused(saver: BaseSaver) -> None:
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg())
    head = app.get_state(cfg())
    checkpoint = saver.get_tuple(head.config)
    assert checkpoint is not None
    older = dict(checkpoint.checkpoint)
    older["id"] = lowest_id_at(id_time(checkpoint.checkpoint["id"]) - timedelta(seconds=1))
    with pytest.raises(ConfigError, match="sort after its parent"):
        saver.put(head.config, older, {"source": "update", "step": 9}, {})  # type: ignore[arg-type]
    assert [s.config for s in app.get_state_history(cfg())][0] == head.config


def test_deleting_a_parent_keeps_its_child_readable_on_every_saver(saver: BaseSaver) -> None:
    app = graphs.linear(API).compile(checkpointer=saver)
    app.invoke({"x": 1, "log": []}, cfg())
    history = list(app.get_state_history(cfg()))
    before = [(s.values, s.next, s.metadata) for s in history[:2]]
    saver.delete_checkpoints(cfg(), [s.config["configurable"]["checkpoint_id"] for s in
                                     history[2:]])  # fmt: skip
    after = list(app.get_state_history(cfg()))
    assert [(s.values, s.next, s.metadata) for s in after] == before
    assert after[-1].parent_config == history[2].config


def test_ids_made_after_a_future_checkpoint_sort_after_it() -> None:
    future = datetime.now(UTC) + timedelta(hours=1)
    parent = lowest_id_at(future)
    from ttcli.uuid6 import new_id

    assert new_id(0, after=parent) > parent
    assert id_time(new_id(0, after=parent)) >= future


def test_a_run_leaves_the_programs_random_numbers_alone(saver: BaseSaver) -> None:
    """Checkpoint ids draw their random bits from a generator of their own: a program that
    seeds `random` draws the same numbers whether a graph ran in between or not."""
    app = graphs.linear(API).compile(checkpointer=saver)
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    app.invoke({"x": 1, "log": []}, cfg())
    assert [random.random() for _ in range(3)] == expected


def test_two_processes_seeding_random_alike_make_different_ids() -> None:
    """After a parent from a clock running ahead, ids made at once share their time and
    step: their random bits alone tell them apart, even where each program seeds `random`
    the same."""
    parent = lowest_id_at(datetime.now(UTC) + timedelta(hours=1))
    code = (
        "import random; random.seed(0); from ttcli.uuid6 import new_id; "
        f"print(new_id(1, after={parent!r}))"
    )
    made = [
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
        ).stdout
        for _ in range(2)
    ]
    assert made[0] and made[0] != made[1]


# -- an interrupt's answer is stored once ------------------------------------------------------


def test_a_different_second_answer_to_one_interrupt_is_refused(saver: BaseSaver) -> None:
    app = graphs.review(API).compile(checkpointer=saver)
    app.invoke({"plan": "", "log": []}, cfg())
    app.update_state(cfg(), Command(resume="approved"))
    app.update_state(cfg(), Command(resume="approved"))  # the same again: harmless
    with pytest.raises(AnswerConflictError, match="already answered with 'approved'"):
        app.update_state(cfg(), Command(resume="rejected"))
    with pytest.raises(AnswerConflictError):
        app.invoke(Command(resume="rejected"), cfg())
    assert app.invoke(None, cfg())["log"] == ["plan", "review:approved", "act"]


def _paused_review(tmp_path: Path, db: Target) -> tuple[Target, dict[str, str]]:
    (tmp_path / "review.py").write_text(REVIEW)
    env = {"ACTED": str(tmp_path / "acted.log")}
    paused = cli_process(db, "run", f"{tmp_path}/review.py:builder", "--thread", "r",
                         "--input", '{"answer": ""}', env=env)  # fmt: skip
    code, err = finish(paused)
    assert code == 4, err
    return db, env


def test_two_resumes_racing_with_different_answers_store_one(tmp_path: Path, new_db: NewDb) -> None:
    db, env = _paused_review(tmp_path, new_db("r.db"))
    go = tmp_path / "go"
    racers = [
        cli_process(
            db, "resume", "--thread", "r", "--value", json.dumps(answer), env={**env, "GO": str(go)}
        )  # fmt: skip
        for answer in ("yes", "no")
    ]
    deadline = time.monotonic() + 60
    while all(p.poll() is None for p in racers) and time.monotonic() < deadline:
        time.sleep(0.05)  # the loser is refused before its node runs; the winner waits on GO
    go.touch()
    ended = [finish(p) for p in racers]
    assert sorted(code for code, _ in ended) == [0, 2]
    (message,) = [err for code, err in ended if code == 2]
    assert message.count("\n") == 1 and "already answered with" in message
    acted = (tmp_path / "acted.log").read_text().splitlines()
    assert len(acted) == 1  # the node acted once, on the stored answer
    assert data(ttcli(db, "show", "latest", "--thread", "r", "--json"))["values"] == {
        "answer": acted[0]
    }


def test_after_a_kill_during_a_resume_only_the_stored_answer_goes_on(
    tmp_path: Path, new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, env = _paused_review(tmp_path, new_db("r.db"))
    monkeypatch.setenv("ACTED", env["ACTED"])  # for the runs in this process
    started = tmp_path / "started"
    wait = {**env, "GO": str(tmp_path / "never"), "STARTED": str(started)}
    first = cli_process(db, "resume", "--thread", "r", "--value", '"yes"', env=wait)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the answer is stored before the node runs
    first.kill()  # SIGKILL: the node never acts
    finish(first)
    other = ttcli(db, "resume", "--thread", "r", "--value", '"no"')
    assert other.exit_code == 2
    assert other.stderr.endswith("already answered with 'yes': send the same answer to go on\n")
    assert not (tmp_path / "acted.log").exists()
    again = ttcli(db, "resume", "--thread", "r", "--value", '"yes"')
    assert again.exit_code == 0, again.stderr
    assert (tmp_path / "acted.log").read_text() == "yes\n"
