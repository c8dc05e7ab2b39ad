"""The 1,000-turn chat on ttcli: the file against the raw message bytes, and whether a turn
costs the same at the end as at the start (the last 50 turns against the first 50), with each
turn's result dropped (a service) and held until the next turn's (a loop). Not run
on LangGraph: its file grows with the square of the turns (~1 GB here). Run in a process of
its own, so that its peak memory (listing the whole history) is its own."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from bench.chat import REPLY_BYTES, USER_BYTES, texts, ttcli_app

TURNS = 1000
EDGE = 50
ATTEMPTS = 3
READS = 20


def _chat(workdir: Path, name: str, pairs: list[tuple[str, str]], keep: bool) -> tuple[Any, ...]:
    """The chat run once in a file of its own: its first and last turns' mean time, and its
    app, config and close, left open. With `keep`, each turn's result is held until the
    next turn's comes back (as `result = app.invoke(...)` in a loop holds it), else dropped
    (as a service answering a request does)."""
    path = workdir / f"long-chat-{name}.db"
    app, close = ttcli_app(path, [reply for _, reply in pairs])
    config = {"configurable": {"thread_id": "long"}}
    times, result = [], None
    for user, _ in pairs:
        started = time.perf_counter()
        if keep:
            result = app.invoke({"messages": [("user", user)]}, config)
        else:
            app.invoke({"messages": [("user", user)]}, config)
        times.append(time.perf_counter() - started)
    del result
    return sum(times[:EDGE]) / EDGE, sum(times[-EDGE:]) / EDGE, app, config, close, path


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    pairs = texts(TURNS, seed=11)
    # each way ATTEMPTS times, the first and the last turns each the best of them (one run's
    # edges moved by 30% with the host's other users); the last run's file and app are
    # measured further
    edges: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for attempt in range(ATTEMPTS):
        for keep in (True, False):
            first, last, app, config, close, path = _chat(workdir, f"{attempt}-{keep}", pairs, keep)
            edges[keep].append((first, last))
            if attempt < ATTEMPTS - 1 or keep:
                close()
    written = _status("VmHWM")
    _reset_peak()
    before = _status("VmRSS")
    history = [snapshot.config for snapshot in app.get_state_history(config)]
    listed = _status("VmHWM")
    started = time.perf_counter()
    for pick in random.Random(9).sample(history, READS):
        app.get_state(pick)
    per_read = (time.perf_counter() - started) / READS
    close()
    ratio = path.stat().st_size / (TURNS * (USER_BYTES + REPLY_BYTES))
    flat = []
    for keep, how in ((False, "each result dropped"), (True, "each result held a turn")):
        first, last = (min(edge[i] for edge in edges[keep]) for i in (0, 1))
        flat.append(
            (
                f"chat, {TURNS:,} turns, {how}: last {EDGE} turns / first {EDGE}"
                " (ms; target <= 1.5x)",
                f"{last * 1e3:.2f} / {first * 1e3:.2f}",
                "",
                f"{last / first:.2f}x",
            )
        )
    return [
        (f"chat, {TURNS:,} turns: file size / raw bytes (target <= 3)", f"{ratio:.2f}", "", ""),
        *flat,
        (
            f"chat, {TURNS:,} turns: read a random past checkpoint (ms)",
            f"{per_read * 1e3:.2f}",
            "",
            "",
        ),
        (
            f"chat, {TURNS:,} turns: peak RSS growth listing {len(history):,} checkpoints (MB)",
            f"{(listed - before) / 1024:.0f}",
            "",
            f"writing peaked at {written / 1024:.0f} MB",
        ),
    ]


def _status(field: str) -> int:
    """A memory figure of this process from /proc (kB): VmHWM is its peak RSS since exec or
    the last reset, unlike ru_maxrss, which keeps the parent's peak across exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the RSS now


if __name__ == "__main__":  # run on its own by `make bench`: its peak memory is its own
    import json
    import sys

    print(json.dumps(main(Path(sys.argv[1]))))
