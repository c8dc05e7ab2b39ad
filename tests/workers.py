"""Child processes for the crash and concurrency tests: `python -m tests.workers MODE ...`.

Modes:
  run DB THREAD LOG KILL_AT   run (or resume) the loop graph on THREAD; SIGKILL itself when
                              the KILL_AT-th SQL statement starts (0: never)
  cli KILL_AT ARGS...         run `ttcli ARGS...` in this process, killed the same way
  write DB THREAD LOG RUNS    invoke the loop graph RUNS times on THREAD
  read DB STOP THREADS...     `history` and `show latest` of the threads until STOP exists
                              (a prune may take any older checkpoint meanwhile)
  ask DB THREAD LOG RUNS      start the review workflow RUNS times on THREAD (it pauses for a
                              person each time), recording every commit in LOG
  answer DB THREAD LOG RUNS   RUNS times `ttcli update` then `ttcli resume` on THREAD, in this
                              process, recording every commit in LOG
  archive DB ARCHIVE STOP N   `ttcli prune --archive ARCHIVE --keep-last N` in a loop until
                              STOP exists

Every committed checkpoint id is appended to LOG (after its transaction commits), so the
parent knows what must survive; `ask` and `answer` record what was committed as well (one
JSON line per checkpoint or task's writes, see `LoggingSaver`). Errors go to stderr and a
non-zero exit code.
"""

from __future__ import annotations

import json
import operator
import os
import random
import signal
import sqlite3
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Annotated, Any, TypedDict

from click.testing import CliRunner

from ttcli import END, START, StateGraph
from ttcli.cli import cli
from ttcli.configs import RunnableConfig
from ttcli.errors import CheckpointNotFoundError
from ttcli.savers import postgres as postgres_module
from ttcli.savers import sqlite as sqlite_module
from ttcli.savers.base import Checkpoint
from ttcli.savers.locate import is_dsn
from ttcli.savers.postgres import PostgresSaver
from ttcli.savers.postgres.connection import PgDb
from ttcli.savers.sql.saver import SqlSaver
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


def canonical(value: Any) -> str:
    """A value as comparable text (objects by their repr), the same in every process."""
    return json.dumps(value, sort_keys=True, default=repr)


class Logging(SqlSaver):
    """Appends each checkpoint id to LOG once its transaction has committed.

    Without LOG it records more, to the file named by TTCLI_RECORD (so that the command
    line can open it as it opens a saver): one JSON line for each checkpoint and for
    each task's writes, {"put": id, "thread", "checkpoint", "metadata"} or {"task_writes": id,
    "thread", "task", "writes": [[channel, value]]}, values as `canonical` text.
    """

    def start_log(self, log: str | None) -> None:
        self.log, self.record = log or os.environ["TTCLI_RECORD"], log is None
        self.lines: list[str] = []
        self.depth = 0  # batches entered

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: Mapping[str, int],
    ) -> RunnableConfig:
        saved = super().put(config, checkpoint, metadata, new_versions)
        if not self.record:
            self._add(checkpoint["id"])
            return saved
        thread = config["configurable"]["thread_id"]
        self._add(json.dumps({"put": checkpoint["id"], "thread": thread,
                              "checkpoint": canonical(checkpoint),
                              "metadata": canonical(metadata)}))  # fmt: skip
        return saved

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:  # fmt: skip
        super().put_writes(config, writes, task_id, task_path)
        if self.record:
            ref = config["configurable"]
            # what is stored, which may be another process's: a repeated normal write of a
            # task is not stored again (the first stays, as in LangGraph)
            stored = [w for w in self.get_writes(config) if w[0] == task_id]
            pairs = [[channel, canonical(value)] for _, _, channel, value in stored]
            self._add(json.dumps({"task_writes": ref["checkpoint_id"], "thread": ref["thread_id"],
                                  "task": task_id, "writes": pairs}))  # fmt: skip

    @contextmanager
    def batch(self, *, durable: bool = False) -> Iterator[None]:
        self.depth += 1
        try:
            with super().batch(durable=durable):
                yield
        except BaseException:
            self.lines.clear()  # rolled back
            raise
        finally:
            self.depth -= 1
        if not self.depth:
            self._flush()

    def _add(self, line: str) -> None:
        self.lines.append(line + "\n")
        if not self.depth:  # committed already
            self._flush()

    def _flush(self) -> None:
        with open(self.log, "a") as log:
            log.writelines(self.lines)
        self.lines.clear()


class LoggingSqlite(Logging, SqliteSaver):
    def __init__(self, path: str, log: str | None = None, **kwargs: Any) -> None:
        SqliteSaver.__init__(self, path, **kwargs)
        self.start_log(log)


class LoggingPostgres(Logging, PostgresSaver):
    def __init__(self, dsn: str, log: str | None = None, **kwargs: Any) -> None:
        PostgresSaver.__init__(self, dsn, **kwargs)
        self.start_log(log)


def logging_saver(db: str, log: str | None = None) -> Logging:
    """A recording saver on DB, a SQLite file or a PostgreSQL DSN."""
    return LoggingPostgres(db, log) if is_dsn(db) else LoggingSqlite(db, log)


REVIEW = "fixtures/review_workflow.py:builder"


def ask(db: str, thread: str, log: str, runs: int) -> None:
    """Start the review workflow again and again; a run whose checkpoint a prune deleted
    under it fails (documented) and the next starts over."""
    from fixtures.review_workflow import builder

    os.environ["TTCLI_RECORD"] = log
    saver = logging_saver(db)  # recording
    graph = builder.compile(checkpointer=saver)
    for run in range(runs):
        request = {"request": f"refund order {run}", "plan": "", "log": []}
        with suppress(CheckpointNotFoundError):
            graph.invoke(request, {"configurable": {"thread_id": thread}})


def answer(db: str, thread: str, log: str, runs: int) -> None:
    """`ttcli update` and `ttcli resume`, RUNS times each. Racing the application on one
    thread, either may find it running, paused again, just started, or its checkpoint pruned
    under it (exit 2, 3 or 4): fine, as long as it says so in one line."""
    os.environ["TTCLI_RECORD"] = log
    sqlite_module.SqliteSaver = LoggingSqlite  # type: ignore[misc,assignment]
    postgres_module.PostgresSaver = LoggingPostgres  # type: ignore[misc]
    common = ["--db", db, "--thread", thread, "--graph", REVIEW]
    for run in range(runs):
        for args in (
            ["update", *common, "--as-node", "plan", "--set", f'plan="edited {run}"'],
            ["resume", *common, "--value", '"yes"'],
        ):
            result = CliRunner().invoke(cli, args)
            one_line = result.stderr == "" or (
                result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
            )
            if result.exit_code not in (0, 2, 3, 4) or not one_line:
                raise RuntimeError(f"ttcli {args[0]} exited {result.exit_code}: {result.stderr}")


def archive(db: str, target: str, stop: str, keep: str) -> None:
    rounds = 0
    while not os.path.exists(stop) and rounds < 10_000:
        ttcli("--db", db, "prune", "--older-than", "0s", "--keep-last", keep, "--archive", target,
              "--yes")  # fmt: skip
        rounds += 1
    print(rounds)


def kill_at(statement: int) -> None:
    """SIGKILL this process when the statement-th SQL statement (on any connection) starts:
    SQLite's as its trace callback sees them, PostgreSQL's as ttcli sends them."""
    if statement <= 0:
        return
    connect = sqlite3.connect
    count = 0

    def trace(_sql: str) -> None:
        nonlocal count
        count += 1
        if count == statement:
            os.kill(os.getpid(), signal.SIGKILL)

    send = PgDb.execute

    def traced_send(self: PgDb, sql: str, parameters: Any = None, /) -> Any:
        trace(sql)
        return send(self, sql, parameters)

    PgDb.execute = traced_send  # type: ignore[method-assign]

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = connect(*args, **kwargs)
        conn.set_trace_callback(trace)
        return conn

    sqlite3.connect = traced  # type: ignore[assignment]


def run(db: str, thread: str, log: str) -> None:
    """Start the thread, or resume it from its latest checkpoint, until the graph ends."""
    saver = logging_saver(db, log)
    graph = loop_graph().compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    # `next` of the head can be empty when every task of its step finished before the kill:
    # invoking with None resumes in every case, and does nothing on a finished thread
    graph.invoke(INPUT if saver.get_tuple(config) is None else None, config)


def write(db: str, thread: str, log: str, runs: int) -> None:
    saver = logging_saver(db, log)
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
        ttcli("--db", db, "show", "latest", "-t", thread, "--json")
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
    elif mode == "ask":
        ask(args[0], args[1], args[2], int(args[3]))
    elif mode == "answer":
        answer(args[0], args[1], args[2], int(args[3]))
    elif mode == "archive":
        archive(args[0], args[1], args[2], args[3])
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
