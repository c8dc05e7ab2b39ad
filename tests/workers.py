"""Child processes for the crash and concurrency tests: `python -m tests.workers MODE ...`.

Modes:
  run DB THREAD LOG KILL_AT   run (or resume) the loop graph on THREAD; SIGKILL itself when
                              the KILL_AT-th SQL statement starts (0: never)
  cli KILL_AT ARGS...         run `ttcli ARGS...` in this process, killed the same way
  write DB THREAD LOG RUNS    invoke the loop graph RUNS times on THREAD
  read DB STOP THREADS...     `history` and `show` the threads until the file STOP exists
  prune DB STOP OLD           prune the OLD threads named old:0.. one by one until STOP exists

Every committed checkpoint id is appended to LOG (after its transaction commits), so the
parent knows what must survive. Errors go to stderr and a non-zero exit code.
"""

from __future__ import annotations

import operator
import os
import random
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

from click.testing import CliRunner

from ttcli import END, START, StateGraph
from ttcli.cli import cli
from ttcli.configs import RunnableConfig
from ttcli.savers.base import Checkpoint
from ttcli.savers.sqlite import SqliteSaver

LOOPS = 3


class LoopState(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def loop_graph() -> StateGraph:
    """plan -> (left, right) in parallel -> join -> back to plan until n reaches LOOPS."""
    builder = StateGraph(LoopState)
    builder.add_node("plan", lambda s: {"log": [f"plan{s['n']}"]})
    builder.add_node("left", lambda s: {"log": [f"left{s['n']}"]})
    builder.add_node("right", lambda s: {"log": [f"right{s['n']}"]})
    builder.add_node("join", lambda s: {"n": s["n"] + 1, "log": ["join"]})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "left")
    builder.add_edge("plan", "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_conditional_edges("join", lambda s: "plan" if s["n"] < LOOPS else END)
    return builder


INPUT = {"n": 0, "log": ["start"]}


class LoggingSaver(SqliteSaver):
    """Appends each checkpoint id to a log once its transaction has committed."""

    def __init__(self, path: str, log: str) -> None:
        super().__init__(path)
        self.log = open(log, "a")  # noqa: SIM115 - lives as long as the process
        self.stored: list[str] = []

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, metadata, new_versions)
        self.stored.append(checkpoint["id"])
        if not self.in_batch:  # committed already
            self._committed()
        return saved

    @contextmanager
    def batch(self) -> Iterator[None]:
        try:
            with super().batch():
                yield
        except BaseException:
            self.stored.clear()  # rolled back
            raise
        if not self.in_batch:
            self._committed()

    def _committed(self) -> None:
        self.log.writelines(f"{checkpoint_id}\n" for checkpoint_id in self.stored)
        self.log.flush()
        self.stored.clear()


def kill_at(statement: int) -> None:
    """SIGKILL this process when the statement-th SQL statement (on any connection) starts."""
    if statement <= 0:
        return
    connect = sqlite3.connect
    count = 0

    def trace(_sql: str) -> None:
        nonlocal count
        count += 1
        if count == statement:
            os.kill(os.getpid(), signal.SIGKILL)

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(trace)
        return conn

    sqlite3.connect = traced  # type: ignore[assignment]


def run(db: str, thread: str, log: str) -> None:
    """Start the thread, or resume it from its latest checkpoint, until the graph ends."""
    saver = LoggingSaver(db, log)
    graph = loop_graph().compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    # `next` of the head can be empty when every task of its step finished before the kill:
    # invoking with None resumes in every case, and does nothing on a finished thread
    graph.invoke(INPUT if saver.get_tuple(config) is None else None, config)


def write(db: str, thread: str, log: str, runs: int) -> None:
    saver = LoggingSaver(db, log)
    graph = loop_graph().compile(checkpointer=saver)
    for _ in range(runs):
        graph.invoke(INPUT, {"configurable": {"thread_id": thread}})


def ttcli(*args: str) -> str:
    """`ttcli ARGS` in process; a non-zero exit raises with its message."""
    result = CliRunner().invoke(cli, list(args))
    if result.exit_code != 0:
        raise RuntimeError(f"ttcli {' '.join(args)} exited {result.exit_code}: {result.stderr}")
    return result.stdout


def read(db: str, stop: str, threads: Sequence[str]) -> None:
    rounds = 0
    rng = random.Random(os.getpid())
    while not os.path.exists(stop):
        thread = rng.choice(threads)
        ttcli("--db", db, "history", "-t", thread, "--limit", "5", "--json")
        ttcli("--db", db, "show", "latest~1", "-t", thread, "--json")
        rounds += 1
    print(rounds)


def prune(db: str, stop: str, old: int) -> None:
    rounds = 0
    while not os.path.exists(stop):
        if rounds < old:
            args = ["--thread", f"old:{rounds}", "--older-than", "0s", "--keep-last", "1"]
        else:
            args = ["--prefix", "old:", "--idle", "0s"]
            time.sleep(0.01)
        ttcli("--db", db, "prune", *args, "--yes")
        rounds += 1
    print(rounds)


def main(argv: Sequence[str]) -> None:
    mode, *args = argv
    if mode == "run":
        kill_at(int(args[3]))
        run(args[0], args[1], args[2])
    elif mode == "cli":
        kill_at(int(args[0]))
        result = CliRunner().invoke(cli, args[1:])
        sys.stderr.write(result.stderr)
        sys.exit(result.exit_code)
    elif mode == "write":
        write(args[0], args[1], args[2], int(args[3]))
    elif mode == "read":
        read(args[0], args[1], args[2:])
    elif mode == "prune":
        prune(args[0], args[1], int(args[2]))
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
