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

from bench import families
from bench.chat import REPLY_BYTES, USER_BYTES, texts, ttcli_app

TURNS = 1000
EDGE = 50
ATTEMPTS = 3
READS = 20


def _edges(app: Any, inputs: list[Any], keep: bool) -> tuple[float, float]:
    """The mean time of the first and of the last EDGE turns of a chat with `inputs`. With
    `keep`, each turn's result is held until the next turn's comes back (as
    `result = app.invoke(...)` in a loop holds it), else dropped (as a service answering a
    request does)."""
    config = {"configurable": {"thread_id": "long"}}
    times, result = [], None
    for value in inputs:
        started = time.perf_counter()
        if keep:
            result = app.invoke(value, config)
        else:
            app.invoke(value, config)
        times.append(time.perf_counter() - started)
    del result
    return sum(times[:EDGE]) / EDGE, sum(times[-EDGE:]) / EDGE


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    pairs = texts(TURNS, seed=11)
    messages = [{"messages": [("user", user)]} for user, _ in pairs]
    dicts = [{"messages": [{"role": "user", "content": user}]} for user, _ in pairs]
    # each chat ATTEMPTS times, in a file of its own and in turns (each attempt starts with
    # another), the first and the last turns each the best of them (one run's edges moved
    # by 30% with the host's other users); the last attempt's first chat (messages, each
    # result dropped) is measured further
    chats = {
        "each result dropped": (messages, False),
        "each result held a turn": (messages, True),
        "plain-dict messages (operator.add), each result dropped": (dicts, False),
    }
    edges: dict[str, list[tuple[float, float]]] = {how: [] for how in chats}
    names = list(chats)
    for attempt in range(ATTEMPTS):
        for how in names[attempt % len(names) :] + names[: attempt % len(names)]:
            inputs, keep = chats[how]
            path = workdir / f"long-chat-{attempt}-{names.index(how)}.db"
            if inputs is messages:
                app, close = ttcli_app(path, [reply for _, reply in pairs])
            else:
                app, close = families.app_for("ttcli", families.DICT_CHAT, path)
            edges[how].append(_edges(app, inputs, keep))
            if attempt < ATTEMPTS - 1 or how != names[0]:
                close()
            else:
                kept = app, close, path
    app, close, path = kept
    config = {"configurable": {"thread_id": "long"}}
    written = _status("VmHWM")
    _reset_peak()
    before = _status("VmRSS")
    started = time.perf_counter()
    history = [snapshot.config for snapshot in app.get_state_history(config)]
    per_listed = (time.perf_counter() - started) / len(history)
    listed = _status("VmHWM")
    started = time.perf_counter()
    for pick in random.Random(9).sample(history, READS):
        app.get_state(pick)
    per_read = (time.perf_counter() - started) / READS
    close()
    ratio = path.stat().st_size / (TURNS * (USER_BYTES + REPLY_BYTES))
    flat = []
    for how, found in edges.items():
        first, last = (min(edge[i] for edge in found) for i in (0, 1))
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
            f"chat, {TURNS:,} turns: list the whole history with get_state_history (ms a "
            "checkpoint)",
            f"{per_listed * 1e3:.3f}",
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
