"""Scale: history, a filtered history, `show` deep in the past (by id, a prefix of it,
`latest~10` and the short id) and `threads --prefix` on one thread of 1,000,000 checkpoints
among 10,000 threads, against the same at 1,000 / 10; and the peak memory of reading history
and of pruning the big thread at both sizes.

The files are built through the saver's `put`, the way the runtime writes (one transaction per
checkpoint); every 100th checkpoint is an `update`. TTCLI_BENCH_CHECKPOINTS scales the big
thread down for a quick run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

BIG = int(os.environ.get("TTCLI_BENCH_CHECKPOINTS", "1000000"))
SIZES = ((1_000, 10), (BIG, 10_000))  # (checkpoints of the big thread, threads)
REPEAT = 5


def counter_checkpoint(step: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scale run's checkpoint of a counter at `step`, and its metadata (every 100th an
    `update`, for the filtered history)."""
    from ttcli.uuid6 import id_time, new_id

    checkpoint_id = new_id(step)
    checkpoint = {
        "v": 1, "id": checkpoint_id, "ts": id_time(checkpoint_id).isoformat(),
        "channel_values": {"n": step}, "channel_versions": {"n": step + 1},
        "versions_seen": {"count": {"n": step}}, "updated_channels": ["n"],
    }  # fmt: skip
    source = "update" if step % 100 == 99 else "loop"
    return checkpoint, {"source": source, "step": step, "parents": {}, "writes": None}


def build(path: Path, checkpoints: int, threads: int) -> str:
    """Returns the id of the checkpoint in the middle of the big thread."""
    from ttcli.configs import CheckpointRef
    from ttcli.savers.sqlite import SqliteSaver

    middle = ""
    with SqliteSaver.from_conn_string(path) as saver:
        for number in range(threads):
            ref, parent = CheckpointRef(f"t:{number:05d}"), None
            for step in range(checkpoints if number == 0 else 2):
                checkpoint, metadata = counter_checkpoint(step)
                checkpoint_id = checkpoint["id"]
                saver.put(ref.at(parent).to_config(), checkpoint, metadata, {"n": step + 1})  # type: ignore[arg-type]
                parent = checkpoint_id
                if number == 0 and step == checkpoints // 2:
                    middle = checkpoint_id
    return middle


def best_ms(runs: list[list[str]]) -> list[float]:
    """The best of REPEAT runs of each `ttcli` command line, the commands taking turns (the
    host's other users slow them alike: their ratio is what is read)."""
    from ttcli.cli import cli

    best = [float("inf")] * len(runs)
    for _ in range(REPEAT):
        for i, args in enumerate(runs):
            started = time.perf_counter()
            result = CliRunner().invoke(cli, args)
            best[i] = min(best[i], time.perf_counter() - started)
            assert result.exit_code == 0, result.stderr
    return [seconds * 1000 for seconds in best]


MEASURED = """
import sys
from ttcli.cli import cli
try:
    cli(sys.argv[1:], prog_name="ttcli")
finally:
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(int(hwm.split()[1]) / 1024, file=sys.stderr)
"""


def peak_rss_mb(*args: str) -> float:
    """Peak resident memory of `ttcli ARGS` run as its own process: VmHWM, which (unlike
    getrusage) does not inherit the benchmark's own peak through fork."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    return float(done.stderr.split()[-1])


def queries(db: Path, middle: str) -> dict[str, list[str]]:
    """What is timed on a file whose big thread has the checkpoint `middle` in its middle."""
    on, thread = ["--db", str(db)], ["-t", "t:00000", "--json"]
    return {
        "history": [*on, "history", *thread, "--limit", "20"],
        "filter": [*on, "history", *thread, "--filter", "source=update", "--limit", "20"],
        "show": [*on, "show", middle, *thread],
        # refs: a prefix of the id (80 bits, unique), and ten back from the head
        "show_prefix": [*on, "show", middle[:28], *thread],
        "show_back": [*on, "show", "latest~10", *thread],
        # the short id `history` prints: the id's end, found by a walk of the thread's ids
        "show_short": [*on, "show", middle[-8:], *thread],
        "threads": [*on, "threads", "--prefix", "t:0000", "--json"],
    }


def measure(workdir: Path) -> list[dict[str, float]]:
    """The figures of each of SIZES: the files are built first, then each command is timed on
    them in turns (built one after the other, minutes apart, a host's drift moved the ratio
    by more than the target's margin)."""
    dbs = [workdir / f"scale-{checkpoints}.db" for checkpoints, _ in SIZES]
    found: list[dict[str, float]] = []
    runs: list[dict[str, list[str]]] = []
    for db, (checkpoints, threads) in zip(dbs, SIZES, strict=True):
        started = time.perf_counter()
        middle = build(db, checkpoints, threads)
        found.append({"build": time.perf_counter() - started})
        runs.append(queries(db, middle))
    for key in runs[0]:
        for figures, ms in zip(found, best_ms([run[key] for run in runs]), strict=True):
            figures[key] = ms
    for db, (checkpoints, _), figures in zip(dbs, SIZES, found, strict=True):
        on = ["--db", str(db)]
        figures["rss_history"] = peak_rss_mb(*on, "history", "-t", "t:00000", "--limit", "20")
        started = time.perf_counter()
        figures["rss_prune"] = peak_rss_mb(
            *on, "prune", "--thread", "t:00000", "--older-than", "0s", "--keep-last", "100",
            "--yes",
        )  # fmt: skip
        figures["prune_rate"] = (checkpoints - 100) / (time.perf_counter() - started)
    return found


def main(workdir: Path) -> list[tuple[str, str, str, str]]:
    small, big = measure(workdir)
    label = f"{SIZES[1][0]:,} checkpoints / {SIZES[1][1]:,} threads vs 1,000 / 10"
    rows = [(f"scale: building the big file (s; {label})", f"{big['build']:.0f}", "", "")]
    for key, what in (
        ("history", "history --limit 20"),
        ("filter", "history --filter source=update --limit 20"),
        ("show", "show a checkpoint in the middle"),
        ("show_prefix", "show by a prefix of its id"),
        ("show_back", "show latest~10"),
        ("threads", "threads --prefix (10 threads)"),
    ):
        rows.append((
            f"scale: {what} (ms; target <= 2x)",
            f"{big[key]:.1f}",
            "",
            f"{big[key] / small[key]:.2f}x its time at 1,000",
        ))  # fmt: skip
    rows.append((
        "scale: show by its short id (the id's end, which history prints; a walk of the "
        "thread's ids, not a target)",
        f"{big['show_short']:.1f}",
        "",
        f"{big['show_short'] / small['show_short']:.2f}x its time at 1,000",
    ))  # fmt: skip
    for key, what in (("rss_history", "history"), ("rss_prune", "prune of the big thread")):
        rows.append((
            f"memory: peak RSS of {what} (MB; flat)",
            f"{big[key]:.0f}",
            "",
            f"{small[key]:.0f} MB at 1,000",
        ))  # fmt: skip
    rows.append((
        "scale: CLI prune of the big thread, checkpoints per second",
        f"{big['prune_rate']:,.0f}", "", "",
    ))  # fmt: skip
    return rows
