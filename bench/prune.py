"""Prune throughput, without and with an archive, and the per-superstep latency of an
application writing to the same file meanwhile (measured in its own process).

The thread to prune grows a list by 100 bytes a step, so its values live in blobs and the
prune has garbage to collect; it keeps the newest 100 checkpoints. The archive is measured
again on 10 threads written in turns (their values interleave in the file), keeping 10 each.
"""

from __future__ import annotations

import operator
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, TypedDict

RUNS, STEPS = 10, 500  # 5,010 checkpoints
ATTEMPTS = 3
WRITER = """
import sys, time
from bench.supersteps import ttcli_app
app, close = ttcli_app(sys.argv[1])
gaps = []
for run in range(int(sys.argv[2])):
    config = {"configurable": {"thread_id": f"app{run}"}, "recursion_limit": 100000}
    last = time.perf_counter()
    for _ in app.stream({"n": 0}, config, stream_mode="updates"):
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
print(" ".join(f"{g:.6f}" for g in gaps))
"""


class Growing(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def build(path: Path, threads: int = 1) -> None:
    """RUNS runs of each thread, taking turns, 5,000 supersteps in all."""
    from ttcli import END, START, StateGraph
    from ttcli.savers.sqlite import SqliteSaver

    steps = STEPS // threads
    builder = StateGraph(Growing)
    builder.add_node("step", lambda state: {"n": state["n"] + 1, "log": ["x" * 100]})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda state: "step" if state["n"] < steps else END)
    with SqliteSaver.from_conn_string(path) as saver:
        app = builder.compile(checkpointer=saver)
        for _ in range(RUNS):
            for thread in range(threads):
                app.invoke({"n": 0, "log": []}, {"configurable": {"thread_id": f"big{thread}"}})


def prune(path: Path, archive: Path | None, keep: int = 100) -> tuple[int, float]:
    from ttcli.ops.prune import PrunePolicy, execute_prune, plan_prune
    from ttcli.savers.sqlite import SqliteSaver

    policy = PrunePolicy(older_than=datetime.now(UTC) + timedelta(seconds=1), keep_last=keep)
    with SqliteSaver.from_conn_string(path) as saver:
        plans = plan_prune(saver, policy)
        started = time.perf_counter()
        if archive is None:
            report = execute_prune(saver, plans)
        else:
            with SqliteSaver.from_conn_string(archive) as store:
                report = execute_prune(saver, plans, archive=store)
        return report.checkpoints, time.perf_counter() - started


def with_writer(path: Path, loops: int) -> tuple[int, float, list[float]]:
    """Prune while another process runs 1,000-superstep loops on the same file."""
    root = Path(__file__).parent.parent
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(loops)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.05)
    deleted, seconds = prune(path, None)
    out, _ = writer.communicate(timeout=300)
    return deleted, seconds, [float(g) for g in out.split()]


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    source = workdir / "prune-source.db"
    build(source)
    rates = {}
    for name, archive in (("plain", None), ("archive", workdir / "prune-archive-target.db")):
        # the best of ATTEMPTS, each on a fresh copy (a prune of 0.1 s moves by 20% with a
        # few milliseconds of another process)
        for attempt in range(ATTEMPTS):
            path = workdir / f"prune-{name}-{attempt}.db"
            shutil.copy(source, path)
            if archive is not None:
                archive.unlink(missing_ok=True)
            deleted, seconds = prune(path, archive)
            rates[name] = max(rates.get(name, 0.0), deleted / seconds)
    interleaved = workdir / "prune-threads.db"
    build(interleaved, threads=10)
    archived, seconds = prune(interleaved, workdir / "prune-threads-archive.db", keep=10)
    rates["threads"] = archived / seconds
    path = workdir / "prune-busy.db"
    shutil.copy(source, path)
    # enough loops to outlast the prune, at about 0.15 s each
    loops = max(2, round(2 * 4_920 / rates["plain"] / 0.15) + 2)
    deleted, seconds, gaps = with_writer(path, loops)
    p99 = statistics.quantiles(gaps, n=100)[98]
    return [
        (f"prune: checkpoints deleted per second (of {deleted:,}; target >= 50,000)",
         f"{rates['plain']:,.0f}", "", ""),
        ("prune --archive: checkpoints per second (target >= 20,000)",
         f"{rates['archive']:,.0f}", "", ""),
        ("prune --archive, 10 threads written in turns: checkpoints per second",
         f"{rates['threads']:,.0f}", "", "their values interleave in the file"),
        ("prune: writer's superstep p99 while pruning (ms; target < 50)",
         f"{p99 * 1e3:.1f}", "", f"max {max(gaps) * 1e3:.0f} ms; prune took {seconds:.2f} s"),
    ]  # fmt: skip


if __name__ == "__main__":  # run on its own by `make bench` (see bench/__main__.py)
    import json

    print(json.dumps(main(Path(sys.argv[1]))))
