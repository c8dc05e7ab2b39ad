"""`make bench-postgres`: ttcli's PostgresSaver against LangGraph's PostgresSaver
(langgraph-checkpoint-postgres) on the same server in one run; the table is printed and
written to bench/RESULTS-postgres.md with the machine, the server and the versions.

Every run creates databases of its own on the server (`ttcli_bench_<pid>_*`; LangGraph's in
databases apart from ttcli's, so each side's `pg_total_relation_size` holds only its own
tables) and drops them at the end. The server is TTCLI_BENCH_PG (a DSN; its database is only
connected to, to create and drop the others), default postgresql://postgres@127.0.0.1:5432/test.

    loop     a counter node looping on itself, every superstep committed: ttcli's runtime on
             ttcli's PostgresSaver, LangGraph's runtime on LangGraph's PostgresSaver; both
             with durability="async" (LangGraph's default), then both with "sync" (ttcli's)
    chat     a chat of --turns turns (a 100-byte user message, a 200-byte reply), on each
             runtime with its saver: time per turn, bytes per checkpoint
    scale    `history --limit 20`, `show latest`, `show` a checkpoint in the middle, on a thread
             of --big checkpoints against one of 1,000 (each in its own database, with
             --big/100 short threads beside it); the big thread is written through the saver
             API (`put`, 1,000 to a `batch()`), the way the runtime writes, only batched
    writers  --writers processes, each running loops of --writer-steps supersteps on threads
             of its own: throughput and superstep latency; then the same with a prune loop
             running beside them (in its own process, the library's plan_prune/execute_prune,
             as `ttcli prune` runs them): with `--archive` to a SQLite file, then without;
             errors, and every checkpoint written is in the database or the archive

Sizes are flags (`python -m bench.postgres --help`); the defaults take a few minutes on two
cores. `--big 1000000` measures the issue's million (about six more minutes to build).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from tabulate import tabulate

from bench.chat import REPLY_BYTES, USER_BYTES, texts
from bench.scale import counter_checkpoint

DSN = os.environ.get("TTCLI_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
ROOT = Path(__file__).parent.parent
RESULTS = Path(__file__).with_name("RESULTS-postgres.md")
ANALYSIS = Path(__file__).with_name("analysis-postgres.md")
REPEAT = 5  # best of, for the CLI reads
READS = 50  # random past checkpoints read after the chat

Row = tuple[str, str, str, str, str]  # measure, ttcli, langgraph, ratio, target


# -- the server


class Server:
    """Databases of this run on the server of TTCLI_BENCH_PG, dropped by `drop_all`."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.prefix = f"ttcli_bench_{os.getpid()}"
        self.made: list[str] = []

    def _admin(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True)

    def create(self, name: str) -> str:
        """A new empty database; its DSN."""
        full = f"{self.prefix}_{name}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{full}"')
        self.made.append(full)
        return with_database(self.dsn, full)

    def drop_all(self) -> None:
        with self._admin() as conn:
            for name in reversed(self.made):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.made.clear()

    def describe(self) -> str:
        with self._admin() as conn:
            facts = [
                conn.execute(f"SHOW {setting}").fetchone()[0]  # type: ignore[index]
                for setting in ("server_version", "synchronous_commit", "shared_buffers")
            ]
        return f"PostgreSQL {facts[0]} (synchronous_commit={facts[1]}, shared_buffers={facts[2]})"


def with_database(dsn: str, name: str) -> str:
    """The DSN of another database on the same server, as a postgresql:// URL (what `--db`
    takes)."""
    parts = urlsplit(dsn if "://" in dsn else f"postgresql://?{urlencode(conninfo_to_dict(dsn))}")
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def table_bytes(dsn: str) -> tuple[int, int]:
    """pg_total_relation_size (heap, TOAST and indexes) summed over the tables of the
    database's `public` schema, and its `checkpoints` rows (both savers name it so)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        size = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchone()[0]  # type: ignore[index]
        rows = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]  # type: ignore[index]
    return int(size), int(rows)


# -- the apps: ttcli's runtime on ttcli's saver, LangGraph's on LangGraph's


class Counter(TypedDict):
    n: int


def counter(api: Any, steps: int) -> Any:
    builder = api.StateGraph(Counter)
    builder.add_node("count", lambda state: {"n": state["n"] + 1})
    builder.add_edge(api.START, "count")
    builder.add_conditional_edges("count", lambda state: "count" if state["n"] < steps else api.END)
    return builder


@contextmanager
def ttcli_saver(dsn: str) -> Iterator[Any]:
    from ttcli import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        yield saver


@contextmanager
def langgraph_saver(dsn: str) -> Iterator[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        yield saver


@contextmanager
def memory_saver(dsn: str) -> Iterator[Any]:
    """ttcli's InMemorySaver: the same writers with no database, the machine's floor."""
    from ttcli.savers.memory import InMemorySaver

    yield InMemorySaver()


def loop_app(side: str, saver: Any, steps: int) -> Any:
    if side in ("ttcli", "memory"):
        import ttcli

        return counter(ttcli, steps).compile(checkpointer=saver)
    from langgraph import graph

    return counter(graph, steps).compile(checkpointer=saver)


SAVERS: dict[str, Callable[[str], Any]] = {
    "ttcli": ttcli_saver,
    "langgraph": langgraph_saver,
    "memory": memory_saver,
}


def per_step(dsns: dict[str, str], steps: int, attempts: int = 3) -> dict[str, float]:
    """Seconds per superstep on each side (`ttcli`, `langgraph`: with durability="async";
    `ttcli-sync`, `langgraph-sync`: with "sync"), the best of `attempts` fresh threads; the
    sides take turns, so the other users of a shared machine slow them alike."""
    best = {side: float("inf") for side in dsns}
    with ExitStack() as stack:
        apps = {}
        for side, dsn in dsns.items():
            saver = stack.enter_context(SAVERS[side.removesuffix("-sync")](dsn))
            apps[side] = loop_app(side.removesuffix("-sync"), saver, steps)
        for attempt in range(attempts):
            for side, app in apps.items():
                config = {
                    "configurable": {"thread_id": f"loop{attempt}"},
                    "recursion_limit": steps + 9,
                }
                durability = "sync" if side.endswith("-sync") else "async"
                started = time.perf_counter()
                result = app.invoke({"n": 0}, config, durability=durability)
                best[side] = min(best[side], (time.perf_counter() - started) / steps)
                assert result["n"] == steps
    return best


def chat_app(side: str, saver: Any, replies: list[str]) -> Any:
    if side == "ttcli":
        from ttcli import END, START, MessagesState, StateGraph

        def reply(state: Any) -> Any:
            return {"messages": [("assistant", replies[len(state["messages"]) // 2])]}
    else:
        from langchain_core.messages import AIMessage
        from langgraph.graph import END, START, MessagesState, StateGraph

        def reply(state: Any) -> Any:
            return {"messages": [AIMessage(replies[len(state["messages"]) // 2])]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", reply)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=saver)


def chat(side: str, dsn: str, turns: int) -> dict[str, float]:
    pairs = texts(turns)
    with SAVERS[side](dsn) as saver:
        app = chat_app(side, saver, [reply for _, reply in pairs])
        config = {"configurable": {"thread_id": "chat"}}
        started = time.perf_counter()
        for user, _ in pairs:
            app.invoke({"messages": [("user", user)]}, config)
        per_turn = (time.perf_counter() - started) / turns
        started = time.perf_counter()
        history = [s.config for s in app.get_state_history(config)]
        per_listed = (time.perf_counter() - started) / len(history)
        picks = random.Random(3).sample(history, min(READS, len(history)))
        started = time.perf_counter()
        for pick in picks:
            app.get_state(pick)
        per_read = (time.perf_counter() - started) / len(picks)
        latest = app.get_state(config).values["messages"]
        assert len(latest) == 2 * turns and latest[-1].content == pairs[-1][1]
    size, checkpoints = table_bytes(dsn)
    return {
        "turn": per_turn, "read": per_read, "listed": per_listed, "count": len(history),
        "size": size, "per": size / checkpoints,
    }  # fmt: skip


def history_per_checkpoint(side: str, dsn: str, steps: int) -> float:
    """Seconds per checkpoint listing a loop thread's whole history (`per_step`'s first) with
    get_state_history, the best of REPEAT."""
    with SAVERS[side](dsn) as saver:
        app = loop_app(side, saver, steps)
        config = {"configurable": {"thread_id": "loop0"}}
        best = float("inf")
        for _ in range(REPEAT):
            started = time.perf_counter()
            listed = sum(1 for _ in app.get_state_history(config))
            best = min(best, (time.perf_counter() - started) / listed)
        assert listed == steps + 2
    return best


# -- scale: one thread of many checkpoints through the saver API


def build_scale(dsn: str, checkpoints: int, threads: int, batch: int = 1000) -> str:
    """The big thread `t:big` and `threads` threads of 2 checkpoints; every 100th checkpoint
    an `update`. Returns the id of the big thread's checkpoint in the middle."""
    from ttcli import PostgresSaver
    from ttcli.configs import CheckpointRef

    middle = ""
    jobs = [("t:big", checkpoints)] + [(f"t:{n:05d}", 2) for n in range(threads)]
    with PostgresSaver.from_conn_string(dsn) as saver:
        written = 0
        pending = saver.batch()
        pending.__enter__()
        for thread_id, count in jobs:
            ref, parent = CheckpointRef(thread_id), None
            for step in range(count):
                checkpoint, metadata = counter_checkpoint(step)
                checkpoint_id = checkpoint["id"]
                saver.put(ref.at(parent).to_config(), checkpoint, metadata, {"n": step + 1})  # type: ignore[arg-type]
                parent = checkpoint_id
                if thread_id == "t:big" and step == count // 2:
                    middle = checkpoint_id
                written += 1
                if written % batch == 0:
                    pending.__exit__(None, None, None)
                    pending = saver.batch()
                    pending.__enter__()
        pending.__exit__(None, None, None)
        saver.connection.vacuum()  # ANALYZE, as autovacuum would have by the time one reads
    return middle


def best_ms(dsn: str, *args: str) -> float:
    from click.testing import CliRunner

    from ttcli.cli import cli

    best = float("inf")
    for _ in range(REPEAT):
        started = time.perf_counter()
        result = CliRunner().invoke(cli, ["--db", dsn, *args])
        best = min(best, time.perf_counter() - started)
        assert result.exit_code == 0, result.output
    return best * 1000


def scale(server: Server, checkpoints: int) -> dict[str, float]:
    dsn = server.create(f"scale{checkpoints}")
    started = time.perf_counter()
    middle = build_scale(dsn, checkpoints, max(10, checkpoints // 100))
    built = time.perf_counter() - started
    big = ["-t", "t:big"]
    return {
        "build": built,
        "rate": (checkpoints + 2 * max(10, checkpoints // 100)) / built,
        "history": best_ms(dsn, "history", *big, "--limit", "20", "--json"),
        "filter": best_ms(
            dsn, "history", *big, "--filter", "source=update", "--limit", "20", "--json"
        ),
        "latest": best_ms(dsn, "show", "latest", *big, "--json"),
        "middle": best_ms(dsn, "show", middle, *big, "--json"),
        "threads": best_ms(dsn, "threads", "--prefix", "t:0000", "--json"),
    }


def prune_alone(dsn: str, checkpoints: int, archive: Path | str | None) -> tuple[int, float]:
    """Prune the big thread of a fresh scale database to its newest 100, into `archive` (a
    SQLite file or another PostgreSQL database) first if given: (checkpoints deleted,
    seconds)."""
    from ttcli import PostgresSaver
    from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
    from ttcli.savers.locate import open_saver

    build_scale(dsn, checkpoints, 10)
    policy = PrunePolicy(
        older_than=datetime.now(UTC) + timedelta(seconds=1), keep_last=100, thread="t:big"
    )
    with PostgresSaver.from_conn_string(dsn) as saver:
        plans = plan_prune(saver, policy)
        store = None if archive is None else open_saver(archive)
        started = time.perf_counter()
        report = execute_prune(saver, plans, archive=store)
        seconds = time.perf_counter() - started
        if store is not None:
            store.close()
    return report.checkpoints, seconds


# -- writer processes, and a prune loop beside them


def writer(side: str, dsn: str, name: str, runs: int, steps: int) -> None:
    """One writer process: says `ready`, waits for a line on stdin, runs `runs` loops of
    `steps` supersteps on threads `<name>-<run>`, prints what it measured as JSON."""
    errors: list[str] = []
    gaps: list[float] = []
    with SAVERS[side](dsn) as saver:
        app = loop_app(side, saver, steps)
        print("ready", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        for run in range(runs):
            config = {"configurable": {"thread_id": f"{name}-{run}"}, "recursion_limit": steps + 9}
            last = time.perf_counter()
            try:
                for _ in app.stream({"n": 0}, config, stream_mode="updates"):
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now
            except Exception as exc:  # counted, and the run goes on with the next thread
                errors.append(f"{type(exc).__name__}: {exc}")
        ended = time.perf_counter()
    print(json.dumps({"gaps": gaps, "errors": errors, "started": started, "ended": ended}))


def pruner(dsn: str, archive: str, prefix: str, keep: int, age: float) -> None:
    """The prune loop: what is older than `age` seconds, but each thread's newest `keep`,
    archived first into the SQLite file `archive` (unless it is `-`), until stdin closes."""
    from ttcli import PostgresSaver
    from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
    from ttcli.savers.sqlite import SqliteSaver

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    rounds: list[tuple[int, int, float]] = []  # deleted, archived, seconds of execute_prune
    errors: list[str] = []
    with PostgresSaver.from_conn_string(dsn) as saver:
        store = None if archive == "-" else SqliteSaver(Path(archive))
        print("ready", flush=True)
        while not stop.is_set():
            try:
                policy = PrunePolicy(
                    older_than=datetime.now(UTC) - timedelta(seconds=age),
                    keep_last=keep,
                    prefix=prefix,
                )
                plans = plan_prune(saver, policy)
                if not sum(plan.count for plan in plans):
                    time.sleep(0.05)
                    continue
                started = time.perf_counter()
                report = execute_prune(saver, plans, archive=store)
                rounds.append((report.checkpoints, report.archived, time.perf_counter() - started))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.05)
        if store is not None:
            store.close()
    print(json.dumps({"rounds": rounds, "errors": errors}))


def spawn(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.postgres", *args],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    ready = process.stdout.readline()
    if ready.strip() != "ready":
        raise RuntimeError(f"`{' '.join(args[:1])}` did not start: {ready!r}")
    return process


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate(timeout=1800)
    if process.returncode:
        raise RuntimeError(f"a benchmark process failed ({process.returncode})")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def writers(
    side: str, dsn: str, prefix: str, args: argparse.Namespace, prune_archive: str | None = None
) -> dict[str, Any]:
    """`args.writers` writer processes (and a prune loop if `prune_archive` is given, `-` for
    none) started together; their supersteps per second, latency and errors."""
    count, runs, steps = args.writers, args.writer_runs, args.writer_steps
    procs = [
        spawn("_writer", side, dsn, f"{prefix}{i}", str(runs), str(steps)) for i in range(count)
    ]
    prune = None
    if prune_archive is not None:
        prune = spawn("_pruner", dsn, prune_archive, prefix, str(args.keep), str(args.age))
    for process in procs:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = [finish(process) for process in procs]
    pruned = finish(prune) if prune is not None else {"rounds": [], "errors": []}
    gaps = [gap for result in results for gap in result["gaps"]]
    wall = max(r["ended"] for r in results) - min(r["started"] for r in results)
    rounds = pruned["rounds"]
    seconds = sum(r[2] for r in rounds)
    return {
        "rate": len(gaps) / wall,
        "p50": statistics.median(gaps),
        "p99": statistics.quantiles(gaps, n=100)[98],
        "max": max(gaps),
        "errors": [e for r in results for e in r["errors"]] + pruned["errors"],
        "deleted": sum(r[0] for r in rounds),
        "archived": sum(r[1] for r in rounds),
        "prune_rate": sum(r[0] for r in rounds) / seconds if seconds else 0.0,
        "rounds": len(rounds),
        "prune_seconds": seconds,
        "wall": wall,
    }


def thread_counts(sql_rows: list[tuple[str, int]]) -> dict[str, int]:
    return {thread_id: count for thread_id, count in sql_rows}


COUNTS = (
    "SELECT t.thread_id, count(*) FROM checkpoints c JOIN threads t USING (thread_key)"
    " WHERE t.thread_id LIKE '{}%' GROUP BY t.thread_id"
)


def all_kept(dsn: str, archive: Path | None, prefix: str, each: int, threads: int) -> list[str]:
    """Problems: a writer's thread whose checkpoints, in the database and the archive, are
    not the `each` it wrote (none lost, none in both)."""
    with psycopg.connect(dsn) as conn:
        stored = thread_counts(conn.execute(COUNTS.format(prefix)).fetchall())  # type: ignore[arg-type]
    archived: dict[str, int] = {}
    if archive is not None and archive.exists():
        with sqlite3.connect(archive) as conn:
            archived = thread_counts(conn.execute(COUNTS.format(prefix)).fetchall())
        conn.close()
    problems = []
    if len(stored) != threads:
        problems.append(f"{len(stored)} threads of {prefix} in the database, not {threads}")
    for thread_id, count in sorted(stored.items()):
        if count + archived.get(thread_id, 0) != each:
            problems.append(
                f"{thread_id}: {count} stored + {archived.get(thread_id, 0)} archived, not {each}"
            )
    return problems


# -- the table


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def run(args: argparse.Namespace, server: Server, workdir: Path) -> list[Row]:
    rows: list[Row] = []
    steps, turns = args.steps, args.turns

    def say(what: str) -> None:
        print(f"[{datetime.now(UTC):%H:%M:%S}] {what}", file=sys.stderr, flush=True)

    say(f"loop: {steps} supersteps, each side")
    sides = ("ttcli", "langgraph", "ttcli-sync", "langgraph-sync")
    dsns = {side: server.create(f"loop_{side.replace('-', '_')}") for side in sides}
    loop = per_step(dsns, steps)
    ours, theirs, ours_synced, synced = (loop[side] for side in sides)
    rows += [
        (
            f"loop: time per superstep, {steps:,} steps, both durability='async' (LangGraph's "
            "default; ms; target ratio <= 0.33)",
            f"{ours * 1e3:.2f}", f"{theirs * 1e3:.2f}", f"{ours / theirs:.2f}",
            verdict(ours / theirs <= 1 / 3),
        ),
        (
            "loop: both durability='sync' (ttcli's default: each checkpoint committed before "
            "the next superstep)",
            f"{ours_synced * 1e3:.2f}", f"{synced * 1e3:.2f}", f"{ours_synced / synced:.2f}", "",
        ),
    ]  # fmt: skip

    say("history: the loop's whole thread listed, each side")
    ours_listed, theirs_listed = (
        history_per_checkpoint(side, dsns[side], steps) for side in ("ttcli", "langgraph")
    )
    rows.append((
        f"loop: list the whole history ({steps + 2:,} checkpoints) with get_state_history "
        "(ms a checkpoint)",
        f"{ours_listed * 1e3:.3f}", f"{theirs_listed * 1e3:.3f}",
        f"{ours_listed / theirs_listed:.2f}", "",
    ))  # fmt: skip

    say(f"chat: {turns} turns, each side")
    ours_chat = chat("ttcli", server.create("chat_ttcli"), turns)
    theirs_chat = chat("langgraph", server.create("chat_langgraph"), turns)
    raw = USER_BYTES + REPLY_BYTES
    rows += [
        (
            f"chat: time per turn, {turns:,} turns (ms)",
            f"{ours_chat['turn'] * 1e3:.2f}", f"{theirs_chat['turn'] * 1e3:.2f}",
            f"{ours_chat['turn'] / theirs_chat['turn']:.2f}", "",
        ),
        (
            f"chat: bytes per checkpoint, pg_total_relation_size (raw: {raw} a turn; "
            "target ratio <= 0.10)",
            f"{ours_chat['per']:,.0f}", f"{theirs_chat['per']:,.0f}",
            f"{ours_chat['per'] / theirs_chat['per']:.4f}",
            verdict(ours_chat["per"] / theirs_chat["per"] <= 0.1),
        ),
        (
            "chat: all tables (bytes)",
            f"{ours_chat['size']:,.0f}", f"{theirs_chat['size']:,.0f}",
            f"{ours_chat['size'] / theirs_chat['size']:.4f}", "",
        ),
        (
            f"chat: list the whole history ({ours_chat['count']:,} checkpoints) with "
            "get_state_history (ms a checkpoint)",
            f"{ours_chat['listed'] * 1e3:.3f}", f"{theirs_chat['listed'] * 1e3:.3f}",
            f"{ours_chat['listed'] / theirs_chat['listed']:.2f}", "",
        ),
        (
            "chat: read a random past checkpoint (ms)",
            f"{ours_chat['read'] * 1e3:.2f}", f"{theirs_chat['read'] * 1e3:.2f}",
            f"{ours_chat['read'] / theirs_chat['read']:.2f}", "",
        ),
    ]  # fmt: skip

    size = args.alone
    say(f"prune, no writers: {size - 100:,} of {size:,} checkpoints, without and with --archive")
    for name, archive in (
        ("prune", None),
        ("prune --archive", workdir / "alone.db"),
        ("prune --archive into PostgreSQL", server.create("alone_archive")),
    ):
        deleted, seconds = prune_alone(server.create(f"alone{len(rows)}"), size, archive)
        rows.append((
            f"{name}, no writers: checkpoints per second (one thread, keep 100)",
            f"{deleted / seconds:,.0f}", "", f"{deleted:,} in {seconds:.2f} s", "",
        ))  # fmt: skip

    say(f"scale: 1,000 and {args.big:,} checkpoints")
    small = scale(server, 1000)
    big = scale(server, args.big)
    rows.append((
        f"scale: building {args.big:,} checkpoints + {max(10, args.big // 100):,} threads "
        "with saver.put, 1,000 a batch (s)",
        f"{big['build']:.0f}", "", f"{big['rate']:,.0f} checkpoints/s", "",
    ))  # fmt: skip
    for key, what in (
        ("history", "history --limit 20"),
        ("filter", "history --filter source=update --limit 20"),
        ("latest", "show latest"),
        ("middle", "show a checkpoint in the middle"),
        ("threads", "threads --prefix (10 threads)"),
    ):
        ratio = big[key] / small[key]
        rows.append((
            f"scale: {what} at {args.big:,} (ms, CLI in-process; target <= 2x)",
            f"{big[key]:.1f}", "", f"{ratio:.2f}x its {small[key]:.1f} ms at 1,000",
            verdict(ratio <= 2),
        ))  # fmt: skip

    label = f"{args.writers} writers x {args.writer_runs} loops of {args.writer_steps} steps"
    say(f"writers: {label}, each side")
    dsn = server.create("writers")
    alone = writers("ttcli", dsn, "a", args)
    lg = writers("langgraph", server.create("writers_langgraph"), "a", args)
    floor = writers("memory", "", "a", args)
    each = args.writer_steps + 2  # the input checkpoint, the loop's first and one a step
    problems = all_kept(dsn, None, "a", each, args.writers * args.writer_runs)
    say(f"writers + prune --archive: {label}")
    archive = workdir / "archive.db"
    archived = writers("ttcli", dsn, "b", args, prune_archive=str(archive))
    problems += all_kept(dsn, archive, "b", each, args.writers * args.writer_runs)
    say(f"writers + prune: {label}")
    plain = writers("ttcli", dsn, "c", args, prune_archive="-")
    rows += [
        (
            f"writers: supersteps per second, {label}",
            f"{alone['rate']:,.0f}", f"{lg['rate']:,.0f}", f"{alone['rate'] / lg['rate']:.2f}", "",
        ),
        (
            "writers: superstep p50 / p99 (ms)",
            f"{alone['p50'] * 1e3:.1f} / {alone['p99'] * 1e3:.1f}",
            f"{lg['p50'] * 1e3:.1f} / {lg['p99'] * 1e3:.1f}",
            f"{alone['p99'] / lg['p99']:.2f} (p99)", "",
        ),
        (
            "writers, floor: the same 8 on ttcli's InMemorySaver (no database): supersteps "
            "per second, p50 / p99 (ms)",
            f"{floor['rate']:,.0f}; {floor['p50'] * 1e3:.1f} / {floor['p99'] * 1e3:.1f}", "",
            "what 8 processes on this machine's cores get with no I/O", "",
        ),
    ]  # fmt: skip
    for name, found in (("prune --archive", archived), ("prune", plain)):
        errors = found["errors"]
        rows += [
            (
                f"writers + {name} loop: supersteps per second",
                f"{found['rate']:,.0f}", "", f"{found['rate'] / alone['rate']:.2f}x without",
                "",
            ),
            (
                f"writers + {name} loop: superstep p99 (ms; target < 50)",
                f"{found['p99'] * 1e3:.1f}", "", f"p50 {found['p50'] * 1e3:.1f}, "
                f"max {found['max'] * 1e3:.0f}", verdict(found["p99"] < 0.05),
            ),
            (
                f"writers + {name} loop: errors (target 0)",
                f"{len(errors)}", "", errors[0][:60] if errors else "", verdict(not errors),
            ),
            (
                f"writers + {name} loop: checkpoints {name.split()[-1].strip('-')}d per second "
                "(of the prune's own time)",
                f"{found['prune_rate']:,.0f}", "",
                f"{found['deleted']:,} in {found['rounds']} rounds, {found['prune_seconds']:.1f}"
                f" s of {found['wall']:.1f}", "",
            ),
        ]  # fmt: skip
    rows.append((
        "writers: every checkpoint written is stored or archived, none in both",
        f"{'yes' if not problems else len(problems)}", "", problems[0] if problems else "",
        verdict(not problems),
    ))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.postgres", description=__doc__)
    parser.add_argument("--steps", type=int, default=1000, help="loop supersteps")
    parser.add_argument("--turns", type=int, default=300, help="chat turns")
    parser.add_argument("--big", type=int, default=200_000, help="checkpoints of the big thread")
    parser.add_argument(
        "--alone", type=int, default=10_000, help="checkpoints of the thread pruned alone"
    )
    parser.add_argument("--writers", type=int, default=8, help="writer processes")
    parser.add_argument("--writer-runs", type=int, default=5, help="loops of each writer")
    parser.add_argument("--writer-steps", type=int, default=100, help="supersteps of a loop")
    parser.add_argument("--keep", type=int, default=5, help="prune keeps each thread's newest")
    parser.add_argument("--age", type=float, default=0.5, help="prune what is older (s)")
    args = parser.parse_args()
    server = Server(DSN)
    machine = (
        f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} cores), "
        f"{server.describe()}, ttcli {version('ttcli')}, langgraph {version('langgraph')}, "
        f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}, "
        f"psycopg {version('psycopg')}"
    )
    try:
        with tempfile.TemporaryDirectory() as workdir:
            rows = run(args, server, Path(workdir))
    finally:
        server.drop_all()
    table = tabulate(
        rows, headers=["measure", "ttcli", "langgraph", "ratio / note", "target"],
        disable_numparse=True,
    )  # fmt: skip
    command = "make bench-postgres" + (
        f" ARGS='{' '.join(sys.argv[1:])}'" if len(sys.argv) > 1 else ""
    )
    print(machine)
    print(table)
    RESULTS.write_text(
        "# PostgreSQL benchmark results\n\n"
        f"Written by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine}.\n\n"
        f"```\n{table}\n```\n\n{ANALYSIS.read_text() if ANALYSIS.exists() else ''}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["_writer"]:
        side, dsn, name, runs, steps = sys.argv[2:7]
        writer(side, dsn, name, int(runs), int(steps))
    elif sys.argv[1:2] == ["_pruner"]:
        dsn, archive, prefix, keep, age = sys.argv[2:7]
        pruner(dsn, archive, prefix, int(keep), float(age))
    else:
        main()
