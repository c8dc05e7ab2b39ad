"""The 1,000-turn chat on ttcli: the file against the raw message bytes, and whether a turn
costs the same at the end as at the start (the last 50 turns against the first 50). Not run
on LangGraph: its file grows with the square of the turns (~1 GB here). Run in a process of
its own, so that its peak memory (listing the whole history) is its own."""

from __future__ import annotations

import random
import time
from pathlib import Path

from bench.chat import REPLY_BYTES, USER_BYTES, texts, ttcli_app

TURNS = 1000
EDGE = 50
ATTEMPTS = 3
READS = 20


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    pairs = texts(TURNS, seed=11)
    # the chat ATTEMPTS times, each in a file of its own, the first and the last turns each
    # the best of them (one run's edges moved by 30% with the host's other users); the last
    # run's file and app are measured further
    firsts, lasts = [], []
    for attempt in range(ATTEMPTS):
        path = workdir / f"long-chat-{attempt}.db"
        app, close = ttcli_app(path, [reply for _, reply in pairs])
        config = {"configurable": {"thread_id": "long"}}
        times = []
        for user, _ in pairs:
            started = time.perf_counter()
            app.invoke({"messages": [("user", user)]}, config)
            times.append(time.perf_counter() - started)
        firsts.append(sum(times[:EDGE]) / EDGE)
        lasts.append(sum(times[-EDGE:]) / EDGE)
        if attempt < ATTEMPTS - 1:
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
    first, last = min(firsts), min(lasts)
    return [
        (f"chat, {TURNS:,} turns: file size / raw bytes (target <= 3)", f"{ratio:.2f}", "", ""),
        (
            f"chat, {TURNS:,} turns: last {EDGE} turns / first {EDGE} (ms; target <= 1.5x)",
            f"{last * 1e3:.2f} / {first * 1e3:.2f}",
            "",
            f"{last / first:.2f}x",
        ),
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
