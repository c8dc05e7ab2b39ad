"""The 300-turn chat: file size against the raw message bytes, time per turn, and reading a
random past checkpoint, for ttcli's SqliteSaver and LangGraph's, on the same messages; and
the same LangGraph app with ttcli's format (`ttcli.langgraph.TtcliSaver`).

Each turn adds a user message of 100 bytes and a reply of 200 bytes, so the raw message
bytes are 300 per turn. Sizes are measured after folding the WAL into the file.
"""

from __future__ import annotations

import random
import sqlite3
import string
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

TURNS = 300
USER_BYTES, REPLY_BYTES = 100, 200
READS = 50


def texts(turns: int = TURNS, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    letters = string.ascii_letters + "     "
    return [
        ("".join(rng.choices(letters, k=USER_BYTES)), "".join(rng.choices(letters, k=REPLY_BYTES)))
        for _ in range(turns)
    ]


def ttcli_app(path: Path, replies: list[str]) -> tuple[Any, Callable[[], None]]:
    from ttcli import END, START, MessagesState, StateGraph
    from ttcli.savers.sqlite import SqliteSaver

    saver = SqliteSaver(path)
    builder = StateGraph(MessagesState)
    builder.add_node(
        "bot", lambda state: {"messages": [("assistant", replies[len(state["messages"]) // 2])]}
    )
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=saver), lambda: _close(saver.conn)


def langgraph_app(
    path: Path, replies: list[str], *, ttcli_format: bool = False
) -> tuple[Any, Callable[[], None]]:
    from langchain_core.messages import AIMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from ttcli.langgraph import TtcliSaver
    from ttcli.savers.sqlite import SqliteSaver as TtcliSqliteSaver

    if ttcli_format:
        store = TtcliSqliteSaver(path)
        saver: Any = TtcliSaver.on(store)
        conn = store.conn
    else:
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
    builder = StateGraph(MessagesState)
    builder.add_node(
        "bot", lambda state: {"messages": [AIMessage(replies[len(state["messages"]) // 2])]}
    )
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=saver), lambda: _close(conn)


def _close(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def run(
    name: str, make: Callable[..., tuple[Any, Callable[[], None]]], workdir: Path
) -> dict[str, float]:
    pairs = texts()
    path = workdir / f"{name}.db"
    app, close = make(path, [reply for _, reply in pairs])
    config = {"configurable": {"thread_id": "chat"}}
    started = time.perf_counter()
    for user, _ in pairs:
        app.invoke({"messages": [("user", user)]}, config)
    per_turn = (time.perf_counter() - started) / TURNS
    history = [s.config for s in app.get_state_history(config)]
    picks = random.Random(3).sample(history, READS)
    started = time.perf_counter()
    for pick in picks:
        app.get_state(pick)
    per_read = (time.perf_counter() - started) / READS
    latest = app.get_state(config).values["messages"]
    assert len(latest) == 2 * TURNS and latest[-1].content == pairs[-1][1]
    close()
    size = path.stat().st_size
    return {
        "size": size,
        "ratio": size / (TURNS * (USER_BYTES + REPLY_BYTES)),
        "turn": per_turn,
        "read": per_read,
    }


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    ours = run("ttcli", ttcli_app, workdir)
    theirs = run("langgraph", langgraph_app, workdir)
    bridge = run("ttcli-langgraph", partial(langgraph_app, ttcli_format=True), workdir)
    raw = TURNS * (USER_BYTES + REPLY_BYTES)
    return [
        ("chat: raw message bytes", f"{raw:,}", f"{raw:,}", ""),
        (
            "chat: file size (bytes)",
            f"{ours['size']:,.0f}",
            f"{theirs['size']:,.0f}",
            f"{ours['size'] / theirs['size']:.4f}",
        ),
        (
            "chat: file size / raw bytes (target <= 3)",
            f"{ours['ratio']:.2f}",
            f"{theirs['ratio']:.1f}",
            "",
        ),
        (
            "chat: time per turn (ms)",
            f"{ours['turn'] * 1e3:.2f}",
            f"{theirs['turn'] * 1e3:.2f}",
            f"{ours['turn'] / theirs['turn']:.2f}",
        ),
        (
            "chat: read a random past checkpoint (ms)",
            f"{ours['read'] * 1e3:.2f}",
            f"{theirs['read'] * 1e3:.2f}",
            f"{ours['read'] / theirs['read']:.2f}",
        ),
        (
            "chat on LangGraph, TtcliSaver: file size / raw bytes",
            f"{bridge['ratio']:.2f}",
            f"{theirs['ratio']:.1f}",
            f"{bridge['size'] / theirs['size']:.4f}",
        ),
        (
            "chat on LangGraph, TtcliSaver: time per turn (ms)",
            f"{bridge['turn'] * 1e3:.2f}",
            f"{theirs['turn'] * 1e3:.2f}",
            f"{bridge['turn'] / theirs['turn']:.2f}",
        ),
        (
            "chat on LangGraph, TtcliSaver: read a past checkpoint (ms)",
            f"{bridge['read'] * 1e3:.2f}",
            f"{theirs['read'] * 1e3:.2f}",
            f"{bridge['read'] / theirs['read']:.2f}",
        ),
    ]
