"""Per-superstep cost: a counter node looping on itself through a conditional edge for
1,000 supersteps, every checkpoint committed to SQLite, on ttcli (durability="async", and
"sync") and on LangGraph (its default, "async"); and the floor: one SQLite commit of one
small row, on the same machine."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

STEPS = 1000


class Counter(TypedDict):
    n: int


def build(api: Any) -> Any:
    builder = api.StateGraph(Counter)
    builder.add_node("count", lambda state: {"n": state["n"] + 1})
    builder.add_edge(api.START, "count")
    builder.add_conditional_edges("count", lambda state: "count" if state["n"] < STEPS else api.END)
    return builder


def ttcli_app(path: Path) -> tuple[Any, Callable[[], None]]:
    import ttcli
    from ttcli.savers.sqlite import SqliteSaver

    saver = SqliteSaver(path)
    return build(ttcli).compile(checkpointer=saver), saver.close


def langgraph_app(path: Path) -> tuple[Any, Callable[[], None]]:
    from langgraph import graph
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    return build(graph).compile(checkpointer=SqliteSaver(conn)), conn.close


#: side -> (how to open its app, its durability); LangGraph's is its default, "async"
SIDES: dict[str, tuple[Callable[[Path], tuple[Any, Callable[[], None]]], str]] = {
    "ttcli": (ttcli_app, "async"),
    "ttcli-sync": (ttcli_app, "sync"),
    "langgraph": (langgraph_app, "async"),
}


def per_step(workdir: Path, attempts: int = 5) -> dict[str, float]:
    """Seconds per superstep on each side, the best of `attempts` fresh threads; the sides
    take turns, so the other users of a shared machine slow them alike."""
    best = {side: float("inf") for side in SIDES}
    opened = {side: make(workdir / f"loop-{side}.db") for side, (make, _) in SIDES.items()}
    for attempt in range(attempts):
        for side, (app, _close) in opened.items():
            config = {
                "configurable": {"thread_id": f"loop{attempt}"},
                "recursion_limit": STEPS + 10,
            }
            started = time.perf_counter()
            result = app.invoke({"n": 0}, config, durability=SIDES[side][1])
            best[side] = min(best[side], (time.perf_counter() - started) / STEPS)
            assert result["n"] == STEPS
    for _app, close in opened.values():
        close()
    return best


def commit_floor(path: Path) -> float:
    """One small row committed in WAL mode with synchronous=NORMAL, as the savers commit."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    started = time.perf_counter()
    for i in range(STEPS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?, ?)", (i, b"x" * 40))
        conn.execute("COMMIT")
    conn.close()
    return (time.perf_counter() - started) / STEPS


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    ours, synced, theirs = per_step(workdir).values()
    floor = commit_floor(workdir / "floor.db")
    return [
        (
            f"loop: time per superstep, {STEPS:,} steps, both durability='async' "
            "(ms; target ratio <= 0.15)",
            f"{ours * 1e3:.3f}",
            f"{theirs * 1e3:.3f}",
            f"{ours / theirs:.2f}",
        ),
        (
            "loop: ttcli with durability='sync' (its default: each checkpoint committed before "
            "the next superstep)",
            f"{synced * 1e3:.3f}",
            f"{theirs * 1e3:.3f}",
            f"{synced / theirs:.2f}",
        ),
        (
            "loop: floor, one SQLite commit of a small row (ms)",
            f"{floor * 1e3:.3f}",
            "",
            f"{floor / theirs:.3f} (ttcli sync = {synced / floor:.1f}x the floor)",
        ),
    ]
