"""The workload families of issue 16 beside the loop and the message chat, each run on ttcli
and on LangGraph (SqliteSaver) in the same process: time per step (or round, or turn), bytes
per checkpoint, and reading a random past checkpoint.

- constant: a 100 KB text that never changes beside a counter;
- big dict: a map of 1,000 small entries of which each step changes one;
- fan-out: 8 parallel `Send` tasks per round (a round is three supersteps);
- dict chat: a chat whose messages are plain dicts under `operator.add`.
"""

from __future__ import annotations

import operator
import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

STEPS = 300
READS = 30


class Constant(TypedDict):
    doc: str
    n: int


class BigDict(TypedDict):
    table: dict[str, Any]
    n: int


class Fan(TypedDict):
    results: Annotated[list[int], operator.add]
    round: int


class DictChat(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


@dataclass(frozen=True)
class Family:
    name: str
    unit: str  # what one timed step is
    build: Callable[[Any, Any], Any]  # (graph module, Send) -> builder
    runs: Callable[[], list[Any]]  # the inputs to invoke, in order (one per unit)
    same_thread: bool  # all inputs on one thread (a chat) or one invoke


def _constant(api: Any, _send: Any) -> Any:
    builder = api.StateGraph(Constant)
    builder.add_node("count", lambda state: {"n": state["n"] + 1})
    builder.add_edge(api.START, "count")
    builder.add_conditional_edges("count", lambda s: "count" if s["n"] < STEPS else api.END)
    return builder


def _big_dict(api: Any, _send: Any) -> Any:
    def change(state: BigDict) -> dict[str, Any]:
        table = dict(state["table"])
        table[f"key{state['n'] % 1000}"] = {"v": state["n"], "s": "z" * 20}
        return {"table": table, "n": state["n"] + 1}

    builder = api.StateGraph(BigDict)
    builder.add_node("change", change)
    builder.add_edge(api.START, "change")
    builder.add_conditional_edges("change", lambda s: "change" if s["n"] < STEPS else api.END)
    return builder


ROUNDS = 60


def _fan_out(api: Any, send: Any) -> Any:
    builder = api.StateGraph(Fan)
    builder.add_node("plan", lambda state: {"round": state["round"] + 1})
    builder.add_node("work", lambda item: {"results": [item["i"] * 2]})
    builder.add_node("join", lambda state: {})
    builder.add_edge(api.START, "plan")
    builder.add_conditional_edges("plan", lambda s: [send("work", {"i": i}) for i in range(8)])
    builder.add_edge("work", "join")
    builder.add_conditional_edges("join", lambda s: "plan" if s["round"] < ROUNDS else api.END)
    return builder


def _dict_chat(api: Any, _send: Any) -> Any:
    def reply(state: DictChat) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": _text(len(state["messages"]), 200)}]}

    builder = api.StateGraph(DictChat)
    builder.add_node("reply", reply)
    builder.add_edge(api.START, "reply")
    builder.add_edge("reply", api.END)
    return builder


def _text(seed: int, size: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghij klmnopqrstuvwxyz", k=size))


FAMILIES = [
    Family("constant 100 KB beside a counter", "step", _constant,
           lambda: [{"doc": _text(1, 100_000), "n": 0}], same_thread=False),
    Family("big dict, one key of 1,000 changing", "step", _big_dict,
           lambda: [{"table": {f"key{i}": {"v": i, "s": "y" * 20} for i in range(1000)}, "n": 0}],
           same_thread=False),
    Family("Send fan-out, 8 tasks", "round", _fan_out,
           lambda: [{"results": [], "round": 0}], same_thread=False),
    Family("plain-dict chat (operator.add)", "turn", _dict_chat,
           lambda: [{"messages": [{"role": "user", "content": _text(-t, 100)}]}
                    for t in range(STEPS)], same_thread=True),
]  # fmt: skip
#: the plain-dict chat, run for 1,000 turns by long_chat as well
DICT_CHAT = next(family for family in FAMILIES if family.build is _dict_chat)


def _units(family: Family) -> int:
    return ROUNDS if family.unit == "round" else STEPS


def app_for(which: str, family: Family, path: Path) -> tuple[Any, Callable[[], None]]:
    if which == "ttcli":
        import ttcli
        from ttcli.savers.sqlite import SqliteSaver

        saver = SqliteSaver(path)
        return family.build(ttcli, ttcli.Send).compile(checkpointer=saver), saver.close
    from langgraph import graph
    from langgraph.checkpoint.sqlite import SqliteSaver as LangGraphSaver
    from langgraph.types import Send

    conn = sqlite3.connect(path, check_same_thread=False)
    app = family.build(graph, Send).compile(checkpointer=LangGraphSaver(conn))
    return app, conn.close


def run(which: str, family: Family, workdir: Path, attempt: int = 0) -> dict[str, float]:
    path = workdir / f"family-{which}-{FAMILIES.index(family)}-{attempt}.db"
    app, close = app_for(which, family, path)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 4 * STEPS + 10}
    inputs = family.runs()
    started = time.perf_counter()
    for value in inputs:
        app.invoke(value, config)
    per_unit = (time.perf_counter() - started) / _units(family)
    history = [snapshot.config for snapshot in app.get_state_history(config)]
    picks = random.Random(5).sample(history, READS)
    started = time.perf_counter()
    for pick in picks:
        app.get_state(pick)
    per_read = (time.perf_counter() - started) / READS
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    close()
    return {"unit": per_unit, "read": per_read, "bytes": path.stat().st_size / len(history)}


def main(workdir: Path, attempts: int = 3) -> list[tuple[str, str, str, str]]:
    """Each family's best of `attempts` runs on each side, the sides taking turns (a shared
    machine's other users slow both alike)."""
    rows = []
    for family in FAMILIES:
        runs = [
            {which: run(which, family, workdir, attempt) for which in ("ttcli", "langgraph")}
            for attempt in range(attempts)
        ]
        ours, theirs = ({key: min(r[which][key] for r in runs) for key in runs[0][which]}
                        for which in ("ttcli", "langgraph"))  # fmt: skip
        rows += [
            (
                f"{family.name}: time per {family.unit} (ms; target ratio <= 0.2)",
                f"{ours['unit'] * 1e3:.3f}",
                f"{theirs['unit'] * 1e3:.3f}",
                f"{ours['unit'] / theirs['unit']:.2f}",
            ),
            (
                f"{family.name}: file bytes per checkpoint (target ratio <= 0.2)",
                f"{ours['bytes']:,.0f}",
                f"{theirs['bytes']:,.0f}",
                f"{ours['bytes'] / theirs['bytes']:.3f}",
            ),
            (
                f"{family.name}: read a random past checkpoint (ms; target <= 1)",
                f"{ours['read'] * 1e3:.3f}",
                f"{theirs['read'] * 1e3:.3f}",
                f"{ours['read'] / theirs['read']:.2f}",
            ),
        ]
    return rows


if __name__ == "__main__":
    import sys
    import tempfile

    from tabulate import tabulate

    with tempfile.TemporaryDirectory() as tmp:
        print(
            tabulate(main(Path(sys.argv[1] if len(sys.argv) > 1 else tmp)), disable_numparse=True)
        )
